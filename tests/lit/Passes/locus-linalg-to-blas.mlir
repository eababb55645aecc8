// Products on plain f32 buffers call locus_sgemm, of bf16 or f16 operands
// into f32 locus_gemm_16; others stay for the loops.
// RUN: locus-opt %s --locus-linalg-to-blas | FileCheck %s

// CHECK-DAG: func.func private @locus_sgemm(i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, f32, i64, i64, i64)
// CHECK-DAG: func.func private @locus_gemm_16(i32, i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, f32, i64, i64, i64)
// CHECK-LABEL: func.func @products
func.func @products(%a: memref<64x784xf32>, %b: memref<784x1024xf32>, %c: memref<64x1024xf32>,
                    %w: memref<10x784xf32>, %y: memref<64x10xf32>,
                    %ba: memref<3x4x5xf32>, %bb: memref<3x5x6xf32>, %bc: memref<3x4x6xf32>) {
  // M=64, N=1024, K=784; A not transposed (lda 784); B not (ldb 1024); beta 1.
  // CHECK:      %[[BATCH:.*]] = arith.constant 1 : i64
  // CHECK-NEXT: %[[M:.*]] = arith.constant 64 : i64
  // CHECK-NEXT: %[[N:.*]] = arith.constant 1024 : i64
  // CHECK-NEXT: %[[K:.*]] = arith.constant 784 : i64
  // CHECK-NEXT: %[[IA:.*]] = memref.extract_aligned_pointer_as_index %arg0 : memref<64x784xf32> -> index
  // CHECK-NEXT: %[[PA:.*]] = arith.index_cast %[[IA]] : index to i64
  // CHECK-NEXT: %[[LDA:.*]] = arith.constant 784 : i64
  // CHECK-NEXT: %[[SA:.*]] = arith.constant 50176 : i64
  // CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
  // CHECK-NEXT: %[[IB:.*]] = memref.extract_aligned_pointer_as_index %arg1 : memref<784x1024xf32> -> index
  // CHECK-NEXT: %[[PB:.*]] = arith.index_cast %[[IB]] : index to i64
  // CHECK-NEXT: %[[LDB:.*]] = arith.constant 1024 : i64
  // CHECK-NEXT: %[[SB:.*]] = arith.constant 802816 : i64
  // CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
  // CHECK-NEXT: %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
  // CHECK-NEXT: %[[IC:.*]] = memref.extract_aligned_pointer_as_index %arg2 : memref<64x1024xf32> -> index
  // CHECK-NEXT: %[[PC:.*]] = arith.index_cast %[[IC]] : index to i64
  // CHECK-NEXT: %[[LDC:.*]] = arith.constant 1024 : i64
  // CHECK-NEXT: %[[SC:.*]] = arith.constant 65536 : i64
  // CHECK-NEXT: call @locus_sgemm(%[[BATCH]], %[[M]], %[[N]], %[[K]], %[[PA]], %[[LDA]], %[[SA]], %[[TA]], %[[PB]], %[[LDB]], %[[SB]], %[[TB]], %[[BETA]], %[[PC]], %[[LDC]], %[[SC]])
  linalg.matmul ins(%a, %b : memref<64x784xf32>, memref<784x1024xf32>) outs(%c : memref<64x1024xf32>)
  // matmul_transpose_b: N = 10, B is [N, K] and transposed, so ldb = K = 784.
  // CHECK:      memref.extract_aligned_pointer_as_index %arg3 : memref<10x784xf32> -> index
  // CHECK-NEXT: arith.index_cast
  // CHECK-NEXT: arith.constant 784 : i64
  // CHECK-NEXT: arith.constant 7840 : i64
  // CHECK-NEXT: arith.constant 1 : i32
  // CHECK:      call @locus_sgemm
  linalg.matmul_transpose_b ins(%a, %w : memref<64x784xf32>, memref<10x784xf32>) outs(%y : memref<64x10xf32>)
  // Batched: batch 3, M 4, N 6, K 5.
  // CHECK:      %[[B3:.*]] = arith.constant 3 : i64
  // CHECK-NEXT: %[[M4:.*]] = arith.constant 4 : i64
  // CHECK-NEXT: %[[N6:.*]] = arith.constant 6 : i64
  // CHECK-NEXT: %[[K5:.*]] = arith.constant 5 : i64
  // CHECK:      call @locus_sgemm(%[[B3]], %[[M4]], %[[N6]], %[[K5]],
  linalg.batch_matmul ins(%ba, %bb : memref<3x4x5xf32>, memref<3x5x6xf32>) outs(%bc : memref<3x4x6xf32>)
  // CHECK-NOT: linalg.matmul
  // CHECK-NOT: linalg.batch_matmul
  return
}

