//===- Dump.cpp - what runs where, and why --------------------------------===//

#include "locus/Dump/Dump.h"
#include "locus/Passes/Passes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>
#include <set>

using namespace mlir;
using namespace locus;
using namespace locus::dump;

namespace {

std::string shapeOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return "";
  std::string text;
  for (int64_t dim : tensor.getShape())
    text += std::to_string(dim) + "x";
  llvm::raw_string_ostream os(text);
  os << tensor.getElementType();
  os.flush();
  return text;
}

Source sourceOf(Location loc) {
  Source source;
  // A gradient's op (autodiff's backwardLoc) or a fused kernel: the first
  // op's location.
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  Location callee = loc;
  if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    callee = call.getCallee();
    if (auto caller = dyn_cast<FileLineColLoc>(call.getCaller())) {
      source.callerFile = caller.getFilename().str();
      source.callerLine = caller.getLine();
    }
    // A named layer (detail::LayerScope): its path around where it was built.
    if (auto named = dyn_cast<NameLoc>(callee)) {
      source.layerPath = named.getName().str();
      callee = named.getChildLoc();
    }
  }
  if (auto name = dyn_cast<NameLoc>(callee)) { // an imported op
    if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc())) {
      source.file = file.getFilename().str();
      source.node = name.getName().str();
    }
    return source;
  }
  if (auto file = dyn_cast<FileLineColLoc>(callee)) {
    source.file = file.getFilename().str();
    source.line = file.getLine();
    source.column = file.getColumn();
  }
  return source;
}

/// "seed_models.cpp:23" (called from ":24" when a layer recorded it).
std::string shortSource(const Source &source) {
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

std::string nanos(int64_t ns) {
  if (ns < 10000)
    return std::to_string(ns) + " ns";
  if (ns < 10000000)
    return llvm::formatv("{0:F1} us", ns / 1e3).str();
  return llvm::formatv("{0:F1} ms", ns / 1e6).str();
}

std::string bytesText(int64_t bytes) {
  if (bytes < 10 * 1024)
    return std::to_string(bytes) + " B";
  if (bytes < 10 * 1024 * 1024)
    return llvm::formatv("{0:F1} KiB", bytes / 1024.0).str();
  return llvm::formatv("{0:F1} MiB", bytes / (1024.0 * 1024.0)).str();
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
  case PlacementKind::policy:
    return policy == "prefer-gpu" ? "prefer-gpu: it has a CUDA kernel"
                                  : "policy " + policy;
  }
  return "-";
}

std::string dotEscape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace

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

std::string locus::dump::onnxLayer(llvm::StringRef node) {
  size_t open = node.find('\''), close = node.rfind('\'');
  if (open == llvm::StringRef::npos || close <= open)
    return "";
  llvm::StringRef name = node.slice(open + 1, close);
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '/', -1, /*KeepEmpty=*/false);
  if (parts.size() < 2)
    return "";
  parts.pop_back(); // the node itself
  std::string path;
  for (llvm::StringRef part : parts) {
    if (!path.empty() && part.starts_with(path + ".")) {
      path = part.str();
    } else {
      if (!path.empty())
        path += ".";
      path += part.str();
    }
  }
  return path;
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

namespace {

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
  if (!row.source.node.empty())
    return dump::onnxLayer(row.source.node);
  if (!row.source.layerPath.empty())
    return row.source.layerPath;
  if (auto state = dyn_cast<StateOp>(op))
    return stateLayer(state);
  // An optimizer's update and its writes belong to the parameter's layer.
  if (auto assign = dyn_cast<AssignOp>(op))
    if (StateOp state = stateBehind(assign.getState()))
      return stateLayer(state);
  if (isa<SgdOp, AdamOp>(op))
    if (StateOp state = stateBehind(op->getOperand(0)))
      return stateLayer(state);
  if (!row.source.callerLine)
    return "";
  std::string line = llvm::sys::path::filename(row.source.callerFile).str();
  line += ":";
  line += std::to_string(row.source.callerLine);
  return line;
}

