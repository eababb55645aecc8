//===- Dump.cpp - what runs where, and why --------------------------------===//
//
// The analysis behind locus-dump: a Report of a placed graph (its rows,
// layers, estimates and warnings), with the layer paths and the text its
// renderings share (DumpImpl.h). The renderings are files of their own:
// Table.cpp (the table and summary), Layers.cpp, Dot.cpp, Json.cpp,
// Html.cpp, Explain.cpp, Measured.cpp and Diff.cpp.
//
//===----------------------------------------------------------------------===//

#include "DumpImpl.h"

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dump/Dump.h"
#include "locus/Passes/Passes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace locus;
using namespace locus::dump;
using namespace locus::dump::detail;

//===----------------------------------------------------------------------===//
// Text the renderings share
//===----------------------------------------------------------------------===//

/// "seed_models.cpp:23" (called from ":24" when a layer recorded it).
std::string locus::dump::detail::shortSource(const Source &source) {
  if (source.file.empty())
    return "-";
  if (!source.node.empty())
    return llvm::sys::path::filename(source.file).str() + ": " + source.node;
  std::string text = llvm::sys::path::filename(source.file).str() + ":" +
                     std::to_string(source.line);
  if (source.callerLine)
    text += " (called at :" + std::to_string(source.callerLine) + ")";
  return text;
}

std::string locus::dump::detail::nanos(int64_t ns) {
  if (ns < 10000)
    return std::to_string(ns) + " ns";
  if (ns < 10000000)
    return llvm::formatv("{0:F1} us", ns / 1e3).str();
  return llvm::formatv("{0:F1} ms", ns / 1e6).str();
}

std::string locus::dump::detail::bytesText(int64_t bytes) {
  if (bytes < 10 * 1024)
    return std::to_string(bytes) + " B";
  if (bytes < 10 * 1024 * 1024)
    return llvm::formatv("{0:F1} KiB", bytes / 1024.0).str();
  return llvm::formatv("{0:F1} MiB", bytes / (1024.0 * 1024.0)).str();
}

std::string locus::dump::formatSource(const Source &source) {
  return shortSource(source);
}

std::string locus::dump::formatNanos(int64_t ns) { return nanos(ns); }

std::string locus::dump::formatBytes(int64_t bytes) { return bytesText(bytes); }

//===----------------------------------------------------------------------===//
// Layer paths
//===----------------------------------------------------------------------===//

bool locus::dump::isModulePath(llvm::StringRef layer) {
  return !layer.empty() && !layer.contains(':') && !layer.contains('/') &&
         !layer.contains(' ');
}

std::string locus::dump::truncateLayer(llvm::StringRef layer, int depth) {
  if (!isModulePath(layer))
    return layer.str();
  size_t at = 0;
  for (int i = 0; i < depth; ++i) {
    at = layer.find('.', at);
    if (at == llvm::StringRef::npos)
      return layer.str();
    if (i + 1 < depth)
      ++at;
  }
  return layer.take_front(at).str();
}

