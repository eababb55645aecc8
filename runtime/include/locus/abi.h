/* abi.h - everything the compiler and the runtime must agree on.
 *
 * One header, shared by the code generators, the artifact writer and the
 * runtime: the symbols generated host code defines and the runtime looks up,
 * the runtime functions generated code calls (its imports), the layout of the
 * plan and PTX sections, and the kernel ABI functions themselves. No other
 * file spells these names; docs/artifact.md describes the layout in prose.
 *
 * Not for users: the code generators emit the calls, the JIT and the
 * artifact loader bind them.
 */
#ifndef LOCUS_ABI_H
#define LOCUS_ABI_H

#include "locus/locus_runtime.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Symbols of generated host code ------------------------------------ */

/* Entry point of kernel function <f>: void __locus_kernel_<f>(void *const *),
 * one pointer per buffer the plan passes. */
#define LOCUS_ABI_KERNEL_PREFIX "__locus_kernel_"
/* Signature of kernel <f>: const uint64_t __locus_signature_<f>[1 + n],
 * the number n of buffers its entry point takes, then each one's size in
 * bytes (reads, then results). The runtime checks every launch of the plan
 * against it at load, so a plan cannot hand a kernel a smaller buffer than
 * the code reads or writes. */
#define LOCUS_ABI_SIGNATURE_PREFIX "__locus_signature_"
/* Where kernel <f> comes from (optional): const char __locus_source_<f>[],
 * NUL-terminated: one record per kind of user op in it, in the order the
 * ops appear, each ended by '\n', of five fields separated by '\t':
 *   count   how many such ops (decimal, at least 1)
 *   op      the op ("locus.linear")
 *   at      the user's line ("/src/model.cpp:14", "m.onnx: node 'fc' (Gemm)")
 *           or empty
 *   layer   the layer it belongs to ("layer1.0.conv1", for an unnamed C++
 *           layer the line that called it, "model.cpp:24") or empty
 *   kind    how the layer was found: "named" (a named C++ layer), "onnx"
 *           (the node's scope), "caller" (an unnamed layer) or empty
 * e.g. "2\tlocus.relu\t/src/m.cpp:15\tblock.0\tnamed\n". No field holds a
 * tab, a newline or a NUL. A line of another form is shown as it is: "...\n"
 * ends a list cut to LOCUS_ABI_MAX_SOURCE_BYTES. Traces and profiles show
 * it; nothing runs differently without it. */
#define LOCUS_ABI_SOURCE_PREFIX "__locus_source_"
#define LOCUS_ABI_SOURCE_FIELDS 5
/* The longest source string the runtime reads. */
#define LOCUS_ABI_MAX_SOURCE_BYTES 4096u
/* The most buffers a kernel takes. */
#define LOCUS_ABI_MAX_KERNEL_ARGS 65536u
/* Entry point of the launcher of kernel <f> placed on a CUDA device (the same
 * signature; it launches the PTX kernels through locus_cuda_launch). */
#define LOCUS_ABI_CUDA_PREFIX "__locus_cuda_"
/* The MLIR function of a CUDA kernel's launcher is <f> with this suffix. */
#define LOCUS_ABI_CUDA_FUNCTION_SUFFIX "__cuda"
/* Pointer slot of import <name> in an ahead-of-time object: the runtime
 * stores the function there at load, so the object needs only libc/libm. */
#define LOCUS_ABI_IMPORT_PREFIX "__locus_import_"
/* The host code's shared-object name (DT_SONAME), and the only one the
 * runtime loads: the system loader hands an object to any later
 * dlopen() of its soname, so host code named like a library (libcudnn.so.9,
 * libcuda.so.1) would stand in for it. */
#define LOCUS_ABI_HOST_SONAME "locus-host-code"
/* const char * globals of an ahead-of-time object: the LLVM CPU name it was
 * compiled for and the comma-separated CPU features it needs. */
#define LOCUS_ABI_CPU_SYMBOL "__locus_cpu"
#define LOCUS_ABI_CPU_FEATURES_SYMBOL "__locus_cpu_features"

