// AmpTest.cpp - locus::amp::GradScaler: scaled steps against unscaled
// training, a step with an inf skipped (parameters and Adam's state kept),
// the scale's growth and backoff against PyTorch's algorithm, f16
// gradients that flush to zero without scaling and train with it, and the
// errors of calls out of order.

#include "locus/Frontend/Amp.h"
#include "ErrorOf.h"
#include "RandomValues.h"
#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace locus;
using locus::test::errorOf;

namespace {

using Batch = std::map<std::string, HostTensor>;

/// A Linear(16, 1) regression step with Adam, through a GradScaler when
/// `scaler` is given (its found_inf an output). `lossScale` multiplies the
/// loss (a small one makes f16 gradients underflow).
void recordStep(Graph &g, amp::GradScaler *scaler, float lossScale = 1.0F,
                bool sgd = false) {
  auto x = g.input("x", {32, 16});
  auto y = g.input("y", {32, 1});
  auto w = g.parameter("w", {1, 16}, randomValues(16, 5));
  auto loss = mse_loss(linear(x, w), y) * lossScale;
  g.output("loss", loss);
  optim::SGD plain({w}, {.lr = 1e5});
  optim::Adam adam({w}, {.lr = 1e-2});
  optim::Optimizer &opt = sgd ? static_cast<optim::Optimizer &>(plain) : adam;
  if (!scaler) {
    opt.step(loss);
    return;
  }
  std::vector<Tensor> grads = grad(scaler->scale(loss), {w});
  scaler->step(opt, grads);
  scaler->update();
  g.output("found_inf", scaler->foundInf());
}

Batch batch(int seed, bool withInf = false) {
  std::vector<float> x = randomValues(512, seed);
  if (withInf)
    x[37] = std::numeric_limits<float>::infinity();
  return {{"x", HostTensor::fromF32({32, 16}, x)},
          {"y", HostTensor::fromF32({32, 1}, randomValues(32, seed + 1))}};
}

} // namespace

TEST(Amp, ScaledStepsFollowUnscaledTraining) {
  // The scale is a power of two: scaling and unscaling are exact, so the
  // weights follow plain training to f32's rounding of the sums.
  Graph gs("scaled"), gp("plain");
  amp::GradScaler scaler;
  recordStep(gs, &scaler);
  recordStep(gp, nullptr);
  CompiledModel scaled = compile(gs, {.cache = false});
  CompiledModel plain = compile(gp, {.cache = false});
  for (int step = 0; step < 5; ++step) {
    Batch b = batch(10 + step);
    EXPECT_EQ(scaled.run(b).at("found_inf").scalar(), 0.0F);
    plain.run(b);
  }
  const std::vector<float> &ws = scaled.state("w").f32;
  const std::vector<float> &wp = plain.state("w").f32;
  for (size_t i = 0; i < ws.size(); ++i)
    EXPECT_NEAR(ws[i], wp[i], 1e-6 * (1 + std::fabs(wp[i]))) << i;
  EXPECT_EQ(scaled.state(amp::GradScaler::scaleStateName()).scalar(), 65536.0F);
  EXPECT_EQ(scaled.state(amp::GradScaler::growthTrackerStateName()).scalar(),
            5.0F);
}

TEST(Amp, AStepWithAnInfWritesNoStateAndBacksOff) {
  Graph g("skip");
  amp::GradScaler scaler;
  recordStep(g, &scaler);
  CompiledModel m = compile(g, {.cache = false});
  m.run(batch(1));
  std::vector<float> w = m.state("w").f32;
  std::vector<float> moment = m.state("w.exp_avg").f32;
  float count = m.state("optimizer.step").scalar();
  EXPECT_EQ(m.run(batch(2, /*withInf=*/true)).at("found_inf").scalar(), 1.0F);
  EXPECT_EQ(m.state("w").f32, w);
  EXPECT_EQ(m.state("w.exp_avg").f32, moment);
  EXPECT_EQ(m.state("optimizer.step").scalar(), count);
  EXPECT_EQ(m.state(amp::GradScaler::scaleStateName()).scalar(), 32768.0F);
  EXPECT_EQ(m.state(amp::GradScaler::growthTrackerStateName()).scalar(), 0.0F);
  // The next finite step updates again.
  EXPECT_EQ(m.run(batch(3)).at("found_inf").scalar(), 0.0F);
  EXPECT_NE(m.state("w").f32, w);
  EXPECT_EQ(m.state("optimizer.step").scalar(), count + 1);
}

