// Training from C++: locus::grad, assign and the optimizers (errors at the
// user's line, nothing recorded on failure), the in-place state updates
// seen through the model's state, CompiledModel::runBatches, and AdamW
// against PyTorch's own numbers.

#include "AdamWReference.h"
#include "ErrorOf.h"
#include "locus/Compile.h"
#include "locus/locus.h"
#include "locus/runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <unistd.h>

using namespace locus;
using locus::test::errorOf;

namespace {

/// Batch `step` of a Linear(3, 1) regression: x [8, 3], y [8, 1].
std::map<std::string, HostTensor> linearBatch(uint64_t step) {
  std::vector<float> xs(24), ys(8);
  for (size_t i = 0; i < 24; ++i)
    xs[i] = std::sin(float(step * 24 + i));
  for (size_t i = 0; i < 8; ++i)
    ys[i] = std::cos(float(step * 8 + i));
  return {{"x", HostTensor::fromF32({8, 3}, xs)},
          {"y", HostTensor::fromF32({8, 1}, ys)}};
}

/// How many ops named `name` the graph holds.
size_t countOpsNamed(const Graph &g, const std::string &name) {
  std::string text = g.str();
  size_t count = 0;
  for (size_t at = text.find(name + " "); at != std::string::npos;
       at = text.find(name + " ", at + 1))
    ++count;
  return count;
}

} // namespace

TEST(Train, GradOfALinearModelIsExact) {
  // loss = sum(w * x) has d/dw = x, d/dx = w.
  Graph g("grad");
  auto x = g.input("x", {3});
  auto w = g.parameter("w", {3}, Init::full(2.0));
  auto loss = sum(w * x, {0});
  auto grads = grad(loss, {w, x});
  g.output("dw", grads[0]);
  g.output("dx", grads[1]);
  CompiledModel m = compile(g);
  auto out = m.run({{"x", HostTensor::fromF32({3}, {1, -2, 5})}});
  EXPECT_EQ(out.at("dw").f32, (std::vector<float>{1, -2, 5}));
  EXPECT_EQ(out.at("dx").f32, (std::vector<float>{2, 2, 2}));
}

TEST(Train, APackedWeightsBlocksGetTheirGradientsJoined) {
  // w [6, 2] read as three row blocks (attention's q, k and v of a packed
  // in_proj_weight): loss = sum(q * a) + sum(k * k) + sum(v * b), so
  // dw = [a; 2k; b], recorded as one concat of the blocks' gradients.
  Graph g("packed");
  auto a = g.input("a", {2, 2});
  auto b = g.input("b", {2, 2});
  auto w = g.parameter("w", {6, 2}, Init::uniform(-1, 1, 5));
  Tensor q = slice(w, 0, 0, 2), k = slice(w, 0, 2, 4), v = slice(w, 0, 4, 6);
  auto loss = sum(q * a, {0, 1}) + sum(k * k, {0, 1}) + sum(v * b, {0, 1});
  g.output("dw", grad(loss, {w})[0]);
  EXPECT_EQ(countOpsNamed(g, "locus.concat"), 1u);
  EXPECT_EQ(countOpsNamed(g, "locus.slice_grad"), 0u);
  CompiledModel m = compile(g, {.policy = "cpu"});
  std::vector<float> as{0.5f, -1.5f, 2.0f, 0.25f}, bs{-3, 1, 0.75f, 4};
  auto out = m.run({{"a", HostTensor::fromF32({2, 2}, as)},
                    {"b", HostTensor::fromF32({2, 2}, bs)}});
  std::vector<float> ws = m.state("w").f32, want;
  want.insert(want.end(), as.begin(), as.end());
  for (size_t i = 4; i < 8; ++i)
    want.push_back(2 * ws[i]);
  want.insert(want.end(), bs.begin(), bs.end());
  EXPECT_EQ(out.at("dw").f32, want);
}

