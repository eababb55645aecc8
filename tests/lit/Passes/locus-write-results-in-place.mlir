// A kernel computes each result straight into its out-parameter instead of
// a temporary it then copies, unless the result may be an update in place.
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(locus-write-results-in-place))' | FileCheck %s

// A linear's product, reshaped: the temporary becomes the out-parameter
// seen with the product's shape; no copy, allocation or free is left.
// CHECK-LABEL: func.func @reshaped_product
// CHECK: %[[T:.*]] = memref.reinterpret_cast %arg2 to offset: [0], sizes: [8, 4], strides: [4, 1] : memref<2x4x4xf32> to memref<8x4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[T]] : memref<8x4xf32>)
// CHECK: linalg.matmul ins({{.*}}) outs(%[[T]] : memref<8x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @reshaped_product(%x: memref<8x4xf32>, %w: memref<4x4xf32>, %out: memref<2x4x4xf32>)
    attributes {locus.results_may_alias = array<i64: -1>} {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() {alignment = 64 : i64} : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x4xf32>, memref<4x4xf32>) outs(%t : memref<8x4xf32>)
  %v = memref.expand_shape %t [[0, 1], [2]] output_shape [2, 4, 4] : memref<8x4xf32> into memref<2x4x4xf32>
  memref.copy %v, %out : memref<2x4x4xf32> to memref<2x4x4xf32>
  memref.dealloc %t : memref<8x4xf32>
  return
}

// -----

// A temporary of the out-parameter's own type is replaced by it.
// CHECK-LABEL: func.func @same_type
// CHECK-NOT: memref.alloc
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg0 : memref<4xf32>)
// CHECK-NOT: memref.copy
func.func @same_type(%out: memref<4xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4xf32>)
  memref.copy %t, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  return
}

// -----

// Left as they are: a result that may be an update in place (the plan may
// give it the buffer of %s, which the kernel reads after the fill); a
// temporary written after the copy; an out-parameter written twice; a
// function without the attribute.
// CHECK-LABEL: func.func @in_place_update
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-LABEL: func.func @written_after
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-LABEL: func.func @out_written_twice
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-LABEL: func.func @not_a_kernel
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @in_place_update(%s: memref<4xf32>, %out: memref<4xf32>) attributes {locus.results_may_alias = array<i64: 0>} {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4xf32>)
  linalg.add ins(%t, %s : memref<4xf32>, memref<4xf32>) outs(%t : memref<4xf32>)
  memref.copy %t, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  return
}
func.func @written_after(%out: memref<4xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4xf32>)
  memref.copy %t, %out : memref<4xf32> to memref<4xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4xf32>)
  memref.dealloc %t : memref<4xf32>
  return
}
func.func @out_written_twice(%out: memref<4xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%out : memref<4xf32>)
  memref.copy %t, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  return
}
func.func @not_a_kernel(%out: memref<4xf32>) {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4xf32>)
  memref.copy %t, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  return
}