TEST(Amp, TheScaleFollowsPyTorchsUpdateRule) {
  // torch's _amp_update_scale_: an inf halves the scale and resets the
  // count; growth_interval finite steps in a row double it.
  Graph g("growth");
  amp::GradScaler scaler({.initScale = 1024.0, .growthInterval = 3});
  recordStep(g, &scaler);
  CompiledModel m = compile(g, {.cache = false});
  double scale = 1024.0;
  int tracker = 0;
  std::vector<bool> infs{false, false, true,  false, false,
                         false, false, false, false, true};
  for (size_t i = 0; i < infs.size(); ++i) {
    m.run(batch(static_cast<int>(20 + i), infs[i]));
    if (infs[i]) {
      scale *= 0.5;
      tracker = 0;
    } else if (++tracker == 3) {
      scale *= 2.0;
      tracker = 0;
    }
    EXPECT_EQ(m.state(amp::GradScaler::scaleStateName()).scalar(), scale)
        << "step " << i;
    EXPECT_EQ(m.state(amp::GradScaler::growthTrackerStateName()).scalar(),
              static_cast<float>(tracker))
        << "step " << i;
  }
}

TEST(Amp, F16GradientsThatUnderflowTrainWhenScaled) {
  // A loss scaled by 1e-8: the gradient at the linear layer's f16 output
  // is a few 1e-9, below half f16's smallest subnormal (6e-8). Without scaling
  // it flushes to zero and the weights never move; scaled by 2^16 it
  // survives, and SGD follows f32 training within f16's rounding.
  Graph gf("f16"), gs("f16_scaled"), gr("f32");
  amp::GradScaler scaler;
  recordStep(gf, nullptr, 1e-8F, /*sgd=*/true);
  recordStep(gs, &scaler, 1e-8F, /*sgd=*/true);
  recordStep(gr, nullptr, 1e-8F, /*sgd=*/true);
  CompiledModel f16 = compile(gf, {.precision = "f16", .cache = false});
  CompiledModel f16Scaled = compile(gs, {.precision = "f16", .cache = false});
  CompiledModel f32 = compile(gr, {.cache = false});
  std::vector<float> w0 = f32.state("w").f32;
  for (int step = 0; step < 3; ++step) {
    Batch b = batch(40 + step);
    f16.run(b);
    EXPECT_EQ(f16Scaled.run(b).at("found_inf").scalar(), 0.0F);
    f32.run(b);
  }
  EXPECT_EQ(f16.state("w").f32, w0) << "f16 gradients did not underflow";
  const std::vector<float> &ws = f16Scaled.state("w").f32;
  const std::vector<float> &wr = f32.state("w").f32;
  for (size_t i = 0; i < ws.size(); ++i) {
    double moved = wr[i] - w0[i];
    EXPECT_GT(std::fabs(moved), 1e-5) << i;
    // Operands rounded to f16 (2^-11 each) over three steps.
    EXPECT_NEAR(ws[i] - w0[i], moved, 1e-2 * std::fabs(moved) + 1e-7) << i;
  }
}