TEST(Train, MistakesAreErrorsAtTheCallAndRecordNothing) {
  Graph g("bad");
  auto x = g.input("x", {3});
  auto w = g.parameter("w", {3}, Init::full(1.0));
  auto y = w * x;
  auto total = sum(y, {0});
  size_t before = g.numOps();
  unsigned line = 0;
  unsigned expected = __LINE__ + 1;
  std::string message = errorOf([&] { grad(y, {w}); }, &line);
  EXPECT_NE(message.find("the loss must be a scalar float value"),
            std::string::npos)
      << message;
  EXPECT_EQ(line, expected);
  EXPECT_EQ(g.numOps(), before);

  Graph other("other");
  auto z = other.parameter("z", {3}, Init::full(1.0));
  message = errorOf([&] { grad(total, {z}); });
  EXPECT_NE(message.find("uses a tensor of graph 'other'"), std::string::npos)
      << message;
  EXPECT_EQ(g.numOps(), before);

  message = errorOf([&] { assign(x, y); });
  EXPECT_NE(message.find("assign() writes state"), std::string::npos)
      << message;
  message = errorOf([&] { assign(w, total); });
  EXPECT_NE(message.find("assign() writes f32 [] into state 'w' of f32 [3]"),
            std::string::npos)
      << message;
  EXPECT_EQ(g.numOps(), before);

  message = errorOf([&] { optim::SGD(std::vector<Tensor>{}, {.lr = 0.1}); });
  EXPECT_NE(message.find("at least one parameter"), std::string::npos);
  message = errorOf([&] { optim::SGD({y}, {.lr = 0.1}); });
  EXPECT_NE(message.find("one of these is a computed tensor"),
            std::string::npos);
  optim::SGD nesterovAlone({w}, {.lr = 0.1, .nesterov = true});
  message = errorOf([&] { nesterovAlone.step(total); });
  EXPECT_NE(message.find("nesterov needs momentum"), std::string::npos)
      << message;
  EXPECT_EQ(g.numOps(), before);

  optim::SGD sgd({w}, {.lr = 0.1});
  auto loss = total;
  sgd.step(loss);
  message = errorOf([&] { sgd.step(loss); });
  EXPECT_NE(message.find("records the training step once"), std::string::npos);
  optim::Adam twice({w});
  message = errorOf([&] { twice.step(loss); });
  EXPECT_NE(message.find("parameter \"w\" is updated already"),
            std::string::npos)
      << message;
}

TEST(Train, SgdUpdatesTheStateInPlaceEveryRun) {
  // loss = sum(w * x): each step w -= lr * x (no momentum), so after n
  // steps w = 1 - n * lr * x.
  Graph g("sgd");
  auto x = g.input("x", {4});
  auto w = g.parameter("w", {4}, Init::full(1.0));
  auto loss = sum(w * x, {0});
  g.output("loss", loss);
  optim::SGD({w}, {.lr = 0.5}).step(loss);
  CompiledModel m = compile(g);
  std::vector<float> xs{1, 2, 3, 4};
  for (int i = 0; i < 3; ++i)
    m.run({{"x", HostTensor::fromF32({4}, xs)}});
  const HostTensor &after = m.state("w");
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(after.f32[i], 1.0f - 3 * 0.5f * xs[i]);
  // State written by the user is what the next step starts from.
  m.setState("w", HostTensor::fromF32({4}, {0, 0, 0, 0}));
  auto out = m.run({{"x", HostTensor::fromF32({4}, xs)}});
  EXPECT_EQ(out.at("loss").scalar(), 0.0f);
}

