// conv_grad.cpp - the gradients of convolutions for generated host code
// (locus_conv2d_grad): oneDNN's backward-data and backward-weights
// primitives when it can be loaded (the forward's primitive descriptor as
// their hint, as oneDNN asks), im2col, col2im and locus_sgemm otherwise.
//
// Why oneDNN: the generated loops of conv2d_input_grad took 100-300 ms per
// layer of a ResNet-18 training step at batch 8 on the 2-core build machine
// (98% of the step); docs/runtime.md has the measurements. The same
// per-thread workspace as the forward's holds the blocked copies, the
// scratchpads and the columns: no allocation per call once a model has run.

#include "conv.h"
#include "guard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace {

using locus::rt::conv::directGrad;
using locus::rt::conv::Floats;
using locus::rt::conv::Params;
using locus::rt::conv::Shape;
using locus::rt::conv::workspace;

/// One image and group's channel counts and sizes.
struct Group {
  int64_t cg, og, plane, k; // channels in and out, oh*ow, cg*kh*kw
  explicit Group(const Shape &s)
      : cg(s.c / s.groups), og(s.o / s.groups), plane(s.oh * s.ow),
        k(s.c / s.groups * s.kh * s.kw) {}
};

/// One image and group's im2col columns in the workspace; null when it
/// cannot grow.
float *columns(const Group &g) {
  return reinterpret_cast<float *>(
      workspace().get(static_cast<size_t>(g.k * g.plane) * sizeof(float)));
}

uintptr_t address(const float *p) { return reinterpret_cast<uintptr_t>(p); }

/// C (m x n) = op(A) op(B) + beta C through locus_sgemm, row-major.
void product(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
             bool transA, const float *b, int64_t ldb, bool transB, float beta,
             float *c, int64_t ldc) {
  locus_sgemm(1, m, n, k, address(a), lda, 0, transA ? 1 : 0, address(b), ldb,
              0, transB ? 1 : 0, beta, address(c), ldc, 0);
}

/// x[c, i*sh + p*dh - ph, j*sw + q*dw - pw] += cols[(c, p, q), (i, j)]:
/// im2col's adjoint, for one image and group.
void col2im(const Shape &s, const float *cols, int64_t channels, float *x) {
  int64_t plane = s.oh * s.ow;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t p = 0; p < s.kh; ++p)
      for (int64_t q = 0; q < s.kw; ++q) {
        const float *in = cols + ((c * s.kh + p) * s.kw + q) * plane;
        for (int64_t i = 0; i < s.oh; ++i) {
          int64_t r = i * s.sh + p * s.dh - s.ph;
          if (r < 0 || r >= s.h)
            continue;
          float *row = x + (c * s.h + r) * s.w;
          for (int64_t j = 0; j < s.ow; ++j) {
            int64_t col = j * s.sw + q * s.dw - s.pw;
            if (col >= 0 && col < s.w)
              row[col] += in[i * s.ow + j];
          }
        }
      }
}

/// dx from dy and w, per image and group: columns = w^T dy, then col2im.
/// False (nothing written) when the workspace cannot grow.
bool builtinInputGrad(const Shape &s, const float *dy, const float *w,
                      float *dx) {
  Group g(s);
  bool direct = s.pointwise();
  float *cols = direct ? nullptr : columns(g);
  if (!direct && !cols)
    return false;
  if (!direct)
    std::fill(dx, dx + s.inputElements(), 0.0f);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t grp = 0; grp < s.groups; ++grp) {
      const float *dyg = dy + (n * s.o + grp * g.og) * g.plane;
      const float *wg = w + grp * g.og * g.k;
      float *dxg = dx + (n * s.c + grp * g.cg) * s.h * s.w;
      product(g.k, g.plane, g.og, wg, g.k, /*transA=*/true, dyg, g.plane,
              /*transB=*/false, 0.0f, direct ? dxg : cols, g.plane);
      if (!direct)
        col2im(s, cols, g.cg, dxg);
    }
  return true;
}

