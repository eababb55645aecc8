// cublas.cpp - finding cuBLAS and binding its entry points, once per
// process.

#include "devices/cuda/cublas.h"

#include "dl.h"

namespace locus::rt {

const Blas &blas() {
  static const Blas b = [] {
    Blas b;
    Library cublas = openFirst({"libcublas.so.13", "libcublas.so.12",
                                "libcublas.so.11", "libcublas.so"});
    b.handle = cublas.handle;
    if (!b.handle) {
      b.why = "no cuBLAS (" + cublas.why + ")";
      return b;
    }
    if (!bindSymbol(b.handle, b.create, "cublasCreate_v2") ||
        !bindSymbol(b.handle, b.destroy, "cublasDestroy_v2") ||
        !bindSymbol(b.handle, b.setStream, "cublasSetStream_v2") ||
        !bindSymbol(b.handle, b.sgemm, "cublasSgemm_v2") ||
        !bindSymbol(b.handle, b.sgemmStridedBatched,
                    "cublasSgemmStridedBatched"))
      b.why = "cuBLAS lacks cublasCreate_v2/cublasSetStream_v2/"
              "cublasSgemm_v2/cublasSgemmStridedBatched";
    bindSymbol(b.handle, b.setMathMode, "cublasSetMathMode");
    bindSymbol(b.handle, b.gemmEx, "cublasGemmEx");
    bindSymbol(b.handle, b.gemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    return b;
  }();
  return b;
}

} // namespace locus::rt
