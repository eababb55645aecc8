// PrecisionTest.cpp - bf16 and f16: values of those types through the C++
// API, ops on them against double references of PyTorch's rounding rules,
// CompileOptions::precision (torch.autocast's contract) on a product, a
// convolution and a training step, and the errors a user can make.

#include "ErrorOf.h"
#include "RandomValues.h"
#include "locus/Compile.h"
#include "locus/half.hpp"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace locus;
using locus::test::errorOf;

namespace {

double roundBf16(double v) {
  return half::fromBf16Bits(half::bf16Bits(static_cast<float>(v)));
}
double roundF16(double v) {
  return half::fromF16Bits(half::f16Bits(static_cast<float>(v)));
}

std::vector<double> rounded(const std::vector<float> &v, double (*r)(double)) {
  std::vector<double> out;
  out.reserve(v.size());
  for (float x : v)
    out.push_back(r(x));
  return out;
}

/// Each value within `ulps` units in the last place of a type with
/// `mantissaBits` (bf16: 8, f16: 11) of the reference.
void expectWithinUlps(const std::vector<float> &got,
                      const std::vector<double> &want, int mantissaBits,
                      double ulps = 1) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double ulp =
        std::ldexp(std::max(std::fabs(want[i]), 1e-30), 1 - mantissaBits);
    EXPECT_LE(std::fabs(got[i] - want[i]), ulps * ulp + 1e-30)
        << "element " << i << ": " << got[i] << " vs " << want[i];
  }
}

/// y = x W^T + b of x [rows, in], W [out, in], from `round`ed operands, with
/// each result rounded by `round` (one rounding of an exact sum).
std::vector<double> linearReference(const std::vector<double> &x,
                                    const std::vector<double> &w,
                                    const std::vector<double> &b, int rows,
                                    int in, int out, double (*round)(double)) {
  std::vector<double> y(static_cast<size_t>(rows) * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double acc = b[o];
      for (int k = 0; k < in; ++k)
        acc += x[r * in + k] * w[o * in + k];
      y[r * out + o] = round(acc);
    }
  return y;
}

} // namespace

TEST(Precision, ValuesOfEachTypeRoundAtTheBoundaryAndComputeInF32) {
  // bf16 and f16 inputs hold their values rounded; exp computes in f32 and
  // rounds once; bf16 + f32 promotes to f32; f16 overflows to infinity.
  Graph g("halves");
  auto xb = g.input("xb", {6}, {.dtype = DType::bf16});
  auto xh = g.input("xh", {6}, {.dtype = DType::f16});
  auto y = g.input("y", {6});
  g.output("exp_b", exp(xb));
  g.output("exp_h", exp(xh));
  g.output("sum", xb + y);
  g.output("scaled_h", xh * 30000.0f);
  CompiledModel m = compile(g);
  std::vector<float> xs = randomValues(6, 7, -3, 3);
  std::vector<float> ys = randomValues(6, 8);
  auto out = m.run({{"xb", HostTensor::fromF32({6}, xs, DType::bf16)},
                    {"xh", HostTensor::fromF32({6}, xs, DType::f16)},
                    {"y", HostTensor::fromF32({6}, ys)}});
  EXPECT_EQ(out.at("exp_b").dtype, DType::bf16);
  EXPECT_EQ(out.at("exp_h").dtype, DType::f16);
  EXPECT_EQ(out.at("sum").dtype, DType::f32);
  std::vector<double> expB, expH, sum, scaled;
  for (size_t i = 0; i < xs.size(); ++i) {
    // Rounded once from the f32 result: at most one ulp from rounding the
    // exact value.
    expB.push_back(roundBf16(std::exp(roundBf16(xs[i]))));
    expH.push_back(roundF16(std::exp(roundF16(xs[i]))));
    sum.push_back(roundBf16(xs[i]) + ys[i]);
    scaled.push_back(roundF16(roundF16(xs[i]) * 30000.0));
  }
  expectWithinUlps(out.at("exp_b").f32, expB, 8);
  expectWithinUlps(out.at("exp_h").f32, expH, 11);
  expectWithinUlps(out.at("sum").f32, sum, 24);
  for (size_t i = 0; i < xs.size(); ++i)
    if (std::fabs(roundF16(xs[i]) * 30000.0) > 65520)
      EXPECT_TRUE(std::isinf(out.at("scaled_h").f32[i])) << i;
    else
      EXPECT_FLOAT_EQ(out.at("scaled_h").f32[i], scaled[i]) << i;
}