/// dw from x and dy, summed over images: dw_g += dy_g columns(x)^T. False
/// (nothing written) when the workspace cannot grow.
bool builtinWeightGrad(const Shape &s, const float *x, const float *dy,
                       float *dw) {
  Group g(s);
  bool direct = s.pointwise();
  float *cols = direct ? nullptr : columns(g);
  if (!direct && !cols)
    return false;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t grp = 0; grp < s.groups; ++grp) {
      const float *xg = x + (n * s.c + grp * g.cg) * s.h * s.w;
      if (!direct)
        locus::rt::conv::im2col(s, xg, g.cg, cols);
      product(g.og, g.k, g.plane, dy + (n * s.o + grp * g.og) * g.plane,
              g.plane, /*transA=*/false, direct ? xg : cols, g.plane,
              /*transB=*/true, n == 0 ? 0.0f : 1.0f, dw + grp * g.og * g.k,
              g.k);
    }
  return true;
}

#if LOCUS_HAVE_DNNL_H

using locus::rt::Dnnl;
using locus::rt::ok;

/// An operand of a backward primitive: the user's plain layout, oneDNN's,
/// and the reorder between them (null when they are the same).
struct Operand {
  int arg = 0; // DNNL_ARG_*
  dnnl_memory_desc_t user{}, lib{};
  dnnl_primitive_t reorder = nullptr;
  size_t bytes = 0;
};

/// A gradient's primitive for one shape: built once, run many times. Its
/// two inputs are reordered into oneDNN's layouts, its output out of it.
struct GradPrimitives {
  dnnl_primitive_t prim = nullptr;
  dnnl_alg_kind_t algorithm = dnnl_alg_kind_undef; // the one that built
  std::array<Operand, 2> in;
  Operand out;
  dnnl_memory_desc_t scratch{};
  size_t scratchBytes = 0;
};

/// The user's descriptors of a convolution's input, weights and output.
struct UserDescs {
  dnnl_memory_desc_t src{}, weights{}, dst{};
  dnnl_memory_desc_t anySrc{}, anyWeights{}, anyDst{};
  /// The forward's (the backward's hint): every tensor of the inputs'
  /// type (oneDNN has no forward of 16-bit weights and an f32 source).
  dnnl_memory_desc_t forwardSrc{}, forwardWeights{};
};

/// `kind`'s descriptors: with 16-bit operands (LOCUS_CONV_BF16, _F16) its
/// two inputs are of that type, and its output too with
/// LOCUS_CONV_Y_16BIT.
bool describeUser(const Dnnl &d, int64_t kind, const Shape &s, UserDescs &u) {
  bool grouped = s.groups > 1;
  dnnl_dims_t src = {s.n, s.c, s.h, s.w}, dst = {s.n, s.o, s.oh, s.ow};
  dnnl_dims_t weights = {s.o, s.c, s.kh, s.kw};
  if (grouped) {
    dnnl_dims_t g = {s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw};
    std::copy(g, g + 5, weights);
  }
  int wdims = grouped ? 5 : 4;
  dnnl_format_tag_t wtag = grouped ? dnnl_goihw : dnnl_oihw;
  bool input = kind == LOCUS_CONV_INPUT_GRAD;
  dnnl_data_type_t low = !s.sixteenBit() ? dnnl_f32
                         : s.f16()       ? dnnl_f16
                                         : dnnl_bf16,
                   out = s.y16() ? low : dnnl_f32;
  dnnl_data_type_t srcType = input ? out : low, weightsType = input ? low : out;
  auto init = [&](dnnl_memory_desc_t &md, int dims, const dnnl_dims_t shape,
                  dnnl_data_type_t type, dnnl_format_tag_t tag) {
    return ok(d.dnnl_memory_desc_init_by_tag(&md, dims, shape, type, tag));
  };
  return init(u.src, 4, src, srcType, dnnl_nchw) &&
         init(u.weights, wdims, weights, weightsType, wtag) &&
         init(u.dst, 4, dst, low, dnnl_nchw) &&
         init(u.anySrc, 4, src, srcType, dnnl_format_tag_any) &&
         init(u.anyWeights, wdims, weights, weightsType, dnnl_format_tag_any) &&
         init(u.anyDst, 4, dst, low, dnnl_format_tag_any) &&
         init(u.forwardSrc, 4, src, low, dnnl_format_tag_any) &&
         init(u.forwardWeights, wdims, weights, low, dnnl_format_tag_any);
}

