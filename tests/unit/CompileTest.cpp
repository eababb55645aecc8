// CompileTest.cpp - locus::compile() on the host: the seed graphs run and
// match double-precision references on random inputs, bad inputs are errors,
// runs are thread-safe, and the user's graph is never changed.

#include "locus/Compile.h"
#include "RandomValues.h"
#include "locus/abi.h"
#include "locus/locus.h"
#include "locus/locus_runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

using namespace locus;

namespace {

/// |got - want| <= atol + rtol * |want|, float32 against double.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i]))
        << "element " << i;
}

// y = x W^T + b, row-major, in double.
std::vector<double> linearRef(const std::vector<double> &x, int rows, int in,
                              const std::vector<float> &w,
                              const std::vector<float> &b, int out) {
  std::vector<double> y(rows * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double acc = b.empty() ? 0 : b[o];
      for (int k = 0; k < in; ++k)
        acc += x[r * in + k] * static_cast<double>(w[o * in + k]);
      y[r * out + o] = acc;
    }
  return y;
}

TEST(Compile, SeedLinearMseMatchesADoubleReference) {
  Graph g("linear_mse");
  auto x = g.input("x", {100, 10});
  auto y = g.input("y", {100, 2});
  nn::Linear fc(g, 10, 2);
  auto pred = fc(x);
  g.output("pred", pred);
  g.output("loss", nn::MSELoss()(pred, y));
  CompiledModel model = compile(g);
  EXPECT_EQ(model.inputNames(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(model.stateNames(),
            (std::vector<std::string>{"linear0.weight", "linear0.bias"}));

  std::vector<float> xs = randomValues(1000, 1), ys = randomValues(200, 2);
  auto out = model.run({{"x", HostTensor::fromF32({100, 10}, xs)},
                        {"y", HostTensor::fromF32({100, 2}, ys)}});

  // The state starts from the graph's own initial values.
  std::vector<float> w = g.initialValue(fc.weight()),
                     b = g.initialValue(fc.bias());
  EXPECT_EQ(model.state("linear0.weight").f32, w);
  std::vector<double> xd(xs.begin(), xs.end());
  std::vector<double> p = linearRef(xd, 100, 10, w, b, 2);
  expectClose(out.at("pred").f32, p);
  double loss = 0;
  for (size_t i = 0; i < p.size(); ++i)
    loss += (p[i] - ys[i]) * (p[i] - ys[i]);
  loss /= p.size();
  EXPECT_NEAR(out.at("loss").scalar(), loss, 1e-5 * loss);
}

TEST(Compile, SeedCnnForwardMatchesADoubleReference) {
  // Seed 004: Conv2d(3, 16, 3, padding 1), ReLU, MaxPool 2, flatten,
  // Linear(16*7*7, 10), CrossEntropy; batch 4 of 3x14x14 images.
  const int N = 4, C = 3, H = 14, O = 16, P = 7, K = 10;
  Graph g("cnn");
  g.manual_seed(7);
  auto x = g.input("x", {N, C, H, H});
  auto labels = g.input("y", {N}, {.dtype = DType::i64});
  nn::Conv2d conv(g, C, O, {3}, {.padding = {1, 1}});
  nn::Linear fc(g, O * P * P, K);
  nn::Sequential net{conv, nn::ReLU(), nn::MaxPool2d({2}), nn::Flatten(), fc};
  auto logits = net(x);
  g.output("logits", logits);
  g.output("loss", nn::CrossEntropyLoss()(logits, labels));
  CompiledModel model = compile(g);

  std::vector<float> xs = randomValues(N * C * H * H, 3);
  std::vector<int64_t> ys{3, 0, 9, 5};
  auto out = model.run({{"x", HostTensor::fromF32({N, C, H, H}, xs)},
                        {"y", HostTensor::fromI64({N}, ys)}});

  std::vector<float> cw = g.initialValue(conv.weight()),
                     cb = g.initialValue(conv.bias()),
                     fw = g.initialValue(fc.weight()),
                     fb = g.initialValue(fc.bias());
  // conv (padding 1) + relu, then 2x2 max pool, in double.
  std::vector<double> act(N * O * H * H), pooled(N * O * P * P);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < H; ++j) {
          double acc = cb[o];
          for (int c = 0; c < C; ++c)
            for (int a = 0; a < 3; ++a)
              for (int bb = 0; bb < 3; ++bb) {
                int yy = i + a - 1, xx = j + bb - 1;
                if (yy >= 0 && yy < H && xx >= 0 && xx < H)
                  acc +=
                      static_cast<double>(xs[((n * C + c) * H + yy) * H + xx]) *
                      cw[((o * C + c) * 3 + a) * 3 + bb];
              }
          act[((n * O + o) * H + i) * H + j] = std::max(acc, 0.0);
        }
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < P; ++i)
        for (int j = 0; j < P; ++j) {
          double m = -INFINITY;
          for (int a = 0; a < 2; ++a)
            for (int bb = 0; bb < 2; ++bb)
              m = std::max(m,
                           act[((n * O + o) * H + 2 * i + a) * H + 2 * j + bb]);
          pooled[((n * O + o) * P + i) * P + j] = m;
        }
  std::vector<double> ref = linearRef(pooled, N, O * P * P, fw, fb, K);
  expectClose(out.at("logits").f32, ref, 1e-4, 1e-5);
  double loss = 0;
  for (int n = 0; n < N; ++n) {
    double mx = -INFINITY, sum = 0;
    for (int k = 0; k < K; ++k)
      mx = std::max(mx, ref[n * K + k]);
    for (int k = 0; k < K; ++k)
      sum += std::exp(ref[n * K + k] - mx);
    loss += -(ref[n * K + ys[n]] - mx - std::log(sum));
  }
  loss /= N;
  EXPECT_NEAR(out.at("loss").scalar(), loss, 1e-4 * std::abs(loss));
}

