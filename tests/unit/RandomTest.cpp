// RandomTest.cpp - locus.random through the frontend, the compiler and the
// runtime: the values are Philox4x32-10 of (element, run counter) keyed by
// the call's seed, the same on cpu and on sim, new at every run; the
// statistics of a million draws; dropout's keep rate and scale; dropout on
// a GPU under the strict policy.

#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

using namespace locus;

namespace {

/// Philox4x32-10 (Salmon et al., SC'11), as in Random123 and cuRAND.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, uint64_t key) {
  auto k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1,
         static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

/// Element `i` of rand() drawn with `seed` at run `step`.
float uniformAt(uint64_t seed, uint64_t i, uint64_t step) {
  std::array<uint32_t, 4> x =
      philox({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
              static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)},
             seed);
  return static_cast<float>(x[0] >> 8) * 0x1p-24f;
}

double mean(const std::vector<float> &v) {
  double s = 0;
  for (float x : v)
    s += x;
  return s / static_cast<double>(v.size());
}

double variance(const std::vector<float> &v) {
  double m = mean(v), s = 0;
  for (float x : v)
    s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

const CompileOptions kSim{.policy = "prefer-gpu", .devices = {"cpu", "cuda:0"}};

} // namespace

TEST(Random, PhiloxKnownAnswers) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  EXPECT_EQ(philox({0, 0, 0, 0}, 0),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(philox({~0u, ~0u, ~0u, ~0u}, ~uint64_t{0}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                     0x6d5451fd}));
  EXPECT_EQ(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                   0x299f31d0a4093822),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

// rand() is Philox of (element, run) keyed by seedFor("rng0"): the same bits
// on cpu and on sim, and new numbers at every run, counted by the buffer
// rng.step.
TEST(Random, RandIsPhiloxOfTheSeedAndTheRun) {
  Graph g("rand");
  g.manual_seed(11);
  g.output("u", rand(g, {3, 5}));
  uint64_t seed = g.seedFor("rng0");
  CompiledModel cpu = compile(g, {.policy = "cpu"});
  CompiledModel sim = compile(g, kSim);
  std::vector<float> previous;
  for (uint64_t run = 0; run < 3; ++run) {
    RunStats stats;
    std::vector<float> a = cpu.run({}).at("u").f32;
    std::vector<float> b = sim.run({}, &stats).at("u").f32;
    EXPECT_GT(stats.simLaunches, 0u);
    EXPECT_EQ(a, b) << "run " << run;
    ASSERT_EQ(a.size(), 15u);
    for (uint64_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(a[i], uniformAt(seed, i, run)) << "run " << run << " " << i;
    EXPECT_NE(a, previous);
    previous = a;
  }
  EXPECT_EQ(cpu.state(kRunCounterName).scalar(), 3.0f);
  EXPECT_EQ(sim.state(kRunCounterName).scalar(), 3.0f);
  // Setting the counter replays a run.
  cpu.setState(kRunCounterName, HostTensor::fromF32({}, {1.0f}));
  std::vector<float> again = cpu.run({}).at("u").f32;
  for (uint64_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i], uniformAt(seed, i, 1));
  // The counter wraps at 2^24, where an f32 stops counting exactly.
  cpu.setState(kRunCounterName, HostTensor::fromF32({}, {16777215.0f}));
  (void)cpu.run({});
  EXPECT_EQ(cpu.state(kRunCounterName).scalar(), 0.0f);
}

// A million draws of each: tests that a broken generator fails.
TEST(Random, StatisticsOfAMillionDraws) {
  const int64_t n = 1000;
  Graph g("stats");
  auto x = g.input("x", {n, n});
  g.output("u", rand(g, {n, n}));
  g.output("z", randn(g, {n, n}));
  g.output("d", dropout(x, 0.3));
  g.output("b", bernoulli(broadcast_to(g.constant(0.2f), {n, n})));
  CompiledModel m = compile(g, {.policy = "cpu"});
  std::map<std::string, HostTensor> in{
      {"x", HostTensor::fromF32({n, n}, std::vector<float>(n * n, 1.0f))}};
  auto out = m.run(in);

  const std::vector<float> &u = out.at("u").f32;
  EXPECT_NEAR(mean(u), 0.5, 0.002);
  EXPECT_NEAR(variance(u), 1.0 / 12, 0.001);
  EXPECT_GE(*std::min_element(u.begin(), u.end()), 0.0f);
  EXPECT_LT(*std::max_element(u.begin(), u.end()), 1.0f);

  const std::vector<float> &z = out.at("z").f32;
  EXPECT_NEAR(mean(z), 0.0, 0.005);
  EXPECT_NEAR(variance(z), 1.0, 0.01);
  size_t beyond2 = std::count_if(z.begin(), z.end(),
                                 [](float v) { return std::fabs(v) > 2; });
  EXPECT_NEAR(static_cast<double>(beyond2) / z.size(), 0.0455, 0.002);

  // Kept with probability 1 - p = 0.7, within 1%, and scaled by 1 / 0.7
  // exactly as PyTorch scales (1.0f / float(1 - p)).
  const std::vector<float> &d = out.at("d").f32;
  float scale = 1.0f / static_cast<float>(1.0 - 0.3);
  size_t kept = 0;
  for (float v : d) {
    ASSERT_TRUE(v == 0.0f || v == scale) << v;
    kept += v != 0;
  }
  EXPECT_NEAR(static_cast<double>(kept) / d.size(), 0.7, 0.007);

  const std::vector<float> &b = out.at("b").f32;
  EXPECT_NEAR(mean(b), 0.2, 0.002);

  // The next run draws a new mask.
  auto next = m.run(in);
  size_t changed = 0;
  for (size_t i = 0; i < d.size(); ++i)
    changed += (next.at("d").f32[i] != 0) != (d[i] != 0);
  // P(changed) = 2 * 0.3 * 0.7 = 0.42.
  EXPECT_NEAR(static_cast<double>(changed) / d.size(), 0.42, 0.005);
}