/* ---- Index checks -------------------------------------------------------
 * An output named LOCUS_ABI_CHECK_PREFIX "<k>:<op> at <line>|<what>" is a
 * scalar f32 count of out-of-range indices (--locus-check-indices): the
 * runtime hides it from the model's outputs, reads it after the launch
 * that writes it, and stops the run with "<op> at <line>: <what> (<count>
 * found)" when it is not zero. */
#define LOCUS_ABI_CHECK_PREFIX "__locus_check:"

/* ---- Device names ---------------------------------------------------------
 */

/* Devices are named "cpu" and "cuda:N": the dialect's #locus.device, the
 * frontend, the placement options, the plan and the runtime's device maps
 * all accept exactly these. */
#define LOCUS_ABI_MAX_CUDA_ORDINAL 65535

/* N of "cuda:N" (`length` bytes, N in decimal digits only, 0 to
 * LOCUS_ABI_MAX_CUDA_ORDINAL); -1 for anything else. */
static inline int32_t locus_abi_cuda_ordinal(const char *text, size_t length) {
  static const char prefix[] = "cuda:";
  int32_t n = 0;
  size_t i;
  if (!text || length <= 5 || length > 10)
    return -1;
  for (i = 0; i < 5; ++i)
    if (text[i] != prefix[i])
      return -1;
  for (i = 5; i < length; ++i) {
    if (text[i] < '0' || text[i] > '9')
      return -1;
    n = n * 10 + (text[i] - '0');
    if (n > LOCUS_ABI_MAX_CUDA_ORDINAL)
      return -1;
  }
  return n;
}

/* ---- Imports: runtime functions generated code calls ------------------- */

#define LOCUS_ABI_SGEMM "locus_sgemm"
#define LOCUS_ABI_GEMM_16 "locus_gemm_16"
#define LOCUS_ABI_CONV2D "locus_conv2d"
#define LOCUS_ABI_CONV2D_GRAD "locus_conv2d_grad"
#define LOCUS_ABI_HOST_ALLOC "locus_host_alloc"
#define LOCUS_ABI_HOST_FREE "locus_host_free"
/* What MLIR's lowering of a non-contiguous memref.copy calls. */
#define LOCUS_ABI_MEMREF_COPY "memrefCopy"
#define LOCUS_ABI_PARALLEL_FOR "locus_parallel_for"
#define LOCUS_ABI_CUDA_LAUNCH "locus_cuda_launch"
#define LOCUS_ABI_CUDA_SGEMM "locus_cuda_sgemm"
#define LOCUS_ABI_CUDA_SGEMM_TF32 "locus_cuda_sgemm_tf32"
/* bf16 or f16 operands into an f32 result (cublasGemmEx): locus_gemm_16's
 * arguments. */
#define LOCUS_ABI_CUDA_GEMM_16 "locus_cuda_gemm_16"
#define LOCUS_ABI_CUDA_ALLOC "locus_cuda_alloc"
#define LOCUS_ABI_CUDA_FREE "locus_cuda_free"
#define LOCUS_ABI_CUDA_CONV2D "locus_cuda_conv2d"
#define LOCUS_ABI_CUDA_DNN_READY "locus_cuda_dnn_ready"

/* Every artifact has an import slot for each host import; one with kernels
 * on a CUDA device also for each CUDA import. */
#define LOCUS_ABI_HOST_IMPORTS                                                 \
  LOCUS_ABI_SGEMM, LOCUS_ABI_MEMREF_COPY, LOCUS_ABI_PARALLEL_FOR,              \
      LOCUS_ABI_CONV2D, LOCUS_ABI_CONV2D_GRAD, LOCUS_ABI_HOST_ALLOC,           \
      LOCUS_ABI_HOST_FREE, LOCUS_ABI_GEMM_16