TEST(Compile, ResidualBlocksMatchADoubleReference) {
  // relu(conv2(relu(conv1(x))) + x), twice, then a strided grouped
  // convolution without bias: the host's convolutions are runtime calls
  // with their ReLU and residual add as epilogues.
  const int N = 2, C = 8, H = 9;
  Graph g("blocks");
  g.manual_seed(11);
  auto x = g.input("x", {N, C, H, H});
  std::vector<nn::Conv2d> convs;
  convs.reserve(4);
  for (int i = 0; i < 4; ++i)
    convs.emplace_back(
        g, C, C, std::vector<int64_t>{3},
        nn::Conv2dOptions{.padding = {1, 1}, .bias = i % 2 == 0});
  nn::Conv2d down(
      g, C, 2 * C, {3},
      {.stride = {2, 2}, .padding = {1, 1}, .groups = 2, .bias = false});
  Tensor h = x;
  for (int b = 0; b < 2; ++b)
    h = relu(add(convs[2 * b + 1](relu(convs[2 * b](h))), h));
  g.output("y", down(h));
  CompiledModel model = compile(g, {.policy = "cpu"});

  std::vector<float> xs = randomValues(N * C * H * H, 12);
  auto out = model.run({{"x", HostTensor::fromF32({N, C, H, H}, xs)}});

  // conv in double: [n, o, i, j] over [cin / groups, 3, 3], stride s.
  auto conv = [&](const std::vector<double> &in, int cin, int cout, int hin,
                  int stride, int groups, const std::vector<float> &w,
                  const std::vector<float> &bias) {
    int hout = (hin + 2 - 3) / stride + 1, cg = cin / groups,
        og = cout / groups;
    std::vector<double> y(N * cout * hout * hout);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < cout; ++o)
        for (int i = 0; i < hout; ++i)
          for (int j = 0; j < hout; ++j) {
            double acc = bias.empty() ? 0.0 : bias[o];
            for (int c = 0; c < cg; ++c)
              for (int a = 0; a < 3; ++a)
                for (int bb = 0; bb < 3; ++bb) {
                  int yy = i * stride + a - 1, xx = j * stride + bb - 1;
                  if (yy >= 0 && yy < hin && xx >= 0 && xx < hin)
                    acc += in[((n * cin + o / og * cg + c) * hin + yy) * hin +
                              xx] *
                           w[((o * cg + c) * 3 + a) * 3 + bb];
                }
            y[((n * cout + o) * hout + i) * hout + j] = acc;
          }
    return y;
  };
  auto params = [&](const nn::Conv2d &c, bool bias) {
    return std::make_pair(g.initialValue(c.weight()),
                          bias ? g.initialValue(c.bias())
                               : std::vector<float>{});
  };
  std::vector<double> hd(xs.begin(), xs.end());
  for (int b = 0; b < 2; ++b) {
    auto [w1, b1] = params(convs[2 * b], true);
    auto [w2, b2] = params(convs[2 * b + 1], false);
    std::vector<double> t = conv(hd, C, C, H, 1, 1, w1, b1);
    for (double &v : t)
      v = std::max(v, 0.0);
    t = conv(t, C, C, H, 1, 1, w2, b2);
    for (size_t i = 0; i < t.size(); ++i)
      hd[i] = std::max(t[i] + hd[i], 0.0);
  }
  auto [wd, bd] = params(down, false);
  expectClose(out.at("y").f32, conv(hd, C, 2 * C, H, 2, 2, wd, bd), 1e-4, 1e-5);
}

TEST(Compile, StepsTouchNoFreshMemoryAfterWarmUp) {
  // Every temporary of a step (convolution workspaces, kernel buffers)
  // comes back from the first steps' memory: after two warm-up steps, ten
  // more take no page fault (a fresh mapping faults once per page; the
  // ResNet block at batch 8 used to take 106,000 per step). Inference and a
  // training step, with convolutions, products and pooling large enough for
  // malloc to map their buffers.
  auto faults = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
  };
  auto check = [&](Graph &g, const std::map<std::string, HostTensor> &in,
                   const char *what) {
    // Freshly compiled: a model taken from the compile cache took 1 to 27
    // faults over these ten steps here (not explained yet).
    CompiledModel model = compile(g, {.policy = "cpu", .cache = false});
    for (int i = 0; i < 2; ++i)
      model.run(in);
    long before = faults();
    for (int i = 0; i < 10; ++i)
      model.run(in);
    EXPECT_EQ(faults() - before, 0) << what;
  };
  {
    const int N = 4, C = 32, H = 28;
    Graph g("blocks");
    auto x = g.input("x", {N, C, H, H});
    nn::Conv2d c1(g, C, C, {3}, {.padding = {1, 1}}),
        c2(g, C, C, {3}, {.padding = {1, 1}});
    auto h = relu(add(c2(relu(c1(x))), x));
    g.output("y", nn::Linear(g, C * 14 * 14,
                             10)(nn::Flatten()(nn::MaxPool2d({2})(h))));
    check(g,
          {{"x", HostTensor::fromF32({N, C, H, H},
                                     randomValues(N * C * H * H, 21))}},
          "inference");
  }
  {
    const int N = 16, C = 3, H = 28, O = 32;
    Graph g("train");
    auto x = g.input("x", {N, C, H, H});
    auto y = g.input("y", {N}, {.dtype = DType::i64});
    nn::Sequential net{nn::Conv2d(g, C, O, {3}, {.padding = {1, 1}}),
                       nn::ReLU(), nn::MaxPool2d({2}), nn::Flatten(),
                       nn::Linear(g, O * 14 * 14, 10)};
    auto optimizer = optim::Adam(net.parameters(), {.lr = 1e-3});
    auto loss = nn::CrossEntropyLoss()(net(x), y);
    g.output("loss", loss);
    optimizer.step(loss);
    std::vector<int64_t> labels(N);
    for (int i = 0; i < N; ++i)
      labels[i] = i % 10;
    check(g,
          {{"x",
            HostTensor::fromF32({N, C, H, H}, randomValues(N * C * H * H, 22))},
           {"y", HostTensor::fromI64({N}, labels)}},
          "training step");
  }
}

TEST(Compile, KeptWeightLayoutsFollowStateWrites) {
  // Weights no step writes are packed into oneDNN's layouts once and kept
  // (runtime constants.h): a convolution's and a product's large enough
  // for oneDNN. After the user writes state (set, or a state dict loaded)
  // the next run uses the new values: exactly what a model that had them
  // from its first run computes.
  auto build = [](Graph &g) {
    g.manual_seed(21);
    auto x = g.input("x", {8, 4, 10, 10});
    nn::Conv2d conv(g, 4, 16, {3}, {.padding = {1, 1}});
    nn::Linear fc(g, 16 * 10 * 10, 32);
    g.output("y", fc(flatten(relu(conv(x)))));
  };
  Graph g("kept"), h("fresh");
  build(g);
  build(h);
  CompiledModel model = compile(g, {.policy = "cpu"});
  std::map<std::string, HostTensor> inputs = {
      {"x", HostTensor::fromF32({8, 4, 10, 10}, randomValues(3200, 22))}};
  std::vector<float> before = model.run(inputs).at("y").f32;
  EXPECT_EQ(model.run(inputs).at("y").f32, before);

  int seed = 30;
  auto newState = [&] {
    std::map<std::string, HostTensor> dict;
    for (const std::string &name : model.stateNames()) {
      const HostTensor &old = model.state(name);
      dict[name] = HostTensor::fromF32(
          old.shape, randomValues(static_cast<size_t>(old.numel()), ++seed));
    }
    return dict;
  };
  auto expectAsFresh = [&](const std::map<std::string, HostTensor> &dict) {
    std::vector<float> got = model.run(inputs).at("y").f32;
    CompiledModel fresh = compile(h, {.policy = "cpu"});
    fresh.load_state_dict(dict);
    EXPECT_EQ(got, fresh.run(inputs).at("y").f32);
    EXPECT_NE(got, before);
    before = got;
  };
  auto set = newState();
  for (const auto &[name, value] : set)
    model.setState(name, value);
  expectAsFresh(set);
  auto loaded = newState();
  model.load_state_dict(loaded);
  expectAsFresh(loaded);
}

TEST(Compile, NumbersOnTheLeftOfOperators) {
  Graph g("left");
  auto x = g.input("x", {3});
  g.output("sub", 1.0f - x);
  g.output("mul", 2.0f * x);
  g.output("div", 6.0f / x);
  g.output("add", 0.5f + x);
  CompiledModel m = compile(g, {.policy = "cpu"});
  auto out = m.run({{"x", HostTensor::fromF32({3}, {1, 2, 4})}});
  EXPECT_EQ(out.at("sub").f32, (std::vector<float>{0, -1, -3}));
  EXPECT_EQ(out.at("mul").f32, (std::vector<float>{2, 4, 8}));
  EXPECT_EQ(out.at("div").f32, (std::vector<float>{6, 3, 1.5f}));
  EXPECT_EQ(out.at("add").f32, (std::vector<float>{1.5f, 2.5f, 4.5f}));
  EXPECT_EQ(
      m.run({{"x", HostTensor::fromF32({3}, {1, 1, 1})}}).at("mul").f32.front(),
      2.0f);
  Graph one("item");
  auto s = one.input("s", {});
  one.output("t", 3.0f * s);
  EXPECT_EQ(compile(one, {.policy = "cpu"})
                .run({{"s", HostTensor::fromF32({}, {2})}})
                .at("t")
                .item(),
            6.0f);
}