// A view whose elements in a row are not next to each other, a strided
// output, or a tensor: left alone.
// CHECK-LABEL: func.func @left
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x4xf32, strided<[8, 2]>>, memref<4x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x4xf32>, memref<4x4xf32>) outs(%{{.*}} : memref<4x4xf32, strided<[8, 1]>>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>)
func.func @left(%s: memref<4x4xf32, strided<[8, 2]>>, %b: memref<4x4xf32>, %c: memref<4x4xf32>,
                %sc: memref<4x4xf32, strided<[8, 1]>>, %t: tensor<4x4xf32>) -> tensor<4x4xf32> {
  linalg.matmul ins(%s, %b : memref<4x4xf32, strided<[8, 2]>>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%b, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%sc : memref<4x4xf32, strided<[8, 1]>>)
  %r = linalg.matmul ins(%t, %t : tensor<4x4xf32>, tensor<4x4xf32>) outs(%t : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// A row block of a packed weight (attention's k of in_proj_weight, rows
// 32 to 63 of a [96, 32] matrix) read transposed where it lies: its
// address plus 32 x 32 floats (4096 bytes), its rows 32 apart (ldb); a
// column block ([:, 16:48] of a [8, 64] matrix) with its rows 64 apart.
// CHECK-LABEL: func.func @slices
// CHECK:      %[[IB:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<32x32xf32, strided<[32, 1], offset: 1024>> -> index
// CHECK-NEXT: %[[PB:.*]] = arith.index_cast %[[IB]] : index to i64
// CHECK-NEXT: %[[OFF:.*]] = arith.constant 4096 : i64
// CHECK-NEXT: %[[B:.*]] = arith.addi %[[PB]], %[[OFF]] : i64
// CHECK-NEXT: %[[LDB:.*]] = arith.constant 32 : i64
// CHECK:      call @locus_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B]], %[[LDB]],
// CHECK:      memref.extract_aligned_pointer_as_index %{{.*}} : memref<8x32xf32, strided<[64, 1], offset: 16>> -> index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: arith.constant 64 : i64
// CHECK-NEXT: arith.addi
// CHECK-NEXT: %[[LDA:.*]] = arith.constant 64 : i64
// CHECK:      call @locus_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LDA]],
// CHECK-NOT:  linalg.matmul
func.func @slices(%x: memref<64x32xf32>, %w: memref<96x32xf32>, %y: memref<64x32xf32>,
                  %a: memref<8x64xf32>, %b: memref<32x4xf32>, %c: memref<8x4xf32>) {
  %k = memref.subview %w[32, 0] [32, 32] [1, 1] : memref<96x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  linalg.matmul_transpose_b ins(%x, %k : memref<64x32xf32>, memref<32x32xf32, strided<[32, 1], offset: 1024>>) outs(%y : memref<64x32xf32>)
  %cols = memref.subview %a[0, 16] [8, 32] [1, 1] : memref<8x64xf32> to memref<8x32xf32, strided<[64, 1], offset: 16>>
  linalg.matmul ins(%cols, %b : memref<8x32xf32, strided<[64, 1], offset: 16>>, memref<32x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// A product into a buffer just filled with zeros: the fill goes, beta is 0.
// A fill with anything in between that touches memory stays.
// CHECK-LABEL: func.func @zero_init
// CHECK-NOT: linalg.fill
// CHECK: %[[BETA0:[^ ]*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @locus_sgemm({{.*}}, %[[BETA0]], {{.*}})
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: %[[BETA1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: call @locus_sgemm({{.*}}, %[[BETA1]], {{.*}})
func.func @zero_init(%a: memref<4x8xf32>, %b: memref<8x2xf32>, %c: memref<4x2xf32>, %d: memref<4x2xf32>) {
  // -0.0 is a zero too; it prints apart from the 0.0 the pass makes.
  %zero = arith.constant -0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x2xf32>) outs(%c : memref<4x2xf32>)
  linalg.fill ins(%zero : f32) outs(%d : memref<4x2xf32>)
  %i = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %d[%i, %i] : memref<4x2xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x2xf32>) outs(%d : memref<4x2xf32>)
  return
}

// A read transposed (a backward pass's g^T x): A is stored [k, m], so
// lda = m and transA = 1.
// CHECK-LABEL: func.func @transposed_a
// CHECK:      %[[M:.*]] = arith.constant 1024 : i64
// CHECK-NEXT: %[[N:.*]] = arith.constant 784 : i64
// CHECK-NEXT: %[[K:.*]] = arith.constant 256 : i64
// CHECK:      %[[LDA:.*]] = arith.constant 1024 : i64
// CHECK-NEXT: %{{.*}} = arith.constant 262144 : i64
// CHECK-NEXT: %[[TA:.*]] = arith.constant 1 : i32
// CHECK:      call @locus_sgemm(%{{.*}}, %[[M]], %[[N]], %[[K]], %{{.*}}, %[[LDA]], %{{.*}}, %[[TA]],
func.func @transposed_a(%g: memref<256x1024xf32>, %x: memref<256x784xf32>, %c: memref<1024x784xf32>) {
  linalg.matmul_transpose_a ins(%g, %x : memref<256x1024xf32>, memref<256x784xf32>) outs(%c : memref<1024x784xf32>)
  return
}

// Batched and read transposed (attention's q k^T, and its gradient's
// g^T x): batch 3; B stored [b, n, k] so ldb = k = 5, stride 30, transB;
// A stored [b, k, m] so lda = m = 4, stride 20, transA.
// CHECK-LABEL: func.func @batched_transposed
// CHECK:      %[[B3:.*]] = arith.constant 3 : i64
// CHECK-NEXT: %[[M4:.*]] = arith.constant 4 : i64
// CHECK-NEXT: %[[N6:.*]] = arith.constant 6 : i64
// CHECK-NEXT: %[[K5:.*]] = arith.constant 5 : i64
// CHECK:      %[[LDA:.*]] = arith.constant 5 : i64
// CHECK-NEXT: %[[SA:.*]] = arith.constant 20 : i64
// CHECK-NEXT: %[[NA:.*]] = arith.constant 0 : i32
// CHECK:      %[[LDB:.*]] = arith.constant 5 : i64
// CHECK-NEXT: %[[SB:.*]] = arith.constant 30 : i64
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK:      call @locus_sgemm(%[[B3]], %[[M4]], %[[N6]], %[[K5]], %{{.*}}, %[[LDA]], %[[SA]], %[[NA]], %{{.*}}, %[[LDB]], %[[SB]], %[[TB]],
// CHECK:      memref.extract_aligned_pointer_as_index %arg3 : memref<3x5x4xf32>
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: arith.constant 4 : i64
// CHECK-NEXT: arith.constant 20 : i64
// CHECK-NEXT: arith.constant 1 : i32
// CHECK:      call @locus_sgemm
// CHECK-NOT: linalg.batch_matmul
func.func @batched_transposed(%a: memref<3x4x5xf32>, %bt: memref<3x6x5xf32>, %c: memref<3x4x6xf32>,
                              %at: memref<3x5x4xf32>, %b: memref<3x5x6xf32>) {
  linalg.batch_matmul_transpose_b ins(%a, %bt : memref<3x4x5xf32>, memref<3x6x5xf32>) outs(%c : memref<3x4x6xf32>)
  linalg.batch_matmul_transpose_a ins(%at, %b : memref<3x5x4xf32>, memref<3x5x6xf32>) outs(%c : memref<3x4x6xf32>)
  return
}

// A dynamic batch of rows (a kernel with dynamic sizes): m is read from the
// buffer, and so are the strides that depend on it.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK:      %[[D:.*]] = memref.dim %arg0, %{{.*}} : memref<?x8xf32>
// CHECK-NEXT: %[[M:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK:      %[[MK:.*]] = arith.muli %[[M]], %c8_i64 : i64
// CHECK:      %[[MN:.*]] = arith.muli %[[M]], %c4_i64 : i64
// CHECK-NEXT: call @locus_sgemm(%{{.*}}, %[[M]], %c4_i64, %c8_i64, %{{.*}}, %{{.*}}, %[[MK]], {{.*}}, %[[MN]])
func.func @dynamic_rows(%a: memref<?x8xf32>, %b: memref<8x4xf32>, %c: memref<?x4xf32>) {
  linalg.matmul ins(%a, %b : memref<?x8xf32>, memref<8x4xf32>) outs(%c : memref<?x4xf32>)
  return
}

// A batched product over a dynamic sequence length (attention's q k^T in a
// kernel with dynamic sizes): its operands are views whose strides and
// offset are dynamic too, read from their descriptors at the call.
// CHECK-LABEL: func.func @dynamic_batched
// CHECK:      %[[DM:.*]] = memref.dim %arg0, %{{.*}} : memref<4x?x16xf32, strided<[?, 16, 1], offset: ?>>
// CHECK-NEXT: %[[M:.*]] = arith.index_cast %[[DM]] : index to i64
// CHECK:      %[[DN:.*]] = memref.dim %arg2, %{{.*}} : memref<4x?x?xf32>
// CHECK-NEXT: %[[N:.*]] = arith.index_cast %[[DN]] : index to i64
// CHECK:      %{{.*}}, %[[OFF:.*]], %{{.*}}:3, %{{.*}}:3 = memref.extract_strided_metadata %arg0
// CHECK-NEXT: %[[OFF64:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK:      arith.muli %[[OFF64]], %{{.*}} : i64
// CHECK:      %[[PA:.*]] = arith.addi
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}}:3, %[[SA:.*]]:3 = memref.extract_strided_metadata %arg0
// CHECK-NEXT: %[[BSA:.*]] = arith.index_cast %[[SA]]#0 : index to i64
// CHECK:      memref.extract_strided_metadata %arg1
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}}:3, %[[SB:.*]]:3 = memref.extract_strided_metadata %arg1
// CHECK-NEXT: %[[BSB:.*]] = arith.index_cast %[[SB]]#0 : index to i64
// CHECK:      call @locus_sgemm(%c4_i64, %[[M]], %[[N]], %c16_i64, %[[PA]], %{{.*}}, %[[BSA]], %c0_i32, %{{.*}}, %{{.*}}, %[[BSB]], %c1_i32,
func.func @dynamic_batched(%q: memref<4x?x16xf32, strided<[?, 16, 1], offset: ?>>,
                           %k: memref<4x?x16xf32, strided<[?, 16, 1], offset: ?>>,
                           %s: memref<4x?x?xf32>) {
  linalg.batch_matmul_transpose_b ins(%q, %k : memref<4x?x16xf32, strided<[?, 16, 1], offset: ?>>, memref<4x?x16xf32, strided<[?, 16, 1], offset: ?>>) outs(%s : memref<4x?x?xf32>)
  return
}

// bf16 (or f16) operands into an f32 accumulator (what a product of 16-bit
// values lowers to): locus_gemm_16, its element type first (4: bf16, 5:
// f16), a view's offset in 2-byte elements. Mixed operands, or a 16-bit
// output, stay for the loops.
// CHECK-LABEL: func.func @halves
// CHECK: %[[T:.*]] = arith.constant 4 : i32
// CHECK-NEXT: call @locus_gemm_16(%[[T]], %{{.*}}, %c8_i64, %c16_i64, %c32_i64,
// CHECK: %[[OFF:.*]] = arith.constant 64 : i64
// CHECK-NEXT: %[[PA:.*]] = arith.addi %{{.*}}, %[[OFF]] : i64
// CHECK: %[[H:.*]] = arith.constant 5 : i32
// CHECK-NEXT: call @locus_gemm_16(%[[H]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PA]],
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<32x16xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<8x32xbf16>, memref<32x16xbf16>) outs(%{{.*}} : memref<8x16xbf16>)
func.func @halves(%a: memref<8x32xbf16>, %b: memref<32x16xbf16>, %c: memref<8x16xf32>,
                  %ha: memref<8x32xf16, strided<[32, 1], offset: 32>>, %hb: memref<32x16xf16>,
                  %f: memref<32x16xf32>, %cb: memref<8x16xbf16>) {
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x16xbf16>) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%ha, %hb : memref<8x32xf16, strided<[32, 1], offset: 32>>, memref<32x16xf16>) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %f : memref<8x32xbf16>, memref<32x16xf32>) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x16xbf16>) outs(%cb : memref<8x16xbf16>)
  return
}