/// The row of `op`, placed on `device`: what it is, why it runs there,
/// where it was written, its estimates and the rows it reads (`ids`).
Row rowOf(Operation &op, DeviceAttr device, const Report &report,
          const CostProfile &profile,
          const llvm::DenseMap<Operation *, int> &ids) {
  Row row;
  row.id = static_cast<int>(report.rows.size());
  row.op = &op;
  row.opName = op.getName().getStringRef().str();
  row.label = labelOf(&op);
  Type type = op.getNumResults() ? op.getResult(0).getType()
                                 : op.getOperand(0).getType();
  row.shape = shapeOf(type);
  row.bytes = bytesOf(type);
  row.device = device.str();
  auto reason = op.getAttrOfType<PlacementAttr>(kPlacementAttrName);
  row.reasonKind = reason ? stringifyPlacementKind(reason.getKind()).str() : "";
  row.reasonText = reasonText(&op, reason, row.device, report.policy);
  row.source = sourceOf(op.getLoc());
  row.isCopy = isa<CopyOp>(op);
  row.layer = layerOf(row, &op);
  if (row.isCopy)
    row.copyNs = copyCostNs(row.bytes, profile);
  OpWork work = estimateWork(&op);
  row.cpuNs = opCostNs(work, profile.cpu);
  row.cudaNs = opCostNs(work, profile.cuda);
  for (Value operand : op.getOperands())
    if (Operation *producer = operand.getDefiningOp())
      row.operands.push_back(ids.lookup(producer));
  return row;
}

/// Counts `row` (of `op`, on `device`) in the report's totals: a copy's
/// bytes at load or per step, or an op and its estimate on its device.
void tally(Report &report, Row &row, Operation &op, DeviceAttr device,
           const CostProfile &profile) {
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

} // namespace

FailureOr<Report> locus::dump::analyze(GraphOp graph,
                                       const CostProfile &profile) {
  Report report = reportHeader(graph);
  report.costProfile = profile.origin;
  report.runNs = static_cast<int64_t>(std::llround(profile.runNs));
  llvm::DenseMap<Operation *, int> ids;
  for (Operation &op : graph.getBodyBlock()) {
    DeviceAttr device = placedDevice(&op);
    if (!device)
      return op.emitOpError() << "is not placed; run --locus-place-devices";
    Row row = rowOf(op, device, report, profile, ids);
    tally(report, row, op, device, profile);
    ids[&op] = row.id;
    report.rows.push_back(std::move(row));
  }
  for (const std::string &target : report.targets)
    report.opsPerDevice.try_emplace(target, 0);
  addWarnings(graph, report);
  return report;
}

//===----------------------------------------------------------------------===//
// Table and summary
//===----------------------------------------------------------------------===//

void locus::dump::printTable(const Report &report, llvm::raw_ostream &os) {
  size_t wLabel = 2, wShape = 5, wDevice = 6, wReason = 6;
  for (const Row &row : report.rows) {
    wLabel = std::max(wLabel, row.label.size());
    wShape = std::max(wShape, row.shape.size());
    wDevice = std::max(wDevice, row.device.size());
    wReason = std::max(wReason, row.reasonText.size());
  }
  auto line = [&](llvm::StringRef id, llvm::StringRef label,
                  llvm::StringRef shape, llvm::StringRef device,
                  llvm::StringRef reason, llvm::StringRef source) {
    os << llvm::left_justify(id, 4) << "  " << llvm::left_justify(label, wLabel)
       << "  " << llvm::left_justify(shape, wShape) << "  "
       << llvm::left_justify(device, wDevice) << "  "
       << llvm::left_justify(reason, wReason) << "  " << source << "\n";
  };
  line("#", "op", "shape", "device", "reason", "source");
  for (const Row &row : report.rows)
    line(std::to_string(row.id), row.label, row.shape, row.device,
         row.reasonText, shortSource(row.source));
}

std::string locus::dump::formatSource(const Source &source) {
  return shortSource(source);
}

std::string locus::dump::formatNanos(int64_t ns) { return nanos(ns); }

std::string locus::dump::formatBytes(int64_t bytes) { return bytesText(bytes); }