TEST(Compile, IntegerAndMaskInputsAndOutputsRoundTrip) {
  // i32 ids pick embedding rows and come back widened; an i1 mask chooses;
  // i64 -> i32 wraps as PyTorch's .int() does. An id outside the table is
  // an error at the embedding's line.
  Graph g("ints");
  auto ids = g.input("ids", {4}, {.dtype = DType::i32});
  auto mask = g.input("mask", {4}, {.dtype = DType::i1});
  auto wide = g.input("wide", {2}, {.dtype = DType::i64});
  auto table = g.constant({3, 2}, {10, 11, 20, 21, 30, 31});
  const int embeddingLine = __LINE__ + 1;
  auto rows = sum(embedding(ids, table), {1});
  g.output("picked", where(mask, rows, neg(rows)));
  g.output("ids_plus", cast(cast(ids, DType::i64), DType::i32));
  g.output("narrow", cast(wide, DType::i32));
  g.output("mask_out", mask);
  CompiledModel model = compile(g);
  auto out = model.run(
      {{"ids", HostTensor::fromI32({4}, {2, 0, 1, 2})},
       {"mask", HostTensor::fromBool({4}, {1, 0, 5, 0})},
       {"wide", HostTensor::fromI64({2}, {(int64_t{1} << 32) + 5, -3})}});
  EXPECT_EQ(out.at("picked").f32, (std::vector<float>{61, -21, 41, -61}));
  EXPECT_EQ(out.at("ids_plus").dtype, DType::i32);
  EXPECT_EQ(out.at("ids_plus").i64, (std::vector<int64_t>{2, 0, 1, 2}));
  try {
    model.run({{"ids", HostTensor::fromI32({4}, {2, 0, 1, -7})},
               {"mask", HostTensor::fromBool({4}, {0, 0, 0, 0})},
               {"wide", HostTensor::fromI64({2}, {0, 0})}});
    ADD_FAILURE() << "an id outside the table";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "CompileTest.cpp:" + std::to_string(embeddingLine) +
                  ": indices outside [0, 3) (1 found)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(out.at("narrow").i64, (std::vector<int64_t>{5, -3}));
  EXPECT_EQ(out.at("mask_out").i64, (std::vector<int64_t>{1, 0, 1, 0}));
  try {
    model.run({{"ids", HostTensor::fromI64({4}, {0, 0, 0, 0})},
               {"mask", HostTensor::fromBool({4}, {0, 0, 0, 0})},
               {"wide", HostTensor::fromI64({2}, {0, 0})}});
    ADD_FAILURE() << "an i64 tensor fed to an i32 input";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "input 'ids' is [4] i64 but the graph takes [4] i32"),
              std::string::npos)
        << e.what();
  }
  HostTensor tooBig = HostTensor::fromI32({4}, {0, 0, 0, 0});
  tooBig.i64[1] = int64_t{1} << 40;
  try {
    model.run({{"ids", tooBig},
               {"mask", HostTensor::fromBool({4}, {0, 0, 0, 0})},
               {"wide", HostTensor::fromI64({2}, {0, 0})}});
    ADD_FAILURE() << "an i32 value out of range";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find("out of its range"), std::string::npos)
        << e.what();
  }
}

TEST(Compile, StateDictsMoveTrainedStateToAnEvalGraph) {
  // Training: BatchNorm1d's statistics and the linear weights change, and
  // Adam adds moments. Eval: the same layers, no optimizer.
  auto layers = [](Graph &g, bool training) {
    auto x = g.input("x", {4, 3});
    nn::Linear fc(g, 3, 2, {.name = "fc"});
    nn::BatchNorm1d bn(g, 2, {.name = "bn"});
    bn.train(training);
    auto y = bn(fc(x));
    return std::make_pair(y, fc.parameters());
  };
  Graph train("train");
  auto [y, params] = layers(train, true);
  auto loss = sum(mul(y, y), {0, 1});
  train.output("loss", loss);
  optim::Adam(params, {.lr = 0.1}).step(loss);
  CompiledModel trainer = compile(train);
  HostTensor x =
      HostTensor::fromF32({4, 3}, {1, 2, 3, -1, 0, 2, 4, 1, -2, 0.5f, 0.5f, 1});
  for (int i = 0; i < 3; ++i)
    trainer.run({{"x", x}});

  Graph eval("eval");
  eval.output("y", layers(eval, false).first);
  CompiledModel predictor = compile(eval);
  auto trained = trainer.state_dict();
  EXPECT_GT(trained.size(), predictor.stateNames().size()); // moments
  try {
    predictor.load_state_dict(trained);
    ADD_FAILURE() << "strict loading of a dict with optimizer moments";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find("missing state: none; unexpected: "),
              std::string::npos)
        << e.what();
  }
  auto keys = predictor.load_state_dict(trained, /*strict=*/false);
  EXPECT_TRUE(keys.missing.empty());
  EXPECT_EQ(keys.unexpected.size(),
            trained.size() - predictor.stateNames().size());
  for (const std::string &name : predictor.stateNames())
    EXPECT_EQ(predictor.state(name).f32, trained.at(name).f32) << name;
  EXPECT_NE(trained.at("bn.running_mean").f32,
            (std::vector<float>{0.0f, 0.0f}));

  // A wrong shape anywhere: an error, and nothing is written.
  auto before = predictor.state_dict();
  auto bad = trained;
  bad.at("fc.weight").f32.assign(6, 7.0f);
  bad.at("bn.running_var") = HostTensor::fromF32({3}, {1, 1, 1});
  EXPECT_THROW(predictor.load_state_dict(bad, /*strict=*/false), RunError);
  for (const auto &[name, value] : predictor.state_dict())
    EXPECT_EQ(value.f32, before.at(name).f32) << name;
}

