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
