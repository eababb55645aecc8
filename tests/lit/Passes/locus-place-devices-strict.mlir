// strict: operands on different devices are an error at the op, with a note
// where each operand was made and a fix-it. Every mismatch is reported; an op
// already reported does not cause more errors downstream.
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-place-devices="policy=strict devices=cpu,cuda:0,cuda:1"

locus.graph @model_moved_data_not {
  // expected-note@+2 {{input "x" is created on cpu here}}
  // expected-note@+1 {{fix: move input "x" with .to(locus::cuda(0)) at}}
  %x = locus.input "x" : tensor<100x10xf32>
  // expected-note@+1 {{parameter "w" is created on cuda:0 here}}
  %w = locus.state "w" parameter : tensor<2x10xf32> init <full(0.0)> on <cuda:0>
  // expected-error@+1 {{'locus.linear' op has operands on different devices: input "x" is on cpu, parameter "w" is on cuda:0}}
  %0 = locus.linear %x, %w : tensor<100x10xf32>, tensor<2x10xf32> -> tensor<100x2xf32>
  %y = locus.input "y" : tensor<100x2xf32>
  // %0 was reported: this op, mixing it with the CPU's %y, is not.
  %1 = locus.mse_loss %0, %y mean : tensor<100x2xf32> -> tensor<f32>
  locus.output "loss" = %1 : tensor<f32>
}

// -----

// Two independent mistakes in one graph: both reported in one run.
locus.graph @two_mistakes {
  // expected-note@+2 {{input "a" is created on cpu here}}
  // expected-note@+1 {{fix: move input "a" with .to(locus::cuda(0))}}
  %a = locus.input "a" : tensor<4xf32>
  // expected-note@+1 {{input "b" is created on cuda:0 here}}
  %b = locus.input "b" : tensor<4xf32> on <cuda:0>
  // expected-note@+2 {{the result of .to(cuda:1) is moved to cuda:1 here}}
  // expected-note@+1 {{fix: move the result of .to(cuda:1) with .to(locus::cuda(0))}}
  %c = locus.to <cuda:1>, %a : tensor<4xf32>
  // expected-error@+1 {{has operands on different devices: input "a" is on cpu, input "b" is on cuda:0}}
  %0 = locus.add %a, %b : tensor<4xf32>
  // expected-note@+1 {{the result of locus.relu is computed on cuda:0 here}}
  %1 = locus.relu %b : tensor<4xf32>
  // expected-error@+1 {{has operands on different devices: the result of locus.relu is on cuda:0, the result of .to(cuda:1) is on cuda:1}}
  %2 = locus.mul %1, %c : tensor<4xf32>
  locus.output "r" = %2 : tensor<4xf32>
}

// -----

// Moved correctly: no error, and every op follows its operands to cuda:0.
locus.graph @moved {
  %x = locus.input "x" : tensor<100x10xf32>
  %xg = locus.to <cuda:0>, %x : tensor<100x10xf32>
  %w = locus.state "w" parameter : tensor<2x10xf32> init <full(0.0)> on <cuda:0>
  %0 = locus.linear %xg, %w : tensor<100x10xf32>, tensor<2x10xf32> -> tensor<100x2xf32>
  locus.output "y" = %0 : tensor<100x2xf32>
}
