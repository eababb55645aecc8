//===- ShapeRules.cpp - result types of the locus ops ---------------------===//
//
// One function per op whose result type follows from its operands and
// attributes; an op family that shares a rule (reductions, pooling) calls
// it from ODS (ShapeRules.h). The verifier calls these (InferTypeOpInterface),
// and so does the C++ frontend before it records an op, so a rule is written
// once and every message names the shapes involved.
//
// Every rule checks what it reads: it may run on unverified IR.
//
//===----------------------------------------------------------------------===//

#include "ShapeRules.h"

#include "locus/Dialect/LocusDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace locus;

namespace {

/// Emits "'locus.<op>' op <message>" at `loc` when there is one, and fails.
struct RuleError {
  std::optional<Location> loc;
  StringRef opName;

  LogicalResult operator()(const Twine &message) const {
    return emitOptionalError(loc, "'", opName, "' op ", message.str());
  }
};

template <typename OpT> RuleError errorsOf(std::optional<Location> loc) {
  return RuleError{loc, OpT::getOperationName()};
}

/// The operand as a ranked tensor type, or null after reporting `what`.
RankedTensorType tensorOperand(const RuleError &fail, Value value,
                               StringRef what) {
  auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
  if (!type)
    (void)fail(Twine(what) + " must be a ranked tensor");
  return type;
}

std::string str(ArrayRef<int64_t> shape) { return formatShape(shape); }

/// A gather-like op's data operand (`what`) and its indices as ranked
/// tensor types, or nulls after reporting the first that is not one.
std::pair<RankedTensorType, RankedTensorType>
indexedOperands(const RuleError &fail, Value data, StringRef what,
                Value indices) {
  RankedTensorType d = tensorOperand(fail, data, what);
  RankedTensorType i =
      d ? tensorOperand(fail, indices, "indices") : RankedTensorType();
  if (!i)
    return {};
  return {d, i};
}

std::string num(int64_t value) { return std::to_string(value); }

/// An element type as the user wrote it (f32, i64, i1).
std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// Fails unless every named operand has the first one's element type: a
/// product or convolution computes in one type (a cast says which).
LogicalResult
sameElementType(const RuleError &fail,
                ArrayRef<std::pair<StringRef, RankedTensorType>> operands) {
  Type first = operands.front().second.getElementType();
  for (auto [name, type] : operands.drop_front())
    if (type && type.getElementType() != first)
      return fail(operands.front().first + " is " + typeName(first) + " but " +
                  name + " is " + typeName(type.getElementType()) +
                  "; cast one of them");
  return success();
}

/// A layer's input, weight and optional bias (`bias` stays null without
/// one) as ranked tensors of one element type.
LogicalResult layerOperands(const RuleError &fail, Value inputValue,
                            Value weightValue, Value biasValue,
                            RankedTensorType &input, RankedTensorType &weight,
                            RankedTensorType &bias) {
  input = tensorOperand(fail, inputValue, "input");
  weight =
      input ? tensorOperand(fail, weightValue, "weight") : RankedTensorType();
  if (input && weight && biasValue)
    bias = tensorOperand(fail, biasValue, "bias");
  if (!input || !weight || (biasValue && !bias))
    return failure();
  return sameElementType(
      fail, {{"input", input}, {"weight", weight}, {"bias", bias}});
}

/// Product of the dimensions; shapes are static.
int64_t elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

/// Checks that an attribute array holds `rank` entries.
LogicalResult checkArray(const RuleError &fail, DenseI64ArrayAttr attr,
                         StringRef name, size_t rank) {
  if (!attr)
    return fail(Twine("requires attribute '") + name + "'");
  if (attr.size() != static_cast<int64_t>(rank))
    return fail(Twine(name) + " has " + num(attr.size()) +
                " entries; expected " + num(rank));
  return success();
}

LogicalResult reduceRule(const RuleError &fail, Value input,
                         DenseI64ArrayAttr axesAttr, bool keepdim,
                         SmallVectorImpl<Type> &results) {
  RankedTensorType type = tensorOperand(fail, input, "input");
  if (!type || !axesAttr)
    return type ? fail("requires attribute 'axes'") : failure();
  int64_t rank = type.getRank();
  llvm::SmallBitVector reduced(rank);
  for (int64_t axis : axesAttr.asArrayRef()) {
    if (axis < 0 || axis >= rank)
      return fail("axis " + num(axis) + " is out of range for input " +
                  str(type.getShape()) + " of rank " + num(rank));
    if (reduced.test(axis))
      return fail("axis " + num(axis) + " is listed twice");
    reduced.set(axis);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.test(d))
      shape.push_back(type.getDimSize(d));
    else if (keepdim)
      shape.push_back(1);
  }
  results.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

/// The first dimension in which the strided window (offsets, sizes,
/// strides) leaves `dims`, or none: locus.slice's and slice_grad's rule.
std::optional<size_t> windowOutside(ArrayRef<int64_t> dims,
                                    ArrayRef<int64_t> offsets,
                                    ArrayRef<int64_t> sizes,
                                    ArrayRef<int64_t> strides) {
  for (size_t d = 0; d < dims.size(); ++d) {
    // An offset below zero counts back from the end.
    int64_t offset = offsets[d] < 0 ? offsets[d] + dims[d] : offsets[d];
    bool inside =
        dims[d] >= 0 && offset >= 0 && sizes[d] >= 0 && strides[d] >= 1 &&
        (sizes[d] == 0 ? offset <= dims[d]
                       : offset + (sizes[d] - 1) * strides[d] < dims[d]);
    if (!inside)
      return d;
  }
  return std::nullopt;
}

LogicalResult poolRule(const RuleError &fail, Value inputValue,
                       DenseI64ArrayAttr kernelAttr,
                       DenseI64ArrayAttr strideAttr,
                       DenseI64ArrayAttr paddingAttr,
                       SmallVectorImpl<Type> &results) {
  RankedTensorType input = tensorOperand(fail, inputValue, "input");
  if (!input)
    return failure();
  if (input.getRank() != 4)
    return fail("expects an NCHW input of rank 4, got " +
                str(input.getShape()));
  if (failed(checkArray(fail, kernelAttr, "kernel_size", 2)) ||
      failed(checkArray(fail, strideAttr, "stride", 2)) ||
      failed(checkArray(fail, paddingAttr, "padding", 2)))
    return failure();
  ArrayRef<int64_t> kernel = kernelAttr.asArrayRef();
  ArrayRef<int64_t> stride = strideAttr.asArrayRef();
  ArrayRef<int64_t> padding = paddingAttr.asArrayRef();
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || stride[i] < 1)
      return fail("kernel_size " + str(kernel) + " and stride " + str(stride) +
                  " must be positive");
    if (padding[i] < 0 || 2 * padding[i] > kernel[i])
      return fail("padding " + str(padding) +
                  " must be between 0 and half of kernel_size " + str(kernel));
    int64_t in = input.getDimSize(2 + i);
    int64_t out = (in + 2 * padding[i] - kernel[i]) / stride[i] + 1;
    if (in + 2 * padding[i] < kernel[i] || out < 1)
      return fail("kernel_size " + str(kernel) + " does not fit input " +
                  str(input.getShape()) + " with padding " + str(padding));
    shape.push_back(out);
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult lossRule(Builder builder, SmallVectorImpl<Type> &results) {
  results.push_back(RankedTensorType::get({}, builder.getF32Type()));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Rules op families share (ShapeRules.h; their ops call them from ODS)
//===----------------------------------------------------------------------===//

LogicalResult locus::rules::reduce(StringRef opName,
                                   std::optional<Location> loc, Value input,
                                   DenseI64ArrayAttr axes, bool keepdim,
                                   SmallVectorImpl<Type> &results) {
  return reduceRule(RuleError{loc, opName}, input, axes, keepdim, results);
}

LogicalResult locus::rules::pool2d(StringRef opName,
                                   std::optional<Location> loc, Value input,
                                   DenseI64ArrayAttr kernel,
                                   DenseI64ArrayAttr stride,
                                   DenseI64ArrayAttr padding,
                                   SmallVectorImpl<Type> &results) {
  return poolRule(RuleError{loc, opName}, input, kernel, stride, padding,
                  results);
}

//===----------------------------------------------------------------------===//
// Sources and elementwise
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<ConstantOp>(loc);
  auto value = dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value)
    return fail("requires an elements attribute 'value'");
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return fail("value must be a ranked tensor");
  results.push_back(type);
  return success();
}

