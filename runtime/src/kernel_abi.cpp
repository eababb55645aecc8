// kernel_abi.cpp - support functions for generated kernels.

#include "guard.h"
#include "locus/abi.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace {

struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; // sizes[rank], then strides[rank]
};

constexpr int64_t kStackRank = 32;

/// One dimension of a copy: its extent and each side's stride, in bytes.
struct CopyDim {
  int64_t size, from, to;
};

/// The copy's dimensions without unit ones, each merged into the next
/// inner one where both sides lay them out contiguously; false when the
/// copy is empty. `dims` has room for `rank`; innermost last.
bool copyDims(int64_t rank, const int64_t *sizes, const int64_t *fromStrides,
              const int64_t *toStrides, int64_t elementSize, CopyDim *dims,
              int64_t &count) {
  count = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 0)
      return false;
    if (sizes[i] == 1)
      continue;
    CopyDim dim{sizes[i], fromStrides[i] * elementSize,
                toStrides[i] * elementSize};
    if (count > 0) {
      CopyDim &outer = dims[count - 1];
      if (outer.from == dim.from * dim.size && outer.to == dim.to * dim.size) {
        outer = {outer.size * dim.size, dim.from, dim.to};
        continue;
      }
    }
    dims[count++] = dim;
  }
  return true;
}

/// Copies a strided view into another of the same sizes. Runs that both
/// sides hold contiguously go by memmove, the rest element by element (an
/// odometer over the outer indices). A slice of the last dimension of a
/// 128x8x768 tensor took 550 us element by element; in runs of 256, its
/// rows, it takes a memmove per row.
void memrefCopy(int64_t elementSize, locus_unranked_memref_t *src,
                locus_unranked_memref_t *dst) {
  const int64_t rank = src->rank;
  auto *s = static_cast<Descriptor *>(src->descriptor);
  auto *d = static_cast<Descriptor *>(dst->descriptor);
  char *from = s->aligned + s->offset * elementSize;
  char *to = d->aligned + d->offset * elementSize;
  // On the stack for any rank MLIR makes in practice: no allocation.
  std::array<CopyDim, kStackRank> smallDims;
  std::array<int64_t, kStackRank> smallIndex{};
  std::unique_ptr<CopyDim[]> largeDims;
  std::unique_ptr<int64_t[]> largeIndex;
  if (rank > kStackRank) {
    largeDims.reset(new CopyDim[static_cast<size_t>(rank)]);
    largeIndex.reset(new int64_t[static_cast<size_t>(rank)]());
  }
  CopyDim *dims = largeDims ? largeDims.get() : smallDims.data();
  int64_t *index = largeIndex ? largeIndex.get() : smallIndex.data();
  int64_t count = 0;
  if (!copyDims(rank, s->sizesAndStrides, s->sizesAndStrides + rank,
                d->sizesAndStrides + rank, elementSize, dims, count))
    return;
  // The innermost run: one memcpy when both sides are contiguous in it.
  int64_t run = elementSize;
  if (count > 0 && dims[count - 1].from == elementSize &&
      dims[count - 1].to == elementSize)
    run = dims[--count].size * elementSize;
  int64_t fromOffset = 0, toOffset = 0;
  while (true) {
    // memmove: a copy onto itself stays defined.
    std::memmove(to + toOffset, from + fromOffset, static_cast<size_t>(run));
    int64_t dim = count - 1;
    for (; dim >= 0; --dim) {
      const CopyDim &c = dims[dim];
      fromOffset += c.from;
      toOffset += c.to;
      if (++index[dim] < c.size)
        break;
      fromOffset -= c.from * c.size;
      toOffset -= c.to * c.size;
      index[dim] = 0;
    }
    if (dim < 0)
      return;
  }
}

} // namespace

/// Never throws: out of memory for the index of a rank above 32 leaves
/// `dst` unwritten (no kernel this compiler makes has such a rank).
extern "C" void locus_memref_copy(int64_t elementSize,
                                  locus_unranked_memref_t *src,
                                  locus_unranked_memref_t *dst) {
  locus::rt::guardVoid([&] { memrefCopy(elementSize, src, dst); });
}

