// --locus-autodiff's errors; on failure the graph is left as it was.
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-autodiff
// RUN: not locus-opt %s -split-input-file --locus-autodiff='optimizer=rmsprop' 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: unknown optimizer 'rmsprop'; expected none, sgd or adam
// RUN: not locus-opt %s -split-input-file --locus-autodiff='wrt=nope' 2>&1 | FileCheck %s --check-prefix=WRT
// WRT: wrt= names 'nope', which is no float input or state of the graph
// RUN: not locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd wrt=x' 2>&1 | FileCheck %s --check-prefix=WRTOPT
// WRTOPT: wrt= is for gradients (optimizer=none); an optimizer updates every parameter

// expected-error@+1 {{has no output named 'loss' to differentiate}}
locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  locus.output "y" = %w : tensor<4xf32>
}

// -----

locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  // expected-error@+1 {{the loss must be a scalar float value of graph @g, got 'tensor<4xf32>'}}
  %e = locus.exp %w : tensor<4xf32>
  locus.output "loss" = %e : tensor<4xf32>
}

// -----

// expected-error@+1 {{has no parameter state to differentiate with respect to}}
locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  %s = locus.sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
}


// -----

// A gradient op on the path has no gradient of its own.
locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  // expected-error@+1 {{'locus.slice_grad' op has no gradient: reverse-mode autodiff covers the forward ops of the dialect, not gradients, optimizer steps or kernels}}
  %d = locus.slice_grad %w shape [8] offsets [0] strides [2] : tensor<4xf32> -> tensor<8xf32>
  %s = locus.sum %d axes [0] : tensor<8xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
}

// -----

// expected-error@+1 {{already has an output named 'w.grad'}}
locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  %s = locus.sum %w axes [0] : tensor<4xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
  locus.output "w.grad" = %w : tensor<4xf32>
}

// -----

// A loss that reads a batch norm's batch statistics has no gradient
// through them.
locus.graph @g {
  %x = locus.input "x" : tensor<4x3x2x2xf32>
  %w = locus.state "w" parameter : tensor<3xf32> init <full(1.0)>
  %b = locus.state "b" parameter : tensor<3xf32> init <full(0.0)>
  // expected-error@+1 {{'locus.batch_norm_train' op has no gradient through its batch statistics: the loss reads the batch mean or variance (only the normalized result is differentiated)}}
  %y, %mean, %var = locus.batch_norm_train %x, %w, %b eps 1.0e-05 : tensor<4x3x2x2xf32>, tensor<3xf32>
  %s = locus.sum %mean axes [0] : tensor<3xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
}
