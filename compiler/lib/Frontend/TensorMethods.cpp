//===- TensorMethods.cpp - PyTorch's Tensor methods -----------------------===//
//
// x.relu(), x.reshape({8, -1}), x.sum() and the rest: each records the free
// function of the same name at the caller's line, so a method and a call
// give the same graph and the same errors.
//
//===----------------------------------------------------------------------===//

#include "UserText.h"

#include "locus/Frontend/Graph.h"

#include <numeric>

using namespace locus;
using locus::detail::errorAt;

namespace {
/// 0, 1, ..., rank - 1: every dimension of x.
std::vector<int64_t> allDims(const Tensor &x, const Here &loc) {
  (void)x.graph(loc); // an Error for an empty handle
  std::vector<int64_t> dims(static_cast<size_t>(x.rank()));
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}
} // namespace

Tensor Tensor::relu(Here loc) const { return locus::relu(*this, loc); }
Tensor Tensor::sigmoid(Here loc) const { return locus::sigmoid(*this, loc); }
Tensor Tensor::tanh(Here loc) const { return locus::tanh(*this, loc); }
Tensor Tensor::exp(Here loc) const { return locus::exp(*this, loc); }
Tensor Tensor::log(Here loc) const { return locus::log(*this, loc); }
Tensor Tensor::sqrt(Here loc) const { return locus::sqrt(*this, loc); }
Tensor Tensor::rsqrt(Here loc) const { return locus::rsqrt(*this, loc); }
Tensor Tensor::abs(Here loc) const { return locus::abs(*this, loc); }
Tensor Tensor::neg(Here loc) const { return locus::neg(*this, loc); }
Tensor Tensor::sin(Here loc) const { return locus::sin(*this, loc); }
Tensor Tensor::cos(Here loc) const { return locus::cos(*this, loc); }
Tensor Tensor::erf(Here loc) const { return locus::erf(*this, loc); }
Tensor Tensor::reciprocal(Here loc) const {
  return locus::reciprocal(*this, loc);
}
Tensor Tensor::pow(double exponent, Here loc) const {
  return locus::pow(*this, exponent, loc);
}
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max,
                     Here loc) const {
  return locus::clamp(*this, min, max, loc);
}
Tensor Tensor::masked_fill(const Tensor &mask, double value, Here loc) const {
  return locus::masked_fill(*this, mask, value, loc);
}
Tensor Tensor::softmax(int64_t dim, Here loc) const {
  return locus::softmax(*this, dim, loc);
}
Tensor Tensor::log_softmax(int64_t dim, Here loc) const {
  return locus::log_softmax(*this, dim, loc);
}
Tensor Tensor::matmul(const Tensor &other, Here loc) const {
  return locus::matmul(*this, other, loc);
}
Tensor Tensor::reshape(const Shape &shape, Here loc) const {
  return locus::reshape(*this, shape, loc);
}
Tensor Tensor::view(const Shape &shape, Here loc) const {
  return locus::reshape(*this, shape, loc);
}
Tensor Tensor::flatten(int64_t startDim, int64_t endDim, Here loc) const {
  return locus::flatten(*this, startDim, endDim, loc);
}
Tensor Tensor::permute(const std::vector<int64_t> &dims, Here loc) const {
  return locus::permute(*this, dims, loc);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, Here loc) const {
  return locus::transpose(*this, dim0, dim1, loc);
}
Tensor Tensor::t(Here loc) const {
  (void)graph(loc);
  if (rank() > 2)
    throw errorAt(loc, "t: expects a tensor with at most 2 dimensions, not " +
                           detail::shapeText(shape()) +
                           "; use transpose(dim0, dim1)");
  return rank() < 2 ? *this : locus::transpose(*this, 0, 1, loc);
}
Tensor Tensor::squeeze(int64_t dim, Here loc) const {
  return locus::squeeze(*this, dim, loc);
}
Tensor Tensor::unsqueeze(int64_t dim, Here loc) const {
  return locus::unsqueeze(*this, dim, loc);
}
Tensor Tensor::expand(const Shape &shape, Here loc) const {
  return locus::expand(*this, shape, loc);
}
Tensor Tensor::sum(Here loc) const {
  return locus::sum(*this, allDims(*this, loc), false, loc);
}
Tensor Tensor::sum(const std::vector<int64_t> &dims, bool keepdim,
                   Here loc) const {
  return locus::sum(*this, dims, keepdim, loc);
}
Tensor Tensor::mean(Here loc) const {
  return locus::mean(*this, allDims(*this, loc), false, loc);
}
Tensor Tensor::mean(const std::vector<int64_t> &dims, bool keepdim,
                    Here loc) const {
  return locus::mean(*this, dims, keepdim, loc);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim, Here loc) const {
  return locus::argmax(*this, dim, keepdim, loc);
}
Tensor Tensor::to(DType dtype, Here loc) const {
  return locus::cast(*this, dtype, loc);
}

Tensor locus::cat(const std::vector<Tensor> &xs, int64_t axis, Here loc) {
  return concat(xs, axis, loc);
}
