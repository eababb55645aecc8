// Host convolutions call the runtime's locus_conv2d, with a residual add and
// a ReLU that follow them as the call's epilogue.
// RUN: locus-opt %s --locus-conv-to-runtime --split-input-file | FileCheck %s

// A ResNet block's second half: conv + bias, + the block's input, ReLU.
// Parameters: n c h w o kh kw oh ow, strides, pads, dilations, groups, flags
// (bias 1 | residual 2 | relu 4 = 7).
// CHECK-DAG: func.func private @locus_conv2d(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: memref.global "private" constant @[[P:__locus_conv2d_params_[0-9]+]] : memref<25xi64> = dense<[1, 4, 6, 6, 4, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x6x6xf32>, %[[W:.*]]: tensor<4x4x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK:      %[[G:.*]] = memref.get_global @[[P]] : memref<25xi64>
// CHECK:      %[[XM:.*]] = bufferization.to_memref %[[X]] read_only : memref<1x4x6x6xf32>
// CHECK:      %[[WM:.*]] = bufferization.to_memref %[[W]] read_only : memref<4x4x3x3xf32>
// CHECK:      %[[BM:.*]] = bufferization.to_memref %[[B]] read_only : memref<4xf32>
// CHECK:      %[[RM:.*]] = bufferization.to_memref %[[X]] read_only : memref<1x4x6x6xf32>
// CHECK:      %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x6x6xf32>
// CHECK:      call @locus_conv2d(
// CHECK:      %[[T:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<1x4x6x6xf32>
// CHECK-NOT:  locus.
// CHECK:      return %[[T]]
func.func @block(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = locus.conv2d %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32> -> tensor<1x4x6x6xf32>
  %1 = locus.add %x, %0 : tensor<1x4x6x6xf32>
  %2 = locus.relu %1 : tensor<1x4x6x6xf32>
  return %2 : tensor<1x4x6x6xf32>
}

// -----

// No bias, stride 2, dilation 2, groups 2; the ReLU's operand has a second
// use, so the ReLU stays (flags 0) and so does the other reader.
// CHECK: memref.global "private" constant @[[P:.*]] : memref<25xi64> = dense<[2, 4, 9, 9, 6, 3, 3, 4, 4, 2, 2, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @shared
// CHECK:      call @locus_conv2d(
// CHECK:      %[[T:.*]] = bufferization.to_tensor
// CHECK:      locus.relu %[[T]]
// CHECK:      locus.neg %[[T]]
func.func @shared(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>) -> (tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>) {
  %0 = locus.conv2d %x, %w stride [2, 2] padding [1, 1] dilation [2, 2] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x4x4xf32>
  %1 = locus.relu %0 : tensor<2x6x4x4xf32>
  %2 = locus.neg %0 : tensor<2x6x4x4xf32>
  return %1, %2 : tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>
}

// -----

