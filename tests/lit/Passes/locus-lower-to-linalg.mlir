// Computing locus ops become linalg/tensor/arith/math on tensors; sources,
// outputs and moves stay in a graph. Any other locus op left over is an
// error at its line. (Numbers: tests/e2e/check_lowering.py.)
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-lower-to-linalg | FileCheck %s

// CHECK-LABEL: locus.graph @mlp
// CHECK: %[[X:.*]] = locus.input "x"
// CHECK: %[[W:.*]] = locus.state "w"
// CHECK: %[[B:.*]] = locus.state "b"
// The ReLU alone reads the layer: the product starts from zeros (sgemm's
// beta 0) and the bias is added after it, in a loop that
// --locus-fuse-elementwise fuses into the ReLU's.
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: %[[Y:.*]] = linalg.matmul_transpose_b ins(%[[X]], %[[W]] : tensor<64x784xf32>, tensor<10x784xf32>) outs(%[[ZERO]] : tensor<64x10xf32>)
// CHECK: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[Y]], %[[B]] : tensor<64x10xf32>, tensor<10xf32>)
// CHECK: arith.addf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[YB]] : tensor<64x10xf32>)
// CHECK: arith.maximumf
// CHECK: locus.to <cuda:0>, %[[R]]
// CHECK: locus.output "y"
// CHECK-NOT: locus.linear
// CHECK-NOT: locus.relu
locus.graph @mlp {
  %x = locus.input "x" : tensor<64x784xf32>
  %w = locus.state "w" parameter : tensor<10x784xf32> init <full(0.0)>
  %b = locus.state "b" parameter : tensor<10xf32> init <full(0.0)>
  %0 = locus.linear %x, %w, %b : tensor<64x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<64x10xf32>
  %1 = locus.relu %0 : tensor<64x10xf32>
  %2 = locus.to <cuda:0>, %1 : tensor<64x10xf32>
  locus.output "y" = %2 : tensor<64x10xf32>
}

// -----

// The layer is also an output: the bias, broadcast, is the product's
// initial value (written once, where an addition after it would be a pass
// of its own).
// CHECK-LABEL: locus.graph @linear_read_twice
// CHECK: %[[B:.*]] = locus.state "b"
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<10xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul_transpose_b ins(%{{.*}}, %{{.*}} : tensor<64x784xf32>, tensor<10x784xf32>) outs(%[[INIT]] : tensor<64x10xf32>)
// CHECK-NOT: arith.addf
// CHECK: locus.output "y" = %[[Y]]
locus.graph @linear_read_twice {
  %x = locus.input "x" : tensor<64x784xf32>
  %w = locus.state "w" parameter : tensor<10x784xf32> init <full(0.0)>
  %b = locus.state "b" parameter : tensor<10xf32> init <full(0.0)>
  %0 = locus.linear %x, %w, %b : tensor<64x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<64x10xf32>
  %1 = locus.relu %0 : tensor<64x10xf32>
  locus.output "y" = %0 : tensor<64x10xf32>
  locus.output "r" = %1 : tensor<64x10xf32>
}

// -----

// Grouped, strided, dilated convolution: one generic whose input map finds
// the group of each output channel; padding is a tensor.pad.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 3) * 2 + d4, d2 * 2 + d5, d3 + d6 * 2)>
// CHECK-DAG: #[[POOL:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-LABEL: locus.graph @conv
// CHECK: tensor.pad
// CHECK: linalg.generic {indexing_maps = [#[[IN]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// Pooling: one generic over (n, c, kh, kw, oh, ow), the window loops outside
// the row loop; a 2x2 window bounds kh and kw.
// CHECK: linalg.generic {indexing_maps = [#[[POOL]], {{.*}}], iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<1x6x5x6xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<1x6x2x3xf32>)
// CHECK: arith.maximumf
locus.graph @conv {
  %x = locus.input "x" : tensor<1x4x9x8xf32>
  %w = locus.input "w" : tensor<6x2x3x2xf32>
  %0 = locus.conv2d %x, %w stride [2, 1] padding [1, 0] dilation [1, 2] groups 2 : tensor<1x4x9x8xf32>, tensor<6x2x3x2xf32> -> tensor<1x6x5x6xf32>
  %1 = locus.max_pool2d %0 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<1x6x5x6xf32> -> tensor<1x6x2x3xf32>
  locus.output "y" = %1 : tensor<1x6x2x3xf32>
}

