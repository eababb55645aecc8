//===- DynamicDims.cpp - dimensions sized at run time, up to a bound ------===//
//
// See DynamicDims.h. The probes: each symbol takes a prime above any
// dimension a bound-sized graph is likely to have, once from each of two
// sets; a result dimension is read back as factor * product of primes^power
// from the first and must match the same product over the second.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/DynamicDims.h"

#include "locus/Dialect/LocusDialect.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"

#include <functional>

using namespace mlir;

namespace locus {

namespace {

constexpr int64_t kProbes[2][kMaxDimSymbols] = {
    {10007, 10009, 10037, 10039, 10061, 10067, 10069, 10079},
    {20011, 20021, 20023, 20029, 20047, 20051, 20063, 20071}};

void trim(SmallVectorImpl<int64_t> &powers) {
  while (!powers.empty() && powers.back() == 0)
    powers.pop_back();
}

std::optional<int64_t> multiply(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    return std::nullopt;
  return out;
}

/// `value` as factor * product of probes[k]^power, or none for a value the
/// second probe set does not confirm. A static factor may itself be a
/// multiple of a probe, so each power is tried from the most the value
/// allows down to 0 until the second set agrees.
std::optional<DimExpr> readBack(int64_t value, int64_t second,
                                unsigned symbolCount) {
  DimExpr dim{value, SmallVector<int64_t, 2>(symbolCount, 0)};
  SmallVector<int64_t, kMaxDimSymbols> most(symbolCount, 0);
  for (unsigned k = 0; k < symbolCount && value != 0; ++k)
    for (int64_t rest = value; rest % kProbes[0][k] == 0; rest /= kProbes[0][k])
      ++most[k];
  ArrayRef<int64_t> seconds(kProbes[1], symbolCount);
  std::function<bool(unsigned, int64_t)> search = [&](unsigned k,
                                                      int64_t rest) {
    if (k == symbolCount) {
      dim.factor = rest;
      return dim.evaluate(seconds) == second;
    }
    int64_t divided = rest;
    SmallVector<int64_t, 4> quotients{rest};
    for (int64_t p = 1; p <= most[k]; ++p)
      quotients.push_back(divided /= kProbes[0][k]);
    for (int64_t p = most[k]; p >= 0; --p) {
      dim.powers[k] = p;
      if (search(k + 1, quotients[p]))
        return true;
    }
    dim.powers[k] = 0;
    return false;
  };
  if (!search(0, value))
    return std::nullopt;
  trim(dim.powers);
  return dim;
}

/// One monomial of an affine expression: constants, symbols and their
/// products.
bool monomial(AffineExpr expr, DimExpr &into) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    std::optional<int64_t> factor = multiply(into.factor, constant.getValue());
    into.factor = factor.value_or(0);
    return factor.has_value();
  }
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr)) {
    if (into.powers.size() <= symbol.getPosition())
      into.powers.resize(symbol.getPosition() + 1, 0);
    ++into.powers[symbol.getPosition()];
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  return binary && binary.getKind() == AffineExprKind::Mul &&
         monomial(binary.getLHS(), into) && monomial(binary.getRHS(), into);
}

RankedTensorType tensorTypeOf(Value value) {
  return dyn_cast<RankedTensorType>(value.getType());
}

/// The op's shape rule on `operands`, its diagnostics swallowed: at probe
/// sizes its numbers would mean nothing to the user.
LogicalResult probeRule(Operation *op, ValueRange operands,
                        SmallVectorImpl<Type> &results) {
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  return cast<InferTypeOpInterface>(op).inferReturnTypes(
      op->getContext(), op->getLoc(), operands, op->getRawDictionaryAttrs(),
      op->getPropertiesStorage(), op->getRegions(), results);
}

/// Ops whose tensor operands and results all have one shape.
bool allOneShape(Operation *op) {
  return !isa<BroadcastOp>(op) &&
         (op->hasTrait<mlir::OpTrait::SameOperandsAndResultType>() ||
          op->hasTrait<mlir::OpTrait::SameOperandsAndResultShape>() ||
          op->hasTrait<locus::OpTrait::Elementwise>());
}

} // namespace