LogicalResult CmpOp::inferReturnTypes(MLIRContext *context,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<CmpOp>(loc);
  RankedTensorType lhs = tensorOperand(fail, adaptor.getLhs(), "lhs");
  RankedTensorType rhs =
      lhs ? tensorOperand(fail, adaptor.getRhs(), "rhs") : RankedTensorType();
  if (!lhs || !rhs)
    return failure();
  if (lhs.getShape() != rhs.getShape())
    return fail("compares operands of different shapes " + str(lhs.getShape()) +
                " and " + str(rhs.getShape()));
  if (lhs.getElementType() != rhs.getElementType())
    return fail("compares " + typeName(lhs.getElementType()) + " with " +
                typeName(rhs.getElementType()) + "; cast one first");
  results.push_back(
      RankedTensorType::get(lhs.getShape(), IntegerType::get(context, 1)));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<CastOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  if (!input)
    return failure();
  TypeAttr target = adaptor.getElementTypeAttr();
  if (!target)
    return fail("requires attribute 'element_type'");
  Type element = target.getValue();
  if (!element.isF32() && !element.isBF16() && !element.isF16() &&
      !element.isSignlessInteger(64) && !element.isSignlessInteger(32) &&
      !element.isSignlessInteger(1))
    return fail("casts to f32, bf16, f16, i64, i32 or i1, not " +
                typeName(element));
  results.push_back(RankedTensorType::get(input.getShape(), element));
  return success();
}

