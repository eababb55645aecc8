//===- GraphImpl.h - the frontend's view of a graph (private) ---*- C++ -*-===//

#ifndef LOCUS_FRONTEND_GRAPHIMPL_H
#define LOCUS_FRONTEND_GRAPHIMPL_H

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dialect/LocusDialect.h"
#include "locus/Frontend/Graph.h"
#include "locus/Frontend/Recorded.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"

#include "UserText.h"

#include <map>
#include <optional>

namespace locus::detail {

/// An op's name as users write it: "add" for "locus.add".
inline llvm::StringRef userOpName(llvm::StringRef operationName) {
  operationName.consume_front("locus.");
  return operationName;
}

/// Collects the first diagnostic emitted while it lives (with its notes).
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext *context)
      : handler(context, [this](mlir::Diagnostic &diag) {
          if (text.empty()) {
            text = diag.str();
            // The verifier's "see current operation: <IR>" is MLIR, not
            // the user's terms: the message already names the user's line.
            for (mlir::Diagnostic &note : diag.getNotes())
              if (!llvm::StringRef(note.str())
                       .starts_with("see current operation"))
                text += "; " + note.str();
          }
          return mlir::success();
        }) {}

  /// The captured message, or a generic one if nothing was emitted; the
  /// dialect's "'locus.linear' op input ..." as "linear: input ...", the op
  /// named as the user's call names it.
  std::string take() {
    if (text.empty())
      return "invalid operation";
    llvm::StringRef message(text);
    constexpr llvm::StringLiteral prefix = "'locus.", suffix = "' op ";
    size_t end = message.find(suffix);
    if (!message.starts_with(prefix) || end == llvm::StringRef::npos)
      return std::move(text);
    return CallName::label(message.slice(prefix.size(), end).str()) + ": " +
           message.drop_front(end + suffix.size()).str();
  }

private:
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
};

struct GraphImpl : std::enable_shared_from_this<GraphImpl> {
  GraphImpl(std::string name, const Here &loc);

  std::string name;
  mlir::MLIRContext context;
  mlir::OpBuilder builder;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GraphOp graph;
  uint64_t seedBase = 0;
  /// Inputs and state share one namespace; outputs have their own. The value
  /// is where the name was first used ("file:line").
  std::map<std::string, std::string> sourceNames, outputNames;
  std::map<std::string, int> nameCounters;
  /// A layer now recording: where it was built and its name ("" for a
  /// layer without one, such as an unnamed user module).
  struct ActiveLayer {
    SourcePlace builtAt;
    std::string name;
  };
  /// The layers now recording, innermost last.
  std::vector<ActiveLayer> layerStack;
  /// The name of the innermost named layer now recording, or "".
  const std::string &layerPath() const;
  /// Where an importer's ops come from (OriginScope); null otherwise.
  std::optional<mlir::Location> origin;
  /// The values state given them starts from, by state name.
  std::map<std::string, std::shared_ptr<const std::vector<float>>> stateValues;

  /// The graph's dynamic sizes and the dims of its values, from the first
  /// input with a dynamic dimension on; null before.
  std::unique_ptr<DynamicDims> dynamic;
  /// The index of dynamic size `name`, declared on the graph at its first
  /// use; an Error when it was declared with another bound.
  unsigned declareSymbol(const std::string &name, int64_t bound,
                         const Here &loc);
  /// The dims of a value: its shape unless the graph has dynamic sizes.
  DimExprs dimsOf(mlir::Value value) const;
  /// numpy's broadcast of the values' dims (a clash is reported when the op
  /// is recorded).
  DimExprs broadcastDimsOf(llvm::ArrayRef<mlir::Value> values) const;
  /// The locus.dims attribute for `dims`, or null when they are static.
  mlir::Attribute dimsAttr(llvm::ArrayRef<DimExpr> dims);

  mlir::Block &body();
  /// The user's call, within the innermost layer now recording if any.
  mlir::Location location(const Here &loc);
  /// " (in layer 'fc' built at file:line)" inside a layer ("in the layer"
  /// for one without a name), "" outside.
  std::string inLayer() const;
  static std::string where(const Here &loc);
  static std::string where(const SourcePlace &place);

  /// The graph of a tensor; an Error for an empty handle.
  static GraphImpl &of(const Tensor &tensor, const Here &loc);
  /// The MLIR value of a tensor of this graph; an Error otherwise.
  mlir::Value value(const Tensor &tensor, const Here &loc);
  Tensor wrap(mlir::Value value);