//===----------------------------------------------------------------------===//
// DimExpr
//===----------------------------------------------------------------------===//

DimExpr DimExpr::symbol(unsigned index) {
  DimExpr dim{1, {}};
  dim.powers.assign(index + 1, 0);
  dim.powers[index] = 1;
  return dim;
}

std::optional<int64_t> DimExpr::evaluate(ArrayRef<int64_t> sizes) const {
  if (powers.size() > sizes.size())
    return std::nullopt;
  std::optional<int64_t> value = factor;
  for (auto [k, power] : llvm::enumerate(powers))
    for (int64_t i = 0; i < power && value; ++i)
      value = multiply(*value, sizes[k]);
  return value;
}

DimExpr DimExpr::operator*(const DimExpr &other) const {
  DimExpr out{multiply(factor, other.factor).value_or(0), powers};
  if (out.powers.size() < other.powers.size())
    out.powers.resize(other.powers.size(), 0);
  for (auto [k, power] : llvm::enumerate(other.powers))
    out.powers[k] += power;
  return out;
}

std::optional<DimExpr> DimExpr::dividedBy(const DimExpr &other) const {
  if (other.factor == 0 || factor % other.factor != 0 ||
      other.powers.size() > powers.size())
    return std::nullopt;
  DimExpr out{factor / other.factor, powers};
  for (auto [k, power] : llvm::enumerate(other.powers)) {
    if (out.powers[k] < power)
      return std::nullopt;
    out.powers[k] -= power;
  }
  trim(out.powers);
  return out;
}

std::string formatDim(const DimExpr &dim, ArrayRef<DimSymbol> symbols) {
  if (dim.isStatic())
    return std::to_string(dim.factor);
  std::string text = dim.factor == 1 ? "" : std::to_string(dim.factor);
  for (auto [k, power] : llvm::enumerate(dim.powers)) {
    if (power == 0)
      continue;
    if (!text.empty())
      text += "*";
    text += k < symbols.size() ? symbols[k].name : "s" + std::to_string(k);
    if (power > 1)
      text += "^" + std::to_string(power);
  }
  return text;
}

std::string formatDims(ArrayRef<DimExpr> dims, ArrayRef<DimSymbol> symbols) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(dims))
    text += (i ? ", " : "") + formatDim(dim, symbols);
  return text + "]";
}

DimExprs staticDims(ArrayRef<int64_t> shape) {
  DimExprs dims;
  for (int64_t size : shape)
    dims.push_back(DimExpr::constant(size));
  return dims;
}

DimExpr elementCount(ArrayRef<DimExpr> dims) {
  DimExpr count = DimExpr::constant(1);
  for (const DimExpr &dim : dims)
    count = count * dim;
  return count;
}

std::optional<DimExprs> broadcastDims(ArrayRef<DimExpr> a,
                                      ArrayRef<DimExpr> b) {
  size_t rank = std::max(a.size(), b.size());
  DimExprs out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const DimExpr *x = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const DimExpr *y = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    DimExpr one = DimExpr::constant(1);
    if (!x || *x == one)
      out[rank - 1 - i] = y ? *y : one;
    else if (!y || *y == one || *x == *y)
      out[rank - 1 - i] = *x;
    else
      return std::nullopt;
  }
  return out;
}

namespace {

/// Every way to hand each unit of `units` (symbol indices, with repeats) to
/// one of `outs` output dimensions such that each output's size at the
/// bounds is its symbols times a whole constant and the constants multiply
/// to `factor`; stops counting at two.
void splitGroup(ArrayRef<unsigned> units, size_t next, DimExprs &outs,
                ArrayRef<int64_t> sizes, ArrayRef<int64_t> bounds,
                int64_t factor, DimExprs &found, int &ways) {
  if (ways > 1)
    return;
  if (next == units.size()) {
    DimExprs candidate;
    int64_t constants = 1;
    for (auto [j, out] : llvm::enumerate(outs)) {
      std::optional<int64_t> symbolic = out.evaluate(bounds);
      if (!symbolic || *symbolic == 0 || sizes[j] % *symbolic != 0)
        return;
      DimExpr dim = out;
      dim.factor = sizes[j] / *symbolic;
      constants *= dim.factor;
      candidate.push_back(dim);
    }
    if (constants == factor && ways++ == 0)
      found = candidate;
    return;
  }
  for (DimExpr &out : outs) {
    DimExpr saved = out;
    out = out * DimExpr::symbol(units[next]);
    splitGroup(units, next + 1, outs, sizes, bounds, factor, found, ways);
    out = saved;
  }
}

} // namespace

