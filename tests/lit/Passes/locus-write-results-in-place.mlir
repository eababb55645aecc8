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

// -----

// A kernel with dynamic sizes packs its run-size result into the first
// elements of its out-parameter, sized at the bounds (here a batch of %n
// rows of a [256, 10] buffer): the temporary becomes that prefix, seen
// with its own sizes and row-major strides; with two dynamic sizes a
// stride is their product. A prefix read again after the copy, or an
// out-parameter something else reads, keeps the copy.
// CHECK-LABEL: func.func @run_sizes
// CHECK: %[[N:.*]] = arith.index_cast
// CHECK: %[[T:.*]] = memref.reinterpret_cast %[[OUT:.*]] to offset: [0], sizes: [%[[N]], 10], strides: [10, 1] : memref<256x10xf32> to memref<?x10xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[T]] : memref<?x10xf32>)
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.alloc
// CHECK: return
// CHECK-LABEL: func.func @two_sizes
// CHECK: %[[S:.*]] = arith.muli %c8{{.*}}, %{{.*}} : index
// CHECK-NEXT: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}, %{{.*}}, 8], strides: [%[[S]], 8, 1] : memref<4x16x8xf32> to memref<?x?x8xf32>
// CHECK-NOT: memref.copy
// CHECK-LABEL: func.func @prefix_read_after
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK-LABEL: func.func @out_read_too
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @run_sizes(%sizes: memref<1xi64>, %out: memref<256x10xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %c0 = arith.constant 0 : index
  %c10 = arith.constant 10 : index
  %cst = arith.constant 0.5 : f32
  %0 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %0 : i64 to index
  %count = arith.muli %n, %c10 : index
  %t = memref.alloc(%n) : memref<?x10xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x10xf32>)
  %flat_t = memref.collapse_shape %t [[0, 1]] : memref<?x10xf32> into memref<?xf32>
  %flat = memref.reinterpret_cast %out to offset: [0], sizes: [2560], strides: [1] : memref<256x10xf32> to memref<2560xf32>
  %prefix = memref.subview %flat[0] [%count] [1] : memref<2560xf32> to memref<?xf32, strided<[1]>>
  memref.copy %flat_t, %prefix : memref<?xf32> to memref<?xf32, strided<[1]>>
  %bound = memref.expand_shape %flat [[0, 1]] output_shape [256, 10] : memref<2560xf32> into memref<256x10xf32>
  memref.dealloc %t : memref<?x10xf32>
  return
}
func.func @two_sizes(%sizes: memref<2xi64>, %out: memref<4x16x8xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cst = arith.constant 0.5 : f32
  %0 = memref.load %sizes[%c0] : memref<2xi64>
  %1 = memref.load %sizes[%c1] : memref<2xi64>
  %b = arith.index_cast %0 : i64 to index
  %s = arith.index_cast %1 : i64 to index
  %bs = arith.muli %b, %s : index
  %count = arith.muli %bs, %c8 : index
  %t = memref.alloc(%b, %s) : memref<?x?x8xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x?x8xf32>)
  %flat_t = memref.collapse_shape %t [[0, 1, 2]] : memref<?x?x8xf32> into memref<?xf32>
  %flat = memref.reinterpret_cast %out to offset: [0], sizes: [512], strides: [1] : memref<4x16x8xf32> to memref<512xf32>
  %prefix = memref.subview %flat[0] [%count] [1] : memref<512xf32> to memref<?xf32, strided<[1]>>
  memref.copy %flat_t, %prefix : memref<?xf32> to memref<?xf32, strided<[1]>>
  memref.dealloc %t : memref<?x?x8xf32>
  return
}
func.func @prefix_read_after(%sizes: memref<1xi64>, %out: memref<256x10xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %c0 = arith.constant 0 : index
  %c10 = arith.constant 10 : index
  %cst = arith.constant 0.5 : f32
  %0 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %0 : i64 to index
  %count = arith.muli %n, %c10 : index
  %t = memref.alloc(%n) : memref<?x10xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x10xf32>)
  %flat_t = memref.collapse_shape %t [[0, 1]] : memref<?x10xf32> into memref<?xf32>
  %flat = memref.reinterpret_cast %out to offset: [0], sizes: [2560], strides: [1] : memref<256x10xf32> to memref<2560xf32>
  %prefix = memref.subview %flat[0] [%count] [1] : memref<2560xf32> to memref<?xf32, strided<[1]>>
  memref.copy %flat_t, %prefix : memref<?xf32> to memref<?xf32, strided<[1]>>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x10xf32>)
  memref.dealloc %t : memref<?x10xf32>
  return
}
func.func @out_read_too(%sizes: memref<1xi64>, %out: memref<256x10xf32>) attributes {locus.results_may_alias = array<i64: -1>} {
  %c0 = arith.constant 0 : index
  %c10 = arith.constant 10 : index
  %cst = arith.constant 0.5 : f32
  %0 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %0 : i64 to index
  %count = arith.muli %n, %c10 : index
  %t = memref.alloc(%n) : memref<?x10xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x10xf32>)
  %flat_t = memref.collapse_shape %t [[0, 1]] : memref<?x10xf32> into memref<?xf32>
  %flat = memref.reinterpret_cast %out to offset: [0], sizes: [2560], strides: [1] : memref<256x10xf32> to memref<2560xf32>
  %prefix = memref.subview %flat[0] [%count] [1] : memref<2560xf32> to memref<?xf32, strided<[1]>>
  memref.copy %flat_t, %prefix : memref<?xf32> to memref<?xf32, strided<[1]>>
  %v = memref.load %flat[%c0] : memref<2560xf32>
  memref.store %v, %flat[%c10] : memref<2560xf32>
  memref.dealloc %t : memref<?x10xf32>
  return
}
