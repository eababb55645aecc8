//===- Layers.cpp - the table by layer ------------------------------------===//
//
// locus-dump --format=layers: one row per layer, indented by its path, with
// its ops per device, its estimated time and the per-step copies into and
// out of it; a layer whose rows would not fit under --max-nodes folds its
// sublayers into its own row.
//
//===----------------------------------------------------------------------===//

#include "locus/Dump/Dump.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <set>

using namespace locus::dump;
using llvm::StringRef;

namespace {

struct Group {
  int first = -1, depth = 0, ops = 0, copiesIn = 0, copiesOut = 0;
  std::map<std::string, int> perDevice;
  int64_t ns = 0, bytesIn = 0, bytesOut = 0;
};

} // namespace

void locus::dump::printLayers(const Report &report, llvm::raw_ostream &os,
                              int maxRows) {
  std::map<std::string, Group> groups;
  std::vector<std::vector<std::string>> chains(report.rows.size());
  for (const Row &row : report.rows) {
    if (row.isCopy)
      continue;
    chains[row.id] = layerChain(row.layer);
    if (row.layer.empty())
      chains[row.id].back() = "(no layer)";
    int depth = 0;
    for (const std::string &path : chains[row.id]) {
      Group &g = groups[path];
      if (g.first < 0)
        g.first = row.id;
      g.depth = depth++;
      ++g.ops;
      ++g.perDevice[row.device];
      g.ns += row.device == "cpu" ? row.cpuNs : row.cudaNs;
    }
  }
  // Per-step copies into and out of each layer, once per copy.
  for (const Row &row : report.rows) {
    if (!row.isCopy || row.loadTime)
      continue;
    const Row *from = &row;
    while (from->isCopy && !from->operands.empty())
      from = &report.rows[from->operands.front()];
    const std::vector<std::string> &fromChain = chains[from->id];
    std::set<std::string> into, outOf;
    for (const Row &reader : report.rows) {
      if (reader.isCopy ||
          std::find(reader.operands.begin(), reader.operands.end(), row.id) ==
              reader.operands.end())
        continue;
      for (const std::string &g : chains[reader.id])
        if (std::find(fromChain.begin(), fromChain.end(), g) == fromChain.end())
          into.insert(g);
      for (const std::string &g : fromChain)
        if (std::find(chains[reader.id].begin(), chains[reader.id].end(), g) ==
            chains[reader.id].end())
          outOf.insert(g);
    }
    for (const std::string &g : into) {
      ++groups[g].copiesIn;
      groups[g].bytesIn += row.bytes;
    }
    for (const std::string &g : outOf) {
      ++groups[g].copiesOut;
      groups[g].bytesOut += row.bytes;
    }
  }
  // The deepest level whose rows fit (0: every level).
  int deepest = 0;
  for (const auto &[path, g] : groups)
    deepest = std::max(deepest, g.depth);
  int depth = deepest;
  while (maxRows > 0 && depth > 0 &&
         std::count_if(groups.begin(), groups.end(), [&](const auto &entry) {
           return entry.second.depth <= depth;
         }) > maxRows)
    --depth;
  std::vector<std::pair<std::string, const Group *>> rows;
  for (const auto &[path, g] : groups)
    if (g.depth <= depth)
      rows.emplace_back(path, &g);
  // Graph order; a layer before its sublayers (which start no earlier).
  llvm::sort(rows, [](const auto &a, const auto &b) {
    if (a.second->first != b.second->first)
      return a.second->first < b.second->first;
    if (a.second->depth != b.second->depth)
      return a.second->depth < b.second->depth;
    return a.first < b.first;
  });
  size_t width = 12;
  for (const auto &[path, g] : rows) {
    StringRef shown = isModulePath(path) && g->depth
                          ? StringRef(path).rsplit('.').second
                          : StringRef(path);
    width = std::max(width, 2 * static_cast<size_t>(g->depth) + shown.size());
  }
  width = std::min<size_t>(width, 60) + 2;
  os << llvm::formatv("{0}{1,6}  {2,-24} {3,10}  {4}\n",
                      llvm::left_justify("layer", width), "ops", "devices",
                      "estimate", "copies per step");
  for (const auto &[path, g] : rows) {
    StringRef shown = isModulePath(path) && g->depth
                          ? StringRef(path).rsplit('.').second
                          : StringRef(path);
    std::string name = std::string(2 * g->depth, ' ') + shown.str();
    if (g->depth < deepest && depth == g->depth &&
        std::any_of(
            groups.begin(), groups.end(),
            [&](const auto &entry) {
              return entry.second.depth == g->depth + 1 &&
                     StringRef(entry.first).starts_with(path + ".");
            }))
      name += " (+)"; // its sublayers folded in
    std::string devices;
    for (const auto &[device, count] : g->perDevice)
      devices +=
          (devices.empty() ? "" : ", ") + device + " " + std::to_string(count);
    std::string copies;
    if (g->copiesIn)
      copies += "in " + std::to_string(g->copiesIn) + " (" +
                formatBytes(g->bytesIn) + ")";
    if (g->copiesOut)
      copies += std::string(copies.empty() ? "" : ", ") + "out " +
                std::to_string(g->copiesOut) + " (" + formatBytes(g->bytesOut) +
                ")";
    os << llvm::formatv("{0}{1,6}  {2,-24} {3,10}  {4}\n",
                        llvm::left_justify(name.substr(0, width - 1), width),
                        g->ops, devices, formatNanos(g->ns),
                        copies.empty() ? "-" : copies);
  }
}
