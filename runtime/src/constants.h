// constants.h - memory no step writes, and what the runtime's library calls
// keep derived from it: weights in oneDNN's blocked layouts, made once
// instead of on every call.
//
// A model's constants are its persistent buffers (state, constants, their
// load-time copies) that no command of its step writes: in an inference
// model every weight; in a training step those the optimizer leaves alone.
// Only the user changes them between steps (locus_model_set_state and the
// state loads), always under the model's exclusive state lock, and each
// such write drops every derived copy. Steps run under the shared lock (or
// the exclusive one, for a training step), so no copy is dropped while a
// step may read it.
//
// The executor makes the model's constants the calling thread's for the
// length of a step (StepConstants); library calls made elsewhere (the
// runtime's worker threads, load-time commands, tests calling the kernel
// ABI directly) see none and transform their operands on every call.
#ifndef LOCUS_RUNTIME_CONSTANTS_H
#define LOCUS_RUNTIME_CONSTANTS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace locus::rt {

class Constants {
public:
  Constants() = default;
  Constants(const Constants &) = delete;
  Constants &operator=(const Constants &) = delete;
  ~Constants() { drop(); }

  /// The memory no step writes: [begin, begin + bytes) each. Set once, at
  /// load, before any step.
  void setRanges(std::vector<std::pair<uintptr_t, size_t>> ranges);

  /// Whether all of [p, p + bytes) is constant.
  bool contains(const void *p, size_t bytes) const;

  /// The copy of the constant memory at `source` that `how` (any address
  /// that names one transform for the process's life, such as a cached
  /// primitive) derives: `bytes` bytes, 64-byte aligned, which
  /// `derive(void *out)` fills on first use. Null when it fails or there
  /// is no memory (nothing kept; the caller transforms on its own).
  template <typename Derive>
  const void *derived(const void *source, const void *how, size_t bytes,
                      Derive &&derive) {
    std::lock_guard<std::mutex> lock(mutex_);
    Key key{source, how};
    if (auto it = copies_.find(key); it != copies_.end())
      return it->second;
    void *out = allocate(bytes);
    if (!out)
      return nullptr;
    if (!derive(out)) {
      release(out);
      return nullptr;
    }
    if (!remember(key, out)) {
      release(out);
      return nullptr;
    }
    return out;
  }

  /// Drops every derived copy: the user wrote state. The caller holds the
  /// model's exclusive state lock.
  void drop();
  /// Drops the copies derived from memory in [begin, begin + bytes): the
  /// user wrote that state (a learning rate leaves the weights' copies).
  /// The caller holds the model's exclusive state lock.
  void drop(const void *begin, size_t bytes);

  /// How many derived copies are kept (tests).
  size_t copies() const;

private:
  using Key = std::pair<const void *, const void *>;
  static void *allocate(size_t bytes);
  static void release(void *p);
  bool remember(const Key &key, void *copy);

  std::vector<std::pair<uintptr_t, size_t>> ranges_; // sorted by begin
  mutable std::mutex mutex_;
  std::map<Key, void *> copies_;
};

/// The constants of the step the calling thread runs; null outside one.
Constants *stepConstants();

/// Makes `constants` the calling thread's until it goes out of scope.
class StepConstants {
public:
  explicit StepConstants(Constants *constants);
  ~StepConstants();
  StepConstants(const StepConstants &) = delete;
  StepConstants &operator=(const StepConstants &) = delete;

private:
  Constants *saved_;
};

} // namespace locus::rt

#endif