// -----

// Steps and fmod: floor and ceil as math's; round (halves to even) from
// floor alone, which every target lowers; fmod as arith.remf.
// CHECK-LABEL: locus.graph @steps
// CHECK: math.floor
// CHECK: math.ceil
// CHECK: linalg.generic
// CHECK: math.floor
// CHECK: arith.subf
// CHECK: math.floor
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf uno
// CHECK-NOT: math.round
// CHECK: arith.remf
locus.graph @steps {
  %x = locus.input "x" : tensor<4x8xf32>
  %0 = locus.floor %x : tensor<4x8xf32>
  %1 = locus.ceil %0 : tensor<4x8xf32>
  %2 = locus.round %1 : tensor<4x8xf32>
  %3 = locus.fmod %2, %x : tensor<4x8xf32>
  locus.output "o" = %3 : tensor<4x8xf32>
}

// -----

// Cross entropy: a stable log_softmax, then each row's label gathered with
// tensor.extract, then the mean.
// CHECK-LABEL: locus.graph @loss
// CHECK: math.exp
// CHECK: math.log
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8xi64>)
// CHECK: linalg.index 0
// CHECK: arith.index_cast
// CHECK: tensor.extract
// CHECK: arith.negf
// CHECK: 1.250000e-01
locus.graph @loss {
  %l = locus.input "l" : tensor<8x5xf32>
  %y = locus.input "y" : tensor<8xi64>
  %0 = locus.cross_entropy %l, %y mean : tensor<8x5xf32>, tensor<8xi64> -> tensor<f32>
  locus.output "loss" = %0 : tensor<f32>
}

// -----

// Without groups: im2col (a gathering generic laid out [C, KH, KW, N, OH, OW]
// so that it runs along rows), one matrix product of the weight as
// [O, C*KH*KW] with it into zeros, then back to NCHW by moving whole rows,
// adding the bias on the way.
// CHECK-DAG: #[[GATHER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 + d1, d5 + d2)>
// CHECK-LABEL: locus.graph @im2col
// CHECK: tensor.pad
// CHECK: %[[COLS:.*]] = linalg.generic {indexing_maps = [#[[GATHER]], {{.*}}]{{.*}} outs(%{{.*}} : tensor<3x3x3x2x7x7xf32>)
// Reshapes are views: one collapse or expansion by groups where the shapes
// allow it (else collapse to one dimension, expand to the target).
// CHECK: %[[W2:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<4x3x3x3xf32> into tensor<4x27xf32>
// CHECK: %[[COLS2:.*]] = tensor.collapse_shape %[[COLS]] {{\[}}[0, 1, 2], [3, 4, 5]] : tensor<3x3x3x2x7x7xf32> into tensor<27x98xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[W2]], %[[COLS2]] : tensor<4x27xf32>, tensor<27x98xf32>) outs(%{{.*}} : tensor<4x98xf32>)
// CHECK: %[[P4:.*]] = tensor.expand_shape %[[P]] {{\[}}[0], [1, 2, 3]]
// CHECK: linalg.generic {indexing_maps = [#[[SWAP:.*]], #[[ROW:.*]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[P4]], %{{.*}} : tensor<4x2x7x7xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<2x4x7x7xf32>)
// CHECK: arith.addf
locus.graph @im2col {
  %x = locus.input "x" : tensor<2x3x7x7xf32>
  %w = locus.input "w" : tensor<4x3x3x3xf32>
  %b = locus.input "b" : tensor<4xf32>
  %0 = locus.conv2d %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x7x7xf32>
  locus.output "y" = %0 : tensor<2x4x7x7xf32>
}

// -----

