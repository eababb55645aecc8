// --locus-autodiff over 16-bit values: the seed in the loss's type, a
// loss's gradient computed in f32 from its 16-bit operands and rounded once
// (a GradScaler's 2^16 is no f16), a gather's gradient summed in f32 and
// rounded once, and softmax's backward in f32, rounded once.
// RUN: locus-opt %s -split-input-file --locus-autodiff='wrt=x' | FileCheck %s

// CHECK-LABEL: locus.graph @bf16_loss
// CHECK: %[[SEED:.*]] = locus.constant dense<1.000000e+00> : tensor<bf16>
// CHECK: %[[G:.*]] = locus.mul %{{.*}}, %{{.*}} : tensor<4xbf16>
// CHECK: locus.output "x.grad" = %[[G]] : tensor<4xbf16>
locus.graph @bf16_loss {
  %x = locus.input "x" : tensor<4xbf16>
  %e = locus.exp %x : tensor<4xbf16>
  %loss = locus.sum %e axes [0] : tensor<4xbf16> -> tensor<bf16>
  locus.output "loss" = %loss : tensor<bf16>
}

// -----

// CHECK-LABEL: locus.graph @mse_of_halves
// CHECK: locus.output "loss"
// CHECK: %[[GL:.*]] = locus.mul %{{.*}} : tensor<f32>
// CHECK: %[[XW:.*]] = locus.cast %x to f32
// CHECK: %[[YW:.*]] = locus.cast %y to f32
// CHECK: %[[D:.*]] = locus.sub %[[XW]], %[[YW]] : tensor<3x2xf32>
// CHECK: %[[N:.*]] = locus.mul %[[D]], %{{.*}} : tensor<3x2xf32>
// CHECK: %[[GB:.*]] = locus.broadcast %[[GL]] [3, 2]
// CHECK: %[[G:.*]] = locus.mul %[[N]], %[[GB]] : tensor<3x2xf32>
// CHECK: %[[GH:.*]] = locus.cast %[[G]] to f16 : tensor<3x2xf32> -> tensor<3x2xf16>
// CHECK: locus.output "x.grad" = %[[GH]] : tensor<3x2xf16>
locus.graph @mse_of_halves {
  %x = locus.input "x" : tensor<3x2xf16>
  %y = locus.input "y" : tensor<3x2xf16>
  %l = locus.mse_loss %x, %y mean : tensor<3x2xf16> -> tensor<f32>
  %two = locus.constant dense<2.0> : tensor<f32>
  %loss = locus.mul %l, %two : tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}

// -----

// CHECK-LABEL: locus.graph @gather_bf16
// CHECK: %[[UP:.*]] = locus.cast %{{.*}} to f32 : tensor<4x3xbf16> -> tensor<4x3xf32>
// CHECK: %[[SUM:.*]] = locus.gather_grad %[[UP]], %ids axis 0 extent 5 : tensor<4x3xf32>, tensor<4xi64> -> tensor<5x3xf32>
// CHECK: %[[G:.*]] = locus.cast %[[SUM]] to bf16 : tensor<5x3xf32> -> tensor<5x3xbf16>
// CHECK: locus.output "x.grad" = %[[G]] : tensor<5x3xbf16>
locus.graph @gather_bf16 {
  %x = locus.input "x" : tensor<5x3xbf16>
  %ids = locus.input "ids" : tensor<4xi64>
  %r = locus.gather %x, %ids axis 0 : tensor<5x3xbf16>, tensor<4xi64> -> tensor<4x3xbf16>
  %loss = locus.sum %r axes [0, 1] : tensor<4x3xbf16> -> tensor<bf16>
  locus.output "loss" = %loss : tensor<bf16>
}

// -----

// CHECK-LABEL: locus.graph @softmax_bf16
// CHECK: %[[S:.*]] = locus.softmax %x axis 1 : tensor<2x4xbf16>
// CHECK: locus.output "loss"
// CHECK: %[[GY:.*]] = locus.mul %{{.*}}, %w : tensor<2x4xbf16>
// CHECK: %[[GW:.*]] = locus.cast %[[GY]] to f32
// CHECK: %[[YW:.*]] = locus.cast %[[S]] to f32
// CHECK: %[[P:.*]] = locus.mul %[[GW]], %[[YW]] : tensor<2x4xf32>
// CHECK: %[[DOT:.*]] = locus.sum %[[P]] axes [1] keepdim : tensor<2x4xf32> -> tensor<2x1xf32>
// CHECK: %[[DB:.*]] = locus.broadcast %[[DOT]]
// CHECK: %[[DIFF:.*]] = locus.sub %[[GW]], %[[DB]] : tensor<2x4xf32>
// CHECK: %[[R:.*]] = locus.mul %[[DIFF]], %[[YW]] : tensor<2x4xf32>
// CHECK: %[[RB:.*]] = locus.cast %[[R]] to bf16 : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK: locus.output "x.grad" = %[[RB]] : tensor<2x4xbf16>
locus.graph @softmax_bf16 {
  %x = locus.input "x" : tensor<2x4xbf16>
  %w = locus.input "w" : tensor<2x4xbf16>
  %s = locus.softmax %x axis 1 : tensor<2x4xbf16>
  %m = locus.mul %s, %w : tensor<2x4xbf16>
  %loss = locus.sum %m axes [0, 1] : tensor<2x4xbf16> -> tensor<bf16>
  locus.output "loss" = %loss : tensor<bf16>
}
