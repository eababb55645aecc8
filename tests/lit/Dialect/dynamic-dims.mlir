// Graphs with dynamic sizes: the verifier finds the dims of every value
// (the inputs' locus.dims, a reshape's or broadcast's own, every other op's
// by its shape rule) and refuses what cannot hold for every size up to the
// bounds.
// RUN: locus-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK: #[[X:.+]] = affine_map<()[s0] -> (s0, 784)>
// CHECK: #[[F:.+]] = affine_map<()[s0] -> (s0 * 10)>
// CHECK-LABEL: locus.graph @mlp
// CHECK-SAME: locus.symbols = {{\[\["batch", 256\]\]}}
// CHECK: locus.input "x" {locus.dims = #[[X]]}
// CHECK: locus.reshape %{{.*}} [2560] {locus.dims = #[[F]]}
locus.graph @mlp attributes {locus.symbols = [["batch", 256]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 784)>} : tensor<256x784xf32>
  %t = locus.input "t" {locus.dims = affine_map<()[s0] -> (s0)>} : tensor<256xi64>
  %w = locus.state "w" parameter : tensor<10x784xf32> init <full(0.0)>
  %b = locus.state "b" parameter : tensor<10xf32> init <full(0.0)>
  %y = locus.linear %x, %w, %b : tensor<256x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<256x10xf32>
  %r = locus.relu %y : tensor<256x10xf32>
  %s = locus.sum %r axes [0] : tensor<256x10xf32> -> tensor<10xf32>
  %l = locus.cross_entropy %r, %t mean : tensor<256x10xf32>, tensor<256xi64> -> tensor<f32>
  // [batch, 10] -> [10*batch], given and found
  %f = locus.reshape %r [2560] {locus.dims = affine_map<()[s0] -> (s0 * 10)>} : tensor<256x10xf32> -> tensor<2560xf32>
  %f2 = locus.reshape %r [2560] : tensor<256x10xf32> -> tensor<2560xf32>
  // [batch, 10] + [10*batch] reshaped back: [batch, 10]
  %r2 = locus.reshape %f2 [256, 10] : tensor<2560xf32> -> tensor<256x10xf32>
  %sum2 = locus.add %r, %r2 : tensor<256x10xf32>
  // keeps batch, expands the 1
  %col = locus.sum %r axes [1] keepdim : tensor<256x10xf32> -> tensor<256x1xf32>
  %wide = locus.broadcast %col [256, 10] : tensor<256x1xf32> -> tensor<256x10xf32>
  %sum3 = locus.add %wide, %sum2 : tensor<256x10xf32>
  // along a static axis: [batch, 20]
  %c = locus.concat %r, %r axis 1 : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x20xf32>
  // a window of the static axis, the batch whole: [batch, 4]
  %w4 = locus.slice %c offsets [0, 3] sizes [256, 4] strides [1, 2] : tensor<256x20xf32> -> tensor<256x4xf32>
  // and its gradient: [batch, 20]
  %g20 = locus.slice_grad %w4 shape [256, 20] offsets [0, 3] strides [1, 2] : tensor<256x4xf32> -> tensor<256x20xf32>
  %c2 = locus.add %c, %g20 : tensor<256x20xf32>
  // a draw for a value of dynamic shape takes its dims: [batch, 20]
  %step = locus.state "step" buffer : tensor<f32> init <full(0.0)>
  %u = locus.random uniform [256, 20] seed 3 step %step {locus.dims = affine_map<()[s0] -> (s0, 20)>} : tensor<f32> -> tensor<256x20xf32>
  %c3 = locus.mul %c2, %u : tensor<256x20xf32>
  locus.output "loss" = %l : tensor<f32>
  locus.output "s" = %s : tensor<10xf32>
  locus.output "f" = %f : tensor<2560xf32>
  locus.output "c" = %c3 : tensor<256x20xf32>
}

// -----

// Two sizes that agree at their bounds are still two sizes.
locus.graph @g attributes {locus.symbols = [["batch", 64], ["seq", 64]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0, s1] -> (s0, 8)>} : tensor<64x8xf32>
  %b = locus.input "b" {locus.dims = affine_map<()[s0, s1] -> (s1, 8)>} : tensor<64x8xf32>
  // expected-error@+1 {{'locus.add' op operands [batch, 8], [seq, 8] agree at the bounds but not for every size of the dynamic dimensions}}
  %c = locus.add %a, %b : tensor<64x8xf32>
}

