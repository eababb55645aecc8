//===- Explain.cpp - why ops run where they do (--explain) ----------------===//
//
// locus-dump --explain=QUERY: for a layer, what runs where and why, the
// copies at its edges and what it would cost moved whole to each target;
// for ops (a row, an op name, a name, a source line), why each runs where
// it does and what it would cost on the other side.
//
//===----------------------------------------------------------------------===//

#include "DumpImpl.h"

#include "llvm/ADT/STLExtras.h"

#include <map>
#include <set>

using namespace mlir;
using namespace locus;
using namespace locus::dump;
using namespace locus::dump::detail;

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
    if (!row->precision.empty())
      os << "  computes with " << row->precision << "\n";
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
