// conv.cpp - convolutions for generated host code (locus_conv2d), with
// their bias, residual, ReLU and a pooling that follows them: oneDNN
// when it can be loaded (dlopen, never linked, as OpenBLAS is), per-image
// im2col and locus_sgemm otherwise.
//
// Why oneDNN: measured on the 2-core AVX-512 build machine, a 64-channel
// 3x3 convolution on 56x56 runs at about 200 GFLOP/s through oneDNN 2.6's
// brgconv kernels (blocked layout, reorders in and out included) against
// about 100 through im2col and OpenBLAS, and the small convolutions of
// LeNet-like models cost microseconds instead of a BLAS call's overhead.
// docs/runtime.md has the table.
//
// Which oneDNN: $LOCUS_DNNL when set, then libdnnl.so.2 (Debian's
// libdnnl2). LOCUS_CONV=builtin uses the im2col path. Every temporary (the
// blocked copies, oneDNN's scratchpad, im2col columns) lives in a
// per-thread workspace that grows to the largest convolution and is then
// reused: no allocation per call once a model has run.

#include "conv.h"
#include "constants.h"
#include "dnnl.h"
#include "guard.h"
#include "halves.h"
#include "locus/abi.h"
#include "locus/half.hpp"
#include "workspace.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

namespace {

using locus::rt::conv::Floats;
using locus::rt::conv::im2col;
using locus::rt::conv::offsetOf;
using locus::rt::conv::Params;
using locus::rt::conv::Shape;
using locus::rt::conv::workspace;

using locus::rt::Workspace;

/// A second one, for the convolution's output of one image when it is
/// pooled on the built-in path (the first holds the im2col columns).
Workspace &imageWorkspace() {
  thread_local Workspace space;
  return space;
}

/// Pools `planes` planes of oh x ow (the convolution's output) into planes
/// of poh x pow, as PyTorch does: max ignores padding (and a NaN wins),
/// average counts it as zeros.
void poolPlanes(const Shape &s, int64_t planes, const float *in, float *out) {
  float scale = 1.0f / static_cast<float>(s.pkh * s.pkw);
  for (int64_t p = 0; p < planes; ++p) {
    const float *plane = in + p * s.oh * s.ow;
    float *dst = out + p * s.poh * s.pow;
    for (int64_t i = 0; i < s.poh; ++i)
      for (int64_t j = 0; j < s.pow; ++j) {
        float acc = s.maxPool() ? -std::numeric_limits<float>::infinity() : 0;
        for (int64_t a = 0; a < s.pkh; ++a) {
          int64_t r = i * s.psh + a - s.pph;
          if (r < 0 || r >= s.oh)
            continue;
          for (int64_t b = 0; b < s.pkw; ++b) {
            int64_t col = j * s.psw + b - s.ppw;
            if (col < 0 || col >= s.ow)
              continue;
            float v = plane[r * s.ow + col];
            if (!s.maxPool())
              acc += v;
            else if (v > acc || std::isnan(v))
              acc = std::isnan(acc) ? acc : v;
          }
        }
        dst[i * s.pow + j] = s.maxPool() ? acc : acc * scale;
      }
  }
}

/// y[n, o] (+)= bias, + residual, then ReLU: the epilogue of the built-in
/// paths.
void epilogue(const Shape &s, const float *bias, const float *residual,
              float *y) {
  int64_t plane = s.oh * s.ow;
  for (int64_t i = 0; i < s.n * s.o; ++i) {
    float *row = y + i * plane;
    const float *res = residual ? residual + i * plane : nullptr;
    float b = s.bias() ? bias[i % s.o] : 0.0f;
    for (int64_t j = 0; j < plane; ++j) {
      float v = row[j] + b + (res ? res[j] : 0.0f);
      row[j] = s.relu() && !(v > 0.0f) ? 0.0f : v;
    }
  }
}

/// The convolution's output at (n, o, i, j), epilogue included.
float convAt(const Shape &s, Floats x, Floats w, const float *bias,
             const float *residual, int64_t n, int64_t o, int64_t i,
             int64_t j) {
  int64_t cg = s.c / s.groups, og = s.o / s.groups, g = o / og;
  float acc = 0.0f;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t p = 0; p < s.kh; ++p) {
      int64_t r = i * s.sh + p * s.dh - s.ph;
      if (r < 0 || r >= s.h)
        continue;
      for (int64_t q = 0; q < s.kw; ++q) {
        int64_t col = j * s.sw + q * s.dw - s.pw;
        if (col < 0 || col >= s.w)
          continue;
        acc += x[offsetOf(s.xNhwc(), s.c, s.h, s.w, n, g * cg + c, r, col)] *
               w[((o * cg + c) * s.kh + p) * s.kw + q];
      }
    }
  float v =
      acc + (s.bias() ? bias[o] : 0.0f) +
      (residual
           ? residual[offsetOf(s.residualNhwc(), s.o, s.oh, s.ow, n, o, i, j)]
           : 0.0f);
  return s.relu() && !(v > 0.0f) ? 0.0f : v;
}