TEST(Train, AStateAssignedAgainEndsTheRunWithTheLastValue) {
  Graph g("twice");
  auto x = g.input("x", {3});
  auto w = g.parameter("w", {3}, Init::full(1.0));
  g.output("y", w * x);
  assign(w, w + x);
  assign(w, assignedValue(w) * 2.0f);
  EXPECT_EQ(countOpsNamed(g, "locus.assign"), 1u);
  size_t before = g.numOps();
  {
    // A call that fails after assigning: the assign it moved goes back.
    detail::Recording undone(x, Here::current());
    assign(w, assignedValue(w) + x);
  }
  EXPECT_EQ(g.numOps(), before);
  CompiledModel m = compile(g);
  auto out = m.run({{"x", HostTensor::fromF32({3}, {1, 2, 3})}});
  // Readers see the value of the run's start; the run ends with the last.
  EXPECT_EQ(out.at("y").f32, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(m.state("w").f32, (std::vector<float>{4, 6, 8}));
}

TEST(Train, RunBatchesMatchesRunAndPropagatesCallbackErrors) {
  auto build = [](Graph &g) {
    auto x = g.input("x", {8, 3}, {.device = cuda(0)});
    auto y = g.input("y", {8, 1}, {.device = cuda(0)});
    nn::Linear fc(g, 3, 1, {.name = "fc", .device = cuda(0)});
    auto loss = nn::MSELoss()(fc(x), y);
    g.output("loss", loss);
    optim::SGD(fc.parameters(), {.lr = 0.05, .momentum = 0.9}).step(loss);
  };
  auto batch = linearBatch;
  Graph a("a"), b("b");
  build(a);
  build(b);
  CompileOptions options{.policy = "strict", .devices = {"cpu", "cuda:0"}};
  CompiledModel one = compile(a, options), loop = compile(b, options);
  std::vector<float> expected, got;
  for (size_t step = 0; step < 6; ++step)
    expected.push_back(one.run(batch(step)).at("loss").scalar());
  RunStats stats;
  loop.runBatches(
      6, batch,
      [&](size_t, const std::map<std::string, HostTensor> &out) {
        got.push_back(out.at("loss").scalar());
      },
      &stats);
  EXPECT_EQ(got, expected); // the same steps, bit for bit
  EXPECT_GT(stats.launches, 0u);
  EXPECT_EQ(loop.state("fc.weight").f32, one.state("fc.weight").f32);

  // A wrong batch stops the loop with the runner's own message.
  try {
    loop.runBatches(3, [&](size_t step) {
      auto inputs = batch(step);
      if (step == 1)
        inputs.erase("y");
      return inputs;
    });
    ADD_FAILURE() << "no error";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find("batch 1: missing input 'y'"),
              std::string::npos)
        << e.what();
  }
  // The caller's own exception comes through unchanged.
  struct Stop {};
  EXPECT_THROW(loop.runBatches(3, batch,
                               [](size_t step, const auto &) {
                                 if (step == 1)
                                   throw Stop{};
                               }),
               Stop);
}

namespace {

/// Runs `steps` steps of loss = sum(p * x) (so the gradient is x) under the
/// optimizer `make` records, and returns p after each step.
template <typename Make>
std::vector<std::vector<float>> optimizerTrace(Make make, int steps,
                                               const std::vector<float> &x) {
  Graph g("opt");
  auto in = g.input("x", {4});
  auto p = g.parameter("p", {4}, Init::uniform(-1, 1, 7));
  auto loss = sum(p * in, {0});
  g.output("loss", loss);
  auto optimizer = make(std::vector<Tensor>{p});
  optimizer.step(loss);
  CompiledModel m = compile(g);
  std::vector<std::vector<float>> trace{m.state("p").f32};
  for (int s = 0; s < steps; ++s) {
    m.run({{"x", HostTensor::fromF32({4}, x)}});
    trace.push_back(m.state("p").f32);
  }
  return trace;
}

} // namespace

