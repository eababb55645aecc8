//===- Dot.cpp - Graphviz DOT, every op or layers collapsed ---------------===//
//
// locus-dump --format=dot: one node per op, each layer's ops in a cluster,
// copies as nodes of their own; or, with more ops than --max-nodes, one node
// per layer (cut to shallower paths, then merged in order, until they fit)
// with its device mix, and the copies as edges labelled with their bytes.
//
//===----------------------------------------------------------------------===//

#include "DumpImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <set>

using namespace locus::dump;
using namespace locus::dump::detail;

namespace {

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
