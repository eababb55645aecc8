// --locus-autodiff in a graph with dynamic sizes: each gradient has its
// value's dims. Broadcasts made like a forward value take its dims (a
// reduction's gradient spread back over its input, the zeros of a value
// the loss does not read); those like a backward value take the dims of
// the op that reads them, each op its own copy (select's zero); a gather's
// gradient gives its reshapes and broadcast their dims.
// RUN: locus-opt %s -split-input-file --locus-autodiff='wrt=x' | FileCheck %s

// CHECK-DAG: #[[SK:.*]] = affine_map<()[s0] -> (s0, 3, 4)>
// CHECK-LABEL: locus.graph @sum_keepdim
// CHECK: %[[K:.*]] = locus.broadcast %{{.*}} [1, 3, 1] : tensor<1x1x1xf32> -> tensor<1x3x1xf32>
// CHECK: %[[G:.*]] = locus.broadcast %[[K]] [8, 3, 4] {locus.dims = #[[SK]]}
// CHECK: locus.output "x.grad" = %[[G]]
locus.graph @sum_keepdim attributes {locus.symbols = [["n", 8]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 3, 4)>} : tensor<8x3x4xf32>
  %r = locus.sum %x axes [0, 2] keepdim : tensor<8x3x4xf32> -> tensor<1x3x1xf32>
  %loss = locus.sum %r axes [0, 1, 2] : tensor<1x3x1xf32> -> tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}

// -----

// CHECK-DAG: #[[S:.*]] = affine_map<()[s0] -> (s0, 5)>
// CHECK-LABEL: locus.graph @select
// CHECK: %[[M:.*]] = locus.cmp gt, %x, %y
// CHECK: %[[Z:.*]] = locus.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[Z1:.*]] = locus.broadcast %[[Z]] [8, 5] {locus.dims = #[[S]]}
// CHECK: %[[Z2:.*]] = locus.broadcast %[[Z]] [8, 5] {locus.dims = #[[S]]}
// CHECK: locus.select %[[M]], %{{.*}}, %[[Z2]]
// CHECK: locus.select %[[M]], %[[Z1]], %{{.*}}
// CHECK: locus.output "x.grad"
locus.graph @select attributes {locus.symbols = [["n", 8]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 5)>} : tensor<8x5xf32>
  %y = locus.input "y" {locus.dims = affine_map<()[s0] -> (s0, 5)>} : tensor<8x5xf32>
  %m = locus.cmp gt, %x, %y : tensor<8x5xf32>
  %e = locus.exp %x : tensor<8x5xf32>
  %r = locus.select %m, %x, %e : tensor<8x5xi1>, tensor<8x5xf32>
  %s = locus.mul %r, %y : tensor<8x5xf32>
  %loss = locus.sum %s axes [0, 1] : tensor<8x5xf32> -> tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}

// -----

// CHECK-DAG: #[[B:.*]] = affine_map<()[s0] -> (s0, 4, 10)>
// CHECK-DAG: #[[R:.*]] = affine_map<()[s0] -> (s0, 10, 3)>
// CHECK-LABEL: locus.graph @gather_axis1
// CHECK: %[[H:.*]] = locus.broadcast %{{.*}} [8, 4, 10] {locus.dims = #[[B]]} : tensor<4x10xf32> -> tensor<8x4x10xf32>
// CHECK: %[[G:.*]] = locus.reshape %{{.*}} [8, 10, 3] {locus.dims = #[[R]]}
// CHECK: %[[D:.*]] = locus.matmul %[[H]], %[[G]]
// CHECK: locus.output "x.grad" = %[[D]]
locus.graph @gather_axis1 attributes {locus.symbols = [["n", 8]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 4, 3)>} : tensor<8x4x3xf32>
  %ix = locus.input "ix" : tensor<2x5xi64>
  %r = locus.gather %x, %ix axis 1 : tensor<8x4x3xf32>, tensor<2x5xi64> -> tensor<8x2x5x3xf32>
  %loss = locus.sum %r axes [0, 1, 2, 3] : tensor<8x2x5x3xf32> -> tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}

// -----

// CHECK-DAG: #[[U:.*]] = affine_map<()[s0] -> (s0, 5)>
// CHECK-LABEL: locus.graph @unused
// CHECK: %[[Z:.*]] = locus.broadcast %{{.*}} [8, 5] {locus.dims = #[[U]]} : tensor<f32> -> tensor<8x5xf32>
// CHECK: locus.output "x.grad" = %[[Z]]
locus.graph @unused attributes {locus.symbols = [["n", 8]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 5)>} : tensor<8x5xf32>
  %y = locus.input "y" : tensor<8x5xf32>
  %loss = locus.sum %y axes [0, 1] : tensor<8x5xf32> -> tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}