// PyTorch 1.13's update rules (torch/optim/sgd.py and adam.py), in double,
// against the compiled optimizers: momentum, Nesterov, weight decay, bias
// correction, over several steps.
TEST(Train, OptimizersFollowPyTorchsFormulas) {
  const std::vector<float> x{0.5f, -1.25f, 2.0f, 0.1f};
  const int steps = 5;
  struct Sgd {
    double lr, momentum, decay;
    bool nesterov;
  };
  for (Sgd c : {Sgd{0.1, 0.0, 0.0, false}, Sgd{0.05, 0.9, 0.01, false},
                Sgd{0.05, 0.8, 0.0, true}}) {
    auto trace = optimizerTrace(
        [&](std::vector<Tensor> ps) {
          return optim::SGD(std::move(ps), {.lr = c.lr,
                                            .momentum = c.momentum,
                                            .weightDecay = c.decay,
                                            .nesterov = c.nesterov});
        },
        steps, x);
    std::vector<double> p(trace[0].begin(), trace[0].end()), buf(4, 0.0);
    for (int s = 0; s < steps; ++s)
      for (int i = 0; i < 4; ++i) {
        double d = x[i] + c.decay * p[i];
        if (c.momentum != 0) {
          buf[i] = s == 0 ? d : c.momentum * buf[i] + d;
          d = c.nesterov ? d + c.momentum * buf[i] : buf[i];
        }
        p[i] -= c.lr * d;
        EXPECT_NEAR(trace[s + 1][i], p[i], 1e-6 + 1e-5 * std::fabs(p[i]))
            << "SGD lr " << c.lr << " momentum " << c.momentum << " step " << s
            << " element " << i;
      }
  }
  struct AdamCase {
    double lr, b1, b2, eps, decay;
  };
  for (AdamCase c : {AdamCase{1e-3, 0.9, 0.999, 1e-8, 0.0},
                     AdamCase{0.05, 0.8, 0.99, 1e-6, 0.1}}) {
    auto trace = optimizerTrace(
        [&](std::vector<Tensor> ps) {
          return optim::Adam(std::move(ps), {.lr = c.lr,
                                             .beta1 = c.b1,
                                             .beta2 = c.b2,
                                             .eps = c.eps,
                                             .weightDecay = c.decay});
        },
        steps, x);
    std::vector<double> p(trace[0].begin(), trace[0].end()), m(4, 0), v(4, 0);
    for (int s = 0; s < steps; ++s)
      for (int i = 0; i < 4; ++i) {
        double g = x[i] + c.decay * p[i];
        m[i] = c.b1 * m[i] + (1 - c.b1) * g;
        v[i] = c.b2 * v[i] + (1 - c.b2) * g * g;
        double bc1 = 1 - std::pow(c.b1, s + 1), bc2 = 1 - std::pow(c.b2, s + 1);
        p[i] -= c.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
        EXPECT_NEAR(trace[s + 1][i], p[i], 1e-6 + 1e-5 * std::fabs(p[i]))
            << "Adam lr " << c.lr << " step " << s << " element " << i;
      }
  }
}

// A training step saved as an artifact trains with the runtime alone (the
// embedding API, locus/runtime.hpp) exactly as in-process.
TEST(Train, ATrainingArtifactTrainsWithTheRuntimeAlone) {
  Graph g("artifact_step");
  auto x = g.input("x", {8, 3}, {.device = cuda(0)});
  auto y = g.input("y", {8, 1}, {.device = cuda(0)});
  nn::Linear fc(g, 3, 1, {.name = "fc", .device = cuda(0)});
  auto loss = nn::MSELoss()(fc(x), y);
  g.output("loss", loss);
  optim::Adam(fc.parameters(), {.lr = 0.01}).step(loss);
  CompiledModel compiled =
      compile(g, {.policy = "strict", .devices = {"cpu", "cuda:0"}});
  std::string path =
      ::testing::TempDir() + "train_" + std::to_string(::getpid()) + ".locus";
  compiled.save(path);

  auto batch = [](uint64_t step, std::vector<float> &xs,
                  std::vector<float> &ys) {
    xs.resize(24);
    ys.resize(8);
    for (size_t i = 0; i < 24; ++i)
      xs[i] = std::sin(float(step * 24 + i));
    for (size_t i = 0; i < 8; ++i)
      ys[i] = std::cos(float(step * 8 + i));
  };
  std::vector<float> expected;
  compiled.runBatches(
      5,
      [&](size_t step) {
        std::vector<float> xs, ys;
        batch(step, xs, ys);
        return std::map<std::string, HostTensor>{
            {"x", HostTensor::fromF32({8, 3}, xs)},
            {"y", HostTensor::fromF32({8, 1}, ys)}};
      },
      [&](size_t, const std::map<std::string, HostTensor> &out) {
        expected.push_back(out.at("loss").scalar());
      });

  rt::Model model = rt::Model::load(path);
  rt::Context context(model);
  std::vector<float> xs, ys, got;
  context.runBatches(
      5,
      [&](uint64_t step, const void **inputs) {
        batch(step, xs, ys);
        inputs[0] = xs.data(); // inputs in the model's order: x, y
        inputs[1] = ys.data();
      },
      [&](uint64_t, rt::Context &c) {
        got.push_back(c.output<float>("loss")[0]);
      });
  EXPECT_EQ(got, expected);
  EXPECT_EQ(model.readState("fc.weight"), compiled.state("fc.weight").f32);
  std::remove(path.c_str());
}

