// cublas.h - cuBLAS, found with dlopen, as far as the cuda device's matrix
// products need it.
#ifndef LOCUS_RUNTIME_CUDA_CUBLAS_H
#define LOCUS_RUNTIME_CUDA_CUBLAS_H

#include "devices/cuda/driver.h"

#include <string>

namespace locus::rt {

// cuBLAS, as far as sgemm needs it.
using cublasHandle_t = struct cublasContext *;
using cublasStatus_t = int;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDefaultMath = 0, kTf32Math = 3; // cublasMath_t
// cudaDataType, cublasComputeType_t and cublasGemmAlgo_t values.
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;
constexpr int kCompute32F = 68, kGemmDefault = -1;

struct Blas {
  void *handle = nullptr;
  std::string why;
  cublasStatus_t (*create)(cublasHandle_t *) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*setStream)(cublasHandle_t, CUstream) = nullptr;
  // Optional (TF32 products; without it they run in fp32).
  cublasStatus_t (*setMathMode)(cublasHandle_t, int) = nullptr;
  cublasStatus_t (*sgemm)(cublasHandle_t, int, int, int, int, int,
                          const float *, const float *, int, const float *, int,
                          const float *, float *, int) = nullptr;
  cublasStatus_t (*sgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
                                        const float *, const float *, int,
                                        long long, const float *, int,
                                        long long, const float *, float *, int,
                                        long long, int) = nullptr;
  // Optional (16-bit products; without them those fail, saying so).
  cublasStatus_t (*gemmEx)(cublasHandle_t, int, int, int, int, int,
                           const void *, const void *, int, int, const void *,
                           int, int, const void *, void *, int, int, int,
                           int) = nullptr;
  cublasStatus_t (*gemmStridedBatchedEx)(cublasHandle_t, int, int, int, int,
                                         int, const void *, const void *, int,
                                         int, long long, const void *, int, int,
                                         long long, const void *, void *, int,
                                         int, long long, int, int,
                                         int) = nullptr;
};

/// cuBLAS, loaded once per process (the first of libcublas.so.13, .12, .11
/// and libcublas.so that opens); `why` says why it is unusable.
const Blas &blas();

} // namespace locus::rt

#endif