int64_t Report::stepNs() const {
  int64_t total = runNs + copyNsPerStep;
  for (const auto &entry : stepNsPerDevice)
    total += entry.second;
  return total;
}

void locus::dump::printSummary(const Report &report, llvm::raw_ostream &os) {
  os << "graph @" << report.graph << ": policy " << report.policy
     << ", targets " << llvm::join(report.targets, ", ") << "\n";
  os << "ops per device:";
  for (const auto &[device, count] : report.opsPerDevice)
    os << " " << device << " " << count << ";";
  os << "\n";
  os << "copies: " << report.copiesPerStep << " per step ("
     << bytesText(report.bytesPerStep) << "), " << report.copiesAtLoad
     << " at load (" << bytesText(report.bytesAtLoad) << ")\n";
  os << "estimated step time:";
  for (const auto &[device, ns] : report.stepNsPerDevice)
    os << " " << device << " " << nanos(ns) << ";";
  os << " copies " << nanos(report.copyNsPerStep) << "; run "
     << nanos(report.runNs) << "; total " << nanos(report.stepNs())
     << " (devices run one after another in this estimate)\n";
  os << "cost profile: " << report.costProfile << "\n";
  if (report.warnings.empty()) {
    os << "warnings: none\n";
    return;
  }
  os << "warnings:\n";
  for (const Warning &warning : report.warnings)
    os << "  - " << (warning.note ? "note: " : "") << warning.text << "\n";
}

//===----------------------------------------------------------------------===//
// DOT
//===----------------------------------------------------------------------===//

static const char *colorOf(llvm::StringRef device) {
  if (device == "cpu")
    return "#9ecae1";
  static const char *gpus[] = {"#a1d99b", "#c7e9c0", "#74c476", "#41ab5d"};
  unsigned index = 0;
  device.drop_front(5).getAsInteger(10, index);
  return gpus[index % 4];
}

/// One DOT node for an op or copy.
static void dotNode(const Row &row, llvm::raw_ostream &os,
                    llvm::StringRef indent) {
  os << indent << "n" << row.id << " [label=\"" << dotEscape(row.label) << "\\n"
     << dotEscape(row.shape) << "\\n"
     << row.device << " | " << row.reasonKind << "\\n"
     << dotEscape(shortSource(row.source)) << "\"";
  if (row.isCopy)
    os << ", shape=cds, fillcolor=\"#fdae6b\"";
  else
    os << ", shape=box, fillcolor=\"" << colorOf(row.device) << "\"";
  os << "];\n";
}

/// Every op, each layer's ops in a cluster of its own.
static void printFullDot(const Report &report, llvm::raw_ostream &os) {
  std::vector<std::string> layers;
  std::map<std::string, std::vector<const Row *>> members;
  for (const Row &row : report.rows) {
    if (row.layer.empty()) {
      dotNode(row, os, "  ");
      continue;
    }
    auto &list = members[row.layer];
    if (list.empty())
      layers.push_back(row.layer);
    list.push_back(&row);
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    os << "  subgraph \"cluster_" << i << "\" {\n    label=\""
       << dotEscape(layers[i])
       << "\";\n    style=rounded;\n    color=\"#999999\";\n";
    for (const Row *row : members[layers[i]])
      dotNode(*row, os, "    ");
    os << "  }\n";
  }
  for (const Row &row : report.rows)
    for (int operand : row.operands)
      os << "  n" << operand << " -> n" << row.id << ";\n";
}

namespace {

/// A node of the collapsed picture: ops of one layer (or of a prefix of
/// its path), with what they run on.
struct DotGroup {
  std::string name;
  int ops = 0;
  std::map<std::string, int> perDevice;
  int64_t ns = 0;
};

} // namespace