LogicalResult SelectOp::verify() {
  ArrayRef<int64_t> cond = getCondition().getType().getShape();
  ArrayRef<int64_t> values = getTrueValue().getType().getShape();
  if (cond != values)
    return emitOpError() << "condition " << formatShape(cond) << " and values "
                         << formatShape(values) << " have different shapes";
  return success();
}

LogicalResult BroadcastOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<BroadcastOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  if (!input)
    return failure();
  if (!adaptor.getShapeAttr())
    return fail("requires attribute 'shape'");
  ArrayRef<int64_t> target = adaptor.getShape();
  ArrayRef<int64_t> source = input.getShape();
  auto incompatible = [&] {
    return fail("cannot broadcast " + str(source) + " to " + str(target));
  };
  if (source.size() > target.size())
    return incompatible();
  for (int64_t dim : target)
    if (dim < 0)
      return fail("target shape " + str(target) + " has a negative dimension");
  size_t lead = target.size() - source.size();
  for (size_t i = 0; i < source.size(); ++i)
    if (source[i] != 1 && source[i] != target[lead + i])
      return incompatible();
  results.push_back(RankedTensorType::get(target, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and layout
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<MatmulOp>(loc);
  RankedTensorType lhs = tensorOperand(fail, adaptor.getLhs(), "lhs");
  RankedTensorType rhs =
      lhs ? tensorOperand(fail, adaptor.getRhs(), "rhs") : RankedTensorType();
  if (!lhs || !rhs ||
      failed(sameElementType(fail, {{"lhs", lhs}, {"rhs", rhs}})))
    return failure();
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  if (a.size() < 2 || a.size() != b.size())
    return fail("multiplies " + str(a) + " by " + str(b) +
                "; expected two operands of the same rank, at least 2");
  size_t r = a.size();
  if (a.drop_back(2) != b.drop_back(2))
    return fail("batch dimensions of " + str(a) + " and " + str(b) + " differ");
  if (a[r - 1] != b[r - 2])
    return fail("cannot multiply " + str(a) + " by " + str(b) +
                ": inner dimensions " + num(a[r - 1]) + " and " +
                num(b[r - 2]) + " differ");
  SmallVector<int64_t> shape(a.drop_back(1));
  shape.push_back(b[r - 1]);
  results.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<LinearOp>(loc);
  RankedTensorType input, weight, bias;
  if (failed(layerOperands(fail, adaptor.getInput(), adaptor.getWeight(),
                           adaptor.getBias(), input, weight, bias)))
    return failure();
  if (input.getRank() < 1)
    return fail("input must have at least one dimension");
  if (weight.getRank() != 2)
    return fail("weight must be [out_features, in_features], got " +
                str(weight.getShape()));
  int64_t in = input.getShape().back();
  if (weight.getDimSize(1) != in)
    return fail("input " + str(input.getShape()) + " has " + num(in) +
                " features but weight " + str(weight.getShape()) + " expects " +
                num(weight.getDimSize(1)));
  if (bias) {
    if (bias.getShape() != ArrayRef<int64_t>{weight.getDimSize(0)})
      return fail("bias " + str(bias.getShape()) + " does not match weight " +
                  str(weight.getShape()) + "; expected [" +
                  num(weight.getDimSize(0)) + "]");
  }
  SmallVector<int64_t> shape(input.getShape().drop_back());
  shape.push_back(weight.getDimSize(0));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<TransposeOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  if (!input)
    return failure();
  if (!adaptor.getPermutationAttr())
    return fail("requires attribute 'permutation'");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input.getRank();
  llvm::SmallBitVector seen(rank);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen.test(p)) {
      valid = false;
      break;
    }
    seen.set(p);
  }
  if (!valid)
    return fail("permutation " + str(perm) +
                " is not a permutation of the dimensions of " +
                str(input.getShape()));
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<ReshapeOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  if (!input)
    return failure();
  if (!adaptor.getShapeAttr())
    return fail("requires attribute 'shape'");
  ArrayRef<int64_t> shape = adaptor.getShape();
  for (int64_t dim : shape)
    if (dim < 0)
      return fail("shape " + str(shape) + " has a negative dimension");
  if (elementCount(shape) != elementCount(input.getShape()))
    return fail("cannot reshape " + str(input.getShape()) + " (" +
                num(elementCount(input.getShape())) + " elements) to " +
                str(shape) + " (" + num(elementCount(shape)) + " elements)");
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<ConcatOp>(loc);
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail("needs at least one input");
  if (!adaptor.getAxisAttr())
    return fail("requires attribute 'axis'");
  RankedTensorType first = tensorOperand(fail, inputs[0], "input #0");
  if (!first)
    return failure();
  int64_t axis = adaptor.getAxis();
  int64_t rank = first.getRank();
  if (axis < 0 || axis >= rank)
    return fail("axis " + num(axis) + " is out of range for rank " + num(rank));
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, value] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType type = tensorOperand(fail, value, "input #" + num(i + 1));
    if (!type)
      return failure();
    if (type.getElementType() != first.getElementType())
      return fail("inputs have different element types");
    bool sameOtherDims = type.getRank() == rank;
    for (int64_t d = 0; sameOtherDims && d < rank; ++d)
      sameOtherDims = d == axis || type.getDimSize(d) == first.getDimSize(d);
    if (!sameOtherDims)
      return fail("cannot concatenate " + str(first.getShape()) + " and " +
                  str(type.getShape()) + " along axis " + num(axis));
    shape[axis] += type.getDimSize(axis);
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<SliceOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  if (!input)
    return failure();
  size_t rank = input.getRank();
  if (failed(checkArray(fail, adaptor.getOffsetsAttr(), "offsets", rank)) ||
      failed(checkArray(fail, adaptor.getSizesAttr(), "sizes", rank)) ||
      failed(checkArray(fail, adaptor.getStridesAttr(), "strides", rank)))
    return failure();
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes(),
                    strides = adaptor.getStrides();
  if (std::optional<size_t> d =
          windowOutside(input.getShape(), offsets, sizes, strides))
    return fail("window offsets " + str(offsets) + " sizes " + str(sizes) +
                " strides " + str(strides) + " does not fit in input " +
                str(input.getShape()) + " (dimension " + num(*d) + ")");
  results.push_back(RankedTensorType::get(sizes, input.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<GatherOp>(loc);
  auto [input, indices] =
      indexedOperands(fail, adaptor.getInput(), "input", adaptor.getIndices());
  if (!input)
    return failure();
  if (!adaptor.getAxisAttr())
    return fail("requires attribute 'axis'");
  int64_t axis = adaptor.getAxis(), rank = input.getRank();
  if (rank == 0)
    return fail("cannot gather from a 0-d tensor");
  if (axis < 0 || axis >= rank)
    return fail("axis " + num(axis) + " is out of range for input " +
                str(input.getShape()) + " of rank " + num(rank));
  if (!indices.getElementType().isSignlessInteger(64))
    return fail("indices must be i64, not " +
                typeName(indices.getElementType()));
  SmallVector<int64_t> shape(input.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, input.getShape().drop_front(axis + 1));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

static LogicalResult verifySoftmaxAxis(Operation *op, RankedTensorType type,
                                       int64_t axis) {
  if (axis < 0 || axis >= type.getRank())
    return op->emitOpError()
           << "axis " << axis << " is out of range for input "
           << formatShape(type.getShape()) << " of rank " << type.getRank();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput().getType(), getAxis());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getInput().getType(), getAxis());
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {

/// The shape of conv2d's result for an input and weight of these shapes; the
/// rule shared by the convolution and its two gradients.
template <typename AdaptorT>
LogicalResult convShape(const RuleError &fail, ArrayRef<int64_t> input,
                        ArrayRef<int64_t> weight, AdaptorT &adaptor,
                        SmallVectorImpl<int64_t> &shape) {
  if (input.size() != 4)
    return fail("expects an NCHW input of rank 4, got " + str(input));
  if (weight.size() != 4)
    return fail("expects a weight [out_channels, in_channels / groups, kh, "
                "kw], got " +
                str(weight));
  if (failed(checkArray(fail, adaptor.getStrideAttr(), "stride", 2)) ||
      failed(checkArray(fail, adaptor.getPaddingAttr(), "padding", 2)) ||
      failed(checkArray(fail, adaptor.getDilationAttr(), "dilation", 2)))
    return failure();
  if (!adaptor.getGroupsAttr())
    return fail("requires attribute 'groups'");
  ArrayRef<int64_t> stride = adaptor.getStride(),
                    padding = adaptor.getPadding(),
                    dilation = adaptor.getDilation();
  int64_t groups = adaptor.getGroupsAttr().getInt();
  int64_t channels = input[1], outChannels = weight[0];
  if (groups < 1)
    return fail("groups must be positive, got " + num(groups));
  if (channels % groups != 0 || outChannels % groups != 0)
    return fail("groups " + num(groups) + " must divide both the " +
                num(channels) + " input channels and the " + num(outChannels) +
                " output channels");
  if (weight[1] != channels / groups)
    return fail("weight " + str(weight) + " expects " +
                num(weight[1] * groups) + " input channels but input " +
                str(input) + " has " + num(channels));
  shape.assign({input[0], outChannels});
  for (int i = 0; i < 2; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      return fail("stride " + str(stride) + " and dilation " + str(dilation) +
                  " must be positive and padding " + str(padding) +
                  " non-negative");
    int64_t in = input[2 + i], k = weight[2 + i];
    int64_t span = dilation[i] * (k - 1) + 1;
    if (in + 2 * padding[i] < span)
      return fail("kernel " + str(weight.drop_front(2)) + " with dilation " +
                  str(dilation) + " is larger than the padded input " +
                  str(input.drop_front(2)) + " + padding " + str(padding));
    shape.push_back((in + 2 * padding[i] - span) / stride[i] + 1);
  }
  return success();
}

/// `grad` must have `expected` (the forward result's shape).
LogicalResult checkGradShape(const RuleError &fail, RankedTensorType grad,
                             ArrayRef<int64_t> expected) {
  if (grad.getShape() != expected)
    return fail("grad " + str(grad.getShape()) +
                " does not match the forward result " + str(expected));
  return success();
}

} // namespace

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<Conv2dOp>(loc);
  RankedTensorType input, weight, bias;
  if (failed(layerOperands(fail, adaptor.getInput(), adaptor.getWeight(),
                           adaptor.getBias(), input, weight, bias)))
    return failure();
  SmallVector<int64_t> shape;
  if (failed(
          convShape(fail, input.getShape(), weight.getShape(), adaptor, shape)))
    return failure();
  if (bias) {
    if (bias.getShape() != ArrayRef<int64_t>{weight.getDimSize(0)})
      return fail("bias " + str(bias.getShape()) + " does not match " +
                  num(weight.getDimSize(0)) + " output channels");
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult
Conv2dInputGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<Conv2dInputGradOp>(loc);
  RankedTensorType grad = tensorOperand(fail, adaptor.getGrad(), "grad");
  RankedTensorType weight =
      grad ? tensorOperand(fail, adaptor.getWeight(), "weight")
           : RankedTensorType();
  if (grad && weight &&
      failed(sameElementType(fail, {{"grad", grad}, {"weight", weight}})))
    return failure();
  if (!grad || !weight || !adaptor.getInputShapeAttr())
    return grad && weight ? fail("requires attribute 'input_shape'")
                          : failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> input = adaptor.getInputShape();
  if (failed(convShape(fail, input, weight.getShape(), adaptor, shape)) ||
      failed(checkGradShape(fail, grad, shape)))
    return failure();
  results.push_back(RankedTensorType::get(input, grad.getElementType()));
  return success();
}

LogicalResult
Conv2dWeightGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<Conv2dWeightGradOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  RankedTensorType grad = input ? tensorOperand(fail, adaptor.getGrad(), "grad")
                                : RankedTensorType();
  if (input && grad &&
      failed(sameElementType(fail, {{"input", input}, {"grad", grad}})))
    return failure();
  if (!input || !grad || !adaptor.getWeightShapeAttr())
    return input && grad ? fail("requires attribute 'weight_shape'")
                         : failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> weight = adaptor.getWeightShape();
  if (failed(convShape(fail, input.getShape(), weight, adaptor, shape)) ||
      failed(checkGradShape(fail, grad, shape)))
    return failure();
  results.push_back(RankedTensorType::get(weight, grad.getElementType()));
  return success();
}

