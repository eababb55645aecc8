// exp, tanh and erf of f32 become arithmetic (no math op left for libm),
// their fused multiply-adds contractable multiplies and adds; log, f64 and
// ops on other types stay.
// RUN: locus-opt %s --locus-vector-math | FileCheck %s

// CHECK-LABEL: func.func @approximated(
// CHECK-SAME: %[[X:.*]]: f32
// CHECK-NOT: math.exp
// CHECK-NOT: math.fma
// CHECK: math.floor
// CHECK: arith.mulf {{.*}} fastmath<contract> : f32
// CHECK: arith.addf {{.*}} fastmath<contract> : f32
// CHECK: arith.fptosi
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.fma
// CHECK: return
func.func @approximated(%x: f32) -> (f32, f32, f32) {
  %e = math.exp %x : f32
  %t = math.tanh %x : f32
  %r = math.erf %x : f32
  return %e, %t, %r : f32, f32, f32
}

// Vectors of f32 too.
// CHECK-LABEL: func.func @vectors(
// CHECK-NOT: math.exp
// CHECK: arith.mulf {{.*}} fastmath<contract> : vector<8xf32>
// CHECK: return
func.func @vectors(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  return %e : vector<8xf32>
}

// Left: log (of an approximated exp too), f64, sin, and a multiply-add
// the graph had before.
// CHECK-LABEL: func.func @kept(
// CHECK: math.log %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.tanh %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f32
// CHECK: math.fma %{{.*}} : f32
// CHECK-NOT: math.exp %{{.*}} : f32
// CHECK: math.log %{{.*}} : f32
func.func @kept(%x: f32, %d: f64) -> (f32, f64, f64, f32, f32, f32) {
  %l = math.log %x : f32
  %e = math.exp %d : f64
  %t = math.tanh %d : f64
  %s = math.sin %x : f32
  %f = math.fma %x, %x, %x : f32
  %ex = math.exp %x : f32
  %le = math.log %ex : f32
  return %l, %e, %t, %s, %f, %le : f32, f64, f64, f32, f32, f32
}
