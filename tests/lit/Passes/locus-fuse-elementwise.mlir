// Elementwise generics fuse into one loop nest; a matrix product behind a
// reshape stays a linalg.matmul (MLIR's linalg-fuse-elementwise-ops would
// turn it into a generic).
// RUN: locus-opt %s --locus-lower-to-linalg --locus-fuse-elementwise | FileCheck %s

// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK: arith.mulf
// CHECK: math.tanh
// CHECK: math.exp
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @chain(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = locus.mul %a, %b : tensor<8x16xf32>
  %1 = locus.tanh %0 : tensor<8x16xf32>
  %2 = locus.exp %1 : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// A value read twice: one loop nest that computes it once per element.
// CHECK-LABEL: func.func @shared
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[E:.*]] = math.exp
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[E]]
// CHECK-NEXT: arith.addf %[[E]], %[[N]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @shared(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = locus.exp %a : tensor<8xf32>
  %1 = locus.neg %0 : tensor<8xf32>
  %2 = locus.add %0, %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
}

// CHECK-LABEL: func.func @product_behind_reshape
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
// CHECK: math.tanh
func.func @product_behind_reshape(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>) -> tensor<2x2x8xf32> {
  %0 = locus.matmul %a, %b : tensor<4x6xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
  %1 = locus.reshape %0 [2, 2, 8] : tensor<4x8xf32> -> tensor<2x2x8xf32>
  %2 = locus.tanh %1 : tensor<2x2x8xf32>
  return %2 : tensor<2x2x8xf32>
}

// A widening of 16-bit values that several ops read fuses into each of
// them (a batch norm's passes over a bf16 convolution output): no loop
// writes the f32 values out.
// CHECK-LABEL: func.func @widened
// CHECK-NOT: ins({{.*}}tensor<4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4x8xbf16>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: arith.extf
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.extf
// CHECK: math.exp
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @widened(%a: tensor<4x8xbf16>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %0 = locus.cast %a to f32 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = locus.sum %0 axes [0] : tensor<4x8xf32> -> tensor<8xf32>
  %2 = locus.exp %0 : tensor<4x8xf32>
  return %1, %2 : tensor<8xf32>, tensor<4x8xf32>
}
