//===- Diff.cpp - how two placements of a graph differ --------------------===//
//
// locus-dump --diff: the ops that moved between devices, the copies that
// appeared or went, and what the cost model says the change costs. The two
// reports come from two placements of one graph (policies, profiles,
// devices) or from two versions of it (artifacts before and after a code
// change); ops are matched by what they are and where they were written.
//
//===----------------------------------------------------------------------===//

#include "locus/Dump/Dump.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace locus::dump;

namespace {

/// What an op is: op, name and shape. Two ops with the same kind are
/// paired in order when their lines differ (a change above them moved
/// them).
std::string kindOf(const Row &row) {
  return row.opName + "\x1f" + row.label + "\x1f" + row.shape;
}

/// What identifies an op across two compiles: its kind and the user's
/// line (or ONNX node), by file name (not path: a graph written out twice
/// keeps its ops).
std::string keyOf(const Row &row) {
  const Source &s = row.source;
  return kindOf(row) + "\x1f" + llvm::sys::path::filename(s.file).str() + ":" +
         std::to_string(s.line) + ":" + std::to_string(s.column) + "\x1f" +
         llvm::sys::path::filename(s.callerFile).str() + ":" +
         std::to_string(s.callerLine) + "\x1f" + s.node;
}

/// A per-step or load-time copy: the value it carries (by its producer's
/// key), from and to which device, and its bytes.
struct Copy {
  std::string value; ///< the producer's key
  std::string label; ///< what the user calls it: `input "x"`, `mse_loss`
  std::string from, to;
  int64_t bytes = 0;
  bool loadTime = false;
  const Row *producer = nullptr;
};

using CopyKey = std::tuple<std::string, std::string, std::string, bool>;

/// The copies of `report`, each keyed by `valueOf` its producer.
template <typename ValueOf>
std::map<CopyKey, Copy> copiesOf(const Report &report, ValueOf valueOf) {
  std::map<CopyKey, Copy> copies;
  for (const Row &row : report.rows) {
    if (!row.isCopy || row.operands.empty())
      continue;
    const Row &producer = report.rows[row.operands.front()];
    Copy copy{valueOf(producer), producer.label, producer.device, row.device,
              row.bytes,         row.loadTime,   &producer};
    // The same value copied twice to one device would be one transfer too
    // many; it is listed once (insert-transfers never makes it).
    copies.emplace(CopyKey{copy.value, copy.from, copy.to, copy.loadTime},
                   copy);
  }
  return copies;
}

/// The two reports' ops matched: pairs of rows (a, b), and the rows of
/// each that have no partner.
struct Matching {
  std::vector<std::pair<const Row *, const Row *>> pairs;
  std::vector<const Row *> onlyA, onlyB;
  std::map<const Row *, const Row *> partnerInA; ///< by row of b

