// Index checks: for each tensor of indices and extent, the number outside
// [0, extent) as an output the runtime reads, placed with the indices'
// reader. One check per (tensor, extent); none for an empty tensor.
// RUN: locus-opt %s -split-input-file --locus-check-indices | FileCheck %s

#gpu = #locus.device<cuda:0>
#why = #locus.placement<kind = policy>

// CHECK-LABEL: locus.graph @loss
// CHECK: %[[Z:.*]] = locus.constant dense<0> : tensor<i64> {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = policy>}
// CHECK-NEXT: %[[ZB:.*]] = locus.broadcast %[[Z]] [16] {locus.device = #locus.device<cuda:0>
// CHECK-NEXT: %[[LO:.*]] = locus.cmp lt, %labels, %[[ZB]] {locus.device = #locus.device<cuda:0>
// CHECK-NEXT: %[[LOF:.*]] = locus.cast %[[LO]] to f32
// CHECK-NEXT: %[[N:.*]] = locus.constant dense<10> : tensor<i64>
// CHECK-NEXT: %[[NB:.*]] = locus.broadcast %[[N]] [16]
// CHECK-NEXT: %[[HI:.*]] = locus.cmp ge, %labels, %[[NB]]
// CHECK-NEXT: %[[HIF:.*]] = locus.cast %[[HI]] to f32
// CHECK-NEXT: %[[BAD:.*]] = locus.add %[[LOF]], %[[HIF]]
// CHECK-NEXT: %[[COUNT:.*]] = locus.sum %[[BAD]] axes [0] {locus.device = #locus.device<cuda:0>
// CHECK-NEXT: locus.output "__locus_check:0:locus.cross_entropy at {{.*}}|labels outside [0, 10)" = %[[COUNT]] {locus.device = #locus.device<cuda:0>
// CHECK-NEXT: locus.cross_entropy
// The one-hot of the same labels and extent needs no second check.
// CHECK-NOT: __locus_check:1
locus.graph @loss {
  %logits = locus.input "logits" {locus.device = #gpu, locus.placement = #why} : tensor<16x10xf32>
  %labels = locus.input "labels" {locus.device = #gpu, locus.placement = #why} : tensor<16xi64>
  %0 = locus.cross_entropy %logits, %labels mean {locus.device = #gpu, locus.placement = #why} : tensor<16x10xf32>, tensor<16xi64> -> tensor<f32>
  %1 = locus.one_hot %labels classes 10 {locus.device = #gpu, locus.placement = #why} : tensor<16xi64> -> tensor<16x10xf32>
  locus.output "loss" = %0 {locus.device = #gpu, locus.placement = #why} : tensor<f32>
  locus.output "hot" = %1 {locus.device = #gpu, locus.placement = #why} : tensor<16x10xf32>
}

// -----

// A gather checks its indices against the extent of its axis; a second
// gather of the same indices along an axis of another extent is another
// check. A rank-0 index needs no sum.
// CHECK-LABEL: locus.graph @gather
// CHECK: locus.output "__locus_check:0:locus.gather at {{.*}}|indices outside [0, 7)"
// CHECK: locus.output "__locus_check:1:locus.gather at {{.*}}|indices outside [0, 3)"
// CHECK: %[[S:.*]] = locus.add
// CHECK-NOT: locus.sum
// CHECK-NEXT: locus.output "__locus_check:2:locus.gather at {{.*}}|indices outside [0, 7)" = %[[S]]
locus.graph @gather {
  %w = locus.input "w" : tensor<7x3xf32>
  %i = locus.input "i" : tensor<2xi64>
  %j = locus.input "j" : tensor<i64>
  %0 = locus.gather %w, %i axis 0 : tensor<7x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
  %1 = locus.gather %w, %i axis 1 : tensor<7x3xf32>, tensor<2xi64> -> tensor<7x2xf32>
  %2 = locus.gather %w, %j axis 0 : tensor<7x3xf32>, tensor<i64> -> tensor<3xf32>
  locus.output "a" = %0 : tensor<2x3xf32>
  locus.output "b" = %1 : tensor<7x2xf32>
  locus.output "c" = %2 : tensor<3xf32>
}

// -----

// Empty index tensors cannot be out of range.
// CHECK-LABEL: locus.graph @empty
// CHECK-NOT: __locus_check
locus.graph @empty {
  %w = locus.input "w" : tensor<7x3xf32>
  %i = locus.input "i" : tensor<0xi64>
  %0 = locus.gather %w, %i axis 0 : tensor<7x3xf32>, tensor<0xi64> -> tensor<0x3xf32>
  locus.output "a" = %0 : tensor<0x3xf32>
}

// -----

// BatchNorm in training over a dynamic batch: a run with one value per
// channel is an error (PyTorch's), checked where a run can have one: the
// [batch, 4] input (the count when under 2, else 0), not the
// [batch, 4, 2, 2] one (at least 4 values per channel).
// CHECK-LABEL: locus.graph @norm
// CHECK: %[[N:.*]] = locus.count %x axes [0] : tensor<8x4xf32> -> tensor<f32>
// CHECK-NEXT: %[[TWO:.*]] = locus.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FEW:.*]] = locus.cmp lt, %[[N]], %[[TWO]]
// CHECK-NEXT: %[[ZERO:.*]] = locus.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[TOTAL:.*]] = locus.select %[[FEW]], %[[N]], %[[ZERO]]
// CHECK-NEXT: locus.output "__locus_check:0:locus.batch_norm_train at {{.*}}|batch_norm in training needs more than one value per channel (as in PyTorch); values per channel in this run" = %[[TOTAL]]
// CHECK-NEXT: locus.batch_norm_train %x
// CHECK-NOT: __locus_check:1
locus.graph @norm attributes {locus.symbols = [["batch", 8]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  %i = locus.input "i" {locus.dims = affine_map<()[s0] -> (s0, 4, 2, 2)>} : tensor<8x4x2x2xf32>
  %c = locus.input "c" : tensor<4xf32>
  %y, %m, %v = locus.batch_norm_train %x, %c, %c eps 1.0e-05 : tensor<8x4xf32>, tensor<4xf32>
  %y2, %m2, %v2 = locus.batch_norm_train %i, %c, %c eps 1.0e-05 : tensor<8x4x2x2xf32>, tensor<4xf32>
  locus.output "y" = %y : tensor<8x4xf32>
  locus.output "y2" = %y2 : tensor<8x4x2x2xf32>
}

// -----

// Windows of fixed size along a dynamic dimension: rows 1 to 3 need 4
// rows, the last three 3; the last row, the whole dimension and a window
// of the static one need no check.
// CHECK-LABEL: locus.graph @windows
// CHECK: %[[N:.*]] = locus.count %x axes [0] : tensor<8x4xf32> -> tensor<f32>
// CHECK-NEXT: %[[NEED:.*]] = locus.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FEW:.*]] = locus.cmp lt, %[[N]], %[[NEED]]
// CHECK-NEXT: %[[ZERO:.*]] = locus.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[TOTAL:.*]] = locus.select %[[FEW]], %[[N]], %[[ZERO]]
// CHECK-NEXT: locus.output "__locus_check:0:locus.slice at {{.*}}|the window takes elements of dimension 0, which is dynamic, that a run of fewer than 4 does not have; its size in this run" = %[[TOTAL]]
// CHECK-NEXT: locus.slice %x offsets [1, 0] sizes [3, 4]
// CHECK: locus.constant dense<3.000000e+00>
// CHECK: "__locus_check:1:locus.slice at {{.*}}|the window takes elements of dimension 0, which is dynamic, that a run of fewer than 3 does not have; its size in this run"
// CHECK-NEXT: locus.slice %x offsets [-3, 0] sizes [3, 4]
// CHECK-NOT: __locus_check:2
locus.graph @windows attributes {locus.symbols = [["batch", 8]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<8x4xf32>
  %a = locus.slice %x offsets [1, 0] sizes [3, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<3x4xf32>
  %b = locus.slice %x offsets [-3, 0] sizes [3, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<3x4xf32>
  %c = locus.slice %x offsets [-1, 0] sizes [1, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<1x4xf32>
  %d = locus.slice %x offsets [0, 0] sizes [8, 4] strides [1, 1] : tensor<8x4xf32> -> tensor<8x4xf32>
  %e = locus.slice %x offsets [0, 1] sizes [8, 2] strides [1, 1] : tensor<8x4xf32> -> tensor<8x2xf32>
  locus.output "a" = %a : tensor<3x4xf32>
  locus.output "b" = %b : tensor<3x4xf32>
  locus.output "c" = %c : tensor<1x4xf32>
  locus.output "d" = %d : tensor<8x4xf32>
  locus.output "e" = %e : tensor<8x2xf32>
}

// -----

// Constant indices all in range (a positional embedding's arange, also
// through a reshape and a broadcast) need no check; a constant with one
// out of range keeps its check, which the run reports.
// CHECK-LABEL: locus.graph @constant_ids
// CHECK-NOT: indices outside [0, 16)
// CHECK: locus.output "__locus_check:0:locus.gather at {{.*}}|indices outside [0, 4)"
// CHECK-NOT: __locus_check:1
locus.graph @constant_ids {
  %w = locus.input "w" : tensor<16x8xf32>
  %pos = locus.constant dense<[0, 1, 2, 15]> : tensor<4xi64>
  %e = locus.gather %w, %pos axis 0 : tensor<16x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  %row = locus.reshape %pos [1, 4] : tensor<4xi64> -> tensor<1x4xi64>
  %grid = locus.broadcast %row [3, 4] : tensor<1x4xi64> -> tensor<3x4xi64>
  %f = locus.gather %w, %grid axis 0 : tensor<16x8xf32>, tensor<3x4xi64> -> tensor<3x4x8xf32>
  %v = locus.input "v" : tensor<4x8xf32>
  %bad = locus.constant dense<[0, 4]> : tensor<2xi64>
  %g = locus.gather %v, %bad axis 0 : tensor<4x8xf32>, tensor<2xi64> -> tensor<2x8xf32>
  locus.output "e" = %e : tensor<4x8xf32>
  locus.output "f" = %f : tensor<3x4x8xf32>
  locus.output "g" = %g : tensor<2x8xf32>
}
