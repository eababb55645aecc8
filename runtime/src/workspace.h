// workspace.h - per-thread scratch memory of the runtime's library calls
// (oneDNN's scratchpads, blocked copies, im2col columns).
#ifndef LOCUS_RUNTIME_WORKSPACE_H
#define LOCUS_RUNTIME_WORKSPACE_H

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>

namespace locus::rt {

/// Scratch memory of the calling thread: grows, never shrinks, 64-byte
/// aligned. Null when it cannot grow (the caller then needs none).
class Workspace {
public:
  char *get(size_t bytes) {
    if (bytes <= size_)
      return data_.get();
    size_t want = std::max(bytes, size_ + size_ / 2);
    void *p = std::aligned_alloc(64, (want + 63) / 64 * 64);
    if (!p)
      return nullptr;
    data_.reset(static_cast<char *>(p));
    size_ = want;
    return data_.get();
  }

private:
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

} // namespace locus::rt

#endif