  /// The copies of each side, a value keyed by its row in a (or, for one
  /// only b has, its row there): a copy of the same value between the same
  /// devices is the same copy on both sides.
  std::map<CopyKey, Copy> copiesOfA(const Report &a) const {
    return copiesOf(
        a, [](const Row &row) { return "a" + std::to_string(row.id); });
  }
  std::map<CopyKey, Copy> copiesOfB(const Report &b) const {
    return copiesOf(b, [&](const Row &row) {
      auto it = partnerInA.find(&row);
      return it == partnerInA.end() ? "b" + std::to_string(row.id)
                                    : "a" + std::to_string(it->second->id);
    });
  }
};

/// Pairs each op of `a` not paired yet with the first op of `b` not
/// paired yet that has the same `key`, in order.
template <typename Key>
void pairBy(const Report &a, const Report &b, Key key,
            std::map<const Row *, const Row *> &pairs,
            std::set<const Row *> &taken) {
  std::map<std::string, std::vector<const Row *>> byKey;
  for (const Row &row : b.rows)
    if (!row.isCopy && !taken.count(&row))
      byKey[key(row)].push_back(&row);
  std::map<std::string, size_t> next;
  for (const Row &row : a.rows) {
    if (row.isCopy || pairs.count(&row))
      continue;
    std::string k = key(row);
    auto it = byKey.find(k);
    size_t &n = next[k];
    if (it == byKey.end() || n >= it->second.size())
      continue;
    pairs[&row] = it->second[n];
    taken.insert(it->second[n++]);
  }
}

Matching match(const Report &a, const Report &b) {
  std::map<const Row *, const Row *> pairs;
  std::set<const Row *> taken;
  // Same op at the same line first; then what is left, by kind in order.
  pairBy(a, b, keyOf, pairs, taken);
  pairBy(a, b, kindOf, pairs, taken);
  Matching m;
  for (const Row &row : a.rows) {
    if (row.isCopy)
      continue;
    auto it = pairs.find(&row);
    if (it == pairs.end())
      m.onlyA.push_back(&row);
    else
      m.pairs.emplace_back(&row, it->second);
  }
  for (const auto &[ra, rb] : m.pairs)
    m.partnerInA[rb] = ra;
  for (const Row &row : b.rows)
    if (!row.isCopy && !taken.count(&row))
      m.onlyB.push_back(&row);
  return m;
}

/// The per-step (or load-time) copies that `b` has and `a` has not.
std::vector<Copy> added(const std::map<CopyKey, Copy> &a,
                        const std::map<CopyKey, Copy> &b, bool loadTime) {
  std::vector<Copy> out;
  for (const auto &[key, copy] : b)
    if (copy.loadTime == loadTime && !a.count(key))
      out.push_back(copy);
  return out;
}

std::string signedNanos(int64_t ns) {
  return (ns < 0 ? "-" : "+") + formatNanos(ns < 0 ? -ns : ns);
}

std::string rowText(const Row &row) {
  return llvm::formatv("#{0} {1} {2}", row.id, row.label, row.shape).str();
}

/// Every device either side runs kernels on, in order.
std::set<std::string> devicesOf(const Report &a, const Report &b) {
  std::set<std::string> devices;
  for (const Report *r : {&a, &b})
    for (const auto &[device, ns] : r->stepNsPerDevice)
      devices.insert(device);
  return devices;
}

int64_t nsOn(const Report &r, const std::string &device) {
  auto it = r.stepNsPerDevice.find(device);
  return it == r.stepNsPerDevice.end() ? 0 : it->second;
}

} // namespace

namespace {

/// One layer whose ops moved: its path ("" for ops of no layer), how many
/// of its paired ops moved, of how many, and where to ("cuda:0 -> cpu", or
/// "mixed").
struct MovedLayer {
  std::string layer;
  int moved = 0, ops = 0;
  std::string direction;
};

/// The layers that moved, as a user names them: a layer all of whose ops
/// moved is listed once (not its sublayers); a layer only some of whose
/// ops moved is listed at its own path with the count.
std::vector<MovedLayer>
movedLayers(const std::vector<std::pair<const Row *, const Row *>> &pairs) {
  struct Tally {
    int moved = 0, ops = 0, ownMoved = 0, ownOps = 0, first = -1;
    std::set<std::string> directions, ownDirections;
  };
  std::map<std::string, Tally> tally;
  for (const auto &[ra, rb] : pairs) {
    if (ra->isCopy)
      continue;
    const std::string &layer = rb->layer.empty() ? ra->layer : rb->layer;
    std::vector<std::string> chain = layerChain(layer);
    Tally &own = tally[chain.back()];
    ++own.ownOps;
    if (ra->device != rb->device) {
      ++own.ownMoved;
      own.ownDirections.insert(ra->device + " -> " + rb->device);
    }
    for (const std::string &p : chain) {
      Tally &t = tally[p];
      if (t.first < 0)
        t.first = rb->id;
      ++t.ops;
      if (ra->device != rb->device) {
        ++t.moved;
        t.directions.insert(ra->device + " -> " + rb->device);
      }
    }
  }
  auto parentOf = [](const std::string &layer) -> std::string {
    size_t dot = layer.rfind('.');
    return isModulePath(layer) && dot != std::string::npos
               ? layer.substr(0, dot)
               : "";
  };
  auto fully = [&](const std::string &layer) {
    auto it = tally.find(layer);
    return !layer.empty() && it != tally.end() && it->second.ops &&
           it->second.moved == it->second.ops;
  };
  auto underFully = [&](const std::string &layer) {
    for (std::string p = parentOf(layer); !p.empty(); p = parentOf(p))
      if (fully(p))
        return true;
    return false;
  };
  std::vector<std::pair<int, MovedLayer>> out;
  for (const auto &[layer, t] : tally) {
    if (!t.moved || underFully(layer))
      continue;
    if (fully(layer))
      out.emplace_back(t.first, MovedLayer{layer, t.moved, t.ops,
                                           t.directions.size() == 1
                                               ? *t.directions.begin()
                                               : "mixed"});
    else if (t.ownMoved) // its own ops; moved sublayers list themselves
      out.emplace_back(t.first, MovedLayer{layer, t.ownMoved, t.ownOps,
                                           t.ownDirections.size() == 1
                                               ? *t.ownDirections.begin()
                                               : "mixed"});
  }
  // In graph order (of b).
  llvm::sort(out,
             [](const auto &x, const auto &y) { return x.first < y.first; });
  std::vector<MovedLayer> layers;
  layers.reserve(out.size());
  for (auto &entry : out)
    layers.push_back(std::move(entry.second));
  return layers;
}

} // namespace