// One recording in training mode (dropout, BatchNorm with running
// statistics, SGD) compiles for training and, with `eval`, for evaluation:
// the evaluation model gives what the same layers recorded after eval()
// give, writes no state, draws no dropout mask, and runs no backward pass.
TEST(Compile, OneRecordingCompilesForTrainingAndForEvaluation) {
  auto layers = [](Graph &g, bool training) {
    auto x = g.input("x", {4, 3});
    nn::Linear fc(g, 3, 2, {.name = "fc"});
    nn::BatchNorm1d bn(g, 2, {.name = "bn"});
    nn::Dropout drop(0.5);
    bn.train(training);
    drop.train(training);
    auto y = drop(bn(fc(x)));
    return std::make_pair(y, fc.parameters());
  };
  Graph g("step");
  auto [y, params] = layers(g, true);
  g.output("y", y);
  auto loss = sum(mul(y, y), {0, 1});
  g.output("loss", loss);
  optim::SGD(params, {.lr = 0.1}).step(loss);
  CompiledModel trainer = compile(g);
  CompiledModel evaluator = compile(g, {.eval = true});
  HostTensor x =
      HostTensor::fromF32({4, 3}, {1, 2, 3, -1, 0, 2, 4, 1, -2, 0.5f, 0.5f, 1});
  for (int i = 0; i < 3; ++i)
    trainer.run({{"x", x}});
  auto keys = evaluator.load_state_dict(trainer.state_dict(), /*strict=*/false);
  EXPECT_TRUE(keys.missing.empty());

  // The same layers recorded in evaluation mode, the old way.
  Graph eval("eval");
  eval.output("y", layers(eval, false).first);
  CompiledModel reference = compile(eval);
  reference.load_state_dict(trainer.state_dict(), /*strict=*/false);
  auto want = reference.run({{"x", x}}).at("y").f32;
  auto before = evaluator.state_dict();
  RunStats evaluated, referenced, trained;
  auto first = evaluator.run({{"x", x}}, &evaluated);
  auto second = evaluator.run({{"x", x}});
  reference.run({{"x", x}}, &referenced);
  ASSERT_EQ(first.at("y").f32.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(first.at("y").f32[i], want[i], 1e-6f * (1 + std::abs(want[i])))
        << i;
  EXPECT_EQ(second.at("y").f32, first.at("y").f32) << "no dropout mask";
  for (const auto &[name, value] : evaluator.state_dict())
    EXPECT_EQ(value.f32, before.at(name).f32) << name << " was written";
  // y and the loss (its product and its sum), nothing more: no backward
  // pass, no update.
  EXPECT_LE(evaluated.launches, referenced.launches + 2);

  // The training model is unchanged by what evaluation needs: its next
  // step still trains (the running mean moves), and it launches more.
  auto runningMean = trainer.state("bn.running_mean").f32;
  trainer.run({{"x", x}}, &trained);
  EXPECT_GT(trained.launches, evaluated.launches);
  EXPECT_NE(trainer.state("bn.running_mean").f32, runningMean);
}

// TrainEvalModel: train() / eval() switch which compiled step run() runs,
// on one state. Evaluation sees what training last wrote (checked against
// an evaluation model loaded by hand after every switch), and state set
// on the pair reaches both; a pair of two graphs is refused.
TEST(Compile, TrainEvalModelSwitchesModesOnOneState) {
  Graph g("switch");
  auto x = g.input("x", {4, 3});
  nn::Linear fc(g, 3, 2, {.name = "fc"});
  nn::BatchNorm1d bn(g, 2, {.name = "bn"});
  nn::Dropout drop(0.5);
  auto y = drop(bn(fc(x)));
  g.output("y", y);
  auto loss = sum(mul(y, y), {0, 1});
  g.output("loss", loss);
  optim::SGD(fc.parameters(), {.lr = 0.1, .momentum = 0.9}).step(loss);
  TrainEvalModel model = compileTrainEval(g);
  CompiledModel byHand = compile(g, {.eval = true});
  HostTensor xs =
      HostTensor::fromF32({4, 3}, {1, 2, 3, -1, 0, 2, 4, 1, -2, 0.5f, 0.5f, 1});
  auto evaluateByHand = [&] {
    byHand.load_state_dict(model.state_dict(), /*strict=*/false);
    return byHand.run({{"x", xs}}).at("y").f32;
  };
  EXPECT_TRUE(model.is_training());
  std::vector<float> previous;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    model.train();
    for (int i = 0; i < 2; ++i)
      model.run({{"x", xs}});
    model.eval();
    EXPECT_FALSE(model.is_training());
    auto got = model.run({{"x", xs}}).at("y").f32;
    EXPECT_EQ(got, evaluateByHand());
    EXPECT_EQ(model.run({{"x", xs}}).at("y").f32, got) << "no dropout";
    EXPECT_NE(got, previous) << "evaluation saw the new weights";
    previous = got;
  }
  // State set on the pair is the training model's, and evaluation's next.
  model.setState("fc.bias", HostTensor::fromF32({2}, {3.0f, -3.0f}));
  auto got = model.run({{"x", xs}}).at("y").f32;
  EXPECT_EQ(got, evaluateByHand());
  EXPECT_NE(got, previous);
  EXPECT_EQ(model.trainingModel().state("fc.bias").f32,
            (std::vector<float>{3.0f, -3.0f}));

  Graph other("other");
  auto z = other.input("x", {4, 3});
  nn::Linear wide(other, 3, 5, {.name = "fc"});
  other.output("y", wide(z));
  try {
    TrainEvalModel mixed(compile(g), compile(other, {.eval = true}));
    ADD_FAILURE() << "a pair of two graphs was taken";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "differs between the training and the evaluation model: "
                  "compile both from one graph"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(compileTrainEval(g, {.eval = true}), Error);
}

TEST(Compile, BadInputsAreErrorsThatSayWhat) {
  Graph g("errors");
  auto x = g.input("x", {2, 3});
  g.output("y", relu(x));
  CompiledModel model = compile(g);
  auto expectError = [&](const std::map<std::string, HostTensor> &inputs,
                         const std::string &needle) {
    try {
      model.run(inputs);
      ADD_FAILURE() << "expected an error containing: " << needle;
    } catch (const RunError &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << e.what();
    }
  };
  expectError({}, "missing input 'x' of shape [2, 3]");
  expectError({{"x", HostTensor::fromF32({3, 2}, std::vector<float>(6))}},
              "input 'x' is [3, 2] f32 but the graph takes [2, 3] f32");
  expectError({{"x", HostTensor::fromI64({2, 3}, std::vector<int64_t>(6))}},
              "is [2, 3] i64 but the graph takes [2, 3] f32");
  expectError({{"x", HostTensor::fromF32({2, 3}, std::vector<float>(5))}},
              "has 5 values for shape [2, 3]");
  expectError({{"x", HostTensor::fromF32({2, 3}, std::vector<float>(6))},
               {"z", HostTensor::fromF32({1}, {1})}},
              "unknown input 'z' (inputs: x)");
  EXPECT_THROW(model.state("w"), RunError);

  Graph empty("empty");
  empty.input("x", {2});
  try {
    compile(empty);
    ADD_FAILURE();
  } catch (const Error &e) {
    EXPECT_NE(e.message().find("has no output"), std::string::npos);
    EXPECT_NE(e.file().find("CompileTest.cpp"), std::string::npos);
  }
}

TEST(Compile, ZeroSizedValuesInsideAGraphRun) {
  Graph g("empty_dims");
  auto x = g.input("x", {3, 4});
  auto a = slice(x, 1, 0, 0);                   // [3, 0]
  auto b = slice(x, 0, 0, 0);                   // [0, 4]
  g.output("product", matmul(a, b) + 1.0f);     // K = 0: all ones
  g.output("sum", sum(slice(x, 0, 1, 1), {0})); // over an empty axis: zeros
  CompiledModel model = compile(g);
  auto out =
      model.run({{"x", HostTensor::fromF32({3, 4}, randomValues(12, 9))}});
  EXPECT_EQ(out.at("product").f32, std::vector<float>(12, 1.0f));
  EXPECT_EQ(out.at("sum").f32, std::vector<float>(4, 0.0f));
}

TEST(Compile, ZeroSizedInputsAreAnErrorAtTheirLine) {
  Graph g("empty_input");
  int line = __LINE__ + 1;
  auto e = g.input("e", {2, 0});
  g.output("y", sum(e, {1}));
  try {
    compile(g);
    ADD_FAILURE() << "expected an error";
  } catch (const Error &err) {
    EXPECT_EQ(err.line(), static_cast<unsigned>(line)) << err.what();
    EXPECT_NE(err.message().find("'locus.input' has the zero-size shape "
                                 "[2, 0]; the host JIT does not yet take or "
                                 "return empty tensors"),
              std::string::npos)
        << err.what();
  }
}

TEST(Compile, TheGraphIsNotChanged) {
  Graph g("unchanged");
  auto x = g.input("x", {4});
  g.output("y", exp(x) * 2.0f);
  std::string before = g.str({.locations = true});
  compile(g, {.policy = "prefer-gpu"});
  EXPECT_EQ(g.str({.locations = true}), before);
}

TEST(Compile, RunsFromSeveralThreadsAtOnce) {
  Graph g("threads");
  auto x = g.input("x", {64, 32});
  nn::Linear a(g, 32, 64), b(g, 64, 8);
  g.output("y", b(tanh(a(x))));
  CompiledModel model = compile(g);
  const int threads = 4, runs = 25;
  std::vector<std::vector<float>> inputs, expected;
  for (int t = 0; t < threads; ++t) {
    inputs.push_back(randomValues(64 * 32, 100 + t));
    expected.push_back(
        model.run({{"x", HostTensor::fromF32({64, 32}, inputs[t])}})
            .at("y")
            .f32);
  }
  std::vector<int> mismatches(threads, 0);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < runs; ++r) {
        auto out = model.run({{"x", HostTensor::fromF32({64, 32}, inputs[t])}});
        mismatches[t] += out.at("y").f32 != expected[t];
      }
    });
  for (std::thread &th : pool)
    th.join();
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

} // namespace