LogicalResult
MaxPool2dGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<MaxPool2dGradOp>(loc);
  SmallVector<Type, 1> pooled;
  if (failed(poolRule(fail, adaptor.getInput(), adaptor.getKernelSizeAttr(),
                      adaptor.getStrideAttr(), adaptor.getPaddingAttr(),
                      pooled)))
    return failure();
  RankedTensorType grad = tensorOperand(fail, adaptor.getGrad(), "grad");
  if (!grad || failed(checkGradShape(
                   fail, grad, cast<RankedTensorType>(pooled[0]).getShape())))
    return failure();
  results.push_back(adaptor.getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNorm in training
//===----------------------------------------------------------------------===//

namespace {

/// BatchNorm's input [N, C, ...] and its per-channel operands [C]; the
/// per-channel type, or null after reporting.
RankedTensorType batchNormRule(const RuleError &fail, Value input,
                               ArrayRef<std::pair<Value, StringRef>> channels,
                               Attribute eps) {
  RankedTensorType in = tensorOperand(fail, input, "input");
  if (!in)
    return nullptr;
  if (in.getRank() < 2) {
    (void)fail("input must be [N, C, ...], got " + str(in.getShape()));
    return nullptr;
  }
  auto perChannel =
      RankedTensorType::get({in.getDimSize(1)}, in.getElementType());
  for (auto [value, what] : channels) {
    RankedTensorType type = tensorOperand(fail, value, what);
    if (!type)
      return nullptr;
    if (type != perChannel) {
      (void)fail(Twine(what) + " " + str(type.getShape()) + " does not match " +
                 num(in.getDimSize(1)) + " channels of input " +
                 str(in.getShape()));
      return nullptr;
    }
  }
  auto epsAttr = dyn_cast_or_null<FloatAttr>(eps);
  if (!epsAttr || !(epsAttr.getValueAsDouble() > 0)) {
    (void)fail("eps must be positive");
    return nullptr;
  }
  return perChannel;
}

} // namespace

LogicalResult
BatchNormTrainOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<BatchNormTrainOp>(loc);
  RankedTensorType perChannel = batchNormRule(
      fail, adaptor.getInput(),
      {{adaptor.getWeight(), "weight"}, {adaptor.getBias(), "bias"}},
      adaptor.getEpsAttr());
  if (!perChannel)
    return failure();
  results.append({adaptor.getInput().getType(), perChannel, perChannel});
  return success();
}

