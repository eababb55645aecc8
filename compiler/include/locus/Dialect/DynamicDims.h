//===- DynamicDims.h - dims sized at run time, up to a bound ---*- C++ -*-===//
//
// A graph may declare named dynamic sizes ("batch", "seq") with a bound
// each. Its tensors keep static types, sized at the bounds: every pass that
// places, fuses or costs a graph sees the largest step it will run. Beside
// the types, each dimension of a value has a DimExpr: a static size, or a
// product of the dynamic sizes times a constant ("batch", "batch*seq",
// "16*batch"). DynamicDims finds those of every value: from the inputs'
// `locus.dims`, from the `locus.dims` an op carries when its result's
// dimensions come from attributes (a reshape's target), and otherwise by
// running the op's own shape rule at two sets of probe sizes and reading the
// products back. So a shape rule is written once, for static shapes, and a
// dimension that is not such a product (a window or a stride over a dynamic
// dimension) is refused by name.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DIALECT_DYNAMICDIMS_H
#define LOCUS_DIALECT_DYNAMICDIMS_H

#include "locus/abi.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace locus {

class GraphOp;

/// On a locus.graph: its dynamic sizes, in order, as [["batch", 256], ...]
/// (a name and its bound).
inline constexpr llvm::StringLiteral kSymbolsAttrName = "locus.symbols";
/// On an op of a graph with dynamic sizes: the dimensions of its result as
/// an affine map from the graph's sizes (s0 is the first), e.g.
/// `affine_map<()[s0] -> (s0, 784)>`. Inputs carry it for each dynamic
/// dimension; so do ops whose result shape an attribute gives.
inline constexpr llvm::StringLiteral kDimsAttrName = "locus.dims";

/// The input that holds a run's dynamic sizes, by symbol (i64), which the
/// runtime fills from the inputs' shapes; a kernel that reads or writes a
/// dynamic value takes it as its last argument, marked kSizesArgAttrName.
inline constexpr llvm::StringLiteral kSizesInputName = LOCUS_PLAN_SIZES_INPUT;
inline constexpr llvm::StringLiteral kSizesArgAttrName = "locus.sizes";
/// On a CUDA kernel function after --locus-dynamic-kernels{keep-bounds}:
/// the index of its sizes argument, and each size's bound by symbol, which
/// --locus-map-to-gpu reads to size launches and views.
inline constexpr llvm::StringLiteral kSizesArgIndexAttrName = "locus.sizes_arg";
inline constexpr llvm::StringLiteral kSizeBoundsAttrName = "locus.size_bounds";
/// On a memref op of a kernel that touches host memory (a convolution's
/// parameters copied with the run's batch): host code in a CUDA launcher
/// too, which --locus-map-to-gpu leaves there.
inline constexpr llvm::StringLiteral kHostOnlyAttrName = "locus.host";

/// On the scf.for --locus-lower-to-linalg makes of a locus.gather_grad or
/// gather_elements_grad: one iteration per element of the gradient, whose
/// body adds it into the result (tensor.extract, arith.addf, tensor.insert;
/// once bufferized, a load, an addf and a store). --locus-map-to-gpu runs
/// it as a thread per iteration with the store an atomic add.
inline constexpr llvm::StringLiteral kScatterAddAttrName = "locus.scatter_add";

/// On a locus op in a kernel function, for --locus-lower-to-linalg only:
/// the dims of its dynamic result.
inline constexpr llvm::StringLiteral kResultDimsAttrName = "locus.result_dims";

/// On a tensor.extract_slice that --locus-lower-to-linalg made of a
/// locus.slice with locus.dims (narrow_to): its window takes the run's
/// sizes of a source that is static there.
inline constexpr llvm::StringLiteral kWindowAttrName = "locus.window";

/// The most dynamic sizes one graph may declare.
inline constexpr unsigned kMaxDimSymbols = LOCUS_PLAN_MAX_SIZES;

/// A named dynamic size and the largest value it takes.
struct DimSymbol {
  std::string name;
  int64_t bound = 0;
};

/// The size of one dimension: factor * product of symbol^power.
struct DimExpr {
  int64_t factor = 0;
  /// Power of each symbol, by index; no trailing zeros.
  llvm::SmallVector<int64_t, 2> powers;

  static DimExpr constant(int64_t size) { return DimExpr{size, {}}; }
  static DimExpr symbol(unsigned index);

  bool isStatic() const { return powers.empty(); }
  /// The size when the symbols take `sizes`; none on overflow.
  std::optional<int64_t> evaluate(llvm::ArrayRef<int64_t> sizes) const;
  DimExpr operator*(const DimExpr &other) const;
  /// this / other when it divides exactly for every size, else none.
  std::optional<DimExpr> dividedBy(const DimExpr &other) const;
  bool operator==(const DimExpr &other) const {
    return factor == other.factor && powers == other.powers;
  }
  bool operator!=(const DimExpr &other) const { return !(*this == other); }
};

using DimExprs = llvm::SmallVector<DimExpr, 4>;

/// "batch", "16*batch", "batch*seq", "784".
std::string formatDim(const DimExpr &dim, llvm::ArrayRef<DimSymbol> symbols);
/// "[batch, 784]".
std::string formatDims(llvm::ArrayRef<DimExpr> dims,
                       llvm::ArrayRef<DimSymbol> symbols);
