// The dialect's attributes round-trip, in discardable position too.
// RUN: locus-opt %s | locus-opt | FileCheck %s

// CHECK-LABEL: locus.graph @placements
locus.graph @placements {
  // CHECK: placement = #locus.placement<kind = pinned>
  %x = locus.input "x" {placement = #locus.placement<kind = pinned>} : tensor<4xf32>
  // CHECK: placement = #locus.placement<kind = cost, cpu_ns = 1200, cuda_ns = 340>
  %0 = locus.exp %x {placement = #locus.placement<kind = cost, cpu_ns = 1200, cuda_ns = 340>} : tensor<4xf32>
  // CHECK: placement = #locus.placement<kind = no_kernel, device = <cuda:0>>
  %1 = locus.log %0 {placement = #locus.placement<kind = no_kernel, device = #locus.device<cuda:0>>} : tensor<4xf32>
  // CHECK: placement = #locus.placement<kind = follows_operands>
  %2 = locus.neg %1 {placement = #locus.placement<kind = follows_operands>} : tensor<4xf32>
  // CHECK: placement = #locus.placement<kind = colocated>
  %3 = locus.neg %2 {placement = #locus.placement<kind = colocated>} : tensor<4xf32>
  // CHECK: device = #locus.device<cpu>, placement = #locus.placement<kind = soft>
  %4 = locus.neg %3 {device = #locus.device<cpu>, placement = #locus.placement<kind = soft>} : tensor<4xf32>
  locus.output "r" = %4 : tensor<4xf32>
}

// Initialiser bounds print exactly: 1/sqrt(10) survives a round trip.
// CHECK-LABEL: locus.graph @init
locus.graph @init {
  // CHECK: init <uniform(-0.31622776601683794, 0.31622776601683794), seed = 18446744073709551615>
  %w = locus.state "w" parameter : tensor<2x10xf32> init #locus.init<uniform(-0.31622776601683794, 0.31622776601683794), seed = 18446744073709551615>
  // CHECK: init <full(-1.5)>
  %b = locus.state "b" parameter : tensor<2xf32> init <full(-1.5)>
  // CHECK: init <full(3.0)>
  %c = locus.state "c" parameter : tensor<2xf32> init #locus.init<full(3.0)>
}
