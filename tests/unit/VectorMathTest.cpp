// VectorMathTest.cpp - exp, tanh and erf in compiled host code (the
// polynomials of --locus-vector-math) against double references over about
// a million points, and their special values; with sigmoid, GELU and
// softmax, which are built on them.

#include "RandomValues.h"
#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace locus;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

/// Points where each function changes character: wide sweeps, the ranges
/// the approximations split at, tiny values, specials.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (auto [n, seed, low, high] : {std::tuple{400000, 1u, -90.0f, 90.0f},
                                    {400000, 2u, -9.0f, 9.0f},
                                    {200000, 3u, -1.0f, 1.0f},
                                    {50000, 4u, -1e-3f, 1e-3f}}) {
    std::vector<float> v = randomValues(n, seed, low, high);
    xs.insert(xs.end(), v.begin(), v.end());
  }
  for (float s :
       {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, 0.0004f, 0.8f, 2.0f, 3.75f, 7.99f,
        8.5f, 88.7f, 88.8f, -87.3f, -87.4f, -103.0f, kInf, -kInf})
    xs.push_back(s);
  return xs;
}

/// f32's unit in the last place at |w| (normal range).
double ulpAt(double w) {
  int e = 0;
  std::frexp(std::max(std::fabs(w), 0x1p-126), &e);
  return std::ldexp(1.0, e - 24);
}

struct Worst {
  double ulps = 0, abs = 0;
  float at = 0;
};

CompiledModel compileUnary(const std::string &name, size_t n,
                           Tensor (*op)(const Tensor &)) {
  Graph g(name);
  g.output("y", op(g.input("x", {static_cast<int64_t>(n)})));
  return compile(g, {.policy = "cpu", .devices = {"cpu"}});
}

/// The largest error of `got` against `want` (both the same length) in
/// ulps of the reference and in absolute terms, over finite references.
Worst worstOf(const std::vector<float> &xs, const std::vector<float> &got,
              double (*want)(double)) {
  Worst w;
  for (size_t i = 0; i < xs.size(); ++i) {
    double ref = want(xs[i]);
    if (!std::isfinite(ref) || !std::isfinite(got[i]))
      continue;
    double err = std::fabs(got[i] - ref);
    if (err / ulpAt(ref) > w.ulps) {
      w.ulps = err / ulpAt(ref);
      w.at = xs[i];
    }
    w.abs = std::max(w.abs, err);
  }
  return w;
}

std::vector<float> run(CompiledModel &m, const std::vector<float> &xs) {
  auto out = m.run(
      {{"x", HostTensor::fromF32({static_cast<int64_t>(xs.size())}, xs)}});
  return out.at("y").f32;
}

TEST(VectorMath, ExpIsWithinTwoUlpsAndFlushesBelowTheNormalRange) {
  std::vector<float> xs = sweep();
  CompiledModel m = compileUnary("vexp", xs.size(),
                                 [](const Tensor &x) { return locus::exp(x); });
  std::vector<float> got = run(m, xs);
  double (*ref)(double) = [](double x) { return std::exp(x); };
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = std::exp(static_cast<double>(xs[i]));
    if (want > std::numeric_limits<float>::max()) {
      EXPECT_EQ(got[i], kInf) << "exp(" << xs[i] << ")";
    } else if (want < 0x1p-126) {
      // Below f32's normal range: zero, or the subnormal libm gives.
      EXPECT_LE(got[i], 0x1p-126) << "exp(" << xs[i] << ")";
      EXPECT_GE(got[i], 0.0f) << "exp(" << xs[i] << ")";
    }
  }
  // Within 2 ulps over the normal range; within 16 in its last unit below
  // overflow, where the approximation's 2^n stops at 2^127 (x above 126.5
  // ln 2) and its reduced argument leaves the polynomial's interval.
  for (auto [low, high, ulps] :
       {std::tuple{-87.3f, 87.6f, 2.0}, std::tuple{87.6f, 88.72f, 16.0}}) {
    std::vector<float> in, out;
    for (size_t i = 0; i < xs.size(); ++i)
      if (xs[i] > low && xs[i] < high) {
        in.push_back(xs[i]);
        out.push_back(got[i]);
      }
    Worst w = worstOf(in, out, ref);
    EXPECT_LE(w.ulps, ulps) << "at exp(" << w.at << ")";
    EXPECT_GT(in.size(), 500u);
  }
}

