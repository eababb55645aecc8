//===- Graph.cpp - recording locus ops from C++ ---------------------------===//
//
// Every public call records through GraphImpl::record(), which runs the op's
// own shape rule (the dialect's inferReturnTypes) and verifier under a
// diagnostic capture: a failure becomes a locus::Error at the user's line.
// A Transaction erases whatever a call recorded if it throws, so the graph is
// unchanged on failure.
//
//===----------------------------------------------------------------------===//

#include "GraphImpl.h"

#include "locus/Dialect/Autodiff.h"
#include "locus/Dialect/Modes.h"
#include "locus/Support/InputLimits.h"
#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <functional>

using namespace locus;
using namespace locus::detail;

//===----------------------------------------------------------------------===//
// Error, Device, DType
//===----------------------------------------------------------------------===//

std::string Diagnostic::str() const {
  const char *kind = severity == Severity::error     ? "error: "
                     : severity == Severity::warning ? "warning: "
                                                     : "note: ";
  if (file.empty())
    return kind + message;
  if (line == 0) // a file without lines: an imported model
    return file + ": " + kind + message;
  std::string where = file + ":" + std::to_string(line);
  if (column)
    where += ":" + std::to_string(column);
  return where + ": " + kind + message;
}

static Diagnostic errorAt(std::string file, unsigned line, unsigned column,
                          std::string message) {
  return {Diagnostic::Severity::error, std::move(file), line, column,
          std::move(message)};
}

/// Every diagnostic of `all`, a line each (and their notes' lines).
static std::string formatAll(const std::vector<Diagnostic> &all) {
  std::string text;
  for (const Diagnostic &d : all)
    text += (text.empty() ? "" : "\n") + d.str();
  return text;
}

/// The first error of `all` (there is one; a compilation that fails says
/// why).
static const Diagnostic &firstError(const std::vector<Diagnostic> &all) {
  for (const Diagnostic &d : all)
    if (d.severity == Diagnostic::Severity::error)
      return d;
  LOCUS_INTERNAL_ASSERT(!all.empty(), "an Error without a diagnostic");
  return all.front();
}

Error::Error(std::string file, unsigned line, unsigned column,
             std::string message)
    : Error(std::vector<Diagnostic>{
          errorAt(std::move(file), line, column, std::move(message))}) {}

Error::Error(std::vector<Diagnostic> all)
    : std::runtime_error(formatAll(all)), file_(firstError(all).file),
      line_(firstError(all).line), column_(firstError(all).column),
      message_(firstError(all).message), diagnostics_(std::move(all)) {}

Error locus::detail::userError(const Here &loc, std::string message) {
  return Error(loc.file_name(), loc.line(), loc.column(), std::move(message));
}

DType locus::detail::dtypeOf(mlir::Type element) {
  if (element.isF32())
    return DType::f32;
  if (element.isInteger(32))
    return DType::i32;
  if (element.isBF16())
    return DType::bf16;
  if (element.isF16())
    return DType::f16;
  return element.isInteger(1) ? DType::i1 : DType::i64;
}

const char *locus::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::i64:
    return "i64";
  case DType::i32:
    return "i32";
  case DType::i1:
    return "i1";
  case DType::bf16:
    return "bf16";
  case DType::f16:
    return "f16";
  }
  return "?";
}

std::string Device::str() const {
  return kind_ == Kind::cpu ? std::string("cpu")
                            : "cuda:" + std::to_string(index_);
}

Device locus::cpu() { return Device(Device::Kind::cpu, 0); }

Device locus::cuda(int index, Here loc) {
  if (index < 0 || index > LOCUS_ABI_MAX_CUDA_ORDINAL)
    throw userError(loc, "unknown device cuda:" + std::to_string(index) +
                             ": a CUDA device index is 0 to " +
                             std::to_string(LOCUS_ABI_MAX_CUDA_ORDINAL));
  return Device(Device::Kind::cuda, index);
}

Device Device::parse(std::string_view text, Here loc) {
  if (text == "cpu")
    return cpu();
  if (text == "cuda")
    return cuda(0, loc);
  if (int32_t index = locus_abi_cuda_ordinal(text.data(), text.size());
      index >= 0)
    return cuda(index, loc);
  throw userError(loc, "unknown device '" + std::string(text) +
                           "'; expected 'cpu', 'cuda' or 'cuda:N'");
}

//===----------------------------------------------------------------------===//
// GraphImpl
//===----------------------------------------------------------------------===//

GraphImpl::GraphImpl(std::string graphName, const Here &loc)
    : name(std::move(graphName)),
      context(mlir::MLIRContext::Threading::DISABLED), builder(&context) {
  context.getOrLoadDialect<LocusDialect>();
  module = mlir::ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToEnd(module->getBody());
  graph = builder.create<GraphOp>(location(loc), name);
  builder.setInsertionPointToEnd(&graph.getBodyBlock());
}

