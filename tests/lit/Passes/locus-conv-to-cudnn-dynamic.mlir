// RUN: locus-opt %s --locus-conv-to-cudnn | FileCheck %s

// A CUDA convolution over a dynamic batch (a kernel of a graph with dynamic
// sizes): the cuDNN call alone, no generated branch (it would compute at the
// bound's batch). Its parameters are a copy on the stack whose batch (slot
// 0) is the run's, 2 * batch here, made by host code (locus.host), and its
// bound-sized result says its dims.
#map = affine_map<()[s0] -> (s0 * 2, 8, 6, 6)>
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %[[SIZES:[^:]*]]: tensor<1xi64> {{{.*}}locus.sizes}
// CHECK-NOT: scf.if
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[B:.*]] = tensor.extract %[[SIZES]]
// CHECK: %[[N:.*]] = arith.muli %[[TWO]], %[[B]] : i64
// CHECK: %[[GLOBAL:.*]] = memref.get_global @__locus_conv2d_params_0 : memref<25xi64>
// CHECK: %[[COPY:.*]] = memref.alloca() : memref<25xi64>
// CHECK: memref.copy %[[GLOBAL]], %[[COPY]] {locus.host}
// CHECK: memref.store %[[N]], %[[COPY]][%{{.*}}] {locus.host} : memref<25xi64>
// CHECK: call @locus_cuda_conv2d(
// CHECK: bufferization.to_tensor {{.*}}locus.dims = #map
// CHECK-NOT: scf.if
// The gradients take the batch of dy (input) and of x (weights).
// CHECK-LABEL: func.func @grads(
// CHECK-COUNT-2: memref.store %{{.*}}, %{{.*}}[%{{.*}}] {locus.host} : memref<25xi64>
// CHECK-NOT: scf.if
func.func @conv(%x: tensor<16x8x6x6xf32> {locus.dims = #map},
                %w: tensor<8x8x3x3xf32>, %b: tensor<8xf32>,
                %sizes: tensor<1xi64> {locus.sizes})
    -> (tensor<16x8x6x6xf32> {locus.dims = #map})
    attributes {locus.device = #locus.device<cuda:0>, locus.symbols = [["batch", 8]]} {
  %y = locus.conv2d %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<16x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32> -> tensor<16x8x6x6xf32>
  return %y : tensor<16x8x6x6xf32>
}

func.func @grads(%x: tensor<16x8x6x6xf32> {locus.dims = #map},
                 %dy: tensor<16x8x6x6xf32> {locus.dims = #map},
                 %w: tensor<8x8x3x3xf32>,
                 %sizes: tensor<1xi64> {locus.sizes})
    -> (tensor<16x8x6x6xf32> {locus.dims = #map}, tensor<8x8x3x3xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.symbols = [["batch", 8]]} {
  %dx = locus.conv2d_input_grad %dy, %w input_shape [16, 8, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<16x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<16x8x6x6xf32>
  %dw = locus.conv2d_weight_grad %x, %dy weight_shape [8, 8, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<16x8x6x6xf32>, tensor<16x8x6x6xf32> -> tensor<8x8x3x3xf32>
  return %dx, %dw : tensor<16x8x6x6xf32>, tensor<8x8x3x3xf32>
}
