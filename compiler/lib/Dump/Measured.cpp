//===- Measured.cpp - a trace's times beside the cost model's, by layer ---===//
//
// locus-dump --trace=trace.json: the kernels and copies of a run, as the
// runtime traced them (docs/runtime.md, "Traces"), summed per layer and put
// beside the estimates the placement used. A kernel's source names its ops
// with their lines and named layers ("locus.conv2d at m.cpp:61 in
// layer1.0.conv1; locus.relu at m.cpp:76 in layer1.0 (x2)"); a fused kernel's
// time is shared among its ops' layers by op count. Copies carry no op, so
// a traced copy goes to the per-step copies of the report with the same
// devices and bytes, shared among them, and counts for the layer that reads
// it.
//
//===----------------------------------------------------------------------===//

#include "locus/Dump/Dump.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>
#include <set>

using namespace locus::dump;
using llvm::StringRef;

namespace {

/// One line of the table: a layer at the chosen depth.
struct Line {
  int ops = 0;
  int64_t estimatedNs = 0, estimatedCopyNs = 0;
  double measuredUs = 0, measuredCopyUs = 0;
};

/// The deepest cut that keeps the table to about 30 lines.
int depthFor(const Report &report) {
  int best = 1;
  for (int depth = 1; depth < 12; ++depth) {
    std::set<std::string> lines;
    for (const Row &row : report.rows)
      if (!row.isCopy)
        lines.insert(truncateLayer(row.layer, depth));
    if (lines.size() > 30)
      break;
    best = depth;
  }
  return best;
}

/// The layer of one part of a kernel's source: its named layer, its ONNX
/// node's scope, or the line of an unnamed layer's call when the report has
/// a layer of that name.
std::string layerOfPart(StringRef part, const std::set<std::string> &known) {
  size_t in = part.rfind(" in ");
  size_t at = part.find(" at ");
  if (in != StringRef::npos && (at == StringRef::npos || in > at))
    return part.drop_front(in + 4).str();
  if (size_t node = part.find(": node '"); node != StringRef::npos)
    return onnxLayer(part.drop_front(node + 2));
  if (at != StringRef::npos) {
    std::string line = llvm::sys::path::filename(part.drop_front(at + 4)).str();
    if (known.count(line))
      return line;
  }
  return "";
}

std::string us(double value) {
  if (value < 1000)
    return llvm::formatv("{0:F1} us", value).str();
  return llvm::formatv("{0:F2} ms", value / 1000).str();
}

} // namespace

