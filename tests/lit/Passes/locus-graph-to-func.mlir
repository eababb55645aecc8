// A graph placed on the CPU becomes one function: inputs then state as
// arguments, outputs as results; moves from the CPU to itself disappear.
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-graph-to-func | FileCheck %s

// CHECK-LABEL: func.func @g(
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-SAME: attributes {locus.inputs = ["x", "y"], locus.outputs = ["r", "s"], locus.states = ["w"]}
// CHECK-NEXT: %[[M:.*]] = locus.mul %[[X]], %[[W]]
// CHECK-NEXT: return %[[M]], %[[Y]]
// CHECK-NOT: locus.graph
locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
  %y = locus.input "y" : tensor<4xf32>
  %0 = locus.mul %x, %w : tensor<4xf32>
  %1 = locus.to <cpu>, %0 : tensor<4xf32>
  locus.output "r" = %1 : tensor<4xf32>
  locus.output "s" = %y : tensor<4xf32>
}

// -----

locus.graph @gpu attributes {locus.policy = "prefer-gpu"} {
  %x = locus.input "x" {locus.device = #locus.device<cpu>} : tensor<4xf32>
  // expected-error@+1 {{'locus.relu' op runs on cuda:0; only a graph placed on the CPU becomes one function}}
  %0 = locus.relu %x {locus.device = #locus.device<cuda:0>} : tensor<4xf32>
  locus.output "r" = %0 : tensor<4xf32>
}
