// CUDA convolutions and both gradients call cuDNN (locus_cuda_conv2d) when
// the device has it, and keep their generated lowering when it does not.
// RUN: locus-opt %s --locus-conv-to-cudnn --split-input-file | FileCheck %s
// RUN: locus-opt %s --locus-conv-to-cudnn=allow-tf32 --split-input-file | FileCheck %s --check-prefix=TF32

// One training kernel with all three kinds. Parameters: n c h w o kh kw oh ow,
// strides, pads, dilations, groups, flags (bias 1; TF32 32).
// CHECK-DAG: func.func private @locus_cuda_conv2d(i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @locus_cuda_dnn_ready() -> i32
// CHECK-DAG: memref.global "private" constant @[[F:__locus_conv2d_params_[0-9]+]] : memref<25xi64> = dense<[2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-DAG: memref.global "private" constant @[[D:__locus_conv2d_params_[0-9]+]] : memref<25xi64> = dense<[2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @train
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x9x9xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<2x4x5x5xf32>)
// The question is asked once.
// CHECK:      %[[R:.*]] = call @locus_cuda_dnn_ready() : () -> i32
// CHECK:      %[[YES:.*]] = arith.cmpi ne, %[[R]], %{{.*}} : i32
// CHECK-NOT:  locus_cuda_dnn_ready
// The forward: kind 0, input and weight, the bias.
// CHECK:      %[[Y:.*]] = scf.if %[[YES]] -> (tensor<2x4x5x5xf32>) {
// CHECK:        memref.get_global @[[F]]
// CHECK:        bufferization.to_memref %[[X]] read_only
// CHECK:        bufferization.to_memref %[[W]] read_only
// CHECK:        bufferization.to_memref %[[B]] read_only
// CHECK:        %[[OUT:.*]] = memref.alloc() : memref<2x4x5x5xf32>
// CHECK:        %[[K0:.*]] = arith.constant 0 : i64
// CHECK:        call @locus_cuda_conv2d(%[[K0]],
// CHECK:        %[[T:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK:        scf.yield %[[T]]
// CHECK:      } else {
// CHECK:        %[[C:.*]] = locus.conv2d %[[X]], %[[W]], %[[B]]
// CHECK:        %[[CM:.*]] = bufferization.materialize_in_destination %[[C]]
// CHECK:        scf.yield %[[CM]]
// CHECK:      }
// The input gradient: kind 1, the output's gradient and the weight.
// CHECK:      scf.if %[[YES]] -> (tensor<2x3x9x9xf32>) {
// CHECK:        memref.get_global @[[D]]
// CHECK:        bufferization.to_memref %[[G]] read_only
// CHECK:        bufferization.to_memref %[[W]] read_only
// CHECK:        arith.constant 1 : i64
// CHECK:        call @locus_cuda_conv2d(
// CHECK:      } else {
// CHECK:        %[[DX:.*]] = locus.conv2d_input_grad %[[G]], %[[W]]
// CHECK:        %[[E:.*]] = tensor.empty() : tensor<2x3x9x9xf32>
// CHECK:        %[[M:.*]] = bufferization.materialize_in_destination %[[DX]] in %[[E]]
// CHECK:        scf.yield %[[M]]
// CHECK:      }
// The weight gradient: kind 2, the input and the output's gradient.
// CHECK:      scf.if %[[YES]] -> (tensor<4x3x3x3xf32>) {
// CHECK:        bufferization.to_memref %[[X]] read_only
// CHECK:        bufferization.to_memref %[[G]] read_only
// CHECK:        arith.constant 2 : i64
// CHECK:        call @locus_cuda_conv2d(
// CHECK:      } else {
// CHECK:        locus.conv2d_weight_grad %[[X]], %[[G]]
// CHECK:      }
// TF32-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 33, 0, 0, 0, 0, 0, 0, 0, 0]>
// TF32-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 32, 0, 0, 0, 0, 0, 0, 0, 0]>
func.func @train(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %g: tensor<2x4x5x5xf32>) -> (tensor<2x4x5x5xf32>, tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) {
  %y = locus.conv2d %x, %w, %b stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x5x5xf32>
  %dx = locus.conv2d_input_grad %g, %w input_shape [2, 3, 9, 9] stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x9x9xf32>
  %dw = locus.conv2d_weight_grad %x, %g weight_shape [4, 3, 3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x9x9xf32>, tensor<2x4x5x5xf32> -> tensor<4x3x3x3xf32>
  return %y, %dx, %dw : tensor<2x4x5x5xf32>, tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>
}

// -----

// Depthwise, dilated, no bias: groups and dilation reach the parameters
// (flags 0); the bias slot repeats the first operand, unread.
// CHECK: memref.global "private" constant @[[P:.*]] : memref<25xi64> = dense<[1, 8, 10, 10, 8, 3, 3, 6, 6, 1, 1, 0, 0, 2, 2, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @depthwise
// CHECK:      %[[XM:.*]] = bufferization.to_memref %arg0 read_only
// CHECK:      %[[XP:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:      bufferization.to_memref %arg1 read_only
// CHECK:      %[[WP:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:      call @locus_cuda_conv2d(%{{.*}}, %{{.*}}, %[[XP]], %[[WP]], %[[XP]], %{{.*}})
func.func @depthwise(%x: tensor<1x8x10x10xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %y = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [2, 2] groups 8 : tensor<1x8x10x10xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x6x6xf32>
  return %y : tensor<1x8x6x6xf32>
}

// -----

// A function without convolutions is left alone: no question asked.
// CHECK-LABEL: func.func @plain
// CHECK-NOT:  locus_cuda_dnn_ready
// CHECK:      locus.relu
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = locus.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An autocast convolution (its operands bf16 or f16 values held in f32)
// gets TF32's flag without allow-tf32: TF32 holds 16-bit values exactly.
// CHECK: memref.global "private" constant @[[A:.*]] : memref<25xi64> = dense<[1, 2, 6, 6, 4, 3, 3, 4, 4, 1, 1, 0, 0, 1, 1, 1, 32, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @autocast
// CHECK:      memref.get_global @[[A]]
func.func @autocast(%x: tensor<1x2x6x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 {locus.autocast = bf16} : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// Convolutions of 16-bit operands (--locus-gpu-16bit-convs) call cuDNN with
// their type's flag (bf16 512, f16 1024, no TF32) and 16-bit buffers; the
// generated path, for devices without cuDNN, computes on the operands cast
// up and rounds its result.
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[1, 2, 6, 6, 4, 3, 3, 4, 4, 1, 1, 0, 0, 1, 1, 1, 512, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<25xi64> = dense<[1, 2, 6, 6, 4, 3, 3, 4, 4, 1, 1, 0, 0, 1, 1, 1, 1024, 0, 0, 0, 0, 0, 0, 0, 0]>
// CHECK-LABEL: func.func @sixteen_bits
// CHECK:      scf.if %{{.*}} -> (tensor<1x4x4x4xbf16>) {
// CHECK:        bufferization.to_memref %arg0 read_only : memref<1x2x6x6xbf16>
// CHECK:        memref.alloc() : memref<1x4x4x4xbf16>
// CHECK:        call @locus_cuda_conv2d(
// CHECK:      } else {
// CHECK:        %[[XF:.*]] = locus.cast %arg0 to f32 : tensor<1x2x6x6xbf16> -> tensor<1x2x6x6xf32>
// CHECK:        %[[WF:.*]] = locus.cast %arg1 to f32 : tensor<4x2x3x3xbf16> -> tensor<4x2x3x3xf32>
// CHECK:        %[[YF:.*]] = locus.conv2d %[[XF]], %[[WF]] {{.*}} -> tensor<1x4x4x4xf32>
// CHECK:        %[[Y:.*]] = locus.cast %[[YF]] to bf16 : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xbf16>
// CHECK:        bufferization.materialize_in_destination %[[Y]]
// CHECK:      }
// CHECK:      scf.if %{{.*}} -> (tensor<4x2x3x3xf16>) {
// CHECK:        call @locus_cuda_conv2d(
// CHECK:      } else {
// CHECK:        locus.conv2d_weight_grad {{.*}} -> tensor<4x2x3x3xf32>
// CHECK:      }
func.func @sixteen_bits(%x: tensor<1x2x6x6xbf16>, %w: tensor<4x2x3x3xbf16>, %xh: tensor<1x2x6x6xf16>, %g: tensor<1x4x4x4xf16>) -> (tensor<1x4x4x4xbf16>, tensor<4x2x3x3xf16>) {
  %y = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 {locus.autocast = bf16} : tensor<1x2x6x6xbf16>, tensor<4x2x3x3xbf16> -> tensor<1x4x4x4xbf16>
  %dw = locus.conv2d_weight_grad %xh, %g weight_shape [4, 2, 3, 3] stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x2x6x6xf16>, tensor<1x4x4x4xf16> -> tensor<4x2x3x3xf16>
  return %y, %dw : tensor<1x4x4x4xbf16>, tensor<4x2x3x3xf16>
}