// save() writes the state that training changed (weights, Adam's moments
// and step): the artifact, run by the runtime alone, computes bit for bit
// what the trained model computes and trains on from where it stopped, as
// uninterrupted training does. saveState()/loadState() move the same state
// into a freshly compiled model through a safetensors file, with the same
// result.
TEST(Train, SavedModelsKeepTheirTrainingAndResume) {
  Graph g("resume_step");
  auto x = g.input("x", {8, 3});
  auto y = g.input("y", {8, 1});
  nn::Linear fc(g, 3, 1, {.name = "fc"});
  auto pred = fc(x);
  auto loss = nn::MSELoss()(pred, y);
  g.output("loss", loss);
  g.output("pred", pred);
  optim::Adam(fc.parameters(), {.lr = 0.05}).step(loss);
  auto batch = linearBatch;
  CompiledModel trained = compile(g);
  for (uint64_t step = 0; step < 3; ++step)
    trained.run(batch(step));
  std::string stem =
      ::testing::TempDir() + "resume_" + std::to_string(::getpid());
  trained.save(stem + ".locus");
  trained.saveState(stem + ".safetensors");
  std::vector<std::vector<float>> expected;
  for (uint64_t step = 3; step < 6; ++step) {
    auto out = trained.run(batch(step));
    expected.push_back(out.at("pred").f32);
    expected.back().push_back(out.at("loss").scalar());
  }

  rt::Model model = rt::Model::load(stem + ".locus");
  rt::Context context(model);
  CompiledModel resumed = compile(g);
  EXPECT_EQ(resumed.loadState(stem + ".safetensors"),
            resumed.stateNames().size());
  for (uint64_t step = 3; step < 6; ++step) {
    auto in = batch(step);
    context.setInput("x", in.at("x").f32);
    context.setInput("y", in.at("y").f32);
    context.run();
    std::vector<float> got = context.output<float>("pred");
    got.push_back(context.output<float>("loss")[0]);
    EXPECT_EQ(got, expected[step - 3]) << "artifact, step " << step;
    auto out = resumed.run(in);
    got = out.at("pred").f32;
    got.push_back(out.at("loss").scalar());
    EXPECT_EQ(got, expected[step - 3]) << "loadState, step " << step;
  }

  // A value given with setState travels too; an untouched model's artifact
  // carries no state section at all.
  CompiledModel fresh = compile(g);
  fresh.save(stem + ".locus");
  locus_artifact_t *artifact = nullptr;
  ASSERT_EQ(locus_artifact_load((stem + ".locus").c_str(), &artifact), nullptr);
  const void *data = nullptr;
  size_t size = 0;
  locus_status_t absent =
      locus_artifact_section(artifact, LOCUS_SECTION_STATE, &data, &size);
  EXPECT_EQ(locus_status_code(absent), LOCUS_STATUS_NOT_FOUND);
  locus_status_free(absent);
  locus_artifact_release(artifact);
  fresh.setState("fc.bias", HostTensor::fromF32({1}, {42.0f}));
  fresh.save(stem + ".locus");
  rt::Model set = rt::Model::load(stem + ".locus");
  EXPECT_EQ(set.readState("fc.bias"), std::vector<float>{42.0f});
  EXPECT_EQ(set.readState("fc.weight"), fresh.state("fc.weight").f32);
  std::remove((stem + ".locus").c_str());
  std::remove((stem + ".safetensors").c_str());
}