std::vector<std::string> locus::dump::layerChain(llvm::StringRef layer) {
  std::vector<std::string> chain;
  if (isModulePath(layer))
    for (size_t at = 0; (at = layer.find('.', at)) != llvm::StringRef::npos;
         ++at)
      chain.push_back(layer.take_front(at).str());
  chain.push_back(layer.str());
  return chain;
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

namespace {

/// "100x10xf32"; a dynamic dimension as "{batch}".
std::string shapeOf(Type type, ArrayRef<DimExpr> dims = {},
                    ArrayRef<DimSymbol> symbols = {}) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return "";
  std::string text;
  for (auto [d, size] : llvm::enumerate(tensor.getShape()))
    text += d < dims.size() && !dims[d].isStatic()
                ? "{" + formatDim(dims[d], symbols) + "}x"
                : std::to_string(size) + "x";
  llvm::raw_string_ostream os(text);
  os << tensor.getElementType();
  os.flush();
  return text;
}

std::string labelOf(Operation *op) {
  if (isa<InputOp, StateOp>(op))
    return describeValue(op->getResult(0)); // `input "x"`, `parameter "w"`
  if (auto output = dyn_cast<OutputOp>(op))
    return ("output \"" + output.getName() + "\"").str();
  if (auto assign = dyn_cast<AssignOp>(op))
    return "assign to " + describeValue(assign.getState());
  if (auto copy = dyn_cast<CopyOp>(op))
    return "copy " + copy.getFrom().str() + " -> " + copy.getTo().str() +
           (copy.getLoadTime() ? " (at load)" : "");
  return op->getName().getStringRef().drop_front(6).str(); // "locus."
}

std::string reasonText(Operation *op, PlacementAttr reason,
                       const std::string &device, const std::string &policy) {
  if (!reason)
    return "-";
  if (auto copy = dyn_cast<CopyOp>(op))
    return copy.getLoadTime() ? "copy of state or a constant, once at load"
                              : "copy for readers on " + copy.getTo().str();
  if (isa<AssignOp>(op))
    return "updates the state where it lives";
  switch (reason.getKind()) {
  case PlacementKind::pinned:
    return "pinned by the user (.to() or created on " + device + ")";
  case PlacementKind::follows_operands:
    return "follows its operands (strict)";
  case PlacementKind::no_kernel:
    return "no kernel on " +
           (reason.getDevice() ? reason.getDevice().str() : "cuda");
  case PlacementKind::cost:
    return "cost: cpu " + nanos(reason.getCpuNs().value_or(0)) + ", cuda " +
           nanos(reason.getCudaNs().value_or(0));
  case PlacementKind::colocated:
    return "colocated with its readers";
  case PlacementKind::soft:
    return "soft: no CUDA target";
  case PlacementKind::host_io:
    return "fed or read on the host";
  case PlacementKind::created:
    return "created on the CPU (PyTorch's default)";
  case PlacementKind::whole_step:
    return "whole step as one CUDA graph: " +
           nanos(reason.getCudaNs().value_or(0)) + ", split " +
           nanos(reason.getCpuNs().value_or(0));
  case PlacementKind::policy:
    return policy == "prefer-gpu" ? "prefer-gpu: it has a CUDA kernel"
                                  : "policy " + policy;
  }
  return "-";
}

/// A report of `graph` with its policy, targets and note of soft placement
/// (no rows yet).
Report reportHeader(GraphOp graph) {
  Report report;
  report.graph = graph.getSymName().str();
  if (auto policy = graph->getAttrOfType<StringAttr>(kPolicyAttrName))
    report.policy = policy.str();
  if (auto targets = graph->getAttrOfType<ArrayAttr>(kTargetsAttrName))
    for (Attribute target : targets)
      if (auto device = dyn_cast<DeviceAttr>(target))
        report.targets.push_back(device.str());
  if (auto note = graph->getAttrOfType<StringAttr>(kSoftNoteAttrName))
    report.softNote = note.str();
  return report;
}

/// The layer of a parameter or buffer: "layer1.0.conv1.weight" (and its
/// optimizer's "layer1.0.conv1.weight.exp_avg") -> "layer1.0.conv1".
std::string stateLayer(StateOp state) {
  llvm::StringRef name = state.getName();
  for (llvm::StringRef moment : {".momentum_buffer", ".exp_avg_sq", ".exp_avg"})
    if (name.consume_back(moment))
      break;
  size_t dot = name.rfind('.');
  return dot == llvm::StringRef::npos ? "" : name.take_front(dot).str();
}

/// The state `value` is (through the copies placement put in between), or
/// null.
StateOp stateBehind(Value value) {
  Operation *def = value.getDefiningOp();
  while (auto copy = dyn_cast_or_null<CopyOp>(def))
    def = copy.getInput().getDefiningOp();
  return dyn_cast_or_null<StateOp>(def);
}

/// Row::layer of `row` (of `op`).
std::string layerOf(const Row &row, Operation *op) {
  if (row.isCopy)
    return "";
  Layer layer = locus::layerOf(row.source);
  if (layer.kind == LayerKind::onnx || layer.kind == LayerKind::named)
    return layer.path;
  if (auto state = dyn_cast<StateOp>(op))
    return stateLayer(state);
  // An optimizer's update and its writes belong to the parameter's layer.
  if (auto assign = dyn_cast<AssignOp>(op))
    if (StateOp state = stateBehind(assign.getState()))
      return stateLayer(state);
  if (isa<SgdOp, AdamOp>(op))
    if (StateOp state = stateBehind(op->getOperand(0)))
      return stateLayer(state);
  return layer.path;
}

/// The row of `op`, placed on `device`: what it is, why it runs there,
/// where it was written, its estimates and the rows it reads (`ids`).
Row rowOf(Operation &op, DeviceAttr device, const Report &report,
          const CostProfile &profile,
          const llvm::DenseMap<Operation *, int> &ids,
          const DynamicDims &dynamic) {
  Row row;
  row.id = static_cast<int>(report.rows.size());
  row.op = &op;
  row.opName = op.getName().getStringRef().str();
  row.label = labelOf(&op);
  Value shown = op.getNumResults() ? op.getResult(0) : op.getOperand(0);
  Type type = shown.getType();
  row.shape = dynamic.isDynamic(shown)
                  ? shapeOf(type, dynamic.dimsOf(shown), dynamic.symbols())
                  : shapeOf(type);
  row.bytes = bytesOf(type);
  row.device = device.str();
  auto reason = op.getAttrOfType<PlacementAttr>(kPlacementAttrName);
  row.reasonKind = reason ? stringifyPlacementKind(reason.getKind()).str() : "";
  row.reasonText = reasonText(&op, reason, row.device, report.policy);
  if (auto autocast = op.getAttrOfType<TypeAttr>(kAutocastAttrName)) {
    llvm::raw_string_ostream os(row.precision);
    if (autocast.getValue().isF32())
      os << "f32 (autocast keeps a product of fewer than 8 rows against a "
            "weight in f32 when a step writes the weight, or when it is "
            "small: casting it each step, or a 16-bit call, would cost "
            "more than 16-bit arithmetic saves)";
    else
      os << autocast.getValue()
         << " operands, f32 accumulation (autocast: products and "
            "convolutions take 16-bit operands; the rest stays f32)";
  }
  row.source = userSourceOf(op.getLoc());
  row.isCopy = isa<CopyOp>(op);
  row.layer = layerOf(row, &op);
  if (auto copy = dyn_cast<CopyOp>(op)) {
    row.copyNs = copyCostNs(row.bytes, profile);
    row.copyFrom = copy.getFrom().str();
    row.copyTo = copy.getTo().str();
  }
  OpWork work = estimateWork(&op);
  row.cpuNs = opCostNs(work, profile.cpu);
  row.cudaNs = opCostNs(work, profile.cuda, !report.graphDevice.empty());
  for (Value operand : op.getOperands())
    if (Operation *producer = operand.getDefiningOp())
      row.operands.push_back(ids.lookup(producer));
  return row;
}

/// Counts `row` (of `op`, on `device`) in the report's totals: a copy's
/// bytes at load or per step, or an op and its estimate on its device.
void tally(Report &report, Row &row, Operation &op, DeviceAttr device,
           const CostProfile &profile) {
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    Report::Bucket bucket{static_cast<int64_t>(reduce.getBucket()), row.device,
                          static_cast<int>(reduce.getInputs().size()), 0};
    for (Value v : reduce.getInputs())
      bucket.bytes += bytesOf(v.getType());
    report.buckets.push_back(bucket);
    return;
  }
  auto copy = dyn_cast<CopyOp>(op);
  if (!copy) {
    ++report.opsPerDevice[row.device];
    report.stepNsPerDevice[row.device] +=
        device.isCpu() ? row.cpuNs : row.cudaNs;
    return;
  }
  row.loadTime = copy.getLoadTime();
  if (row.loadTime) {
    ++report.copiesAtLoad;
    report.bytesAtLoad += row.bytes;
    return;
  }
  ++report.copiesPerStep;
  report.bytesPerStep += row.bytes;
  report.copyNsPerStep += copyCostNs(row.bytes, profile);
  report.crossingValues.push_back(describeValue(copy.getInput()) + " (" +
                                  copy.getFrom().str() + " -> " +
                                  copy.getTo().str() + ")");
}

