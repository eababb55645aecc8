// PlacementTrustTest.cpp - compile() never runs a model somewhere else in
// silence: the default targets are this machine's devices, a pin off them
// fails at the pin's line, soft placement and policy cpu say what they did
// through the diagnostics handler (or stderr), errors carry every
// diagnostic, and pins to any cuda:N hold.

#include "RandomValues.h"
#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <random>

using namespace locus;

namespace {

bool hasCuda(const std::vector<std::string> &targets) {
  for (const std::string &t : targets)
    if (t.rfind("cuda:", 0) == 0)
      return true;
  return false;
}

/// A Linear(10, 2) model made on cuda:0, with its data moved there; `pinLine`
/// is the line of the weights' creation (the first pin).
void recordModelOnCuda(Graph &g, int &pinLine) {
  auto x = g.input("x", {4, 10});
  pinLine = __LINE__ + 1;
  nn::Linear fc(g, 10, 2, {.name = "fc", .device = cuda(0)});
  g.output("y", fc(x.to(cuda(0))).to(cpu()));
}

std::map<std::string, HostTensor> batch() {
  return {{"x", HostTensor::fromF32({4, 10}, randomValues(40, 7))}};
}

/// `g` compiled to run on the CPU alone: the reference of the tests that
/// place it elsewhere.
CompiledModel compileOnCpu(Graph &g) {
  return compile(g, {.policy = "cpu",
                     .devices = {"cpu"},
                     .diagnostics = [](const Diagnostic &) {}});
}

/// The "loss" output of three training steps on the same batch.
std::vector<float> threeLosses(const CompiledModel &model,
                               const std::map<std::string, HostTensor> &in) {
  std::vector<float> out;
  out.reserve(3);
  for (int step = 0; step < 3; ++step)
    out.push_back(model.run(in).at("loss").scalar());
  return out;
}

} // namespace

TEST(PlacementTrust, DefaultTargetsAreThisMachinesDevices) {
  std::vector<std::string> targets = machineTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), "cpu");
  for (size_t i = 1; i < targets.size(); ++i)
    EXPECT_EQ(targets[i], "cuda:" + std::to_string(i - 1));
}

// The scenario: a model pinned to cuda:0, compiled with defaults.
// With a GPU it runs there; without one it fails at the pin, never runs on
// the CPU in silence.
TEST(PlacementTrust, APinnedModelWithDefaultsRunsThereOrFailsAtThePin) {
  Graph g("pinned");
  int pinLine = 0;
  recordModelOnCuda(g, pinLine);
  if (hasCuda(machineTargets())) {
    CompiledModel model = compile(g);
    EXPECT_NE(model.placementSummary().find("cuda:0"), std::string::npos);
    return;
  }
  try {
    compile(g);
    FAIL() << "a model pinned to cuda:0 compiled for a machine without one";
  } catch (const Error &e) {
    EXPECT_EQ(e.line(), static_cast<unsigned>(pinLine)) << e.what();
    EXPECT_NE(e.message().find("is pinned to cuda:0, which is not a target "
                               "device (targets: cpu)"),
              std::string::npos)
        << e.what();
    std::string all = e.what();
    EXPECT_NE(all.find("fix: add cuda:0 to the target devices"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("CompileOptions::devices was empty, so the targets "
                       "are this machine's devices: cpu"),
              std::string::npos)
        << all;
    // The weight and the bias, and the .to(): every pin is reported.
    EXPECT_EQ(e.diagnostics().size(), 4u) << all;
  }
}

// Fix-its are tested by applying them: each one compiles and runs.
TEST(PlacementTrust, EachFixOfAnOffTargetPinCompiles) {
  Graph g("pinned");
  int pinLine = 0;
  recordModelOnCuda(g, pinLine);
  std::vector<Diagnostic> seen;
  CompileOptions cudaTarget{.devices = {"cpu", "cuda:0"},
                            .deviceMap = "cuda:0=sim"};
  CompileOptions soft{
      .devices = {"cpu"},
      .allowSoftPlacement = true,
      .diagnostics = [&](const Diagnostic &d) { seen.push_back(d); }};
  CompileOptions cpuPolicy{.policy = "cpu", .devices = {"cpu"}};
  std::vector<float> first;
  for (const CompileOptions &options : {cudaTarget, soft, cpuPolicy}) {
    CompiledModel model = compile(g, options);
    std::vector<float> y = model.run(batch()).at("y").f32;
    if (first.empty())
      first = y;
    EXPECT_EQ(y, first);
  }
  // Soft placement said so, once, at the first pin, in the summary's words.
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].severity, Diagnostic::Severity::warning);
  EXPECT_EQ(seen[0].line, static_cast<unsigned>(pinLine));
  EXPECT_NE(seen[0].message.find("soft placement: no CUDA device among the "
                                 "targets: 3 op(s) pinned to CUDA run on cpu"),
            std::string::npos)
      << seen[0].str();
}

