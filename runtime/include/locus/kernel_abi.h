/* kernel_abi.h - functions that generated kernels call, provided by the
 * runtime. Not for users: the code generators emit the calls, and the JIT
 * and the artifact loader bind them.
 */
#ifndef LOCUS_KERNEL_ABI_H
#define LOCUS_KERNEL_ABI_H

#include "locus/locus_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MLIR's unranked memref: the rank and a pointer to the ranked descriptor
 * {allocated, aligned, offset, sizes[rank], strides[rank]}. */
typedef struct locus_unranked_memref_s {
  int64_t rank;
  void *descriptor;
} locus_unranked_memref_t;

/* Copies src into dst, both of the same shape, any strides; what MLIR's
 * lowering of a non-contiguous memref.copy calls (as `memrefCopy`). */
LOCUS_API void locus_memref_copy(int64_t element_size,
                                 locus_unranked_memref_t *src,
                                 locus_unranked_memref_t *dst);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOCUS_KERNEL_ABI_H */
