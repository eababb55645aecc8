// Kernel functions equal but for their locations merge into the first; a
// difference of device, attributes, constants or ops keeps them apart.
// RUN: locus-opt %s --split-input-file --locus-merge-kernels --verify-diagnostics | FileCheck %s

// CHECK: module attributes {locus.kernel_aliases = {g_k2_relu = "g_k0_relu", g_k5_relu = "g_k0_relu"}}
// CHECK: func.func @g_k0_relu(
// CHECK-NOT: func.func @g_k2_relu(
// CHECK: func.func @g_k1_relu(
// CHECK: func.func @g_k3_relu(
// CHECK: func.func @g_k4_relu(
// CHECK-NOT: func.func @g_k5_relu(
// CHECK: func.func @g_k6_scale(
// CHECK: func.func @g_k7_scale(
// CHECK: func.func private @helper(
// CHECK: func.func private @h1(
// CHECK: func.func private @h2(
// CHECK: func.func @g_k8_call(
// CHECK: func.func @g_k9_call(
func.func @g_k0_relu(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = locus.relu %a : tensor<4xf32> loc("model.py":3:1)
  return %r : tensor<4xf32>
}
// Another device.
func.func @g_k1_relu(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cuda:0>} {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
// The first again, at another line.
func.func @g_k2_relu(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = locus.relu %a : tensor<4xf32> loc("model.py":9:1)
  return %r : tensor<4xf32>
}
// Its result may alias its argument (an update in place).
func.func @g_k3_relu(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>, locus.results_may_alias = array<i64: 0>} {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
// Another shape.
func.func @g_k4_relu(%a: tensor<8xf32> {bufferization.writable = false}) -> tensor<8xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = locus.relu %a : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @g_k5_relu(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
// Other constants.
func.func @g_k6_scale(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %c = locus.constant dense<2.0> : tensor<4xf32>
  %r = locus.mul %a, %c : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @g_k7_scale(%a: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %c = locus.constant dense<3.0> : tensor<4xf32>
  %r = locus.mul %a, %c : tensor<4xf32>
  return %r : tensor<4xf32>
}
// Declarations, and functions another op calls, stay; so do their callers,
// whose callees differ.
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func private @h1(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @h2(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @g_k8_call(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = func.call @h1(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @g_k9_call(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = func.call @h2(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A module merged before keeps its aliases; one whose function merges now
// names where it went.
// CHECK: module attributes {locus.kernel_aliases = {g_k2_relu = "g_k0_relu", g_k9_relu = "g_k0_relu"}}
module attributes {locus.kernel_aliases = {g_k9_relu = "g_k2_relu"}} {
  func.func @g_k0_relu(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
    %r = locus.relu %a : tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @g_k2_relu(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
    %r = locus.relu %a : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// A graph still in the module would lose its callees.
// expected-error @+1 {{'locus.graph' op is still in the module: run --locus-extract-kernels before --locus-merge-kernels}}
locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  %0 = func.call @g_k0_relu(%x) {locus.device = #locus.device<cpu>} : (tensor<4xf32>) -> tensor<4xf32>
  locus.output "y" = %0 : tensor<4xf32>
}
func.func @g_k0_relu(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
