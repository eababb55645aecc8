// A 16-bit product whose fresh, zero-filled f32 result is only rounded to
// the operands' type (through reshapes) writes that type itself:
// LOCUS_GEMM_C_16BIT (256) added to the element type, the rounding, the
// views and the f32 buffer gone. Anything else keeps the f32 result.
// RUN: locus-opt %s --locus-linalg-to-blas=callee=locus_cuda_sgemm | FileCheck %s
// RUN: locus-opt %s --locus-linalg-to-blas | FileCheck %s --check-prefix=HOST

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// The batched product of attention's heads: C [16, 16, 8] read as
// [4, 4, 16, 8] and rounded into the kernel's bf16 result; batch stride
// m * n = 128 and ldc n = 8 in the result's elements.
// CHECK-LABEL: func.func @heads
// CHECK-NOT: memref.alloc
// CHECK: %[[IC:.*]] = memref.extract_aligned_pointer_as_index %arg2 : memref<4x4x16x8xbf16> -> index
// CHECK-NEXT: %[[PC:.*]] = arith.index_cast %[[IC]] : index to i64
// CHECK-NEXT: %[[LDC:.*]] = arith.constant 8 : i64
// CHECK-NEXT: %[[SC:.*]] = arith.constant 128 : i64
// CHECK-NEXT: %[[T:.*]] = arith.constant 260 : i32
// CHECK-NEXT: call @locus_cuda_gemm_16(%[[T]], {{.*}}, %[[PC]], %[[LDC]], %[[SC]])
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// CHECK: return
// HOST-LABEL: func.func @heads
// HOST: arith.constant 260 : i32
// HOST-NEXT: call @locus_gemm_16(
// HOST-NOT: linalg.generic
func.func @heads(%a: memref<4x4x16x16xbf16>, %b: memref<16x16x8xbf16>, %out: memref<4x4x16x8xbf16>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<16x16x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<16x16x8xf32>)
  %a3 = memref.collapse_shape %a [[0, 1], [2], [3]] : memref<4x4x16x16xbf16> into memref<16x16x16xbf16>
  linalg.batch_matmul ins(%a3, %b : memref<16x16x16xbf16>, memref<16x16x8xbf16>) outs(%c : memref<16x16x8xf32>)
  %c4 = memref.expand_shape %c [[0, 1], [2], [3]] output_shape [4, 4, 16, 8] : memref<16x16x8xf32> into memref<4x4x16x8xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c4 : memref<4x4x16x8xf32>) outs(%out : memref<4x4x16x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<16x16x8xf32>
  return
}