FailureOr<DimExprs> reshapeDims(ArrayRef<DimExpr> in, ArrayRef<int64_t> inShape,
                                ArrayRef<int64_t> outShape,
                                ArrayRef<int64_t> bounds, std::string &why) {
  DimExprs out(outShape.size(), DimExpr::constant(1));
  size_t i = 0, j = 0;
  while (i < in.size() || j < outShape.size()) {
    // Size-1 dimensions belong to no group.
    if (i < in.size() && inShape[i] == 1 && in[i].isStatic()) {
      ++i;
      continue;
    }
    if (j < outShape.size() && outShape[j] == 1) {
      ++j;
      continue;
    }
    if (i == in.size() || j == outShape.size()) {
      why = "the sizes do not match up";
      return failure();
    }
    size_t i0 = i, j0 = j;
    int64_t pin = inShape[i++], pout = outShape[j++];
    while (pin != pout) {
      if (pin < pout && i < in.size())
        pin *= inShape[i++];
      else if (pout < pin && j < outShape.size())
        pout *= outShape[j++];
      else {
        why = "the sizes do not match up";
        return failure();
      }
    }
    DimExpr group = elementCount(in.slice(i0, i - i0));
    SmallVector<unsigned> units;
    for (auto [k, power] : llvm::enumerate(group.powers))
      units.append(power, k);
    DimExprs outs(j - j0, DimExpr::constant(1)), found;
    int ways = 0;
    if (units.size() > 6) {
      why = "too many dynamic sizes in one group";
      return failure();
    }
    splitGroup(units, 0, outs, outShape.slice(j0, j - j0), bounds, group.factor,
               found, ways);
    if (ways != 1) {
      why = ways == 0 ? "no output dimensions take the dynamic sizes"
                      : "the dynamic sizes fit more than one way (give "
                        "different dynamic sizes different bounds, or the "
                        "dims)";
      return failure();
    }
    for (auto [k, dim] : llvm::enumerate(found))
      out[j0 + k] = dim;
  }
  return out;
}

AffineMap dimsToMap(ArrayRef<DimExpr> dims, unsigned symbolCount,
                    MLIRContext *context) {
  SmallVector<AffineExpr> results;
  for (const DimExpr &dim : dims) {
    AffineExpr expr = getAffineConstantExpr(dim.factor, context);
    for (auto [k, power] : llvm::enumerate(dim.powers))
      for (int64_t i = 0; i < power; ++i)
        expr = expr * getAffineSymbolExpr(k, context);
    results.push_back(expr);
  }
  return AffineMap::get(0, symbolCount, results, context);
}

std::optional<DimExprs> dimsFromMap(AffineMap map) {
  if (map.getNumDims() != 0)
    return std::nullopt;
  DimExprs dims;
  for (AffineExpr expr : map.getResults()) {
    DimExpr dim{1, {}};
    if (!monomial(expr, dim))
      return std::nullopt;
    trim(dim.powers);
    dims.push_back(dim);
  }
  return dims;
}

