// ShapeRulesTest.cpp - the result shape and dtype of every op, recorded
// through the frontend, against the rules PyTorch users expect.

#include "locus/locus.h"

#include <gtest/gtest.h>

using namespace locus;

namespace {

class ShapeRules : public ::testing::Test {
protected:
  Graph g{"shapes"};
  int inputs = 0;
  Tensor in(const Shape &shape, DType dtype = DType::f32) {
    return g.input("in" + std::to_string(inputs++), shape, {.dtype = dtype});
  }
};

/// PyTorch's output size of a convolution or pooling window.
int64_t outSize(int64_t in, int64_t k, int64_t stride, int64_t pad,
                int64_t dilation = 1) {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

TEST_F(ShapeRules, Elementwise) {
  auto a = in({4, 8});
  for (auto f : {&locus::neg, &locus::exp, &locus::log, &locus::sqrt,
                 &locus::relu, &locus::sigmoid, &locus::tanh}) {
    Tensor r = f(a, Here::current());
    EXPECT_EQ(r.shape(), (Shape{4, 8}));
    EXPECT_EQ(r.dtype(), DType::f32);
  }
  EXPECT_EQ(pow(a, 3.0).shape(), (Shape{4, 8}));
  for (auto f :
       {&locus::add, &locus::sub, &locus::mul, &locus::div, &locus::maximum})
    EXPECT_EQ(f(a, in({8}), Here::current()).shape(), (Shape{4, 8}));
  EXPECT_EQ((in({3, 1, 5}) + in({4, 1})).shape(), (Shape{3, 4, 5}));
  EXPECT_EQ((in({}) * in({2, 3})).shape(), (Shape{2, 3}));
}

TEST_F(ShapeRules, ComparisonsGiveBoolAndWhereBroadcasts) {
  auto a = in({4, 1}), b = in({1, 5});
  for (auto f : {&locus::eq, &locus::ne, &locus::lt, &locus::le, &locus::gt,
                 &locus::ge}) {
    Tensor m = f(a, b, Here::current());
    EXPECT_EQ(m.shape(), (Shape{4, 5}));
    EXPECT_EQ(m.dtype(), DType::i1);
  }
  Tensor r = where(gt(a, b), a, in({5}));
  EXPECT_EQ(r.shape(), (Shape{4, 5}));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(broadcast_to(in({3}), {2, 4, 3}).shape(), (Shape{2, 4, 3}));
  EXPECT_THROW(broadcast_to(in({3}), {2, 4}), Error);
}

TEST_F(ShapeRules, MatmulAndLinear) {
  EXPECT_EQ(matmul(in({8, 16}), in({16, 4})).shape(), (Shape{8, 4}));
  EXPECT_EQ(matmul(in({3, 8, 16}), in({3, 16, 4})).shape(), (Shape{3, 8, 4}));
  EXPECT_EQ(matmul(in({2, 3, 1, 5}), in({2, 3, 5, 7})).shape(),
            (Shape{2, 3, 1, 7}));
  EXPECT_THROW(matmul(in({8, 16}), in({4, 16})), Error);
  EXPECT_THROW(matmul(in({2, 8, 16}), in({3, 16, 4})), Error);
  // torch.matmul's vectors and broadcast batch dimensions.
  EXPECT_EQ(matmul(in({16}), in({16, 4})).shape(), (Shape{4}));
  EXPECT_EQ(matmul(in({3, 16}), in({16})).shape(), (Shape{3}));
  EXPECT_EQ(matmul(in({2, 4, 8, 8}), in({8, 8})).shape(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(matmul(in({2, 1, 3, 5}), in({4, 5, 2})).shape(),
            (Shape{2, 4, 3, 2}));
  EXPECT_THROW(matmul(in({16}), in({8, 4})), Error);
  EXPECT_THROW(bmm(in({2, 3, 4}), in({4, 5})), Error);
  EXPECT_EQ(linear(in({100, 10}), in({2, 10}), in({2})).shape(),
            (Shape{100, 2}));
  EXPECT_EQ(linear(in({5, 7, 10}), in({3, 10})).shape(), (Shape{5, 7, 3}));
  EXPECT_EQ(linear(in({10}), in({3, 10})).shape(), (Shape{3}));
  EXPECT_THROW(linear(in({100, 10}), in({2, 10}), in({3})), Error);
  EXPECT_THROW(linear(in({100, 10}), in({10})), Error);
}

TEST_F(ShapeRules, Layout) {
  auto x = in({2, 3, 4});
  EXPECT_EQ(permute(x, {2, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(permute(x, {-1, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(transpose(x, 0, -1).shape(), (Shape{4, 3, 2}));
  EXPECT_THROW(permute(x, {0, 0, 1}), Error);
  EXPECT_THROW(permute(x, {0, 1}), Error);
  EXPECT_EQ(reshape(x, {6, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(reshape(x, {-1, 2}).shape(), (Shape{12, 2}));
  EXPECT_EQ(reshape(x, {24}).shape(), (Shape{24}));
  EXPECT_EQ(flatten(x).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(x, 0).shape(), (Shape{24}));
  EXPECT_EQ(flatten(x, 0, 1).shape(), (Shape{6, 4}));
  EXPECT_EQ(concat({x, in({2, 5, 4})}, 1).shape(), (Shape{2, 8, 4}));
  EXPECT_EQ(concat({x, x, x}, -1).shape(), (Shape{2, 3, 12}));
  EXPECT_THROW(concat({x, in({2, 5, 3})}, 1), Error);
  EXPECT_THROW(concat({x, in({2, 3, 4}, DType::i64)}, 0), Error);
}

TEST_F(ShapeRules, SliceFollowsPythonIndexing) {
  auto x = in({4, 10});
  EXPECT_EQ(slice(x, 1, 2, 5).shape(), (Shape{4, 3}));     // x[:, 2:5]
  EXPECT_EQ(slice(x, 1, -3, 10).shape(), (Shape{4, 3}));   // x[:, -3:]
  EXPECT_EQ(slice(x, 1, 0, 10, 3).shape(), (Shape{4, 4})); // x[:, ::3]
  EXPECT_EQ(slice(x, 0, 1, 100).shape(), (Shape{3, 10}));  // clamped
  EXPECT_EQ(slice(x, 0, 3, 1).shape(), (Shape{0, 10}));    // empty
  EXPECT_EQ(slice(x, -1, 9, 10).shape(), (Shape{4, 1}));
}

TEST_F(ShapeRules, Reductions) {
  auto x = in({8, 4, 3});
  for (auto f : {&locus::sum, &locus::mean, &locus::max}) {
    EXPECT_EQ(f(x, {1}, false, Here::current()).shape(), (Shape{8, 3}));
    EXPECT_EQ(f(x, {1}, true, Here::current()).shape(), (Shape{8, 1, 3}));
    EXPECT_EQ(f(x, {0, -1}, false, Here::current()).shape(), (Shape{4}));
    EXPECT_EQ(f(x, {0, 1, 2}, false, Here::current()).shape(), (Shape{}));
    EXPECT_THROW(f(x, {1, 1}, false, Here::current()), Error);
    EXPECT_THROW(f(x, {3}, false, Here::current()), Error);
  }
  EXPECT_EQ(softmax(x, -1).shape(), (Shape{8, 4, 3}));
  EXPECT_EQ(log_softmax(x, 0).shape(), (Shape{8, 4, 3}));
  EXPECT_THROW(softmax(x, 3), Error);
}

TEST_F(ShapeRules, Conv2dMatchesPyTorchsFormula) {
  struct Case {
    Shape input;
    Shape weight;
    Conv2dParams params;
  } cases[] = {
      {{32, 3, 14, 14}, {16, 3, 3, 3}, {.padding = {1, 1}}},
      {{1, 1, 28, 28}, {6, 1, 5, 5}, {}},
      {{2, 4, 9, 11},
       {6, 2, 3, 3},
       {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2}},
      {{2, 8, 7, 7},
       {8, 1, 3, 3},
       {.stride = {2, 2}, .padding = {1, 1}, .groups = 8}}, // depthwise
      {{1, 3, 5, 5}, {2, 3, 5, 5}, {}},                     // kernel = input
  };
  for (const Case &c : cases) {
    Tensor y = conv2d(in(c.input), in(c.weight), in({c.weight[0]}), c.params);
    Shape expected{c.input[0], c.weight[0]};
    for (int i = 0; i < 2; ++i)
      expected.push_back(outSize(c.input[2 + i], c.weight[2 + i],
                                 c.params.stride[i], c.params.padding[i],
                                 c.params.dilation[i]));
    EXPECT_EQ(y.shape(), expected);
  }
  EXPECT_THROW(conv2d(in({1, 3, 5, 5}), in({2, 3, 3, 3}), in({3})), Error);
  EXPECT_THROW(
      conv2d(in({1, 3, 5, 5}), in({2, 3, 3, 3}), {}, {.dilation = {0, 1}}),
      Error);
  EXPECT_THROW(conv2d(in({1, 3, 5, 5}), in({2, 3, 3, 3}), {}, {.groups = 0}),
               Error);
  EXPECT_THROW(
      conv2d(in({1, 3, 5, 5}), in({2, 3, 3, 3}), {}, {.padding = {-1, 0}}),
      Error);
}

TEST_F(ShapeRules, PoolingMatchesPyTorchsFormula) {
  auto x = in({32, 16, 14, 14});
  EXPECT_EQ(max_pool2d(x, {.kernelSize = {2, 2}}).shape(),
            (Shape{32, 16, 7, 7}));
  EXPECT_EQ(
      avg_pool2d(x, {.kernelSize = {3, 3}, .stride = {2, 2}, .padding = {1, 1}})
          .shape(),
      (Shape{32, 16, outSize(14, 3, 2, 1), outSize(14, 3, 2, 1)}));
  EXPECT_EQ(max_pool2d(x, {.kernelSize = {3, 2}, .stride = {1, 2}}).shape(),
            (Shape{32, 16, 12, 7}));
  EXPECT_THROW(max_pool2d(x, {.kernelSize = {2, 2}, .padding = {2, 2}}), Error);
  EXPECT_THROW(max_pool2d(in({16, 14, 14}), {.kernelSize = {2, 2}}), Error);
  EXPECT_THROW(max_pool2d(x, {.kernelSize = {2}}), Error);
}

TEST_F(ShapeRules, LossesAreScalars) {
  Tensor mse = mse_loss(in({100, 2}), in({100, 2}));
  EXPECT_EQ(mse.shape(), Shape{});
  EXPECT_EQ(mse_loss(in({3}), in({3}), Reduction::sum).rank(), 0);
  Tensor ce = cross_entropy(in({32, 10}), in({32}, DType::i64));
  EXPECT_EQ(ce.shape(), Shape{});
  EXPECT_EQ(ce.dtype(), DType::f32);
  EXPECT_THROW(cross_entropy(in({32, 10}), in({16}, DType::i64)), Error);
  EXPECT_THROW(cross_entropy(in({32, 10, 2}), in({32}, DType::i64)), Error);
  EXPECT_THROW(mse_loss(in({100, 2}), in({2})), Error);
}

TEST_F(ShapeRules, MovesKeepTheType) {
  auto x = in({5, 5}, DType::i64);
  Tensor y = x.to(cuda(3));
  EXPECT_EQ(y.shape(), (Shape{5, 5}));
  EXPECT_EQ(y.dtype(), DType::i64);
}

TEST_F(ShapeRules, TensorQueries) {
  auto x = in({2, 3, 4});
  EXPECT_EQ(x.rank(), 3);
  EXPECT_EQ(x.numel(), 24);
  EXPECT_EQ(x.dim(-1), 4);
  EXPECT_EQ(x.dim(0), 2);
  EXPECT_THROW(x.dim(3), std::out_of_range);
  EXPECT_THROW(Tensor().shape(), std::logic_error);
}

} // namespace