/// The direct loop nest, epilogue and pooling included: needs no memory;
/// what runs when the workspace cannot grow. A pooled output recomputes
/// the convolution's values its windows share.
void directConv(const Shape &s, Floats x, Floats w, const float *bias,
                const float *residual, Floats y) {
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o) {
      if (!s.pooled()) {
        for (int64_t i = 0; i < s.oh; ++i)
          for (int64_t j = 0; j < s.ow; ++j)
            y.set(offsetOf(s.yNhwc(), s.o, s.oh, s.ow, n, o, i, j),
                  convAt(s, x, w, bias, residual, n, o, i, j));
        continue;
      }
      // Each pooled value takes its window's values one by one.
      for (int64_t i = 0; i < s.poh; ++i)
        for (int64_t j = 0; j < s.pow; ++j) {
          float acc =
              s.maxPool() ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (int64_t a = 0; a < s.pkh; ++a)
            for (int64_t b = 0; b < s.pkw; ++b) {
              int64_t r = i * s.psh + a - s.pph, col = j * s.psw + b - s.ppw;
              if (r < 0 || r >= s.oh || col < 0 || col >= s.ow)
                continue;
              float v = convAt(s, x, w, bias, residual, n, o, r, col);
              if (!s.maxPool())
                acc += v;
              else if (v > acc || std::isnan(v))
                acc = std::isnan(acc) ? acc : v;
            }
          y.set(offsetOf(s.yNhwc(), s.o, s.poh, s.pow, n, o, i, j),
                s.maxPool() ? acc : acc / static_cast<float>(s.pkh * s.pkw));
        }
    }
}

/// Per image and group, im2col into the workspace and one product into y.
void builtinConv(const Shape &s, const float *x, const float *w,
                 const float *bias, const float *residual, float *y) {
  int64_t cg = s.c / s.groups, og = s.o / s.groups, plane = s.oh * s.ow;
  int64_t k = cg * s.kh * s.kw;
  bool pointwise = s.pointwise();
  float *cols = nullptr, *convImage = nullptr;
  if (!pointwise)
    cols = reinterpret_cast<float *>(
        workspace().get(static_cast<size_t>(k * plane) * sizeof(float)));
  if (s.pooled())
    convImage = reinterpret_cast<float *>(
        imageWorkspace().get(static_cast<size_t>(s.o * plane) * sizeof(float)));
  if ((!pointwise && !cols) || (s.pooled() && !convImage)) {
    directConv(s, Floats::of(x), Floats::of(w), bias, residual, Floats::of(y));
    return;
  }
  // One image at a time: its convolution, epilogue and pooling.
  Shape image = s;
  image.n = 1;
  for (int64_t n = 0; n < s.n; ++n) {
    float *out = s.pooled() ? convImage : y + n * s.o * plane;
    for (int64_t g = 0; g < s.groups; ++g) {
      const float *in = x + (n * s.c + g * cg) * s.h * s.w;
      if (!pointwise)
        im2col(s, in, cg, cols);
      const float *b = pointwise ? in : cols;
      locus_sgemm(1, og, plane, k, reinterpret_cast<uintptr_t>(w + g * og * k),
                  k, 0, 0, reinterpret_cast<uintptr_t>(b), plane, 0, 0, 0.0f,
                  reinterpret_cast<uintptr_t>(out + g * og * plane), plane, 0);
    }
    epilogue(image, bias, residual ? residual + n * s.o * plane : nullptr, out);
    if (s.pooled())
      poolPlanes(s, s.o, out, y + n * s.o * s.poh * s.pow);
  }
}

/// Copies `n` images of `channels` x `plane` values between NHWC and NCHW
/// (`toNhwc`: from NCHW).
void relayout(const float *in, int64_t n, int64_t channels, int64_t plane,
              bool toNhwc, float *out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        int64_t nchw = (i * channels + c) * plane + p,
                nhwc = (i * plane + p) * channels + c;
        out[toNhwc ? nhwc : nchw] = in[toNhwc ? nchw : nhwc];
      }
}

/// The built-in path for any layout: NHWC operands are copied to NCHW
/// (and y back) around builtinConv; the direct loops, which index either
/// layout, when the copies' memory cannot be had.
void builtinAnyLayout(const Shape &s, const float *x, const float *w,
                      const float *bias, const float *residual, float *y) {
  if (!s.anyNhwc()) {
    builtinConv(s, x, w, bias, residual, y);
    return;
  }
  thread_local Workspace xs, rs, ys;
  auto floats = [](Workspace &space, int64_t count) {
    return reinterpret_cast<float *>(
        space.get(static_cast<size_t>(count) * sizeof(float)));
  };
  float *xPlain = s.xNhwc() ? floats(xs, s.inputElements()) : nullptr;
  float *rPlain =
      residual && s.residualNhwc() ? floats(rs, s.convElements()) : nullptr;
  float *yPlain = s.yNhwc() ? floats(ys, s.yElements()) : nullptr;
  if ((s.xNhwc() && !xPlain) || (residual && s.residualNhwc() && !rPlain) ||
      (s.yNhwc() && !yPlain)) {
    directConv(s, Floats::of(x), Floats::of(w), bias, residual, Floats::of(y));
    return;
  }
  if (xPlain)
    relayout(x, s.n, s.c, s.h * s.w, /*toNhwc=*/false, xPlain);
  if (rPlain)
    relayout(residual, s.n, s.o, s.oh * s.ow, /*toNhwc=*/false, rPlain);
  Shape plain = s;
  plain.flags &=
      ~(LOCUS_CONV_X_NHWC | LOCUS_CONV_RESIDUAL_NHWC | LOCUS_CONV_Y_NHWC);
  builtinConv(plain, xPlain ? xPlain : x, w, bias, rPlain ? rPlain : residual,
              yPlain ? yPlain : y);
  if (yPlain)
    relayout(yPlain, s.n, s.o, s.yElements() / (s.n * s.o), /*toNhwc=*/true, y);
}