LogicalResult BatchNormTrainGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<BatchNormTrainGradOp>(loc);
  RankedTensorType perChannel = batchNormRule(fail, adaptor.getInput(),
                                              {{adaptor.getMean(), "mean"},
                                               {adaptor.getVar(), "var"},
                                               {adaptor.getWeight(), "weight"}},
                                              adaptor.getEpsAttr());
  if (!perChannel)
    return failure();
  RankedTensorType grad = tensorOperand(fail, adaptor.getGrad(), "grad");
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (!grad || failed(checkGradShape(fail, grad, input.getShape())))
    return failure();
  results.append({input, perChannel, perChannel});
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<MseLossOp>(loc);
  RankedTensorType input = tensorOperand(fail, adaptor.getInput(), "input");
  RankedTensorType target =
      input ? tensorOperand(fail, adaptor.getTarget(), "target")
            : RankedTensorType();
  if (!input || !target)
    return failure();
  if (input.getShape() != target.getShape())
    return fail("input " + str(input.getShape()) + " and target " +
                str(target.getShape()) + " have different shapes");
  return lossRule(Builder(context), results);
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *context,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<CrossEntropyOp>(loc);
  RankedTensorType logits = tensorOperand(fail, adaptor.getLogits(), "logits");
  RankedTensorType labels =
      logits ? tensorOperand(fail, adaptor.getLabels(), "labels")
             : RankedTensorType();
  if (!logits || !labels)
    return failure();
  if (logits.getRank() != 2)
    return fail("expects logits [batch, classes], got " +
                str(logits.getShape()));
  if (labels.getShape() != ArrayRef<int64_t>{logits.getDimSize(0)})
    return fail("labels " + str(labels.getShape()) + " do not match logits " +
                str(logits.getShape()) + "; expected [" +
                num(logits.getDimSize(0)) + "]");
  return lossRule(Builder(context), results);
}