//===----------------------------------------------------------------------===//
// The graph's symbols
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<DimSymbol>> readSymbols(Operation *graph) {
  SmallVector<DimSymbol> symbols;
  Attribute attr = graph->getAttr(kSymbolsAttrName);
  if (!attr)
    return symbols;
  auto list = dyn_cast<ArrayAttr>(attr);
  auto malformed = [&] {
    return graph->emitOpError()
           << kSymbolsAttrName
           << " must be a list of [name, bound] pairs, e.g. "
              "[[\"batch\", 256]]";
  };
  if (!list)
    return malformed();
  llvm::StringSet<> seen;
  for (Attribute entry : list) {
    auto pair = dyn_cast<ArrayAttr>(entry);
    auto name =
        pair && pair.size() == 2 ? dyn_cast<StringAttr>(pair[0]) : StringAttr();
    auto bound = pair && pair.size() == 2 ? dyn_cast<IntegerAttr>(pair[1])
                                          : IntegerAttr();
    if (!name || !bound || name.getValue().empty())
      return malformed();
    if (!seen.insert(name.getValue()).second)
      return graph->emitOpError()
             << "dynamic size '" << name.getValue() << "' is declared twice";
    if (bound.getInt() < 1)
      return graph->emitOpError()
             << "dynamic size '" << name.getValue() << "' has bound "
             << bound.getInt() << "; a bound is at least 1";
    symbols.push_back({name.getValue().str(), bound.getInt()});
  }
  if (symbols.size() > kMaxDimSymbols)
    return graph->emitOpError() << "declares " << symbols.size()
                                << " dynamic sizes; at most " << kMaxDimSymbols;
  return symbols;
}

FailureOr<SmallVector<DimSymbol>> graphSymbols(GraphOp graph) {
  return readSymbols(graph);
}

void setGraphSymbols(GraphOp graph, ArrayRef<DimSymbol> symbols) {
  writeSymbols(graph, symbols);
}

void writeSymbols(Operation *graph, ArrayRef<DimSymbol> symbols) {
  Builder b(graph->getContext());
  SmallVector<Attribute> list;
  for (const DimSymbol &symbol : symbols)
    list.push_back(b.getArrayAttr(
        {b.getStringAttr(symbol.name), b.getI64IntegerAttr(symbol.bound)}));
  graph->setAttr(kSymbolsAttrName, b.getArrayAttr(list));
}

//===----------------------------------------------------------------------===//
// DynamicDims
//===----------------------------------------------------------------------===//

FailureOr<DynamicDims> DynamicDims::analyze(GraphOp graph) {
  FailureOr<SmallVector<DimSymbol>> symbols = graphSymbols(graph);
  if (failed(symbols))
    return failure();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  DynamicDims dims(std::move(*symbols));
  for (Operation &op : graph.getBodyBlock()) {
    if (dims.symbols().empty() && op.hasAttr(kDimsAttrName))
      return op.emitOpError() << "has " << kDimsAttrName
                              << " but its graph declares no dynamic size ("
                              << kSymbolsAttrName << ")";
    if (!dims.symbols().empty() && failed(dims.infer(&op)))
      return failure();
  }
  return dims;
}

SmallVector<int64_t> DynamicDims::bounds() const {
  SmallVector<int64_t> sizes;
  for (const DimSymbol &symbol : symbols_)
    sizes.push_back(symbol.bound);
  return sizes;
}

DimExprs DynamicDims::dimsOf(Value value) const {
  auto it = dims_.find(value);
  if (it != dims_.end())
    return it->second;
  RankedTensorType type = tensorTypeOf(value);
  return type ? staticDims(type.getShape()) : DimExprs();
}

std::string DynamicDims::format(Value value) const {
  return formatDims(dimsOf(value), symbols_);
}

void DynamicDims::set(Value value, DimExprs dims) {
  if (llvm::all_of(dims, [](const DimExpr &d) { return d.isStatic(); }))
    dims_.erase(value);
  else
    dims_[value] = std::move(dims);
}

void DynamicDims::forget(Operation *op) {
  for (Value result : op->getResults())
    dims_.erase(result);
}