// conv + conv is no residual: the convolution alone is called (flags:
// bias 1), and the add stays.
// CHECK: dense<[1, 2, 4, 4, 2, 1, 1, 4, 4, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @broadcast
// CHECK:      call @locus_conv2d(
// CHECK:      locus.add
func.func @broadcast(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %b: tensor<2xf32>, %s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %0 = locus.conv2d %x, %w, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %1 = locus.add %0, %0 : tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----

// A graph's convolution is the plan's business until kernels are outlined:
// left alone, and no declaration is added.
// CHECK-NOT: func.func private @locus_conv2d
// CHECK-LABEL: locus.graph @g
// CHECK: locus.conv2d
locus.graph @g {
  %x = locus.input "x" : tensor<1x1x4x4xf32>
  %w = locus.input "w" : tensor<1x1x3x3xf32>
  %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x4x4xf32>
  locus.output "y" = %0 : tensor<1x1x4x4xf32>
}

// -----

// A max pooling after the ReLU joins the call (flags: bias 1 | relu 4 |
// max pool 8 = 13; then window 2x2, strides 2, padding 0, output 3x3): the
// call writes the pooled tensor. An average pooling right after a
// convolution joins too (flags 16, padding 1 counted).
// CHECK: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[1, 2, 4, 4, 3, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 16, 3, 3, 2, 2, 1, 1, 2, 2]>
// CHECK: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[2, 3, 6, 6, 4, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 13, 2, 2, 2, 2, 0, 0, 3, 3]>
// CHECK-LABEL: func.func @pooled
// CHECK:      %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x4x3x3xf32>
// CHECK:      call @locus_conv2d(
// CHECK:      %[[T:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<2x4x3x3xf32>
// CHECK-NOT:  locus.
// CHECK:      return %[[T]]
func.func @pooled(%x: tensor<2x3x6x6xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  %0 = locus.conv2d %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x6x6xf32>
  %1 = locus.relu %0 : tensor<2x4x6x6xf32>
  %2 = locus.max_pool2d %1 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32>
  return %2 : tensor<2x4x3x3xf32>
}
// CHECK-LABEL: func.func @averaged
// CHECK:      call @locus_conv2d(
// CHECK-NOT:  locus.avg_pool2d
func.func @averaged(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x4x4xf32>
  %1 = locus.avg_pool2d %0 kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<1x3x4x4xf32> -> tensor<1x3x2x2xf32>
  return %1 : tensor<1x3x2x2xf32>
}

// -----

// Both gradients call locus_conv2d_grad: the kind (1 input, 2 weight), the
// forward's shapes (flags 0; stride 2, so the input's 9x9 is named, not
// derived), the two operands and a fresh result buffer. The product that
// follows the input gradient (a ReLU's gradient) stays a generated op.
// CHECK-DAG: func.func private @locus_conv2d_grad(i64, i64, i64, i64, i64)
// CHECK-DAG: memref.global "private" constant @[[D:__locus_conv2d_params_[0-9]+]] : memref<25xi64> = dense<[2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @grads
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x9x9xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[G:.*]]: tensor<2x4x5x5xf32>, %[[M:.*]]: tensor<2x3x9x9xf32>)
// CHECK:      memref.get_global @[[D]]
// CHECK:      bufferization.to_memref %[[G]] read_only : memref<2x4x5x5xf32>
// CHECK:      bufferization.to_memref %[[W]] read_only : memref<4x3x3x3xf32>
// CHECK:      %[[DXM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3x9x9xf32>
// CHECK:      %[[K1:.*]] = arith.constant 1 : i64
// CHECK:      call @locus_conv2d_grad(%[[K1]],
// CHECK:      %[[DX:.*]] = bufferization.to_tensor %[[DXM]] restrict writable
// CHECK:      memref.get_global @[[D]]
// CHECK:      bufferization.to_memref %[[X]] read_only : memref<2x3x9x9xf32>
// CHECK:      bufferization.to_memref %[[G]] read_only : memref<2x4x5x5xf32>
// CHECK:      %[[DWM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x3x3x3xf32>
// CHECK:      %[[K2:.*]] = arith.constant 2 : i64
// CHECK:      call @locus_conv2d_grad(%[[K2]],
// CHECK:      %[[DW:.*]] = bufferization.to_tensor %[[DWM]] restrict writable
// CHECK:      %[[R:.*]] = locus.mul %[[DX]], %[[M]]
// CHECK-NOT:  locus.conv2d
// CHECK:      return %[[R]], %[[DW]]
func.func @grads(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<2x4x5x5xf32>, %m: tensor<2x3x9x9xf32>) -> (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) {
  %dx = locus.conv2d_input_grad %g, %w input_shape [2, 3, 9, 9] stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x9x9xf32>
  %dw = locus.conv2d_weight_grad %x, %g weight_shape [4, 3, 3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x9x9xf32>, tensor<2x4x5x5xf32> -> tensor<4x3x3x3xf32>
  %r = locus.mul %dx, %m : tensor<2x3x9x9xf32>
  return %r, %dw : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>
}

// -----

// --locus-conv-layouts' marks become the call's layout flags: x, the
// residual and y NHWC (64 | 128 | 256), with bias, residual and ReLU (7).
// CHECK: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[1, 4, 6, 6, 4, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 455, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @nhwc
// CHECK: call @locus_conv2d(
func.func @nhwc(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = locus.conv2d %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.nhwc_input, locus.nhwc_residual, locus.nhwc_result} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32> -> tensor<1x4x6x6xf32>
  %1 = locus.add %x, %0 : tensor<1x4x6x6xf32>
  %2 = locus.relu %1 : tensor<1x4x6x6xf32>
  return %2 : tensor<1x4x6x6xf32>
}

// -----