/// Layers as nodes (their ops, device mix and estimate), copies as edges
/// labelled with their bytes; at most `maxNodes` nodes.
static void printCollapsedDot(const Report &report, llvm::raw_ostream &os,
                              int maxNodes) {
  // The group key of each op row at a depth: its layer cut to `depth`
  // parts; an op of no layer goes by its source line, or "(graph)".
  int deepest = 1;
  for (const Row &row : report.rows)
    if (isModulePath(row.layer))
      deepest = std::max<int>(
          deepest, 1 + static_cast<int>(std::count(row.layer.begin(),
                                                   row.layer.end(), '.')));
  auto keyAt = [&](const Row &row, int depth) -> std::string {
    if (!row.layer.empty())
      return truncateLayer(row.layer, depth);
    if (row.opName == "locus.input" || row.opName == "locus.output")
      return "(inputs and outputs)";
    return "(other ops)";
  };
  auto groupsAt = [&](int depth) {
    std::vector<std::string> order;
    std::set<std::string> seen;
    for (const Row &row : report.rows)
      if (!row.isCopy && seen.insert(keyAt(row, depth)).second)
        order.push_back(keyAt(row, depth));
    return order;
  };
  int depth = deepest;
  std::vector<std::string> order = groupsAt(depth);
  while (depth > 1 && static_cast<int>(order.size()) > maxNodes)
    order = groupsAt(--depth);
  // Still too many: consecutive groups merge, in graph order.
  std::map<std::string, size_t> indexOf;
  size_t per = (order.size() + maxNodes - 1) / maxNodes;
  std::vector<DotGroup> groups;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i % per == 0)
      groups.push_back(DotGroup{order[i], 0, {}, 0});
    else if (i % per == per - 1 || i + 1 == order.size())
      groups.back().name += " .. " + order[i];
    indexOf[order[i]] = groups.size() - 1;
  }
  std::vector<size_t> groupOf(report.rows.size(), 0);
  for (const Row &row : report.rows) {
    if (row.isCopy)
      continue;
    size_t g = indexOf[keyAt(row, depth)];
    groupOf[row.id] = g;
    ++groups[g].ops;
    ++groups[g].perDevice[row.device];
    groups[g].ns += row.device == "cpu" ? row.cpuNs : row.cudaNs;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const DotGroup &group = groups[g];
    std::string mix, colors;
    for (const auto &[device, count] : group.perDevice) {
      mix += (mix.empty() ? "" : ", ") + device + " " + std::to_string(count);
      colors += (colors.empty() ? "" : ":") + std::string(colorOf(device)) +
                llvm::formatv(";{0:F3}", double(count) / group.ops).str();
    }
    os << "  g" << g << " [shape=box, style=\"striped\", fillcolor=\"" << colors
       << "\", label=\"" << dotEscape(group.name) << "\\n"
       << group.ops << (group.ops == 1 ? " op" : " ops") << ": " << mix
       << "\\nestimate " << nanos(group.ns) << "\"];\n";
  }
  // An edge per pair of groups; through a copy, orange with the bytes (a
  // copy counted once per pair, however many readers it has there).
  std::map<std::pair<size_t, size_t>, int64_t> edges, copies;
  std::set<std::pair<std::pair<size_t, size_t>, int>> counted;
  for (const Row &row : report.rows) {
    if (row.isCopy)
      continue;
    for (int operand : row.operands) {
      const Row *from = &report.rows[operand];
      int64_t copied = 0;
      while (from->isCopy && !from->operands.empty()) {
        copied += from->loadTime ? 0 : from->bytes;
        from = &report.rows[from->operands.front()];
      }
      if (from->isCopy)
        continue;
      auto key = std::make_pair(groupOf[from->id], groupOf[row.id]);
      if (copied) {
        if (counted.insert({key, operand}).second)
          copies[key] += copied;
      } else if (key.first != key.second) {
        edges[key] = 0;
      }
    }
  }
  for (const auto &[key, unused] : edges)
    if (!copies.count(key))
      os << "  g" << key.first << " -> g" << key.second << ";\n";
  for (const auto &[key, bytes] : copies)
    os << "  g" << key.first << " -> g" << key.second
       << " [color=\"#e6550d\", penwidth=2, label=\"copy " << bytesText(bytes)
       << " per step\"];\n";
}

