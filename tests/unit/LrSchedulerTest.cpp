// Learning rates as run-time state: optim::setLr and the schedulers of
// locus/Compile/LrScheduler.h change a compiled training step between runs
// with no recompile; parameter groups with settings of their own; the
// schedules against PyTorch 1.13's own numbers; errors at the user's line
// with nothing written.

#include "locus/Compile/LrScheduler.h"
#include "ErrorOf.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace locus;
using locus::test::errorOf;
namespace sched = locus::optim::lr_scheduler;

namespace {

/// loss = sum(a * x) + sum(b * x) over two parameters of 4, so each
/// gradient is x; SGD's step is then p -= lr * x exactly.
struct TwoParams {
  Graph g{"two"};
  Tensor x = g.input("x", {4});
  Tensor a = g.parameter("a", {4}, Init::full(1.0));
  Tensor b = g.parameter("b", {4}, Init::full(1.0));
  Tensor loss = sum(a * x, {0}) + sum(b * x, {0});
  TwoParams() { g.output("loss", loss); }
};

const std::vector<float> kX{1, 2, 3, 4};

void runOnce(CompiledModel &m) { m.run({{"x", HostTensor::fromF32({4}, kX)}}); }

/// PyTorch 1.13's get_last_lr() after construction and after each of 12
/// steps, for two SGD groups of lr 0.1 and 0.02 (torch.optim.lr_scheduler
/// with these settings, printed with %.17g). One difference is Locus's:
/// OneCycleLR's step past the end writes 0 where PyTorch extrapolates
/// below zero.
const std::map<std::string, std::vector<double>> kTorchRates{
    {"step", {0.10000000000000001,   0.02,
              0.10000000000000001,   0.02,
              0.10000000000000001,   0.02,
              0.050000000000000003,  0.01,
              0.050000000000000003,  0.01,
              0.050000000000000003,  0.01,
              0.025000000000000001,  0.0050000000000000001,
              0.025000000000000001,  0.0050000000000000001,
              0.025000000000000001,  0.0050000000000000001,
              0.012500000000000001,  0.0025000000000000001,
              0.012500000000000001,  0.0025000000000000001,
              0.012500000000000001,  0.0025000000000000001,
              0.0062500000000000003, 0.00125}},
    {"multistep", {0.10000000000000001,    0.02,
                   0.10000000000000001,    0.02,
                   0.029999999999999999,   0.0060000000000000001,
                   0.029999999999999999,   0.0060000000000000001,
                   0.029999999999999999,   0.0060000000000000001,
                   0.0026999999999999997,  0.00054000000000000001,
                   0.0026999999999999997,  0.00054000000000000001,
                   0.0026999999999999997,  0.00054000000000000001,
                   0.0026999999999999997,  0.00054000000000000001,
                   0.00080999999999999985, 0.00016200000000000001,
                   0.00080999999999999985, 0.00016200000000000001,
                   0.00080999999999999985, 0.00016200000000000001,
                   0.00080999999999999985, 0.00016200000000000001}},
    {"exponential", {0.10000000000000001,  0.02,
                     0.090000000000000011, 0.018000000000000002,
                     0.081000000000000016, 0.016200000000000003,
                     0.07290000000000002,  0.014580000000000003,
                     0.065610000000000016, 0.013122000000000003,
                     0.059049000000000018, 0.011809800000000004,
                     0.05314410000000002,  0.010628820000000004,
                     0.047829690000000022, 0.0095659380000000047,
                     0.043046721000000024, 0.0086093442000000041,
                     0.03874204890000002,  0.0077484097800000042,
                     0.034867844010000017, 0.006973568802000004,
                     0.031381059609000013, 0.0062762119218000038,
                     0.028242953648100012, 0.0056485907296200035}},
    {"cosine",
     {0.10000000000000001,
      0.02,
      0.091405764746872634,
      0.019045084971874737,
      0.068905764746872628,
      0.016545084971874735,
      0.041094235253127359,
      0.013454915028125262,
      0.018594235253127367,
      0.010954915028125263,
      0.01,
      0.01,
      0.018594235253127367,
      0.010954915028125263,
      0.041094235253127387,
      0.013454915028125266,
      0.068905764746872669,
      0.016545084971874742,
      0.091405764746872689,
      0.019045084971874744,
      0.10000000000000006,
      0.020000000000000007,
      0.091405764746872717,
      0.019045084971874748,
      0.068905764746872683,
      0.016545084971874742}},
    {"linear", {0.025000000000000001, 0.0050000000000000001,
                0.043750000000000004, 0.0087500000000000008,
                0.062500000000000014, 0.012500000000000001,
                0.081250000000000017, 0.016250000000000001,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02,
                0.10000000000000002,  0.02}},
    {"onecycle",
     {0.040000000000000036, 0.040000000000000036,   0.34978965421958308,
      0.34978965421958308,  0.87928515912212868,    0.87928515912212868,
      0.99441543545091171,  0.99441543545091171,    0.93301296984141169,
      0.93301296984141169,  0.81174565394976295,    0.81174565394976295,
      0.64737899769510332,  0.64737899769510332,    0.46263710266697505,
      0.46263710266697505,  0.28306099820869923,    0.28306099820869923,
      0.1334775301888306,   0.1334775301888306,     0.034566987425395219,
      0.034566987425395219, 3.9999999999999998e-06, 3.9999999999999998e-06,
      0.034566987425395164, 0.034566987425395164}},
    {"onecycle3",
     {0.040000000000000001,
      0.02,
      0.40923076923076929,
      0.20461538461538464,
      0.77846153846153865,
      0.38923076923076932,
      0.85230769230769221,
      0.42615384615384611,
      0.48307692307692296,
      0.24153846153846148,
      0.1138461538461536,
      0.056923076923076799,
      0.034483310344827579,
      0.01724165517241379,
      0.027587448275862066,
      0.013793724137931033,
      0.020691586206896546,
      0.010345793103448273,
      0.01379572413793103,
      0.006897862068965515,
      0.0068998620689655135,
      0.0034499310344827568,
      3.9999999999970615e-06,
      1.9999999999985307e-06,
      0.0 /* PyTorch: -0.0068918620689655194 */,
      0.0 /* PyTorch: -0.0034459310344827597 */}},
    {"sequential",
     {0.010000000000000002,
      0.002,
      0.040000000000000001,
      0.0079999999999999984,
      0.070000000000000007,
      0.013999999999999997,
      0.10000000000000001,
      0.02,
      0.093301270189221949,
      0.018660254037844388,
      0.075000000000000011,
      0.015000000000000001,
      0.050000000000000003,
      0.01,
      0.025000000000000012,
      0.0050000000000000027,
      0.006698729810778065,
      0.001339745962155613,
      0,
      0,
      0.006698729810778065,
      0.001339745962155613,
      0.025000000000000001,
      0.0050000000000000001,
      0.050000000000000037,
      0.010000000000000007}},
};

/// The scheduler of each case above, over `o` and `m`.
std::shared_ptr<sched::LRScheduler>
makeCase(const std::string &name, optim::Optimizer &o, CompiledModel &m) {
  if (name == "step")
    return std::make_shared<sched::StepLR>(o, m, 3, 0.5);
  if (name == "multistep")
    return std::make_shared<sched::MultiStepLR>(
        o, m, std::vector<int64_t>{2, 5, 5, 9}, 0.3);
  if (name == "exponential")
    return std::make_shared<sched::ExponentialLR>(o, m, 0.9);
  if (name == "cosine")
    return std::make_shared<sched::CosineAnnealingLR>(o, m, 5, 0.01);
  if (name == "linear")
    return std::make_shared<sched::LinearLR>(o, m, 0.25, 1.0, 4);
  if (name == "onecycle")
    return std::make_shared<sched::OneCycleLR>(
        o, m,
        sched::OneCycleOptions{
            .maxLr = {1.0}, .totalSteps = 12, .cycleMomentum = false});
  if (name == "onecycle3")
    return std::make_shared<sched::OneCycleLR>(
        o, m,
        sched::OneCycleOptions{.maxLr = {1.0, 0.5},
                               .totalSteps = 12,
                               .annealStrategy = "linear",
                               .cycleMomentum = false,
                               .threePhase = true});
  // sequential: LinearLR warm-up for 3 epochs, then cosine.
  auto warm = std::make_shared<sched::LinearLR>(o, m, 0.1, 1.0, 3);
  auto cosine = std::make_shared<sched::CosineAnnealingLR>(o, m, 6);
  return std::make_shared<sched::SequentialLR>(
      o, m, std::vector<std::shared_ptr<sched::LRScheduler>>{warm, cosine},
      std::vector<int64_t>{3});
}

} // namespace