LogicalResult DynamicDims::infer(Operation *op) {
  if (auto attr = op->getAttrOfType<AffineMapAttr>(kDimsAttrName))
    return takeGiven(op, attr.getValue());
  if (op->hasAttr(kDimsAttrName))
    return op->emitOpError() << kDimsAttrName << " must be an affine map";
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    for (Operation &inner : kernel.getBodyBlock())
      if (failed(infer(&inner)))
        return failure();
    auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
    for (auto [result, yielded] :
         llvm::zip(kernel.getResults(), yield.getValues()))
      set(result, dimsOf(yielded));
    return success();
  }
  if (auto call = dyn_cast<CallOpInterface>(op))
    return inferCall(call);
  bool dynamic =
      llvm::any_of(op->getOperands(), [&](Value v) { return isDynamic(v); });
  if (!dynamic || op->getNumResults() == 0) {
    if (auto assign = dyn_cast<AssignOp>(op); assign && dynamic)
      return op->emitOpError()
             << "writes a value of dynamic shape " << format(assign.getValue())
             << " into state, whose shape is static";
    return success();
  }
  if (auto slice = dyn_cast<SliceOp>(op))
    return inferSlice(op, slice.getInput(), slice.getOffsets(),
                      slice.getStrides(), slice.getType().getShape(),
                      slice.getInput().getType().getShape(), slice.getResult());
  if (auto grad = dyn_cast<SliceGradOp>(op))
    return inferSlice(op, grad.getGrad(), grad.getOffsets(), grad.getStrides(),
                      grad.getGrad().getType().getShape(),
                      grad.getType().getShape(), grad.getResult());
  if (auto concat = dyn_cast<ConcatOp>(op))
    for (Value input : concat.getInputs())
      if (!dimsOf(input)[concat.getAxis()].isStatic())
        return op->emitOpError()
               << "joins " << format(input) << " along dimension "
               << concat.getAxis()
               << ", which is dynamic: not supported yet (a concatenation "
                  "along a static dimension is)";
  if (auto gather = dyn_cast<GatherOp>(op);
      gather && !dimsOf(gather.getInput())[gather.getAxis()].isStatic())
    return op->emitOpError()
           << "gathers along a dynamic dimension of "
           << format(gather.getInput()) << ": not supported yet";
  if (allOneShape(op)) {
    std::optional<DimExprs> common;
    for (Value operand : op->getOperands()) {
      if (!tensorTypeOf(operand))
        continue;
      DimExprs dims = dimsOf(operand);
      if (common && *common != dims)
        return disagree(op);
      common = std::move(dims);
    }
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    std::string why;
    FailureOr<DimExprs> dims = reshapeDims(
        dimsOf(reshape.getInput()), reshape.getInput().getType().getShape(),
        reshape.getType().getShape(), bounds(), why);
    if (failed(dims))
      return op->emitOpError()
             << "cannot reshape " << format(reshape.getInput()) << " into "
             << formatShape(reshape.getType().getShape())
             << " for every size: " << why;
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    set(reshape.getResult(), std::move(*dims));
    return success();
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    // Recorded without dims: it keeps those it does not expand, and the
    // ones it expands are static.
    DimExprs in = dimsOf(broadcast.getInput());
    ArrayRef<int64_t> inShape = broadcast.getInput().getType().getShape();
    ArrayRef<int64_t> outShape = broadcast.getType().getShape();
    DimExprs dims = staticDims(outShape);
    for (size_t k = 0; k < in.size() && k < dims.size(); ++k)
      if (inShape[in.size() - 1 - k] == outShape[dims.size() - 1 - k])
        dims[dims.size() - 1 - k] = in[in.size() - 1 - k];
    if (llvm::any_of(llvm::zip(in, inShape), [](auto pair) {
          return !std::get<0>(pair).isStatic() && std::get<1>(pair) == 1;
        }))
      return op->emitOpError() << "expands a dynamic dimension of "
                               << format(broadcast.getInput());
    set(broadcast.getResult(), std::move(dims));
    return success();
  }
  if (auto grad = dyn_cast<Conv2dInputGradOp>(op)) {
    // The input's shape is an attribute, at the bounds: the batch is the
    // gradient's, the only dimension of either that may be dynamic.
    DimExprs in = dimsOf(grad.getGrad());
    DimExprs dims = staticDims(grad.getType().getShape());
    bool batchOnly = !isDynamic(grad.getWeight()) &&
                     llvm::all_of(llvm::drop_begin(in), [](const DimExpr &d) {
                       return d.isStatic();
                     });
    if (!batchOnly)
      return op->emitOpError()
             << "takes " << format(grad.getGrad())
             << ": of a convolution's dimensions only the batch may be "
                "dynamic";
    dims[0] = in[0];
    set(grad.getResult(), std::move(dims));
    return success();
  }
  if (isa<InferTypeOpInterface>(op))
    return inferByProbes(op);
  // The ops without a shape rule that take dynamic values: moves, copies
  // and same-type elementwise ops give each result its operand's type.
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    if (i >= op->getNumOperands() ||
        result.getType() != op->getOperand(i).getType() ||
        op->getNumRegions() != 0)
      return op->emitOpError()
             << "takes a value of dynamic shape " << format(op->getOperand(0))
             << ", which it does not support";
    set(result, dimsOf(op->getOperand(i)));
  }
  return success();
}

