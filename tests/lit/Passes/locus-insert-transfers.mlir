// Copies where placement put a reader on another device than its value: one
// per (value, destination), shared; state and constants copied at load.
// RUN: locus-opt %s -split-input-file --locus-insert-transfers | FileCheck %s

#cpu = #locus.device<cpu>
#gpu = #locus.device<cuda:0>
#why = #locus.placement<kind = policy>

// 3 copies: x (1 MiB per step), w (4 MiB at load), the sum (4 bytes per step).
// CHECK-LABEL: locus.graph @shared attributes {{{.*}}locus.transfers = {bytes_at_load = 4194304 : i64, bytes_per_step = 1048580 : i64, copies = 3 : i64, load_time_copies = 1 : i64}
// CHECK: %x = locus.input "x"
// CHECK-NEXT: %[[X:.*]] = locus.copy <cpu> to <cuda:0>, %x {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = colocated>} : tensor<256x1024xf32>
// CHECK: %w = locus.state "w"
// CHECK-NEXT: %[[W:.*]] = locus.copy load_time <cpu> to <cuda:0>, %w
// CHECK: %[[L:.*]] = locus.linear %[[X]], %[[W]]
// CHECK: %[[R:.*]] = locus.relu %[[X]]
// CHECK: %[[S:.*]] = locus.sum %[[L]]
// CHECK-NEXT: %[[SC:.*]] = locus.copy <cuda:0> to <cpu>, %[[S]]
// CHECK: locus.output "s" = %[[SC]]
// CHECK-NOT: locus.copy
locus.graph @shared attributes {locus.policy = "prefer-gpu", locus.targets = [#cpu, #gpu]} {
  %x = locus.input "x" {locus.device = #cpu, locus.placement = #why} : tensor<256x1024xf32>
  %w = locus.state "w" parameter {locus.device = #cpu, locus.placement = #why} : tensor<1024x1024xf32> init <full(0.0)>
  %0 = locus.linear %x, %w {locus.device = #gpu, locus.placement = #why} : tensor<256x1024xf32>, tensor<1024x1024xf32> -> tensor<256x1024xf32>
  %1 = locus.relu %x {locus.device = #gpu, locus.placement = #why} : tensor<256x1024xf32>
  %2 = locus.sum %0 axes [0, 1] {locus.device = #gpu, locus.placement = #why} : tensor<256x1024xf32> -> tensor<f32>
  locus.output "s" = %2 {locus.device = #cpu, locus.placement = #why} : tensor<f32>
  locus.output "r" = %1 {locus.device = #gpu, locus.placement = #why} : tensor<256x1024xf32>
}

// -----

#cpu = #locus.device<cpu>
#gpu = #locus.device<cuda:0>
#pin = #locus.placement<kind = pinned>

// The user's moves: a .to() to where the value is vanishes; the others become
// copies (a move is a copy the user wrote, so strict allows it).
// CHECK-LABEL: locus.graph @moves
// CHECK: %x = locus.input "x"
// CHECK-NEXT: %[[G:.*]] = locus.copy <cpu> to <cuda:0>, %x
// CHECK-NOT: locus.to
// CHECK: locus.relu %[[G]]
// CHECK: locus.neg %x
locus.graph @moves attributes {locus.policy = "strict", locus.targets = [#cpu, #gpu]} {
  %x = locus.input "x" {locus.device = #cpu, locus.placement = #pin} : tensor<4xf32>
  %g = locus.to <cuda:0>, %x {locus.device = #gpu, locus.placement = #pin} : tensor<4xf32>
  %same = locus.to <cpu>, %x {locus.device = #cpu, locus.placement = #pin} : tensor<4xf32>
  %0 = locus.relu %g {locus.device = #gpu, locus.placement = #pin} : tensor<4xf32>
  %1 = locus.neg %same {locus.device = #cpu, locus.placement = #pin} : tensor<4xf32>
  locus.output "a" = %0 {locus.device = #gpu, locus.placement = #pin} : tensor<4xf32>
  locus.output "b" = %1 {locus.device = #cpu, locus.placement = #pin} : tensor<4xf32>
}
