// DevicesTest.cpp - whole seed forward graphs compiled for cpu alone and
// for cpu + cuda:0 (run on the sim device) give identical results; the
// copies the sim run counts are the ones locus-dump's summary reports; an
// artifact saved and run by the runtime alone gives the in-process results;
// damaged artifacts fail cleanly.

#include "RandomValues.h"
#include "locus/Compile.h"
#include "locus/locus.h"
#include "locus/runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include <unistd.h>

using namespace locus;

namespace {

using Inputs = std::map<std::string, HostTensor>;

/// A seed forward graph and inputs for it.
struct Seed {
  std::unique_ptr<Graph> graph;
  Inputs inputs;
};

Seed linearMse() {
  Seed s;
  s.graph = std::make_unique<Graph>("linear_mse");
  Graph &g = *s.graph;
  g.manual_seed(0);
  auto x = g.input("x", {100, 10});
  auto y = g.input("y", {100, 2});
  nn::Linear fc(g, 10, 2, {.name = "model"});
  g.output("loss", nn::MSELoss()(fc(x), y));
  s.inputs = {{"x", HostTensor::fromF32({100, 10}, randomValues(1000, 1))},
              {"y", HostTensor::fromF32({100, 2}, randomValues(200, 2))}};
  return s;
}

Seed cnn() {
  Seed s;
  s.graph = std::make_unique<Graph>("cnn");
  Graph &g = *s.graph;
  g.manual_seed(4);
  auto x = g.input("x", {16, 3, 32, 32});
  auto y = g.input("y", {16}, {.dtype = DType::i64});
  nn::Conv2d c1(g, 3, 16, {3}, {.padding = {1, 1}});
  nn::Conv2d c2(g, 16, 32, {3}, {.padding = {1, 1}});
  nn::Linear fc(g, 32 * 8 * 8, 10);
  nn::Sequential net{c1,         nn::ReLU(),         nn::MaxPool2d({2}), c2,
                     nn::ReLU(), nn::MaxPool2d({2}), nn::Flatten(),      fc};
  auto logits = net(x);
  g.output("logits", logits);
  g.output("loss", nn::CrossEntropyLoss()(logits, y));
  std::vector<int64_t> labels(16);
  for (int i = 0; i < 16; ++i)
    labels[i] = (i * 7) % 10;
  s.inputs = {{"x", HostTensor::fromF32({16, 3, 32, 32},
                                        randomValues(16 * 3 * 1024, 3))},
              {"y", HostTensor::fromI64({16}, labels)}};
  return s;
}

Seed mlp() {
  Seed s;
  s.graph = std::make_unique<Graph>("mlp");
  Graph &g = *s.graph;
  g.manual_seed(5);
  auto x = g.input("x", {8, 64});
  nn::Linear l1(g, 64, 32), l2(g, 32, 32), l3(g, 32, 10);
  nn::Sequential net{l1, nn::ReLU(), l2, nn::ReLU(), l3};
  auto out = net(x);
  g.output("probs", softmax(out, 1));
  s.inputs = {{"x", HostTensor::fromF32({8, 64}, randomValues(512, 6))}};
  return s;
}

/// How locus-dump's summary writes a byte count.
std::string bytesText(uint64_t bytes) {
  char text[32];
  if (bytes < 10 * 1024)
    std::snprintf(text, sizeof text, "%llu B",
                  static_cast<unsigned long long>(bytes));
  else if (bytes < 10 * 1024 * 1024)
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

/// The copies line of locus-dump's summary for these counts.
std::string copiesLine(uint64_t step, uint64_t stepBytes, uint64_t load,
                       uint64_t loadBytes) {
  return "copies: " + std::to_string(step) + " per step (" +
         bytesText(stepBytes) + "), " + std::to_string(load) + " at load (" +
         bytesText(loadBytes) + ")";
}

void expectSame(const std::map<std::string, HostTensor> &a,
                const std::map<std::string, HostTensor> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[name, t] : a) {
    EXPECT_EQ(t.f32, b.at(name).f32) << name;
    EXPECT_EQ(t.i64, b.at(name).i64) << name;
  }
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::getpid()) + ".locus"))
      .string();
}

class SeedOnDevices : public ::testing::TestWithParam<std::string> {
protected:
  Seed make() {
    const std::string &which = GetParam();
    return which == "linear_mse" ? linearMse() : which == "cnn" ? cnn() : mlp();
  }
};

} // namespace

