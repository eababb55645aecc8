// ranges.h - sorted tables of address ranges: the allocations a device
// keeps (and checks every launch against), and the host memory the CUDA
// devices pinned.
#ifndef LOCUS_RUNTIME_RANGES_H
#define LOCUS_RUNTIME_RANGES_H

#include <algorithm>
#include <cstddef>
#include <vector>

namespace locus::rt {

/// The range of `ranges` that [at, at + bytes) lies in, or null: `ranges`
/// sorted by `begin`, never overlapping, each with `begin` and `end`
/// addresses (pointers or integers) of at's type.
template <typename Range, typename Address>
const Range *findRange(const std::vector<Range> &ranges, Address at,
                       size_t bytes) {
  // The last range starting at or before `at`.
  auto it = std::upper_bound(
      ranges.begin(), ranges.end(), at,
      [](const Address &v, const Range &r) { return v < r.begin; });
  if (it == ranges.begin())
    return nullptr;
  --it;
  return it->begin <= at && at + bytes <= it->end ? &*it : nullptr;
}

/// Whether [at, at + bytes) lies in one range of `ranges` (findRange).
template <typename Range, typename Address>
bool holdsRange(const std::vector<Range> &ranges, Address at, size_t bytes) {
  return findRange(ranges, at, bytes) != nullptr;
}

} // namespace locus::rt

#endif