#if LOCUS_HAVE_DNNL_H

using locus::rt::Dnnl;
using locus::rt::ok;

/// A convolution's primitives for one shape: built once, run many times.
/// The user's tensors are plain NCHW and OIHW; oneDNN picks its own
/// (blocked) layouts, and reorders move data in and out of them.
struct Primitives {
  dnnl_primitive_t conv = nullptr;
  dnnl_alg_kind_t algorithm = dnnl_alg_kind_undef; // the one that built
  dnnl_primitive_t srcIn = nullptr, weightsIn = nullptr, dstIn = nullptr,
                   dstOut = nullptr; // null: the user's layout is oneDNN's
  dnnl_memory_desc_t userSrc{}, userWeights{}, userDst{}, userResidual{},
      bias{};
  dnnl_memory_desc_t src{}, weights{}, dst{}, scratch{};
  size_t srcBytes = 0, weightsBytes = 0, dstBytes = 0, scratchBytes = 0;
  /// The pooling (when the shape is pooled): it reads the convolution's
  /// output in oneDNN's layout, and only its (smaller) output is reordered
  /// to NCHW.
  dnnl_primitive_t pool = nullptr, pooledOut = nullptr;
  dnnl_memory_desc_t userPooled{}, pooled{}, poolScratch{};
  size_t pooledBytes = 0, poolScratchBytes = 0;
};

/// oneDNN's type for the 16-bit elements of `s` (LOCUS_CONV_BF16, _F16).
dnnl_data_type_t sixteenBitType(const Shape &s) {
  return s.f16() ? dnnl_f16 : dnnl_bf16;
}

/// The pooling of `s` over the convolution's output p.dst; false when
/// oneDNN cannot run it.
bool buildPool(const Dnnl &d, const Shape &s, Primitives &p) {
  dnnl_dims_t dst = {s.n, s.o, s.poh, s.pow}, strides = {s.psh, s.psw},
              kernel = {s.pkh, s.pkw}, pad = {s.pph, s.ppw};
  dnnl_memory_desc_t anyDst;
  dnnl_pooling_desc_t desc;
  // (f32 throughout; a 16-bit y is rounded by the reorder out.)
  if (!ok(d.dnnl_memory_desc_init_by_tag(&p.userPooled, 4, dst,
                                         s.y16() ? sixteenBitType(s) : dnnl_f32,
                                         s.yNhwc() ? dnnl_nhwc : dnnl_nchw)) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&anyDst, 4, dst, dnnl_f32,
                                         dnnl_format_tag_any)) ||
      !ok(d.dnnl_pooling_forward_desc_init(
          &desc, dnnl_forward_inference,
          s.maxPool() ? dnnl_pooling_max : dnnl_pooling_avg_include_padding,
          &p.dst, &anyDst, strides, kernel, pad, pad)))
    return false;
  dnnl_primitive_desc_t pd =
      locus::rt::describePrimitive(d, &desc, /*sum=*/0.0f, /*relu=*/false);
  const dnnl_memory_desc_t *out =
      pd ? d.dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0) : nullptr;
  const dnnl_memory_desc_t *scratch =
      pd ? d.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)
         : nullptr;
  bool built = out && scratch;
  if (built) {
    p.pooled = *out;
    p.poolScratch = *scratch;
    p.pooledBytes = d.dnnl_memory_desc_get_size(&p.pooled);
    p.poolScratchBytes = d.dnnl_memory_desc_get_size(&p.poolScratch);
    built = ok(d.dnnl_primitive_create(&p.pool, pd));
  }
  if (pd)
    d.dnnl_primitive_desc_destroy(pd);
  return built;
}