namespace {

/// The sections of the artifact at `path`, by kind.
std::map<int, std::string> sectionsOf(const std::string &path) {
  std::map<int, std::string> out;
  locus_artifact_t *loaded = nullptr;
  EXPECT_EQ(locus_artifact_load(path.c_str(), &loaded), nullptr);
  for (int kind = LOCUS_SECTION_GRAPH; kind <= LOCUS_SECTION_STATE; ++kind) {
    const void *data = nullptr;
    size_t size = 0;
    if (locus_status_t s = locus_artifact_section(
            loaded, static_cast<locus_section_kind_t>(kind), &data, &size)) {
      locus_status_free(s);
      continue;
    }
    out[kind] = std::string(static_cast<const char *>(data), size);
  }
  locus_artifact_release(loaded);
  return out;
}

/// Writes an artifact of `sections` to `path`, checksummed as a real one:
/// what a hostile file could hold.
void writeSections(const std::map<int, std::string> &sections,
                   const std::string &path) {
  std::vector<locus_section_t> list;
  list.reserve(sections.size());
  for (const auto &[kind, bytes] : sections)
    list.push_back(
        {static_cast<locus_section_kind_t>(kind), bytes.data(), bytes.size()});
  EXPECT_EQ(locus_artifact_write(path.c_str(), locus_host_arch(), list.data(),
                                 list.size()),
            nullptr);
}

/// Loads an artifact of `sections` written to `path`; "" when it loads,
/// else the status message.
std::string loadSections(const std::map<int, std::string> &sections,
                         const std::string &path) {
  writeSections(sections, path);
  locus_model_t *model = nullptr;
  locus_status_t s = locus_model_load(path.c_str(), nullptr, &model);
  if (!s) {
    locus_model_release(model);
    return "";
  }
  std::string message = locus_status_message(s);
  locus_status_free(s);
  EXPECT_EQ(model, nullptr);
  return message;
}

/// `artifact` with the plan's kernel symbol `from` renamed `to` (the plan
/// stores it as a u32 length and the bytes), written beside it.
std::string renameKernel(const std::string &artifact, const std::string &from,
                         const std::string &to) {
  auto lengthPrefixed = [](const std::string &name) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i)
      s[i] = static_cast<char>(name.size() >> (8 * i));
    return s + name;
  };
  std::map<int, std::string> sections = sectionsOf(artifact);
  std::string &plan = sections[LOCUS_SECTION_PLAN];
  size_t at = plan.find(lengthPrefixed(from));
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos)
    plan.replace(at, 4 + from.size(), lengthPrefixed(to));
  std::string out = artifact + ".renamed";
  writeSections(sections, out);
  return out;
}

/// Loads `hostile` (then removes it), which must be refused as DATA_LOSS
/// with `message` and no model.
void expectDamaged(const std::string &hostile, const std::string &message) {
  locus_model_t *loaded = nullptr;
  locus_status_t s = locus_model_load(hostile.c_str(), nullptr, &loaded);
  std::remove(hostile.c_str());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_DATA_LOSS);
  EXPECT_EQ(std::string(locus_status_message(s)), message);
  locus_status_free(s);
  EXPECT_EQ(loaded, nullptr);
}

} // namespace

// A plan may name only functions of its own host code as kernels: a data
// symbol (called, it crashed the process) or a function outside the code
// (libc's) is refused at load, though the checksum is valid.
TEST(Compile, AnArtifactRunsOnlyItsOwnFunctionsAsKernels) {
  Graph g("own");
  auto x = g.input("x", {4});
  g.output("y", relu(x));
  CompiledModel model = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  std::string path = ::testing::TempDir() + "locus-own-kernels.locus";
  model.save(path);
  locus_model_t *ok = nullptr;
  ASSERT_EQ(locus_model_load(path.c_str(), nullptr, &ok), nullptr);
  locus_model_release(ok);
  const std::string kernel = "__locus_kernel_own_k0_relu";
  // A data symbol of the host code, and a libc function (the host code
  // links no library, so dlsym does not reach libc through it).
  struct Case {
    std::string target, message;
  } cases[] = {
      {LOCUS_ABI_CPU_FEATURES_SYMBOL,
       "the plan names " LOCUS_ABI_CPU_FEATURES_SYMBOL
       " as a kernel, which is no function of the host code"},
      {"abort", "the host code has no kernel abort"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.target);
    expectDamaged(renameKernel(path, kernel, c.target), c.message);
  }
  std::remove(path.c_str());
}

// Every import slot of the host code is filled at load: a plan that lists
// another runtime function in place of one the code calls (the artifact
// fuzzer's find: a GPU artifact's plan naming locus_cuda_free twice, so
// that locus_host_free's slot stayed empty and the first step called
// address 0) is refused, though the checksum is valid.
TEST(Compile, EveryImportSlotOfTheHostCodeIsFilled) {
  Graph g("imports");
  auto x = g.input("x", {64, 32});
  nn::Linear fc(g, 32, 64);
  g.output("y", fc(x));
  CompiledModel model = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  std::string path = ::testing::TempDir() + "locus-imports.locus";
  model.save(path);
  expectDamaged(renameKernel(path, LOCUS_ABI_SGEMM, LOCUS_ABI_CUDA_FREE),
                "the host code calls " LOCUS_ABI_SGEMM
                ", which the plan does not list among its imports");
  std::remove(path.c_str());
}

