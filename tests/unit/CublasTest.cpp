// CublasTest.cpp - finding cuBLAS (runtime/src/devices/cuda/cublas.cpp) on
// any machine: the entry points the cuda device's products call, the
// 16-bit ones (cublasGemmEx) among them, or why it is unusable. The
// products themselves run on a GPU (tools/gpu-check).

#include "devices/cuda/cublas.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

namespace {

using locus::rt::blas;

TEST(Cublas, BindsEveryEntryPointOrSaysWhy) {
  const locus::rt::Blas &b = blas();
  if (!b.why.empty()) {
    EXPECT_EQ(b.why.rfind("no cuBLAS (", 0), 0u) << b.why;
    // The loader found no library: neither can the dynamic linker.
    EXPECT_EQ(dlopen("libcublas.so", RTLD_NOW | RTLD_NOLOAD), nullptr);
    GTEST_SKIP() << "[SKIP] " << b.why;
  }
  EXPECT_NE(b.create, nullptr);
  EXPECT_NE(b.setStream, nullptr);
  EXPECT_NE(b.sgemm, nullptr);
  EXPECT_NE(b.sgemmStridedBatched, nullptr);
  // bf16 and f16 products (cuBLAS 11 and later have them).
  EXPECT_NE(b.gemmEx, nullptr);
  EXPECT_NE(b.gemmStridedBatchedEx, nullptr);
}

} // namespace