#define LOCUS_ABI_CUDA_IMPORTS                                                 \
  LOCUS_ABI_CUDA_LAUNCH, LOCUS_ABI_CUDA_SGEMM, LOCUS_ABI_CUDA_ALLOC,           \
      LOCUS_ABI_CUDA_FREE, LOCUS_ABI_CUDA_CONV2D, LOCUS_ABI_CUDA_DNN_READY,    \
      LOCUS_ABI_CUDA_SGEMM_TF32, LOCUS_ABI_CUDA_GEMM_16

/* ---- The plan section --------------------------------------------------- *
 * The compiler writes a plan, the runtime reads it; docs/artifact.md has the
 * layout. Every integer is little-endian; a string is a u32 length and its
 * bytes. The runtime checks every field before it uses it. */

#define LOCUS_PLAN_MAGIC 0x4E4C504Cu /* "LPLN" */
/* 2: launches and per-step copies may write state (training steps).
 * 3: all-reduce commands (data-parallel training).
 * 4: host convolutions may pass NHWC tensors (LOCUS_CONV_*_NHWC), which an
 *    older runtime would read as NCHW.
 * 5: dynamic sizes: after the events, the sizes (name, bound) and the dims
 *    of each buffer with a dynamic dimension.
 * 6: load-time launches: a kernel that reads only constants, state no step
 *    writes and persistent buffers runs among the load commands, into
 *    persistent buffers, and again when state it reads is written.
 * 7: CUDA convolutions may take 16-bit operands (LOCUS_CONV_BF16, _F16),
 *    which an older runtime would read as f32.
 * 8: 16-bit products may write a 16-bit C (LOCUS_GEMM_C_16BIT), which an
 *    older runtime would write as f32.
 * 9: host convolutions and their gradients may take 16-bit operands
 *    (LOCUS_CONV_BF16, _F16) and write a 16-bit y (LOCUS_CONV_Y_16BIT),
 *    which an older runtime would read and write as f32. */
#define LOCUS_PLAN_VERSION 9u
/* The input that holds a run's dynamic sizes (i64, one per size, in the
 * plan's order): the runtime fills it from the inputs' shapes. */
#define LOCUS_PLAN_SIZES_INPUT "locus.sizes"
/* The most dynamic sizes a plan may have, and the highest power of one in
 * a dimension. */
#define LOCUS_PLAN_MAX_SIZES 8u
#define LOCUS_PLAN_MAX_POWER 4u
/* Offsets in an arena are multiples of this. */
#define LOCUS_PLAN_ALIGNMENT 64u

/* Where a buffer's memory comes from. */
enum locus_plan_buffer_kind_e {
  LOCUS_PLAN_ACTIVATION = 0, /* an offset in its device's arena, per run */
  LOCUS_PLAN_INPUT = 1,      /* the same, written by the caller before a run */
  LOCUS_PLAN_STATE = 2,      /* persistent, made by its initialiser at load;
                                a training step's launches and copies write it */
  LOCUS_PLAN_CONSTANT = 3,   /* persistent, its bytes are in the plan */
  LOCUS_PLAN_PERSISTENT = 4, /* persistent, written by a load-time copy */
};

/* A command is u8 op and two u32 fields whose meaning depends on op; a
 * launch and an all-reduce then have a u32 count and that many u32 buffer
 * numbers:
 *   LAUNCH      kernel number, result count; buffers: reads, then results
 *   COPY        source buffer, destination buffer
 *   RECORD      device number, event number
 *   WAIT        device number, event number
 *   ALL_REDUCE  device number, reduction (locus_plan_reduction_e); buffers:
 *               n f32 operands, then their n results, all on the device */
enum locus_plan_command_e {
  LOCUS_PLAN_LAUNCH = 0,     /* kernel, then its buffers: reads, then writes */
  LOCUS_PLAN_COPY = 1,       /* source buffer to destination buffer */
  LOCUS_PLAN_RECORD = 2,     /* device records event */
  LOCUS_PLAN_WAIT = 3,       /* device waits for event */
  LOCUS_PLAN_ALL_REDUCE = 4, /* operands reduced over the job's ranks */
};

/* How an all-reduce combines the ranks' values. */
enum locus_plan_reduction_e {
  LOCUS_PLAN_REDUCE_SUM = 0,
  LOCUS_PLAN_REDUCE_MEAN = 1, /* the sum divided by the world size */
};