/// Takes operand `op`'s layout from `pd` and makes its reorder (`toLib`:
/// from the user's layout to oneDNN's, else back).
bool bind(const Dnnl &d, const_dnnl_primitive_desc_t pd, dnnl_query_t what,
          bool toLib, Operand &op) {
  const dnnl_memory_desc_t *md = d.dnnl_primitive_desc_query_md(pd, what, 0);
  if (!md)
    return false;
  op.lib = *md;
  op.bytes = d.dnnl_memory_desc_get_size(&op.lib);
  if (d.dnnl_memory_desc_equal(&op.user, &op.lib))
    return true;
  op.reorder = toLib ? locus::rt::makeReorder(d, op.user, op.lib)
                     : locus::rt::makeReorder(d, op.lib, op.user);
  return op.reorder != nullptr;
}

/// The backward primitive of `kind` for `s`, or false when oneDNN cannot
/// run it.
bool build(const Dnnl &d, int64_t kind, const Shape &s, GradPrimitives &p) {
  UserDescs u;
  dnnl_dims_t strides = {s.sh, s.sw}, dilates = {s.dh - 1, s.dw - 1},
              pad = {s.ph, s.pw};
  bool input = kind == LOCUS_CONV_INPUT_GRAD;
  if (!describeUser(d, kind, s, u))
    return false;
  dnnl_primitive_desc_t pd = nullptr;
  for (dnnl_alg_kind_t algorithm : locus::rt::conv::algorithmsFor(s)) {
    dnnl_convolution_desc_t forward, backward;
    bool described =
        ok(d.dnnl_dilated_convolution_forward_desc_init(
            &forward, dnnl_forward_training, algorithm, &u.forwardSrc,
            &u.forwardWeights, nullptr, &u.anyDst, strides, dilates, pad,
            pad)) &&
        (input ? ok(d.dnnl_dilated_convolution_backward_data_desc_init(
                     &backward, algorithm, &u.anySrc, &u.anyWeights, &u.anyDst,
                     strides, dilates, pad, pad))
               : ok(d.dnnl_dilated_convolution_backward_weights_desc_init(
                     &backward, algorithm, &u.anySrc, &u.anyWeights, nullptr,
                     &u.anyDst, strides, dilates, pad, pad)));
    dnnl_primitive_desc_t hint =
        described ? locus::rt::describePrimitive(d, &forward, 0.0f, false)
                  : nullptr;
    pd = hint ? locus::rt::describePrimitive(d, &backward, 0.0f, false, hint)
              : nullptr;
    if (hint)
      d.dnnl_primitive_desc_destroy(hint);
    if (pd) {
      p.algorithm = algorithm;
      break;
    }
  }
  if (!pd)
    return false;
  // Operands: (dy, w) -> dx, or (x, dy) -> dw.
  p.in[0] = {input ? DNNL_ARG_DIFF_DST : DNNL_ARG_SRC, input ? u.dst : u.src};
  p.in[1] = {input ? DNNL_ARG_WEIGHTS : DNNL_ARG_DIFF_DST,
             input ? u.weights : u.dst};
  p.out = {input ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DIFF_WEIGHTS,
           input ? u.src : u.weights};
  const dnnl_memory_desc_t *scratch =
      d.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  bool built =
      scratch &&
      bind(d, pd, input ? dnnl_query_diff_dst_md : dnnl_query_src_md, true,
           p.in[0]) &&
      bind(d, pd, input ? dnnl_query_weights_md : dnnl_query_diff_dst_md, true,
           p.in[1]) &&
      bind(d, pd, input ? dnnl_query_diff_src_md : dnnl_query_diff_weights_md,
           false, p.out);
  if (built) {
    p.scratch = *scratch;
    p.scratchBytes = d.dnnl_memory_desc_get_size(&p.scratch);
    built = ok(d.dnnl_primitive_create(&p.prim, pd));
  }
  d.dnnl_primitive_desc_destroy(pd);
  return built;
}

