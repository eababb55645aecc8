// Which algorithm the host convolutions ask oneDNN for (runtime/src/conv.h):
// Winograd's F(4x4, 3x3) for the 3x3 convolutions where it pays, the
// direct one elsewhere, and what oneDNN then built, for the forward (both
// forms) and both gradients; where 16-bit calls run in 16 bits; and the
// direct gradient loops that run when no memory can be had. The calls'
// numerics are RuntimeTest's Conv2d and Conv2dGrad cases, which include
// shapes of each choice.

#include "conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using locus::rt::conv::Params;
using locus::rt::conv::Shape;

/// The parameters of an n x c x h x h input, o outputs, a k x k kernel of
/// stride `stride`, padding k / 2, groups `groups`.
Params params(int64_t n, int64_t c, int64_t h, int64_t o, int64_t k,
              int64_t stride = 1, int64_t groups = 1) {
  int64_t pad = k / 2, out = (h + 2 * pad - k) / stride + 1;
  Params p{};
  p[LOCUS_CONV_N] = n;
  p[LOCUS_CONV_C] = c;
  p[LOCUS_CONV_H] = p[LOCUS_CONV_W] = h;
  p[LOCUS_CONV_O] = o;
  p[LOCUS_CONV_KH] = p[LOCUS_CONV_KW] = k;
  p[LOCUS_CONV_OH] = p[LOCUS_CONV_OW] = out;
  p[LOCUS_CONV_STRIDE_H] = p[LOCUS_CONV_STRIDE_W] = stride;
  p[LOCUS_CONV_PAD_H] = p[LOCUS_CONV_PAD_W] = pad;
  p[LOCUS_CONV_DILATION_H] = p[LOCUS_CONV_DILATION_W] = 1;
  p[LOCUS_CONV_GROUPS] = groups;
  p[LOCUS_CONV_FLAGS] = LOCUS_CONV_BIAS | LOCUS_CONV_RELU;
  return p;
}

bool winogradFirst(const Params &p) {
  auto algorithms = locus::rt::conv::algorithmsFor(Shape(p));
  return algorithms.count == 2 &&
         *algorithms.begin() == dnnl_convolution_winograd;
}

} // namespace

TEST(ConvChoice, WinogradWhereItPays) {
  if (std::getenv("LOCUS_CONV"))
    GTEST_SKIP() << "LOCUS_CONV is set";
  // A ResNet block's 3x3 convolutions at 56x56, and the ResNet-18
  // example's at batch 32 (32x32 to 8x8).
  EXPECT_TRUE(winogradFirst(params(1, 64, 56, 64, 3)));
  EXPECT_TRUE(winogradFirst(params(8, 64, 56, 64, 3)));
  EXPECT_TRUE(winogradFirst(params(32, 128, 16, 128, 3)));
  EXPECT_TRUE(winogradFirst(params(32, 256, 8, 256, 3)));
  // Where it lost on the build machine, or does not apply.
  EXPECT_FALSE(winogradFirst(params(8, 256, 8, 256, 3)));      // 512 pixels
  EXPECT_FALSE(winogradFirst(params(32, 512, 4, 512, 3)));     // 4x4
  EXPECT_FALSE(winogradFirst(params(16, 32, 28, 32, 3)));      // 32 channels
  EXPECT_FALSE(winogradFirst(params(8, 64, 56, 128, 3, 2)));   // stride 2
  EXPECT_FALSE(winogradFirst(params(8, 64, 56, 64, 1)));       // 1x1
  EXPECT_FALSE(winogradFirst(params(8, 64, 56, 64, 3, 1, 2))); // grouped
  EXPECT_FALSE(winogradFirst(params(8, 64, 56, 64, 5)));       // 5x5
}

TEST(ConvChoice, OneDnnBuildsWhatWasAskedFor) {
  const locus::rt::Dnnl *d = locus::rt::conv::chosenDnnl();
  if (!d || std::getenv("LOCUS_CONV"))
    GTEST_SKIP() << "oneDNN is not loaded, or LOCUS_CONV is set";
  using locus::rt::conv::forwardAlgorithm;
  using locus::rt::conv::gradAlgorithm;
  Params wino = params(2, 64, 32, 64, 3), direct = params(2, 64, 32, 64, 3, 2);
  for (bool kept : {false, true}) {
    EXPECT_EQ(forwardAlgorithm(*d, wino, kept), dnnl_convolution_winograd)
        << "weights kept: " << kept;
    EXPECT_EQ(forwardAlgorithm(*d, direct, kept), dnnl_convolution_direct);
  }
  for (int64_t kind : {LOCUS_CONV_INPUT_GRAD, LOCUS_CONV_WEIGHT_GRAD}) {
    EXPECT_EQ(gradAlgorithm(*d, kind, wino), dnnl_convolution_winograd)
        << "kind " << kind;
    EXPECT_EQ(gradAlgorithm(*d, kind, direct), dnnl_convolution_direct);
  }
}