enum locus_plan_dtype_e {
  LOCUS_PLAN_F32 = 0,
  LOCUS_PLAN_I64 = 1,
  LOCUS_PLAN_I1 = 2, /* one byte per element */
  LOCUS_PLAN_I32 = 3,
  LOCUS_PLAN_BF16 = 4, /* bfloat16: the high half of an f32 */
  LOCUS_PLAN_F16 = 5,  /* IEEE binary16 */
};

/* ---- The PTX section ----------------------------------------------------- *
 * u32 magic, u32 version, u32 count, then for each kernel (by the number the
 * launchers pass to locus_cuda_launch) its entry name and its PTX module as
 * strings. The PTX ends in a NUL byte, as cuModuleLoadData wants it. */
#define LOCUS_PTX_MAGIC 0x5854504Cu /* "LPTX" */
#define LOCUS_PTX_VERSION 1u

/* ---- The kernel ABI: functions generated kernels call ------------------ */

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

/* locus_sgemm's product of 16-bit A and B (`dtype`: LOCUS_PLAN_BF16 or
 * LOCUS_PLAN_F16) into f32 C, accumulated in f32: oneDNN's bf16 or f16
 * matmul where it loads and, measured once per process on a probe product,
 * runs faster than f32 on this CPU; otherwise A and B widened to f32
 * (exactly) and locus_sgemm. */
/* Added to locus_gemm_16's and locus_cuda_gemm_16's `dtype`: C holds the
 * operands' 16-bit type too, each f32 sum rounded once to nearest even
 * (a nonzero beta reads C widened). */
#define LOCUS_GEMM_C_16BIT 256
LOCUS_API void locus_gemm_16(int32_t dtype, int64_t batch, int64_t m, int64_t n,
                             int64_t k, uintptr_t a, int64_t lda,
                             int64_t stride_a, int32_t trans_a, uintptr_t b,
                             int64_t ldb, int64_t stride_b, int32_t trans_b,
                             float beta, uintptr_t c, int64_t ldc,
                             int64_t stride_c);

/* Memory for a host kernel's temporaries (what MLIR's generic allocation
 * functions become in host code): 64-byte aligned, NULL when there is none.
 * Blocks of 64 KiB and more are kept when freed and handed out again for
 * the same size, so that a step's temporaries reuse the previous step's
 * memory instead of mapping fresh pages (up to 1 GiB waits for reuse). */
LOCUS_API void *locus_host_alloc(size_t bytes);
LOCUS_API void locus_host_free(void *p);