// optim::AdamW against torch.optim.AdamW itself (PyTorch 1.13, numbers in
// AdamWReference.h, made by tests/e2e/reference/adamw_torch.py): the loss
// of each of five steps of a Linear(3, 2) and the weights after them, with
// PyTorch's defaults and with a large decoupled weight decay. Adam's L2
// decay with the same settings ends elsewhere.
TEST(Train, AdamWMatchesPyTorch) {
  namespace ref = adamw_reference;
  auto train = [](const ref::Case &c, bool decoupled,
                  std::vector<float> *losses) {
    Graph g("adamw");
    auto x = g.input("x", {4, 3});
    auto y = g.input("y", {4, 2});
    nn::Linear fc(g, 3, 2, {.name = "fc"});
    auto loss = nn::MSELoss()(fc(x), y);
    g.output("loss", loss);
    if (decoupled)
      optim::AdamW(fc.parameters(), {.lr = c.lr,
                                     .beta1 = c.beta1,
                                     .beta2 = c.beta2,
                                     .eps = c.eps,
                                     .weightDecay = c.weightDecay})
          .step(loss);
    else
      optim::Adam(fc.parameters(), {.lr = c.lr,
                                    .beta1 = c.beta1,
                                    .beta2 = c.beta2,
                                    .eps = c.eps,
                                    .weightDecay = c.weightDecay})
          .step(loss);
    CompiledModel m = compile(g);
    m.setState("fc.weight",
               HostTensor::fromF32(
                   {2, 3}, {std::begin(ref::kWeight), std::end(ref::kWeight)}));
    m.setState("fc.bias", HostTensor::fromF32({2}, {std::begin(ref::kBias),
                                                    std::end(ref::kBias)}));
    std::map<std::string, HostTensor> in{
        {"x",
         HostTensor::fromF32({4, 3}, {std::begin(ref::kX), std::end(ref::kX)})},
        {"y", HostTensor::fromF32({4, 2},
                                  {std::begin(ref::kY), std::end(ref::kY)})}};
    for (int s = 0; s < ref::kSteps; ++s) {
      float l = m.run(in).at("loss").scalar();
      if (losses)
        losses->push_back(l);
    }
    std::vector<float> params = m.state("fc.weight").f32;
    for (float b : m.state("fc.bias").f32)
      params.push_back(b);
    return params;
  };
  auto close = [](float got, float want) {
    return std::fabs(got - want) <= 1e-6 + 1e-5 * std::fabs(want);
  };
  for (const ref::Case &c : ref::kCases) {
    std::vector<float> losses;
    std::vector<float> params = train(c, true, &losses);
    ASSERT_EQ(losses.size(), static_cast<size_t>(ref::kSteps));
    for (int s = 0; s < ref::kSteps; ++s)
      EXPECT_PRED2(close, losses[s], c.losses[s])
          << "lr " << c.lr << " step " << s;
    for (int i = 0; i < 8; ++i)
      EXPECT_PRED2(close, params[i], i < 6 ? c.weight[i] : c.bias[i - 6])
          << "lr " << c.lr << " parameter element " << i;
  }
  // The decoupled decay is what makes the difference: Adam with L2 decay.
  const ref::Case &large = ref::kCases[1];
  std::vector<float> l2 = train(large, false, nullptr);
  float apart = 0;
  for (int i = 0; i < 6; ++i)
    apart = std::max(apart, std::fabs(l2[i] - large.weight[i]));
  EXPECT_GT(apart, 1e-2f);
}

