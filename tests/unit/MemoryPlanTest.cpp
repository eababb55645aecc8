// The memory planner: buffers live at the same time never overlap, and the
// arena is never larger than all buffers side by side.

#include "locus/Plan/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

using namespace locus;

namespace {

void expectValid(const std::vector<LiveRange> &ranges, const MemoryPlan &plan,
                 uint64_t alignment) {
  ASSERT_EQ(plan.offsets.size(), ranges.size());
  uint64_t total = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % alignment, 0u);
    EXPECT_LE(plan.offsets[i] + ranges[i].bytes, plan.arenaBytes);
    total += (ranges[i].bytes + alignment - 1) / alignment * alignment;
    for (size_t j = 0; j < i; ++j) {
      bool together = ranges[i].first <= ranges[j].last &&
                      ranges[j].first <= ranges[i].last;
      bool overlap = plan.offsets[i] < plan.offsets[j] + ranges[j].bytes &&
                     plan.offsets[j] < plan.offsets[i] + ranges[i].bytes;
      EXPECT_FALSE(together && overlap && ranges[i].bytes && ranges[j].bytes)
          << "buffers " << i << " and " << j << " are live together and "
          << "overlap";
    }
  }
  EXPECT_LE(plan.arenaBytes, total);
}

} // namespace

TEST(MemoryPlan, AChainReusesMemory) {
  // a -> b -> c -> d: each buffer dies when the next is made, so two slots
  // suffice.
  std::vector<LiveRange> chain{
      {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = planMemory(chain, 64);
  expectValid(chain, plan, 64);
  EXPECT_EQ(plan.arenaBytes, 2 * 1024u);
}

TEST(MemoryPlan, EverythingLiveNeedsEverything) {
  std::vector<LiveRange> all{{100, 0, 9}, {200, 0, 9}, {300, 0, 9}};
  MemoryPlan plan = planMemory(all, 64);
  expectValid(all, plan, 64);
  EXPECT_EQ(plan.arenaBytes, 128u + 256 + 320);
}

TEST(MemoryPlan, EmptyAndZeroSized) {
  EXPECT_EQ(planMemory({}, 64).arenaBytes, 0u);
  std::vector<LiveRange> zero{{0, 0, 3}, {64, 1, 2}};
  MemoryPlan plan = planMemory(zero, 64);
  expectValid(zero, plan, 64);
  EXPECT_EQ(plan.arenaBytes, 64u);
}

TEST(MemoryPlan, RandomLifetimesNeverCollide) {
  std::mt19937_64 rng(20261121);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<LiveRange> ranges(1 + rng() % 40);
    int64_t steps = 1 + static_cast<int64_t>(rng() % 30);
    for (LiveRange &r : ranges) {
      r.bytes = rng() % 5000;
      r.first = static_cast<int64_t>(rng() % steps);
      r.last = r.first + static_cast<int64_t>(rng() % (steps - r.first + 1));
    }
    MemoryPlan plan = planMemory(ranges, 64);
    expectValid(ranges, plan, 64);
    // Never below the most bytes live at one step.
    uint64_t peak = 0;
    for (int64_t s = 0; s <= steps; ++s) {
      uint64_t live = 0;
      for (const LiveRange &r : ranges)
        if (r.first <= s && s <= r.last)
          live += (r.bytes + 63) / 64 * 64;
      peak = std::max(peak, live);
    }
    EXPECT_GE(plan.arenaBytes, peak);
  }
}
