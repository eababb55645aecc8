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

// Two results that folded to one value (kernels joined side by side on a
// GPU: `x * 0.5` and `x * 0.5 * 1.0`): the second is a copy, so each result
// has a buffer of its own, and buffer-results-to-out-params with
// hoist-static-allocs (which crashed on a value returned twice) takes it.
// CHECK-LABEL: func.func @returned_twice
// CHECK: %[[M:.*]] = arith.mulf %arg0, %arg0
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[M]] : tensor<3x5xf32>) outs(%[[E]] : tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK: return %[[M]], %[[C]] :
func.func @returned_twice(%a: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = arith.mulf %a, %a : tensor<3x5xf32>
  return %0, %0 : tensor<3x5xf32>, tensor<3x5xf32>
}