//===----------------------------------------------------------------------===//
// Gradient helpers, optimizers and state updates
//===----------------------------------------------------------------------===//

LogicalResult CountOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  SmallVector<Type, 1> reduced;
  if (failed(reduceRule(errorsOf<CountOp>(loc), adaptor.getInput(),
                        adaptor.getAxesAttr(), false, reduced)))
    return failure();
  results.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<OneHotOp>(loc);
  RankedTensorType labels = tensorOperand(fail, adaptor.getLabels(), "labels");
  if (!labels)
    return failure();
  if (!adaptor.getClassesAttr())
    return fail("requires attribute 'classes'");
  int64_t classes = adaptor.getClassesAttr().getInt();
  if (classes < 1)
    return fail("classes must be positive, got " + num(classes));
  SmallVector<int64_t> shape(labels.getShape());
  shape.push_back(classes);
  results.push_back(RankedTensorType::get(shape, Float32Type::get(context)));
  return success();
}

LogicalResult
GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<GatherElementsOp>(loc);
  auto [input, indices] =
      indexedOperands(fail, adaptor.getInput(), "input", adaptor.getIndices());
  if (!input)
    return failure();
  if (!adaptor.getAxisAttr())
    return fail("requires attribute 'axis'");
  int64_t axis = adaptor.getAxis(), rank = input.getRank();
  if (axis < 0 || axis >= rank)
    return fail("axis " + num(axis) + " is out of range for input " +
                str(input.getShape()) + " of rank " + num(rank));
  for (int64_t d = 0; d < rank; ++d)
    if (indices.getRank() != rank ||
        (d != axis && indices.getDimSize(d) != input.getDimSize(d)))
      return fail("indices " + str(indices.getShape()) +
                  " must have the shape of input " + str(input.getShape()) +
                  " but along axis " + num(axis));
  results.push_back(
      RankedTensorType::get(indices.getShape(), input.getElementType()));
  return success();
}