TEST(VectorMath, TanhAndErfAreWithinAFewUlpsAndSaturate) {
  std::vector<float> xs = sweep();
  for (auto [name, op, ref] :
       {std::tuple{"tanh", +[](const Tensor &x) { return locus::tanh(x); },
                   +[](double x) { return std::tanh(x); }},
        std::tuple{"erf", +[](const Tensor &x) { return locus::erf(x); },
                   +[](double x) { return std::erf(x); }}}) {
    SCOPED_TRACE(name);
    CompiledModel m = compileUnary(std::string("v") + name, xs.size(), op);
    std::vector<float> got = run(m, xs);
    Worst w = worstOf(xs, got, ref);
    EXPECT_LE(w.abs, 3e-7) << "at " << name << "(" << w.at << ")";
    EXPECT_LE(w.ulps, 5.0) << "at " << name << "(" << w.at << ")";
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::fabs(xs[i]) >= 9.0f)
        EXPECT_EQ(std::fabs(got[i]), 1.0f) << name << "(" << xs[i] << ")";
      if (xs[i] != 0) // erf(-0) may give +0
        EXPECT_EQ(std::signbit(got[i]), std::signbit(xs[i]))
            << name << "(" << xs[i] << ")";
    }
  }
}

TEST(VectorMath, NanStaysNan) {
  std::vector<float> xs = {kNan, -kNan, 1.0f, kNan};
  using Op = Tensor (*)(const Tensor &);
  for (Op op : {+[](const Tensor &x) { return locus::exp(x); },
                +[](const Tensor &x) { return locus::tanh(x); },
                +[](const Tensor &x) { return locus::erf(x); },
                +[](const Tensor &x) { return locus::sigmoid(x); }}) {
    CompiledModel m = compileUnary("vnan", xs.size(), op);
    std::vector<float> got = run(m, xs);
    EXPECT_TRUE(std::isnan(got[0]));
    EXPECT_TRUE(std::isnan(got[1]));
    EXPECT_FALSE(std::isnan(got[2]));
    EXPECT_TRUE(std::isnan(got[3]));
  }
}

TEST(VectorMath, SigmoidGeluAndSoftmaxBuiltOnThemMatchDoubleReferences) {
  const int64_t rows = 64, cols = 300;
  std::vector<float> xs = randomValues(rows * cols, 9, -12, 12);
  Graph g("vbuilt");
  Tensor x = g.input("x", {rows, cols});
  g.output("sigmoid", locus::sigmoid(x));
  g.output("gelu", locus::gelu(x));
  g.output("softmax", locus::softmax(x, 1));
  CompiledModel m = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  auto out = m.run({{"x", HostTensor::fromF32({rows, cols}, xs)}});
  for (int64_t r = 0; r < rows; ++r) {
    double top = -1e300, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      top = std::max(top, static_cast<double>(xs[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c)
      sum += std::exp(xs[r * cols + c] - top);
    for (int64_t c = 0; c < cols; ++c) {
      size_t i = static_cast<size_t>(r * cols + c);
      double v = xs[i];
      double sigmoid = 1 / (1 + std::exp(-v));
      double gelu = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      double softmax = std::exp(v - top) / sum;
      EXPECT_NEAR(out.at("sigmoid").f32[i], sigmoid, 4 * ulpAt(sigmoid) + 1e-38)
          << "sigmoid(" << v << ")";
      // erf's absolute error, halved and scaled by x: GELU of a negative
      // x is a difference 1 + erf(x / sqrt(2)) that cancels.
      EXPECT_NEAR(out.at("gelu").f32[i], gelu,
                  4 * ulpAt(gelu) + 1.5e-7 * std::fabs(v))
          << "gelu(" << v << ")";
      // x - max rounds in f32 (half an ulp of it), then exp's 2 ulps and
      // the division's.
      EXPECT_NEAR(out.at("softmax").f32[i], softmax,
                  softmax * (std::fabs(v - top) + 8) * 0x1p-24 + 1e-38)
          << "softmax row " << r << " col " << c;
    }
  }
}

} // namespace