TEST(PlacementTrust, WarningsReachTheHandlerAsTheSummaryListsThem) {
  Graph g("copies");
  auto x = g.input("x", {4, 10});
  nn::Linear fc(g, 10, 2, {.name = "fc"});
  g.output("y", fc(x));
  std::vector<Diagnostic> seen;
  CompiledModel model = compile(
      g, {.policy = "prefer-gpu",
          .devices = {"cpu", "cuda:0"},
          .diagnostics = [&](const Diagnostic &d) { seen.push_back(d); },
          .deviceMap = "cuda:0=sim"});
  ASSERT_FALSE(seen.empty());
  for (const Diagnostic &d : seen)
    EXPECT_NE(model.placementSummary().find(d.message), std::string::npos)
        << d.message << "\nnot in\n"
        << model.placementSummary();
  EXPECT_NE(seen[0].message.find("value(s) cross devices every step"),
            std::string::npos);
  EXPECT_FALSE(seen[0].file.empty());
}

TEST(PlacementTrust, WithoutAHandlerWarningsGoToStderrOnce) {
  Graph g("copies");
  auto x = g.input("x", {4, 10});
  nn::Linear fc(g, 10, 2, {.name = "fc"});
  g.output("y", fc(x));
  testing::internal::CaptureStderr();
  compile(g, {.policy = "prefer-gpu",
              .devices = {"cpu", "cuda:0"},
              .deviceMap = "cuda:0=sim"});
  std::string printed = testing::internal::GetCapturedStderr();
  size_t at = printed.find("warning: 2 value(s) cross devices every step");
  ASSERT_NE(at, std::string::npos) << printed;
  EXPECT_EQ(printed.find("cross devices", printed.find("cross devices") + 1),
            std::string::npos)
      << printed;
}

TEST(PlacementTrust, ErrorsCarryEveryDiagnosticAtTheUsersLines) {
  Graph g("mixups");
  auto a = g.input("a", {4}, {.device = cuda(0)});
  auto b = g.input("b", {4});
  int first = __LINE__ + 1;
  auto s = a + b;
  int second = __LINE__ + 1;
  auto t = b * a;
  g.output("s", s.to(cpu()));
  g.output("t", t.to(cpu()));
  try {
    compile(g, {.policy = "strict", .devices = {"cpu", "cuda:0"}});
    FAIL() << "mixed devices compiled under strict";
  } catch (const Error &e) {
    ASSERT_EQ(e.diagnostics().size(), 2u) << e.what();
    EXPECT_EQ(e.diagnostics()[0].line, static_cast<unsigned>(first));
    EXPECT_EQ(e.diagnostics()[1].line, static_cast<unsigned>(second));
    EXPECT_EQ(e.line(), static_cast<unsigned>(first));
    std::string all = e.what();
    EXPECT_NE(all.find(":" + std::to_string(second) + ":"), std::string::npos)
        << all;
  }
}

TEST(PlacementTrust, PolicyCpuMakesMovesNoOpsWithANote) {
  Graph g("moves");
  int pinLine = 0;
  recordModelOnCuda(g, pinLine);
  std::vector<Diagnostic> seen;
  CompiledModel model = compile(
      g, {.policy = "cpu",
          .devices = {"cpu", "cuda:0"},
          .diagnostics = [&](const Diagnostic &d) { seen.push_back(d); }});
  RunStats stats;
  model.run(batch(), &stats);
  EXPECT_EQ(stats.copies, 0u);
  EXPECT_EQ(stats.simLaunches, 0u);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].severity, Diagnostic::Severity::note);
  EXPECT_EQ(seen[0].line, static_cast<unsigned>(pinLine));
  EXPECT_NE(seen[0].message.find("policy cpu: 3 pin(s) to CUDA devices do "
                                 "not hold; .to() moves are no-ops"),
            std::string::npos)
      << seen[0].str();
  EXPECT_NE(model.placementSummary().find("note: policy cpu"),
            std::string::npos);
}

