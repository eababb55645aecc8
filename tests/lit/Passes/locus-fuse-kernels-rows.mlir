// On a GPU, kernels that go row by row (elementwise ops, reductions over
// the last axis, softmaxes along it) merge when one's result is read only
// by another: a layer norm is one kernel there (its centred input, read by
// its variance and by its output, kept it three kernels apart), which
// --locus-map-to-gpu then runs as one launch. On the CPU nothing changes.
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

// Not merged: the centred input is also an output of the graph, so its
// kernel must write it; and a reduction over the first axis does not go
// row by row, so the kernel of the column sums (which the product joins)
// takes no other. Only the square, read by the variance alone, joins the
// variance's kernel.
// CHECK-LABEL: locus.graph @read_outside
// CHECK-SAME: locus.kernels = 3
// CHECK: locus.kernel on <cuda:0>
// CHECK: locus.sub
// CHECK: locus.yield
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.mean
// CHECK-NEXT: locus.broadcast
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.sum
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

// On a GPU too, an elementwise kernel that a full reduction alone reads
// joins it as its prologue (a reduction over every axis does not go row by
// row, so this is not mergeRows): GradScaler's check of a gradient the
// update also reads.
// CHECK-LABEL: locus.graph @prologue_gpu
// CHECK-SAME: locus.kernels = 3
// CHECK: %[[G:.*]] = locus.kernel on <cuda:0> -> tensor<64x32xf32> {
// CHECK-NEXT: locus.matmul
// CHECK: locus.kernel on <cuda:0> -> tensor<f32> {
// CHECK-NEXT: locus.mul %[[G]]
// CHECK-NEXT: locus.sum
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0> -> tensor<64x32xf32> {
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
