// Values that convolution calls alone write and read stay NHWC: the writer
// gets locus.nhwc_result, each reader locus.nhwc_input or
// locus.nhwc_residual. A value anything else reads stays NCHW.
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels,locus-conv-layouts))' | FileCheck %s
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels{fuse=false},locus-conv-layouts))' | FileCheck %s --check-prefix=UNFUSED

// A ResNet block, pooled, then a convolution: the block's first result is
// read as the second call's input and residual, the pooled result by the
// last call; the last result is the graph's output.
// CHECK-LABEL: locus.graph @chain
// CHECK: locus.conv2d %x, %w1, %b1 {{.*}}{locus.device = #locus.device<cpu>, locus.nhwc_result,
// CHECK: locus.conv2d %{{.*}}, %w2 {{.*}}{locus.device = #locus.device<cpu>, locus.nhwc_input, locus.nhwc_residual, locus.nhwc_result,
// CHECK: locus.max_pool2d
// CHECK: locus.conv2d %{{.*}}, %w3 {{.*}}{locus.device = #locus.device<cpu>, locus.nhwc_input, locus.placement
// Without fusion no kernel is one call with its epilogue's readers: nothing
// changes.
// UNFUSED-LABEL: locus.graph @chain
// UNFUSED-NOT: nhwc
locus.graph @chain {
  %x = locus.input "x" : tensor<2x3x7x7xf32>
  %w1 = locus.input "w1" : tensor<16x3x3x3xf32>
  %b1 = locus.input "b1" : tensor<16xf32>
  %w2 = locus.input "w2" : tensor<16x16x3x3xf32>
  %w3 = locus.input "w3" : tensor<5x16x3x3xf32>
  %0 = locus.conv2d %x, %w1, %b1 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x7x7xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<2x16x7x7xf32>
  %1 = locus.relu %0 : tensor<2x16x7x7xf32>
  %2 = locus.conv2d %1, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x16x7x7xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x7x7xf32>
  %3 = locus.add %2, %1 : tensor<2x16x7x7xf32>
  %4 = locus.relu %3 : tensor<2x16x7x7xf32>
  %5 = locus.max_pool2d %4 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x16x7x7xf32> -> tensor<2x16x3x3xf32>
  %6 = locus.conv2d %5, %w3 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x16x3x3xf32>, tensor<5x16x3x3xf32> -> tensor<2x5x3x3xf32>
  locus.output "y" = %6 : tensor<2x5x3x3xf32>
}

// -----

// The first result is also an output, and the second convolution's kernel
// holds an op its call does not fuse (a scaling): neither value is NHWC.
// CHECK-LABEL: locus.graph @read_elsewhere
// CHECK-NOT: nhwc
// CHECK: locus.output "z"
locus.graph @read_elsewhere {
  %x = locus.input "x" : tensor<1x16x6x6xf32>
  %w = locus.input "w" : tensor<16x16x3x3xf32>
  %s = locus.input "s" : tensor<1x16x6x6xf32>
  %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  %1 = locus.relu %0 : tensor<1x16x6x6xf32>
  %2 = locus.conv2d %1, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  %3 = locus.mul %2, %s : tensor<1x16x6x6xf32>
  %4 = locus.conv2d %3, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  locus.output "y" = %1 : tensor<1x16x6x6xf32>
  locus.output "z" = %4 : tensor<1x16x6x6xf32>
}

// -----

// Fewer channels than a vector has floats: the readers take NCHW as it
// lies (oneDNN's direct kernel), so the value stays NCHW.
// CHECK-LABEL: locus.graph @few_channels
// CHECK-NOT: nhwc
// CHECK: locus.output
locus.graph @few_channels {
  %x = locus.input "x" : tensor<2x3x7x7xf32>
  %w1 = locus.input "w1" : tensor<8x3x3x3xf32>
  %w2 = locus.input "w2" : tensor<16x8x3x3xf32>
  %0 = locus.conv2d %x, %w1 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x7x7xf32>, tensor<8x3x3x3xf32> -> tensor<2x8x7x7xf32>
  %1 = locus.relu %0 : tensor<2x8x7x7xf32>
  %2 = locus.conv2d %1, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x8x7x7xf32>, tensor<16x8x3x3xf32> -> tensor<2x16x7x7xf32>
  locus.output "y" = %2 : tensor<2x16x7x7xf32>
}