LogicalResult GatherElementsGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<GatherElementsGradOp>(loc);
  auto [grad, indices] =
      indexedOperands(fail, adaptor.getGrad(), "grad", adaptor.getIndices());
  if (!grad)
    return failure();
  if (!adaptor.getAxisAttr() || !adaptor.getExtentAttr())
    return fail("requires attributes 'axis' and 'extent'");
  int64_t axis = adaptor.getAxis(), extent = adaptor.getExtent();
  if (axis < 0 || axis >= grad.getRank())
    return fail("axis " + num(axis) + " is out of range for grad " +
                str(grad.getShape()));
  if (indices.getShape() != grad.getShape())
    return fail("indices " + str(indices.getShape()) +
                " must have the shape of grad " + str(grad.getShape()));
  if (extent < 1)
    return fail("extent must be positive, got " + num(extent));
  SmallVector<int64_t> shape(grad.getShape());
  shape[axis] = extent;
  results.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

LogicalResult GatherGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<GatherGradOp>(loc);
  auto [grad, indices] =
      indexedOperands(fail, adaptor.getGrad(), "grad", adaptor.getIndices());
  if (!grad)
    return failure();
  if (!adaptor.getAxisAttr() || !adaptor.getExtentAttr())
    return fail("requires attributes 'axis' and 'extent'");
  int64_t axis = adaptor.getAxis(), extent = adaptor.getExtent();
  int64_t rank = indices.getRank();
  if (axis < 0 || axis > grad.getRank() - rank)
    return fail("axis " + num(axis) + " and indices " +
                str(indices.getShape()) + " do not fit in grad " +
                str(grad.getShape()));
  if (grad.getShape().slice(axis, rank) != indices.getShape())
    return fail("grad " + str(grad.getShape()) + " has no slice per index " +
                str(indices.getShape()) + " at axis " + num(axis));
  if (extent < 1)
    return fail("extent must be positive, got " + num(extent));
  SmallVector<int64_t> shape(grad.getShape().take_front(axis));
  shape.push_back(extent);
  llvm::append_range(shape, grad.getShape().drop_front(axis + rank));
  results.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<SliceGradOp>(loc);
  RankedTensorType grad = tensorOperand(fail, adaptor.getGrad(), "grad");
  if (!grad)
    return failure();
  size_t rank = grad.getRank();
  if (failed(checkArray(fail, adaptor.getShapeAttr(), "shape", rank)) ||
      failed(checkArray(fail, adaptor.getOffsetsAttr(), "offsets", rank)) ||
      failed(checkArray(fail, adaptor.getStridesAttr(), "strides", rank)))
    return failure();
  ArrayRef<int64_t> shape = adaptor.getShape(), offsets = adaptor.getOffsets(),
                    strides = adaptor.getStrides();
  if (std::optional<size_t> d =
          windowOutside(shape, offsets, grad.getShape(), strides))
    return fail("grad " + str(grad.getShape()) + " at offsets " + str(offsets) +
                " strides " + str(strides) + " does not fit in shape " +
                str(shape) + " (dimension " + num(*d) + ")");
  results.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