TEST(Precision, ProductsOf16BitOperandsAccumulateInF32) {
  // 96 and 256 products per output: rounding each partial sum to bf16
  // would be off by many ulps; one rounding of the f32 sum is within one.
  // The small product runs as generated loops, the large one through the
  // runtime's locus_gemm_16.
  for (auto [rows, in, outs] :
       {std::tuple{5, 96, 7}, std::tuple{64, 256, 48}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(in));
    Graph g("products");
    auto x = g.input("x", {rows, in}, {.dtype = DType::bf16});
    auto w = g.input("w", {outs, in}, {.dtype = DType::bf16});
    auto b = g.input("b", {outs}, {.dtype = DType::bf16});
    g.output("y", linear(x, w, b));
    g.output("mm", matmul(x, transpose(w, 0, 1)));
    CompiledModel m = compile(g);
    std::vector<float> xs = randomValues(rows * in, 1),
                       ws = randomValues(outs * in, 2),
                       bs = randomValues(outs, 3);
    auto out = m.run({{"x", HostTensor::fromF32({rows, in}, xs)},
                      {"w", HostTensor::fromF32({outs, in}, ws)},
                      {"b", HostTensor::fromF32({outs}, bs)}});
    std::vector<double> zeros(outs, 0.0);
    expectWithinUlps(
        out.at("y").f32,
        linearReference(rounded(xs, roundBf16), rounded(ws, roundBf16),
                        rounded(bs, roundBf16), rows, in, outs, roundBf16),
        8);
    expectWithinUlps(out.at("mm").f32,
                     linearReference(rounded(xs, roundBf16),
                                     rounded(ws, roundBf16), zeros, rows, in,
                                     outs, roundBf16),
                     8);
  }
}

