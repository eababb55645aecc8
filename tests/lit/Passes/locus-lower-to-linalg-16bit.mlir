// A linear of 16-bit values with a bias and a 16-bit result: the product
// sums into zeros and the bias is added in f32 where the sum is rounded
// (one pass after the product), not written out for the product to
// accumulate onto. An f32 linear accumulates onto the bias.
// RUN: locus-opt %s -split-input-file --locus-lower-to-linalg | FileCheck %s

// CHECK-LABEL: locus.graph @rounded
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%b : tensor<3xbf16>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x3xf32>)
// CHECK: %[[P:.*]] = linalg.matmul_transpose_b ins(%x, %w : tensor<8x4xbf16>, tensor<3x4xbf16>) outs(%[[Z]] : tensor<8x3xf32>)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[B]] : tensor<8x3xf32>, tensor<3xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<8x3xbf16>)
// CHECK: arith.truncf
locus.graph @rounded {
  %x = locus.input "x" : tensor<8x4xbf16>
  %w = locus.input "w" : tensor<3x4xbf16>
  %b = locus.input "b" : tensor<3xbf16>
  %y = locus.linear %x, %w, %b : tensor<8x4xbf16>, tensor<3x4xbf16>, tensor<3xbf16> -> tensor<8x3xbf16>
  locus.output "y" = %y : tensor<8x3xbf16>
}

// -----

// CHECK-LABEL: locus.graph @f32_result
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x3xf32>)
// CHECK: linalg.matmul_transpose_b ins(%x, %w : tensor<8x4xf32>, tensor<3x4xf32>) outs(%[[INIT]] : tensor<8x3xf32>)
// CHECK-NOT: arith.addf
locus.graph @f32_result {
  %x = locus.input "x" : tensor<8x4xf32>
  %w = locus.input "w" : tensor<3x4xf32>
  %b = locus.input "b" : tensor<3xf32>
  %y = locus.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  locus.output "y" = %y : tensor<8x3xf32>
}