namespace {

/// The file offset of the first defined global function in the dynamic
/// symbol table of ELF `code` (0 when there is none).
size_t definedFunction(const std::string &code) {
  Elf64_Ehdr header;
  std::memcpy(&header, code.data(), sizeof header);
  std::vector<Elf64_Phdr> loads;
  uint64_t symtab = 0, strtab = 0;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr p;
    std::memcpy(&p, code.data() + header.e_phoff + i * sizeof p, sizeof p);
    if (p.p_type == PT_LOAD)
      loads.push_back(p);
    if (p.p_type != PT_DYNAMIC)
      continue;
    for (size_t at = 0; at < p.p_filesz; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, code.data() + p.p_offset + at, sizeof d);
      if (d.d_tag == DT_SYMTAB)
        symtab = d.d_un.d_ptr;
      if (d.d_tag == DT_STRTAB)
        strtab = d.d_un.d_ptr;
    }
  }
  auto offsetOf = [&](uint64_t address) -> size_t {
    for (const Elf64_Phdr &p : loads)
      if (address >= p.p_vaddr && address < p.p_vaddr + p.p_filesz)
        return address - p.p_vaddr + p.p_offset;
    return 0;
  };
  size_t first = offsetOf(symtab), end = offsetOf(strtab);
  for (size_t at = first; first && at + sizeof(Elf64_Sym) <= end;
       at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, code.data() + at, sizeof sym);
    if (sym.st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym.st_info) == STT_FUNC &&
        ELF64_ST_BIND(sym.st_info) == STB_GLOBAL)
      return at;
  }
  return 0;
}

} // namespace

// The host code's ELF structure is checked before the system loader sees
// it. Random damage to its headers (which used to kill the process inside
// dlopen in about half the cases) is refused or loads, never crashes; a
// library it needs or code it runs when loaded (a constructor) is refused,
// with a valid checksum.
TEST(Compile, HostCodeIsCheckedBeforeTheSystemLoaderSeesIt) {
  Graph g("elf");
  auto x = g.input("x", {4});
  g.output("y", relu(x));
  CompiledModel model = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  std::string path = ::testing::TempDir() + "locus-elf.locus";
  model.save(path);
  std::map<int, std::string> sections = sectionsOf(path);
  const std::string code = sections.at(LOCUS_SECTION_HOST_CODE);
  std::string out = path + ".damaged";
  EXPECT_EQ(loadSections(sections, out), "");

  Elf64_Ehdr header;
  std::memcpy(&header, code.data(), sizeof header);
  size_t headers = header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr);
  ASSERT_LE(headers, code.size());
  std::mt19937 rng(20261124);
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = code;
    int flips = 1 + trial % 3;
    for (int f = 0; f < flips; ++f)
      damaged[rng() % headers] ^= static_cast<char>(1 + rng() % 255);
    sections[LOCUS_SECTION_HOST_CODE] = damaged;
    refused += !loadSections(sections, out).empty();
  }
  EXPECT_GT(refused, 150) << "of 300";

  // The dynamic section's SONAME entry turned into DT_NEEDED, then DT_INIT.
  Elf64_Phdr dynamic{};
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr p;
    std::memcpy(&p, code.data() + header.e_phoff + i * sizeof p, sizeof p);
    if (p.p_type == PT_DYNAMIC)
      dynamic = p;
  }
  ASSERT_GT(dynamic.p_filesz, 0u);
  size_t soname = 0;
  for (size_t at = 0; at < dynamic.p_filesz; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, code.data() + dynamic.p_offset + at, sizeof d);
    if (d.d_tag == DT_SONAME)
      soname = dynamic.p_offset + at;
  }
  ASSERT_NE(soname, 0u);
  for (auto [tag, message] :
       {std::pair<int64_t, std::string>{DT_NEEDED, "it needs another library"},
        std::pair<int64_t, std::string>{DT_INIT, "it runs code when loaded"}}) {
    std::string changed = code;
    std::memcpy(changed.data() + soname, &tag, sizeof tag);
    sections[LOCUS_SECTION_HOST_CODE] = changed;
    EXPECT_EQ(loadSections(sections, out),
              "the host code is not a shared object Locus made: " + message);
  }
  // What the fuzzer found the system loader trusting: a relocation entry
  // size it asserts on, and a loadable segment it cannot read.
  size_t relaent = 0;
  for (size_t at = 0; at < dynamic.p_filesz; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d;
    std::memcpy(&d, code.data() + dynamic.p_offset + at, sizeof d);
    if (d.d_tag == DT_RELAENT)
      relaent = dynamic.p_offset + at + offsetof(Elf64_Dyn, d_un);
  }
  ASSERT_NE(relaent, 0u);
  std::string changed = code;
  changed[relaent] = 16;
  sections[LOCUS_SECTION_HOST_CODE] = changed;
  EXPECT_EQ(loadSections(sections, out),
            "the host code is not a shared object Locus made: a dynamic "
            "entry Locus's linker does not write");
  changed = code;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    size_t at = header.e_phoff + i * sizeof(Elf64_Phdr);
    Elf64_Phdr p;
    std::memcpy(&p, code.data() + at, sizeof p);
    if (p.p_type == PT_LOAD) {
      p.p_flags &= ~uint32_t{PF_R};
      std::memcpy(changed.data() + at, &p, sizeof p);
      break;
    }
  }
  sections[LOCUS_SECTION_HOST_CODE] = changed;
  EXPECT_EQ(loadSections(sections, out),
            "the host code is not a shared object Locus made: a loadable "
            "segment that is not readable, or writable code");
  // A defined function turned into an IFUNC (whose "resolver" the system
  // loader would run at the first lookup, inside the load), a TLS symbol,
  // a GNU-unique one: refused before dlopen.
  size_t symbol = definedFunction(code);
  ASSERT_NE(symbol, 0u);
  for (unsigned char info :
       {static_cast<unsigned char>(ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC)),
        static_cast<unsigned char>(ELF64_ST_INFO(STB_GLOBAL, STT_TLS)),
        static_cast<unsigned char>(ELF64_ST_INFO(STB_GNU_UNIQUE, STT_FUNC))}) {
    changed = code;
    changed[symbol + offsetof(Elf64_Sym, st_info)] = static_cast<char>(info);
    sections[LOCUS_SECTION_HOST_CODE] = changed;
    EXPECT_EQ(loadSections(sections, out),
              "the host code is not a shared object Locus made: an IFUNC, "
              "TLS or GNU-unique symbol");
  }
  // The object's name (DT_SONAME) made a library's: the system loader
  // hands a loaded object to any later dlopen() of its soname, so this
  // code would stand in for cuDNN when the runtime looks for it (and the
  // runtime calls what it finds there). Only Locus's own name loads.
  size_t name = code.find(std::string("locus-host-code") + '\0');
  ASSERT_NE(name, std::string::npos);
  changed = code;
  changed.replace(name, 16, std::string("libcudnn.so.9\0\0\0", 16));
  sections[LOCUS_SECTION_HOST_CODE] = changed;
  {
    writeSections(sections, out);
    locus_model_t *model = nullptr;
    locus_status_t s = locus_model_load(out.c_str(), nullptr, &model);
    std::string message = s ? locus_status_message(s) : "";
    void *lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
    bool hijacked = lib != nullptr;

    if (lib)
      dlclose(lib);
    locus_status_free(s);
    locus_model_release(model);
    EXPECT_FALSE(hijacked) << "dlopen(\"libcudnn.so.9\") found the artifact";
    EXPECT_EQ(message, "the host code is not a shared object Locus made: a "
                       "shared-object name other than locus-host-code");
  }
  std::remove(out.c_str());
  std::remove(path.c_str());
}

