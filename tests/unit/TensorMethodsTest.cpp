// TensorMethodsTest.cpp - PyTorch's Tensor methods record what the free
// functions record; the earlier camelCase names still work; and a user's
// own functions named like locus's are never ambiguous with them.

#include "locus/locus.h"

#include <gtest/gtest.h>

#include <string>

namespace {
int userGeluCalls = 0;
} // namespace

// A user's own gelu, written before locus had one. Called unqualified with a
// locus::Tensor, argument-dependent lookup would also find locus::gelu (same
// first parameter, defaulted rest): "call to 'gelu' is ambiguous".
locus::Tensor gelu(const locus::Tensor &x) {
  ++userGeluCalls;
  return x * 0.5f;
}

namespace mymodel {
// The user's "relu" in their own namespace, which their code calls
// unqualified.
locus::Tensor relu(const locus::Tensor &x) { return x; }
locus::Tensor block(const locus::Tensor &x) { return relu(x); }
} // namespace mymodel

namespace {

using locus::DType;
using locus::Graph;
using locus::Shape;
using locus::Tensor;

TEST(Namespace, AUsersOwnFunctionsAreNotAmbiguousWithLocus) {
  Graph g("ns");
  Tensor x = g.input("x", {4});
  Tensor y = gelu(x); // the user's: one multiply
  EXPECT_EQ(userGeluCalls, 1);
  size_t before = g.numOps();
  Tensor z = mymodel::block(y); // the user's relu records nothing
  EXPECT_EQ(g.numOps(), before);
  // Operators still come with the tensor, numbers on either side.
  Tensor w = 1.0f - z * 2.0f + z / 3.0f;
  EXPECT_EQ(w.shape(), (Shape{4}));
}

/// The graph's text without locations, as recorded by `record`.
template <typename F> std::string recorded(F &&record) {
  Graph g("same");
  Tensor x = g.input("x", {2, 3, 4});
  Tensor m = g.input("m", {2, 3, 4}, {.dtype = DType::i1});
  Tensor w = g.input("w", {4, 5});
  for (const Tensor &out : record(x, m, w))
    g.output("o" + std::to_string(g.numOps()), out);
  return g.str();
}

TEST(TensorMethods, RecordWhatTheFreeFunctionsRecord) {
  auto methods = [](const Tensor &x, const Tensor &m, const Tensor &w) {
    Tensor a = x.relu().sigmoid().tanh().exp().log().abs().sqrt().rsqrt();
    Tensor b = x.neg().sin().cos().erf().reciprocal().pow(2.0).clamp(0.0, 6.0);
    Tensor c = x.masked_fill(m, -1.0).softmax(-1).log_softmax(1);
    Tensor d = x.matmul(w).reshape({6, -1}).view({2, 15}).t();
    Tensor e = x.flatten().unsqueeze(0).squeeze(0);
    Tensor f = x.permute({2, 0, 1}).transpose(0, 1).expand({3, 2, 4, 3});
    Tensor h = x.sum().reshape({1}) + x.mean() + x.sum({1}, true).mean({0});
    Tensor i = x.argmax(-1).to(DType::f32);
    return std::vector<Tensor>{a, b, c, d, e, f, h, i};
  };
  auto functions = [](const Tensor &x, const Tensor &m, const Tensor &w) {
    using namespace locus;
    Tensor a = rsqrt(sqrt(abs(log(exp(tanh(sigmoid(relu(x))))))));
    Tensor b = clamp(pow(reciprocal(erf(cos(sin(neg(x))))), 2.0), 0.0, 6.0);
    Tensor c = log_softmax(softmax(masked_fill(x, m, -1.0), -1), 1);
    Tensor d =
        transpose(reshape(reshape(matmul(x, w), {6, -1}), {2, 15}), 0, 1);
    Tensor e = squeeze(unsqueeze(flatten(x, 0, -1), 0), 0);
    Tensor f = expand(transpose(permute(x, {2, 0, 1}), 0, 1), {3, 2, 4, 3});
    Tensor h = reshape(sum(x, {0, 1, 2}), {1}) + mean(x, {0, 1, 2}) +
               mean(sum(x, {1}, true), {0});
    Tensor i = cast(argmax(x, -1), DType::f32);
    return std::vector<Tensor>{a, b, c, d, e, f, h, i};
  };
  EXPECT_EQ(recorded(methods), recorded(functions));
}

TEST(TensorMethods, ErrorsNameTheCallersLine) {
  Graph g("errors");
  Tensor x = g.input("x", {2, 3, 4});
  Tensor v = g.input("v", {3});
  EXPECT_EQ(v.t().shape(), (Shape{3})); // a vector is its own transpose
  EXPECT_EQ(v.size(-1), 3);
  EXPECT_EQ(x.sizes(), (Shape{2, 3, 4}));
  size_t before = g.numOps();
  // Each line number is taken on the call's own line.
  // clang-format off
  unsigned line = 0;
  try {
    line = __LINE__; x.t();
    ADD_FAILURE() << "t() of a 3-d tensor recorded";
  } catch (const locus::Error &e) {
    EXPECT_EQ(e.line(), line);
    EXPECT_NE(e.message().find("t: expects a tensor with at most 2 "
                               "dimensions, not [2, 3, 4]"),
              std::string::npos)
        << e.message();
  }
  try {
    line = __LINE__; x.reshape({5, -1});
    ADD_FAILURE() << "reshape to a size that does not divide recorded";
  } catch (const locus::Error &e) {
    EXPECT_EQ(e.line(), line);
  }
  // clang-format on
  EXPECT_EQ(g.numOps(), before);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(TensorMethods, TheEarlierNamesStillRecordTheSameOps) {
  auto old = [](const Tensor &x, const Tensor &m, const Tensor &) {
    using namespace locus;
    Tensor a = maskedFill(x, m, 0.0);
    Tensor b = logSoftmax(leakyRelu(x, 0.1), -1);
    Tensor c = layerNorm(x, {4}) + broadcastTo(zerosLike(x), {2, 3, 4});
    Tensor d = mseLoss(x, onesLike(x)) + l1Loss(x, fullLike(x, 2.0));
    std::vector<Tensor> grads{x};
    Tensor n = nn::utils::clipGradNorm_(grads, 1.0);
    return std::vector<Tensor>{a, b, c, d, n, grads[0]};
  };
  auto now = [](const Tensor &x, const Tensor &m, const Tensor &) {
    using namespace locus;
    Tensor a = masked_fill(x, m, 0.0);
    Tensor b = log_softmax(leaky_relu(x, 0.1), -1);
    Tensor c = layer_norm(x, {4}) + broadcast_to(zeros_like(x), {2, 3, 4});
    Tensor d = mse_loss(x, ones_like(x)) + l1_loss(x, full_like(x, 2.0));
    std::vector<Tensor> grads{x};
    Tensor n = nn::utils::clip_grad_norm_(grads, 1.0);
    return std::vector<Tensor>{a, b, c, d, n, grads[0]};
  };
  EXPECT_EQ(recorded(old), recorded(now));
  Graph g1("seed"), g2("seed");
  g1.manualSeed(5);
  g2.manual_seed(5);
  EXPECT_EQ(g1.seedFor("w"), g2.seedFor("w"));
}
#pragma GCC diagnostic pop

} // namespace