TEST(ConvChoice, SixteenBitCallsRunNativeWhereTheCpuHasAmx) {
  const locus::rt::Dnnl *d = locus::rt::conv::chosenDnnl();
  if (!d || std::getenv("LOCUS_CONV") || std::getenv("LOCUS_CONV16"))
    GTEST_SKIP() << "oneDNN is not loaded, or LOCUS_CONV(16) is set";
  auto isa = static_cast<unsigned>(d->dnnl_get_effective_cpu_isa());
  bool amx =
      (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
  std::printf("[  NOTE    ] oneDNN: %s; AMX: %s\n", d->name.c_str(),
              amx ? "yes" : "no (16-bit calls widened)");
  auto with = [](Params p, int64_t flags) {
    p[LOCUS_CONV_FLAGS] |= flags;
    return p;
  };
  Params block = params(2, 64, 16, 64, 3), thin = params(2, 3, 16, 16, 3),
         grouped = params(2, 64, 16, 64, 3, 1, 8);
  using locus::rt::conv::nativeSixteen;
  EXPECT_EQ(nativeSixteen(*d, Shape(with(block, LOCUS_CONV_BF16))), amx);
  EXPECT_FALSE(nativeSixteen(*d, Shape(with(block, LOCUS_CONV_F16))));
  // Fewer than 16 channels in (or out) per group: widened.
  EXPECT_FALSE(nativeSixteen(*d, Shape(with(thin, LOCUS_CONV_BF16))));
  EXPECT_FALSE(nativeSixteen(*d, Shape(with(grouped, LOCUS_CONV_BF16))));
  if (!amx)
    return;
  // Where native, oneDNN builds every form (else the runtime would widen
  // them without a word): the forward with its output f32 (a residual)
  // and bf16, and both gradients with an f32 and a bf16 result.
  Params residual =
      with(block, LOCUS_CONV_BF16 | LOCUS_CONV_RESIDUAL | LOCUS_CONV_Y_16BIT);
  for (Params p :
       {with(block, LOCUS_CONV_BF16),
        with(block, LOCUS_CONV_BF16 | LOCUS_CONV_Y_16BIT), residual}) {
    EXPECT_EQ(locus::rt::conv::forwardAlgorithm(*d, p, false),
              dnnl_convolution_direct)
        << "flags " << p[LOCUS_CONV_FLAGS];
    for (int64_t kind : {LOCUS_CONV_INPUT_GRAD, LOCUS_CONV_WEIGHT_GRAD})
      EXPECT_EQ(locus::rt::conv::gradAlgorithm(*d, kind, p),
                dnnl_convolution_direct)
          << "kind " << kind << " flags " << p[LOCUS_CONV_FLAGS];
  }
}

TEST(ConvChoice, DirectGradientLoopsMatchTheOtherPaths) {
  // The loops that run when no memory can be had, against
  // locus_conv2d_grad's usual path (oneDNN's or the built-in one) on the
  // same random operands: f32, and bf16 against the f32 of the same
  // values.
  using locus::rt::conv::Floats;
  struct Case {
    Params p;
    int64_t dilation;
  } cases[] = {{params(2, 8, 9, 12, 3, 2), 1},
               {params(1, 8, 9, 12, 3, 1, 4), 2},
               {params(2, 6, 7, 4, 1, 2), 1},
               {params(1, 4, 8, 6, 5), 1}};
  uint32_t state = 7;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  };
  for (Case c : cases) {
    Params p = c.p;
    p[LOCUS_CONV_FLAGS] = 0;
    p[LOCUS_CONV_DILATION_H] = p[LOCUS_CONV_DILATION_W] = c.dilation;
    int64_t k = p[LOCUS_CONV_KH], pad = p[LOCUS_CONV_PAD_H],
            stride = p[LOCUS_CONV_STRIDE_H];
    p[LOCUS_CONV_OH] = p[LOCUS_CONV_OW] =
        (p[LOCUS_CONV_H] + 2 * pad - c.dilation * (k - 1) - 1) / stride + 1;
    Shape s(p);
    std::vector<float> x(s.inputElements()), w(s.weightElements()),
        dy(s.convElements());
    for (auto *v : {&x, &w, &dy})
      for (float &e : *v)
        e = next();
    for (int64_t kind : {LOCUS_CONV_INPUT_GRAD, LOCUS_CONV_WEIGHT_GRAD}) {
      bool input = kind == LOCUS_CONV_INPUT_GRAD;
      const std::vector<float> &a = input ? dy : x, &b = input ? w : dy;
      size_t count = input ? x.size() : w.size();
      std::vector<float> want(count), got(count, 1e30f);
      locus_conv2d_grad(kind, reinterpret_cast<uintptr_t>(p.data()),
                        reinterpret_cast<uintptr_t>(a.data()),
                        reinterpret_cast<uintptr_t>(b.data()),
                        reinterpret_cast<uintptr_t>(want.data()));
      locus::rt::conv::directGrad(kind, s, Floats::of(a.data()),
                                  Floats::of(b.data()), Floats::of(got.data()));
      for (size_t i = 0; i < count; ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-5 * std::abs(want[i]))
            << (input ? "input" : "weight") << " gradient, element " << i;
      // The same operands rounded to bf16: the loops read them widened
      // and round each sum once, bit for bit the f32 loops' sums rounded.
      std::vector<uint16_t> a16(a.size()), b16(b.size()), y16(count);
      std::vector<float> aw(a.size()), bw(b.size()), yw(count);
      for (size_t i = 0; i < a.size(); ++i)
        aw[i] = locus::half::fromBf16Bits(a16[i] = locus::half::bf16Bits(a[i]));
      for (size_t i = 0; i < b.size(); ++i)
        bw[i] = locus::half::fromBf16Bits(b16[i] = locus::half::bf16Bits(b[i]));
      Params p16 = p;
      p16[LOCUS_CONV_FLAGS] = LOCUS_CONV_BF16 | LOCUS_CONV_Y_16BIT;
      Shape s16(p16);
      locus::rt::conv::directGrad(kind, Shape(p), Floats::of(aw.data()),
                                  Floats::of(bw.data()), Floats::of(yw.data()));
      locus::rt::conv::directGrad(kind, s16, Floats::sixteen(s16, a16.data()),
                                  Floats::sixteen(s16, b16.data()),
                                  Floats::sixteen(s16, y16.data()));
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(y16[i], locus::half::bf16Bits(yw[i]))
            << (input ? "input" : "weight") << " gradient in bf16, element "
            << i;
    }
  }
}
