// Which algorithm the host convolutions ask oneDNN for (runtime/src/conv.h):
// Winograd's F(4x4, 3x3) for the 3x3 convolutions where it pays, the
// direct one elsewhere, and what oneDNN then built, for the forward (both
// forms) and both gradients. Their numerics are RuntimeTest's Conv2d and
// Conv2dGrad cases, which include shapes of each choice.

#include "conv.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

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
