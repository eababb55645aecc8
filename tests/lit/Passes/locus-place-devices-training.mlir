// State a training step updates: the update (locus.assign) goes where its
// state is and is no reader of it; the state follows its readers
// (prefer-gpu) and, updated at every step, is copied per step (not once at
// load) where another device reads it.
// RUN: locus-opt %s -split-input-file --locus-place-devices='policy=prefer-gpu' --locus-insert-transfers | FileCheck %s
// RUN: locus-opt %s -split-input-file --locus-place-devices='policy=cpu' --locus-insert-transfers | FileCheck %s --check-prefix=CPU

// CHECK-LABEL: locus.graph @sgd
// CHECK: %w = locus.state "w" parameter {{.*}}locus.device = #locus.device<cuda:0>
// CHECK: locus.sgd {{.*}}locus.device = #locus.device<cuda:0>
// CHECK: locus.assign %w = {{.*}}locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = colocated>
// CPU-LABEL: locus.graph @sgd
// CPU: locus.assign %w = {{.*}}locus.device = #locus.device<cpu>
locus.graph @sgd {
  %x = locus.input "x" : tensor<4xf32>
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  %lr = locus.state "lr" buffer : tensor<f32> init <full(0.1)>
  %m = locus.mul %x, %w : tensor<4xf32>
  %s = locus.sum %m axes [0] : tensor<4xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
  %n = locus.sgd %w, %x lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
  locus.assign %w = %n : tensor<4xf32>, tensor<4xf32>
}

// -----

// A state pinned to the CPU, updated on the GPU: the new value comes back
// with a copy per step, and the GPU's copy of the state is made per step
// too (load_time would leave it stale after the first update).
// CHECK-LABEL: locus.graph @pinned
// CHECK: %[[W:.*]] = locus.state "w" parameter {{.*}}on <cpu>
// CHECK: locus.copy <cpu> to <cuda:0>, %[[W]] {
// CHECK-NOT: load_time
// CHECK-SAME: }
// CHECK: %[[N:.*]] = locus.sgd
// CHECK: %[[BACK:.*]] = locus.copy <cuda:0> to <cpu>, %[[N]]
// CHECK: locus.assign %[[W]] = %[[BACK]]
locus.graph @pinned {
  %x = locus.input "x" : tensor<4xf32> on <cuda:0>
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)> on <cpu>
  %lr = locus.state "lr" buffer : tensor<f32> init <full(0.1)>
  %wg = locus.to <cuda:0>, %w : tensor<4xf32>
  %n = locus.sgd %wg, %x lr %lr momentum 0.0 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
  %s = locus.sum %n axes [0] : tensor<4xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
  locus.assign %w = %n : tensor<4xf32>, tensor<4xf32>
}