TEST_P(SeedOnDevices, CpuAndSimGiveIdenticalResults) {
  Seed seed = make();
  CompiledModel cpu = compile(*seed.graph, {.policy = "cpu"});
  CompiledModel gpu = compile(
      *seed.graph, {.policy = "prefer-gpu", .devices = {"cpu", "cuda:0"}});
  RunStats cpuStats, simStats;
  auto onCpu = cpu.run(seed.inputs, &cpuStats);
  auto onSim = gpu.run(seed.inputs, &simStats);
  expectSame(onCpu, onSim);
  EXPECT_EQ(cpuStats.simLaunches, 0u);
  EXPECT_EQ(cpuStats.copies, 0u);
  EXPECT_GT(simStats.simLaunches, 0u);
  EXPECT_NE(gpu.runtimeReport().find("cuda:0 -> sim"), std::string::npos)
      << gpu.runtimeReport();
}

TEST_P(SeedOnDevices, SimCountsTheCopiesTheDumpReports) {
  Seed seed = make();
  for (const char *policy : {"prefer-gpu", "auto"}) {
    CompiledModel model =
        compile(*seed.graph, {.policy = policy, .devices = {"cpu", "cuda:0"}});
    RunStats stats;
    model.run(seed.inputs, &stats);
    // What the runtime did at load, from its report.
    std::smatch m;
    std::string report = model.runtimeReport();
    ASSERT_TRUE(std::regex_search(
        report, m, std::regex(R"(at load: (\d+) copies \((\d+) bytes\))")))
        << report;
    std::string line = copiesLine(stats.copies, stats.copyBytes,
                                  std::stoull(m[1]), std::stoull(m[2]));
    EXPECT_NE(model.placementSummary().find(line), std::string::npos)
        << policy << ": the runtime counted \"" << line << "\"; the dump says\n"
        << model.placementSummary();
  }
}

TEST_P(SeedOnDevices, ArtifactRunsWithTheRuntimeAloneAsInProcess) {
  Seed seed = make();
  CompiledModel model = compile(
      *seed.graph, {.policy = "prefer-gpu", .devices = {"cpu", "cuda:0"}});
  std::string path = tempPath(GetParam());
  model.save(path);
  auto inProcess = model.run(seed.inputs);

  rt::Model loaded = rt::Model::load(path);
  std::filesystem::remove(path);
  rt::Context ctx(loaded);
  for (const auto &[name, t] : seed.inputs) {
    if (t.dtype == DType::f32)
      ctx.setInput(name, t.f32);
    else
      ctx.setInput(name, t.i64);
  }
  ctx.run();
  for (const auto &[name, t] : inProcess) {
    std::vector<float> got = ctx.output<float>(name);
    ASSERT_EQ(got.size(), t.f32.size()) << name;
    // The JIT compiles for this CPU, the artifact for x86-64-v3: the same
    // code up to instruction choice (FMA contraction), so near, not equal.
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], t.f32[i], 1e-5 + 1e-5 * std::abs(t.f32[i]))
          << name << "[" << i << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SeedOnDevices,
                         ::testing::Values("linear_mse", "cnn", "mlp"));

// Bytes of a real artifact flipped, truncated, or its version changed: every
// load fails with a clear status, or (never, given the checksum) loads and
// gives the intact artifact's loss. (Not the in-process model's: that runs
// code for this machine's CPU, the file portable x86-64-v3 code, whose
// reductions may differ in the last bit.)
TEST(CompiledArtifact, DamagedRealArtifactsFailCleanly) {
  Seed seed = linearMse();
  CompiledModel model = compile(
      *seed.graph, {.policy = "prefer-gpu", .devices = {"cpu", "cuda:0"}});
  std::string path = tempPath("damage");
  model.save(path);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  float want = 0; // the intact artifact's loss, from the first attempt
  bool first = true;

  size_t rejected = 0, same = 0;
  auto attempt = [&](const std::vector<char> &data) {
    locus_model_t *m = nullptr;
    if (locus_status_t s =
            locus_model_load_memory(data.data(), data.size(), nullptr, &m)) {
      locus_status_code_t code = locus_status_code(s);
      EXPECT_TRUE(code == LOCUS_STATUS_DATA_LOSS ||
                  code == LOCUS_STATUS_UNAVAILABLE)
          << locus_status_message(s);
      locus_status_free(s);
      ++rejected;
      return;
    }
    locus_context_t *ctx = nullptr;
    ASSERT_EQ(locus_context_create(m, &ctx), nullptr);
    float loss = 0;
    locus_context_set_input(ctx, "x", seed.inputs.at("x").f32.data(), 4000);
    locus_context_set_input(ctx, "y", seed.inputs.at("y").f32.data(), 800);
    EXPECT_EQ(locus_context_run(ctx), nullptr);
    locus_context_read_output(ctx, "loss", &loss, 4);
    if (first)
      want = loss;
    first = false;
    same += loss == want;
    locus_context_release(ctx);
    locus_model_release(m);
  };
  attempt(bytes);
  ASSERT_EQ(same, 1u) << "the intact artifact must load";
  EXPECT_NEAR(want, model.run(seed.inputs).at("loss").scalar(),
              1e-6 * std::fabs(want));
  size_t attempts = 0;
  for (size_t n = 0; n < bytes.size(); n += 1 + bytes.size() / 200, ++attempts)
    attempt(std::vector<char>(bytes.begin(), bytes.begin() + n));
  for (size_t i = 0; i < bytes.size(); i += 7, ++attempts) {
    std::vector<char> flipped = bytes;
    flipped[i] ^= 0x10;
    attempt(flipped);
  }
  // The format version (bytes 8..11) of the next release.
  std::vector<char> newer = bytes;
  newer[8] = 2;
  attempt(newer);
  EXPECT_EQ(rejected, attempts + 1);
  EXPECT_EQ(same, 1u);
}