void locus::dump::printDot(const Report &report, llvm::raw_ostream &os,
                           int maxNodes) {
  os << "digraph \"" << dotEscape(report.graph) << "\" {\n"
     << "  rankdir=TB;\n  node [style=filled, fontname=\"Helvetica\", "
        "fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=10];\n"
     << "  label=\"@" << dotEscape(report.graph) << " (policy "
     << dotEscape(report.policy) << ")\";\n";
  if (maxNodes > 0 && static_cast<int>(report.rows.size()) > maxNodes)
    printCollapsedDot(report, os, maxNodes);
  else
    printFullDot(report, os);
  os << "}\n";
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// The summary's warnings as JSON strings ("note: " before a note).
static llvm::json::Array warningTexts(const Report &report) {
  llvm::json::Array texts;
  for (const Warning &warning : report.warnings)
    texts.push_back((warning.note ? "note: " : "") + warning.text);
  return texts;
}

static llvm::json::Value toJson(const Report &report) {
  llvm::json::Array ops;
  for (const Row &row : report.rows) {
    llvm::json::Object source{{"file", row.source.file},
                              {"line", row.source.line},
                              {"column", row.source.column}};
    if (!row.source.node.empty())
      source["node"] = row.source.node;
    if (row.source.callerLine)
      source["called_from"] = llvm::json::Object{
          {"file", row.source.callerFile}, {"line", row.source.callerLine}};
    llvm::json::Object reason{{"kind", row.reasonKind},
                              {"text", row.reasonText}};
    if (auto attr = row.op->getAttrOfType<PlacementAttr>(kPlacementAttrName)) {
      if (std::optional<int64_t> ns = attr.getCpuNs())
        reason["cpu_ns"] = *ns;
      if (std::optional<int64_t> ns = attr.getCudaNs())
        reason["cuda_ns"] = *ns;
      if (attr.getDevice())
        reason["device"] = attr.getDevice().str();
    }
    llvm::json::Object op{
        {"id", row.id},
        {"op", row.opName},
        {"label", row.label},
        {"shape", row.shape},
        {"bytes", row.bytes},
        {"device", row.device},
        {"reason", std::move(reason)},
        {"source", std::move(source)},
        {"estimate_ns",
         llvm::json::Object{{"cpu", row.cpuNs}, {"cuda", row.cudaNs}}},
        {"operands", llvm::json::Array(row.operands)}};
    if (row.isCopy)
      op["copy"] = llvm::json::Object{{"load_time", row.loadTime},
                                      {"estimate_ns", row.copyNs}};
    if (!row.layer.empty())
      op["layer"] = row.layer;
    ops.push_back(std::move(op));
  }
  llvm::json::Object perDevice, stepNs;
  for (const auto &[device, count] : report.opsPerDevice)
    perDevice[device] = count;
  for (const auto &[device, ns] : report.stepNsPerDevice)
    stepNs[device] = ns;
  stepNs["copies"] = report.copyNsPerStep;
  stepNs["run"] = report.runNs;
  return llvm::json::Object{
      {"schema", "locus-dump/1"},
      {"graph", report.graph},
      {"policy", report.policy},
      {"targets", llvm::json::Array(report.targets)},
      {"soft_placement", report.softNote.empty()
                             ? llvm::json::Value(nullptr)
                             : llvm::json::Value(report.softNote)},
      {"ops", std::move(ops)},
      {"summary", llvm::json::Object{{"ops_per_device", std::move(perDevice)},
                                     {"copies_per_step", report.copiesPerStep},
                                     {"copies_at_load", report.copiesAtLoad},
                                     {"bytes_per_step", report.bytesPerStep},
                                     {"bytes_at_load", report.bytesAtLoad},
                                     {"step_ns", std::move(stepNs)},
                                     {"cost_profile", report.costProfile},
                                     {"warnings", warningTexts(report)}}}};
}

void locus::dump::printJson(const Report &report, llvm::raw_ostream &os) {
  os << llvm::formatv("{0:2}", toJson(report)) << "\n";
}

//===----------------------------------------------------------------------===//
// HTML: one self-contained page (page.html), the JSON inside
//===----------------------------------------------------------------------===//

/// page.html as the build embedded it.
static constexpr llvm::StringLiteral kHtmlPage =
#include "DumpPage.inc"
    ;

void locus::dump::printHtml(const Report &report, llvm::raw_ostream &os) {
  std::string json;
  llvm::raw_string_ostream js(json);
  js << toJson(report);
  js.flush();
  // Inside <script>, "</" would end the element (and "<!--" open a comment).
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() &&
        (json[i + 1] == '/' || json[i + 1] == '!'))
      safe += "\\u003c";
    else
      safe += json[i];
  }
  constexpr llvm::StringLiteral marker = "REPORT_JSON";
  size_t at = kHtmlPage.find(marker);
  os << kHtmlPage.take_front(at) << safe
     << kHtmlPage.drop_front(at + marker.size());
}

