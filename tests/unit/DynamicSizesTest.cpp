// DynamicSizesTest.cpp - one compiled graph with a dynamic batch, run at
// several sizes, against static compiles of the same recording at each.

#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace locus;

namespace {

constexpr int64_t kBound = 16;

/// What the RunError `fn` throws says, or "".
template <typename Fn> std::string runErrorOf(Fn fn) {
  try {
    fn();
  } catch (const RunError &e) {
    return e.what();
  }
  return "";
}

/// The parameters of `modules`, in order: what the optimizer steps.
std::vector<Tensor>
parametersOf(std::initializer_list<const nn::Module *> modules) {
  std::vector<Tensor> params;
  for (const nn::Module *m : modules)
    for (const Tensor &p : m->parameters())
      params.push_back(p);
  return params;
}

/// Options that place by `policy`: "cpu", or "prefer-gpu" on cpu and
/// cuda:0, which runs on sim here (the host versions of its kernels).
CompileOptions placedBy(const std::string &policy) {
  if (policy == "cpu")
    return {.policy = "cpu"};
  return {.policy = policy,
          .devices = {"cpu", "cuda:0"},
          .deviceMap = "cuda:0=sim"};
}

/// An MLP classifier step: logits, softmax and the mean cross-entropy.
/// `batch` is a static size, or 0 for the dynamic batch up to kBound.
/// With `train`, an SGD step with momentum on the loss.
Graph mlp(int64_t batch, bool train) {
  Graph g("mlp");
  InputDim rows = batch ? InputDim(batch) : dyn("batch", kBound);
  auto x = g.input("x", {rows, 12});
  auto t = g.input("t", {rows}, {.dtype = DType::i64});
  nn::Linear fc1(g, 12, 8), fc2(g, 8, 3);
  Tensor logits = fc2(relu(fc1(x)));
  Tensor loss = cross_entropy(logits, t);
  g.output("logits", logits);
  g.output("probs", softmax(logits, 1));
  g.output("loss", loss);
  g.output("col_mean", mean(x, {0}));
  if (train) {
    optim::SGD(parametersOf({&fc1, &fc2}), {.lr = 0.1, .momentum = 0.9})
        .step(loss);
  }
  return g;
}

/// A batch of `n` rows: x of shape [n, row...] (normal values) and
/// labels t in [0, 3).
std::map<std::string, HostTensor> randomBatch(int64_t n, const Shape &row,
                                              unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Shape shape = {n};
  shape.insert(shape.end(), row.begin(), row.end());
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::vector<float> xs(static_cast<size_t>(count));
  for (float &v : xs)
    v = normal(rng);
  std::vector<int64_t> ts(static_cast<size_t>(n));
  for (int64_t &v : ts)
    v = static_cast<int64_t>(rng() % 3);
  return {{"x", HostTensor::fromF32(shape, xs)},
          {"t", HostTensor::fromI64({n}, ts)}};
}

std::map<std::string, HostTensor> batchOf(int64_t n, unsigned seed) {
  return randomBatch(n, {12}, seed);
}

void expectNear(const HostTensor &a, const HostTensor &b,
                const std::string &what) {
  ASSERT_EQ(a.shape, b.shape) << what;
  ASSERT_EQ(a.f32.size(), b.f32.size()) << what;
  for (size_t i = 0; i < a.f32.size(); ++i)
    EXPECT_NEAR(a.f32[i], b.f32[i], 2e-5 * (1 + std::fabs(b.f32[i])))
        << what << " [" << i << "]";
}

/// The inference graph of `make` with a dynamic batch, placed by
/// `policy`, against static compiles for the CPU at each batch of `sizes`
/// (by default 1, 7 and the bound): outputs `names`, logits [n, 3].
void expectEverySizeLikeStatic(Graph (*make)(int64_t, bool), const Shape &row,
                               std::initializer_list<const char *> names,
                               const std::string &policy = "cpu",
                               const std::vector<int64_t> &sizes = {1, 7,
                                                                    kBound}) {
  CompiledModel dynamic = compile(make(0, false), placedBy(policy));
  for (int64_t n : sizes) {
    CompiledModel fixed = compile(make(n, false), {.policy = "cpu"});
    auto in = randomBatch(n, row, static_cast<unsigned>(n));
    auto got = dynamic.run(in), want = fixed.run(in);
    for (const char *name : names)
      expectNear(got.at(name), want.at(name),
                 std::string(name) + " at batch " + std::to_string(n));
    EXPECT_EQ(got.at("logits").shape, (Shape{n, 3}));
  }
}

TEST(DynamicSizes, OneInferenceModelServesEverySizeLikeStaticCompiles) {
  expectEverySizeLikeStatic(mlp, {12}, {"logits", "probs", "loss", "col_mean"});
}

// On a GPU: the kernels placed on cuda:0 compile to PTX at the bounds,
// launched at the run's extents, and run here on sim (their host
// versions). From its second run at a size a step replays as a graph
// captured at that size (a launch keeps the sizes of its capture): runs
// that come back to a size replay its graph, and each matches a static
// compile of its size.
TEST(DynamicSizes, OnAGpuEverySizeReplaysItsOwnGraph) {
  CompiledModel dynamic = compile(mlp(0, false), placedBy("prefer-gpu"));
  EXPECT_NE(dynamic.runtimeReport().find("steps replay as a CUDA graph"),
            std::string::npos)
      << dynamic.runtimeReport();
  expectEverySizeLikeStatic(mlp, {12}, {"logits", "probs", "loss", "col_mean"},
                            "prefer-gpu", {7, 7, 3, 7, 3, kBound, 3, 1, 7});
}

void trainsShortLastBatch(const std::string &policy) {
  // Two full batches and a short one through one dynamic step; the same
  // through a static step of 16, then one of 5 from its state.
  CompiledModel dynamic = compile(mlp(0, true), placedBy(policy));
  CompiledModel full = compile(mlp(kBound, true), {.policy = "cpu"});
  CompiledModel tail = compile(mlp(5, true), {.policy = "cpu"});
  std::vector<std::map<std::string, HostTensor>> batches = {
      batchOf(kBound, 1), batchOf(kBound, 2), batchOf(5, 3)};
  std::vector<float> losses;
  dynamic.runBatches(
      3, [&](size_t i) { return batches[i]; },
      [&](size_t, const std::map<std::string, HostTensor> &o) {
        losses.push_back(o.at("loss").item());
      });
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_NEAR(losses[0], full.run(batches[0]).at("loss").item(), 1e-5);
  EXPECT_NEAR(losses[1], full.run(batches[1]).at("loss").item(), 1e-5);
  for (const std::string &name : full.stateNames())
    tail.setState(name, full.state(name));
  EXPECT_NEAR(losses[2], tail.run(batches[2]).at("loss").item(), 1e-5);
  for (const std::string &name : tail.stateNames())
    expectNear(dynamic.state(name), tail.state(name), name);
}

TEST(DynamicSizes, AShortLastBatchTrainsAsAStaticStepOfItsSize) {
  trainsShortLastBatch("cpu");
}

TEST(DynamicSizes, OnAGpuAShortLastBatchTrainsAsAStaticStep) {
  trainsShortLastBatch("prefer-gpu");
}

/// A small residual CNN classifier over a batch of 3x12x12 images: the
/// runtime's convolutions (with a fused ReLU, residual and, when not
/// training, pooling), their gradients, and a global average. `batch` as
/// in mlp().
Graph cnn(int64_t batch, bool train) {
  Graph g("cnn");
  InputDim rows = batch ? InputDim(batch) : dyn("batch", kBound);
  auto x = g.input("x", {rows, 3, 12, 12});
  auto t = g.input("t", {rows}, {.dtype = DType::i64});
  nn::Conv2d conv1(g, 3, 8, {3}, {.padding = {1, 1}}),
      conv2(g, 8, 8, {3}, {.padding = {1, 1}});
  nn::Linear fc(g, 8, 3);
  Tensor h = relu(conv1(x));
  if (!train) // joins conv1's call; training reads h for its gradient
    h = max_pool2d(h, {.kernelSize = {2, 2}});
  h = relu(conv2(h) + h);
  Tensor logits = fc(mean(h, {2, 3}));
  Tensor loss = cross_entropy(logits, t);
  g.output("logits", logits);
  g.output("loss", loss);
  if (train) {
    optim::SGD(parametersOf({&conv1, &conv2, &fc}),
               {.lr = 0.1, .momentum = 0.9})
        .step(loss);
  }
  return g;
}

std::map<std::string, HostTensor> imagesOf(int64_t n, unsigned seed) {
  return randomBatch(n, {3, 12, 12}, seed);
}

TEST(DynamicSizes, ConvolutionsServeEveryBatchLikeStaticCompiles) {
  expectEverySizeLikeStatic(cnn, {3, 12, 12}, {"logits", "loss"});
}

// On a GPU a convolution over a dynamic batch is a cuDNN call with the
// run's batch (sim runs its host version).
TEST(DynamicSizes, OnAGpuConvolutionsServeEveryBatch) {
  expectEverySizeLikeStatic(cnn, {3, 12, 12}, {"logits", "loss"}, "prefer-gpu",
                            {5, 5, 1, kBound, 5});
}

/// `make`'s training step over images with a dynamic batch: a full batch
/// then one of 5, against a static step of the bound and one of 5 from its
/// state (losses and every state). With `countSteps`, the static step of
/// 5 runs once first, so that draws depending on the step count (dropout)
/// line up.
void expectAShortBatchTrainsAsStatic(Graph (*make)(int64_t, bool),
                                     bool countSteps,
                                     const std::string &policy = "cpu") {
  CompiledModel dynamic = compile(make(0, true), placedBy(policy));
  CompiledModel full = compile(make(kBound, true), {.policy = "cpu"});
  CompiledModel tail = compile(make(5, true), {.policy = "cpu"});
  auto first = imagesOf(kBound, 1), last = imagesOf(5, 2);
  EXPECT_NEAR(dynamic.run(first).at("loss").item(),
              full.run(first).at("loss").item(), 1e-5);
  if (countSteps)
    (void)tail.run(imagesOf(5, 3));
  for (const std::string &name : full.stateNames())
    tail.setState(name, full.state(name));
  EXPECT_NEAR(dynamic.run(last).at("loss").item(),
              tail.run(last).at("loss").item(), 1e-5);
  for (const std::string &name : tail.stateNames())
    expectNear(dynamic.state(name), tail.state(name), name);
}

TEST(DynamicSizes, AConvolutionStepTrainsAShortBatchAsAStaticStep) {
  expectAShortBatchTrainsAsStatic(cnn, /*countSteps=*/false);
}

TEST(DynamicSizes, OnAGpuAConvolutionStepTrainsAShortBatch) {
  expectAShortBatchTrainsAsStatic(cnn, /*countSteps=*/false, "prefer-gpu");
}

/// A CNN with what a training step over a dynamic batch must handle
/// besides convolutions: BatchNorm's training statistics (2-d and 1-d, the
/// running variance's unbiasing by the run's count), max pooling and its
/// gradient, channels split by chunk and joined by cat (slices and a
/// concatenation along a static axis of values with a dynamic batch), and
/// dropout, whose draws follow the run's shape as a static compile's do.
Graph normCnn(int64_t batch, bool train) {
  Graph g("norm_cnn");
  InputDim rows = batch ? InputDim(batch) : dyn("batch", kBound);
  auto x = g.input("x", {rows, 3, 12, 12});
  auto t = g.input("t", {rows}, {.dtype = DType::i64});
  nn::Conv2d conv(g, 3, 8, {3}, {.padding = {1, 1}});
  nn::BatchNorm2d bn2(g, 8);
  nn::BatchNorm1d bn1(g, 8);
  nn::Linear fc(g, 8, 3);
  if (!train) {
    bn2.eval();
    bn1.eval();
  }
  Tensor h = max_pool2d(relu(bn2(conv(x))), {.kernelSize = {2, 2}});
  std::vector<Tensor> halves = chunk(h, 2, 1);
  h = cat({tanh(halves[1]), halves[0]}, 1);
  h = dropout(h, 0.25, train);
  Tensor logits = fc(bn1(mean(h, {2, 3})));
  Tensor loss = cross_entropy(logits, t);
  g.output("logits", logits);
  g.output("loss", loss);
  if (train) {
    optim::SGD(parametersOf({&conv, &bn2, &bn1, &fc}),
               {.lr = 0.1, .momentum = 0.9})
        .step(loss);
  }
  return g;
}

TEST(DynamicSizes, NormalizationPoolingSlicesAndDropoutServeEveryBatch) {
  expectEverySizeLikeStatic(normCnn, {3, 12, 12}, {"logits", "loss"});
}

TEST(DynamicSizes, ANormalizedCnnTrainsAShortBatchAsAStaticStep) {
  expectAShortBatchTrainsAsStatic(normCnn, /*countSteps=*/true);
}

// BatchNorm, pooling and its gradient, chunk, cat and dropout over a dynamic
// batch on a GPU: generated kernels at the run's extents.
TEST(DynamicSizes, OnAGpuANormalizedCnnServesAndTrainsEveryBatch) {
  expectEverySizeLikeStatic(normCnn, {3, 12, 12}, {"logits", "loss"},
                            "prefer-gpu");
  expectAShortBatchTrainsAsStatic(normCnn, /*countSteps=*/true, "prefer-gpu");
}

TEST(DynamicSizes, DropoutDrawsAtTheRunsShape) {
  // A dynamic dimension inside the value: the draws' row-major index uses
  // the run's sizes, so a sequence of 5 keeps what a static compile of 5
  // keeps (with the bound's strides, it would not).
  auto make = [](int64_t seq) {
    Graph g("drop");
    InputDim len = seq ? InputDim(seq) : dyn("seq", kBound);
    auto x = g.input("x", {2, len, 6});
    g.output("y", dropout(x, 0.5));
    return g;
  };
  for (int64_t n : {int64_t{5}, kBound}) {
    // Fresh models: the draws depend on the step count too.
    CompiledModel dynamic = compile(make(0), {.policy = "cpu"});
    CompiledModel fixed = compile(make(n), {.policy = "cpu"});
    std::vector<float> xs(static_cast<size_t>(2 * n * 6));
    for (size_t i = 0; i < xs.size(); ++i)
      xs[i] = 1.0f + static_cast<float>(i);
    std::map<std::string, HostTensor> in = {
        {"x", HostTensor::fromF32({2, n, 6}, xs)}};
    HostTensor got = dynamic.run(in).at("y"), want = fixed.run(in).at("y");
    EXPECT_EQ(got.f32, want.f32) << "seq " << n;
    EXPECT_GT(std::count(want.f32.begin(), want.f32.end(), 0.0f), 0);
  }
}

TEST(DynamicSizes, BatchNormOverOneValuePerChannelIsARunError) {
  // PyTorch refuses BatchNorm1d in training over a batch of one; so does a
  // run whose dynamic batch gives one value per channel, before the running
  // statistics are written.
  Graph g("bn");
  auto x = g.input("x", {dyn("batch", kBound), 4});
  nn::BatchNorm1d bn(g, 4, {.name = "bn"});
  int line = __LINE__ + 1;
  g.output("y", bn(x));
  CompiledModel m = compile(g, {.policy = "cpu"});
  HostTensor before = m.state("bn.running_var");
  std::vector<float> one = {1, 2, 3, 4};
  std::string message =
      runErrorOf([&] { m.run({{"x", HostTensor::fromF32({1, 4}, one)}}); });
  EXPECT_NE(message.find("DynamicSizesTest.cpp:" + std::to_string(line) +
                         ": batch_norm in training needs more than one value "
                         "per channel (as in PyTorch); values per channel in "
                         "this run (1 found)"),
            std::string::npos)
      << message;
  EXPECT_EQ(m.state("bn.running_var").f32, before.f32);
  std::vector<float> two = {1, 2, 3, 4, 2, 4, 6, 8};
  EXPECT_EQ(m.run({{"x", HostTensor::fromF32({2, 4}, two)}}).at("y").shape,
            (Shape{2, 4}));
}

/// Causal self-attention over a dynamic sequence length, as a GPT block
/// writes it: the mask triu(-inf, 1) and the positions are built at the
/// bound and narrowed to the run's length. `seq` as `batch` in mlp().
Graph attention(int64_t seq) {
  Graph g("attn");
  InputDim len = seq ? InputDim(seq) : dyn("seq", kBound);
  auto x = g.input("x", {2, len, 8});
  int64_t n = seq ? seq : kBound;
  nn::Embedding positions(g, kBound, 8);
  Tensor pos = positions(narrow_to(g.arange(n), {len}));
  Tensor h = x + pos;
  Tensor mask = narrow_to(
      triu(g.full({n, n}, -std::numeric_limits<double>::infinity()), 1),
      {len, len});
  Tensor scores = matmul(h, transpose(h, 1, 2)) / std::sqrt(8.0f) + mask;
  Tensor y = matmul(softmax(scores, -1), h);
  g.output("y", y);
  g.output("loss", (y * y).mean());
  return g;
}

void servesEveryLength(const std::string &policy) {
  CompiledModel dynamic = compile(attention(0), placedBy(policy));
  for (int64_t n : {int64_t{1}, int64_t{5}, kBound, int64_t{5}, int64_t{5}}) {
    CompiledModel fixed = compile(attention(n), {.policy = "cpu"});
    std::mt19937 rng(static_cast<unsigned>(n));
    std::normal_distribution<float> normal;
    std::vector<float> xs(static_cast<size_t>(2 * n * 8));
    for (float &v : xs)
      v = normal(rng);
    std::map<std::string, HostTensor> in = {
        {"x", HostTensor::fromF32({2, n, 8}, xs)}};
    auto got = dynamic.run(in), want = fixed.run(in);
    expectNear(got.at("y"), want.at("y"), "y at length " + std::to_string(n));
    expectNear(got.at("loss"), want.at("loss"),
               "loss at length " + std::to_string(n));
  }
}

TEST(DynamicSizes, CausalAttentionServesEverySequenceLength) {
  servesEveryLength("cpu");
}

TEST(DynamicSizes, OnAGpuCausalAttentionServesEverySequenceLength) {
  servesEveryLength("prefer-gpu");
}

/// A sequence classifier over a dynamic length that reads windows of fixed
/// size along it: the first step (a CLS token), the last one (a decoder's
/// next token) and the mean of the last three; with `train`, an SGD step
/// on their loss. `seq` as `batch` in mlp().
Graph windows(int64_t seq, bool train) {
  constexpr int64_t toEnd = std::numeric_limits<int64_t>::max();
  Graph g("windows");
  InputDim len = seq ? InputDim(seq) : dyn("seq", kBound);
  auto x = g.input("x", {2, len, 8});
  nn::Linear proj(g, 8, 8);
  Tensor h = tanh(proj(x));
  Tensor first = squeeze(slice(h, 1, 0, 1), 1);     // h[:, 0]
  Tensor last = squeeze(slice(h, 1, -1, toEnd), 1); // h[:, -1]
  Tensor tail = mean(slice(h, 1, -3, toEnd), {1});  // h[:, -3:]
  Tensor loss = (first * last + tail).pow(2.0).mean();
  g.output("first", first);
  g.output("last", last);
  g.output("tail", tail);
  g.output("loss", loss);
  if (train)
    optim::SGD(proj.parameters(), {.lr = 0.5}).step(loss);
  return g;
}

std::map<std::string, HostTensor> sequenceOf(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> xs(static_cast<size_t>(2 * n * 8));
  for (float &v : xs)
    v = normal(rng);
  return {{"x", HostTensor::fromF32({2, n, 8}, xs)}};
}

TEST(DynamicSizes, WindowsCountedFromEitherEndServeEveryLength) {
  CompiledModel dynamic = compile(windows(0, false), {.policy = "cpu"});
  for (int64_t n : {int64_t{3}, int64_t{5}, kBound}) {
    CompiledModel fixed = compile(windows(n, false), {.policy = "cpu"});
    auto in = sequenceOf(n, static_cast<unsigned>(n));
    auto got = dynamic.run(in), want = fixed.run(in);
    for (const char *name : {"first", "last", "tail", "loss"})
      expectNear(got.at(name), want.at(name),
                 std::string(name) + " at length " + std::to_string(n));
  }
  // The last three steps need three: a shorter run stops at the slice.
  std::string message = runErrorOf([&] { dynamic.run(sequenceOf(2, 2)); });
  EXPECT_NE(message.find("locus.slice at "), std::string::npos) << message;
  EXPECT_NE(message.find("DynamicSizesTest.cpp"), std::string::npos) << message;
  EXPECT_NE(message.find("a run of fewer than 3 does not have; its size in "
                         "this run (2 found)"),
            std::string::npos)
      << message;
}

TEST(DynamicSizes, WindowsTrainAsStaticStepsOfTheirLength) {
  // Gradients flow back into the windows' places at each length.
  CompiledModel dynamic = compile(windows(0, true), {.policy = "cpu"});
  for (int64_t n : {int64_t{3}, int64_t{7}, kBound}) {
    CompiledModel fixed = compile(windows(n, true), {.policy = "cpu"});
    for (const std::string &name : fixed.stateNames())
      fixed.setState(name, dynamic.state(name));
    auto in = sequenceOf(n, static_cast<unsigned>(10 + n));
    EXPECT_NEAR(dynamic.run(in).at("loss").item(),
                fixed.run(in).at("loss").item(), 1e-5);
    for (const std::string &name : fixed.stateNames())
      expectNear(dynamic.state(name), fixed.state(name),
                 name + " after a step at length " + std::to_string(n));
  }
}

TEST(DynamicSizes, AWindowWhoseSizeFollowsTheRunIsAnError) {
  constexpr int64_t toEnd = std::numeric_limits<int64_t>::max();
  Graph g("bad");
  auto x = g.input("x", {2, dyn("seq", 16), 8});
  auto messageOf = [&](int64_t start, int64_t end, int64_t step = 1) {
    try {
      (void)slice(x, 1, start, end, step);
    } catch (const Error &e) {
      return e.message();
    }
    return std::string();
  };
  EXPECT_EQ(messageOf(2, toEnd),
            "slice: the window [2:] of dimension 1 of [2, seq, 8] would have "
            "as many elements as the run's 'seq' less a constant; a window "
            "along a dynamic dimension has a fixed size, counted from its "
            "start ([2:5], [0]) or from its end ([-3:], [-1])");
  EXPECT_NE(messageOf(0, -1), "");       // [:-1]
  EXPECT_NE(messageOf(-3, 2), "");       // mixed ends
  EXPECT_NE(messageOf(0, toEnd, 2), ""); // every other step
  EXPECT_EQ(messageOf(0, toEnd), "");    // the whole dimension
  EXPECT_EQ(messageOf(-4, -2), "");
  EXPECT_EQ(messageOf(1, 4), "");
  EXPECT_EQ(messageOf(15, 16), ""); // x[:, 15]: the bound's last index
  EXPECT_EQ(messageOf(0, 16), "");  // the whole dimension
  EXPECT_NE(messageOf(15, 17), ""); // [15:] past the bound: to the end
}

TEST(DynamicSizes, NarrowToSaysWhatItCannotDo) {
  Graph g("narrow");
  auto x = g.input("x", {dyn("batch", 8), 4});
  Tensor table = g.full({8, 8}, 1.0);
  auto messageOf = [&](const std::vector<InputDim> &dims, const Tensor &t) {
    try {
      (void)narrow_to(t, dims);
    } catch (const Error &e) {
      return e.message();
    }
    return std::string();
  };
  EXPECT_EQ(messageOf({dyn("seq", 8), 8}, table),
            "narrow_to: 'seq' with bound 8 is not a dynamic size of the graph "
            "(declare it on an input, as dyn(\"seq\", 8))");
  EXPECT_EQ(messageOf({dyn("batch", 8), 4}, table),
            "narrow_to: dimension 1 of [8, 8] is 8, not 4");
  EXPECT_EQ(messageOf({8, 8, 8}, table), "narrow_to: 3 dimensions for [8, 8]");
  EXPECT_EQ(messageOf({dyn("batch", 8), 4}, x), "");
  std::vector<InputDim> dims = dynamic_shape(x * 2.0f);
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_TRUE(dims[0].dynamic);
  EXPECT_EQ(dims[0].symbol, "batch");
  EXPECT_FALSE(dims[1].dynamic);
  EXPECT_EQ(dims[1].size, 4);
  EXPECT_EQ(dynamic_shape(reshape(x, {-1})).front().symbol, "4*batch");
}

TEST(DynamicSizes, RunErrorsNameTheInputAndTheBound) {
  CompiledModel m = compile(mlp(0, false), {.policy = "cpu"});
  auto big = batchOf(kBound + 1, 1);
  EXPECT_EQ(runErrorOf([&] { m.run(big); }),
            "input 'x' is [17, 12] f32 but the graph takes [batch<=16, 12] "
            "f32");
  auto mixed = batchOf(4, 1);
  mixed.at("t") = batchOf(5, 1).at("t");
  std::string message = runErrorOf([&] { m.run(mixed); });
  EXPECT_NE(message.find("input 'x' has batch = 4, but input 't' has batch "
                         "= 5"),
            std::string::npos)
      << message;
}

} // namespace
