// The outermost parallel loop of a kernel with enough work becomes a call to
// a dispatch (which the code generator turns into locus_parallel_for) and a
// body over [lo, hi) of its first dimension; small loops and loops over
// buffers bare-pointer calls cannot pass stay.
// RUN: locus-opt %s --locus-parallelize=min-work=1000 | FileCheck %s

// CHECK: module attributes {locus.parallel_bodies = ["big_par0"]}
// CHECK-LABEL: func.func @big(
// CHECK-SAME: %[[A:.*]]: memref<64x100xf32>, %[[B:.*]]: memref<64x100xf32>
// CHECK: %[[N:.*]] = arith.constant 64 : index
// CHECK: call @big_par0__dispatch(%[[A]], %[[B]], %[[N]]) : (memref<64x100xf32>, memref<64x100xf32>, index) -> ()
// CHECK-NOT: scf.parallel
// CHECK-LABEL: func.func @small(
// CHECK: scf.parallel
// CHECK-LABEL: func.func @strided(
// CHECK: scf.parallel
// CHECK: func.func private @big_par0(%{{.*}}: memref<64x100xf32>, %{{.*}}: memref<64x100xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[LO]], %{{.*}}) to (%[[HI]], %{{.*}})
// CHECK: math.exp
// CHECK: func.func private @big_par0__dispatch(memref<64x100xf32>, memref<64x100xf32>, index)
func.func @big(%a: memref<64x100xf32>, %b: memref<64x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c100) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<64x100xf32>
    %y = math.exp %x : f32
    memref.store %y, %b[%i, %j] : memref<64x100xf32>
  }
  return
}

func.func @small(%a: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<4x8xf32>
  }
  return
}

func.func @strided(%a: memref<64x100xf32, strided<[200, 1]>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c100) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<64x100xf32, strided<[200, 1]>>
  }
  return
}
