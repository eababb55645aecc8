// A kernel that comes down to one of its arguments returns a copy of it;
// other results are left alone.
// RUN: locus-opt %s --pass-pipeline='builtin.module(func.func(locus-copy-forwarded-results))' | FileCheck %s

// CHECK-LABEL: func.func @forwards
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%arg0 : tensor<3x5xf32>) outs(%[[E]] : tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK: return %[[C]], %[[M:.*]] :
func.func @forwards(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = arith.mulf %a, %b : tensor<3x5xf32>
  return %a, %0 : tensor<3x5xf32>, tensor<3x5xf32>
}

// CHECK-LABEL: func.func @computes
// CHECK-NOT: linalg.copy
func.func @computes(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = arith.negf %a : tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
