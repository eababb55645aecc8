// MLIR's generic allocation functions become the runtime's allocator: the
// host's by default, the CUDA device allocator when asked.
// RUN: locus-opt %s --locus-use-runtime-allocator --split-input-file | FileCheck %s
// RUN: locus-opt %s --locus-use-runtime-allocator='alloc=locus_cuda_alloc free=locus_cuda_free' --split-input-file | FileCheck %s --check-prefix=CUDA

// CHECK-DAG:  llvm.func @locus_host_alloc(i64) -> !llvm.ptr
// CHECK-DAG:  llvm.func @locus_host_free(!llvm.ptr)
// CHECK-NOT:  _mlir_memref_to_llvm
// CHECK-LABEL: llvm.func @kernel
// CHECK:      %[[P:.*]] = llvm.call @locus_host_alloc(%{{.*}}) : (i64) -> !llvm.ptr
// CHECK:      llvm.call @locus_host_free(%[[P]]) : (!llvm.ptr) -> ()
// CUDA-DAG:   llvm.func @locus_cuda_alloc(i64) -> !llvm.ptr
// CUDA-DAG:   llvm.func @locus_cuda_free(!llvm.ptr)
// CUDA-LABEL: llvm.func @kernel
// CUDA:       llvm.call @locus_cuda_alloc(
// CUDA:       llvm.call @locus_cuda_free(
module {
  llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
  llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
  llvm.func @kernel(%n: i64) {
    %p = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
    llvm.call @_mlir_memref_to_llvm_free(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
}

// -----

// A module that allocates nothing is left as it was.
// CHECK-LABEL: llvm.func @nothing
// CHECK-NOT:  locus_host_alloc
module {
  llvm.func @nothing() {
    llvm.return
  }
}