void locus::dump::printDiff(const Report &a, llvm::StringRef aName,
                            const Report &b, llvm::StringRef bName,
                            llvm::raw_ostream &os) {
  Matching m = match(a, b);
  os << "placement diff of graph @" << a.graph;
  if (b.graph != a.graph)
    os << " and @" << b.graph;
  os << "\n";
  os << "  a: " << aName << " (policy " << a.policy << ", targets "
     << llvm::join(a.targets, ", ") << ")\n";
  os << "  b: " << bName << " (policy " << b.policy << ", targets "
     << llvm::join(b.targets, ", ") << ")\n";

  std::vector<std::pair<const Row *, const Row *>> moved;
  for (const auto &pair : m.pairs)
    if (pair.first->device != pair.second->device)
      moved.push_back(pair);
  std::vector<MovedLayer> layers = movedLayers(m.pairs);
  if (!layers.empty()) {
    os << "layers moved: " << layers.size() << "\n";
    size_t shown = 0;
    for (const MovedLayer &l : layers) {
      if (++shown > 40) {
        os << "  ... " << layers.size() - 40 << " more\n";
        break;
      }
      os << llvm::formatv("  {0,-32} {1} {2}  {3}\n",
                          l.layer.empty() ? "(no layer)" : l.layer,
                          l.moved == l.ops ? "all " + std::to_string(l.ops)
                                           : std::to_string(l.moved) + " of " +
                                                 std::to_string(l.ops),
                          l.ops == 1 ? "op " : "ops", l.direction);
    }
  }
  os << "ops moved: " << moved.size() << " of " << m.pairs.size() << "\n";
  for (const auto &[ra, rb] : moved)
    os << llvm::formatv("  #{0} -> #{1}  {2,-26} {3,-12} {4} -> {5}  {6}  "
                        "({7})\n",
                        ra->id, rb->id, ra->label, ra->shape, ra->device,
                        rb->device, formatSource(rb->source), rb->reasonText);
  auto only = [&](const char *side, const std::vector<const Row *> &rows) {
    if (rows.empty())
      return;
    os << "ops only in " << side << ": " << rows.size() << "\n";
    for (const Row *row : rows)
      os << "  " << rowText(*row) << " on " << row->device << "  "
         << formatSource(row->source) << "\n";
  };
  only("a", m.onlyA);
  only("b", m.onlyB);

  std::map<CopyKey, Copy> ca = m.copiesOfA(a), cb = m.copiesOfB(b);
  auto copies = [&](const char *what, int countA, int64_t bytesA, int countB,
                    int64_t bytesB, bool loadTime) {
    os << what << ": " << countA << " (" << formatBytes(bytesA) << ") -> "
       << countB << " (" << formatBytes(bytesB) << ")\n";
    for (const Copy &c : added(ca, cb, loadTime))
      os << "  + " << c.label << " (#" << c.producer->id << " in b) " << c.from
         << " -> " << c.to << ", " << formatBytes(c.bytes) << "\n";
    for (const Copy &c : added(cb, ca, loadTime))
      os << "  - " << c.label << " (#" << c.producer->id << " in a) " << c.from
         << " -> " << c.to << ", " << formatBytes(c.bytes) << "\n";
  };
  copies("copies per step", a.copiesPerStep, a.bytesPerStep, b.copiesPerStep,
         b.bytesPerStep, false);
  copies("copies at load", a.copiesAtLoad, a.bytesAtLoad, b.copiesAtLoad,
         b.bytesAtLoad, true);

  os << "estimated step time: " << formatNanos(a.stepNs()) << " -> "
     << formatNanos(b.stepNs()) << " (" << signedNanos(b.stepNs() - a.stepNs())
     << ")\n";
  for (const std::string &device : devicesOf(a, b))
    os << "  " << device << ": " << formatNanos(nsOn(a, device)) << " -> "
       << formatNanos(nsOn(b, device)) << "\n";
  os << "  copies: " << formatNanos(a.copyNsPerStep) << " -> "
     << formatNanos(b.copyNsPerStep) << "\n";
}