/// Whether the convolution reads its input as NCHW rather than in a
/// layout oneDNN picks: an ungrouped one with fewer input channels than
/// a vector has floats (a first layer's 3 color channels). oneDNN then
/// runs its direct kernel for such layers on the input as it is, where it
/// otherwise reorders the input to NHWC for brgconv; on the build machine
/// (AVX-512, 2 cores; median of 200 calls, with bias and ReLU), batch x
/// channels in -> out, image, kernel: 64x3->16, 14, 3x3: 138 -> 69 us;
/// 64x6->16, 14, 5x5: 316 -> 202; 16x12->32, 28, 3x3: 398 -> 292; but
/// 16x16->32: 475 -> 1209, and 8x64->64: 1419 -> 3212.
bool readsNchw(const Dnnl &d, const Shape &s) {
  // The ISA values are bit sets: every AVX-512 one holds avx512_core's.
  auto isa = static_cast<unsigned>(d.dnnl_get_effective_cpu_isa());
  int64_t lanes =
      (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
  return s.groups == 1 && s.c < lanes;
}

/// The primitives of `s`, or false when oneDNN cannot run it.
/// `weightsKept`: the weights are constants of the step, reordered once
/// into a copy the model keeps; a Winograd convolution then takes them
/// already transformed (oneDNN's inference form). Weights a step writes
/// stay in a blocked layout that the training form transforms as it runs:
/// oneDNN's reorder into the transformed layout took 10-15 ms for 256x256
/// 3x3 weights on the build machine, three times the convolution.
bool build(const Dnnl &d, const Shape &s, bool weightsKept, Primitives &p) {
  bool grouped = s.groups > 1;
  dnnl_dims_t src = {s.n, s.c, s.h, s.w}, dst = {s.n, s.o, s.oh, s.ow},
              bias = {s.o}, strides = {s.sh, s.sw},
              dilates = {s.dh - 1, s.dw - 1}, pad = {s.ph, s.pw};
  dnnl_dims_t weights = {s.o, s.c, s.kh, s.kw};
  if (grouped) {
    weights[0] = s.groups;
    weights[1] = s.o / s.groups;
    weights[2] = s.c / s.groups;
    weights[3] = s.kh;
    weights[4] = s.kw;
  }
  int wdims = grouped ? 5 : 4;
  dnnl_format_tag_t wtag = grouped ? dnnl_goihw : dnnl_oihw;
  // 16-bit x and w: oneDNN sums their products in f32. Its output is f32
  // where a residual is summed into it or a pooling reads it (y, 16-bit
  // or not, is then written by a reorder out, which rounds once).
  dnnl_data_type_t in = s.sixteenBit() ? sixteenBitType(s) : dnnl_f32,
                   out = s.y16() ? sixteenBitType(s) : dnnl_f32,
                   convOut = s.residual() || s.pooled() ? dnnl_f32 : out;
  dnnl_memory_desc_t anySrc, anyWeights, anyDst;
  auto tag = [](bool nhwc) { return nhwc ? dnnl_nhwc : dnnl_nchw; };
  if (!ok(d.dnnl_memory_desc_init_by_tag(&p.userSrc, 4, src, in,
                                         tag(s.xNhwc()))) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&p.userWeights, wdims, weights, in,
                                         wtag)) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&p.userDst, 4, dst, out,
                                         tag(s.yNhwc()))) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&p.userResidual, 4, dst, dnnl_f32,
                                         tag(s.residualNhwc()))) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&p.bias, 1, bias, dnnl_f32, dnnl_x)) ||
      !ok(d.dnnl_memory_desc_init_by_tag(
          &anySrc, 4, src, in,
          readsNchw(d, s) ? tag(s.xNhwc()) : dnnl_format_tag_any)) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&anyWeights, wdims, weights, in,
                                         dnnl_format_tag_any)) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&anyDst, 4, dst, convOut,
                                         dnnl_format_tag_any)))
    return false;
  // The residual is added by a sum post-op: dst holds it when the
  // convolution starts.
  dnnl_primitive_desc_t pd = nullptr;
  for (dnnl_alg_kind_t algorithm : locus::rt::conv::algorithmsFor(s)) {
    dnnl_convolution_desc_t desc;
    if (!ok(d.dnnl_dilated_convolution_forward_desc_init(
            &desc, weightsKept ? dnnl_forward_inference : dnnl_forward_training,
            algorithm, &anySrc, &anyWeights, s.bias() ? &p.bias : nullptr,
            &anyDst, strides, dilates, pad, pad)))
      continue;
    pd = locus::rt::describePrimitive(d, &desc, s.residual() ? 1.0f : 0.0f,
                                      s.relu());
    if (pd) {
      p.algorithm = algorithm;
      break;
    }
  }
  if (!pd)
    return false;
  auto query = [&](dnnl_query_t what, dnnl_memory_desc_t &out) {
    const dnnl_memory_desc_t *md = d.dnnl_primitive_desc_query_md(pd, what, 0);
    if (md)
      out = *md;
    return md != nullptr;
  };
  if (!query(dnnl_query_src_md, p.src) ||
      !query(dnnl_query_weights_md, p.weights) ||
      !query(dnnl_query_dst_md, p.dst) ||
      !query(dnnl_query_scratchpad_md, p.scratch)) {
    d.dnnl_primitive_desc_destroy(pd);
    return false;
  }
  p.srcBytes = d.dnnl_memory_desc_get_size(&p.src);
  p.weightsBytes = d.dnnl_memory_desc_get_size(&p.weights);
  p.dstBytes = d.dnnl_memory_desc_get_size(&p.dst);
  p.scratchBytes = d.dnnl_memory_desc_get_size(&p.scratch);
  bool built = ok(d.dnnl_primitive_create(&p.conv, pd));
  d.dnnl_primitive_desc_destroy(pd);
  auto reorder = [&](const dnnl_memory_desc_t &from,
                     const dnnl_memory_desc_t &to, dnnl_primitive_t &out) {
    if (d.dnnl_memory_desc_equal(&from, &to))
      return true;
    out = locus::rt::makeReorder(d, from, to);
    return out != nullptr;
  };
  return built && reorder(p.userSrc, p.src, p.srcIn) &&
         reorder(p.userWeights, p.weights, p.weightsIn) &&
         (s.pooled() || reorder(p.dst, p.userDst, p.dstOut)) &&
         (!s.residual() || reorder(p.userResidual, p.dst, p.dstIn)) &&
         (!s.pooled() ||
          (buildPool(d, s, p) && reorder(p.pooled, p.userPooled, p.pooledOut)));
}