// Model parallelism by hand over two GPUs (both sim here): each layer stays
// on its GPU under every policy, and the numbers are the CPU's. The layers
// are big enough for `auto` to want a GPU for them.
TEST(PlacementTrust, PinsToASecondGpuHoldUnderEveryPolicy) {
  auto record = [](Graph &g) {
    auto x = g.input("x", {256, 512});
    nn::Linear a(g, 512, 512, {.name = "a", .device = cuda(0)});
    nn::Linear b(g, 512, 512, {.name = "b", .device = cuda(1)});
    g.output("y", b(relu(a(x.to(cuda(0)))).to(cuda(1))).to(cpu()));
  };
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({256, 512}, randomValues(256 * 512, 3))}};
  Graph reference("two_gpus");
  record(reference);
  std::vector<float> want =
      compile(reference, {.policy = "cpu",
                          .devices = {"cpu"},
                          .diagnostics = [](const Diagnostic &) {}})
          .run(inputs)
          .at("y")
          .f32;
  for (std::string policy : {"strict", "prefer-gpu", "auto"}) {
    Graph g("two_gpus");
    record(g);
    CompiledModel model = compile(g, {.policy = policy,
                                      .devices = {"cpu", "cuda:0", "cuda:1"},
                                      .diagnostics = [](const Diagnostic &) {},
                                      .deviceMap = "cuda:0=sim,cuda:1=sim"});
    const std::string &summary = model.placementSummary();
    // The input and the output on the host; every layer on its GPU.
    EXPECT_NE(summary.find("ops per device: cpu 2; cuda:0 4; cuda:1 3;"),
              std::string::npos)
        << policy << "\n"
        << summary;
    RunStats stats;
    std::vector<float> y = model.run(inputs, &stats).at("y").f32;
    ASSERT_EQ(y.size(), want.size());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], want[i], 1e-4 + 1e-4 * std::abs(want[i])) << policy;
    EXPECT_GT(stats.simLaunches, 0u) << policy;
  }
}

// Ordinary PyTorch training code under strict: the model and the batch on
// cuda:0, the logits moved to the CPU for the loss. PyTorch differentiates
// .to() (its gradient is a copy back), so this trains; so must Locus, with
// the same numbers as on the CPU alone.
TEST(PlacementTrust, StrictTrainsWithTheLossOnTheCpu) {
  auto record = [](Graph &g) {
    auto x = g.input("x", {8, 6});
    auto labels = g.input("labels", {8}, {.dtype = DType::i64});
    nn::Linear fc1(g, 6, 16, {.name = "fc1", .device = cuda(0)});
    nn::Linear fc2(g, 16, 3, {.name = "fc2", .device = cuda(0)});
    auto logits = fc2(relu(fc1(x.to(cuda(0)))));
    auto loss = nn::CrossEntropyLoss()(logits.to(cpu()), labels);
    g.output("loss", loss);
    optim::SGD(g.parameters(), {.lr = 0.1}).step(loss);
  };
  std::vector<int64_t> classes{0, 2, 1, 1, 0, 2, 2, 1};
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({8, 6}, randomValues(48, 11))},
      {"labels", HostTensor::fromI64({8}, classes)}};
  auto losses = [&](const CompiledModel &model) {
    return threeLosses(model, inputs);
  };
  Graph reference("on_cpu");
  record(reference);
  std::vector<float> want = losses(compileOnCpu(reference));
  Graph g("strict");
  record(g);
  CompiledModel model = compile(g, {.policy = "strict",
                                    .devices = {"cpu", "cuda:0"},
                                    .diagnostics = [](const Diagnostic &) {},
                                    .deviceMap = "cuda:0=sim"});
  std::vector<float> got = losses(model);
  // The batch in, the logits out and their gradient back: as in PyTorch.
  EXPECT_NE(model.placementSummary().find("copies: 3 per step"),
            std::string::npos)
      << model.placementSummary();
  RunStats stats;
  model.run(inputs, &stats);
  EXPECT_GT(stats.simLaunches, 0u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::abs(want[i]));
  EXPECT_LT(want.back(), want.front()); // it trains
}

namespace {

/// A residual block trained under strict with two ordinary mistakes: the
/// skip connection reads the CPU's `x` instead of the moved one, and the
/// target is left on the CPU. `fixes` applies the fix-its, literally, where
/// they point: bit 0 at `skipLine`, bit 1 at `lossLine`.
void recordResidual(Graph &g, unsigned fixes, int &skipLine, int &lossLine) {
  auto x = g.input("x", {8, 6});
  auto target = g.input("target", {8, 6});
  nn::Linear fc1(g, 6, 6, {.name = "fc1", .device = cuda(0)});
  nn::Linear fc2(g, 6, 6, {.name = "fc2", .device = cuda(0)});
  auto h = relu(fc1(x.to(cuda(0))));
  skipLine = __LINE__ + 1;
  auto out = fc2(h) + ((fixes & 1) ? x.to(cuda(0)) : x);
  lossLine = __LINE__ + 1;
  auto loss = nn::MSELoss()(out, (fixes & 2) ? target.to(cuda(0)) : target);
  g.output("loss", loss.to(cpu()));
  optim::SGD(g.parameters(), {.lr = 0.05}).step(loss);
}

} // namespace