// -----

// A dynamic size against a static one that equals its bound.
locus.graph @g attributes {locus.symbols = [["batch", 4]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<4x4xf32>
  %w = locus.state "w" parameter : tensor<4x4xf32> init <full(0.0)>
  // expected-error@+1 {{operands [4, 4], [batch, 4] agree at the bounds}}
  %c = locus.matmul %w, %a : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
}

// -----

// Reshapes without dims: the dynamic sizes go where the sizes at the bounds
// say, when exactly one way fits.
locus.graph @g attributes {locus.symbols = [["batch", 4], ["seq", 4]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0, s1] -> (s0, s1)>} : tensor<4x4xf32>
  %f = locus.reshape %a [16] : tensor<4x4xf32> -> tensor<16xf32>
  // expected-error@+1 {{cannot reshape [batch*seq] into [4, 4] for every size: the dynamic sizes fit more than one way}}
  %g = locus.reshape %f [4, 4] : tensor<16xf32> -> tensor<4x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0)>} : tensor<8xf32>
  // expected-error@+1 {{cannot reshape [batch] into [2, 2, 2] for every size: no output dimensions take the dynamic sizes}}
  %g = locus.reshape %a [2, 2, 2] : tensor<8xf32> -> tensor<2x2x2xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8], ["seq", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0, s1] -> (s0, s1)>} : tensor<8x8xf32>
  // expected-error@+1 {{reshapes [batch, seq] into [batch^2]: not the same number of elements for every size}}
  %f = locus.reshape %a [64] {locus.dims = affine_map<()[s0, s1] -> (s0 * s0)>} : tensor<8x8xf32> -> tensor<64xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  // expected-error@+1 {{dims [batch, 4] do not give its type's shape [9, 4] at the bounds}}
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<9x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  // expected-error@+1 {{an input's dimension is a size or a single dynamic size, not 2*batch}}
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0 * 2)>} : tensor<16xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  // expected-error@+1 {{must give each dimension as a product of the graph's 1 dynamic sizes and a constant}}
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0 + 1)>} : tensor<9xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["seq", 16]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (1, 2, s0, 4)>} : tensor<1x2x16x4xf32>
  %w = locus.state "w" parameter : tensor<2x2x3x3xf32> init <full(0.0)>
  // expected-error@+1 {{dimension 2 of its result depends on a dynamic size other than as a product of them}}
  %c = locus.conv2d %a, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x2x16x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x14x2xf32>
}

// -----

