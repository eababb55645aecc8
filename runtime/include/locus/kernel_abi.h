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

/* C = op(A) * op(B) + beta * C for row-major f32 matrices, repeated over
 * `batch` matrices `stride_*` elements apart. op(X) is X, or X transposed
 * when trans_X is nonzero. Pointers are passed as integers (what generated
 * code has). Uses cblas_sgemm from OpenBLAS, found with dlopen, and a
 * blocked loop where there is none. */
LOCUS_API void locus_sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                           uintptr_t a, int64_t lda, int64_t stride_a,
                           int32_t trans_a, uintptr_t b, int64_t ldb,
                           int64_t stride_b, int32_t trans_b, float beta,
                           uintptr_t c, int64_t ldc, int64_t stride_c);

/* Runs body(args, lo, hi) over [0, n) split into ranges, on the calling
 * thread and the runtime's worker threads (all cores; LOCUS_THREADS=k in the
 * environment uses k threads in all, 1 runs everything on the caller).
 * Returns when every range is done. What a kernel's outermost parallel loop
 * becomes. A call made while another is running (from another thread, or
 * from inside a body) runs on the calling thread alone. */
typedef void (*locus_parallel_body_t)(void *args, int64_t lo, int64_t hi);
LOCUS_API void locus_parallel_for(locus_parallel_body_t body, void *args,
                                  int64_t n);
/* How many threads locus_parallel_for uses. */
LOCUS_API int locus_parallel_threads(void);

/* What the launcher of a kernel on a CUDA device calls; each acts on the
 * device whose launch is in progress on the calling thread. A failure is
 * kept and returned by that launch (later calls of the launch do nothing).
 *
 * Launches kernel number `kernel` of the artifact's PTX section on the
 * device's compute stream; `args` is the address of `count` 8-byte slots,
 * one per kernel parameter. */
LOCUS_API void locus_cuda_launch(int64_t kernel, int64_t grid_x, int64_t grid_y,
                                 int64_t grid_z, int64_t block_x,
                                 int64_t block_y, int64_t block_z,
                                 int64_t shared_bytes, int64_t args,
                                 int64_t count);
/* locus_sgemm's contract on device pointers, through cuBLAS. */
LOCUS_API void locus_cuda_sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                                uintptr_t a, int64_t lda, int64_t stride_a,
                                int32_t trans_a, uintptr_t b, int64_t ldb,
                                int64_t stride_b, int32_t trans_b, float beta,
                                uintptr_t c, int64_t ldc, int64_t stride_c);
/* Device memory for a kernel's temporaries, stream-ordered; NULL (and the
 * launch fails with OUT_OF_MEMORY) when there is none. */
LOCUS_API void *locus_cuda_alloc(size_t bytes);
LOCUS_API void locus_cuda_free(void *p);

/* The function generated code calls by `name` (an import name such as
 * "locus_sgemm" or "memrefCopy"), NULL for an unknown one: what the
 * artifact loader fills import slots with and the JIT binds. */
LOCUS_API void *locus_kernel_abi_function(const char *name);

/* Which implementation locus_sgemm uses: "openblas (<path>)" or
 * "built-in blocked loop (<why no BLAS>)". LOCUS_BLAS=builtin in the
 * environment forces the loop. */
LOCUS_API const char *locus_blas_name(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOCUS_KERNEL_ABI_H */