// An outlined kernel function holds computing ops only: a move or a source
// left in one has no lowering, and is an error at its own line.
func.func @kernel_move(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{failed to legalize operation 'locus.to' that was explicitly marked illegal}}
  %0 = locus.to <cuda:0>, %x : tensor<4xf32>
  %1 = locus.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @kernel_copy(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{failed to legalize operation 'locus.copy' that was explicitly marked illegal}}
  %0 = locus.copy <cpu> to <cuda:0>, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_input() -> tensor<4xf32> {
  // expected-error@+1 {{failed to legalize operation 'locus.input' that was explicitly marked illegal}}
  %0 = locus.input "x" : tensor<4xf32>
  %1 = locus.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Inside a kernel of a fused graph as well: a kernel runs on one device.
locus.graph @kernel_in_graph {
  %x = locus.input "x" : tensor<4xf32>
  %0 = locus.kernel on <cpu> -> tensor<4xf32> {
    // expected-error@+1 {{failed to legalize operation 'locus.to' that was explicitly marked illegal}}
    %1 = locus.to <cuda:0>, %x : tensor<4xf32>
    locus.yield %1 : tensor<4xf32>
  }
  locus.output "y" = %0 : tensor<4xf32>
}

// -----

// A concat of up to 16 inputs is one chain of insert_slice ops; more are a
// tree of such chains (One-Shot Bufferize's analysis of a long chain grows
// about as its length to the fourth).
// CHECK-LABEL: locus.graph @concat_tree
// CHECK: %[[E16:.*]] = tensor.empty() : tensor<16x2xf32>
// CHECK-COUNT-16: tensor.insert_slice {{.*}} : tensor<1x2xf32> into tensor<16x2xf32>
// CHECK: %[[E17:.*]] = tensor.empty() : tensor<17x2xf32>
// CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %[[E17]][0, 0] [16, 2] [1, 1] : tensor<16x2xf32> into tensor<17x2xf32>
// CHECK: %[[B:.*]] = tensor.insert_slice %{{.*}} into %[[A]][16, 0] [1, 2] [1, 1] : tensor<1x2xf32> into tensor<17x2xf32>
// CHECK: locus.output "y" = %[[B]]
// CHECK: %[[E3:.*]] = tensor.empty() : tensor<1x6xf32>
// CHECK-COUNT-3: tensor.insert_slice {{.*}} : tensor<1x2xf32> into tensor<1x6xf32>
// CHECK-NOT: tensor.empty
// CHECK: locus.output "z"
locus.graph @concat_tree {
  %x0 = locus.input "x0" : tensor<1x2xf32>
  %x1 = locus.input "x1" : tensor<1x2xf32>
  %x2 = locus.input "x2" : tensor<1x2xf32>
  %x3 = locus.input "x3" : tensor<1x2xf32>
  %x4 = locus.input "x4" : tensor<1x2xf32>
  %x5 = locus.input "x5" : tensor<1x2xf32>
  %x6 = locus.input "x6" : tensor<1x2xf32>
  %x7 = locus.input "x7" : tensor<1x2xf32>
  %x8 = locus.input "x8" : tensor<1x2xf32>
  %x9 = locus.input "x9" : tensor<1x2xf32>
  %x10 = locus.input "x10" : tensor<1x2xf32>
  %x11 = locus.input "x11" : tensor<1x2xf32>
  %x12 = locus.input "x12" : tensor<1x2xf32>
  %x13 = locus.input "x13" : tensor<1x2xf32>
  %x14 = locus.input "x14" : tensor<1x2xf32>
  %x15 = locus.input "x15" : tensor<1x2xf32>
  %x16 = locus.input "x16" : tensor<1x2xf32>
  %y = locus.concat %x0, %x1, %x2, %x3, %x4, %x5, %x6, %x7, %x8, %x9, %x10, %x11, %x12, %x13, %x14, %x15, %x16 axis 0 : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<17x2xf32>
  locus.output "y" = %y : tensor<17x2xf32>
  %z = locus.concat %x0, %x1, %x2 axis 1 : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x6xf32>
  locus.output "z" = %z : tensor<1x6xf32>
}

// torch.gather: a parallel generic over the indices; each reads the input
// at its own position with its index along the axis, an index out of
// range reading position 0 and giving zero.
// CHECK-LABEL: func.func @gather_elements
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x3xi64>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: %[[IN:.*]] = arith.andi
// CHECK: %[[SAFE:.*]] = arith.select %[[IN]], %{{.*}}, %c0_i64 : i64
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[COL:.*]] = arith.index_cast %[[SAFE]] : i64 to index
// CHECK: %[[V:.*]] = tensor.extract %{{.*}}[%[[ROW]], %[[COL]]] : tensor<2x5xf32>
// CHECK: arith.select %[[IN]], %[[V]], %{{.*}} : f32
func.func @gather_elements(%x: tensor<2x5xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3xf32> {
  %0 = locus.gather_elements %x, %ids axis 1 : tensor<2x5xf32>, tensor<2x3xi64> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