/* The parameters of locus_conv2d, in this order in its int64 array. */
enum locus_conv_param_e {
  LOCUS_CONV_N, /* images */
  LOCUS_CONV_C, /* input channels */
  LOCUS_CONV_H, /* input height and width */
  LOCUS_CONV_W,
  LOCUS_CONV_O,  /* output channels */
  LOCUS_CONV_KH, /* kernel height and width */
  LOCUS_CONV_KW,
  LOCUS_CONV_OH, /* output height and width */
  LOCUS_CONV_OW,
  LOCUS_CONV_STRIDE_H,
  LOCUS_CONV_STRIDE_W,
  LOCUS_CONV_PAD_H, /* zeros on each side (top and bottom alike) */
  LOCUS_CONV_PAD_W,
  LOCUS_CONV_DILATION_H, /* 1: no dilation */
  LOCUS_CONV_DILATION_W,
  LOCUS_CONV_GROUPS,
  LOCUS_CONV_FLAGS, /* LOCUS_CONV_BIAS | _RESIDUAL | _RELU | _*_POOL */
  /* The pooling that follows, when a _POOL flag is set (0 otherwise):
   * window, strides, padding (on each side) and its output's height and
   * width. */
  LOCUS_CONV_POOL_KH,
  LOCUS_CONV_POOL_KW,
  LOCUS_CONV_POOL_STRIDE_H,
  LOCUS_CONV_POOL_STRIDE_W,
  LOCUS_CONV_POOL_PAD_H,
  LOCUS_CONV_POOL_PAD_W,
  LOCUS_CONV_POOL_OH,
  LOCUS_CONV_POOL_OW,
  LOCUS_CONV_PARAM_COUNT
};
enum locus_conv_flag_e {
  LOCUS_CONV_BIAS = 1,      /* add bias[o] */
  LOCUS_CONV_RESIDUAL = 2,  /* then add residual (shaped like y) */
  LOCUS_CONV_RELU = 4,      /* then max(0, .) */
  LOCUS_CONV_MAX_POOL = 8,  /* then max pooling (padding never wins) */
  LOCUS_CONV_AVG_POOL = 16, /* or average pooling (padding counts as 0) */
  LOCUS_CONV_TF32 = 32,     /* locus_cuda_conv2d may round to TF32 */
  /* locus_conv2d only: a tensor laid out [N, H, W, C] in memory (NHWC)
   * rather than NCHW, as the compiler keeps a value that convolutions
   * alone produce and read (--locus-conv-layouts). */
  LOCUS_CONV_X_NHWC = 64,
  LOCUS_CONV_RESIDUAL_NHWC = 128,
  LOCUS_CONV_Y_NHWC = 256, /* the pooled output when a _POOL flag is set */
  /* locus_cuda_conv2d: a, b and y hold bf16 (or f16) elements, and cuDNN
   * accumulates in f32 on tensor cores (no bias with these).
   * locus_conv2d: x and w hold bf16 (or f16) elements; the sums, bias,
   * residual, ReLU and pooling are f32, and y is f32 unless
   * LOCUS_CONV_Y_16BIT. locus_conv2d_grad: a and b hold them, the sums
   * are f32, and y is f32 unless LOCUS_CONV_Y_16BIT. */
  LOCUS_CONV_BF16 = 512,
  LOCUS_CONV_F16 = 1024,
  /* locus_conv2d and locus_conv2d_grad, with LOCUS_CONV_BF16 or _F16: y
   * holds that type, the f32 result (epilogue and pooling included)
   * rounded once to nearest even. */
  LOCUS_CONV_Y_16BIT = 2048
};

/* What locus_conv2d_grad and locus_cuda_conv2d compute, with the operands
 * they take (a, b). */
enum locus_conv_kind_e {
  LOCUS_CONV_FORWARD = 0,    /* y = conv2d(a = x, b = w) + bias */
  LOCUS_CONV_INPUT_GRAD = 1, /* y = dx from a = dy, b = w */
  LOCUS_CONV_WEIGHT_GRAD = 2 /* y = dw from a = x, b = dy */
};

/* y = pool(relu(conv2d(x, w) + bias + residual)), each part as the flags
 * say, for NCHW x and y and [O, C / groups, KH, KW] w, all contiguous f32
 * unless LOCUS_CONV_BF16, _F16 and _Y_16BIT say otherwise;
 * residual (shaped like the convolution's output) may be x, and y has the
 * pooling's output shape when a _POOL flag is set. A pointer a flag leaves
 * out is not read. `params` points to
 * LOCUS_CONV_PARAM_COUNT int64 values; pointers are passed as integers, as
 * locus_sgemm's are. Through oneDNN (found with dlopen) where it can be
 * loaded, im2col and locus_sgemm otherwise; LOCUS_CONV=builtin in the
 * environment forces the latter. */
LOCUS_API void locus_conv2d(uintptr_t params, uintptr_t x, uintptr_t w,
                            uintptr_t bias, uintptr_t residual, uintptr_t y);

/* A convolution's gradient for generated host code: `kind` is
 * LOCUS_CONV_INPUT_GRAD (y = dx [N, C, H, W] from a = dy [N, O, OH, OW] and
 * b = w) or LOCUS_CONV_WEIGHT_GRAD (y = dw [O, C / groups, KH, KW] from
 * a = x and b = dy); `params` points to LOCUS_CONV_PARAM_COUNT int64 values,
 * the forward convolution's shapes (of the flags only LOCUS_CONV_BF16,
 * _F16 and _Y_16BIT are read). y is overwritten. All contiguous f32 unless
 * those flags say otherwise, pointers passed as integers. Through
 * oneDNN's backward primitives where it loads, im2col (col2im) and
 * locus_sgemm otherwise, as locus_conv2d chooses. */