/// Destroys what a failed build made.
void destroy(const Dnnl &d, Primitives &p) {
  for (dnnl_primitive_t prim :
       {p.conv, p.srcIn, p.weightsIn, p.dstIn, p.dstOut, p.pool, p.pooledOut})
    if (prim)
      d.dnnl_primitive_destroy(prim);
}

/// The primitives of each shape seen, and whether its weights are kept,
/// for the process's life (a model has a handful of convolution shapes).
/// Null for a shape oneDNN refused.
const Primitives *primitivesFor(const Dnnl &d, const Params &params,
                                bool weightsKept) {
  static std::mutex mutex;
  // Never destroyed: kernels may run while the process exits, and oneDNN's
  // own statics may be gone by then (the primitives stay reachable).
  static auto *cache =
      new std::map<std::pair<Params, bool>, std::unique_ptr<Primitives>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache->try_emplace({params, weightsKept});
  if (inserted) {
    auto p = std::make_unique<Primitives>();
    if (build(d, Shape(params), weightsKept, *p))
      it->second = std::move(p);
    else
      destroy(d, *p);
  }
  return it->second.get();
}

/// Runs the convolution through oneDNN; false (nothing written) when it
/// cannot. `widenedFrom`: the 16-bit weights that w, f32, was widened
/// from (widenedConv), whose memory decides whether they are constant.
bool dnnlConv(const Dnnl &d, const Params &params, const void *x, const void *w,
              const float *bias, const float *residual, void *y,
              const void *widenedFrom = nullptr) {
  Shape s(params);
  // Weights no step writes are reordered once, into a copy the model
  // keeps (constants.h), rather than on every call.
  locus::rt::Constants *constants = locus::rt::stepConstants();
  const void *source = widenedFrom ? widenedFrom : w;
  size_t sourceBytes = static_cast<size_t>(s.weightElements()) *
                       (widenedFrom || s.sixteenBit() ? 2 : sizeof(float));
  bool constantWeights = constants && constants->contains(source, sourceBytes);
  const Primitives *p = primitivesFor(d, params, constantWeights);
  dnnl_stream_t stream = p ? locus::rt::dnnlStream(d) : nullptr;
  if (!stream)
    return false;
  const void *keptWeights = nullptr;
  if (constantWeights && p->weightsIn)
    keptWeights =
        constants->derived(source, p, p->weightsBytes, [&](void *out) {
          return locus::rt::reorderNow(d, p->weightsIn, p->userWeights, w,
                                       p->weights, out);
        });
  bool reorderWeights = p->weightsIn && !keptWeights;
  auto round = [](size_t b) { return (b + 63) / 64 * 64; };
  // The convolution writes y itself unless it is pooled or its layout is
  // not NCHW; the pooling writes y unless its layout is not NCHW.
  bool dstInSpace = s.pooled() || p->dstOut;
  size_t srcAt = 0, weightsAt = srcAt + (p->srcIn ? round(p->srcBytes) : 0),
         dstAt = weightsAt + (reorderWeights ? round(p->weightsBytes) : 0),
         scratchAt = dstAt + (dstInSpace ? round(p->dstBytes) : 0),
         pooledAt = scratchAt + round(p->scratchBytes),
         poolScratchAt = pooledAt + (p->pooledOut ? round(p->pooledBytes) : 0),
         total = poolScratchAt + round(p->poolScratchBytes);
  char *space = workspace().get(std::max<size_t>(total, 64));
  if (!space)
    return false;
  locus::rt::CallMemory memory(d);
  auto wrap = [&](const dnnl_memory_desc_t &md, const void *data) {
    return memory.wrap(md, data);
  };
  void *convOut = dstInSpace ? static_cast<void *>(space + dstAt) : y;
  // (A residual makes the convolution's output f32, as the residual is.)
  dnnl_memory_t userSrc = wrap(p->userSrc, x),
                userWeights = wrap(p->userWeights, w),
                src = p->srcIn ? wrap(p->src, space + srcAt) : userSrc,
                weights = keptWeights      ? wrap(p->weights, keptWeights)
                          : reorderWeights ? wrap(p->weights, space + weightsAt)
                                           : userWeights,
                dst = wrap(p->dst, convOut),
                scratch = wrap(p->scratch, space + scratchAt),
                biasMem = s.bias() ? wrap(p->bias, bias) : nullptr;
  bool ran = userSrc && userWeights && src && weights && dst && scratch &&
             (biasMem || !s.bias());
  auto run = [&](dnnl_primitive_t prim,
                 std::initializer_list<dnnl_exec_arg_t> args) {
    ran =
        ran && ok(d.dnnl_primitive_execute(
                   prim, stream, static_cast<int>(args.size()), args.begin()));
  };
  if (ran && residual) {
    // The sum post-op adds what dst holds: the residual, in dst's layout.
    if (p->dstIn) {
      dnnl_memory_t res = wrap(p->userResidual, residual);
      ran = res != nullptr;
      run(p->dstIn, {{DNNL_ARG_FROM, res}, {DNNL_ARG_TO, dst}});
    } else {
      std::memcpy(convOut, residual,
                  static_cast<size_t>(s.convElements()) * sizeof(float));
    }
  }
  if (p->srcIn)
    run(p->srcIn, {{DNNL_ARG_FROM, userSrc}, {DNNL_ARG_TO, src}});
  if (reorderWeights)
    run(p->weightsIn, {{DNNL_ARG_FROM, userWeights}, {DNNL_ARG_TO, weights}});
  if (biasMem)
    run(p->conv, {{DNNL_ARG_SRC, src},
                  {DNNL_ARG_WEIGHTS, weights},
                  {DNNL_ARG_BIAS, biasMem},
                  {DNNL_ARG_DST, dst},
                  {DNNL_ARG_SCRATCHPAD, scratch}});
  else
    run(p->conv, {{DNNL_ARG_SRC, src},
                  {DNNL_ARG_WEIGHTS, weights},
                  {DNNL_ARG_DST, dst},
                  {DNNL_ARG_SCRATCHPAD, scratch}});
  if (ran && p->dstOut) {
    dnnl_memory_t userDst = wrap(p->userDst, y);
    ran = userDst != nullptr;
    run(p->dstOut, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, userDst}});
  }
  if (ran && s.pooled()) {
    dnnl_memory_t userPooled = wrap(p->userPooled, y),
                  pooled = p->pooledOut ? wrap(p->pooled, space + pooledAt)
                                        : userPooled,
                  poolScratch = wrap(p->poolScratch, space + poolScratchAt);
    ran = userPooled && pooled && poolScratch;
    run(p->pool, {{DNNL_ARG_SRC, dst},
                  {DNNL_ARG_DST, pooled},
                  {DNNL_ARG_SCRATCHPAD, poolScratch}});
    if (p->pooledOut)
      run(p->pooledOut, {{DNNL_ARG_FROM, pooled}, {DNNL_ARG_TO, userPooled}});
  }
  return ran && ok(d.dnnl_stream_wait(stream));
}