mlir::LogicalResult locus::dump::printMeasured(const Report &report,
                                               StringRef traceText,
                                               StringRef traceName,
                                               llvm::raw_ostream &os,
                                               std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(traceText);
  if (!parsed) {
    error = (traceName +
             " is not a Locus trace: " + llvm::toString(parsed.takeError()))
                .str();
    return mlir::failure();
  }
  const llvm::json::Object *root = parsed->getAsObject();
  const llvm::json::Array *events =
      root ? root->getArray("traceEvents") : nullptr;
  if (!events) {
    error = (traceName + " is not a Locus trace: it has no traceEvents").str();
    return mlir::failure();
  }
  // The steps; the first is a warm-up when there are more.
  std::set<int64_t> steps;
  for (const llvm::json::Value &value : *events)
    if (const llvm::json::Object *event = value.getAsObject())
      if (const llvm::json::Object *args = event->getObject("args"))
        if (std::optional<int64_t> step = args->getInteger("step");
            step && event->getString("cat") != "step")
          steps.insert(*step);
  if (steps.empty()) {
    error = (traceName + " has no step: run the model with the trace on "
                         "(locus-run --trace, LOCUS_TRACE)")
                .str();
    return mlir::failure();
  }
  int64_t from = steps.size() > 1 ? *std::next(steps.begin()) : *steps.begin();
  size_t counted = std::count_if(steps.begin(), steps.end(),
                                 [&](int64_t s) { return s >= from; });

  int depth = depthFor(report);
  std::map<std::string, Line> lines;
  std::set<std::string> known;
  std::vector<std::string> readerLine(report.rows.size());
  for (const Row &row : report.rows) {
    known.insert(row.layer);
    if (row.isCopy)
      continue;
    Line &line = lines[truncateLayer(row.layer, depth)];
    ++line.ops;
    line.estimatedNs += row.device == "cpu" ? row.cpuNs : row.cudaNs;
  }
  // Each per-step copy counts for the layer of its first reader.
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<int>>
      copiesByKey;
  for (const Row &row : report.rows) {
    if (row.isCopy) {
      if (row.loadTime)
        continue;
      StringRef label = row.label; // "copy cpu -> cuda:0"
      auto [fromDevice, toDevice] = label.drop_front(5).split(" -> ");
      copiesByKey[{fromDevice.str(), toDevice.str(), row.bytes}].push_back(
          row.id);
      continue;
    }
    for (int operand : row.operands)
      if (report.rows[operand].isCopy && readerLine[operand].empty())
        readerLine[operand] = truncateLayer(row.layer, depth);
  }
  for (const auto &[key, ids] : copiesByKey)
    for (int id : ids)
      lines[readerLine[id]].estimatedCopyNs += report.rows[id].copyNs;

  int kernels = 0, copies = 0, unmatched = 0;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    const llvm::json::Object *args = event ? event->getObject("args") : nullptr;
    std::optional<int64_t> step =
        args ? args->getInteger("step") : std::nullopt;
    std::optional<double> dur = event ? event->getNumber("dur") : std::nullopt;
    if (!step || *step < from || !dur)
      continue;
    double perStep = *dur / static_cast<double>(counted);
    StringRef cat = event->getString("cat").value_or("");
    if (cat == "kernel") {
      ++kernels;
      StringRef source = args->getString("source").value_or("");
      // The parts and their op counts.
      llvm::SmallVector<StringRef> parts;
      source.split(parts, "; ", -1, /*KeepEmpty=*/false);
      std::vector<std::pair<std::string, int>> shares;
      int total = 0;
      for (StringRef part : parts) {
        int n = 1;
        if (part.ends_with(")")) {
          size_t open = part.rfind(" (x");
          if (open != StringRef::npos &&
              !part.slice(open + 3, part.size() - 1).getAsInteger(10, n))
            part = part.take_front(open);
          else
            n = 1;
        }
        shares.emplace_back(truncateLayer(layerOfPart(part, known), depth), n);
        total += n;
      }
      if (shares.empty())
        shares.emplace_back("", total = 1);
      for (const auto &[layer, n] : shares)
        lines[layer].measuredUs += perStep * n / total;
    } else if (cat == "copy") {
      ++copies;
      auto key = std::make_tuple(args->getString("from").value_or("").str(),
                                 args->getString("to").value_or("").str(),
                                 args->getInteger("bytes").value_or(-1));
      auto it = copiesByKey.find(key);
      if (it == copiesByKey.end()) {
        ++unmatched;
        lines[""].measuredCopyUs += perStep;
        continue;
      }
      for (int id : it->second)
        lines[readerLine[id]].measuredCopyUs += perStep / it->second.size();
    }
  }

  std::vector<std::pair<std::string, Line>> sorted(lines.begin(), lines.end());
  llvm::sort(sorted, [](const auto &a, const auto &b) {
    double ta = a.second.measuredUs + a.second.measuredCopyUs;
    double tb = b.second.measuredUs + b.second.measuredCopyUs;
    return ta != tb ? ta > tb : a.first < b.first;
  });
  os << "measured (" << llvm::sys::path::filename(traceName) << ": " << kernels
     << " kernel and " << copies << " copy events over " << counted
     << (counted == 1 ? " step" : " steps")
     << (steps.size() > 1 ? ", after a first one left out" : "")
     << ") against estimated, per step and layer:\n";
  size_t width = 10;
  for (const auto &[name, line] : sorted)
    width = std::max(width, std::min<size_t>(name.size(), 48) + 2);
  os << llvm::formatv("{0}{1,6} {2,12} {3,12} {4,7}  {5,12} {6,12}\n",
                      llvm::left_justify("layer", width), "ops", "kernels est",
                      "measured", "x", "copies est", "measured");
  auto print = [&](StringRef name, const Line &line) {
    std::string ratio =
        line.estimatedNs > 0
            ? llvm::formatv("{0:F2}", line.measuredUs * 1000 /
                                          static_cast<double>(line.estimatedNs))
                  .str()
            : "-";
    os << llvm::formatv("{0}{1,6} {2,12} {3,12} {4,7}  {5,12} {6,12}\n",
                        llvm::left_justify(name, width), line.ops,
                        formatNanos(line.estimatedNs), us(line.measuredUs),
                        ratio, formatNanos(line.estimatedCopyNs),
                        us(line.measuredCopyUs));
  };
  Line all;
  for (const auto &[name, line] : sorted) {
    print(name.empty() ? "(no layer)" : StringRef(name).take_front(48), line);
    all.ops += line.ops;
    all.estimatedNs += line.estimatedNs;
    all.estimatedCopyNs += line.estimatedCopyNs;
    all.measuredUs += line.measuredUs;
    all.measuredCopyUs += line.measuredCopyUs;
  }
  print("total", all);
  if (unmatched)
    os << "note: " << unmatched
       << " traced copies match no per-step copy of this graph (another "
          "graph's trace?)\n";
  os << "kernel times are measured around each launch on the host: on a "
        "GPU, a launch, not its run, unless the launch waits\n";
  return mlir::success();
}