//===----------------------------------------------------------------------===//
// --explain
//===----------------------------------------------------------------------===//

namespace {

/// Whether `row` belongs to layer `layer` or one of its sublayers.
bool inLayer(const Row &row, StringRef layer) {
  StringRef own = row.layer;
  return own == layer ||
         (isModulePath(layer) && own.starts_with(layer) &&
          own.size() > layer.size() && own[layer.size()] == '.');
}

/// The row a value comes from, through the copies placement put in between.
const Row &originOf(const Report &report, const Row &row) {
  const Row *r = &row;
  while (r->isCopy && !r->operands.empty())
    r = &report.rows[r->operands.front()];
  return *r;
}

/// The step's copies and kernels that depend on where `members` run, with
/// the members on `device` (every other op where it is), or as placed when
/// `device` is empty.
struct LayerCost {
  int64_t kernelNs = 0;
  int copies = 0, loadCopies = 0;
  int64_t bytes = 0, loadBytes = 0, copyNs = 0;
};

LayerCost layerCost(const Report &report, const std::vector<bool> &member,
                    const std::string &device, const CostProfile &profile) {
  LayerCost cost;
  auto placed = [&](const Row &r) {
    return !device.empty() && member[r.id] ? device : r.device;
  };
  auto onCpu = [](const std::string &d) { return d == "cpu"; };
  // Each value a member produces or reads is copied once per device that
  // reads it elsewhere.
  std::set<std::pair<int, std::string>> copied;
  for (const Row &row : report.rows) {
    if (row.isCopy)
      continue;
    if (member[row.id])
      cost.kernelNs += onCpu(placed(row)) ? row.cpuNs : row.cudaNs;
    for (int operand : row.operands) {
      const Row &from = originOf(report, report.rows[operand]);
      if (!member[row.id] && !member[from.id])
        continue;
      std::string to = placed(row);
      if (placed(from) == to || !copied.insert({from.id, to}).second)
        continue;
      // State and constants move once, at load; the rest at every step.
      bool atLoad =
          from.opName == "locus.state" || from.opName == "locus.constant";
      if (atLoad) {
        ++cost.loadCopies;
        cost.loadBytes += from.bytes;
      } else {
        ++cost.copies;
        cost.bytes += from.bytes;
        cost.copyNs += copyCostNs(from.bytes, profile);
      }
    }
  }
  return cost;
}

std::string copiesText(int n) {
  return std::to_string(n) + (n == 1 ? " copy" : " copies");
}

std::string signedNanos(int64_t ns) {
  return (ns < 0 ? "-" : "+") + nanos(ns < 0 ? -ns : ns);
}

/// --explain for a whole layer: what runs where and why, the copies at its
/// edges, and what it would cost on each device instead (the layer moved
/// whole, the rest of the graph where it is: the min-cut's alternatives).
void explainLayer(const Report &report, StringRef layer,
                  const CostProfile &profile, llvm::raw_ostream &os) {
  std::vector<bool> member(report.rows.size(), false);
  std::map<std::string, int> perDevice, reasons;
  std::map<std::string, int64_t> nsPerDevice;
  std::set<std::string> sublayers;
  int ops = 0, noKernel = 0, pinned = 0;
  const Row *first = nullptr;
  for (const Row &row : report.rows) {
    if (row.isCopy || !inLayer(row, layer))
      continue;
    member[row.id] = true;
    first = first ? first : &row;
    ++ops;
    ++perDevice[row.device];
    nsPerDevice[row.device] += row.device == "cpu" ? row.cpuNs : row.cudaNs;
    ++reasons[row.reasonKind.empty() ? "-" : row.reasonKind];
    noKernel += row.reasonKind == "no_kernel";
    pinned += row.reasonKind == "pinned";
    if (row.layer != layer) {
      StringRef rest = StringRef(row.layer).drop_front(layer.size() + 1);
      sublayers.insert(rest.split('.').first.str());
    }
  }
  os << "layer " << layer << ": " << ops << (ops == 1 ? " op" : " ops");
  if (!sublayers.empty()) {
    os << " in " << sublayers.size() << " sublayer"
       << (sublayers.size() == 1 ? "" : "s") << " (";
    size_t n = 0;
    for (const std::string &sub : sublayers)
      os << (n++ ? ", " : "") << (n > 8 ? "..." : sub);
    os << ")";
  }
  os << ", first at " << shortSource(first->source) << "\n";
  os << "  runs on:";
  for (const auto &[device, count] : perDevice)
    os << " " << device << " " << count << " ops ("
       << nanos(nsPerDevice[device]) << ")";
  os << "\n  why:";
  for (const auto &[kind, count] : reasons)
    os << " " << kind << " " << count;
  os << "\n";
  // The per-step copies at its edges, biggest first.
  std::vector<const Row *> edgeCopies;
  for (const Row &row : report.rows) {
    if (!row.isCopy || row.loadTime)
      continue;
    bool fromIn = member[originOf(report, row).id], toIn = false, toOut = false;
    for (const Row &reader : report.rows)
      if (!reader.isCopy && llvm::is_contained(reader.operands, row.id))
        (member[reader.id] ? toIn : toOut) = true;
    if (fromIn != toIn || (fromIn && toOut))
      edgeCopies.push_back(&row);
  }
  llvm::sort(edgeCopies, [](const Row *a, const Row *b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->id < b->id;
  });
  int64_t edgeBytes = 0;
  for (const Row *copy : edgeCopies)
    edgeBytes += copy->bytes;
  os << "  copies per step at its edges: " << edgeCopies.size() << " ("
     << bytesText(edgeBytes) << ")\n";
  for (size_t i = 0; i < edgeCopies.size() && i < 8; ++i) {
    const Row &from = originOf(report, *edgeCopies[i]);
    os << "    #" << edgeCopies[i]->id << " " << edgeCopies[i]->label << ", "
       << bytesText(edgeCopies[i]->bytes) << ", the result of #" << from.id
       << " " << from.label << " (" << (member[from.id] ? "in" : "outside")
       << " the layer)\n";
  }
  if (edgeCopies.size() > 8)
    os << "    ... " << edgeCopies.size() - 8 << " more\n";
  // The alternatives: the whole layer on each target.
  LayerCost now = layerCost(report, member, "", profile);
  int64_t nowNs = now.kernelNs + now.copyNs;
  os << "  moved whole (the rest where it is), its kernels and the copies "
        "its ops then need:\n";
  os << "    as placed: " << nanos(now.kernelNs) << " + "
     << copiesText(now.copies) << " per step (" << bytesText(now.bytes) << ", "
     << nanos(now.copyNs) << ") = " << nanos(nowNs) << "\n";
  std::string best = "as placed";
  int64_t bestNs = nowNs;
  for (const std::string &target : report.targets) {
    os << "    all on " << target << ": ";
    if (perDevice.size() == 1 && perDevice.begin()->first == target) {
      os << "as placed\n";
      continue;
    }
    if (target != "cpu" && noKernel) {
      os << "not possible: " << noKernel << " op" << (noKernel == 1 ? "" : "s")
         << " have no CUDA kernel\n";
      continue;
    }
    LayerCost there = layerCost(report, member, target, profile);
    int64_t ns = there.kernelNs + there.copyNs;
    os << nanos(there.kernelNs) << " + " << copiesText(there.copies)
       << " per step (" << bytesText(there.bytes) << ", " << nanos(there.copyNs)
       << ") = " << nanos(ns) << " (" << signedNanos(ns - nowNs) << " per step";
    if (there.loadCopies != now.loadCopies)
      os << "; " << copiesText(there.loadCopies) << " at load, "
         << bytesText(there.loadBytes);
    os << ")\n";
    if (ns < bestNs) {
      bestNs = ns;
      best = "all on " + target;
    }
  }
  if (pinned)
    os << "  " << pinned << " of its ops " << (pinned == 1 ? "is" : "are")
       << " pinned by the user: placement keeps them where they are\n";
  os << "  cheapest under the cost model: " << best
     << (best == "as placed" ? " (the placement's own choice)"
                             : " (placement weighs the whole graph: pins, "
                               "policy and readers elsewhere can outweigh it)")
     << "\n";
}

} // namespace