// Every mistake of a run is reported in that run, each fix-it changes only
// the read it names, and applying them all compiles and trains as on the
// CPU: no fix-it leads to a new error.
TEST(PlacementTrust, ApplyingEveryFixOfAStrictErrorCompiles) {
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({8, 6}, randomValues(48, 5))},
      {"target", HostTensor::fromF32({8, 6}, randomValues(48, 6))}};
  auto losses = [&](const CompiledModel &model) {
    return threeLosses(model, inputs);
  };
  int skipLine = 0, lossLine = 0;
  Graph reference("on_cpu");
  recordResidual(reference, 0, skipLine, lossLine);
  std::vector<float> want = losses(compileOnCpu(reference));
  CompileOptions strict{.policy = "strict",
                        .devices = {"cpu", "cuda:0"},
                        .diagnostics = [](const Diagnostic &) {},
                        .deviceMap = "cuda:0=sim"};
  std::string file = __FILE__;
  auto fixAt = [&](const std::string &what, int line) {
    return "note: fix: move " + what +
           " to cuda:0 where it is read here: add .to(locus::cuda(0)) to it "
           "at " +
           file + ":" + std::to_string(line);
  };
  // No fix, then one of the two: every mistake left is reported, with its
  // fix at its line, and nothing else.
  for (unsigned fixes : {0u, 1u, 2u}) {
    Graph g("residual");
    recordResidual(g, fixes, skipLine, lossLine);
    try {
      compile(g, strict);
      FAIL() << "compiled with fixes " << fixes;
    } catch (const Error &e) {
      std::string all = e.what();
      std::vector<Diagnostic> errors = e.diagnostics();
      size_t expected = (fixes & 1 ? 0 : 1) + (fixes & 2 ? 0 : 1);
      EXPECT_EQ(errors.size(), expected) << all;
      EXPECT_EQ(all.find("fix: move input \"x\"") != std::string::npos,
                !(fixes & 1))
          << all;
      if (!(fixes & 1)) {
        EXPECT_NE(all.find(fixAt("input \"x\"", skipLine)), std::string::npos)
            << all;
      }
      if (!(fixes & 2)) {
        EXPECT_NE(all.find(fixAt("input \"target\"", lossLine)),
                  std::string::npos)
            << all;
      }
      for (const Diagnostic &d : errors)
        EXPECT_EQ(d.file, file) << d.str();
    }
  }
  Graph fixed("residual");
  recordResidual(fixed, 3, skipLine, lossLine);
  std::vector<float> got = losses(compile(fixed, strict));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::abs(want[i]));
  EXPECT_LT(want.back(), want.front());
}

// An optimizer's own state follows the forward pass: Adam's one step count
// serves layers on two GPUs. Under strict that is a move nobody wrote, made
// and said in a note; the numbers are the CPU's.
// Adam over layers pinned to two GPUs: each GPU keeps its own step count and
// learning rate, so strict placement moves no scalar between them.
TEST(PlacementTrust, StrictAdamOverTwoGpusReadsNoScalarAcrossDevices) {
  auto record = [](Graph &g) {
    auto x = g.input("x", {4, 5});
    nn::Linear a(g, 5, 5, {.name = "a", .device = cuda(0)});
    nn::Linear b(g, 5, 2, {.name = "b", .device = cuda(1)});
    auto y = b(relu(a(x.to(cuda(0)))).to(cuda(1)));
    auto loss = sum(y * y, {0, 1}).to(cpu());
    g.output("loss", loss);
    optim::Adam(g.parameters(), {.lr = 0.01}).step(loss);
  };
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({4, 5}, randomValues(20, 9))}};
  auto losses = [&](const CompiledModel &model) {
    return threeLosses(model, inputs);
  };
  Graph reference("on_cpu");
  record(reference);
  std::vector<float> want = losses(compileOnCpu(reference));
  std::vector<Diagnostic> seen;
  Graph g("two_gpus");
  record(g);
  CompiledModel model = compile(
      g, {.policy = "strict",
          .devices = {"cpu", "cuda:0", "cuda:1"},
          .diagnostics = [&](const Diagnostic &d) { seen.push_back(d); },
          .deviceMap = "cuda:0=sim,cuda:1=sim"});
  std::vector<float> got = losses(model);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::abs(want[i]));
  for (const Diagnostic &d : seen)
    EXPECT_EQ(d.message.find("reads 1 value(s) on another device"),
              std::string::npos)
        << d.message;
  const std::vector<std::string> &names = model.stateNames();
  for (const char *name :
       {"optimizer.step", "optimizer.step@cuda:1",
        "optimizer.param_groups.0.lr", "optimizer.param_groups.0.lr@cuda:1"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}
