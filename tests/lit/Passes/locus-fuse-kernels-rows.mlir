// On a GPU, kernels that go row by row (elementwise ops, reductions over
// the last axis, softmaxes along it, reshapes that keep rows whole) merge
// into the first such kernel that reads their result, when every other
// reader stands after that one: a layer norm is one kernel there (its
// centred input, read by its variance and by its output, kept it three
// kernels apart), and so is its backward pass, which --locus-map-to-gpu
// then runs as one launch each. On the CPU nothing changes.
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=strict devices=cpu,cuda:0},locus-insert-transfers,locus-fuse-kernels))' | FileCheck %s

// CHECK-LABEL: locus.graph @layer_norm_gpu
// CHECK-SAME: locus.kernels = 1
// CHECK: locus.kernel on <cuda:0> -> tensor<8x64xf32> {
// CHECK-COUNT-2: locus.mean
// CHECK: locus.rsqrt
// CHECK: locus.yield
locus.graph @layer_norm_gpu {
  %x = locus.input "x" : tensor<8x64xf32> on <cuda:0>
  %m = locus.mean %x axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %mb = locus.broadcast %m [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %c = locus.sub %x, %mb : tensor<8x64xf32>
  %c2 = locus.mul %c, %c : tensor<8x64xf32>
  %v = locus.mean %c2 axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %r = locus.rsqrt %v : tensor<8x1xf32>
  %rb = locus.broadcast %r [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %y = locus.mul %c, %rb : tensor<8x64xf32>
  locus.output "y" = %y : tensor<8x64xf32>
}

// The same on the CPU: two kernels, as the tree rule makes them, with the
// square, which the variance alone reads, taken in as the variance's
// prologue.
// CHECK-LABEL: locus.graph @layer_norm_cpu
// CHECK-SAME: locus.kernels = 2
locus.graph @layer_norm_cpu {
  %x = locus.input "x" : tensor<8x64xf32>
  %m = locus.mean %x axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %mb = locus.broadcast %m [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %c = locus.sub %x, %mb : tensor<8x64xf32>
  %c2 = locus.mul %c, %c : tensor<8x64xf32>
  %v = locus.mean %c2 axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %r = locus.rsqrt %v : tensor<8x1xf32>
  %rb = locus.broadcast %r [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %y = locus.mul %c, %rb : tensor<8x64xf32>
  locus.output "y" = %y : tensor<8x64xf32>
}

// The centred input is also an output of the graph: the kernel that
// computes it with the variance gives it too. A reduction over the first
// axis does not go row by row, so the kernel of the column sums (which the
// product joins) takes no other.
// CHECK-LABEL: locus.graph @read_outside
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[K:.*]]:2 = locus.kernel on <cuda:0>
// CHECK: %[[C:.*]] = locus.sub
// CHECK: locus.mul %[[C]], %[[C]]
// CHECK-NEXT: locus.mean
// CHECK-NEXT: %[[V:.*]] = locus.broadcast
// CHECK-NEXT: locus.yield %[[C]], %[[V]]
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.sum %[[K]]#0
// CHECK: locus.output "c" = %[[K]]#0
locus.graph @read_outside {
  %x = locus.input "x" : tensor<8x64xf32> on <cuda:0>
  %m = locus.mean %x axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %mb = locus.broadcast %m [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %c = locus.sub %x, %mb : tensor<8x64xf32>
  %c2 = locus.mul %c, %c : tensor<8x64xf32>
  %v = locus.mean %c2 axes [1] keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %s = locus.sum %c axes [0] keepdim : tensor<8x64xf32> -> tensor<1x64xf32>
  %sb = locus.broadcast %s [8, 64] : tensor<1x64xf32> -> tensor<8x64xf32>
  %vb = locus.broadcast %v [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %y = locus.mul %sb, %vb : tensor<8x64xf32>
  locus.output "c" = %c : tensor<8x64xf32>
  locus.output "y" = %y : tensor<8x64xf32>
}

// A layer norm's input gradient, as autodiff writes it: dy * w is read by
// a row sum and by the elementwise op after it, that op's result by a
// second row sum and by the last op, and the row sums come back through
// reshapes to [8, 1]. One kernel for all of it; the column sums of the
// weight's and bias's gradients stay apart (they read dy by columns), in
// one kernel side by side.
// CHECK-LABEL: locus.graph @layer_norm_backward
// CHECK-SAME: locus.kernels = 2
// CHECK: locus.kernel on <cuda:0> -> tensor<64xf32>, tensor<64xf32> {
// CHECK-NEXT: locus.sum %dy axes [0]
// CHECK-NEXT: locus.mul %dy, %c
// CHECK-NEXT: locus.sum
// CHECK: locus.kernel on <cuda:0> -> tensor<8x64xf32> {
// CHECK-COUNT-2: locus.sum {{.*}} axes [1]
// CHECK: locus.yield
locus.graph @layer_norm_backward {
  %dy = locus.input "dy" : tensor<8x64xf32> on <cuda:0>
  %c = locus.input "c" : tensor<8x64xf32> on <cuda:0>
  %r = locus.input "r" : tensor<8x1xf32> on <cuda:0>
  %w = locus.input "w" : tensor<64xf32> on <cuda:0>
  %db = locus.sum %dy axes [0] : tensor<8x64xf32> -> tensor<64xf32>
  %dyc = locus.mul %dy, %c : tensor<8x64xf32>
  %dw = locus.sum %dyc axes [0] : tensor<8x64xf32> -> tensor<64xf32>
  %wb = locus.broadcast %w [8, 64] : tensor<64xf32> -> tensor<8x64xf32>
  %t = locus.mul %dy, %wb : tensor<8x64xf32>
  %tc = locus.mul %t, %c : tensor<8x64xf32>
  %s = locus.sum %tc axes [1] : tensor<8x64xf32> -> tensor<8xf32>
  %sr = locus.reshape %s [8, 1] : tensor<8xf32> -> tensor<8x1xf32>
  %sb = locus.broadcast %sr [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %rb = locus.broadcast %r [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %u = locus.mul %t, %rb : tensor<8x64xf32>
  %v = locus.mul %sb, %c : tensor<8x64xf32>
  %d = locus.sub %u, %v : tensor<8x64xf32>
  %n = locus.sum %d axes [1] : tensor<8x64xf32> -> tensor<8xf32>
  %nr = locus.reshape %n [8, 1] : tensor<8xf32> -> tensor<8x1xf32>
  %nb = locus.broadcast %nr [8, 64] : tensor<8x1xf32> -> tensor<8x64xf32>
  %dx = locus.sub %d, %nb : tensor<8x64xf32>
  locus.output "dx" = %dx : tensor<8x64xf32>
  locus.output "dw" = %dw : tensor<64xf32>
  locus.output "db" = %db : tensor<64xf32>
}

// Not merged: the first reader of the square sums its columns, so the
// square's kernel stays (the row sum after it may not take it: the column
// sum would then read a value its kernel gives only later; the column sum
// joins the square's kernel instead, side by side). A state's update
// keeps its kernel where it is too. A reshape that regroups rows ([8, 64]
// as [16, 32]) does not go row by row.
// CHECK-LABEL: locus.graph @not_merged
// CHECK-SAME: locus.kernels = 6
// CHECK: locus.kernel on <cuda:0> -> tensor<8x64xf32>, tensor<64xf32> {
// CHECK-NEXT: %[[Q:.*]] = locus.mul %x, %x
// CHECK-NEXT: locus.sum %[[Q]] axes [0]
// CHECK: locus.kernel on <cuda:0> -> tensor<8xf32> {
// CHECK-NEXT: locus.sum {{.*}} axes [1]
// CHECK-NEXT: locus.yield
// CHECK: %[[E:.*]] = locus.kernel on <cuda:0> -> tensor<8x64xf32> {
// CHECK-NEXT: locus.exp %x
// CHECK-NEXT: locus.yield
// CHECK: locus.assign %st = %[[E]]
// CHECK: locus.kernel on <cuda:0> -> tensor<8xf32> {
// CHECK-NEXT: locus.sum %[[E]] axes [1]
// CHECK-NEXT: locus.yield
// CHECK: %[[H:.*]] = locus.kernel on <cuda:0> -> tensor<8x64xf32> {
// CHECK-NEXT: locus.tanh %x
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0> -> tensor<16xf32> {
// CHECK-NEXT: locus.reshape %[[H]] [16, 32]
// CHECK-NEXT: locus.sum
locus.graph @not_merged {
  %x = locus.input "x" : tensor<8x64xf32> on <cuda:0>
  %st = locus.state "st" buffer : tensor<8x64xf32> init <full(0.0)> on <cuda:0>
  %q = locus.mul %x, %x : tensor<8x64xf32>
  %col = locus.sum %q axes [0] : tensor<8x64xf32> -> tensor<64xf32>
  %row = locus.sum %q axes [1] : tensor<8x64xf32> -> tensor<8xf32>
  %e = locus.exp %x : tensor<8x64xf32>
  locus.assign %st = %e : tensor<8x64xf32>, tensor<8x64xf32>
  %es = locus.sum %e axes [1] : tensor<8x64xf32> -> tensor<8xf32>
  %h = locus.tanh %x : tensor<8x64xf32>
  %hr = locus.reshape %h [16, 32] : tensor<8x64xf32> -> tensor<16x32xf32>
  %hs = locus.sum %hr axes [1] : tensor<16x32xf32> -> tensor<16xf32>
  locus.output "col" = %col : tensor<64xf32>
  locus.output "row" = %row : tensor<8xf32>
  locus.output "es" = %es : tensor<8xf32>
  locus.output "hs" = %hs : tensor<16xf32>
}

// On a GPU too, an elementwise kernel that a full reduction alone reads
// joins it as its prologue (a reduction over every axis does not go row by
// row, so this is not mergeRows): GradScaler's check of a gradient the
// update also reads.
// (The check and the update then share a kernel, side by side.)
// CHECK-LABEL: locus.graph @prologue_gpu
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[G:.*]] = locus.kernel on <cuda:0> -> tensor<64x32xf32> {
// CHECK-NEXT: locus.matmul
// CHECK: locus.kernel on <cuda:0> -> tensor<f32>, tensor<64x32xf32> {
// CHECK-NEXT: locus.mul %[[G]]
// CHECK-NEXT: locus.sum
// CHECK-NEXT: locus.sub %[[G]]
locus.graph @prologue_gpu {
  %x = locus.input "x" : tensor<64x16xf32> on <cuda:0>
  %w = locus.input "w" : tensor<16x32xf32> on <cuda:0>
  %g = locus.matmul %x, %w : tensor<64x16xf32>, tensor<16x32xf32> -> tensor<64x32xf32>
  %zero = locus.constant dense<0.0> : tensor<64x32xf32>
  %z = locus.mul %g, %zero : tensor<64x32xf32>
  %found = locus.sum %z axes [0, 1] : tensor<64x32xf32> -> tensor<f32>
  %u = locus.sub %g, %g : tensor<64x32xf32>
  locus.output "found" = %found : tensor<f32>
  locus.output "u" = %u : tensor<64x32xf32>
}