// f16 into a row block of a bigger buffer (static offset, contiguous):
// the pointer moves by 2 * 64 bytes; 5 + 256 = 261.
// CHECK-LABEL: func.func @f16_into_a_block
// HOST-LABEL: func.func @f16_into_a_block
// CHECK: arith.constant 128 : i64
// CHECK: arith.constant 261 : i32
// CHECK-NEXT: call @locus_cuda_gemm_16(
// CHECK-NOT: linalg.generic
func.func @f16_into_a_block(%a: memref<8x32xf16>, %b: memref<32x8xf16>, %out: memref<64x8xf16, strided<[8, 1], offset: 64>>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xf16>, memref<32x8xf16>) outs(%c : memref<8x8xf32>)
  %flat = memref.collapse_shape %c [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  %c2 = memref.expand_shape %flat [[0, 1]] output_shape [64, 1] : memref<64xf32> into memref<64x1xf32>
  %o2 = memref.collapse_shape %out [[0], [1]] : memref<64x8xf16, strided<[8, 1], offset: 64>> into memref<64x8xf16, strided<[8, 1], offset: 64>>
  %c3 = memref.collapse_shape %c2 [[0, 1]] : memref<64x1xf32> into memref<64xf32>
  %c8 = memref.expand_shape %c3 [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %o8 = memref.subview %o2[0, 0] [8, 8] [1, 1] : memref<64x8xf16, strided<[8, 1], offset: 64>> to memref<8x8xf16, strided<[8, 1], offset: 64>>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c8 : memref<8x8xf32>) outs(%o8 : memref<8x8xf16, strided<[8, 1], offset: 64>>) {
  ^bb0(%in: f32, %o: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  return
}

// Dynamic rows (a kernel at the run's batch): N from B (transposed, so
// its first dimension), the rows and C's batch stride from A's size.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %c1_i64
// CHECK-NEXT: %{{.*}} = arith.constant 0 : index
// CHECK-NEXT: %[[D:.*]] = memref.dim %arg0, %{{.*}} : memref<?x32xbf16>
// CHECK-NEXT: %[[M:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT: %[[N:.*]] = arith.constant 8 : i64
// CHECK: memref.extract_aligned_pointer_as_index %arg2
// CHECK: %[[MN:.*]] = arith.muli %[[M]], %{{.*}} : i64
// CHECK-NEXT: arith.constant 260 : i32
// CHECK-NEXT: call @locus_cuda_gemm_16(%{{.*}}, %{{.*}}, %[[M]], %[[N]], {{.*}}, %[[MN]])
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @dynamic_rows(%a: memref<?x32xbf16>, %b: memref<8x32xbf16>, %out: memref<?x8xbf16>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %rows = memref.dim %a, %c0 : memref<?x32xbf16>
  %c = memref.alloc(%rows) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x8xf32>)
  linalg.matmul_transpose_b ins(%a, %b : memref<?x32xbf16>, memref<8x32xbf16>) outs(%c : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<?x8xf32>) outs(%out : memref<?x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<?x8xf32>
  return
}

// Left with an f32 result: C read by something else too; C not zero-filled
// (beta 1); rounded to the other 16-bit type; a rounding that also scales;
// a write to the output between the product and its rounding; a
// transposing rounding; C an argument (the kernel's f32 result); a view
// of C written after the rounding.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-8: call @locus_cuda_gemm_16(%c4_i32{{(_[0-9]+)?}},
// CHECK-NOT: arith.constant 260 : i32
// CHECK: return
func.func @kept(%a: memref<8x32xbf16>, %b: memref<32x8xbf16>, %out: memref<8x8xbf16>, %hout: memref<8x8xf16>,
                %f: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %round = arith.constant 0.5 : bf16
  // C read by another op.
  %c1 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c1 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c1 : memref<8x8xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c1 : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.copy %c1, %f : memref<8x8xf32> to memref<8x8xf32>
  // Beta 1.
  %c2 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%two : f32) outs(%c2 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c2 : memref<8x8xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  // Rounded to f16 from bf16 operands.
  %c3 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c3 : memref<8x8xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c3 : memref<8x8xf32>) outs(%hout : memref<8x8xf16>) {
  ^bb0(%in: f32, %o: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  }
  // Scaled as well as rounded.
  %c4 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c4 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c4 : memref<8x8xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c4 : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %s = arith.mulf %in, %two : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  // The output written in between.
  %c5 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c5 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c5 : memref<8x8xf32>)
  linalg.fill ins(%round : bf16) outs(%out : memref<8x8xbf16>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c5 : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  // Transposed on the way.
  %c6 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c6 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c6 : memref<8x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c6 : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  // A view of C filled after its rounding.
  %c7 = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%c7 : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%c7 : memref<8x8xf32>)
  %v7 = memref.collapse_shape %c7 [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  %w7 = memref.expand_shape %v7 [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w7 : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.fill ins(%zero : f32) outs(%v7 : memref<64xf32>)
  // C an argument.
  linalg.fill ins(%zero : f32) outs(%f : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x32xbf16>, memref<32x8xbf16>) outs(%f : memref<8x8xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%f : memref<8x8xf32>) outs(%out : memref<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  return
}