TEST(Precision, AutocastRoundsTheOperandsOfProductsAndConvolutions) {
  // precision=bf16 and f16 on an f32 graph: the linear layer and the
  // convolution (through oneDNN's bf16 kernels where they pay) read their
  // operands rounded to 16 bits; the linear layer rounds its result once,
  // the convolution keeps an f32 result; the graph's inputs and outputs
  // stay f32. The convolution is large enough for oneDNN. (Eight rows:
  // fewer keep the product f32, below.)
  const int rows = 8, in = 64, outs = 6;
  Graph g("autocast");
  auto x = g.input("x", {rows, in});
  auto w = g.parameter("w", {outs, in}, randomValues(outs * in, 11));
  auto b = g.parameter("b", {outs}, randomValues(outs, 12));
  g.output("y", linear(x, w, b));
  const int channels = 16, side = 10, filters = 32;
  auto img = g.input("img", {1, channels, side, side});
  auto k = g.parameter("k", {filters, channels, 3, 3},
                       randomValues(filters * channels * 9, 13));
  g.output("conv", relu(conv2d(img, k)));
  std::vector<float> xs = randomValues(rows * in, 14),
                     imgs = randomValues(channels * side * side, 15);
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({rows, in}, xs)},
      {"img", HostTensor::fromF32({1, channels, side, side}, imgs)}};
  for (auto [name, round, bits] :
       {std::tuple{"bf16", &roundBf16, 8}, std::tuple{"f16", &roundF16, 11}}) {
    SCOPED_TRACE(name);
    CompiledModel m = compile(g, {.precision = name, .cache = false});
    auto out = m.run(inputs);
    EXPECT_EQ(out.at("y").dtype, DType::f32);
    expectWithinUlps(
        out.at("y").f32,
        linearReference(
            rounded(xs, round), rounded(randomValues(outs * in, 11), round),
            rounded(randomValues(outs, 12), round), rows, in, outs, round),
        bits);
    // The convolution: 32 channels of 8x8, each an f32 sum of 144 exact
    // products of rounded operands, then ReLU.
    std::vector<double> ki =
        rounded(randomValues(filters * channels * 9, 13), round);
    std::vector<double> xi = rounded(imgs, round), want;
    const int o8 = side - 2;
    for (int o = 0; o < filters; ++o)
      for (int i = 0; i < o8; ++i)
        for (int j = 0; j < o8; ++j) {
          double acc = 0;
          for (int c = 0; c < channels; ++c)
            for (int a = 0; a < 3; ++a)
              for (int e = 0; e < 3; ++e)
                acc += xi[(c * side + i + a) * side + j + e] *
                       ki[((o * channels + c) * 3 + a) * 3 + e];
          want.push_back(std::max(acc, 0.0));
        }
    const std::vector<float> &conv = out.at("conv").f32;
    ASSERT_EQ(conv.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(conv[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << i;
  }
  // fp32 keeps every bit that bf16 rounds away.
  CompiledModel full = compile(g, {.cache = false});
  EXPECT_NE(full.run(inputs).at("y").f32,
            compile(g, {.precision = "bf16", .cache = false})
                .run(inputs)
                .at("y")
                .f32);
}

namespace {

/// relu(conv2d(x, w, b) + residual) of [1, c, side, side] x, 3x3 w with
/// padding 1, in double (`b`, `residual` may be empty).
std::vector<double> convBlockRef(const std::vector<double> &x,
                                 const std::vector<double> &w,
                                 const std::vector<double> &b,
                                 const std::vector<double> &residual, int c,
                                 int side) {
  std::vector<double> y(x.size());
  for (int o = 0; o < c; ++o)
    for (int i = 0; i < side; ++i)
      for (int j = 0; j < side; ++j) {
        double acc = b.empty() ? 0.0 : b[o];
        for (int k = 0; k < c; ++k)
          for (int a = 0; a < 3; ++a)
            for (int e = 0; e < 3; ++e) {
              int r = i + a - 1, q = j + e - 1;
              if (r >= 0 && r < side && q >= 0 && q < side)
                acc += x[(k * side + r) * side + q] *
                       w[((o * c + k) * 3 + a) * 3 + e];
            }
        size_t at = (o * side + i) * side + j;
        y[at] = std::max(acc + (residual.empty() ? 0.0 : residual[at]), 0.0);
      }
  return y;
}

} // namespace

TEST(Precision, AutocastResidualBlocksOnTheCpu) {
  // Two ResNet blocks under precision=bf16 on the CPU: each convolution
  // reads its operands rounded to bf16 (oneDNN's bf16 kernels where the
  // CPU has them, widened f32 otherwise), the residual stream stays f32,
  // and the first convolution's ReLU is rounded once, in its call. Values
  // between the calls stay NHWC (the block's output and its rounding
  // side by side). Against a double reference of those roundings, and
  // against the same artifact run with LOCUS_CONV16=widen.
  const int c = 16, side = 6, n = c * side * side;
  Graph g("blocks");
  auto x = g.input("x", {1, c, side, side});
  auto bias = g.parameter("b", {c}, randomValues(c, 40));
  Tensor v = x;
  for (int k = 0; k < 4; k += 2) {
    auto wa = g.parameter("w" + std::to_string(k), {c, c, 3, 3},
                          randomValues(c * c * 9, 41 + k));
    auto wb = g.parameter("w" + std::to_string(k + 1), {c, c, 3, 3},
                          randomValues(c * c * 9, 42 + k));
    auto h = relu(conv2d(v, wa, bias, {.padding = {1, 1}}));
    v = relu(conv2d(h, wb, {}, {.padding = {1, 1}}) + v);
  }
  g.output("y", v);
  std::vector<float> xs = randomValues(n, 50);
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({1, c, side, side}, xs)}};
  CompiledModel m = compile(g, {.precision = "bf16", .cache = false});
  std::vector<float> got = m.run(inputs).at("y").f32;
  std::vector<double> ref(xs.begin(), xs.end());
  std::vector<double> b = rounded(randomValues(c, 40), &roundBf16);
  for (int k = 0; k < 4; k += 2) {
    auto wa = rounded(randomValues(c * c * 9, 41 + k), &roundBf16);
    auto wb = rounded(randomValues(c * c * 9, 42 + k), &roundBf16);
    std::vector<double> xr(ref.size());
    for (size_t i = 0; i < ref.size(); ++i)
      xr[i] = roundBf16(ref[i]);
    std::vector<double> h = convBlockRef(xr, wa, b, {}, c, side);
    for (double &e : h)
      e = roundBf16(e);
    ref = convBlockRef(h, wb, {}, ref, c, side);
  }
  double scale = 0;
  for (double e : ref)
    scale = std::max(scale, std::fabs(e));
  // An f32 sum may round a value the other way to bf16 than the double
  // one: a unit in the last place of bf16 of the output's scale.
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(got[i], ref[i], 0x1p-8 * scale) << i;
  std::optional<std::string> saved;
  if (const char *value = std::getenv("LOCUS_CONV16"))
    saved = value;
  setenv("LOCUS_CONV16", "widen", 1);
  std::vector<float> widened = m.run(inputs).at("y").f32;
  if (saved)
    setenv("LOCUS_CONV16", saved->c_str(), 1);
  else
    unsetenv("LOCUS_CONV16");
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(widened[i], got[i], 0x1p-8 * scale) << i;
  // fp32 differs: the roundings are real.
  EXPECT_NE(compile(g, {.cache = false}).run(inputs).at("y").f32, got);
}