// A class label outside [0, classes) is the user's mistake, reported as
// PyTorch reports it: the run fails with an error naming the loss and the
// user's line (10^15 used to crash the kernel; later the loss was NaN), on
// the CPU and on sim. The kernel still never reads outside its row. A
// training step with a bad label changes no weight: the check runs before
// the update. Labels in range give the same loss before and after.
TEST(Train, ALabelOutsideTheClassesIsAnErrorAtTheUsersLine) {
  int lossLine = 0;
  auto record = [&](Graph &g, bool train) {
    auto x = g.input("x", {4, 6});
    auto labels = g.input("labels", {4}, {.dtype = DType::i64});
    nn::Linear fc(g, 6, 10, {.name = "fc"});
    lossLine = __LINE__ + 1;
    auto loss = nn::CrossEntropyLoss()(fc(x), labels);
    g.output("loss", loss);
    if (train)
      optim::SGD(fc.parameters(), {.lr = 0.5}).step(loss);
  };
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(float(i) * 0.7f);
  for (bool train : {false, true})
    for (const char *where : {"cpu", "sim"}) {
      SCOPED_TRACE(std::string(where) + (train ? " training" : ""));
      Graph g("labels");
      record(g, train);
      CompileOptions options{.policy = "cpu", .devices = {"cpu"}};
      if (std::string(where) == "sim")
        options = {.policy = "prefer-gpu",
                   .devices = {"cpu", "cuda:0"},
                   .diagnostics = [](const Diagnostic &) {},
                   .deviceMap = "cuda:0=sim"};
      CompiledModel model = compile(g, options);
      auto lossFor = [&](const std::vector<int64_t> &labels) {
        return model
            .run({{"x", HostTensor::fromF32({4, 6}, xs)},
                  {"labels", HostTensor::fromI64({4}, labels)}})
            .at("loss")
            .scalar();
      };
      float good = lossFor({0, 9, 3, 5});
      EXPECT_TRUE(std::isfinite(good));
      EXPECT_GT(good, 0);
      std::vector<float> weight = model.state("fc.weight").f32;
      for (int64_t bad : {int64_t{10}, int64_t{-5}, int64_t{1000000000000000},
                          std::numeric_limits<int64_t>::min()}) {
        std::string message;
        try {
          lossFor({0, bad, 3, bad});
        } catch (const RunError &e) {
          message = e.what();
        }
        EXPECT_NE(message.find("locus.cross_entropy at "), std::string::npos)
            << message;
        EXPECT_NE(message.find("TrainTest.cpp:" + std::to_string(lossLine) +
                               ": labels outside [0, 10) (2 found)"),
                  std::string::npos)
            << "label " << bad << ": " << message;
        EXPECT_EQ(model.state("fc.weight").f32, weight) << "label " << bad;
      }
      if (!train) {
        EXPECT_EQ(lossFor({0, 9, 3, 5}), good); // nothing was corrupted
      }
      // On sim the step replays as a graph from its second run: training,
      // in two parts with the labels' check read back before the update;
      // evaluating, in one with the check read back after it. The bad
      // labels above were refused there, and a good step still trains.
      if (std::string(where) == "sim") {
        EXPECT_NE(model.runtimeReport().find(
                      train ? "steps replay as a CUDA graph on sim from the "
                              "second run in 2 parts (its 1 index check(s) "
                              "are read back between them)"
                            : "steps replay as a CUDA graph on sim from the "
                              "second run (its 1 index check(s) are read "
                              "back after it)"),
                  std::string::npos)
            << model.runtimeReport();
        float next = lossFor({0, 9, 3, 5});
        EXPECT_TRUE(train ? next < good : next == good) << next;
      }
    }
}

namespace {

/// One SGD step (lr 0.1) on w [2, 3] and b [3] of loss = sum(w * x) +
/// sum(b * y), whose gradients are x and y, after clipping them with
/// `clip`; returns the outputs ("norm" when clip gives one) and the state.
struct ClipRun {
  std::map<std::string, HostTensor> out;
  std::vector<float> w, b;
};
template <typename Clip>
ClipRun clippedStep(Clip clip, const std::vector<float> &xs,
                    const std::vector<float> &ys) {
  Graph g("clip");
  auto x = g.input("x", {2, 3});
  auto y = g.input("y", {3});
  auto w = g.parameter("w", {2, 3}, Init::full(1.0));
  auto b = g.parameter("b", {3}, Init::full(-1.0));
  auto loss = add(sum(w * x, {0, 1}), sum(b * y, {0}));
  g.output("loss", loss);
  std::vector<Tensor> grads = grad(loss, {w, b});
  if (Tensor norm = clip(grads))
    g.output("norm", norm);
  optim::SGD({w, b}, {.lr = 0.1}).step(grads);
  CompiledModel m = compile(g);
  ClipRun r;
  r.out = m.run({{"x", HostTensor::fromF32({2, 3}, xs)},
                 {"y", HostTensor::fromF32({3}, ys)}});
  r.w = m.state("w").f32;
  r.b = m.state("b").f32;
  return r;
}

} // namespace

TEST(Train, ClipGradNormScalesEveryGradientByTheTotalNorm) {
  std::vector<float> xs{3, -4, 1, 0.5f, 2, -2}, ys{-1, 6, 0.25f};
  std::vector<float> all(xs);
  all.insert(all.end(), ys.begin(), ys.end());
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    double total = 0; // PyTorch's total norm over both gradients
    for (float v : all)
      total = std::isinf(p) ? std::max(total, double(std::abs(v)))
                            : total + std::pow(std::abs(double(v)), p);
    if (!std::isinf(p))
      total = std::pow(total, 1.0 / p);
    double maxNorm = 2.5, coef = std::min(1.0, maxNorm / (total + 1e-6));
    ClipRun r = clippedStep(
        [&](std::vector<Tensor> &grads) {
          return nn::utils::clip_grad_norm_(grads, maxNorm, p);
        },
        xs, ys);
    EXPECT_NEAR(r.out.at("norm").scalar(), total, 1e-5 * total) << "p " << p;
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(r.w[i], 1.0 - 0.1 * coef * xs[i], 1e-6) << "p " << p;
    for (size_t i = 0; i < ys.size(); ++i)
      EXPECT_NEAR(r.b[i], -1.0 - 0.1 * coef * ys[i], 1e-6) << "p " << p;
  }
  // Below max_norm nothing changes: the plain SGD step.
  ClipRun loose = clippedStep(
      [](std::vector<Tensor> &grads) {
        return nn::utils::clip_grad_norm_(grads, 100.0);
      },
      xs, ys);
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(loose.w[i], 1.0 - 0.1 * xs[i], 1e-6);
}