/// LOCUS_CONV=builtin: the im2col path even where oneDNN loads.
bool builtinChosen() {
  const char *choice = std::getenv("LOCUS_CONV");
  return choice && std::string(choice) == "builtin";
}

/// Whether oneDNN's Winograd convolution (F(4x4, 3x3): 36 products per
/// 4x4 tile where the direct one makes 144) is asked for before the
/// direct one: a 3x3 kernel of stride and dilation 1, ungrouped, with 64
/// or more channels in and out, an output of 8x8 or more and 2048 or more
/// output pixels over the batch, unless LOCUS_CONV=direct. On the 2-core
/// AVX-512 build machine (oneDNN 2.6.3; bench/probes/onednn_winograd.cpp,
/// NCHW operands reordered each call), the forward and both gradients of
/// 64 channels on 56x56 at batch 8 took 0.53-0.55x the direct ones' time,
/// 128 on 16x16 at batch 32 0.48-0.53x, 256 on 8x8 at batch 32 0.47-0.58x;
/// smaller ones gained little or lost (256 on 8x8 at batch 8: 1.09x
/// forward; 512 on 4x4: up to 2.6x; 16 or 32 channels: 0.75-1.7x). Its
/// rounding differs: the largest error against a double reference was
/// 2-4e-7 of sum |x w| (the direct one's: 2-12e-8), far inside fp32
/// tolerances (docs/runtime.md).
bool winogradPays(const Shape &s) {
  static const bool directOnly = [] {
    const char *choice = std::getenv("LOCUS_CONV");
    return choice && std::string(choice) == "direct";
  }();
  // (oneDNN's Winograd is f32 only.)
  return !directOnly && !s.sixteenBit() && s.kh == 3 && s.kw == 3 &&
         s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1 && s.groups == 1 &&
         s.c >= 64 && s.o >= 64 && s.oh >= 8 && s.ow >= 8 &&
         s.n * s.oh * s.ow >= 2048;
}

#endif // LOCUS_HAVE_DNNL_H

/// The f32 call: oneDNN's where it runs, the built-in path otherwise
/// (`widenedFrom` as dnnlConv's).
void f32Conv(const Params &p, const float *x, const float *w, const float *bias,
             const float *res, float *y, const void *widenedFrom = nullptr) {
#if LOCUS_HAVE_DNNL_H
  const locus::rt::Dnnl *d = locus::rt::conv::chosenDnnl();
  if (d && locus::rt::guardValue(false, [&] {
        return dnnlConv(*d, p, x, w, bias, res, y, widenedFrom);
      }))
    return;
#endif
  builtinAnyLayout(Shape(p), x, w, bias, res, y);
}

/// body(lo, hi) over [0, count), in blocks, on the runtime's threads
/// (locus_parallel_for).
template <typename Body> void inParallel(int64_t count, Body body) {
  constexpr int64_t kBlock = int64_t{1} << 14;
  struct Args {
    Body *body;
    int64_t count;
  } args{&body, count};
  locus_parallel_for(
      [](void *a, int64_t lo, int64_t hi) {
        auto *args = static_cast<Args *>(a);
        (*args->body)(lo *kBlock, std::min(hi * kBlock, args->count));
      },
      &args, (count + kBlock - 1) / kBlock);
}