mlir::Block &GraphImpl::body() { return graph.getBodyBlock(); }

RecordedGraph locus::detail::recorded(const Graph &graph) {
  GraphImpl &g = graph.impl();
  return {g.name, g.context, *g.module, g.body(), g.stateValues};
}

static mlir::Location fileLineCol(mlir::MLIRContext &context, const Here &loc) {
  return mlir::FileLineColLoc::get(&context, loc.file_name(), loc.line(),
                                   loc.column());
}

static mlir::Location fileLineCol(mlir::MLIRContext &context,
                                  const SourcePlace &place) {
  return mlir::FileLineColLoc::get(&context, place.file, place.line,
                                   place.column);
}

namespace {
/// The Python caller's line while a binding records (OriginScope at a file
/// and line), for the layers it builds.
thread_local const SourcePlace *pythonPlace = nullptr;
} // namespace

SourcePlace locus::detail::placeOf(const Here &loc) {
  if (pythonPlace)
    return *pythonPlace;
  return {loc.file_name(), loc.line(), loc.column()};
}

mlir::Location GraphImpl::location(const Here &loc) {
  if (origin)
    return *origin;
  mlir::Location call = fileLineCol(context, loc);
  if (layerStack.empty())
    return call;
  // callsite(<the layer's construction> at <the call>), the construction
  // named by the layer's path when it has one: what locus-dump groups by.
  mlir::Location callee = fileLineCol(context, layerStack.back().builtAt);
  if (const std::string &path = layerPath(); !path.empty())
    callee = mlir::NameLoc::get(mlir::StringAttr::get(&context, path), callee);
  return mlir::CallSiteLoc::get(callee, call);
}

const std::string &GraphImpl::layerPath() const {
  for (auto it = layerStack.rbegin(); it != layerStack.rend(); ++it)
    if (!it->name.empty())
      return it->name;
  static const std::string none;
  return none;
}

std::string GraphImpl::inLayer() const {
  if (layerStack.empty())
    return "";
  const ActiveLayer &layer = layerStack.back();
  return (layer.name.empty() ? " (in the layer"
                             : " (in layer '" + layer.name + "'") +
         " built at " + where(layer.builtAt) + ")";
}

LayerScope::LayerScope(const Tensor &input, const Here &builtAt,
                       const std::string &name)
    : LayerScope(input, placeOf(builtAt), name) {}

LayerScope::LayerScope(const Tensor &input, const SourcePlace &builtAt,
                       const std::string &name)
    : graph_(input.graph_) {
  if (!graph_)
    return; // the layer's first op reports the empty tensor
  graph_->layerStack.push_back({builtAt, name});
  last_ = graph_->lastOp();
  moved_ = graph_->movedAssigns.size();
}

LayerScope::~LayerScope() {
  if (!graph_)
    return;
  graph_->layerStack.pop_back();
  if (!committed_)
    graph_->rollbackTo(static_cast<mlir::Operation *>(last_), moved_);
}

OriginScope::OriginScope(const Graph &graph, const std::string &file,
                         const std::string &what)
    : graph_(graph.impl().shared_from_this()) {
  mlir::MLIRContext &context = graph_->context;
  graph_->origin =
      mlir::NameLoc::get(mlir::StringAttr::get(&context, what),
                         mlir::FileLineColLoc::get(&context, file, 0, 0));
}

OriginScope::OriginScope(const Graph &graph, const std::string &file,
                         unsigned line, unsigned column)
    : graph_(graph.impl().shared_from_this()),
      place_(SourcePlace{file, line, column}), outerPlace_(pythonPlace) {
  graph_->origin =
      mlir::FileLineColLoc::get(&graph_->context, file, line, column);
  pythonPlace = &*place_;
}

OriginScope::~OriginScope() {
  graph_->origin.reset();
  if (place_)
    pythonPlace = outerPlace_;
}

Recording::Recording(const Tensor &anchor, const Here &loc)
    : graph_(GraphImpl::of(anchor, loc).shared_from_this()),
      last_(graph_->lastOp()), moved_(graph_->movedAssigns.size()) {}

Recording::~Recording() {
  if (!committed_)
    graph_->rollbackTo(static_cast<mlir::Operation *>(last_), moved_);
}

std::string GraphImpl::where(const Here &loc) {
  return std::string(loc.file_name()) + ":" + std::to_string(loc.line());
}

std::string GraphImpl::where(const SourcePlace &place) {
  return place.file + ":" + std::to_string(place.line);
}