namespace {

/// Every operand of an optimizer step has the parameter's type.
LogicalResult checkLikeParam(const RuleError &fail, RankedTensorType param,
                             Value value, StringRef what) {
  RankedTensorType type = tensorOperand(fail, value, what);
  if (!type)
    return failure();
  if (type != param)
    return fail(Twine(what) + " " + str(type.getShape()) +
                " does not match param " + str(param.getShape()));
  return success();
}

/// An optimizer's learning rate is a tensor<f32>.
LogicalResult checkScalarLr(const RuleError &fail, Value lr) {
  RankedTensorType type = tensorOperand(fail, lr, "lr");
  if (!type)
    return failure();
  if (type.getRank() != 0 || !type.getElementType().isF32())
    return fail("lr must be a tensor<f32>, got " + str(type.getShape()));
  return success();
}

} // namespace

LogicalResult SgdOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<SgdOp>(loc);
  RankedTensorType param = tensorOperand(fail, adaptor.getParam(), "param");
  if (!param || failed(checkLikeParam(fail, param, adaptor.getGrad(), "grad")))
    return failure();
  if (failed(checkScalarLr(fail, adaptor.getLr())))
    return failure();
  if (!adaptor.getMomentumAttr() || !adaptor.getWeightDecayAttr())
    return fail("requires attributes 'momentum' and 'weight_decay'");
  double momentum = adaptor.getMomentumAttr().getValueAsDouble();
  if (momentum < 0)
    return fail("momentum must not be negative, got " +
                std::to_string(momentum));
  bool hasBuffer = static_cast<bool>(adaptor.getBuffer());
  if (hasBuffer != (momentum != 0))
    return fail(momentum != 0 ? "with momentum needs a momentum buffer operand"
                              : "without momentum takes no buffer operand");
  if (adaptor.getNesterovAttr() && momentum == 0)
    return fail("nesterov needs momentum");
  if (hasBuffer &&
      failed(checkLikeParam(fail, param, adaptor.getBuffer(), "buffer")))
    return failure();
  results.push_back(param);
  if (hasBuffer)
    results.push_back(param);
  return success();
}

LogicalResult AdamOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<AdamOp>(loc);
  RankedTensorType param = tensorOperand(fail, adaptor.getParam(), "param");
  if (!param ||
      failed(checkLikeParam(fail, param, adaptor.getGrad(), "grad")) ||
      failed(checkLikeParam(fail, param, adaptor.getM(), "m")) ||
      failed(checkLikeParam(fail, param, adaptor.getV(), "v")))
    return failure();
  RankedTensorType step = tensorOperand(fail, adaptor.getStep(), "step");
  if (!step)
    return failure();
  if (step.getRank() != 0)
    return fail("step must be a scalar, got " + str(step.getShape()));
  if (failed(checkScalarLr(fail, adaptor.getLr())))
    return failure();
  if (!adaptor.getBetasAttr() || adaptor.getBetas().size() != 2)
    return fail("betas must hold two values");
  for (double beta : adaptor.getBetas())
    if (beta < 0 || beta >= 1)
      return fail("betas must be in [0, 1), got " + std::to_string(beta));
  results.append(3, param);
  return success();
}

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

LogicalResult RandomOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RuleError fail = errorsOf<RandomOp>(loc);
  RankedTensorType step = tensorOperand(fail, adaptor.getStep(), "step");
  if (!step)
    return failure();
  if (step.getRank() != 0 || !step.getElementType().isF32())
    return fail("step must be a 0-d f32 run counter, got " +
                str(step.getShape()) + " of " +
                (step.getElementType().isF32() ? "f32" : "another type"));
  if (!adaptor.getShapeAttr() || !adaptor.getSeedAttr() ||
      !adaptor.getDistributionAttr())
    return fail("requires attributes 'distribution', 'shape' and 'seed'");
  ArrayRef<int64_t> shape = adaptor.getShape();
  for (int64_t dim : shape)
    if (dim < 0)
      return fail("shape " + str(shape) + " has a negative dimension");
  results.push_back(RankedTensorType::get(shape, Float32Type::get(context)));
  return success();
}