/// Static dims of a shape.
DimExprs staticDims(llvm::ArrayRef<int64_t> shape);
/// The product of `dims`: a tensor's element count.
DimExpr elementCount(llvm::ArrayRef<DimExpr> dims);
/// numpy's broadcast of two shapes of dims (aligned at the right; a static 1
/// takes the other side's dim); none when two dims differ otherwise.
std::optional<DimExprs> broadcastDims(llvm::ArrayRef<DimExpr> a,
                                      llvm::ArrayRef<DimExpr> b);

/// The dims of a reshape of `in` (sized `inShape` at the bounds) into
/// `outShape`: groups of dimensions whose sizes multiply alike are matched
/// (as row-major reshapes go), and inside a group the dynamic sizes go to
/// the one set of output dimensions whose sizes at the bounds they explain.
/// Fails with a message when no set does, or several do.
mlir::FailureOr<DimExprs> reshapeDims(llvm::ArrayRef<DimExpr> in,
                                      llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape,
                                      llvm::ArrayRef<int64_t> bounds,
                                      std::string &why);

/// The `locus.dims` attribute value for `dims`.
mlir::AffineMap dimsToMap(llvm::ArrayRef<DimExpr> dims, unsigned symbolCount,
                          mlir::MLIRContext *context);
/// The dims an affine map of `locus.dims` says, or none when a result is
/// not a product of symbols and a constant.
std::optional<DimExprs> dimsFromMap(mlir::AffineMap map);

/// The symbols a graph declares; an error at the graph for a malformed
/// `locus.symbols` (not [name, bound] pairs, a name twice, a bound below 1,
/// more than kMaxDimSymbols). Empty without the attribute.
mlir::FailureOr<llvm::SmallVector<DimSymbol>> graphSymbols(GraphOp graph);
/// Writes `symbols` as the graph's `locus.symbols`.
void setGraphSymbols(GraphOp graph, llvm::ArrayRef<DimSymbol> symbols);
/// The same for any op that carries `locus.symbols` (a kernel function).
mlir::FailureOr<llvm::SmallVector<DimSymbol>> readSymbols(mlir::Operation *op);
void writeSymbols(mlir::Operation *op, llvm::ArrayRef<DimSymbol> symbols);

/// Passes that make ops "like" a value (gradients, index checks) make
/// broadcasts to its shape at the bounds; each such broadcast that one op
/// reads beside a dynamic operand takes that operand's dims (locus.dims).
/// Then the graph's dims are checked; an error is reported at its op.
mlir::LogicalResult bindBroadcastDims(GraphOp graph);

/// The dims of every value of one graph with dynamic sizes.
class DynamicDims {
public:
  explicit DynamicDims(llvm::SmallVector<DimSymbol> symbols)
      : symbols_(std::move(symbols)) {}

  /// Of every op of `graph`, in order; the first op that fails has said
  /// why. Succeeds with no symbols for a graph without them.
  static mlir::FailureOr<DynamicDims> analyze(GraphOp graph);

  /// Finds the dims of `op`'s results from its operands' (which must have
  /// been inferred before); reports at `op` and fails when they cannot
  /// hold for every size up to the bounds.
  mlir::LogicalResult infer(mlir::Operation *op);
  /// Gives `value` (a kernel function's argument) its dims.
  void set(mlir::Value value, DimExprs dims);
  /// For an op whose operands must share one shape and do not: gives each
  /// operand that a broadcast without dims made the dims of its dynamic
  /// operands (a broadcast other ops read too is cloned for this one
  /// first). Whether it did.
  bool bindBroadcastsOf(mlir::Operation *op);
  /// Drops what infer() found for `op` (the op is about to be erased).
  void forget(mlir::Operation *op);
  /// Adds a symbol (the frontend, when an input declares a new one).
  void addSymbol(DimSymbol symbol) { symbols_.push_back(std::move(symbol)); }

  llvm::ArrayRef<DimSymbol> symbols() const { return symbols_; }
  /// Each symbol's bound, by index.
  llvm::SmallVector<int64_t> bounds() const;
  /// The dims of `value`: its static shape unless it is dynamic.
  DimExprs dimsOf(mlir::Value value) const;
  bool isDynamic(mlir::Value value) const { return dims_.count(value) != 0; }
  /// "[batch, 784]".
  std::string format(mlir::Value value) const;

private:
  mlir::LogicalResult inferByProbes(mlir::Operation *op);
  mlir::LogicalResult inferCall(mlir::CallOpInterface call);
  /// Reports operands whose dims disagree for some size.
  mlir::LogicalResult disagree(mlir::Operation *op) const;
  mlir::LogicalResult takeGiven(mlir::Operation *op, mlir::AffineMap map);
  mlir::LogicalResult inferSlice(mlir::Operation *op, mlir::Value operand,
                                 llvm::ArrayRef<int64_t> offsets,
                                 llvm::ArrayRef<int64_t> strides,
                                 llvm::ArrayRef<int64_t> window,
                                 llvm::ArrayRef<int64_t> whole,
                                 mlir::Value result);

  llvm::SmallVector<DimSymbol> symbols_;
  /// Only values with a dynamic dimension.
  llvm::DenseMap<mlir::Value, DimExprs> dims_;
};

} // namespace locus

#endif // LOCUS_DIALECT_DYNAMICDIMS_H