TEST(LrScheduler, SetLrChangesTheStepWithoutARecompile) {
  TwoParams t;
  optim::SGD opt({t.a, t.b}, {.lr = 0.5});
  opt.step(t.loss);
  EXPECT_EQ(opt.lrStateName(), "optimizer.param_groups.0.lr");
  CompiledModel m = compile(t.g);
  size_t kernels = m.kernelCount();
  runOnce(m);
  optim::setLr(m, opt, 0.25);
  EXPECT_EQ(optim::getLr(m, opt), 0.25);
  runOnce(m);
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(m.state("a").f32[i], 1 - 0.5f * kX[i] - 0.25f * kX[i]);
  EXPECT_EQ(m.kernelCount(), kernels);
  // The rate is state: in the state dict, saved and loaded with it.
  EXPECT_EQ(m.state_dict().at("optimizer.param_groups.0.lr").scalar(), 0.25f);
}

TEST(LrScheduler, ParamGroupsHaveTheirOwnSettings) {
  TwoParams t;
  optim::SGD opt({{.params = {t.a}},
                  {.params = {t.b},
                   .options = optim::SGDOptions{.lr = 0.01, .momentum = 0.9}}},
                 {.lr = 0.1});
  opt.step(t.loss);
  ASSERT_EQ(opt.groupCount(), 2u);
  EXPECT_EQ(opt.initialLr(0), 0.1);
  EXPECT_EQ(opt.initialLr(1), 0.01);
  EXPECT_EQ(opt.groupParameters(1).size(), 1u);
  EXPECT_EQ(opt.parameters().size(), 2u);
  CompiledModel m = compile(t.g);
  const int steps = 3;
  for (int s = 0; s < steps; ++s)
    runOnce(m);
  for (int i = 0; i < 4; ++i) {
    // a: plain SGD at 0.1; b: momentum 0.9 at 0.01 (buffers 1, 1.9, 2.71).
    EXPECT_FLOAT_EQ(m.state("a").f32[i], 1 - steps * 0.1f * kX[i]);
    EXPECT_NEAR(m.state("b").f32[i], 1 - 0.01 * (1 + 1.9 + 2.71) * kX[i], 1e-6);
  }
  EXPECT_EQ(m.state("b.momentum_buffer").f32.size(), 4u);
  EXPECT_FALSE(m.state("optimizer.param_groups.1.lr").f32.empty());
  // Changing group 1's rate leaves group 0's.
  optim::setLr(m, opt, 0.5, 1);
  EXPECT_FLOAT_EQ(optim::getLr(m, opt, 0), 0.1f);
  EXPECT_FLOAT_EQ(optim::getLr(m, opt, 1), 0.5f);
}

