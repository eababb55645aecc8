// conv.h - what the runtime's convolution calls share: locus_conv2d
// (conv.cpp) and locus_conv2d_grad (conv_grad.cpp).
#ifndef LOCUS_RUNTIME_CONV_H
#define LOCUS_RUNTIME_CONV_H

#include "dnnl.h"
#include "workspace.h"

#include "locus/abi.h"
#include "locus/half.hpp"

#include <array>
#include <cstdint>

namespace locus::rt::conv {

using Params = std::array<int64_t, LOCUS_CONV_PARAM_COUNT>;

/// The dimensions of one call, named.
struct Shape {
  int64_t n, c, h, w, o, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups, flags;
  /// The pooling's window, strides, padding and output (when pooled()).
  int64_t pkh, pkw, psh, psw, pph, ppw, poh, pow;
  explicit Shape(const Params &p)
      : n(p[LOCUS_CONV_N]), c(p[LOCUS_CONV_C]), h(p[LOCUS_CONV_H]),
        w(p[LOCUS_CONV_W]), o(p[LOCUS_CONV_O]), kh(p[LOCUS_CONV_KH]),
        kw(p[LOCUS_CONV_KW]), oh(p[LOCUS_CONV_OH]), ow(p[LOCUS_CONV_OW]),
        sh(p[LOCUS_CONV_STRIDE_H]), sw(p[LOCUS_CONV_STRIDE_W]),
        ph(p[LOCUS_CONV_PAD_H]), pw(p[LOCUS_CONV_PAD_W]),
        dh(p[LOCUS_CONV_DILATION_H]), dw(p[LOCUS_CONV_DILATION_W]),
        groups(p[LOCUS_CONV_GROUPS]), flags(p[LOCUS_CONV_FLAGS]),
        pkh(p[LOCUS_CONV_POOL_KH]), pkw(p[LOCUS_CONV_POOL_KW]),
        psh(p[LOCUS_CONV_POOL_STRIDE_H]), psw(p[LOCUS_CONV_POOL_STRIDE_W]),
        pph(p[LOCUS_CONV_POOL_PAD_H]), ppw(p[LOCUS_CONV_POOL_PAD_W]),
        poh(p[LOCUS_CONV_POOL_OH]), pow(p[LOCUS_CONV_POOL_OW]) {}
  bool bias() const { return flags & LOCUS_CONV_BIAS; }
  bool residual() const { return flags & LOCUS_CONV_RESIDUAL; }
  bool relu() const { return flags & LOCUS_CONV_RELU; }
  bool maxPool() const { return flags & LOCUS_CONV_MAX_POOL; }
  bool pooled() const {
    return flags & (LOCUS_CONV_MAX_POOL | LOCUS_CONV_AVG_POOL);
  }
  bool xNhwc() const { return flags & LOCUS_CONV_X_NHWC; }
  bool residualNhwc() const { return flags & LOCUS_CONV_RESIDUAL_NHWC; }
  bool yNhwc() const { return flags & LOCUS_CONV_Y_NHWC; }
  /// x and w hold bf16 or f16 elements (LOCUS_CONV_BF16, _F16).
  bool sixteenBit() const { return flags & (LOCUS_CONV_BF16 | LOCUS_CONV_F16); }
  bool f16() const { return flags & LOCUS_CONV_F16; }
  /// y holds that 16-bit type too (LOCUS_CONV_Y_16BIT).
  bool y16() const { return sixteenBit() && (flags & LOCUS_CONV_Y_16BIT); }
  bool anyNhwc() const {
    return flags &
           (LOCUS_CONV_X_NHWC | LOCUS_CONV_RESIDUAL_NHWC | LOCUS_CONV_Y_NHWC);
  }
  /// Elements of the convolution's output and of y.
  int64_t convElements() const { return n * o * oh * ow; }
  int64_t yElements() const {
    return pooled() ? n * o * poh * pow : n * o * oh * ow;
  }
  /// Elements of the input and of the weights.
  int64_t inputElements() const { return n * c * h * w; }
  int64_t weightElements() const { return o * (c / groups) * kh * kw; }
  /// A 1x1 convolution of stride 1 without padding: a product of the
  /// input as it lies, no im2col.
  bool pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 &&
           oh == h && ow == w;
  }
  /// Whether there is nothing to compute (an empty dimension).
  bool empty() const {
    return n <= 0 || c <= 0 || o <= 0 || oh <= 0 || ow <= 0 || h <= 0 ||
           w <= 0 || groups <= 0;
  }
};