TEST(Train, ClipGradValueClampsEachGradient) {
  std::vector<float> xs{3, -4, 1, 0.5f, 2, -2}, ys{-1, 6, 0.25f};
  ClipRun r = clippedStep(
      [](std::vector<Tensor> &grads) {
        nn::utils::clip_grad_value_(grads, 1.5);
        return Tensor();
      },
      xs, ys);
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(r.w[i], 1.0 - 0.1 * std::clamp(xs[i], -1.5f, 1.5f), 1e-6);
  for (size_t i = 0; i < ys.size(); ++i)
    EXPECT_NEAR(r.b[i], -1.0 - 0.1 * std::clamp(ys[i], -1.5f, 1.5f), 1e-6);
}

TEST(Train, StepFromGradientsChecksThemAtTheUsersLine) {
  Graph g("bad_grads");
  auto x = g.input("x", {3});
  auto w = g.parameter("w", {3}, Init::full(1.0));
  auto b = g.parameter("b", {2}, Init::full(1.0));
  auto loss = add(sum(w * x, {0}), sum(b, {0}));
  std::vector<Tensor> grads = grad(loss, {w, b});
  optim::SGD sgd({w, b}, {.lr = 0.1});
  unsigned line = 0;
  std::string message =
      errorOf([&] { sgd.step(std::vector<Tensor>{grads[0]}); }, &line);
  EXPECT_EQ(line, __LINE__ - 1u);
  EXPECT_NE(message.find("one gradient per parameter: 2 parameters, 1 "
                         "gradients"),
            std::string::npos)
      << message;
  message = errorOf([&] { sgd.step({grads[1], grads[0]}); });
  EXPECT_NE(message.find("gradient 0 is f32 [2], but parameter 'w' is f32 "
                         "[3]"),
            std::string::npos)
      << message;
  std::vector<Tensor> none;
  EXPECT_NE(errorOf([&] {
              nn::utils::clip_grad_norm_(none, 1.0);
            }).find("needs at least one gradient"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::utils::clip_grad_norm_(grads, 1.0, 0.0);
            }).find("norm_type 0 must be positive"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::utils::clip_grad_norm_(grads, -1.0);
            }).find("max_norm -1 must be a finite number"),
            std::string::npos);
  // Nothing was recorded by the failures: the step still records.
  sgd.step(grads);
}

TEST(Train, NoGradMakesConstantsAutodiffDoesNotDifferentiate) {
  Graph g("no_grad");
  Tensor x = g.input("x", {4});
  Tensor w = g.parameter("w", {4}, Init::full(2.0));
  Tensor frozen;
  EXPECT_TRUE(is_grad_enabled());
  {
    NoGradGuard outer;
    NoGradGuard inner; // guards nest
    EXPECT_FALSE(is_grad_enabled());
    frozen = w * x;
  }
  EXPECT_TRUE(is_grad_enabled());
  // d/dw of sum(w * frozen) with frozen a constant is frozen = 2x; through
  // frozen as well it would be 2wx = 4x.
  Tensor loss = sum(w * frozen, {0});
  std::vector<Tensor> grads = grad(loss, {w});
  g.output("dw", grads[0]);
  CompiledModel m = compile(g, {.policy = "cpu"});
  const std::vector<float> xs{1, -2, 3, 0.5f};
  auto out = m.run({{"x", HostTensor::fromF32({4}, xs)}});
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_FLOAT_EQ(out.at("dw").f32[i], 2 * xs[i]) << i;
}