GraphImpl &GraphImpl::of(const Tensor &tensor, const Here &loc) {
  if (!tensor)
    throw userError(loc, "uses an empty Tensor (default-constructed, never "
                         "recorded)");
  return *tensor.graph_;
}

mlir::Value GraphImpl::value(const Tensor &tensor, const Here &loc) {
  of(tensor, loc); // an Error for an empty handle
  if (tensor.graph_.get() != this)
    throw userError(loc, "uses a tensor of graph '" + tensor.graph_->name +
                             "' in graph '" + name + "'");
  return mlir::Value::getFromOpaquePointer(tensor.value_);
}

Tensor GraphImpl::wrap(mlir::Value value) {
  return Tensor(shared_from_this(), value.getAsOpaquePointer());
}

mlir::RankedTensorType GraphImpl::tensorType(const Shape &shape, DType dtype,
                                             const Here &loc) {
  for (int64_t dim : shape)
    if (dim < 0)
      throw userError(loc, "shape " + formatShape(shape) +
                               " has a negative dimension");
  int64_t elementBytes = dtype == DType::i64                           ? 8
                         : dtype == DType::i1                          ? 1
                         : dtype == DType::bf16 || dtype == DType::f16 ? 2
                                                                       : 4;
  std::string tooBig = checkTensorSize(shape, elementBytes);
  if (!tooBig.empty())
    throw userError(loc, "shape " +
                             (shape.size() > 16
                                  ? "of rank " + std::to_string(shape.size())
                                  : formatShape(shape)) +
                             " " + tooBig);
  mlir::Type element;
  switch (dtype) {
  case DType::f32:
    element = builder.getF32Type();
    break;
  case DType::i64:
    element = builder.getI64Type();
    break;
  case DType::i32:
    element = builder.getI32Type();
    break;
  case DType::i1:
    element = builder.getI1Type();
    break;
  case DType::bf16:
    element = builder.getBF16Type();
    break;
  case DType::f16:
    element = builder.getF16Type();
    break;
  }
  return mlir::RankedTensorType::get(shape, element);
}

DeviceAttr GraphImpl::deviceAttr(const Device &device) {
  return DeviceAttr::get(&context,
                         device.isCuda() ? DeviceKind::cuda : DeviceKind::cpu,
                         static_cast<unsigned>(device.index()));
}

DType GraphImpl::dtypeOfValue(mlir::Value value) {
  return dtypeOf(
      mlir::cast<mlir::RankedTensorType>(value.getType()).getElementType());
}

void GraphImpl::requireDType(mlir::Value value, DType want, llvm::StringRef op,
                             const std::string &what, const Here &loc) {
  DType got = dtypeOfValue(value);
  if (got == want)
    return;
  throw userError(loc, CallName::label(op.str()) + " expects " +
                           dtypeName(want) + " tensors, but " + what + " is " +
                           dtypeName(got) + " " + formatShape(shapeOf(value)) +
                           "; cast it to " + dtypeName(want) +
                           " first (locus::cast in C++, locus.cast in Python)");
}

namespace {
/// The user's call now recording on this thread (CallName), or null.
thread_local const char *currentCall = nullptr;
} // namespace

CallName::CallName(const char *name) : outermost(currentCall == nullptr) {
  if (outermost)
    currentCall = name;
}

CallName::~CallName() {
  if (outermost)
    currentCall = nullptr;
}

std::string CallName::label(const std::string &inner) {
  return currentCall ? std::string(currentCall) : inner;
}

namespace {
/// This thread's NoGradGuards.
thread_local int noGradDepth = 0;
} // namespace

namespace {
/// This thread's EvalOnlyGuards.
thread_local int evalOnlyDepth = 0;
} // namespace

detail::EvalOnlyGuard::EvalOnlyGuard() { ++evalOnlyDepth; }
detail::EvalOnlyGuard::~EvalOnlyGuard() { --evalOnlyDepth; }

void detail::markEvalValue(const Tensor &trainValue, const Tensor &evalValue,
                           const Here &loc) {
  static std::atomic<int64_t> pairs{0};
  GraphImpl &g = GraphImpl::of(trainValue, loc);
  mlir::Value train = g.value(trainValue, loc), eval = g.value(evalValue, loc);
  auto first = [](mlir::Value v) {
    auto result = mlir::dyn_cast<mlir::OpResult>(v);
    return result && result.getResultNumber() == 0 ? result.getOwner()
                                                   : nullptr;
  };
  mlir::Operation *trainOp = first(train), *evalOp = first(eval);
  if (!trainOp || !evalOp || trainOp == evalOp)
    return; // nothing to pair: both modes compute the same value
  auto n = g.builder.getI64IntegerAttr(++pairs);
  trainOp->setAttr(kEvalValueAttrName, n);
  evalOp->setAttr(kEvalOfAttrName, n);
}

