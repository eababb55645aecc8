//===- Measured.cpp - a trace's times beside the cost model's, by layer ---===//
//
// locus-dump --trace=trace.json: the kernels and copies of a run, as the
// runtime traced them (docs/runtime.md, "Traces"), summed per layer and put
// beside the estimates the placement used. A kernel's event lists its ops
// with their counts and layers, as the compiler wrote them (locus/abi.h)
// and the dump's rows name them; a fused kernel's time is shared among its
// ops' layers by op count. Copies carry no op, so
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
  std::vector<std::string> readerLine(report.rows.size());
  for (const Row &row : report.rows) {
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
      copiesByKey[{row.copyFrom, row.copyTo, row.bytes}].push_back(row.id);
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
      // The ops and their counts (the "ops" of docs/runtime.md's traces).
      std::vector<std::pair<std::string, int64_t>> shares;
      int64_t total = 0;
      if (const llvm::json::Array *ops = args->getArray("ops"))
        for (const llvm::json::Value &entry : *ops) {
          const llvm::json::Object *op = entry.getAsObject();
          int64_t n = op ? op->getInteger("count").value_or(0) : 0;
          if (n <= 0)
            continue;
          StringRef layer = op->getString("layer").value_or("");
          shares.emplace_back(truncateLayer(layer, depth), n);
          total += n;
        }
      if (shares.empty())
        shares.emplace_back("", total = 1);
      for (const auto &[layer, n] : shares)
        lines[layer].measuredUs +=
            perStep * static_cast<double>(n) / static_cast<double>(total);
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
