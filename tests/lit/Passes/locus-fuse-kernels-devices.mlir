// Ops on different devices never share a kernel: the copy between them ends
// one and the next starts on the other device.
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=strict devices=cpu,cuda:0},locus-insert-transfers,locus-fuse-kernels))' | FileCheck %s

// CHECK-LABEL: locus.graph @moves
// CHECK-SAME: locus.kernels = 2
// CHECK: locus.copy <cpu> to <cuda:0>
// CHECK-NEXT: locus.kernel on <cuda:0> -> tensor<8xf32> {
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.exp
// CHECK-NEXT: locus.yield
// CHECK: locus.copy <cuda:0> to <cpu>
// CHECK-NEXT: locus.kernel on <cpu> -> tensor<8xf32> {
// CHECK-NEXT: locus.neg
// CHECK-NEXT: locus.yield
locus.graph @moves {
  %x = locus.input "x" : tensor<8xf32>
  %0 = locus.to <cuda:0>, %x : tensor<8xf32>
  %1 = locus.relu %0 : tensor<8xf32>
  %2 = locus.exp %1 : tensor<8xf32>
  %3 = locus.to <cpu>, %2 : tensor<8xf32>
  %4 = locus.neg %3 : tensor<8xf32>
  locus.output "y" = %4 : tensor<8xf32>
}

// On a GPU, the optimizer's steps (one per parameter) join one kernel,
// which --locus-map-to-gpu runs as one launch; the assigns of the earlier
// steps' results move after it (a state takes its new value after the
// run). A step whose result something other than an assign reads before
// the next step starts a new kernel. On the CPU each step stays a kernel.
// CHECK-LABEL: locus.graph @steps
// CHECK-SAME: locus.kernels = 4
// CHECK: %[[K:.*]]:3 = locus.kernel on <cuda:0> -> tensor<4xf32>, tensor<8xf32>, tensor<8xf32> {
// CHECK-NEXT: locus.sgd %w1
// CHECK-NEXT: locus.sgd %w2
// CHECK-NEXT: locus.sgd %w3
// CHECK-NEXT: locus.yield
// CHECK-NEXT: }
// CHECK-NEXT: locus.assign %w1 = %[[K]]#0
// CHECK-NEXT: locus.assign %w2 = %[[K]]#1
// CHECK: locus.assign %w3 = %[[K]]#2
// CHECK: locus.kernel on <cuda:0> -> tensor<8xf32> {
// CHECK-NEXT: locus.sgd %w4
// CHECK: locus.kernel on <cpu> -> tensor<4xf32> {
// CHECK-NEXT: locus.sgd %c1
// CHECK: locus.kernel on <cpu> -> tensor<4xf32> {
// CHECK-NEXT: locus.sgd %c2
locus.graph @steps {
  %g4 = locus.input "g4" : tensor<4xf32>
  %g8 = locus.input "g8" : tensor<8xf32>
  %lr = locus.constant dense<0.1> : tensor<f32>
  %lrg = locus.to <cuda:0>, %lr : tensor<f32>
  %g4g = locus.to <cuda:0>, %g4 : tensor<4xf32>
  %g8g = locus.to <cuda:0>, %g8 : tensor<8xf32>
  %w1 = locus.state "w1" parameter : tensor<4xf32> init <full(1.0)> on <cuda:0>
  %w2 = locus.state "w2" parameter : tensor<8xf32> init <full(1.0)> on <cuda:0>
  %w3 = locus.state "w3" parameter : tensor<8xf32> init <full(1.0)> on <cuda:0>
  %w4 = locus.state "w4" parameter : tensor<8xf32> init <full(1.0)> on <cuda:0>
  %c1 = locus.state "c1" parameter : tensor<4xf32> init <full(1.0)>
  %c2 = locus.state "c2" parameter : tensor<4xf32> init <full(1.0)>
  %0 = locus.sgd %w1, %g4g lr %lrg momentum 0.0 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
  locus.assign %w1 = %0 : tensor<4xf32>, tensor<4xf32>
  %1 = locus.sgd %w2, %g8g lr %lrg momentum 0.0 weight_decay 0.0 : tensor<8xf32> -> tensor<8xf32>
  locus.assign %w2 = %1 : tensor<8xf32>, tensor<8xf32>
  %2 = locus.sgd %w3, %g8g lr %lrg momentum 0.0 weight_decay 0.0 : tensor<8xf32> -> tensor<8xf32>
  locus.assign %w3 = %2 : tensor<8xf32>, tensor<8xf32>
  %3 = locus.to <cpu>, %2 : tensor<8xf32>
  locus.output "w3" = %3 : tensor<8xf32>
  %4 = locus.sgd %w4, %g8g lr %lrg momentum 0.0 weight_decay 0.0 : tensor<8xf32> -> tensor<8xf32>
  locus.assign %w4 = %4 : tensor<8xf32>, tensor<8xf32>
  %5 = locus.sgd %c1, %g4 lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
  locus.assign %c1 = %5 : tensor<4xf32>, tensor<4xf32>
  %6 = locus.sgd %c2, %g4 lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
  locus.assign %c2 = %6 : tensor<4xf32>, tensor<4xf32>
}
