// Each kernel becomes a function and a call; constants (also through a
// load-time copy) are cloned in, empty tensors are made inside.
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=prefer-gpu devices=cpu,cuda:0},locus-insert-transfers,locus-fuse-kernels),locus-outline-kernels)' | FileCheck %s

// CHECK-LABEL: locus.graph @g
// CHECK: %[[X:.*]] = locus.input "x"
// CHECK: %[[XG:.*]] = locus.copy <cpu> to <cuda:0>, %[[X]]
// CHECK: %[[W:.*]] = locus.state "w"
// CHECK: %[[K:.*]] = func.call @g_k0_broadcast(%[[W]], %[[XG]]) {locus.device = #locus.device<cuda:0>}
// CHECK: %[[Y:.*]] = locus.copy <cuda:0> to <cpu>, %[[K]]
// CHECK: locus.output "y" = %[[Y]]
// CHECK: func.func @g_k0_broadcast(%{{.*}}: tensor<8xf32> {bufferization.writable = false}, %{{.*}}: tensor<4x8xf32> {bufferization.writable = false}) -> tensor<4x8xf32>
// CHECK-SAME: locus.device = #locus.device<cuda:0>
// CHECK-NEXT: %[[C:.*]] = locus.constant dense<5.000000e-01> : tensor<8xf32>
// CHECK-NEXT: locus.broadcast
// CHECK: locus.mul
// CHECK: locus.add
// CHECK: return
locus.graph @g {
  %x = locus.input "x" : tensor<4x8xf32>
  %w = locus.state "w" parameter : tensor<8xf32> init <full(1.0)>
  %c = locus.constant dense<0.5> : tensor<8xf32>
  %0 = locus.broadcast %w [4, 8] : tensor<8xf32> -> tensor<4x8xf32>
  %1 = locus.mul %x, %0 : tensor<4x8xf32>
  %2 = locus.broadcast %c [4, 8] : tensor<8xf32> -> tensor<4x8xf32>
  %3 = locus.add %1, %2 : tensor<4x8xf32>
  locus.output "y" = %3 : tensor<4x8xf32>
}

// -----

// An empty tensor crosses no kernel boundary: the reader makes its own.
// CHECK-LABEL: locus.graph @empty
// CHECK: %[[E:.*]] = locus.constant dense<> : tensor<4x0xf32>
// CHECK-NOT: call @empty_k0_slice
// CHECK: call @empty_k1_sum()
// CHECK: func.func @empty_k1_sum() -> tensor<4xf32>
// CHECK-NEXT: tensor.empty() : tensor<4x0xf32>
// CHECK-NEXT: locus.sum
locus.graph @empty {
  %x = locus.input "x" : tensor<4x8xf32>
  %0 = locus.slice %x offsets [0, 0] sizes [4, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<4x0xf32>
  %1 = locus.sum %0 axes [1] : tensor<4x0xf32> -> tensor<4xf32>
  locus.output "y" = %1 : tensor<4xf32>
}

// -----

// Which results the plan may write into an argument's buffer: a state the
// kernel reads and the graph assigns the result to (an update in place).
// The scaled state may; the sum read by an output may not (it shares the
// scaling's kernel, side by side: it does not read the state), nor may a
// result assigned to a state the kernel does not read.
// CHECK-LABEL: locus.graph @updates
// CHECK: func.func @updates_k0_mul
// CHECK-SAME: locus.results_may_alias = array<i64: 0, -1>
// CHECK: func.func @updates_k1_exp
// CHECK-SAME: locus.results_may_alias = array<i64: -1>
locus.graph @updates {
  %x = locus.input "x" : tensor<8xf32>
  %s = locus.state "s" buffer : tensor<8xf32> init <full(1.0)>
  %t = locus.state "t" buffer : tensor<8xf32> init <full(1.0)>
  %0 = locus.mul %s, %x : tensor<8xf32>
  locus.assign %s = %0 : tensor<8xf32>, tensor<8xf32>
  %1 = locus.sum %x axes [0] : tensor<8xf32> -> tensor<f32>
  locus.output "n" = %1 : tensor<f32>
  %2 = locus.exp %x : tensor<8xf32>
  locus.assign %t = %2 : tensor<8xf32>, tensor<8xf32>
}
