// cublas.cpp - finding cuBLAS and binding its entry points, once per
// process.

#include "devices/cuda/cublas.h"

#include "dl.h"

namespace locus::rt {

const Blas &blas() {
  static const Blas b = [] {
    Blas b;
    for (const char *name : {"libcublas.so.13", "libcublas.so.12",
                             "libcublas.so.11", "libcublas.so"})
      if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        b.handle = handle;
        break;
      }
    if (!b.handle) {
      const char *why = dlerror();
      b.why = std::string("no cuBLAS (") + (why ? why : "libcublas.so") + ")";
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
    return b;
  }();
  return b;
}

} // namespace locus::rt