TEST(Amp, UnderStrictPlacementTheScalerLivesWithAGpuModel) {
  // Everything pinned to cuda:0 (sim here): the scaler's state goes there
  // too, so strict placement finds no mixed operands and the step copies
  // nothing but its inputs and outputs; it trains as on the CPU.
  auto record = [](Graph &g, amp::GradScaler &scaler, bool gpu) {
    StateOptions state;
    InputOptions input;
    if (gpu) {
      state.device = cuda(0);
      input.device = cuda(0);
    }
    auto x = g.input("x", {32, 16}, input);
    auto y = g.input("y", {32, 1}, input);
    auto w = g.parameter("w", {1, 16}, randomValues(16, 5), state);
    auto loss = mse_loss(linear(x, w), y);
    g.output("loss", loss);
    optim::Adam adam({w}, {.lr = 1e-2});
    scaler.step(adam, grad(scaler.scale(loss), {w}));
    scaler.update();
  };
  Graph gg("on_gpu"), gc("on_cpu");
  amp::GradScaler sg, sc;
  record(gg, sg, true);
  record(gc, sc, false);
  CompiledModel onGpu = compile(
      gg, {.policy = "strict", .devices = {"cpu", "cuda:0"}, .cache = false});
  CompiledModel onCpu = compile(gc, {.cache = false});
  for (int step = 0; step < 3; ++step) {
    onGpu.run(batch(60 + step));
    onCpu.run(batch(60 + step));
  }
  std::vector<float> w = onGpu.state("w").f32;
  const std::vector<float> &want = onCpu.state("w").f32;
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(w[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
  EXPECT_EQ(onGpu.run(batch(70, true)).at("loss").scalar(),
            onGpu.run(batch(70, true)).at("loss").scalar())
      << "an inf step is skipped each time";
}

TEST(Amp, DisabledRecordsThePlainStep) {
  Graph gd("disabled"), gp("plain");
  amp::GradScaler scaler({.enabled = false});
  auto x = gd.input("x", {32, 16});
  auto y = gd.input("y", {32, 1});
  auto w = gd.parameter("w", {1, 16}, randomValues(16, 5));
  auto loss = mse_loss(linear(x, w), y);
  size_t before = gd.numOps();
  scaler.scale(loss);
  EXPECT_EQ(gd.numOps(), before);
  optim::Adam adam({w}, {.lr = 1e-2});
  scaler.step(adam, grad(loss, {w}));
  scaler.update();
  gd.output("loss", loss);
  recordStep(gp, nullptr);
  CompiledModel disabled = compile(gd, {.cache = false});
  CompiledModel plain = compile(gp, {.cache = false});
  disabled.run(batch(7));
  plain.run(batch(7));
  std::vector<float> w1 = disabled.state("w").f32;
  EXPECT_EQ(w1, plain.state("w").f32);
  EXPECT_EQ(disabled.stateNames(), plain.stateNames());
}

TEST(Amp, CallsOutOfOrderAreErrorsAtTheUsersLine) {
  Graph g("mistakes");
  auto x = g.input("x", {4, 3});
  auto w = g.parameter("w", {2, 3}, randomValues(6, 1));
  auto loss = sum(linear(x, w), {0, 1});
  optim::SGD opt({w}, {.lr = 0.1});
  amp::GradScaler scaler;
  unsigned line = 0;
  std::string message = errorOf([&] { scaler.update(); }, &line);
  EXPECT_NE(message.find("GradScaler.update() follows step()"),
            std::string::npos)
      << message;
  EXPECT_NE(line, 0u);
  std::vector<Tensor> grads = grad(loss, {w});
  message = errorOf([&] { scaler.step(opt, grads); });
  EXPECT_NE(message.find("call scale(loss) first"), std::string::npos)
      << message;
  message = errorOf([&] { scaler.scale(sum(x, {0})); });
  EXPECT_NE(message.find("takes the scalar float loss, got f32 [3]"),
            std::string::npos)
      << message;
  size_t before = g.numOps();
  Tensor scaled = scaler.scale(loss);
  EXPECT_GT(g.numOps(), before);
  message = errorOf([&] { scaler.scale(loss); });
  EXPECT_NE(message.find("scale() records once"), std::string::npos) << message;
  // A step whose gradients do not fit the optimizer records nothing and
  // leaves the scaler as it was.
  before = g.numOps();
  message = errorOf([&] { scaler.step(opt, {}); });
  EXPECT_NE(message.find("takes the gradients, got none"), std::string::npos)
      << message;
  EXPECT_EQ(g.numOps(), before);
  grads = grad(scaled, {w});
  scaler.unscale_(grads);
  // The gradients unscale_() divided, and no others.
  message = errorOf([&] { scaler.step(opt, {grads[0], grads[0]}); });
  EXPECT_NE(message.find("takes the gradients unscale_() divided: 1 there, "
                         "2 here"),
            std::string::npos)
      << message;
  scaler.step(opt, grads);
  message = errorOf([&] { scaler.step(opt, grads); });
  EXPECT_NE(message.find("a scaler serves one optimizer"), std::string::npos)
      << message;
  message = errorOf([&] { amp::GradScaler({.backoffFactor = 1.5}); });
  EXPECT_NE(message.find("backoff_factor must be between 0 and 1"),
            std::string::npos)
      << message;
}