// The host code carries each kernel's signature: the buffers it takes and
// their sizes. A plan that launches a kernel with other buffers than it was
// compiled for (smaller ones it would write past, fewer than it reads) is
// refused at load, though the checksum is valid.
TEST(Compile, EveryLaunchIsCheckedAgainstItsKernelsSignature) {
  Graph g("sig");
  auto a = g.input("a", {4});
  auto b = g.input("b", {8});
  auto c = g.input("c", {8});
  g.output("y", relu(a));
  g.output("z", b * c);
  g.output("w", relu(c));
  CompiledModel model = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  std::string path = ::testing::TempDir() + "locus-signature.locus";
  model.save(path);
  std::string plan = sectionsOf(path).at(LOCUS_SECTION_PLAN);
  const std::string relu = "__locus_kernel_sig_k0_relu",
                    mul = "__locus_kernel_sig_k1_mul",
                    relu8 = "__locus_kernel_sig_k2_relu";
  for (const std::string &name : {relu, mul, relu8})
    ASSERT_NE(plan.find(name), std::string::npos) << name << " renamed?";
  struct Case {
    std::string from, to, message;
  } cases[] = {
      // relu's launch (a and y, 16 bytes each) names mul's code, which
      // takes three buffers.
      {relu, mul,
       "the plan launches " + mul +
           " with 2 buffers; its code "
           "takes 3"},
      // relu's launch names the relu of 8 floats, which would read and
      // write 32 bytes of 16-byte buffers.
      {relu, relu8,
       "the plan gives " + relu8 +
           " buffer 0 of 16 bytes as "
           "its argument 0; its code takes 32 bytes there"},
  };
  for (const Case &k : cases)
    expectDamaged(renameKernel(path, k.from, k.to), k.message);
  std::remove(path.c_str());
}

// With trusted keys, a model loads only from an artifact one of them signed,
// and the signature is checked first: host code that the ELF checks would
// refuse is never looked at, because the changed file is refused for its
// signature.
TEST(Compile, TrustedKeysLoadOnlyWhatTheySigned) {
  Graph g("signed");
  auto x = g.input("x", {4});
  g.output("y", relu(x));
  CompiledModel model = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  std::string dir = ::testing::TempDir(), key = dir + "locus-builder";
  std::remove((key + ".key").c_str());
  std::remove((key + ".pub").c_str());
  ASSERT_EQ(locus_key_generate((key + ".key").c_str(), (key + ".pub").c_str()),
            nullptr);
  locus_public_key_t trusted{};
  ASSERT_EQ(locus_key_read_public((key + ".pub").c_str(), &trusted), nullptr);
  std::string path = dir + "locus-signed.locus";
  model.save(path, "x86-64-v3", key + ".key");
  EXPECT_THROW(model.save(dir + "locus-never.locus", "x86-64-v3",
                          dir + "locus-no-such.key"),
               RunError);
  locus_model_options_t options{};
  options.trusted_keys = &trusted;
  options.trusted_key_count = 1;
  auto loadWith = [&](const std::string &file) -> std::string {
    locus_model_t *loaded = nullptr;
    locus_status_t s = locus_model_load(file.c_str(), &options, &loaded);
    if (!s) {
      locus_model_release(loaded);
      return "";
    }
    std::string message = locus_status_message(s);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_PERMISSION_DENIED);
    locus_status_free(s);
    EXPECT_EQ(loaded, nullptr);
    return message;
  };
  EXPECT_EQ(loadWith(path), "");

  // The host code's dynamic section made to ask for a library (the ELF
  // checks refuse that); the file's checksum made good again.
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::map<int, std::string> sections = sectionsOf(path);
  const std::string &code = sections.at(LOCUS_SECTION_HOST_CODE);
  auto at = std::search(bytes.begin(), bytes.end(), code.begin(), code.end());
  ASSERT_NE(at, bytes.end());
  Elf64_Ehdr header;
  std::memcpy(&header, code.data(), sizeof header);
  size_t codeAt = static_cast<size_t>(at - bytes.begin());
  bytes[codeAt + header.e_phoff] ^= 0x7f; // the first segment's type
  std::memset(bytes.data() + 32, 0, 8);
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : bytes)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  std::memcpy(bytes.data() + 32, &h, 8);
  std::string changed = dir + "locus-signed-changed.locus";
  {
    std::ofstream out(changed, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_NE(loadWith(changed).find("it was changed after it was signed"),
            std::string::npos);
  // Without keys the same file reaches the ELF checks, which refuse it.
  locus_model_t *loaded = nullptr;
  locus_status_t s = locus_model_load(changed.c_str(), nullptr, &loaded);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_DATA_LOSS)
      << locus_status_message(s);
  locus_status_free(s);

  // An unsigned artifact of the same model.
  std::string plain = dir + "locus-unsigned.locus";
  model.save(plain);
  EXPECT_NE(loadWith(plain).find("the artifact is not signed"),
            std::string::npos);
  for (const std::string &f :
       {path, changed, plain, key + ".key", key + ".pub"})
    std::remove(f.c_str());
}

