// Host reductions whose last loop reduces become a parallel loop over the
// output and reduction loops that carry the accumulator, the combiner
// marked reassoc; other generics stay for linalg's lowering.
// RUN: locus-opt %s --locus-lower-reductions | FileCheck %s

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
#chan4 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>

// BatchNorm's statistics: the channel loop outside, N, H and W inside in
// their order; the body (a centred square) reads the broadcast mean.
// CHECK-LABEL: func.func @channels(
// CHECK-SAME: %[[X:.*]]: memref<8x4x6x5xf32>, %[[M:.*]]: memref<1x4x1x1xf32>, %[[ACC:.*]]: memref<4xf32>
// CHECK: scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK:   %[[INIT:.*]] = memref.load %[[ACC]][%[[C]]] : memref<4xf32>
// CHECK:   %[[S:.*]] = scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[INIT]]) -> (f32) {
// CHECK:     scf.for %[[H:.*]] = {{.*}} iter_args(%[[A1:.*]] = %[[A0]]) -> (f32) {
// CHECK:       scf.for %[[W:.*]] = {{.*}} iter_args(%[[A2:.*]] = %[[A1]]) -> (f32) {
// CHECK:         %[[V:.*]] = memref.load %[[X]][%[[N]], %[[C]], %[[H]], %[[W]]] : memref<8x4x6x5xf32>
// CHECK-NOT:     affine.apply
// CHECK:         %[[MU:.*]] = memref.load %[[M]][%{{.*}}, %[[C]], %{{.*}}, %{{.*}}] : memref<1x4x1x1xf32>
// CHECK:         %[[D:.*]] = arith.subf %[[V]], %[[MU]] : f32
// CHECK:         %[[SQ:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK:         %[[R:.*]] = arith.addf %[[SQ]], %[[A2]] fastmath<reassoc> : f32
// CHECK:         scf.yield %[[R]] : f32
// CHECK:   memref.store %[[S]], %[[ACC]][%[[C]]] : memref<4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @channels(%x: memref<8x4x6x5xf32>, %m: memref<1x4x1x1xf32>, %acc: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id4, #chan4, #chan],
                  iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x, %m : memref<8x4x6x5xf32>, memref<1x4x1x1xf32>) outs(%acc : memref<4xf32>) {
  ^bb0(%in: f32, %mu: f32, %out: f32):
    %d = arith.subf %in, %mu : f32
    %sq = arith.mulf %d, %d : f32
    %0 = arith.addf %sq, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// A row maximum keeps its combiner and its index arithmetic (linalg.index
// becomes the loop's index); fast-math flags already there stay.
// CHECK-LABEL: func.func @rows(
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK:   scf.for %[[J:.*]] = {{.*}} iter_args(%[[A:.*]] = %{{.*}}) -> (f32) {
// CHECK:     %[[F:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK:     arith.maximumf %{{.*}}, %[[A]] fastmath<reassoc,nnan> : f32
func.func @rows(%x: memref<16x64xf32>, %acc: memref<16xf32>) {
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %j = linalg.index 1 : index
    %f = arith.index_cast %j : index to i64
    %g = arith.sitofp %f : i64 to f32
    %p = arith.addf %in, %g : f32
    %0 = arith.maximumf %p, %out fastmath<nnan> : f32
    linalg.yield %0 : f32
  }
  return
}

// A full reduction has no parallel loop: one serial loop, vectorized.
// CHECK-LABEL: func.func @total(
// CHECK-NOT: scf.parallel
// CHECK: %[[T:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i64) {
// CHECK:   arith.addi
// CHECK: memref.store %[[T]], %{{.*}}[] : memref<i64>
func.func @total(%x: memref<1000xi64>, %acc: memref<i64>) {
  linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%x : memref<1000xi64>) outs(%acc : memref<i64>) {
  ^bb0(%in: i64, %out: i64):
    %0 = arith.addi %in, %out : i64
    linalg.yield %0 : i64
  }
  return
}

// A dynamic batch: the parallel loop's extent is the buffer's dimension.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[X:.*]]: memref<?x64xf32>, %[[ROWS:.*]]: memref<?xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x64xf32>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[N]])
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C64]]
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK-NOT: linalg.generic
func.func @dynamic(%x: memref<?x64xf32>, %rows: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%rows : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// Left to linalg: a last loop that is parallel (a column sum, whose loads
// and stores vectorize across the output) and a body that uses the
// accumulator twice.
// CHECK-LABEL: func.func @stay(
// CHECK-NOT: scf.
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
func.func @stay(%x: memref<16x64xf32>, %cols: memref<64xf32>, %rows: memref<16xf32>) {
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%cols : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32>) outs(%rows : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %big = arith.cmpf ogt, %in, %out : f32
    %0 = arith.select %big, %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}