// A convolution and a weight gradient of 16-bit operands (the host version
// of a CUDA kernel, --locus-gpu-16bit-convs): locus_conv2d and
// locus_conv2d_grad read the 16-bit operands and write the 16-bit result
// (LOCUS_CONV_BF16 | _Y_16BIT: 2560; the two share their parameters).
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[1, 2, 6, 6, 4, 3, 3, 4, 4, 1, 1, 0, 0, 1, 1, 1, 2560, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @sixteen_bits
// CHECK-NOT: locus.cast
// CHECK: bufferization.to_memref %arg0 read_only : memref<1x2x6x6xbf16>
// CHECK: bufferization.to_memref %arg1 read_only : memref<4x2x3x3xbf16>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x4x4x4xbf16>
// CHECK: call @locus_conv2d(
// CHECK: bufferization.to_memref %arg0 read_only : memref<1x2x6x6xbf16>
// CHECK: bufferization.to_memref %arg2 read_only : memref<1x4x4x4xbf16>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<4x2x3x3xbf16>
// CHECK: call @locus_conv2d_grad(
// CHECK-NOT: locus.cast
func.func @sixteen_bits(%x: tensor<1x2x6x6xbf16>, %w: tensor<4x2x3x3xbf16>, %g: tensor<1x4x4x4xbf16>) -> (tensor<1x4x4x4xbf16>, tensor<4x2x3x3xbf16>) {
  %y = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x2x6x6xbf16>, tensor<4x2x3x3xbf16> -> tensor<1x4x4x4xbf16>
  %dw = locus.conv2d_weight_grad %x, %g weight_shape [4, 2, 3, 3] stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x2x6x6xbf16>, tensor<1x4x4x4xbf16> -> tensor<4x2x3x3xbf16>
  return %y, %dw : tensor<1x4x4x4xbf16>, tensor<4x2x3x3xbf16>
}

// -----

// An autocast convolution on the CPU (--locus-fuse-kernels gave its kernel
// the casts up of its bf16 input and weight): the call reads the bf16
// values, adds the bias and the f32 residual, applies ReLU in f32 and
// rounds once, taking in the cast down (BIAS | RESIDUAL | RELU | BF16 |
// Y_16BIT: 2567). The casts up go.
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[2, 16, 6, 6, 16, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 2567, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @autocast_block
// CHECK-NOT: locus.cast
// CHECK: bufferization.to_memref %arg0 read_only : memref<2x16x6x6xbf16>
// CHECK: bufferization.to_memref %arg1 read_only : memref<16x16x3x3xbf16>
// CHECK: bufferization.to_memref %arg3 read_only : memref<2x16x6x6xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x16x6x6xbf16>
// CHECK: call @locus_conv2d(
// CHECK-NOT: locus.
// CHECK: return
func.func @autocast_block(%x: tensor<2x16x6x6xbf16>, %w: tensor<16x16x3x3xbf16>, %b: tensor<16xf32>, %res: tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xbf16> {
  %xf = locus.cast %x to f32 : tensor<2x16x6x6xbf16> -> tensor<2x16x6x6xf32>
  %wf = locus.cast %w to f32 : tensor<16x16x3x3xbf16> -> tensor<16x16x3x3xf32>
  %0 = locus.conv2d %xf, %wf, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x16x6x6xf32>, tensor<16x16x3x3xf32>, tensor<16xf32> -> tensor<2x16x6x6xf32>
  %1 = locus.add %0, %res : tensor<2x16x6x6xf32>
  %2 = locus.relu %1 : tensor<2x16x6x6xf32>
  %3 = locus.cast %2 to bf16 : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xbf16>
  return %3 : tensor<2x16x6x6xbf16>
}

// -----

// f16 operands, and an f32 result that something besides the rounding
// reads: the call reads f16 (F16 | BIAS: 1025) and writes f32; the cast
// down stays, and so does the cast up that another op reads.
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[1, 8, 5, 5, 8, 1, 1, 5, 5, 1, 1, 0, 0, 1, 1, 1, 1025, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @f16_result_kept
// CHECK: %[[XF:.*]] = locus.cast %arg0 to f32
// CHECK: bufferization.to_memref %arg0 read_only : memref<1x8x5x5xf16>
// CHECK: bufferization.to_memref %arg1 read_only : memref<8x8x1x1xf16>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x8x5x5xf32>
// CHECK: call @locus_conv2d(
// CHECK: locus.cast %{{.*}} to f16
// CHECK: locus.add %[[XF]]
func.func @f16_result_kept(%x: tensor<1x8x5x5xf16>, %w: tensor<8x8x1x1xf16>, %b: tensor<8xf32>) -> (tensor<1x8x5x5xf32>, tensor<1x8x5x5xf16>, tensor<1x8x5x5xf32>) {
  %xf = locus.cast %x to f32 : tensor<1x8x5x5xf16> -> tensor<1x8x5x5xf32>
  %wf = locus.cast %w to f32 : tensor<8x8x1x1xf16> -> tensor<8x8x1x1xf32>
  %0 = locus.conv2d %xf, %wf, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x8x5x5xf32>, tensor<8x8x1x1xf32>, tensor<8xf32> -> tensor<1x8x5x5xf32>
  %1 = locus.cast %0 to f16 : tensor<1x8x5x5xf32> -> tensor<1x8x5x5xf16>
  %2 = locus.add %xf, %xf : tensor<1x8x5x5xf32>
  return %0, %1, %2 : tensor<1x8x5x5xf32>, tensor<1x8x5x5xf16>, tensor<1x8x5x5xf32>
}

// -----

// Operands cast up from two 16-bit types, or one of them f32: an f32 call
// on the casts (flags 0), the result's rounding a cast of its own.
// CHECK-LABEL: func.func @mixed_types
// CHECK: locus.cast %arg0 to f32
// CHECK: locus.cast %arg1 to f32
// CHECK: bufferization.to_memref %{{.*}} read_only : memref<1x4x5x5xf32>
// CHECK: call @locus_conv2d(
// CHECK: locus.cast %{{.*}} to bf16
// CHECK: call @locus_conv2d(
func.func @mixed_types(%x: tensor<1x4x5x5xbf16>, %w: tensor<4x4x1x1xf16>, %wf32: tensor<4x4x1x1xf32>) -> (tensor<1x4x5x5xbf16>, tensor<1x4x5x5xf32>) {
  %xf = locus.cast %x to f32 : tensor<1x4x5x5xbf16> -> tensor<1x4x5x5xf32>
  %wf = locus.cast %w to f32 : tensor<4x4x1x1xf16> -> tensor<4x4x1x1xf32>
  %0 = locus.conv2d %xf, %wf stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x5x5xf32>
  %1 = locus.cast %0 to bf16 : tensor<1x4x5x5xf32> -> tensor<1x4x5x5xbf16>
  %2 = locus.conv2d %xf, %wf32 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x5x5xf32>
  return %1, %2 : tensor<1x4x5x5xbf16>, tensor<1x4x5x5xf32>
}

// -----

// Gradients of autocast convolutions on the CPU: the input gradient reads
// dy and the weight in bf16 and writes f32 (something else reads its
// result too: flags BF16 = 512); the weight gradient reads x and dy in f16
// and rounds its result (F16 | Y_16BIT = 3072).
// CHECK-DAG: memref.global "private" constant @[[PI:.*]] : memref<25xi64> = dense<[2, 16, 6, 6, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 512, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-DAG: memref.global "private" constant @[[PW:.*]] : memref<25xi64> = dense<[2, 16, 6, 6, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 3072, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @grads
// CHECK: memref.get_global @[[PI]]
// CHECK: bufferization.to_memref %arg0 read_only : memref<2x8x6x6xbf16>
// CHECK: bufferization.to_memref %arg1 read_only : memref<8x16x3x3xbf16>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x16x6x6xf32>
// CHECK: call @locus_conv2d_grad(
// CHECK: locus.cast %{{.*}} to bf16 : tensor<2x16x6x6xf32>
// CHECK: memref.get_global @[[PW]]
// CHECK: bufferization.to_memref %arg2 read_only : memref<2x16x6x6xf16>
// CHECK: bufferization.to_memref %arg3 read_only : memref<2x8x6x6xf16>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<8x16x3x3xf16>
// CHECK: call @locus_conv2d_grad(
// CHECK-NOT: locus.cast
// CHECK: return
func.func @grads(%dy: tensor<2x8x6x6xbf16>, %w: tensor<8x16x3x3xbf16>, %x: tensor<2x16x6x6xf16>, %dyh: tensor<2x8x6x6xf16>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xbf16>, tensor<8x16x3x3xf16>) {
  %dyf = locus.cast %dy to f32 : tensor<2x8x6x6xbf16> -> tensor<2x8x6x6xf32>
  %wf = locus.cast %w to f32 : tensor<8x16x3x3xbf16> -> tensor<8x16x3x3xf32>
  %dx = locus.conv2d_input_grad %dyf, %wf input_shape [2, 16, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x8x6x6xf32>, tensor<8x16x3x3xf32> -> tensor<2x16x6x6xf32>
  %dxb = locus.cast %dx to bf16 : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xbf16>
  %xf = locus.cast %x to f32 : tensor<2x16x6x6xf16> -> tensor<2x16x6x6xf32>
  %dyhf = locus.cast %dyh to f32 : tensor<2x8x6x6xf16> -> tensor<2x8x6x6xf32>
  %dw = locus.conv2d_weight_grad %xf, %dyhf weight_shape [8, 16, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x16x6x6xf32>, tensor<2x8x6x6xf32> -> tensor<8x16x3x3xf32>
  %dwh = locus.cast %dw to f16 : tensor<8x16x3x3xf32> -> tensor<8x16x3x3xf16>
  return %dx, %dxb, %dwh : tensor<2x16x6x6xf32>, tensor<2x16x6x6xbf16>, tensor<8x16x3x3xf16>
}