/// A call of 16-bit x and w as the f32 call on f32 copies of them (exact:
/// the same sums of products), a 16-bit y rounded from the f32 result;
/// false (nothing written) when the copies' memory cannot be had.
bool widenedConv(const Params &params, const void *x, const void *w,
                 const float *bias, const float *res, void *y) {
  Shape s(params);
  const auto *w16 = static_cast<const uint16_t *>(w);
  thread_local Workspace xs, ws, ys;
  auto floats = [](Workspace &space, int64_t count) {
    return reinterpret_cast<float *>(
        space.get(static_cast<size_t>(count) * sizeof(float)));
  };
  // Weights no step writes are widened once, into a copy the model keeps
  // (oneDNN's reorder of them is kept too, keyed by the 16-bit weights).
  const float *wf = nullptr;
  locus::rt::Constants *constants = locus::rt::stepConstants();
  auto weights = static_cast<size_t>(s.weightElements());
  if (constants && constants->contains(w, weights * 2)) {
    static const char widening = 0; // names this transform of the weights
    wf = static_cast<const float *>(constants->derived(
        w, &widening, weights * sizeof(float), [&](void *out) {
          locus::rt::conv::widen(s, w16, s.weightElements(),
                                 static_cast<float *>(out));
          return true;
        }));
  }
  float *wCopy = wf ? nullptr : floats(ws, s.weightElements());
  float *xf = floats(xs, s.inputElements());
  float *yf = s.y16() ? floats(ys, s.yElements()) : static_cast<float *>(y);
  if (!xf || (!wf && !wCopy) || !yf)
    return false;
  locus::rt::conv::widen(s, static_cast<const uint16_t *>(x), s.inputElements(),
                         xf);
  if (!wf) {
    locus::rt::conv::widen(s, w16, s.weightElements(), wCopy);
    wf = wCopy;
  }
  Params plain = params;
  plain[LOCUS_CONV_FLAGS] &=
      ~(LOCUS_CONV_BF16 | LOCUS_CONV_F16 | LOCUS_CONV_Y_16BIT);
  f32Conv(plain, xf, wf, bias, res, yf, w);
  if (s.y16())
    locus::rt::conv::narrow(s, yf, s.yElements(), static_cast<uint16_t *>(y));
  return true;
}

/// A call of 16-bit x and w (LOCUS_CONV_BF16, _F16): oneDNN's 16-bit
/// kernels where they are native (nativeSixteen), widened otherwise, the
/// direct loops when memory runs out.
void sixteenBitConv(const Params &p, const void *x, const void *w,
                    const float *bias, const float *res, void *y) {
  Shape s(p);
#if LOCUS_HAVE_DNNL_H
  const locus::rt::Dnnl *d = locus::rt::conv::chosenDnnl();
  if (d && locus::rt::conv::nativeSixteen(*d, s) &&
      locus::rt::guardValue(
          false, [&] { return dnnlConv(*d, p, x, w, bias, res, y); }))
    return;
#endif
  if (locus::rt::guardValue(false,
                            [&] { return widenedConv(p, x, w, bias, res, y); }))
    return;
  directConv(s, Floats::sixteen(s, x), Floats::sixteen(s, w), bias, res,
             s.y16() ? Floats::sixteen(s, y)
                     : Floats::of(static_cast<float *>(y)));
}

} // namespace

locus::rt::conv::Params locus::rt::conv::readParams(uintptr_t address) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): generated code's address
  const auto *values = reinterpret_cast<const int64_t *>(address);
  Params p;
  std::copy(values, values + LOCUS_CONV_PARAM_COUNT, p.begin());
  return p;
}

locus::rt::Workspace &locus::rt::conv::workspace() {
  thread_local Workspace space;
  return space;
}

/// cols[(c, p, q), (i, j)] = x[c, i*sh + p*dh - ph, j*sw + q*dw - pw] for
/// one image and group (zero outside the image), rows along j.
void locus::rt::conv::im2col(const Shape &s, const float *x, int64_t channels,
                             float *cols) {
  int64_t plane = s.oh * s.ow;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t p = 0; p < s.kh; ++p)
      for (int64_t q = 0; q < s.kw; ++q) {
        float *out = cols + ((c * s.kh + p) * s.kw + q) * plane;
        for (int64_t i = 0; i < s.oh; ++i) {
          int64_t r = i * s.sh + p * s.dh - s.ph;
          float *row = out + i * s.ow;
          if (r < 0 || r >= s.h) {
            std::fill(row, row + s.ow, 0.0f);
            continue;
          }
          const float *in = x + (c * s.h + r) * s.w;
          for (int64_t j = 0; j < s.ow; ++j) {
            int64_t col = j * s.sw + q * s.dw - s.pw;
            row[j] = col >= 0 && col < s.w ? in[col] : 0.0f;
          }
        }
      }
}

void locus::rt::conv::widen(const Shape &s, const uint16_t *in, int64_t count,
                            float *out) {
  bool f16 = s.f16();
  inParallel(count, [&](int64_t lo, int64_t hi) {
    (f16 ? locus::rt::widenF16 : locus::rt::widenBf16)(in + lo, hi - lo,
                                                       out + lo);
  });
}