LogicalResult locus::dump::explain(const Report &report, StringRef query,
                                   const CostProfile &profile,
                                   llvm::raw_ostream &os) {
  StringRef q = query.trim();
  // A layer (or a prefix of layers' paths) first: "layer1.0", "fc".
  if (!q.empty() && llvm::any_of(report.rows, [&](const Row &row) {
        return !row.isCopy && inLayer(row, q);
      })) {
    explainLayer(report, q, profile, os);
    return success();
  }
  std::vector<const Row *> matches;
  unsigned id;
  for (const Row &row : report.rows) {
    bool match = false;
    if (!q.drop_front(q.starts_with("#") ? 1 : 0).getAsInteger(10, id))
      match = row.id == static_cast<int>(id) ||
              (!q.starts_with("#") && row.source.line == static_cast<int>(id));
    else if (q.contains(':')) {
      auto [file, line] = q.rsplit(':');
      unsigned n;
      match = !line.getAsInteger(10, n) &&
              StringRef(row.source.file).ends_with(file) &&
              (row.source.line == static_cast<int>(n) ||
               row.source.callerLine == static_cast<int>(n));
    } else {
      match = row.opName == q || row.opName == ("locus." + q).str() ||
              row.label.find("\"" + q.str() + "\"") != std::string::npos;
    }
    if (match)
      matches.push_back(&row);
  }
  if (matches.empty()) {
    os << "no op or layer matches '" << query
       << "' (try a row number, an op name, a name, file:line or a layer "
          "such as layer1.0)\n";
    return failure();
  }
  for (const Row *row : matches) {
    os << "#" << row->id << " " << row->label << " (" << row->opName << ", "
       << row->shape << ") at " << shortSource(row->source) << "\n";
    os << "  runs on " << row->device << ": " << row->reasonText << "\n";
    if (row->isCopy) {
      os << "  moves " << bytesText(row->bytes)
         << (row->loadTime ? " once, at load" : " at every step") << ", about "
         << nanos(copyCostNs(row->bytes, profile)) << " each time\n";
      continue;
    }
    os << "  estimated: cpu " << nanos(row->cpuNs) << ", cuda "
       << nanos(row->cudaNs) << "\n";
    // What the other side would cost: this op there plus the copies its
    // operands and readers would then need.
    bool onCpu = row->device == "cpu";
    std::string other = onCpu ? "cuda" : "cpu";
    int64_t moves = 0;
    auto deviceOf = [&](const Row &r) {
      return r.isCopy ? report.rows[r.operands.front()].device : r.device;
    };
    for (int operand : row->operands) {
      const Row &source = report.rows[operand];
      if ((deviceOf(source) == "cpu") == onCpu)
        moves += copyCostNs(source.bytes, profile);
    }
    for (const Row &reader : report.rows)
      if (llvm::is_contained(reader.operands, row->id) &&
          (reader.device == "cpu") == onCpu && !reader.isCopy)
        moves += copyCostNs(row->bytes, profile);
    int64_t here = onCpu ? row->cpuNs : row->cudaNs;
    int64_t there = onCpu ? row->cudaNs : row->cpuNs;
    os << "  on " << other << " it would take " << nanos(there) << " plus "
       << nanos(moves) << " of copies: " << nanos(there + moves) << " against "
       << nanos(here) << " here\n";
  }
  return success();
}