LOCUS_API void locus_conv2d_grad(int64_t kind, uintptr_t params, uintptr_t a,
                                 uintptr_t b, uintptr_t y);

/* Runs body(args, lo, hi) over [0, n) split into ranges, on the calling
 * thread and the runtime's worker threads (all cores; LOCUS_THREADS=k in the
 * environment uses k threads in all, 1 runs everything on the caller); once
 * oneDNN or OpenBLAS's OpenMP build has brought libgomp into the process,
 * on libgomp's team instead, the same threads as theirs.
 * Returns when every range is done. What a kernel's outermost parallel loop
 * becomes. A call made while another is running (from another thread, or
 * from inside a body) runs on the calling thread alone. */
typedef void (*locus_parallel_body_t)(void *args, int64_t lo, int64_t hi);
LOCUS_API void locus_parallel_for(locus_parallel_body_t body, void *args,
                                  int64_t n);
/* How many threads locus_parallel_for uses. */
LOCUS_API int locus_parallel_threads(void);
/* Whose threads locus_parallel_for runs on now: "libgomp's OpenMP team
 * (shared with the libraries above)" or "the runtime's own workers". */
LOCUS_API const char *locus_parallel_name(void);

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
/* locus_cuda_sgemm, allowed to round its operands to TF32 (cuBLAS's
 * CUBLAS_TF32_TENSOR_OP_MATH): what products call in an artifact compiled
 * with TF32 allowed. */
LOCUS_API void locus_cuda_sgemm_tf32(int64_t batch, int64_t m, int64_t n,
                                     int64_t k, uintptr_t a, int64_t lda,
                                     int64_t stride_a, int32_t trans_a,
                                     uintptr_t b, int64_t ldb, int64_t stride_b,
                                     int32_t trans_b, float beta, uintptr_t c,
                                     int64_t ldc, int64_t stride_c);
/* locus_gemm_16's contract on device pointers: bf16 or f16 A and B into
 * f32 C, accumulated in f32 on tensor cores (cublasGemmEx,
 * CUBLAS_COMPUTE_32F). */
LOCUS_API void locus_cuda_gemm_16(int32_t dtype, int64_t batch, int64_t m,
                                  int64_t n, int64_t k, uintptr_t a,
                                  int64_t lda, int64_t stride_a,
                                  int32_t trans_a, uintptr_t b, int64_t ldb,
                                  int64_t stride_b, int32_t trans_b, float beta,
                                  uintptr_t c, int64_t ldc, int64_t stride_c);
/* Nonzero when the device of the launch in progress runs convolutions
 * through cuDNN (found with dlopen, its handle made); zero when it cannot,
 * and the launcher runs its generated kernels instead. */
LOCUS_API int32_t locus_cuda_dnn_ready(void);
/* A convolution through cuDNN on the compute stream: `kind` is a
 * locus_conv_kind_e, `params` points to LOCUS_CONV_PARAM_COUNT int64 values
 * (the convolution's shapes, whatever the kind; of the flags only
 * LOCUS_CONV_BIAS, for the forward, LOCUS_CONV_TF32, LOCUS_CONV_BF16 and
 * LOCUS_CONV_F16 count); pointers
 * are device addresses passed as integers. Only after
 * locus_cuda_dnn_ready() said yes. */
LOCUS_API void locus_cuda_conv2d(int64_t kind, uintptr_t params, uintptr_t a,
                                 uintptr_t b, uintptr_t bias, uintptr_t y);
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

/* Which implementation locus_conv2d uses: "oneDNN <version>, <ISA>, ..."
 * or "im2col and the matrix products above (<why no oneDNN>)". */
LOCUS_API const char *locus_conv_name(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOCUS_ABI_H */
