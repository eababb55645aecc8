//===- MemoryPlan.cpp - liveness-based offsets in an arena ----------------===//

#include "locus/Plan/MemoryPlan.h"

#include <algorithm>
#include <numeric>

using namespace locus;

MemoryPlan locus::planMemory(const std::vector<LiveRange> &ranges,
                             uint64_t alignment) {
  auto align = [&](uint64_t v) {
    return (v + alignment - 1) / alignment * alignment;
  };
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (ranges[a].bytes != ranges[b].bytes)
      return ranges[a].bytes > ranges[b].bytes;
    if (ranges[a].first != ranges[b].first)
      return ranges[a].first < ranges[b].first;
    return a < b;
  });

  MemoryPlan plan;
  plan.offsets.assign(ranges.size(), 0);
  struct Placed {
    uint64_t begin, end;
  };
  std::vector<size_t> placed;
  std::vector<Placed> conflicts;
  for (size_t i : order) {
    const LiveRange &r = ranges[i];
    conflicts.clear();
    for (size_t j : placed)
      if (ranges[j].first <= r.last && r.first <= ranges[j].last)
        conflicts.push_back(
            {plan.offsets[j], plan.offsets[j] + align(ranges[j].bytes)});
    std::sort(
        conflicts.begin(), conflicts.end(),
        [](const Placed &a, const Placed &b) { return a.begin < b.begin; });
    // The lowest gap that holds the buffer.
    uint64_t offset = 0, size = align(r.bytes);
    for (const Placed &c : conflicts) {
      if (c.begin >= offset + size)
        break;
      offset = std::max(offset, c.end);
    }
    plan.offsets[i] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(i);
  }
  return plan;
}