void locus::dump::printDiffJson(const Report &a, llvm::StringRef aName,
                                const Report &b, llvm::StringRef bName,
                                llvm::raw_ostream &os) {
  Matching m = match(a, b);
  auto side = [](const Report &r, llvm::StringRef name) {
    llvm::json::Object per;
    for (const auto &[device, ns] : r.stepNsPerDevice)
      per[device] = ns;
    return llvm::json::Object{{"name", name.str()},
                              {"policy", r.policy},
                              {"targets", llvm::json::Array(r.targets)},
                              {"copies_per_step", r.copiesPerStep},
                              {"bytes_per_step", r.bytesPerStep},
                              {"copies_at_load", r.copiesAtLoad},
                              {"bytes_at_load", r.bytesAtLoad},
                              {"step_ns", r.stepNs()},
                              {"copy_ns_per_step", r.copyNsPerStep},
                              {"kernel_ns_per_device", std::move(per)}};
  };
  auto source = [](const Row &row) { return formatSource(row.source); };
  llvm::json::Array moved, onlyA, onlyB, layers;
  for (const MovedLayer &l : movedLayers(m.pairs))
    layers.push_back(llvm::json::Object{{"layer", l.layer},
                                        {"moved", l.moved},
                                        {"ops", l.ops},
                                        {"direction", l.direction}});
  for (const auto &[ra, rb] : m.pairs)
    if (ra->device != rb->device)
      moved.push_back(llvm::json::Object{{"a", ra->id},
                                         {"b", rb->id},
                                         {"op", ra->opName},
                                         {"label", ra->label},
                                         {"shape", ra->shape},
                                         {"from", ra->device},
                                         {"to", rb->device},
                                         {"source", source(*rb)},
                                         {"reason", rb->reasonText}});
  for (const auto &[rows, out] :
       {std::make_pair(&m.onlyA, &onlyA), std::make_pair(&m.onlyB, &onlyB)})
    for (const Row *row : *rows)
      out->push_back(llvm::json::Object{{"id", row->id},
                                        {"op", row->opName},
                                        {"label", row->label},
                                        {"shape", row->shape},
                                        {"device", row->device},
                                        {"source", source(*row)}});
  std::map<CopyKey, Copy> ca = m.copiesOfA(a), cb = m.copiesOfB(b);
  auto copies = [](const std::vector<Copy> &list) {
    llvm::json::Array out;
    for (const Copy &c : list)
      out.push_back(llvm::json::Object{{"value", c.label},
                                       {"producer", c.producer->id},
                                       {"from", c.from},
                                       {"to", c.to},
                                       {"bytes", c.bytes},
                                       {"load_time", c.loadTime}});
    return out;
  };
  std::vector<Copy> plus = added(ca, cb, false), minus = added(cb, ca, false);
  for (const Copy &c : added(ca, cb, true))
    plus.push_back(c);
  for (const Copy &c : added(cb, ca, true))
    minus.push_back(c);
  llvm::json::Object root{{"schema", "locus-dump-diff/1"},
                          {"graph", a.graph},
                          {"graph_b", b.graph},
                          {"a", side(a, aName)},
                          {"b", side(b, bName)},
                          {"layers_moved", std::move(layers)},
                          {"moved", std::move(moved)},
                          {"only_in_a", std::move(onlyA)},
                          {"only_in_b", std::move(onlyB)},
                          {"copies_added", copies(plus)},
                          {"copies_removed", copies(minus)},
                          {"step_ns_change", b.stepNs() - a.stepNs()}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
