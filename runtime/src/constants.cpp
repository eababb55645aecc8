// constants.cpp - memory no step writes and copies derived from it
// (constants.h).

#include "constants.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace locus::rt {

namespace {
thread_local Constants *current = nullptr;
} // namespace

void Constants::setRanges(std::vector<std::pair<uintptr_t, size_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  ranges_ = std::move(ranges);
}

bool Constants::contains(const void *p, size_t bytes) const {
  auto begin = reinterpret_cast<uintptr_t>(p);
  // The last range that starts at or before p.
  auto it = std::upper_bound(
      ranges_.begin(), ranges_.end(), begin,
      [](uintptr_t value, const std::pair<uintptr_t, size_t> &range) {
        return value < range.first;
      });
  if (it == ranges_.begin())
    return false;
  --it;
  return begin - it->first <= it->second &&
         bytes <= it->second - (begin - it->first);
}

void *Constants::allocate(size_t bytes) {
  return std::aligned_alloc(64, std::max<size_t>((bytes + 63) / 64 * 64, 64));
}

void Constants::release(void *p) { std::free(p); }

bool Constants::remember(const Key &key, void *copy) {
  try {
    copies_.emplace(key, copy);
    return true;
  } catch (const std::bad_alloc &) {
    return false;
  }
}

void Constants::drop() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &[key, copy] : copies_)
    release(copy);
  copies_.clear();
}

void Constants::drop(const void *begin, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto from = reinterpret_cast<uintptr_t>(begin);
  for (auto it = copies_.begin(); it != copies_.end();) {
    auto source = reinterpret_cast<uintptr_t>(it->first.first);
    if (source >= from && source - from < bytes) {
      release(it->second);
      it = copies_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t Constants::copies() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return copies_.size();
}

Constants *stepConstants() { return current; }

StepConstants::StepConstants(Constants *constants) : saved_(current) {
  current = constants;
}

StepConstants::~StepConstants() { current = saved_; }

} // namespace locus::rt