// Host code that runs the moment it is mapped (a constructor that writes a
// marker file) never runs from an artifact: with trusted keys, an unsigned
// one, one signed by another key and one changed after signing are refused
// before anything is mapped; without keys the ELF checks refuse the
// constructor. The payload itself is real: dlopen'ed directly, it writes
// the marker.
TEST(Compile, UntrustedCodeNeverRuns) {
  Graph g("payload");
  auto x = g.input("x", {4});
  g.output("y", relu(x));
  CompiledModel model = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  std::string dir = ::testing::TempDir();
  std::string marker = dir + "locus-payload-ran";
  std::string trustedKey = dir + "locus-trusted",
              otherKey = dir + "locus-other";
  for (const std::string &k : {trustedKey, otherKey}) {
    std::remove((k + ".key").c_str());
    std::remove((k + ".pub").c_str());
    ASSERT_EQ(locus_key_generate((k + ".key").c_str(), (k + ".pub").c_str()),
              nullptr);
  }
  locus_public_key_t trusted{};
  ASSERT_EQ(locus_key_read_public((trustedKey + ".pub").c_str(), &trusted),
            nullptr);
  ASSERT_EQ(::setenv("LOCUS_TEST_MARKER", marker.c_str(), 1), 0);
  std::remove(marker.c_str());
  auto ran = [&] { return std::ifstream(marker).good(); };

  // The payload works: loaded as a library, it writes the marker.
  void *direct = dlopen(LOCUS_TEST_MARKER_PAYLOAD, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(direct, nullptr) << dlerror();
  ASSERT_TRUE(ran());
  std::remove(marker.c_str());

  std::string genuine = dir + "locus-payload.locus";
  model.save(genuine, "x86-64-v3", trustedKey + ".key");
  std::map<int, std::string> sections = sectionsOf(genuine);
  std::ifstream in(LOCUS_TEST_MARKER_PAYLOAD, std::ios::binary);
  sections[LOCUS_SECTION_HOST_CODE] =
      std::string((std::istreambuf_iterator<char>(in)), {});
  std::vector<locus_section_t> list;
  list.reserve(sections.size());
  for (const auto &[kind, bytes] : sections)
    list.push_back(
        {static_cast<locus_section_kind_t>(kind), bytes.data(), bytes.size()});
  auto load = [&](const std::string &file, bool withKeys) -> std::string {
    locus_model_options_t options{};
    options.trusted_keys = &trusted;
    options.trusted_key_count = 1;
    locus_model_t *loaded = nullptr;
    locus_status_t s =
        locus_model_load(file.c_str(), withKeys ? &options : nullptr, &loaded);
    if (!s) {
      locus_model_release(loaded);
      return "loaded";
    }
    std::string message = locus_status_message(s);
    locus_status_free(s);
    return message;
  };
  // Unsigned; signed by a key the runtime was not given.
  std::string unsignedFile = dir + "locus-payload-unsigned.locus",
              foreignFile = dir + "locus-payload-foreign.locus",
              changedFile = dir + "locus-payload-changed.locus",
              signedFile = dir + "locus-payload-signed.locus";
  ASSERT_EQ(locus_artifact_write(unsignedFile.c_str(), locus_host_arch(),
                                 list.data(), list.size()),
            nullptr);
  ASSERT_EQ(locus_artifact_write_signed(foreignFile.c_str(), locus_host_arch(),
                                        list.data(), list.size(),
                                        (otherKey + ".key").c_str()),
            nullptr);
  // Signed by the trusted key, then one byte of the payload changed and
  // the checksum made good again.
  ASSERT_EQ(locus_artifact_write_signed(signedFile.c_str(), locus_host_arch(),
                                        list.data(), list.size(),
                                        (trustedKey + ".key").c_str()),
            nullptr);
  {
    std::ifstream s(signedFile, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(s)), {});
    size_t at = bytes.find(sections[LOCUS_SECTION_HOST_CODE]);
    ASSERT_NE(at, std::string::npos);
    bytes[at + sections[LOCUS_SECTION_HOST_CODE].size() / 2] ^= 1;
    std::memset(bytes.data() + 32, 0, 8);
    uint64_t h = 0xCBF29CE484222325ULL;
    for (char c : bytes)
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
    std::memcpy(bytes.data() + 32, &h, 8);
    std::ofstream out(changedFile, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_NE(load(unsignedFile, true).find("the artifact is not signed"),
            std::string::npos);
  EXPECT_FALSE(ran());
  EXPECT_NE(load(foreignFile, true).find("which is not one of the 1 trusted"),
            std::string::npos);
  EXPECT_FALSE(ran());
  EXPECT_NE(load(changedFile, true).find("changed after it was signed"),
            std::string::npos);
  EXPECT_FALSE(ran());
  // Without keys every one reaches the ELF checks, which refuse it (it
  // needs libc and runs code when loaded).
  for (const std::string &file : {unsignedFile, foreignFile, changedFile}) {
    EXPECT_NE(load(file, false)
                  .find("the host code is not a shared object Locus made"),
              std::string::npos)
        << file;
    EXPECT_FALSE(ran());
  }
  dlclose(direct);
  for (const std::string &f :
       {genuine, unsignedFile, foreignFile, changedFile, signedFile,
        trustedKey + ".key", trustedKey + ".pub", otherKey + ".key",
        otherKey + ".pub"})
    std::remove(f.c_str());
}

TEST(Compile, TracesShowEachStepsKernelsAtTheUsersLines) {
  Graph g("traced");
  g.manual_seed(3);
  auto x = g.input("x", {4, 6});
  nn::Linear fc(g, 6, 5, {.name = "fc"});
  const int line = __LINE__ + 1;
  g.output("y", locus::relu(fc(x)));
  std::string dir = ::testing::TempDir();
  CompileOptions options{.policy = "cpu", .devices = {"cpu"}};
  options.trace = dir + "locus-trace-at-release.json";
  std::remove(options.trace.c_str());
  {
    CompiledModel model = compile(g, options);
    std::vector<float> xs = randomValues(24, 11);
    for (int i = 0; i < 2; ++i)
      model.run({{"x", HostTensor::fromF32({4, 6}, xs)}});
    std::string now = dir + "locus-trace-now.json";
    model.writeTrace(now);
    std::ifstream in(now);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"name\":\"step 2\",\"cat\":\"step\""),
              std::string::npos)
        << text;
    // The fused kernel names both ops at this file's line.
    std::string relu = "locus.relu at ";
    size_t at = text.find("\"source\":\"");
    ASSERT_NE(at, std::string::npos) << text;
    std::string source = text.substr(at, text.find('"', at + 10) - at);
    EXPECT_NE(source.find("CompileTest.cpp:" + std::to_string(line)),
              std::string::npos)
        << source;
    EXPECT_NE(source.find("locus.linear"), std::string::npos) << source;
    EXPECT_NE(source.find(relu), std::string::npos) << source;
  }
  // Released: the trace at the option's path.
  std::ifstream released(options.trace);
  EXPECT_TRUE(released.good());

  CompiledModel untraced = compile(g, {.policy = "cpu", .devices = {"cpu"}});
  try {
    untraced.writeTrace(dir + "locus-no-trace.json");
    FAIL() << "a model without a trace wrote one";
  } catch (const RunError &e) {
    EXPECT_NE(std::string(e.what()).find("loaded without a trace"),
              std::string::npos)
        << e.what();
  }
}

// A compile killed with SIGKILL leaves its scratch directory (no handler
// runs); the next compile removes those of processes that are gone, and
// only those.
TEST(Compile, AKilledCompilesScratchIsSweptByTheNext) {
  namespace fs = std::filesystem;
  fs::path tmp = fs::path(::testing::TempDir()) /
                 ("locus-sweep-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  fs::path dead = tmp / ("locus-aot-" + std::to_string(child) + "-a1b2c3");
  fs::path alive =
      tmp / ("locus-aot-" + std::to_string(::getpid()) + "-d4e5f6");
  for (const fs::path &d : {dead, alive}) {
    fs::create_directories(d);
    std::ofstream(d / "kernels.0.o") << "object";
  }
  const char *old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  ASSERT_EQ(::setenv("TMPDIR", tmp.c_str(), 1), 0);
  Graph g("sweep");
  auto x = g.input("x", {4});
  g.output("y", relu(x));
  // Off the compile cache: save() must compile, and sweep, here.
  CompiledModel model =
      compile(g, {.policy = "cpu", .devices = {"cpu"}, .cache = false});
  std::string path = (tmp / "m.locus").string();
  model.save(path);
  if (old)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive / "kernels.0.o"));
  fs::remove_all(tmp);
}

TEST(Compile, AMisspelledPolicyOrDeviceIsAnErrorAtTheCall) {
  Graph g("options");
  g.output("y", relu(g.input("x", {2, 3})));
  struct Case {
    CompileOptions options;
    std::string message;
  };
  for (const Case &c :
       {Case{{.policy = "fastest"},
             "CompileOptions: unknown placement policy 'fastest'; expected "
             "strict, prefer-gpu, auto or cpu"},
        Case{{.devices = {"cpu", "gpu0"}},
             "CompileOptions: unknown device 'gpu0' in devices=; expected "
             "cpu or cuda:N"},
        Case{{.devices = {"cuda:0"}}, "devices= must include cpu"}}) {
    int line = __LINE__ + 2;
    try {
      compile(g, c.options);
      ADD_FAILURE() << "expected an error: " << c.message;
    } catch (const Error &err) {
      EXPECT_EQ(err.line(), static_cast<unsigned>(line)) << err.what();
      EXPECT_NE(err.message().find(c.message), std::string::npos) << err.what();
    }
  }
}

TEST(Compile, AZeroBucketSizeIsAnErrorAtTheCall) {
  Graph g("buckets");
  g.output("y", relu(g.input("x", {2, 3})));
  int line = __LINE__ + 2;
  try {
    compile(g, {.dataParallel = true, .bucketBytes = 0});
    ADD_FAILURE() << "expected an error";
  } catch (const Error &err) {
    EXPECT_EQ(err.line(), static_cast<unsigned>(line)) << err.what();
    EXPECT_NE(err.message().find("CompileOptions: bucketBytes must be at "
                                 "least 1"),
              std::string::npos)
        << err.what();
  }
}