namespace {

/// Blocks of at least this many bytes are kept for reuse when freed, by
/// every thread; smaller ones in the freeing thread's own cache.
constexpr size_t kCachedBytes = 64 << 10;
/// At most this many bytes wait in the cache; beyond, blocks are freed.
constexpr size_t kCacheLimit = size_t{1} << 30;
/// Each block starts with a header holding its size, so that free knows
/// the size class; it keeps the user part 64-byte aligned.
constexpr size_t kHeader = 64;

/// Freed blocks by size, for the next step's kernels to take again.
class BlockCache {
public:
  void *take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty())
      return nullptr;
    void *block = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return block;
  }
  /// False when the cache is full (the caller frees the block).
  bool keep(void *block, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + bytes > kCacheLimit)
      return false;
    try {
      free_[bytes].push_back(block);
    } catch (...) {
      return false;
    }
    cached_ += bytes;
    return true;
  }

private:
  std::mutex mutex_;
  std::map<size_t, std::vector<void *>> free_;
  size_t cached_ = 0;
};

BlockCache &blockCache() {
  static auto *cache = new BlockCache; // outlives kernels run at exit
  return *cache;
}

/// At most this many bytes of small blocks wait in one thread's cache.
constexpr size_t kSmallCacheLimit = 8 << 20;

/// Small blocks this thread freed, by size (multiples of 64 bytes), for its
/// next kernels: no lock, no search. malloc's aligned path (memalign, then
/// the consolidation of its bins) took about 7% of the step of a small
/// GPT-style model with dynamic sizes, whose kernels allocate some 40
/// temporaries a step. A block freed on another thread than the one that
/// took it joins that thread's cache; a thread's cache goes with it.
class SmallBlocks {
public:
  SmallBlocks() = default;
  SmallBlocks(const SmallBlocks &) = delete;
  SmallBlocks &operator=(const SmallBlocks &) = delete;
  ~SmallBlocks() {
    for (std::vector<void *> &blocks : free_)
      for (void *block : blocks)
        std::free(block);
  }
  void *take(size_t size) {
    std::vector<void *> &blocks = free_[size / 64];
    if (blocks.empty())
      return nullptr;
    void *block = blocks.back();
    blocks.pop_back();
    cached_ -= size;
    return block;
  }
  /// False when the cache is full (the caller frees the block).
  bool keep(void *block, size_t size) {
    if (cached_ + size > kSmallCacheLimit)
      return false;
    try {
      free_[size / 64].push_back(block);
    } catch (...) {
      return false;
    }
    cached_ += size;
    return true;
  }

private:
  std::array<std::vector<void *>, kCachedBytes / 64> free_;
  size_t cached_ = 0;
};

SmallBlocks &smallBlocks() {
  thread_local SmallBlocks blocks;
  return blocks;
}

size_t blockSize(size_t bytes) { return (bytes + 63) / 64 * 64 + kHeader; }

} // namespace

extern "C" void *locus_host_alloc(size_t bytes) {
  size_t size = blockSize(bytes);
  if (size < bytes)
    return nullptr; // overflow
  void *block =
      size >= kCachedBytes ? blockCache().take(size) : smallBlocks().take(size);
  if (!block)
    block = std::aligned_alloc(64, size);
  if (!block)
    return nullptr;
  std::memcpy(block, &size, sizeof size);
  return static_cast<char *>(block) + kHeader;
}

extern "C" void locus_host_free(void *p) {
  if (!p)
    return;
  char *block = static_cast<char *>(p) - kHeader;
  size_t size = 0;
  std::memcpy(&size, block, sizeof size);
  bool kept = size < kCachedBytes ? smallBlocks().keep(block, size)
                                  : blockCache().keep(block, size);
  if (!kept)
    std::free(block);
}