// Two dropouts in one step draw different masks (calls rng0 and rng1); each
// mask is the same on cpu and on sim and follows Philox; runs differ.
TEST(Random, DropoutMasksAreThePhiloxOfEachCall) {
  Graph g("two_dropouts");
  auto x = g.input("x", {16, 32});
  g.output("d0", dropout(x, 0.5));
  g.output("d1", dropout(x, 0.5));
  uint64_t seeds[2] = {g.seedFor("rng0"), g.seedFor("rng1")};
  CompiledModel cpu = compile(g, {.policy = "cpu"});
  CompiledModel sim = compile(g, kSim);
  std::vector<float> xs(16 * 32);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = 0.25f + static_cast<float>(i % 7);
  std::map<std::string, HostTensor> in{
      {"x", HostTensor::fromF32({16, 32}, xs)}};
  std::vector<float> firstRun;
  for (uint64_t run = 0; run < 2; ++run) {
    auto a = cpu.run(in), b = sim.run(in);
    for (int call = 0; call < 2; ++call) {
      std::string name = "d" + std::to_string(call);
      const std::vector<float> &got = a.at(name).f32;
      EXPECT_EQ(got, b.at(name).f32) << name << " run " << run;
      for (size_t i = 0; i < xs.size(); ++i) {
        bool keep = uniformAt(seeds[call], i, run) >= 0.5f;
        EXPECT_EQ(got[i], keep ? xs[i] * 2.0f : 0.0f)
            << name << " run " << run << " element " << i;
      }
    }
    EXPECT_NE(a.at("d0").f32, a.at("d1").f32);
    if (run == 0)
      firstRun = a.at("d0").f32;
    else
      EXPECT_NE(a.at("d0").f32, firstRun);
  }
}

// Dropout on a model made on cuda:0 draws on cuda:0: under the strict policy
// (PyTorch's rules) the step trains without a device mismatch.
TEST(Random, DropoutOnAGpuModelUnderStrict) {
  Graph g("gpu_dropout");
  auto x = g.input("x", {8, 6}, {.device = cuda(0)});
  auto y = g.input("y", {8, 2}, {.device = cuda(0)});
  nn::Linear fc1(g, 6, 16, {.name = "fc1", .device = cuda(0)});
  nn::Linear fc2(g, 16, 2, {.name = "fc2", .device = cuda(0)});
  nn::Dropout drop(0.5);
  auto loss = nn::MSELoss()(fc2(drop(relu(fc1(x)))), y);
  g.output("loss", loss);
  optim::SGD({fc1.weight(), fc1.bias(), fc2.weight(), fc2.bias()}, {.lr = 0.1})
      .step(loss);
  CompiledModel m =
      compile(g, {.policy = "strict", .devices = {"cpu", "cuda:0"}});
  std::vector<float> xs(48), ys(16);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(static_cast<float>(i));
  for (size_t i = 0; i < ys.size(); ++i)
    ys[i] = std::cos(static_cast<float>(i));
  std::map<std::string, HostTensor> in{{"x", HostTensor::fromF32({8, 6}, xs)},
                                       {"y", HostTensor::fromF32({8, 2}, ys)}};
  RunStats stats;
  float first = m.run(in, &stats).at("loss").scalar();
  EXPECT_GT(stats.simLaunches, 0u);
  for (int i = 0; i < 20; ++i)
    (void)m.run(in);
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_EQ(m.state(kRunCounterName).scalar(), 21.0f);
}