// Windows of fixed size in a dynamic dimension are static: rows 1 to 2
// from the start, the last row from the end; the gradient of the last row
// is given the sliced value's dims, and adds to a value of those.
// CHECK-LABEL: locus.graph @windows
locus.graph @windows attributes {locus.symbols = [["batch", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  %s = locus.slice %a offsets [1, 0] sizes [2, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<2x4xf32>
  %l = locus.slice %a offsets [-1, 0] sizes [1, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<1x4xf32>
  %x = locus.input "x" : tensor<1x4xf32>
  %y = locus.add %l, %x : tensor<1x4xf32>
  %g = locus.slice_grad %y shape [8, 4] offsets [-1, 0] strides [1, 1] {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<1x4xf32> -> tensor<8x4xf32>
  %z = locus.add %g, %a : tensor<8x4xf32>
  locus.output "s" = %s : tensor<2x4xf32>
  locus.output "z" = %z : tensor<8x4xf32>
}

// -----

// A window past the bound does not fit, from the end either.
locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  // expected-error@+2 {{'locus.slice' op window offsets [-9, 0] sizes [1, 4] strides [1, 1] does not fit in input [8, 4] (dimension 0)}}
  // expected-error@+1 {{failed to infer returned types}}
  %s = locus.slice %a offsets [-9, 0] sizes [1, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<1x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %g = locus.input "g" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  // expected-error@+1 {{'locus.slice_grad' op writes a window of [batch, 4] along its dimension 0, which is dynamic: a slice's window is static there}}
  %s = locus.slice_grad %g shape [16, 4] offsets [0, 0] strides [2, 1] : tensor<8x4xf32> -> tensor<16x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %g = locus.input "g" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  // expected-error@+1 {{'locus.slice_grad' op writes [batch, 4] into [16, 4]: a dynamic dimension of the window is the whole's}}
  %s = locus.slice_grad %g shape [16, 4] offsets [0, 0] strides [1, 1] {locus.dims = affine_map<()[s0] -> (16, 4)>} : tensor<8x4xf32> -> tensor<16x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  // expected-error@+1 {{'locus.concat' op joins [batch, 4] along dimension 0, which is dynamic: not supported yet (a concatenation along a static dimension is)}}
  %c = locus.concat %a, %a axis 0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  // expected-error@+1 {{'locus.relu' op locus.dims is given only on inputs, reshapes, broadcasts, windows, slice gradients and random draws; other ops' dims follow from their operands}}
  %r = locus.relu %a {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["batch", 8]]} {
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  %w = locus.state "w" parameter : tensor<8x4xf32> init <full(0.0)>
  // expected-error@+1 {{writes a value of dynamic shape [batch, 4] into state, whose shape is static}}
  locus.assign %w = %a : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// expected-error@+1 {{dynamic size 'batch' has bound 0; a bound is at least 1}}
locus.graph @g attributes {locus.symbols = [["batch", 0]]} {
}

// -----

// expected-error@+1 {{dynamic size 'b' is declared twice}}
locus.graph @g attributes {locus.symbols = [["b", 2], ["b", 3]]} {
}

// -----

// expected-error@+1 {{locus.symbols must be a list of [name, bound] pairs}}
locus.graph @g attributes {locus.symbols = ["batch"]} {
}

// -----

locus.graph @g {
  // expected-error@+1 {{has locus.dims but its graph declares no dynamic size (locus.symbols)}}
  %a = locus.input "a" {locus.dims = affine_map<()[s0] -> (s0)>} : tensor<8xf32>
}

// -----

// A convolution's input gradient takes the batch of the output's gradient
// (its input's shape is an attribute, at the bounds); no other dimension
// of it may be dynamic (this graph verifies; the next does not).
// CHECK-LABEL: locus.graph @input_grad
// CHECK: locus.conv2d_input_grad
locus.graph @input_grad attributes {locus.symbols = [["batch", 8]]} {
  %g = locus.input "g" {locus.dims = affine_map<()[s0] -> (s0, 4, 6, 6)>} : tensor<8x4x6x6xf32>
  %w = locus.state "w" parameter : tensor<4x2x3x3xf32> init <full(0.5)>
  %dx = locus.conv2d_input_grad %g, %w input_shape [8, 2, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<8x4x6x6xf32>, tensor<4x2x3x3xf32> -> tensor<8x2x6x6xf32>
  locus.output "dx" = %dx : tensor<8x2x6x6xf32>
}

// -----

locus.graph @g attributes {locus.symbols = [["c", 4]]} {
  %g = locus.input "g" {locus.dims = affine_map<()[s0] -> (2, s0, 6, 6)>} : tensor<2x4x6x6xf32>
  %w = locus.state "w" parameter : tensor<4x2x3x3xf32> init <full(0.5)>
  // expected-error@+1 {{'locus.conv2d_input_grad' op takes [2, c, 6, 6]: of a convolution's dimensions only the batch may be dynamic}}
  %dx = locus.conv2d_input_grad %g, %w input_shape [2, 2, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x6x6xf32>, tensor<4x2x3x3xf32> -> tensor<2x2x6x6xf32>
}

// -----

// narrow_to's window takes a dynamic dimension from offset 0 of a static
// one; a window at another offset is refused.
locus.graph @g attributes {locus.symbols = [["seq", 8]]} {
  %m = locus.constant dense<1.0> : tensor<9x8xf32>
  // expected-error@+1 {{'locus.slice' op takes the window [seq, 8] of [9, 8]: a window with dims takes each dynamic dimension from offset 0 of a static one, and keeps the others}}
  %w = locus.slice %m offsets [1, 0] sizes [8, 8] strides [1, 1] {locus.dims = affine_map<()[s0] -> (s0, 8)>} : tensor<9x8xf32> -> tensor<8x8xf32>
}