/// A slice takes a dynamic dimension whole, with its dims, or a window of
/// fixed size in it (counted from its start, or from its end for an offset
/// below zero), which is static. `operand` is the slice's input, or a
/// slice gradient's window: a gradient that writes a window smaller than a
/// dynamic dimension is given the whole's dims (locus.dims), so here its
/// window's dynamic dimensions are whole.
LogicalResult DynamicDims::inferSlice(Operation *op, Value operand,
                                      ArrayRef<int64_t> offsets,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> window,
                                      ArrayRef<int64_t> whole, Value result) {
  DimExprs dims = staticDims(tensorTypeOf(result).getShape());
  for (auto [d, dim] : llvm::enumerate(dimsOf(operand))) {
    if (dim.isStatic())
      continue;
    if (offsets[d] == 0 && strides[d] == 1 && window[d] == whole[d])
      dims[d] = dim;
    else if (isa<SliceGradOp>(op))
      return op->emitOpError()
             << "writes a window of " << format(operand)
             << " along its dimension " << d
             << ", which is dynamic: a slice's window is static there";
  }
  set(result, std::move(dims));
  return success();
}

LogicalResult DynamicDims::takeGiven(Operation *op, AffineMap map) {
  std::optional<DimExprs> dims = dimsFromMap(map);
  RankedTensorType type = op->getNumResults() == 1
                              ? tensorTypeOf(op->getResult(0))
                              : RankedTensorType();
  if (!type)
    return op->emitOpError()
           << kDimsAttrName << " is for an op of one tensor result";
  if (!dims || map.getNumSymbols() > symbols_.size())
    return op->emitOpError()
           << kDimsAttrName << " " << AffineMapAttr::get(map)
           << " must give each dimension as a product of the graph's "
           << symbols_.size() << " dynamic sizes and a constant";
  for (auto [d, dim] : llvm::enumerate(*dims))
    if (d >= static_cast<size_t>(type.getRank()) ||
        dim.evaluate(bounds()) != type.getDimSize(d))
      return op->emitOpError()
             << "dims " << formatDims(*dims, symbols_)
             << " do not give its type's shape " << formatShape(type.getShape())
             << " at the bounds";
  if (dims->size() != static_cast<size_t>(type.getRank()))
    return op->emitOpError() << "dims " << formatDims(*dims, symbols_)
                             << " have another rank than its type "
                             << formatShape(type.getShape());
  if (isa<InputOp>(op)) {
    for (const DimExpr &dim : *dims)
      if (!dim.isStatic() &&
          (dim.factor != 1 ||
           llvm::count_if(dim.powers, [](int64_t p) { return p != 0; }) != 1 ||
           llvm::is_contained(dim.powers, 2)))
        return op->emitOpError() << "an input's dimension is a size or a "
                                    "single dynamic size, not "
                                 << formatDim(dim, symbols_);
  } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    if (elementCount(dimsOf(reshape.getInput())) != elementCount(*dims))
      return op->emitOpError()
             << "reshapes " << format(reshape.getInput()) << " into "
             << formatDims(*dims, symbols_)
             << ": not the same number of elements for every size";
  } else if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    std::optional<DimExprs> joined =
        broadcastDims(dimsOf(broadcast.getInput()), *dims);
    if (!joined || *joined != *dims)
      return op->emitOpError()
             << "cannot broadcast " << format(broadcast.getInput()) << " to "
             << formatDims(*dims, symbols_) << " for every size";
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    // narrow_to: the leading window of a value built at the bounds, at the
    // run's sizes where it is dynamic.
    DimExprs in = dimsOf(slice.getInput());
    ArrayRef<int64_t> inShape = slice.getInput().getType().getShape();
    for (auto [d, dim] : llvm::enumerate(*dims)) {
      bool whole = slice.getOffsets()[d] == 0 && slice.getStrides()[d] == 1 &&
                   slice.getSizes()[d] == inShape[d];
      if (dim.isStatic() ? !in[d].isStatic()
                         : !whole || (!in[d].isStatic() && in[d] != dim))
        return op->emitOpError()
               << "takes the window " << formatDims(*dims, symbols_) << " of "
               << format(slice.getInput())
               << ": a window with dims takes each dynamic dimension from "
                  "offset 0 of a static one, and keeps the others";
    }
  } else if (auto grad = dyn_cast<SliceGradOp>(op)) {
    // The gradient of a window of fixed size in a dynamic dimension: the
    // sliced value's dims, where the window's dynamic dimensions are whole.
    DimExprs window = dimsOf(grad.getGrad());
    for (auto [d, dim] : llvm::enumerate(window))
      if (!dim.isStatic() && dim != (*dims)[d])
        return op->emitOpError()
               << "writes " << format(grad.getGrad()) << " into "
               << formatDims(*dims, symbols_)
               << ": a dynamic dimension of the window is the whole's";
  } else if (!isa<RandomOp>(op)) {
    // A random draw has no operand to follow: it takes the dims of the
    // value it is drawn for (dropout's input).
    return op->emitOpError() << kDimsAttrName
                             << " is given only on inputs, reshapes, "
                                "broadcasts, windows, slice gradients and "
                                "random draws; other ops' dims follow from "
                                "their operands";
  }
  set(op->getResult(0), std::move(*dims));
  return success();
}

