//===- MemoryPlan.h - liveness-based offsets in an arena --------*- C++ -*-===//
//
// Buffers that are never live at the same step may share memory. The planner
// gives each buffer an offset in one arena per device, greedily: the largest
// buffers first, each at the lowest aligned offset that overlaps no buffer
// live at the same time (the "greedy by size" planner of TFLite). No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PLAN_MEMORYPLAN_H
#define LOCUS_PLAN_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace locus {

/// A buffer of `bytes`, live from step `first` to step `last` inclusive.
struct LiveRange {
  uint64_t bytes;
  int64_t first, last;
};

struct MemoryPlan {
  std::vector<uint64_t> offsets; ///< One per range, multiples of alignment.
  uint64_t arenaBytes = 0;       ///< The end of the highest buffer.
};

MemoryPlan planMemory(const std::vector<LiveRange> &ranges, uint64_t alignment);

} // namespace locus

#endif // LOCUS_PLAN_MEMORYPLAN_H
