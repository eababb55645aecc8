// --locus-use-runtime-allocator's errors.
// RUN: locus-opt %s --locus-use-runtime-allocator -split-input-file -verify-diagnostics
// RUN: not locus-opt %s --locus-use-runtime-allocator='alloc=f free=f' 2>&1 | FileCheck %s --check-prefix=SAME
// SAME: needs two different function names, alloc and free

module {
  llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
  // expected-error@+1 {{is named 'locus_host_alloc', the runtime's allocation function that '_mlir_memref_to_llvm_alloc' is to become}}
  llvm.func @locus_host_alloc(i64) -> !llvm.ptr
}