bool DynamicDims::bindBroadcastsOf(Operation *op) {
  if (!allOneShape(op))
    return false;
  std::optional<DimExprs> reference;
  for (Value operand : op->getOperands())
    if (isDynamic(operand)) {
      reference = dimsOf(operand);
      break;
    }
  if (!reference)
    return false;
  for (Value operand : op->getOperands()) {
    if (!tensorTypeOf(operand) || dimsOf(operand) == *reference)
      continue;
    auto broadcast = operand.getDefiningOp<BroadcastOp>();
    if (!broadcast || broadcast->hasAttr(kDimsAttrName) ||
        broadcastDims(dimsOf(broadcast.getInput()), *reference) != *reference)
      return false;
    if (llvm::any_of(operand.getUsers(),
                     [&](Operation *user) { return user != op; })) {
      // Other ops read it too, maybe beside values of other dims: this op
      // gets a broadcast of its own (one dropped when nothing else reads it).
      auto own = cast<BroadcastOp>(OpBuilder(op).clone(*broadcast));
      op->replaceUsesOfWith(operand, own.getResult());
      if (broadcast->use_empty()) {
        forget(broadcast);
        broadcast->erase();
      }
      broadcast = own;
    }
    broadcast->setAttr(kDimsAttrName,
                       AffineMapAttr::get(dimsToMap(*reference, symbols_.size(),
                                                    op->getContext())));
    if (failed(infer(broadcast)))
      return false;
  }
  return true;
}