/// The source of the first row placed for `kind`, or none.
Source firstSourceOf(const Report &report, llvm::StringRef kind) {
  for (const Row &row : report.rows)
    if (row.reasonKind == kind)
      return row.source;
  return {};
}

/// The notes placement left on the graph (kPlacementNotesAttrName).
void addPlacementNotes(GraphOp graph, Report &report) {
  auto notes = graph->getAttrOfType<ArrayAttr>(kPlacementNotesAttrName);
  if (!notes)
    return;
  for (auto note : notes.getAsRange<DictionaryAttr>()) {
    Warning warning;
    warning.note = true;
    if (auto text = note.getAs<StringAttr>("text"))
      warning.text = text.str();
    if (auto where = note.getAs<StringAttr>("where")) {
      // "file:line" as userLine() wrote it.
      auto [file, line] = where.getValue().rsplit(':');
      warning.source.file = file.str();
      if (line.getAsInteger(10, warning.source.line))
        warning.source = {};
    }
    report.warnings.push_back(std::move(warning));
  }
}

/// Under auto, values the user pinned to a device that the cost model reads
/// elsewhere: the user asked for that device, and auto found it cheaper not
/// to compute there. One warning per pinned device, at the first such
/// value's line, so that the choice is never silent.
void addOverruledPins(Report &report) {
  struct Overruled {
    std::vector<std::string> values;
    std::set<std::string> readers;
    int64_t bytesAtLoad = 0, bytesPerStep = 0;
    Source first;
  };
  std::map<std::string, Overruled> byDevice;
  for (const Row &row : report.rows) {
    if (!row.isCopy || row.operands.empty())
      continue;
    const Row &pinned = report.rows[row.operands.front()];
    if (pinned.reasonKind != "pinned" || pinned.device == row.device)
      continue;
    Overruled &o = byDevice[pinned.device];
    if (o.values.empty())
      o.first = pinned.source;
    o.values.push_back(pinned.label);
    o.readers.insert(row.device);
    (row.loadTime ? o.bytesAtLoad : o.bytesPerStep) += row.bytes;
  }
  for (auto &[device, o] : byDevice) {
    std::string text = "auto runs ops that read values pinned to " + device;
    text += " (";
    size_t shown = std::min<size_t>(o.values.size(), 3);
    text += llvm::join(llvm::ArrayRef(o.values).take_front(shown), ", ");
    if (o.values.size() > shown)
      text += " and " + std::to_string(o.values.size() - shown) + " more";
    text += ") on ";
    text += llvm::join(
        std::vector<std::string>(o.readers.begin(), o.readers.end()), ", ");
    text += ", where the cost model estimates them faster (";
    if (o.bytesAtLoad)
      text += bytesText(o.bytesAtLoad) + " copied at load";
    if (o.bytesAtLoad && o.bytesPerStep)
      text += ", ";
    if (o.bytesPerStep)
      text += bytesText(o.bytesPerStep) + " copied every step";
    text += "); to run them on " + device;
    text += ", compile with policy=prefer-gpu or strict, or move their other "
            "operands there with .to()";
    report.warnings.emplace_back(Warning{std::move(text), o.first});
  }
}