void destroy(const Dnnl &d, GradPrimitives &p) {
  for (dnnl_primitive_t prim :
       {p.prim, p.in[0].reorder, p.in[1].reorder, p.out.reorder})
    if (prim)
      d.dnnl_primitive_destroy(prim);
}

/// The primitives of each (kind, shape) seen, kept for the process's life,
/// as the forward's are. Null for one oneDNN refused.
const GradPrimitives *gradPrimitivesFor(const Dnnl &d, int64_t kind,
                                        const Params &params) {
  static std::mutex mutex;
  static auto *cache =
      new std::map<std::pair<int64_t, Params>, std::unique_ptr<GradPrimitives>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache->try_emplace({kind, params});
  if (inserted) {
    auto p = std::make_unique<GradPrimitives>();
    if (build(d, kind, Shape(params), *p))
      it->second = std::move(p);
    else
      destroy(d, *p);
  }
  return it->second.get();
}

/// Runs the gradient through oneDNN: the inputs reordered into the
/// workspace where their layouts differ, the primitive, its output
/// reordered into y. False (y unspecified) when it cannot.
bool dnnlGrad(const Dnnl &d, int64_t kind, const Params &params, const void *a,
              const void *b, void *y) {
  const GradPrimitives *p = gradPrimitivesFor(d, kind, params);
  dnnl_stream_t stream = p ? locus::rt::dnnlStream(d) : nullptr;
  if (!stream)
    return false;
  auto round = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  const Operand *ops[3] = {&p->in[0], &p->in[1], &p->out};
  size_t at[4] = {}, total = 0;
  for (int i = 0; i < 3; ++i) {
    at[i] = total;
    total += ops[i]->reorder ? round(ops[i]->bytes) : 0;
  }
  at[3] = total;
  total += round(p->scratchBytes);
  char *space = workspace().get(std::max<size_t>(total, 64));
  if (!space)
    return false;
  const void *user[3] = {a, b, y};
  locus::rt::CallMemory memory(d);
  auto wrap = [&](const dnnl_memory_desc_t &md, const void *data) {
    return memory.wrap(md, data);
  };
  dnnl_memory_t userMem[3], libMem[3];
  bool ran = true;
  for (int i = 0; i < 3; ++i) {
    userMem[i] = wrap(ops[i]->user, user[i]);
    libMem[i] = ops[i]->reorder ? wrap(ops[i]->lib, space + at[i]) : userMem[i];
    ran = ran && userMem[i] && libMem[i];
  }
  dnnl_memory_t scratch = wrap(p->scratch, space + at[3]);
  ran = ran && scratch;
  auto run = [&](dnnl_primitive_t prim,
                 std::initializer_list<dnnl_exec_arg_t> args) {
    ran =
        ran && ok(d.dnnl_primitive_execute(
                   prim, stream, static_cast<int>(args.size()), args.begin()));
  };
  for (int i = 0; i < 2; ++i)
    if (ops[i]->reorder)
      run(ops[i]->reorder,
          {{DNNL_ARG_FROM, userMem[i]}, {DNNL_ARG_TO, libMem[i]}});
  run(p->prim, {{p->in[0].arg, libMem[0]},
                {p->in[1].arg, libMem[1]},
                {p->out.arg, libMem[2]},
                {DNNL_ARG_SCRATCHPAD, scratch}});
  if (p->out.reorder)
    run(p->out.reorder,
        {{DNNL_ARG_FROM, libMem[2]}, {DNNL_ARG_TO, userMem[2]}});
  return ran && ok(d.dnnl_stream_wait(stream));
}

#endif // LOCUS_HAVE_DNNL_H

