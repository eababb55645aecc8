// 16-bit values, computed on in f32: an op that computes in f32 only gets
// its bf16 and f16 operands cast up (once per value) and its result cast
// back, one rounding per op; casts, layout ops, selection and products keep
// 16-bit operands; an f32 graph is left alone.
// RUN: locus-opt %s --locus-widen-16bit | FileCheck %s

// CHECK-LABEL: locus.graph @halves
// CHECK: %x = locus.input "x"
// CHECK-NEXT: %[[XF:.*]] = locus.cast %x to f32 : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK-NEXT: %[[EF:.*]] = locus.exp %[[XF]] : tensor<4x4xf32>
// CHECK-NEXT: %[[E:.*]] = locus.cast %[[EF]] to bf16 : tensor<4x4xf32> -> tensor<4x4xbf16>
// CHECK-NEXT: %[[T:.*]] = locus.transpose %[[E]] [1, 0] : tensor<4x4xbf16> -> tensor<4x4xbf16>
// CHECK-NEXT: %[[P:.*]] = locus.matmul %[[T]], %x : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
// The loss will read the product in f32: cast once, right after it.
// CHECK-NEXT: %[[PF:.*]] = locus.cast %[[P]] to f32
// The sum reads %x again: the same f32 copy. Its result, a reduction of a
// 16-bit value, is rounded back to bf16.
// CHECK-NEXT: %[[SF:.*]] = locus.sum %[[XF]] axes [0] : tensor<4x4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = locus.cast %[[SF]] to bf16
// A loss gives f32: nothing to cast back.
// CHECK: %[[L:.*]] = locus.mse_loss %[[PF]], %{{.*}} mean : tensor<4x4xf32> -> tensor<f32>
// CHECK-NEXT: locus.output "s" = %[[S]]
// CHECK-NEXT: locus.output "loss" = %[[L]]
locus.graph @halves {
  %x = locus.input "x" : tensor<4x4xbf16>
  %e = locus.exp %x : tensor<4x4xbf16>
  %t = locus.transpose %e [1, 0] : tensor<4x4xbf16> -> tensor<4x4xbf16>
  %p = locus.matmul %t, %x : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %s = locus.sum %x axes [0] : tensor<4x4xbf16> -> tensor<4xbf16>
  %y = locus.input "y" : tensor<4x4xbf16>
  %l = locus.mse_loss %p, %y mean : tensor<4x4xbf16> -> tensor<f32>
  locus.output "s" = %s : tensor<4xbf16>
  locus.output "loss" = %l : tensor<f32>
}

// CHECK-LABEL: locus.graph @full
// CHECK-NOT: locus.cast
locus.graph @full {
  %x = locus.input "x" : tensor<4xf32>
  %e = locus.exp %x : tensor<4xf32>
  locus.output "e" = %e : tensor<4xf32>
}