TEST(Precision, AProductOfFewRowsAgainstAWeightStaysF32) {
  // A linear layer at batch 1: casting its weight to bf16 every step
  // would cost more than the product saves, so it computes in f32 and
  // gives fp32's result exactly; at batch 8 the same layer rounds.
  const int in = 64, outs = 6;
  for (int rows : {1, 8}) {
    SCOPED_TRACE(rows);
    Graph g("rows");
    auto x = g.input("x", {rows, in});
    auto w = g.parameter("w", {outs, in}, randomValues(outs * in, 31));
    g.output("y", linear(x, w));
    std::map<std::string, HostTensor> inputs{
        {"x", HostTensor::fromF32({rows, in}, randomValues(rows * in, 32))}};
    std::vector<float> full =
        compile(g, {.cache = false}).run(inputs).at("y").f32;
    std::vector<float> half = compile(g, {.precision = "bf16", .cache = false})
                                  .run(inputs)
                                  .at("y")
                                  .f32;
    EXPECT_EQ(half == full, rows == 1);
  }
}

TEST(Precision, WeightsCastAtLoadFollowWritesOfTheirState) {
  // Inference in bf16: the casts of the weight and the bias read state no
  // step writes, so they run at load (into persistent buffers), not every
  // step: a step launches the input's cast and the product. setState()
  // runs them again, and the next step reads the new weights' casts, on
  // the CPU and on cuda:0 (sim here).
  const int rows = 8, in = 64, outs = 6;
  Graph g("cast_at_load");
  auto x = g.input("x", {rows, in});
  auto w = g.parameter("w", {outs, in}, randomValues(outs * in, 41));
  auto b = g.parameter("b", {outs}, randomValues(outs, 42));
  g.output("y", linear(x, w, b));
  std::vector<float> xs = randomValues(rows * in, 43);
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({rows, in}, xs)}};
  for (const CompileOptions &placed :
       {CompileOptions{.policy = "cpu"},
        CompileOptions{.policy = "prefer-gpu",
                       .devices = {"cpu", "cuda:0"},
                       .deviceMap = "cuda:0=sim"}}) {
    SCOPED_TRACE(placed.policy);
    CompileOptions options = placed;
    options.precision = "bf16";
    options.cache = false;
    CompiledModel m = compile(g, options);
    for (int version : {0, 1, 2}) {
      SCOPED_TRACE(version);
      std::vector<float> ws = randomValues(outs * in, 41 + 10 * version),
                         bs = randomValues(outs, 42 + 10 * version);
      if (version > 0) {
        m.setState("w", HostTensor::fromF32({outs, in}, ws));
        m.setState("b", HostTensor::fromF32({outs}, bs));
      }
      RunStats stats;
      auto out = m.run(inputs, &stats);
      EXPECT_LT(stats.launches, 4U) << "the weights' casts ran in the step";
      expectWithinUlps(
          out.at("y").f32,
          linearReference(rounded(xs, roundBf16), rounded(ws, roundBf16),
                          rounded(bs, roundBf16), rows, in, outs, roundBf16),
          8);
      // The master weights stay f32.
      EXPECT_EQ(m.state("w").f32, ws);
    }
  }
}