/// The f32 gradient: oneDNN's where it runs, the built-in path, then the
/// direct loops.
void f32Grad(int64_t kind, const Params &p, const float *a, const float *b,
             float *y) {
  Shape s(p);
#if LOCUS_HAVE_DNNL_H
  const locus::rt::Dnnl *d = locus::rt::conv::chosenDnnl();
  if (d && locus::rt::guardValue(
               false, [&] { return dnnlGrad(*d, kind, p, a, b, y); }))
    return;
#endif
  bool input = kind == LOCUS_CONV_INPUT_GRAD;
  if (input ? builtinInputGrad(s, a, b, y) : builtinWeightGrad(s, a, b, y))
    return;
  directGrad(kind, s, Floats::of(a), Floats::of(b), Floats::of(y));
}

/// A gradient of 16-bit operands (LOCUS_CONV_BF16, _F16): oneDNN's 16-bit
/// kernels where they are native (nativeSixteen), else the f32 gradient
/// of the operands widened (exact), y rounded when it is 16-bit. False
/// (nothing written) when the widened copies' memory cannot be had.
bool sixteenBitGrad(int64_t kind, const Params &p, const void *a, const void *b,
                    void *y) {
  Shape s(p);
#if LOCUS_HAVE_DNNL_H
  const locus::rt::Dnnl *d = locus::rt::conv::chosenDnnl();
  if (d && locus::rt::conv::nativeSixteen(*d, s) &&
      locus::rt::guardValue(false,
                            [&] { return dnnlGrad(*d, kind, p, a, b, y); }))
    return true;
#endif
  bool input = kind == LOCUS_CONV_INPUT_GRAD;
  // (dy, w) -> dx or (x, dy) -> dw.
  int64_t aCount = input ? s.convElements() : s.inputElements(),
          bCount = input ? s.weightElements() : s.convElements(),
          yCount = input ? s.inputElements() : s.weightElements();
  thread_local locus::rt::Workspace as, bs, ys;
  auto floats = [](locus::rt::Workspace &space, int64_t count) {
    return reinterpret_cast<float *>(
        space.get(static_cast<size_t>(count) * sizeof(float)));
  };
  float *af = floats(as, aCount), *bf = floats(bs, bCount);
  float *yf = s.y16() ? floats(ys, yCount) : static_cast<float *>(y);
  if (!af || !bf || !yf)
    return false;
  locus::rt::conv::widen(s, static_cast<const uint16_t *>(a), aCount, af);
  locus::rt::conv::widen(s, static_cast<const uint16_t *>(b), bCount, bf);
  Params plain = p;
  plain[LOCUS_CONV_FLAGS] &=
      ~(LOCUS_CONV_BF16 | LOCUS_CONV_F16 | LOCUS_CONV_Y_16BIT);
  f32Grad(kind, plain, af, bf, yf);
  if (s.y16())
    locus::rt::conv::narrow(s, yf, yCount, static_cast<uint16_t *>(y));
  return true;
}

} // namespace

