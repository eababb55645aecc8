// kernel_abi.cpp - support functions for generated kernels.

#include "guard.h"
#include "locus/abi.h"

#include <cstring>
#include <memory>

namespace {

struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; // sizes[rank], then strides[rank]
};

constexpr int64_t kStackRank = 32;

void memrefCopy(int64_t elementSize, locus_unranked_memref_t *src,
                locus_unranked_memref_t *dst) {
  const int64_t rank = src->rank;
  auto *s = static_cast<Descriptor *>(src->descriptor);
  auto *d = static_cast<Descriptor *>(dst->descriptor);
  char *from = s->aligned + s->offset * elementSize;
  char *to = d->aligned + d->offset * elementSize;
  if (rank == 0) {
    std::memcpy(to, from, elementSize);
    return;
  }
  const int64_t *sizes = s->sizesAndStrides;
  const int64_t *fromStrides = s->sizesAndStrides + rank;
  const int64_t *toStrides = d->sizesAndStrides + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  // Odometer over the index space; the innermost dimension moves fastest.
  // On the stack for any rank MLIR makes in practice: no allocation.
  int64_t small[kStackRank] = {};
  std::unique_ptr<int64_t[]> large;
  if (rank > kStackRank)
    large.reset(new int64_t[static_cast<size_t>(rank)]());
  int64_t *index = large ? large.get() : small;
  int64_t fromOffset = 0, toOffset = 0;
  while (true) {
    std::memcpy(to + toOffset * elementSize, from + fromOffset * elementSize,
                elementSize);
    int64_t dim = rank - 1;
    for (; dim >= 0; --dim) {
      ++index[dim];
      fromOffset += fromStrides[dim];
      toOffset += toStrides[dim];
      if (index[dim] < sizes[dim])
        break;
      fromOffset -= fromStrides[dim] * sizes[dim];
      toOffset -= toStrides[dim] * sizes[dim];
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