// State larger than the runtime's staging chunk starts as the frontend's
// initialiser says, on the CPU and on sim.
TEST(State, LargeStateMatchesItsInitialiser) {
  Graph g("big");
  g.manual_seed(11);
  auto x = g.input("x", {2, 784});
  nn::Linear fc(g, 784, 1024);
  g.output("y", fc(x));
  std::vector<float> want = g.initialValue(fc.weight());
  ASSERT_GT(want.size(), 65536u);
  for (const char *policy : {"cpu", "prefer-gpu"}) {
    CompiledModel model =
        compile(g, {.policy = policy, .devices = {"cpu", "cuda:0"}});
    const std::string &weight = model.stateNames().front();
    ASSERT_NE(weight.find("weight"), std::string::npos) << weight;
    EXPECT_EQ(model.state(weight).f32, want) << policy;
  }
}

// Kernels big enough for --locus-parallelize (im2col, the bias and ReLU
// epilogue and the pooling each run over 2^18 or more iterations, split over
// the runtime's threads) against a double-precision reference.
TEST(Parallel, SplitKernelsMatchADoubleReference) {
  const int N = 32, C = 3, H = 32, O = 8, P = 16;
  Graph g("parallel");
  g.manual_seed(3);
  auto x = g.input("x", {N, C, H, H});
  nn::Conv2d conv(g, C, O, {3}, {.padding = {1, 1}});
  nn::Sequential net{conv, nn::ReLU(), nn::MaxPool2d({2})};
  g.output("y", net(x));
  CompiledModel model = compile(g);
  std::vector<float> xs = randomValues(N * C * H * H, 9);
  std::vector<float> got =
      model.run({{"x", HostTensor::fromF32({N, C, H, H}, xs)}}).at("y").f32;
  std::vector<float> w = g.initialValue(conv.weight()),
                     b = g.initialValue(conv.bias());
  ASSERT_EQ(got.size(), static_cast<size_t>(N * O * P * P));
  std::vector<double> act(static_cast<size_t>(N) * O * H * H);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < H; ++j) {
          double acc = b[o];
          for (int c = 0; c < C; ++c)
            for (int ki = 0; ki < 3; ++ki)
              for (int kj = 0; kj < 3; ++kj) {
                int ii = i + ki - 1, jj = j + kj - 1;
                if (ii < 0 || jj < 0 || ii >= H || jj >= H)
                  continue;
                acc +=
                    static_cast<double>(xs[((n * C + c) * H + ii) * H + jj]) *
                    w[((o * C + c) * 3 + ki) * 3 + kj];
              }
          act[((n * O + o) * H + i) * H + j] = std::max(acc, 0.0);
        }
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < P; ++i)
        for (int j = 0; j < P; ++j) {
          double m = -1e30;
          for (int di = 0; di < 2; ++di)
            for (int dj = 0; dj < 2; ++dj)
              m = std::max(
                  m, act[((n * O + o) * H + 2 * i + di) * H + 2 * j + dj]);
          size_t at = ((n * O + o) * P + i) * P + j;
          ASSERT_NEAR(got[at], m, 1e-5 + 1e-5 * std::abs(m))
              << "element " << at;
        }
}
