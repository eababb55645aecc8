// The cast up of a 16-bit product's result on a GPU leaves the product's
// kernel (cuBLAS then writes the 16-bit result itself): it goes below the
// reshapes it went through, one cast per reader, each in its reader's
// kernel. Not after a linear (its bias is a launch anyway), not when a
// reader is a library call, not on the CPU. And an elementwise op that
// alone reads one result of a batch norm's gradient joins its kernel,
// whose other results (read after it) stay results of the kernel; so does
// a rounding to 16 bits of a value read after it too.
// RUN: locus-opt %s -split-input-file --locus-fuse-kernels | FileCheck %s

// The weight-gradient product x^T dy, its f32 copy read three times (a
// layer norm's backward), one of them through a reshape.
// CHECK-LABEL: locus.graph @product_readers
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[P:.*]] = locus.kernel on <cuda:0> -> tensor<16x8xbf16> {
// CHECK-NEXT: locus.transpose
// CHECK-NEXT: %[[M:.*]] = locus.matmul
// CHECK-NEXT: locus.yield %[[M]] : tensor<16x8xbf16>
// The relu, the neg and the column sum run side by side, each with its
// own cast.
// CHECK: locus.kernel on <cuda:0> -> tensor<16x8xf32>, tensor<16x8xf32>, tensor<8xf32> {
// CHECK-NEXT: %[[C1:.*]] = locus.cast %[[P]] to f32
// CHECK-NEXT: %[[C2:.*]] = locus.cast %[[P]] to f32
// CHECK-NEXT: locus.relu %[[C2]]
// CHECK-NEXT: locus.neg %[[C1]]
// CHECK-NEXT: %[[R:.*]] = locus.reshape %[[P]] [2, 8, 8] {{.*}} -> tensor<2x8x8xbf16>
// CHECK-NEXT: %[[C3:.*]] = locus.cast %[[R]] to f32 {{.*}} -> tensor<2x8x8xf32>
// CHECK-NEXT: locus.sum %[[C3]] axes [0, 1]
locus.graph @product_readers {
  %x = locus.input "x" : tensor<32x16xbf16> on <cuda:0>
  %dy = locus.input "dy" : tensor<32x8xbf16> on <cuda:0>
  %xt = locus.transpose %x [1, 0] {locus.device = #locus.device<cuda:0>} : tensor<32x16xbf16> -> tensor<16x32xbf16>
  %p = locus.matmul %xt, %dy {locus.device = #locus.device<cuda:0>} : tensor<16x32xbf16>, tensor<32x8xbf16> -> tensor<16x8xbf16>
  %c = locus.cast %p to f32 {locus.device = #locus.device<cuda:0>} : tensor<16x8xbf16> -> tensor<16x8xf32>
  %a = locus.relu %c {locus.device = #locus.device<cuda:0>} : tensor<16x8xf32>
  %b = locus.neg %c {locus.device = #locus.device<cuda:0>} : tensor<16x8xf32>
  %r = locus.reshape %c [2, 8, 8] {locus.device = #locus.device<cuda:0>} : tensor<16x8xf32> -> tensor<2x8x8xf32>
  %s = locus.sum %r axes [0, 1] {locus.device = #locus.device<cuda:0>} : tensor<2x8x8xf32> -> tensor<8xf32>
  locus.output "a" = %a : tensor<16x8xf32>
  locus.output "b" = %b : tensor<16x8xf32>
  locus.output "s" = %s : tensor<8xf32>
}

// -----

// One reader, a reduction (which takes no producer's kernel in): the cast
// goes to its kernel.
// CHECK-LABEL: locus.graph @one_reader
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[P:.*]] = locus.kernel on <cuda:0> -> tensor<4x4xbf16> {
// CHECK-NEXT: %[[M:.*]] = locus.matmul
// CHECK-NEXT: locus.yield %[[M]]
// CHECK: locus.kernel on <cuda:0> -> tensor<4xf32> {
// CHECK-NEXT: %[[C:.*]] = locus.cast %[[P]] to f32
// CHECK-NEXT: locus.sum %[[C]]
locus.graph @one_reader {
  %a = locus.input "a" : tensor<4x4xbf16> on <cuda:0>
  %p = locus.matmul %a, %a {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %c = locus.cast %p to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16> -> tensor<4x4xf32>
  %s = locus.sum %c axes [0] {locus.device = #locus.device<cuda:0>} : tensor<4x4xf32> -> tensor<4xf32>
  locus.output "s" = %s : tensor<4xf32>
}

// -----

// Left in the product's kernel: after a linear; a reader that is a
// product; on the CPU.
// CHECK-LABEL: locus.graph @kept
// CHECK: locus.kernel on <cuda:0> -> tensor<4x4xf32> {
// CHECK-NEXT: locus.linear
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0> -> tensor<4x4xf32> {
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4x4xf32> {
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.yield
locus.graph @kept {
  %a = locus.input "a" : tensor<4x4xbf16> on <cuda:0>
  %w = locus.input "w" : tensor<4x4xbf16> on <cuda:0>
  %bias = locus.input "bias" : tensor<4xbf16> on <cuda:0>
  %f = locus.input "f" : tensor<4x4xf32> on <cuda:0>
  %h = locus.input "h" : tensor<4x4xbf16>
  %l = locus.linear %a, %w, %bias {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16>, tensor<4x4xbf16>, tensor<4xbf16> -> tensor<4x4xbf16>
  %lc = locus.cast %l to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16> -> tensor<4x4xf32>
  %le = locus.exp %lc {locus.device = #locus.device<cuda:0>} : tensor<4x4xf32>
  %le2 = locus.neg %lc {locus.device = #locus.device<cuda:0>} : tensor<4x4xf32>
  %p = locus.matmul %a, %a {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %pc = locus.cast %p to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16> -> tensor<4x4xf32>
  %pp = locus.matmul %pc, %f {locus.device = #locus.device<cuda:0>} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %pe = locus.exp %pc {locus.device = #locus.device<cuda:0>} : tensor<4x4xf32>
  %q = locus.matmul %h, %h : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %qc = locus.cast %q to f32 : tensor<4x4xbf16> -> tensor<4x4xf32>
  %qe = locus.exp %qc : tensor<4x4xf32>
  %qn = locus.neg %qc : tensor<4x4xf32>
  locus.output "le" = %le : tensor<4x4xf32>
  locus.output "le2" = %le2 : tensor<4x4xf32>
  locus.output "pp" = %pp : tensor<4x4xf32>
  locus.output "pe" = %pe : tensor<4x4xf32>
  locus.output "qe" = %qe : tensor<4x4xf32>
  locus.output "qn" = %qn : tensor<4x4xf32>
}

// -----

// The rounding of a batch norm's input gradient joins the gradient's
// kernel; the weight and bias gradients, read after it, are the kernel's
// results beside it, the f32 input gradient is none.
// CHECK-LABEL: locus.graph @rounded_gradient
// CHECK: %[[K:.*]]:3 = locus.kernel on <cuda:0> -> tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xbf16> {
// CHECK-NEXT: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = locus.batch_norm_train_grad
// CHECK-NEXT: %[[R:.*]] = locus.cast %[[DX]] to bf16
// CHECK-NEXT: locus.yield %[[DW]], %[[DB]], %[[R]]
// CHECK: locus.output "dx" = %[[K]]#2
// CHECK: locus.output "dw" = %[[K]]#0
// CHECK: locus.output "db" = %[[K]]#1
locus.graph @rounded_gradient {
  %dy = locus.input "dy" : tensor<2x3x4x4xf32> on <cuda:0>
  %x = locus.input "x" : tensor<2x3x4x4xf32> on <cuda:0>
  %mean = locus.input "mean" : tensor<3xf32> on <cuda:0>
  %var = locus.input "var" : tensor<3xf32> on <cuda:0>
  %w = locus.input "w" : tensor<3xf32> on <cuda:0>
  %dx, %dw, %db = locus.batch_norm_train_grad %dy, %x, %mean, %var, %w eps 1.0e-05 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>, tensor<3xf32>
  %r = locus.cast %dx to bf16 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xbf16>
  locus.output "dx" = %r : tensor<2x3x4x4xbf16>
  locus.output "dw" = %dw : tensor<3xf32>
  locus.output "db" = %db : tensor<3xf32>
}

// -----

// Not when another result is read before the rounding, by an op that
// cannot join (a reduction): the kernel would stand after its reader.
// CHECK-LABEL: locus.graph @read_before
// CHECK: %[[G:.*]]:3 = locus.kernel on <cuda:0> -> tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32> {
// CHECK-NEXT: locus.batch_norm_train_grad
// CHECK-NEXT: locus.yield
// (The sum and the rounding then share a kernel, side by side.)
// CHECK: locus.kernel on <cuda:0> -> tensor<f32>, tensor<2x3x4x4xbf16> {
// CHECK-NEXT: locus.sum %[[G]]#1
// CHECK-NEXT: locus.cast %[[G]]#0
locus.graph @read_before {
  %dy = locus.input "dy" : tensor<2x3x4x4xf32> on <cuda:0>
  %x = locus.input "x" : tensor<2x3x4x4xf32> on <cuda:0>
  %mean = locus.input "mean" : tensor<3xf32> on <cuda:0>
  %var = locus.input "var" : tensor<3xf32> on <cuda:0>
  %w = locus.input "w" : tensor<3xf32> on <cuda:0>
  %dx, %dw, %db = locus.batch_norm_train_grad %dy, %x, %mean, %var, %w eps 1.0e-05 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>, tensor<3xf32>
  %n = locus.sum %dw axes [0] {locus.device = #locus.device<cuda:0>} : tensor<3xf32> -> tensor<f32>
  %r = locus.cast %dx to bf16 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xbf16>
  locus.output "dx" = %r : tensor<2x3x4x4xbf16>
  locus.output "n" = %n : tensor<f32>
  locus.output "db" = %db : tensor<3xf32>
}

// -----

// A rounding to 16 bits of a value that another op reads after it joins
// the value's kernel, which gives both (a softmax's probabilities, read by
// a product in bf16 and by the backward in f32). Not when the other reader
// stands before it.
// CHECK-LABEL: locus.graph @rounded_probabilities
// CHECK: %[[K:.*]]:2 = locus.kernel on <cuda:0> -> tensor<4x16xf32>, tensor<4x16xbf16> {
// CHECK-NEXT: %[[P:.*]] = locus.softmax
// CHECK-NEXT: %[[R:.*]] = locus.cast %[[P]] to bf16
// CHECK-NEXT: locus.yield %[[P]], %[[R]]
// CHECK: locus.matmul %[[K]]#1
// CHECK: locus.exp %[[K]]#0
// (The earlier reader sums columns: it does not go row by row, so the
// softmax does not join it either.)
// CHECK-LABEL: locus.graph @read_first
// CHECK: %[[S:.*]] = locus.kernel on <cuda:0> -> tensor<4x16xf32> {
// CHECK-NEXT: locus.softmax
// CHECK-NEXT: locus.yield
// CHECK: locus.sum %[[S]]
// CHECK: locus.cast %[[S]] to bf16
locus.graph @rounded_probabilities {
  %s = locus.input "s" : tensor<4x16xf32> on <cuda:0>
  %v = locus.input "v" : tensor<16x8xbf16> on <cuda:0>
  %p = locus.softmax %s axis 1 {locus.device = #locus.device<cuda:0>} : tensor<4x16xf32>
  %r = locus.cast %p to bf16 {locus.device = #locus.device<cuda:0>} : tensor<4x16xf32> -> tensor<4x16xbf16>
  %o = locus.matmul %r, %v {locus.device = #locus.device<cuda:0>} : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  %e = locus.exp %p {locus.device = #locus.device<cuda:0>} : tensor<4x16xf32>
  locus.output "o" = %o : tensor<4x8xbf16>
  locus.output "e" = %e : tensor<4x16xf32>
}

// -----

locus.graph @read_first {
  %s = locus.input "s" : tensor<4x16xf32> on <cuda:0>
  %v = locus.input "v" : tensor<16x8xbf16> on <cuda:0>
  %p = locus.softmax %s axis 1 {locus.device = #locus.device<cuda:0>} : tensor<4x16xf32>
  %e = locus.sum %p axes [0] {locus.device = #locus.device<cuda:0>} : tensor<4x16xf32> -> tensor<16xf32>
  %r = locus.cast %p to bf16 {locus.device = #locus.device<cuda:0>} : tensor<4x16xf32> -> tensor<4x16xbf16>
  %o = locus.matmul %r, %v {locus.device = #locus.device<cuda:0>} : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  locus.output "o" = %o : tensor<4x8xbf16>
  locus.output "e" = %e : tensor<16xf32>
}

// -----

// A cast that only a reshape read is gone once it reads below it (no
// kernel writes an f32 copy nobody reads).
// CHECK-LABEL: locus.graph @sole_reshape
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[P:.*]] = locus.kernel on <cuda:0> -> tensor<4x4xbf16> {
// CHECK: locus.kernel on <cuda:0> -> tensor<8xf32> {
// CHECK-NEXT: %[[R:.*]] = locus.reshape %[[P]] [2, 8] {{.*}} -> tensor<2x8xbf16>
// CHECK-NEXT: %[[C:.*]] = locus.cast %[[R]] to f32
// CHECK-NEXT: locus.sum %[[C]]
locus.graph @sole_reshape {
  %a = locus.input "a" : tensor<4x4xbf16> on <cuda:0>
  %p = locus.matmul %a, %a {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %c = locus.cast %p to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x4xbf16> -> tensor<4x4xf32>
  %r = locus.reshape %c [2, 8] {locus.device = #locus.device<cuda:0>} : tensor<4x4xf32> -> tensor<2x8xf32>
  %s = locus.sum %r axes [0] {locus.device = #locus.device<cuda:0>} : tensor<2x8xf32> -> tensor<8xf32>
  locus.output "s" = %s : tensor<8xf32>
}

// -----

// Once the rounding joined the batch norm's gradient, an op reading the
// rounding joins no more when a reader of the weight gradient stands
// before it: the kernel would move past that reader.
// CHECK-LABEL: locus.graph @no_join_past_a_reader
// CHECK: %[[K:.*]]:3 = locus.kernel on <cuda:0> -> tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xbf16> {
// CHECK-NEXT: locus.batch_norm_train_grad
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0> -> tensor<f32>, tensor<2x3x4x4xbf16> {
// CHECK-NEXT: locus.sum %[[K]]#0
// CHECK-NEXT: locus.neg %[[K]]#2
locus.graph @no_join_past_a_reader {
  %dy = locus.input "dy" : tensor<2x3x4x4xf32> on <cuda:0>
  %x = locus.input "x" : tensor<2x3x4x4xf32> on <cuda:0>
  %mean = locus.input "mean" : tensor<3xf32> on <cuda:0>
  %var = locus.input "var" : tensor<3xf32> on <cuda:0>
  %w = locus.input "w" : tensor<3xf32> on <cuda:0>
  %dx, %dw, %db = locus.batch_norm_train_grad %dy, %x, %mean, %var, %w eps 1.0e-05 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>, tensor<3xf32>
  %r = locus.cast %dx to bf16 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xbf16>
  %s = locus.sum %dw axes [0] {locus.device = #locus.device<cuda:0>} : tensor<3xf32> -> tensor<f32>
  %n = locus.neg %r {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xbf16>
  locus.output "n" = %n : tensor<2x3x4x4xbf16>
  locus.output "s" = %s : tensor<f32>
  locus.output "db" = %db : tensor<3xf32>
}

// -----

// A batch norm in training, the updates of its running statistics (each
// assigned before the next op) and the ReLU after it: one kernel. Each op
// joins while the kernel's roots are read only after it (or assigned:
// the assigns move after the kernel).
// CHECK-LABEL: locus.graph @running_statistics
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[K:.*]]:3 = locus.kernel on <cuda:0>
// CHECK-NEXT: locus.batch_norm_train
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.yield
// CHECK-NEXT: }
// CHECK-NEXT: locus.assign %rm = %[[K]]#0
// CHECK-NEXT: locus.assign %rv = %[[K]]#1
// CHECK: locus.sum %[[K]]#2
locus.graph @running_statistics {
  %x = locus.input "x" : tensor<2x3x4x4xf32> on <cuda:0>
  %w = locus.input "w" : tensor<3xf32> on <cuda:0>
  %b = locus.input "b" : tensor<3xf32> on <cuda:0>
  %rm = locus.state "rm" buffer : tensor<3xf32> init <full(0.0)> on <cuda:0>
  %rv = locus.state "rv" buffer : tensor<3xf32> init <full(1.0)> on <cuda:0>
  %y, %mean, %var = locus.batch_norm_train %x, %w, %b eps 1.0e-05 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>, tensor<3xf32>
  %m2 = locus.mul %rm, %mean {locus.device = #locus.device<cuda:0>} : tensor<3xf32>
  locus.assign %rm = %m2 : tensor<3xf32>, tensor<3xf32>
  %v2 = locus.mul %rv, %var {locus.device = #locus.device<cuda:0>} : tensor<3xf32>
  locus.assign %rv = %v2 : tensor<3xf32>, tensor<3xf32>
  %r = locus.relu %y {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>
  %s = locus.sum %r axes [0, 1, 2, 3] {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32> -> tensor<f32>
  locus.output "s" = %s : tensor<f32>
}

// -----

// Not past a reader that stands before the joining op: the ReLU's result
// is summed before the later update, which then stays a kernel of its own.
// (The sum and the update then share a kernel, side by side.)
// CHECK-LABEL: locus.graph @reader_between
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[K:.*]]:3 = locus.kernel on <cuda:0>
// CHECK-NEXT: locus.batch_norm_train
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0> -> tensor<f32>, tensor<3xf32> {
// CHECK-NEXT: locus.sum %[[K]]#2
// CHECK-NEXT: locus.mul %rv, %[[K]]#1
locus.graph @reader_between {
  %x = locus.input "x" : tensor<2x3x4x4xf32> on <cuda:0>
  %w = locus.input "w" : tensor<3xf32> on <cuda:0>
  %b = locus.input "b" : tensor<3xf32> on <cuda:0>
  %rv = locus.input "rv" : tensor<3xf32> on <cuda:0>
  %y, %mean, %var = locus.batch_norm_train %x, %w, %b eps 1.0e-05 {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>, tensor<3xf32>
  %r = locus.relu %y {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32>
  %s = locus.sum %r axes [0, 1, 2, 3] {locus.device = #locus.device<cuda:0>} : tensor<2x3x4x4xf32> -> tensor<f32>
  %v2 = locus.mul %rv, %var {locus.device = #locus.device<cuda:0>} : tensor<3xf32>
  locus.output "s" = %s : tensor<f32>
  locus.output "v2" = %v2 : tensor<3xf32>
  locus.output "m" = %mean : tensor<3xf32>
}