/// A buffer of f32, bf16 or f16 elements, read and written as f32 (the
/// direct loops take their operands this way).
struct Floats {
  enum Kind { f32, bf16, f16 };
  void *data;
  Kind kind;
  static Floats of(const float *p) { return {const_cast<float *>(p), f32}; }
  /// A 16-bit buffer of `s`'s type.
  static Floats sixteen(const Shape &s, const void *p) {
    return {const_cast<void *>(p), s.f16() ? f16 : bf16};
  }
  float operator[](int64_t i) const {
    if (kind == f32)
      return static_cast<const float *>(data)[i];
    uint16_t bits = static_cast<const uint16_t *>(data)[i];
    return kind == bf16 ? locus::half::fromBf16Bits(bits)
                        : locus::half::fromF16Bits(bits);
  }
  void set(int64_t i, float v) const {
    if (kind == f32)
      static_cast<float *>(data)[i] = v;
    else
      static_cast<uint16_t *>(data)[i] =
          kind == bf16 ? locus::half::bf16Bits(v) : locus::half::f16Bits(v);
  }
};

/// The offset of element (n, c, i, j) of a [images, channels, height,
/// width] tensor, laid out NCHW or (`nhwc`) NHWC.
inline int64_t offsetOf(bool nhwc, int64_t channels, int64_t height,
                        int64_t width, int64_t n, int64_t c, int64_t i,
                        int64_t j) {
  return nhwc ? ((n * height + i) * width + j) * channels + c
              : ((n * channels + c) * height + i) * width + j;
}

/// The LOCUS_CONV_PARAM_COUNT values generated code passes by address.
Params readParams(uintptr_t address);

/// The calling thread's scratch memory for im2col columns, blocked copies
/// and oneDNN's scratchpads.
Workspace &workspace();

/// cols[(c, p, q), (i, j)] = x[c, i*sh + p*dh - ph, j*sw + q*dw - pw] for
/// one image and group of `channels` channels (zero outside the image).
void im2col(const Shape &s, const float *x, int64_t channels, float *cols);

/// locus_conv2d_grad's `kind` element by element, each a sum in a register
/// over what reaches it (a = dy, b = w, y = dx; or a = x, b = dy, y = dw):
/// needs no memory; what runs when nothing else can.
void directGrad(int64_t kind, const Shape &s, Floats a, Floats b, Floats y);

/// out[i] = in[i], `count` 16-bit elements of `s`'s type (LOCUS_CONV_BF16,
/// _F16) to f32, on the runtime's threads.
void widen(const Shape &s, const uint16_t *in, int64_t count, float *out);
/// out[i] = in[i] rounded to `s`'s 16-bit type, to nearest even.
void narrow(const Shape &s, const float *in, int64_t count, uint16_t *out);

#if LOCUS_HAVE_DNNL_H
/// Whether oneDNN runs a call of `s`'s 16-bit operands in that type (its
/// bf16 kernels where the CPU has AMX; conv.cpp says when); such a call is
/// widened to f32 otherwise.
bool nativeSixteen(const Dnnl &d, const Shape &s);

/// oneDNN when the convolutions may use it (loaded, and LOCUS_CONV is not
/// "builtin"); null otherwise. Never throws.
const Dnnl *chosenDnnl();

/// The algorithms oneDNN is asked for, in turn, for `s`: Winograd's
/// F(4x4, 3x3) first where it pays (winogradPays in conv.cpp), then the
/// direct convolution. `count` says how many of the two apply.
struct Algorithms {
  std::array<dnnl_alg_kind_t, 2> kinds;
  int count;
  const dnnl_alg_kind_t *begin() const { return kinds.data(); }
  const dnnl_alg_kind_t *end() const { return kinds.data() + count; }
};
Algorithms algorithmsFor(const Shape &s);

/// The algorithm oneDNN runs a call of `params` with, its primitives built
/// if need be (`weightsKept`: the weights are the step's constants); the
/// forward, or (gradAlgorithm) `kind`'s gradient. dnnl_alg_kind_undef when
/// oneDNN cannot run it. For tests.
dnnl_alg_kind_t forwardAlgorithm(const Dnnl &d, const Params &params,
                                 bool weightsKept);
dnnl_alg_kind_t gradAlgorithm(const Dnnl &d, int64_t kind,
                              const Params &params);
#endif

} // namespace locus::rt::conv

#endif