void locus::rt::conv::directGrad(int64_t kind, const Shape &s, Floats a,
                                 Floats b, Floats y) {
  Group g(s);
  auto xAt = [&](int64_t n, int64_t c, int64_t r, int64_t col) {
    return ((n * s.c + c) * s.h + r) * s.w + col;
  };
  auto wAt = [&](int64_t o, int64_t c, int64_t p, int64_t q) {
    return ((o * g.cg + c) * s.kh + p) * s.kw + q;
  };
  auto dyAt = [&](int64_t n, int64_t o, int64_t i, int64_t j) {
    return ((n * s.o + o) * s.oh + i) * s.ow + j;
  };
  // The output index i that input row r meets at kernel row p (stride
  // and dilation given), or -1.
  auto meets = [](int64_t r, int64_t p, int64_t stride, int64_t dilation,
                  int64_t pad, int64_t outs) -> int64_t {
    int64_t t = r + pad - p * dilation;
    return t < 0 || t % stride != 0 || t / stride >= outs ? -1 : t / stride;
  };
  if (kind == LOCUS_CONV_INPUT_GRAD) { // a = dy, b = w, y = dx
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t r = 0; r < s.h; ++r)
          for (int64_t col = 0; col < s.w; ++col) {
            int64_t grp = c / g.cg, cc = c % g.cg;
            float acc = 0.0f;
            for (int64_t o = grp * g.og; o < (grp + 1) * g.og; ++o)
              for (int64_t p = 0; p < s.kh; ++p) {
                int64_t i = meets(r, p, s.sh, s.dh, s.ph, s.oh);
                for (int64_t q = 0; i >= 0 && q < s.kw; ++q) {
                  int64_t j = meets(col, q, s.sw, s.dw, s.pw, s.ow);
                  if (j >= 0)
                    acc += a[dyAt(n, o, i, j)] * b[wAt(o, cc, p, q)];
                }
              }
            y.set(xAt(n, c, r, col), acc);
          }
    return;
  }
  for (int64_t o = 0; o < s.o; ++o) // a = x, b = dy, y = dw
    for (int64_t cc = 0; cc < g.cg; ++cc)
      for (int64_t p = 0; p < s.kh; ++p)
        for (int64_t q = 0; q < s.kw; ++q) {
          float acc = 0.0f;
          for (int64_t n = 0; n < s.n; ++n)
            for (int64_t i = 0; i < s.oh; ++i)
              for (int64_t j = 0; j < s.ow; ++j) {
                int64_t r = i * s.sh + p * s.dh - s.ph,
                        col = j * s.sw + q * s.dw - s.pw;
                if (r >= 0 && r < s.h && col >= 0 && col < s.w)
                  acc += a[xAt(n, o / g.og * g.cg + cc, r, col)] *
                         b[dyAt(n, o, i, j)];
              }
          y.set(wAt(o, cc, p, q), acc);
        }
}

#if LOCUS_HAVE_DNNL_H
dnnl_alg_kind_t locus::rt::conv::gradAlgorithm(const Dnnl &d, int64_t kind,
                                               const Params &params) {
  const GradPrimitives *p = gradPrimitivesFor(d, kind, params);
  return p ? p->algorithm : dnnl_alg_kind_undef;
}
#endif

extern "C" void locus_conv2d_grad(int64_t kind, uintptr_t paramsAddress,
                                  uintptr_t aAddress, uintptr_t bAddress,
                                  uintptr_t yAddress) {
  // NOLINTBEGIN(performance-no-int-to-ptr): generated code's addresses
  const auto *a = reinterpret_cast<const void *>(aAddress);
  const auto *b = reinterpret_cast<const void *>(bAddress);
  auto *y = reinterpret_cast<void *>(yAddress);
  // NOLINTEND(performance-no-int-to-ptr)
  Params p = locus::rt::conv::readParams(paramsAddress);
  Shape s(p);
  if (kind != LOCUS_CONV_INPUT_GRAD && kind != LOCUS_CONV_WEIGHT_GRAD)
    return; // the compiler passes no other
  bool input = kind == LOCUS_CONV_INPUT_GRAD;
  if (s.empty()) { // a sum over nothing (zero bits in any type)
    std::memset(y, 0,
                static_cast<size_t>(std::max<int64_t>(
                    0, input ? s.inputElements() : s.weightElements())) *
                    (s.y16() ? 2 : sizeof(float)));
    return;
  }
  // Never throws: oneDNN's failures fall back to the built-in path, which
  // falls back to the direct loops when its workspace cannot grow; a
  // 16-bit gradient to its widened f32 one, and to the direct loops on
  // operands widened one by one when those copies cannot be had.
  if (!s.sixteenBit()) {
    f32Grad(kind, p, static_cast<const float *>(a),
            static_cast<const float *>(b), static_cast<float *>(y));
    return;
  }
  if (!locus::rt::guardValue(false,
                             [&] { return sixteenBitGrad(kind, p, a, b, y); }))
    directGrad(kind, s, Floats::sixteen(s, a), Floats::sixteen(s, b),
               s.y16() ? Floats::sixteen(s, y)
                       : Floats::of(static_cast<float *>(y)));
}
