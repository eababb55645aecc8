//===- Permutations.h - transposes a product reads (private) ----*- C++ -*-===//
//
// What --locus-fuse-kernels and --locus-lower-to-linalg share: which
// transposes a matrix product reads transposed (sgemm's trans flags)
// instead of copying.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_PERMUTATIONS_H
#define LOCUS_PASSES_PERMUTATIONS_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace locus {

/// Whether `perm` swaps the last two axes and keeps the others: a
/// matrix's [1, 0], a batch of matrices' [0, 1, 3, 2].
inline bool swapsLastTwo(llvm::ArrayRef<int64_t> perm) {
  auto rank = static_cast<int64_t>(perm.size());
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

} // namespace locus

#endif // LOCUS_PASSES_PERMUTATIONS_H
