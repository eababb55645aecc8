// RUN: locus-opt %s --locus-map-to-gpu --split-input-file | FileCheck %s
// RUN: locus-opt %s --locus-map-to-gpu=explain=true --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN

// A gather's gradient (what --locus-lower-to-linalg makes of
// locus.gather_grad, bufferized): the fill one launch, the loop another of
// a thread per element of the gradient (18: one block of 256), the
// thread's iteration at its global id, the loop's constants made in the
// launch (no division by a kernel parameter), and the add into the result
// one atomic add; nothing is left on the host.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: gpu.launch
// CHECK: memref.assume_alignment
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}})
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[BASE:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK: %[[P:.*]] = arith.addi %[[BASE]], %[[T]] : index
// CHECK: %[[MINE:.*]] = arith.cmpi ult, %[[P]], %{{.*}} : index
// CHECK: scf.if %[[MINE]] {
// CHECK: arith.remui %[[P]], %[[C3]] : index
// CHECK: memref.load %arg1
// CHECK: scf.if
// CHECK-NOT: memref.store
// CHECK: %[[V:.*]] = memref.load %arg0
// CHECK-NOT: memref.store
// CHECK: memref.atomic_rmw addf %[[V]], %arg2[%{{.*}}, %{{.*}}] : (f32, memref<5x3xf32>) -> f32
// CHECK: gpu.terminator
// CHECK-NOT: scf.for
// CHECK: return
// EXPLAIN: remark: a scatter-add: one thread for each of 18 gradient elements, each added atomically at its index
func.func @embedding_grad(%arg0: memref<2x3x3xf32>, %arg1: memref<2x3xi64>, %arg2: memref<5x3xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %c5_i64 = arith.constant 5 : i64
  %c0_i64 = arith.constant 0 : i64
  %c3 = arith.constant 3 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c18 = arith.constant 18 : index
  %c1 = arith.constant 1 : index
  linalg.fill ins(%cst : f32) outs(%arg2 : memref<5x3xf32>)
  scf.for %arg3 = %c0 to %c18 step %c1 {
    %0 = arith.remui %arg3, %c3 : index
    %1 = arith.divui %arg3, %c3 : index
    %2 = arith.remui %1, %c3 : index
    %3 = arith.divui %1, %c3 : index
    %5 = memref.load %arg1[%3, %2] : memref<2x3xi64>
    %6 = arith.cmpi sge, %5, %c0_i64 : i64
    %7 = arith.cmpi slt, %5, %c5_i64 : i64
    %8 = arith.andi %6, %7 : i1
    scf.if %8 {
      %9 = arith.index_cast %5 : i64 to index
      %10 = memref.load %arg2[%9, %0] : memref<5x3xf32>
      %11 = memref.load %arg0[%3, %2, %0] : memref<2x3x3xf32>
      %12 = arith.addf %10, %11 : f32
      memref.store %12, %arg2[%9, %0] : memref<5x3xf32>
    }
  } {locus.scatter_add}
  return
}

// -----

// More elements than a block: a block per 256 (1000 -> 4 blocks).
// CHECK-LABEL: func.func @many
// CHECK: %[[BLOCKS:.*]] = arith.constant 4 : index
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]],
// CHECK: arith.constant 1000 : index
// CHECK: memref.atomic_rmw addf
func.func @many(%g: memref<1000xf32>, %ids: memref<1000xi64>, %r: memref<7xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  scf.for %p = %c0 to %c1000 step %c1 {
    %i = memref.load %ids[%p] : memref<1000xi64>
    %at = arith.index_cast %i : i64 to index
    %v = memref.load %g[%p] : memref<1000xf32>
    %old = memref.load %r[%at] : memref<7xf32>
    %sum = arith.addf %v, %old : f32
    memref.store %sum, %r[%at] : memref<7xf32>
  } {locus.scatter_add}
  return
}

// -----

// Indices from a constant buffer (a positional embedding's): the launch
// reads the global, and a view of it, itself (the kernel module gets its
// own copy); nothing of them is captured from the host.
// CHECK-LABEL: func.func @constant_ids
// CHECK: gpu.launch
// CHECK: %[[IDS:.*]] = memref.get_global @ids : memref<2x2xi64>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[IDS]] {{\[}}[0, 1]] : memref<2x2xi64> into memref<4xi64>
// CHECK: memref.load %[[FLAT]]
// CHECK: memref.atomic_rmw addf
memref.global "private" constant @ids : memref<2x2xi64> = dense<[[0, 1], [1, 3]]>
func.func @constant_ids(%g: memref<4x8xf32>, %r: memref<5x8xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %ids = memref.get_global @ids : memref<2x2xi64>
  %flat = memref.collapse_shape %ids [[0, 1]] : memref<2x2xi64> into memref<4xi64>
  scf.for %p = %c0 to %c32 step %c1 {
    %k = arith.remui %p, %c8 : index
    %j = arith.divui %p, %c8 : index
    %i = memref.load %flat[%j] : memref<4xi64>
    %at = arith.index_cast %i : i64 to index
    %v = memref.load %g[%j, %k] : memref<4x8xf32>
    %old = memref.load %r[%at, %k] : memref<5x8xf32>
    %sum = arith.addf %old, %v : f32
    memref.store %sum, %r[%at, %k] : memref<5x8xf32>
  } {locus.scatter_add}
  return
}