LogicalResult bindBroadcastDims(GraphOp graph) {
  FailureOr<SmallVector<DimSymbol>> symbols = graphSymbols(graph);
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  if (failed(symbols) || symbols->empty())
    return success(succeeded(symbols));
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  DynamicDims dims(std::move(*symbols));
  for (Operation &op : graph.getBodyBlock()) {
    {
      ScopedDiagnosticHandler quiet(graph.getContext(),
                                    [](Diagnostic &) { return success(); });
      if (succeeded(dims.infer(&op)))
        continue;
      dims.forget(&op);
      if (!dims.bindBroadcastsOf(&op))
        continue; // reported below, with the handler gone
      if (succeeded(dims.infer(&op)))
        continue;
    }
  }
  return success(succeeded(DynamicDims::analyze(graph)));
}

LogicalResult DynamicDims::disagree(Operation *op) const {
  std::string shapes;
  for (Value operand : op->getOperands())
    if (tensorTypeOf(operand))
      shapes += (shapes.empty() ? "" : ", ") + format(operand);
  return op->emitOpError()
         << "operands " << shapes
         << " agree at the bounds but not for every size of the dynamic "
            "dimensions";
}

/// A kernel call's results take the dims its function's results carry
/// (--locus-outline-kernels writes them).
LogicalResult DynamicDims::inferCall(CallOpInterface call) {
  auto callee = dyn_cast_or_null<FunctionOpInterface>(call.resolveCallable());
  if (!callee)
    return call->emitOpError() << "calls no function this graph can see";
  for (auto [i, result] : llvm::enumerate(call->getResults())) {
    auto attr = callee.getResultAttrOfType<AffineMapAttr>(i, kDimsAttrName);
    std::optional<DimExprs> dims =
        attr ? dimsFromMap(attr.getValue()) : std::nullopt;
    if (attr && !dims)
      return call->emitOpError() << "calls a function whose result " << i
                                 << " has malformed " << kDimsAttrName;
    if (dims)
      set(result, std::move(*dims));
  }
  return success();
}

LogicalResult DynamicDims::inferByProbes(Operation *op) {
  unsigned count = symbols_.size();
  SmallVector<SmallVector<Type>> probed(2);
  for (int probe = 0; probe < 2; ++probe) {
    ArrayRef<int64_t> sizes(kProbes[probe], count);
    Block scratch;
    for (Value operand : op->getOperands()) {
      Type type = operand.getType();
      if (RankedTensorType tensor = tensorTypeOf(operand)) {
        // Shape rules multiply an operand's dimensions: keep that product
        // inside int64 at the probes.
        SmallVector<int64_t> shape;
        std::optional<int64_t> count = 1;
        for (const DimExpr &dim : dimsOf(operand)) {
          std::optional<int64_t> size = dim.evaluate(sizes);
          count = size && count ? multiply(*count, *size) : std::nullopt;
          shape.push_back(size.value_or(0));
        }
        if (!count || *count > (int64_t(1) << 62))
          return op->emitOpError()
                 << "operand " << format(operand)
                 << " has too many dynamic dimensions multiplied together";
        type = RankedTensorType::get(shape, tensor.getElementType());
      }
      scratch.addArgument(type, op->getLoc());
    }
    if (failed(probeRule(op, scratch.getArguments(), probed[probe]))) {
      return disagree(op);
    }
  }
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    auto first = dyn_cast<RankedTensorType>(probed[0][i]);
    auto second = dyn_cast<RankedTensorType>(probed[1][i]);
    RankedTensorType actual = tensorTypeOf(result);
    if (!first || !second || !actual)
      continue;
    DimExprs dims;
    for (int64_t d = 0; d < first.getRank(); ++d) {
      std::optional<DimExpr> dim =
          readBack(first.getDimSize(d), second.getDimSize(d), count);
      if (!dim)
        return op->emitOpError()
               << "dimension " << d << " of its result depends on a "
               << "dynamic size other than as a product of them (a window, "
               << "a stride or padding over a dynamic dimension); this is "
                  "not supported";
      if (dim->evaluate(bounds()) != actual.getDimSize(d))
        return op->emitOpError()
               << "dimension " << d << " of its result is "
               << formatDim(*dim, symbols_) << ", which is not "
               << actual.getDimSize(d) << " at the bounds";
      dims.push_back(*dim);
    }
    set(result, std::move(dims));
  }
  return success();
}

} // namespace locus