/// Warnings: what a user should look at first.
void addWarnings(GraphOp graph, Report &report) {
  int computeOnCuda = 0, onCuda = 0;
  for (const Row &row : report.rows) {
    if (row.isCopy || !llvm::StringRef(row.device).starts_with("cuda"))
      continue;
    ++onCuda;
    if (estimateWork(row.op).kernel)
      ++computeOnCuda;
  }
  bool cudaTarget = llvm::any_of(report.targets, [](const std::string &t) {
    return llvm::StringRef(t).starts_with("cuda");
  });
  // Under policy cpu an idle GPU is what the user asked for.
  if (cudaTarget && computeOnCuda == 0 && report.policy != "cpu")
    report.warnings.push_back(
        {onCuda == 0
             ? std::string("a CUDA device is available but 0 ops are "
                           "placed on it")
             : "a CUDA device is available but no op computes on it (" +
                   std::to_string(onCuda) + " values only are kept there)",
         {}});
  if (!report.softNote.empty())
    report.warnings.push_back(
        {"soft placement: " + report.softNote, firstSourceOf(report, "soft")});
  if (report.copiesPerStep) {
    Source first;
    for (const Row &row : report.rows)
      if (row.isCopy && !row.loadTime && !row.operands.empty()) {
        first = report.rows[row.operands.front()].source;
        break;
      }
    report.warnings.push_back({std::to_string(report.copiesPerStep) +
                                   " value(s) cross devices every step (" +
                                   bytesText(report.bytesPerStep) + "): " +
                                   llvm::join(report.crossingValues, ", "),
                               first});
  }
  if (report.policy == "auto")
    addOverruledPins(report);
  for (const Row &row : report.rows)
    if (row.reasonKind == "no_kernel")
      report.warnings.push_back({row.label + " at " + shortSource(row.source) +
                                     " has no CUDA kernel and runs on " +
                                     row.device,
                                 row.source});
  addPlacementNotes(graph, report);
}

