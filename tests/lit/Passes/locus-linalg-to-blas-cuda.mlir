// In CUDA kernels (callee locus_cuda_sgemm, or its TF32 form), products of
// bf16 or f16 operands into f32 call locus_cuda_gemm_16 (cublasGemmEx),
// their element type first, as locus_gemm_16 on the host; f32 products
// keep the callee.
// RUN: locus-opt %s --locus-linalg-to-blas=callee=locus_cuda_sgemm | FileCheck %s
// RUN: locus-opt %s --locus-linalg-to-blas=callee=locus_cuda_sgemm_tf32 | FileCheck %s --check-prefix=TF32

// CHECK-DAG: func.func private @locus_cuda_gemm_16(i32, i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, f32, i64, i64, i64)
// CHECK-DAG: func.func private @locus_cuda_sgemm(i64,
// CHECK-LABEL: func.func @products
// CHECK: %[[T:.*]] = arith.constant 4 : i32
// CHECK-NEXT: call @locus_cuda_gemm_16(%[[T]], %c1_i64, %c8_i64, %c16_i64, %c32_i64,
// CHECK: %[[H:.*]] = arith.constant 5 : i32
// CHECK-NEXT: call @locus_cuda_gemm_16(%[[H]], %c4_i64,
// CHECK: call @locus_cuda_sgemm(
// CHECK-NOT: linalg.
// TF32: call @locus_cuda_gemm_16(
// TF32: call @locus_cuda_gemm_16(
// TF32: call @locus_cuda_sgemm_tf32(
func.func @products(%a: memref<8x32xbf16>, %b: memref<32x16xbf16>, %c: memref<8x16xf32>,
                    %ha: memref<4x8x32xf16>, %hb: memref<4x32x16xf16>, %hc: memref<4x8x16xf32>,
                    %fa: memref<8x32xf32>, %fb: memref<32x16xf32>) {
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x16xbf16>) outs(%c : memref<8x16xf32>)
  linalg.batch_matmul ins(%ha, %hb : memref<4x8x32xf16>, memref<4x32x16xf16>) outs(%hc : memref<4x8x16xf32>)
  linalg.matmul ins(%fa, %fb : memref<8x32xf32>, memref<32x16xf32>) outs(%c : memref<8x16xf32>)
  return
}
