// strict: operands on different devices are an error at the op, with a note
// where each operand was made and a fix-it that changes that read only.
// Every mismatch is reported; a reported op is placed as its fix places it,
// so the same run reports what the fixes leave wrong downstream.
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-place-devices="policy=strict devices=cpu,cuda:0,cuda:1"

locus.graph @model_moved_data_not {
  // expected-note@+1 {{input "x" is created on cpu here}}
  %x = locus.input "x" : tensor<100x10xf32>
  // expected-note@+1 {{parameter "w" is created on cuda:0 here}}
  %w = locus.state "w" parameter : tensor<2x10xf32> init <full(0.0)> on <cuda:0>
  // expected-error@+2 {{'locus.linear' op has operands on different devices: input "x" is on cpu, parameter "w" is on cuda:0}}
  // expected-note@+1 {{fix: move input "x" to cuda:0 where it is read here: add .to(locus::cuda(0)) to it at}}
  %0 = locus.linear %x, %w : tensor<100x10xf32>, tensor<2x10xf32> -> tensor<100x2xf32>
  // expected-note@+1 {{input "y" is created on cpu here}}
  %y = locus.input "y" : tensor<100x2xf32>
  // With x moved, %0 is on cuda:0: the CPU's %y is the next mistake.
  // expected-error@+3 {{has operands on different devices: the result of locus.linear is on cuda:0, input "y" is on cpu}}
  // expected-note@-5 {{the result of locus.linear is computed on cuda:0 here once the fix of its own error is applied}}
  // expected-note@+1 {{fix: move input "y" to cuda:0 where it is read here}}
  %1 = locus.mse_loss %0, %y mean : tensor<100x2xf32> -> tensor<f32>
  locus.output "loss" = %1 : tensor<f32>
}

// -----

// A parameter on the wrong device: the fix is where it is created.
locus.graph @parameter_elsewhere {
  %x = locus.input "x" : tensor<4x3xf32> on <cuda:0>
  // expected-note@+2 {{parameter "w" is created on cpu here}}
  // expected-note@+1 {{fix: create parameter "w" on cuda:0 (.device = locus::cuda(0)) at}}
  %w = locus.state "w" parameter : tensor<2x3xf32> init <full(1.0)>
  // expected-note@-4 {{input "x" is created on cuda:0 here}}
  // expected-error@+1 {{has operands on different devices: input "x" is on cuda:0, parameter "w" is on cpu}}
  %0 = locus.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  locus.output "y" = %0 : tensor<4x2xf32>
}

// -----

// Two independent mistakes in one graph: both reported in one run.
locus.graph @two_mistakes {
  // expected-note@+1 {{input "a" is created on cpu here}}
  %a = locus.input "a" : tensor<4xf32>
  // expected-note@+1 {{input "b" is created on cuda:0 here}}
  %b = locus.input "b" : tensor<4xf32> on <cuda:0>
  // expected-note@+1 {{the result of .to(cuda:1) is moved to cuda:1 here}}
  %c = locus.to <cuda:1>, %a : tensor<4xf32>
  // expected-error@+2 {{has operands on different devices: input "a" is on cpu, input "b" is on cuda:0}}
  // expected-note@+1 {{fix: move input "a" to cuda:0 where it is read here: add .to(locus::cuda(0)) to it}}
  %0 = locus.add %a, %b : tensor<4xf32>
  // expected-note@+1 {{the result of locus.relu is computed on cuda:0 here}}
  %1 = locus.relu %b : tensor<4xf32>
  // expected-error@+2 {{has operands on different devices: the result of locus.relu is on cuda:0, the result of .to(cuda:1) is on cuda:1}}
  // expected-note@+1 {{fix: move the result of .to(cuda:1) to cuda:0 where it is read here}}
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

// -----

// Ops autodiff recorded (backward locations) after a reported mistake: their
// mismatches are its consequences, and are not reported.
locus.graph @backward_after_a_mistake {
  // expected-note@+1 {{input "x" is created on cpu here}}
  %x = locus.input "x" : tensor<4x3xf32>
  // expected-note@+1 {{parameter "w" is created on cuda:0 here}}
  %w = locus.state "w" parameter : tensor<2x3xf32> init <full(1.0)> on <cuda:0>
  // expected-error@+2 {{has operands on different devices}}
  // expected-note@+1 {{fix: move input "x" to cuda:0}}
  %0 = locus.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  %g = locus.relu %0 : tensor<4x2xf32> loc(fused<"locus.backward">["model.cpp":3:1])
  %gt = locus.transpose %g [1, 0] : tensor<4x2xf32> -> tensor<2x4xf32> loc(fused<"locus.backward">["model.cpp":3:1])
  %dw = locus.matmul %gt, %x : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32> loc(fused<"locus.backward">["model.cpp":3:1])
  locus.output "w.grad" = %dw : tensor<2x3xf32>
}