/// The CUDA device every computing op of `graph` is placed on (the runtime
/// replays such a step as one CUDA graph), else empty.
std::string graphDeviceOf(GraphOp graph) {
  DeviceAttr only;
  for (Operation &op : graph.getBodyBlock()) {
    if (!isComputing(&op))
      continue;
    DeviceAttr device = placedDevice(&op);
    if (!device || device.isCpu() || (only && device != only))
      return "";
    only = device;
  }
  return only ? only.str() : "";
}

} // namespace

FailureOr<Report> locus::dump::analyze(GraphOp graph,
                                       const CostProfile &profile) {
  Report report = reportHeader(graph);
  report.costProfile = profile.origin;
  report.runNs = static_cast<int64_t>(std::llround(profile.runNs));
  FailureOr<DynamicDims> dynamic = DynamicDims::analyze(graph);
  if (failed(dynamic))
    return failure();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  for (const DimSymbol &symbol : dynamic->symbols())
    report.dynamicSizes += (report.dynamicSizes.empty() ? "" : ", ") +
                           symbol.name + " up to " +
                           std::to_string(symbol.bound);
  report.graphDevice = graphDeviceOf(graph);
  llvm::DenseMap<Operation *, int> ids;
  for (Operation &op : graph.getBodyBlock()) {
    DeviceAttr device = placedDevice(&op);
    if (!device)
      return op.emitOpError() << "is not placed; run --locus-place-devices";
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    Row row = rowOf(op, device, report, profile, ids, *dynamic);
    tally(report, row, op, device, profile);
    ids[&op] = row.id;
    report.rows.push_back(std::move(row));
  }
  for (const std::string &target : report.targets)
    report.opsPerDevice.try_emplace(target, 0);
  addWarnings(graph, report);
  return report;
}

int64_t Report::bucketBytes() const {
  int64_t total = 0;
  for (const Bucket &b : buckets)
    total += b.bytes;
  return total;
}

int64_t Report::stepNs() const {
  int64_t total = runNs + copyNsPerStep;
  for (const auto &entry : stepNsPerDevice)
    total += entry.second;
  return total;
}