  mlir::RankedTensorType tensorType(const Shape &shape, DType dtype,
                                    const Here &loc);
  DeviceAttr deviceAttr(const Device &device);
  static Shape shapeOf(mlir::Value value);
  static DType dtypeOfValue(mlir::Value value);
  /// An Error unless `value` holds `want` elements: "<op> expects f32
  /// tensors, but <what> is i64 [4, 5]; ..." with the cast that fixes it.
  static void requireDType(mlir::Value value, DType want, llvm::StringRef op,
                           const std::string &what, const Here &loc);
  /// `axis` in [0, rank); an Error naming `op` (or the call recording it)
  /// otherwise.
  int64_t normalizeAxis(int64_t axis, mlir::Value value, llvm::StringRef op,
                        const Here &loc);

  /// An Error unless `name` is new in `names`.
  void claimName(std::map<std::string, std::string> &names,
                 const std::string &kind, const std::string &name,
                 const Here &loc);

  /// numpy's broadcast of two shapes; an Error naming both when they clash.
  static Shape broadcastShape(const Shape &a, const Shape &b,
                              llvm::StringRef opName, const Here &loc);
  /// `value` broadcast to `shape` (itself when it already has that shape).
  /// With dynamic sizes, the dims it expands come from `dims` when given,
  /// else they are static.
  mlir::Value broadcastTo(mlir::Value value, const Shape &shape,
                          const Here &loc, const DimExprs *dims = nullptr);

  /// The last op of the body, or null when it is empty.
  mlir::Operation *lastOp();
  /// Undoes what a failed call recorded: puts back the assigns it moved
  /// (those after the first `moved` of movedAssigns), then erases every op
  /// recorded after `last` (all of them for null), newest first.
  void rollbackTo(mlir::Operation *last, std::size_t moved);

  /// An assign that a later assign() of its state moved to the end of the
  /// body and made write the newer value: what rollbackTo puts back.
  struct MovedAssign {
    AssignOp op;
    mlir::Value value;      ///< the value it wrote before
    mlir::Operation *after; ///< the op it followed; null: the body's first
    mlir::Location loc;     ///< its location before
  };
  std::vector<MovedAssign> movedAssigns;
  /// The assign of `state` in the body, or null.
  static AssignOp assignOf(mlir::Value state);

  /// Verifies a freshly created op; erases it and throws on failure.
  mlir::Operation *finish(mlir::Operation *op, const Here &loc,
                          DiagnosticCapture &capture);

  /// Records an op whose result type the dialect infers: the op's shape rule
  /// runs first, then its verifier; either failing throws an Error at `loc`
  /// and records nothing. `args` are those of OpT's TypeRange builder.
  template <typename OpT, typename... Args>
  mlir::Value record(const Here &loc, Args &&...args) {
    return recordOp<OpT>(loc, std::forward<Args>(args)...)->getResult(0);
  }

  /// record() for an op of several results.
  template <typename OpT, typename... Args>
  mlir::Operation *recordOp(const Here &loc, Args &&...args) {
    return recordOpWithDims<OpT>(loc, {}, std::forward<Args>(args)...);
  }

  /// record() of an op whose result's dims an attribute gives (a reshape's
  /// target); `dims` is null when they are static.
  template <typename OpT, typename... Args>
  mlir::Operation *recordOpWithDims(const Here &loc, mlir::Attribute dims,
                                    Args &&...args) {
    mlir::Location at = location(loc);
    mlir::OperationState state(at, OpT::getOperationName());
    OpT::build(builder, state, mlir::TypeRange{}, std::forward<Args>(args)...);
    if (dims)
      state.addAttribute(kDimsAttrName, dims);
    DiagnosticCapture capture(&context);
    llvm::SmallVector<mlir::Type, 1> types;
    if (mlir::failed(OpT::inferReturnTypes(
            &context, at, state.operands,
            state.attributes.getDictionary(&context), state.getRawProperties(),
            state.regions, types)))
      throw userError(loc, capture.take() + inLayer());
    state.addTypes(types);
    return finish(builder.create(state), loc, capture);
  }

  // ---- Random numbers (locus.random) --------------------------------------

  /// The graph's run counter: the buffer "rng.step" (0-d f32, 0 at first;
  /// each run writes the next value), made with its update by the first
  /// random op. Null before that, and again when a rollback erases it.
  mlir::Value rngStep;
  /// Random ops kept so far: the next draws with seedFor("rng<rngCalls>").
  uint64_t rngCalls = 0;
  /// The run counter; the first call records it (inside the caller's
  /// Transaction) at `loc`.
  mlir::Value runCounter(const Here &loc);
  /// Graph::seedFor.
  uint64_t seedFor(const std::string &name) const;
};

/// Erases what a frontend call recorded unless it commits.
class Transaction {
public:
  explicit Transaction(GraphImpl &graph);
  ~Transaction();
  void commit() { committed = true; }

private:
  GraphImpl &graph;
  mlir::Operation *last;
  std::size_t moved;
  bool committed = false;
};

} // namespace locus::detail

#endif // LOCUS_FRONTEND_GRAPHIMPL_H