TEST(LrScheduler, SchedulesMatchPyTorch) {
  for (const auto &[name, want] : kTorchRates) {
    TwoParams t;
    optim::SGD opt(
        {{.params = {t.a}},
         {.params = {t.b}, .options = optim::SGDOptions{.lr = 0.02}}},
        {.lr = 0.1});
    opt.step(t.loss);
    CompiledModel m = compile(t.g);
    auto s = makeCase(name, opt, m);
    for (size_t epoch = 0; epoch * 2 < want.size(); ++epoch) {
      if (epoch > 0)
        s->step();
      EXPECT_EQ(s->lastEpoch(), int64_t(epoch));
      for (size_t group = 0; group < 2; ++group) {
        double expected = want[epoch * 2 + group];
        EXPECT_NEAR(s->getLastLr()[group], expected,
                    1e-15 + 1e-12 * std::fabs(expected))
            << name << " epoch " << epoch << " group " << group;
        EXPECT_EQ(optim::getLr(m, opt, group), static_cast<float>(expected))
            << name << " epoch " << epoch << " group " << group;
      }
    }
  }
}

TEST(LrScheduler, AScheduledStepTrainsWithTheScheduledRate) {
  TwoParams t;
  optim::SGD opt({t.a, t.b}, {.lr = 0.4});
  opt.step(t.loss);
  CompiledModel m = compile(t.g);
  sched::StepLR s(opt, m, 1, 0.5); // 0.4, 0.2, 0.1
  for (int epoch = 0; epoch < 3; ++epoch) {
    runOnce(m);
    s.step();
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(m.state("a").f32[i], 1 - 0.7f * kX[i]);
}

TEST(LrScheduler, MistakesAreErrorsAtTheUsersLineAndWriteNothing) {
  TwoParams t;
  optim::SGD opt({t.a, t.b}, {.lr = 0.5});
  opt.step(t.loss);
  CompiledModel m = compile(t.g);
  unsigned line = 0;
  unsigned here = __LINE__ + 1;
  std::string e = errorOf([&] { optim::setLr(m, opt, -1.0); }, &line);
  EXPECT_NE(e.find("a learning rate must be a non-negative number, got -1"),
            std::string::npos)
      << e;
  EXPECT_EQ(line, here);
  EXPECT_EQ(optim::getLr(m, opt), 0.5f);
  e = errorOf([&] { optim::setLr(m, opt, NAN); });
  EXPECT_NE(e.find("non-negative number"), std::string::npos) << e;
  e = errorOf([&] { optim::setLr(m, opt, 0.1, 1); });
  EXPECT_NE(e.find("parameter group 1 of an optimizer with 1 group"),
            std::string::npos)
      << e;
  // A model compiled from another graph.
  Graph plain("plain");
  auto in = plain.input("x", {4});
  plain.output("y", in * 2.0f);
  CompiledModel plainModel = compile(plain);
  e = errorOf([&] { optim::setLr(plainModel, opt, 0.1); });
  EXPECT_NE(e.find("has no learning-rate state "
                   "'optimizer.param_groups.0.lr'"),
            std::string::npos)
      << e;
  e = errorOf([&] {
    sched::OneCycleLR(opt, m,
                      sched::OneCycleOptions{.maxLr = {1.0}, .totalSteps = 10});
  });
  EXPECT_NE(e.find("pass cycleMomentum = false"), std::string::npos) << e;
  EXPECT_EQ(optim::getLr(m, opt), 0.5f);
  sched::OneCycleLR cycle(opt, m,
                          sched::OneCycleOptions{.maxLr = {1.0},
                                                 .totalSteps = 2,
                                                 .cycleMomentum = false});
  cycle.step();
  cycle.step();
  float last = optim::getLr(m, opt);
  e = errorOf([&] { cycle.step(); });
  EXPECT_NE(e.find("OneCycleLR stepped 3 times; its total_steps is 2"),
            std::string::npos)
      << e;
  EXPECT_EQ(optim::getLr(m, opt), last);
  EXPECT_EQ(cycle.lastEpoch(), 2);
  e = errorOf([&] { sched::StepLR(opt, m, 0); });
  EXPECT_NE(e.find("StepLR's step_size must be positive, got 0"),
            std::string::npos)
      << e;
  e = errorOf([&] { sched::LinearLR(opt, m, 0.0); });
  EXPECT_NE(e.find("start_factor must be in (0, 1]"), std::string::npos) << e;
  auto warm = std::make_shared<sched::LinearLR>(opt, m);
  e = errorOf([&] {
    sched::SequentialLR(opt, m, {warm, warm}, std::vector<int64_t>{});
  });
  EXPECT_NE(e.find("one milestone fewer than schedulers"), std::string::npos)
      << e;
  e = errorOf([&] { sched::SequentialLR(opt, m, {warm}, {}); });
  EXPECT_EQ(e, "");
  TwoParams third;
  optim::SGD thirdOpt({third.a}, {.lr = 0.1});
  thirdOpt.step(sum(third.a * third.x, {0}));
  e = errorOf([&] {
    CompiledModel m3 = compile(third.g);
    sched::SequentialLR(thirdOpt, m3, {warm}, std::vector<int64_t>{});
  });
  EXPECT_NE(e.find("must all be over its optimizer and model"),
            std::string::npos)
      << e;
}

TEST(LrScheduler, OptimizerGroupsAreChecked) {
  TwoParams t;
  unsigned line = 0;
  std::string e = errorOf([&] { optim::SGD({t.a, t.a}, {.lr = 0.1}); }, &line);
  EXPECT_NE(e.find("parameter 'a' is given to the optimizer twice"),
            std::string::npos)
      << e;
  e = errorOf([&] { optim::Adam({{.params = {t.a}}, {.params = {}}}); });
  EXPECT_NE(e.find("parameter group 1 has no parameters"), std::string::npos)
      << e;
  e = errorOf([&] {
    optim::SGD({{.params = {t.a}},
                {.params = {t.b}, .options = optim::SGDOptions{.lr = -1}}},
               {.lr = 0.1})
        .step(t.loss);
  });
  EXPECT_NE(e.find("must be non-negative numbers"), std::string::npos) << e;
  // Before its step() is recorded an optimizer has no learning-rate state.
  e = errorOf([&] { (void)optim::SGD({t.a}, {.lr = 0.1}).lrStateName(); });
  EXPECT_NE(e.find("call step() first"), std::string::npos) << e;
  // Nothing was recorded by the failed step: the graph trains afterwards.
  optim::SGD ok({t.a, t.b}, {.lr = 0.1});
  ok.step(t.loss);
  EXPECT_EQ(compile(t.g).state("optimizer.param_groups.0.lr").scalar(), 0.1f);
}

TEST(LrScheduler, ResumingGoesOnFromTheEpochGiven) {
  TwoParams t;
  optim::SGD opt({t.a, t.b}, {.lr = 0.8});
  opt.step(t.loss);
  CompiledModel m = compile(t.g);
  sched::StepLR s(opt, m, 2, 0.5);
  s.resumeAt(5); // epoch 5: 0.8 * 0.5^2
  EXPECT_EQ(s.lastEpoch(), 5);
  EXPECT_EQ(optim::getLr(m, opt), 0.2f);
  s.step(); // epoch 6: 0.8 * 0.5^3
  EXPECT_EQ(optim::getLr(m, opt), 0.1f);
  std::string e = errorOf([&] { s.resumeAt(-1); });
  EXPECT_NE(e.find("resumes at an epoch >= 0, got -1"), std::string::npos) << e;
  e = errorOf([&] { sched::ExponentialLR(opt, m, -0.5); });
  EXPECT_NE(e.find("ExponentialLR's gamma must be a non-negative number"),
            std::string::npos)
      << e;
  auto warm = std::make_shared<sched::LinearLR>(opt, m);
  auto cosine = std::make_shared<sched::CosineAnnealingLR>(opt, m, 4);
  e = errorOf([&] {
    sched::SequentialLR(opt, m, {warm, cosine}, std::vector<int64_t>{0});
  });
  EXPECT_NE(e.find("milestones must be positive"), std::string::npos) << e;
  e = errorOf([&] {
    sched::LambdaLR(opt, m, [](int64_t epoch) {
      return epoch ? -1.0 : 1.0;
    }).step();
  });
  EXPECT_NE(e.find("the scheduled learning rate of group 0 at epoch 1 must be "
                   "a non-negative number"),
            std::string::npos)
      << e;
  EXPECT_EQ(optim::getLr(m, opt), 0.8f); // the lambda's epoch 0, kept
}

TEST(LrScheduler, TwoOptimizersOfOneGraphKeepTheirOwnRates) {
  // A GAN's two optimizers: the second's state is "optimizer1.".
  TwoParams t;
  optim::SGD first({t.a}, {.lr = 0.5});
  optim::Adam second({t.b}, {.lr = 0.25});
  std::vector<Tensor> grads = grad(t.loss, {t.a, t.b});
  first.step(std::vector<Tensor>{grads[0]});
  second.step(std::vector<Tensor>{grads[1]});
  EXPECT_EQ(first.lrStateName(), "optimizer.param_groups.0.lr");
  EXPECT_EQ(second.lrStateName(), "optimizer1.param_groups.0.lr");
  CompiledModel m = compile(t.g);
  EXPECT_EQ(optim::getLr(m, first), 0.5f);
  EXPECT_EQ(optim::getLr(m, second), 0.25f);
  optim::setLr(m, second, 0.125);
  EXPECT_EQ(optim::getLr(m, first), 0.5f);
  EXPECT_FALSE(m.state("optimizer1.step").f32.empty());
}