void locus::rt::conv::narrow(const Shape &s, const float *in, int64_t count,
                             uint16_t *out) {
  bool f16 = s.f16();
  inParallel(count, [&](int64_t lo, int64_t hi) {
    (f16 ? locus::rt::narrowF16 : locus::rt::narrowBf16)(in + lo, hi - lo,
                                                         out + lo);
  });
}

#if LOCUS_HAVE_DNNL_H
/// Whether oneDNN runs a call of 16-bit operands as it is: bf16 on a CPU
/// with AMX (as oneDNN's effective ISA says), unless LOCUS_CONV16=widen.
/// On the 2-core Xeon with AMX build machine (oneDNN 2.6.3,
/// bench/probes/onednn_bf16.cpp, batch 8, NHWC, bias and ReLU fused), its
/// bf16 3x3 convolutions from 64 channels at 56x56 to 512 at 7x7 took
/// 0.16-0.25x the direct f32 ones' time and 0.31-0.36x Winograd's, which
/// the f32 calls take. Without AMX its AVX512-BF16 kernels do not pay: on
/// a Xeon with AVX512-BF16 they took 1.88x the direct f32 time, on a Zen 4
/// 0.51x, about Winograd's. Those calls are widened (widenedConv), and so
/// are f16 ones (oneDNN 2.6 has no f16 convolution on the CPU) and those
/// of fewer than 16 channels in or out per group, where the bf16 kernels
/// lose to the f32 ones even with AMX (batch 64: LeNet's 1 -> 6 channels
/// 5x5 on 28x28 0.36 ms against 0.21, its 6 -> 16 on 14x14 0.21-0.34
/// against 0.09-0.12).
bool locus::rt::conv::nativeSixteen(const Dnnl &d, const Shape &s) {
  const char *choice = std::getenv("LOCUS_CONV16");
  if (s.f16() || (choice && std::string(choice) == "widen") ||
      s.c / s.groups < 16 || s.o / s.groups < 16)
    return false;
  // (The ISA values are bit sets: AMX's holds every AVX-512 one's.)
  auto isa = static_cast<unsigned>(d.dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

locus::rt::conv::Algorithms locus::rt::conv::algorithmsFor(const Shape &s) {
  if (winogradPays(s))
    return {{dnnl_convolution_winograd, dnnl_convolution_direct}, 2};
  return {{dnnl_convolution_direct, dnnl_convolution_direct}, 1};
}

dnnl_alg_kind_t locus::rt::conv::forwardAlgorithm(const Dnnl &d,
                                                  const Params &params,
                                                  bool weightsKept) {
  const Primitives *p = primitivesFor(d, params, weightsKept);
  return p ? p->algorithm : dnnl_alg_kind_undef;
}

const Dnnl *locus::rt::conv::chosenDnnl() {
  const Dnnl *d = locus::rt::guardValue<const Dnnl *>(
      nullptr, [] { return builtinChosen() ? nullptr : &locus::rt::dnnl(); });
  return d && d->engine ? d : nullptr;
}
#endif

extern "C" void locus_conv2d(uintptr_t paramsAddress, uintptr_t xAddress,
                             uintptr_t wAddress, uintptr_t biasAddress,
                             uintptr_t residualAddress, uintptr_t yAddress) {
  // Generated code has the buffers' addresses as integers; this is where
  // they become pointers again.
  // NOLINTBEGIN(performance-no-int-to-ptr)
  const auto *x = reinterpret_cast<const void *>(xAddress);
  const auto *w = reinterpret_cast<const void *>(wAddress);
  const auto *bias = reinterpret_cast<const float *>(biasAddress);
  const auto *residual = reinterpret_cast<const float *>(residualAddress);
  auto *y = reinterpret_cast<void *>(yAddress);
  // NOLINTEND(performance-no-int-to-ptr)
  Params p = locus::rt::conv::readParams(paramsAddress);
  Shape s(p);
  if (s.n <= 0 || s.o <= 0 || s.oh <= 0 || s.ow <= 0 ||
      (s.pooled() && (s.poh <= 0 || s.pow <= 0)))
    return; // nothing to compute
  const float *res = s.residual() ? residual : nullptr;
  // Never throws: oneDNN's failures (and running out of memory while
  // finding it) fall back to the built-in path, which falls back to the
  // direct loops when its workspace cannot grow.
  if (s.sixteenBit())
    sixteenBitConv(p, x, w, bias, res, y);
  else
    f32Conv(p, static_cast<const float *>(x), static_cast<const float *>(w),
            bias, res, static_cast<float *>(y));
}

extern "C" const char *locus_conv_name(void) {
#if LOCUS_HAVE_DNNL_H
  return locus::rt::guardValue("unknown (out of memory)", [] {
    static const std::string name =
        builtinChosen()            ? "im2col and the matrix products above "
                                     "(LOCUS_CONV=builtin)"
        : locus::rt::dnnl().engine ? locus::rt::dnnl().name
                                   : "im2col and the matrix products above (" +
                                         locus::rt::dnnl().name + ")";
    return name.c_str();
  });
#else
  return "im2col and the matrix products above (built without oneDNN's "
         "header)";
#endif
}