NoGradGuard::NoGradGuard() { ++noGradDepth; }
NoGradGuard::~NoGradGuard() { --noGradDepth; }
bool locus::is_grad_enabled() { return noGradDepth == 0; }

mlir::Operation *GraphImpl::finish(mlir::Operation *op, const Here &loc,
                                   DiagnosticCapture &capture) {
  if (mlir::failed(mlir::verify(op)) ||
      (dynamic && mlir::failed(dynamic->infer(op)))) {
    if (dynamic)
      dynamic->forget(op);
    op->erase();
    throw userError(loc, capture.take() + inLayer());
  }
  if (noGradDepth > 0)
    op->setAttr(kNoGradAttrName, mlir::UnitAttr::get(&context));
  if (evalOnlyDepth > 0)
    op->setAttr(kEvalOnlyAttrName, mlir::UnitAttr::get(&context));
  return op;
}

void GraphImpl::claimName(std::map<std::string, std::string> &names,
                          const std::string &kind, const std::string &name,
                          const Here &loc) {
  if (name.empty())
    throw userError(loc, kind + " needs a non-empty name");
  auto it = names.find(name);
  if (it != names.end())
    throw userError(loc, kind + " name '" + name + "' is already used at " +
                             it->second);
}

Shape GraphImpl::broadcastShape(const Shape &a, const Shape &b,
                                llvm::StringRef opName, const Here &loc) {
  Shape result(std::max(a.size(), b.size()));
  for (size_t i = 0; i < result.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw userError(
          loc, CallName::label(userOpName(opName).str()) +
                   ": operands of shapes " + formatShape(a) + " and " +
                   formatShape(b) + " do not broadcast (dimension " +
                   std::to_string(result.size() - 1 - i) + ": " +
                   std::to_string(da) + " vs " + std::to_string(db) + ")");
    result[result.size() - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

mlir::Value GraphImpl::broadcastTo(mlir::Value value, const Shape &shape,
                                   const Here &loc, const DimExprs *dims) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  DimExprs in = dimsOf(value);
  // A broadcast keeps every dimension it does not expand.
  DimExprs target = dims ? *dims : staticDims(shape);
  for (size_t i = 0; !dims && i < in.size() && i < target.size(); ++i)
    if (type.getShape()[in.size() - 1 - i] == shape[shape.size() - 1 - i])
      target[target.size() - 1 - i] = in[in.size() - 1 - i];
  if (type.getShape() == llvm::ArrayRef<int64_t>(shape) && in == target)
    return value;
  return recordOpWithDims<BroadcastOp>(loc, dimsAttr(target), value,
                                       llvm::ArrayRef<int64_t>(shape))
      ->getResult(0);
}

unsigned GraphImpl::declareSymbol(const std::string &name, int64_t bound,
                                  const Here &loc) {
  if (!dynamic)
    dynamic = std::make_unique<DynamicDims>(llvm::SmallVector<DimSymbol>());
  for (auto [index, symbol] : llvm::enumerate(dynamic->symbols())) {
    if (symbol.name != name)
      continue;
    if (symbol.bound != bound)
      throw userError(loc, "dynamic size '" + name + "' has bound " +
                               std::to_string(symbol.bound) +
                               " already; here it has " +
                               std::to_string(bound));
    return index;
  }
  if (bound < 1)
    throw userError(loc, "dynamic size '" + name +
                             "' needs a bound of at "
                             "least 1, not " +
                             std::to_string(bound));
  if (dynamic->symbols().size() >= kMaxDimSymbols)
    throw userError(loc, "a graph has at most " +
                             std::to_string(kMaxDimSymbols) +
                             " dynamic sizes; '" + name + "' is one more");
  dynamic->addSymbol({name, bound});
  setGraphSymbols(graph, dynamic->symbols());
  return dynamic->symbols().size() - 1;
}

DimExprs GraphImpl::dimsOf(mlir::Value value) const {
  return dynamic ? dynamic->dimsOf(value) : staticDims(shapeOf(value));
}

DimExprs GraphImpl::broadcastDimsOf(llvm::ArrayRef<mlir::Value> values) const {
  DimExprs dims;
  for (mlir::Value value : values) {
    std::optional<DimExprs> joined = broadcastDims(dims, dimsOf(value));
    if (!joined)
      return staticDims(shapeOf(values.front())); // the op reports it
    dims = std::move(*joined);
  }
  return dims;
}

mlir::Attribute GraphImpl::dimsAttr(llvm::ArrayRef<DimExpr> dims) {
  if (!dynamic ||
      llvm::all_of(dims, [](const DimExpr &d) { return d.isStatic(); }))
    return {};
  return mlir::AffineMapAttr::get(
      dimsToMap(dims, dynamic->symbols().size(), &context));
}

Shape GraphImpl::shapeOf(mlir::Value value) {
  auto shape = mlir::cast<mlir::RankedTensorType>(value.getType()).getShape();
  return Shape(shape.begin(), shape.end());
}

int64_t GraphImpl::normalizeAxis(int64_t axis, mlir::Value value,
                                 llvm::StringRef op, const Here &loc) {
  Shape shape = shapeOf(value);
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    throw userError(loc, CallName::label(op.str()) + ": axis " +
                             std::to_string(axis) +
                             " is out of range for a tensor of shape " +
                             formatShape(shape));
  return normalized;
}

mlir::Operation *GraphImpl::lastOp() {
  return body().empty() ? nullptr : &body().back();
}

void GraphImpl::rollbackTo(mlir::Operation *last, std::size_t moved) {
  // Moved assigns go back first, newest first: one of them may be `last`.
  while (movedAssigns.size() > moved) {
    MovedAssign undo = movedAssigns.back();
    movedAssigns.pop_back();
    undo.op.getValueMutable().assign(undo.value);
    undo.op->setLoc(undo.loc);
    if (undo.after)
      undo.op->moveAfter(undo.after);
    else
      undo.op->moveBefore(&body().front());
  }
  // Later ops use earlier ones: erase from the back.
  while (!body().empty() && &body().back() != last) {
    if (rngStep && rngStep.getDefiningOp() == &body().back()) {
      rngStep = nullptr; // the run counter goes with what made it
      sourceNames.erase(kRunCounterName);
    }
    if (dynamic)
      dynamic->forget(&body().back());
    body().back().erase();
  }
}

AssignOp GraphImpl::assignOf(mlir::Value state) {
  for (mlir::Operation *user : state.getUsers())
    if (auto assign = llvm::dyn_cast<AssignOp>(user);
        assign && assign.getState() == state)
      return assign;
  return {};
}

Transaction::Transaction(GraphImpl &graph)
    : graph(graph), last(graph.lastOp()), moved(graph.movedAssigns.size()) {}

Transaction::~Transaction() {
  if (!committed)
    graph.rollbackTo(last, moved);
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

static mlir::RankedTensorType typeOf(const Tensor &tensor) {
  if (!tensor)
    throw std::logic_error("locus::Tensor: query of an empty Tensor");
  return mlir::cast<mlir::RankedTensorType>(
      mlir::Value::getFromOpaquePointer(tensor.opaqueValue()).getType());
}

Shape Tensor::shape() const {
  auto shape = typeOf(*this).getShape();
  return Shape(shape.begin(), shape.end());
}

int64_t Tensor::rank() const { return typeOf(*this).getRank(); }

int64_t Tensor::dim(int64_t axis) const {
  int64_t r = rank();
  int64_t normalized = axis < 0 ? axis + r : axis;
  if (normalized < 0 || normalized >= r)
    throw std::out_of_range("locus::Tensor::dim: axis " + std::to_string(axis) +
                            " of a rank-" + std::to_string(r) + " tensor");
  return typeOf(*this).getDimSize(normalized);
}

int64_t Tensor::numel() const { return typeOf(*this).getNumElements(); }

DType Tensor::dtype() const { return dtypeOf(typeOf(*this).getElementType()); }

Tensor Tensor::to(const Device &device, Here loc) const {
  GraphImpl &g = GraphImpl::of(*this, loc);
  Transaction tx(g);
  mlir::Value result =
      g.record<ToOp>(loc, g.value(*this, loc), g.deviceAttr(device));
  tx.commit();
  return g.wrap(result);
}

Graph Tensor::graph(Here loc) const {
  GraphImpl::of(*this, loc); // an Error for an empty handle
  return Graph(graph_);
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Graph::Graph(std::string name, Here loc)
    : impl_(std::make_shared<GraphImpl>(std::move(name), loc)) {}

const std::string &Graph::name() const { return impl_->name; }

Tensor Graph::input(const std::string &name, const Shape &shape,
                    const InputOptions &options, Here loc) {
  GraphImpl &g = *impl_;
  if (name == kSizesInputName)
    throw userError(loc, "input name '" + name +
                             "' is Locus's own (the run's dynamic sizes)");
  g.claimName(g.sourceNames, "input", name, loc);
  Transaction tx(g);
  mlir::RankedTensorType type = g.tensorType(shape, options.dtype, loc);
  DiagnosticCapture capture(&g.context);
  auto op = g.builder.create<InputOp>(
      g.location(loc), type, g.builder.getStringAttr(name),
      options.device ? g.deviceAttr(*options.device) : DeviceAttr());
  g.finish(op, loc, capture);
  g.sourceNames[name] = GraphImpl::where(loc);
  tx.commit();
  return g.wrap(op.getResult());
}

Tensor Graph::input(const std::string &name, const std::vector<InputDim> &dims,
                    const InputOptions &options, Here loc) {
  GraphImpl &g = *impl_;
  Shape shape;
  DimExprs exprs;
  for (const InputDim &dim : dims) {
    shape.push_back(dim.size);
    if (dim.dynamic && dim.symbol.empty())
      throw userError(loc, "input '" + name +
                               "': a dynamic size needs a name, as in "
                               "dyn(\"batch\", " +
                               std::to_string(dim.size) + ")");
    exprs.push_back(!dim.dynamic ? DimExpr::constant(dim.size)
                                 : DimExpr::symbol(g.declareSymbol(
                                       dim.symbol, dim.size, loc)));
  }
  Tensor x = input(name, shape, options, loc);
  if (mlir::Attribute attr = g.dimsAttr(exprs)) {
    mlir::Operation *op = g.value(x, loc).getDefiningOp();
    op->setAttr(kDimsAttrName, attr);
    (void)g.dynamic->infer(op); // inputs' dims always hold
  }
  return x;
}

static Tensor recordState(GraphImpl &g, const std::string &kind,
                          const std::string &name, const Shape &shape,
                          const Init &init, StateRole role,
                          const StateOptions &options, const Here &loc) {
  g.claimName(g.sourceNames, kind, name, loc);
  g.stateValues.erase(name); // a name freed by a rollback, used again
  Transaction tx(g);
  mlir::RankedTensorType type = g.tensorType(shape, DType::f32, loc);
  DiagnosticCapture capture(&g.context);
  auto initAttr = InitAttr::getChecked(
      [&] { return mlir::emitError(g.location(loc)); }, &g.context,
      init.kind == Init::Kind::uniform  ? InitKind::uniform
      : init.kind == Init::Kind::normal ? InitKind::normal
                                        : InitKind::full,
      llvm::APFloat(init.a),
      llvm::APFloat(init.kind != Init::Kind::full ? init.b : 0.0),
      init.kind != Init::Kind::full ? init.seed : 0);
  if (!initAttr)
    throw userError(loc, capture.take());
  auto op = g.builder.create<StateOp>(
      g.location(loc), type, g.builder.getStringAttr(name), role, initAttr,
      options.device ? g.deviceAttr(*options.device) : DeviceAttr());
  g.finish(op, loc, capture);
  g.sourceNames[name] = GraphImpl::where(loc);
  tx.commit();
  return g.wrap(op.getResult());
}

Tensor Graph::parameter(const std::string &name, const Shape &shape,
                        const Init &init, const StateOptions &options,
                        Here loc) {
  return recordState(*impl_, "parameter", name, shape, init,
                     StateRole::parameter, options, loc);
}

Tensor Graph::buffer(const std::string &name, const Shape &shape,
                     const Init &init, const StateOptions &options, Here loc) {
  return recordState(*impl_, "buffer", name, shape, init, StateRole::buffer,
                     options, loc);
}

/// State of `kind` that starts from `values`: recorded with a zero
/// initialiser, the values kept beside the graph for compile() and save().
static Tensor stateWithValues(GraphImpl &g, const std::string &kind,
                              const std::string &name, const Shape &shape,
                              std::vector<float> values, StateRole role,
                              const StateOptions &options, const Here &loc) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d < 0 ? 0 : d;
  if (static_cast<int64_t>(values.size()) != count)
    throw userError(loc, kind + " '" + name + "' of shape " +
                             formatShape(shape) + " needs " +
                             std::to_string(count) + " values, got " +
                             std::to_string(values.size()));
  Tensor t =
      recordState(g, kind, name, shape, Init::zeros(), role, options, loc);
  g.stateValues[name] =
      std::make_shared<const std::vector<float>>(std::move(values));
  return t;
}

Tensor Graph::parameter(const std::string &name, const Shape &shape,
                        std::vector<float> values, const StateOptions &options,
                        Here loc) {
  return stateWithValues(*impl_, "parameter", name, shape, std::move(values),
                         StateRole::parameter, options, loc);
}

Tensor Graph::buffer(const std::string &name, const Shape &shape,
                     std::vector<float> values, const StateOptions &options,
                     Here loc) {
  return stateWithValues(*impl_, "buffer", name, shape, std::move(values),
                         StateRole::buffer, options, loc);
}

Tensor Graph::constant(float value, Here loc) {
  return constant(Shape{}, {value}, loc);
}

Tensor Graph::constant(const Shape &shape, const std::vector<float> &values,
                       Here loc) {
  GraphImpl &g = *impl_;
  Transaction tx(g);
  mlir::RankedTensorType type = g.tensorType(shape, DType::f32, loc);
  if (static_cast<int64_t>(values.size()) != type.getNumElements())
    throw userError(loc, "a constant of shape " + formatShape(shape) +
                             " needs " + std::to_string(type.getNumElements()) +
                             " values, got " + std::to_string(values.size()));
  auto attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(values));
  mlir::Value result = g.record<ConstantOp>(
      loc, mlir::cast<mlir::ElementsAttr>(attr), DeviceAttr());
  tx.commit();
  return g.wrap(result);
}

namespace {

/// A constant of `shape` and `dtype` whose element i is `valueAt(i)`.
Tensor recordConstant(GraphImpl &g, const Shape &shape, DType dtype,
                      const std::function<double(int64_t)> &valueAt,
                      const Here &loc) {
  Transaction tx(g);
  mlir::RankedTensorType type = g.tensorType(shape, dtype, loc);
  int64_t count = type.getNumElements();
  mlir::DenseElementsAttr attr;
  switch (dtype) {
  case DType::f32: {
    std::vector<float> values(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = static_cast<float>(valueAt(i));
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(values));
    break;
  }
  case DType::i64: {
    std::vector<int64_t> values(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = static_cast<int64_t>(valueAt(i));
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(values));
    break;
  }
  case DType::i32: {
    std::vector<int32_t> values(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = static_cast<int32_t>(valueAt(i));
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(values));
    break;
  }
  case DType::i1: {
    llvm::SmallVector<bool> values(count);
    for (int64_t i = 0; i < count; ++i)
      values[i] = valueAt(i) != 0;
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
    break;
  }
  case DType::bf16:
  case DType::f16: {
    // Each value rounded to the nearest 16-bit one, as torch.full(...,
    // dtype=torch.bfloat16) rounds it.
    const llvm::fltSemantics &semantics =
        mlir::cast<mlir::FloatType>(type.getElementType()).getFloatSemantics();
    llvm::SmallVector<llvm::APFloat> values;
    for (int64_t i = 0; i < count; ++i) {
      llvm::APFloat v(valueAt(i));
      bool lost = false;
      v.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v);
    }
    attr = mlir::DenseElementsAttr::get(type, values);
    break;
  }
  }
  mlir::Value result = g.record<ConstantOp>(
      loc, mlir::cast<mlir::ElementsAttr>(attr), DeviceAttr());
  tx.commit();
  return g.wrap(result);
}

} // namespace

Tensor Graph::constantI64(const Shape &shape,
                          const std::vector<int64_t> &values, Here loc) {
  int64_t count = impl_->tensorType(shape, DType::i64, loc).getNumElements();
  if (static_cast<int64_t>(values.size()) != count)
    throw userError(loc, "a constant of shape " + formatShape(shape) +
                             " needs " + std::to_string(count) +
                             " values, got " + std::to_string(values.size()));
  return recordConstant(
      *impl_, shape, DType::i64,
      [&](int64_t i) { return static_cast<double>(values[i]); }, loc);
}

Tensor Graph::full(const Shape &shape, double value, DType dtype, Here loc) {
  return recordConstant(
      *impl_, shape, dtype, [&](int64_t) { return value; }, loc);
}

Tensor Graph::zeros(const Shape &shape, DType dtype, Here loc) {
  return full(shape, 0.0, dtype, loc);
}

Tensor Graph::ones(const Shape &shape, DType dtype, Here loc) {
  return full(shape, 1.0, dtype, loc);
}

Tensor Graph::arange(int64_t start, int64_t end, int64_t step, DType dtype,
                     Here loc) {
  if (step == 0)
    throw userError(loc, "arange: step must not be zero");
  if (dtype == DType::i1)
    throw userError(loc, "arange makes f32 or i64 values, not i1");
  int64_t count = 0;
  if (step > 0 && end > start)
    count = (end - start + step - 1) / step;
  else if (step < 0 && end < start)
    count = (start - end - step - 1) / -step;
  return recordConstant(
      *impl_, {count}, dtype,
      [&](int64_t i) { return static_cast<double>(start + i * step); }, loc);
}

Tensor Graph::arange(int64_t end, DType dtype, Here loc) {
  return arange(0, end, 1, dtype, loc);
}

void Graph::output(const std::string &name, const Tensor &value, Here loc) {
  GraphImpl &g = *impl_;
  g.claimName(g.outputNames, "output", name, loc);
  Transaction tx(g);
  mlir::Value v = g.value(value, loc);
  DiagnosticCapture capture(&g.context);
  auto op = g.builder.create<OutputOp>(g.location(loc),
                                       g.builder.getStringAttr(name), v);
  g.finish(op, loc, capture);
  g.outputNames[name] = GraphImpl::where(loc);
  tx.commit();
}

void Graph::manual_seed(uint64_t seed) { impl_->seedBase = seed; }

uint64_t Graph::seedFor(const std::string &name) const {
  return impl_->seedFor(name);
}

uint64_t GraphImpl::seedFor(const std::string &name) const {
  // FNV-1a of the name, then splitmix64's finaliser over it and the seed.
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001B3ULL;
  uint64_t z = seedBase + h * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::string Graph::freshName(const std::string &stem) {
  return stem + std::to_string(impl_->nameCounters[stem]++);
}

std::vector<float> Graph::initialValue(const Tensor &state, Here loc) const {
  mlir::Value v = impl_->value(state, loc);
  auto op = v.getDefiningOp<StateOp>();
  if (!op)
    throw userError(loc, "initialValue() needs a parameter or buffer");
  if (auto given = impl_->stateValues.find(op.getName().str());
      given != impl_->stateValues.end())
    return *given->second;
  InitAttr init = op.getInit();
  std::vector<float> values(op.getType().getNumElements());
  locus_status_t status = locus_init_fill(
      init.getKind() == InitKind::uniform  ? LOCUS_INIT_UNIFORM
      : init.getKind() == InitKind::normal ? LOCUS_INIT_NORMAL
                                           : LOCUS_INIT_FULL,
      init.low(), init.high(), init.getSeed(), values.size(), values.data());
  if (status) {
    std::string message = locus_status_message(status);
    locus_status_free(status);
    throw userError(loc, message);
  }
  return values;
}

std::string locus::stateName(const Tensor &state, Here loc) {
  mlir::Value v = GraphImpl::of(state, loc).value(state, loc);
  auto op = v.getDefiningOp<StateOp>();
  if (!op)
    throw userError(loc, "stateName() needs a parameter or buffer");
  return op.getName().str();
}

std::vector<Tensor> Graph::parameters() const {
  std::vector<Tensor> params;
  for (mlir::Operation &op : impl_->body())
    if (auto state = mlir::dyn_cast<StateOp>(op);
        state && state.getRole() == StateRole::parameter)
      params.push_back(impl_->wrap(state.getResult()));
  return params;
}

Tensor Graph::outputValue(const std::string &name, Here loc) const {
  std::string names;
  for (mlir::Operation &op : impl_->body())
    if (auto output = mlir::dyn_cast<OutputOp>(op)) {
      if (output.getName() == name)
        return impl_->wrap(output.getValue());
      names += (names.empty() ? "" : ", ") + output.getName().str();
    }
  throw userError(loc, "graph '" + impl_->name + "' has no output '" + name +
                           "' (outputs: " + (names.empty() ? "none" : names) +
                           ")");
}

size_t Graph::numOps() const { return impl_->body().getOperations().size(); }

std::string Graph::str(const PrintOptions &options) const {
  mlir::OpPrintingFlags flags;
  if (options.locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  std::string text;
  llvm::raw_string_ostream os(text);
  impl_->module->print(os, flags);
  os.flush();
  return text;
}

//===----------------------------------------------------------------------===//
// The run counter of random ops
//===----------------------------------------------------------------------===//

mlir::Value GraphImpl::runCounter(const Here &loc) {
  if (rngStep)
    return rngStep;
  if (auto it = sourceNames.find(kRunCounterName); it != sourceNames.end())
    throw userError(loc, std::string("the name '") + kRunCounterName +
                             "' is kept for the run counter of random ops; "
                             "it is used at " +
                             it->second);
  mlir::Location at = location(loc);
  auto scalar = mlir::RankedTensorType::get({}, builder.getF32Type());
  auto constant = [&](float value) {
    return record<ConstantOp>(loc,
                              mlir::cast<mlir::ElementsAttr>(
                                  mlir::DenseElementsAttr::get(scalar, value)),
                              DeviceAttr());
  };
  DiagnosticCapture capture(&context);
  auto zeros = InitAttr::get(&context, InitKind::full, llvm::APFloat(0.0),
                             llvm::APFloat(0.0), 0);
  auto state = builder.create<StateOp>(at, scalar,
                                       builder.getStringAttr(kRunCounterName),
                                       StateRole::buffer, zeros, DeviceAttr());
  finish(state, loc, capture);
  // step' = step + 1, back to 0 at 2^24, where f32 stops counting exactly.
  mlir::Value step = state.getResult();
  mlir::Value next = record<AddOp>(loc, step, constant(1.0f));
  mlir::Value counting = record<CmpOp>(loc, CmpPredicate::lt, next,
                                       constant(static_cast<float>(1 << 24)));
  mlir::Value wrapped = record<SelectOp>(loc, counting, next, constant(0.0f));
  finish(builder.create<AssignOp>(at, step, wrapped), loc, capture);
  rngStep = step;
  sourceNames[kRunCounterName] = where(loc);
  return step;
}