TEST(Precision, TrainingKeepsF32MasterWeightsAndFollowsF32Training) {
  // A Linear(16, 1) regression with SGD, bf16 against fp32: the weights
  // stay f32 state, their updates are f32 (bf16 weights could not move by
  // 1e-4 from 0.5), and the losses follow fp32's within bf16's rounding.
  auto build = [](Graph &g) {
    auto x = g.input("x", {32, 16});
    auto y = g.input("y", {32, 1});
    auto w = g.parameter("w", {1, 16}, std::vector<float>(16, 0.5f));
    auto loss = mse_loss(linear(x, w), y);
    g.output("loss", loss);
    optim::SGD({w}, {.lr = 1e-4}).step(loss);
  };
  Graph gb("bf16"), gf("fp32");
  build(gb);
  build(gf);
  CompiledModel bf = compile(gb, {.precision = "bf16", .cache = false});
  CompiledModel fp = compile(gf, {.cache = false});
  std::map<std::string, HostTensor> batch{
      {"x", HostTensor::fromF32({32, 16}, randomValues(512, 21))},
      {"y", HostTensor::fromF32({32, 1}, randomValues(32, 22))}};
  for (int step = 0; step < 5; ++step) {
    float lb = bf.run(batch).at("loss").scalar();
    float lf = fp.run(batch).at("loss").scalar();
    EXPECT_NEAR(lb, lf, 2e-2 * lf) << "step " << step;
  }
  const HostTensor &w = bf.state("w");
  EXPECT_EQ(w.dtype, DType::f32);
  // 5 steps of 1e-4 * (a gradient of order 1): each weight moved off 0.5
  // by less than bf16's spacing there (2^-8), which only f32 can hold.
  int moved = 0;
  for (float v : w.f32)
    moved += v != 0.5f && std::fabs(v - 0.5f) < 1.0f / 256;
  EXPECT_GT(moved, 8);
}

TEST(Precision, MistakesAreErrorsAtTheUsersLine) {
  Graph g("mistakes");
  auto a = g.input("a", {2, 3}, {.dtype = DType::bf16});
  auto b = g.input("b", {3, 2});
  unsigned line = 0;
  std::string message = errorOf([&] { matmul(a, b); }, &line);
  EXPECT_NE(message.find("lhs is bf16 but rhs is f32; cast one of them"),
            std::string::npos)
      << message;
  EXPECT_NE(line, 0u);
  g.output("y", a);
  message = errorOf([&] { compile(g, {.precision = "fp8"}); });
  EXPECT_NE(
      message.find("precision must be fp32, tf32, bf16 or f16, not 'fp8'"),
      std::string::npos)
      << message;
  // An integer tensor is no float input.
  CompiledModel m = compile(g);
  try {
    m.run({{"a", HostTensor::fromI64({2, 3}, {1, 2, 3, 4, 5, 6})}});
    ADD_FAILURE() << "an i64 tensor for a bf16 input";
  } catch (const RunError &e) {
    message = e.what();
  }
  EXPECT_NE(message.find("input 'a' is [2, 3] i64 but the graph takes [2, 3] "
                         "bf16"),
            std::string::npos)
      << message;
}
