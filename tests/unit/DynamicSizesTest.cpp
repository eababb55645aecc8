// DynamicSizesTest.cpp - one compiled graph with a dynamic batch, run at
// several sizes, against static compiles of the same recording at each.

#include "locus/Compile.h"
#include "locus/locus.h"

#include <gtest/gtest.h>

#include <cmath>
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
    std::vector<Tensor> params = fc1.parameters();
    for (const Tensor &p : fc2.parameters())
      params.push_back(p);
    optim::SGD(params, {.lr = 0.1, .momentum = 0.9}).step(loss);
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

/// The inference graph of `make` with a dynamic batch against static
/// compiles at batch 1, 7 and the bound: outputs `names`, logits [n, 3].
void expectEverySizeLikeStatic(Graph (*make)(int64_t, bool), const Shape &row,
                               std::initializer_list<const char *> names) {
  CompiledModel dynamic = compile(make(0, false), {.policy = "cpu"});
  for (int64_t n : {int64_t{1}, int64_t{7}, kBound}) {
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

TEST(DynamicSizes, AShortLastBatchTrainsAsAStaticStepOfItsSize) {
  // Two full batches and a short one through one dynamic step; the same
  // through a static step of 16, then one of 5 from its state.
  CompiledModel dynamic = compile(mlp(0, true), {.policy = "cpu"});
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
    std::vector<Tensor> params;
    for (const nn::Module *m :
         std::initializer_list<const nn::Module *>{&conv1, &conv2, &fc})
      for (const Tensor &p : m->parameters())
        params.push_back(p);
    optim::SGD(params, {.lr = 0.1, .momentum = 0.9}).step(loss);
  }
  return g;
}

std::map<std::string, HostTensor> imagesOf(int64_t n, unsigned seed) {
  return randomBatch(n, {3, 12, 12}, seed);
}

TEST(DynamicSizes, ConvolutionsServeEveryBatchLikeStaticCompiles) {
  expectEverySizeLikeStatic(cnn, {3, 12, 12}, {"logits", "loss"});
}

TEST(DynamicSizes, AConvolutionStepTrainsAShortBatchAsAStaticStep) {
  CompiledModel dynamic = compile(cnn(0, true), {.policy = "cpu"});
  CompiledModel full = compile(cnn(kBound, true), {.policy = "cpu"});
  CompiledModel tail = compile(cnn(5, true), {.policy = "cpu"});
  auto first = imagesOf(kBound, 1), last = imagesOf(5, 2);
  EXPECT_NEAR(dynamic.run(first).at("loss").item(),
              full.run(first).at("loss").item(), 1e-5);
  for (const std::string &name : full.stateNames())
    tail.setState(name, full.state(name));
  EXPECT_NEAR(dynamic.run(last).at("loss").item(),
              tail.run(last).at("loss").item(), 1e-5);
  for (const std::string &name : tail.stateNames())
    expectNear(dynamic.state(name), tail.state(name), name);
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
