// On the CPU, the cast up of a 16-bit value that convolutions read as
// their input or weight joins each convolution's kernel (one cast per
// such read; the cast stays for any other reader): the runtime's call then
// reads the 16-bit value (--locus-conv-to-runtime), where a kernel wrote
// an f32 copy for it. And --locus-conv-layouts sees through those casts.
// RUN: locus-opt %s -split-input-file --locus-fuse-kernels | FileCheck %s
// RUN: locus-opt %s -split-input-file --locus-fuse-kernels --locus-conv-layouts | FileCheck %s --check-prefix=LAYOUT

// Two autocast blocks: the input's and weights' roundings are kernels of
// their own; each convolution's kernel casts its operands up, and its
// result's rounding is in it. The second block's output is read by two
// convolutions (each with its cast, a weight shared too) and a neg (which
// takes the cast that stays).
// CHECK-LABEL: locus.graph @block
// CHECK-SAME: locus.kernels = 8
// CHECK: %[[XB:.*]] = locus.kernel on <cpu> -> tensor<2x16x6x6xbf16> {
// CHECK-NEXT: locus.cast %x to bf16
// CHECK-NEXT: locus.yield
// CHECK: %[[W1:.*]] = locus.kernel on <cpu> -> tensor<16x16x3x3xbf16> {
// CHECK-NEXT: locus.cast %w1 to bf16
// CHECK-NEXT: locus.yield
// CHECK: %[[C1:.*]] = locus.kernel on <cpu> -> tensor<2x16x6x6xbf16> {
// CHECK-NEXT: %[[XF:.*]] = locus.cast %[[XB]] to f32
// CHECK-NEXT: %[[WF:.*]] = locus.cast %[[W1]] to f32
// CHECK-NEXT: %[[C:.*]] = locus.conv2d %[[XF]], %[[WF]]
// CHECK-NEXT: %[[R:.*]] = locus.relu %[[C]]
// CHECK-NEXT: %[[RB:.*]] = locus.cast %[[R]] to bf16
// CHECK-NEXT: locus.yield %[[RB]] : tensor<2x16x6x6xbf16>
// CHECK: %[[W2:.*]] = locus.kernel on <cpu> -> tensor<16x16x3x3xbf16> {
// CHECK: %[[C2:.*]]:2 = locus.kernel on <cpu> -> tensor<2x16x6x6xf32>, tensor<2x16x6x6xbf16> {
// CHECK-NEXT: locus.cast %[[C1]] to f32
// CHECK-NEXT: locus.cast %[[W2]] to f32
// CHECK-NEXT: locus.conv2d
// CHECK-NEXT: locus.add
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x16x6x6xf32> {
// CHECK-NEXT: %[[A:.*]] = locus.cast %[[W1]] to f32
// CHECK-NEXT: %[[B:.*]] = locus.cast %[[C2]]#1 to f32
// CHECK-NEXT: locus.conv2d %[[B]], %[[A]]
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x16x4x4xf32> {
// CHECK-NEXT: %[[A:.*]] = locus.cast %[[W2]] to f32
// CHECK-NEXT: %[[B:.*]] = locus.cast %[[C2]]#1 to f32
// CHECK-NEXT: locus.conv2d %[[B]], %[[A]]
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x16x6x6xf32> {
// CHECK-NEXT: %[[N:.*]] = locus.cast %[[C2]]#1 to f32
// CHECK-NEXT: locus.neg %[[N]]
// The first convolution's bf16 result is read by the second's call alone:
// NHWC. The second block's kernel (a call and the rounding of its result
// beside it) has readers that are no calls (a neg, the graph's output).
// LAYOUT-LABEL: locus.graph @block
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_result}
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_input}
// LAYOUT-NOT: locus.nhwc
locus.graph @block {
  %x = locus.input "x" : tensor<2x16x6x6xf32>
  %w1 = locus.input "w1" : tensor<16x16x3x3xf32>
  %w2 = locus.input "w2" : tensor<16x16x3x3xf32>
  %xb = locus.cast %x to bf16 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xbf16>
  %xf = locus.cast %xb to f32 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xbf16> -> tensor<2x16x6x6xf32>
  %w1b = locus.cast %w1 to bf16 {locus.device = #locus.device<cpu>} : tensor<16x16x3x3xf32> -> tensor<16x16x3x3xbf16>
  %w1f = locus.cast %w1b to f32 {locus.device = #locus.device<cpu>} : tensor<16x16x3x3xbf16> -> tensor<16x16x3x3xf32>
  %c1 = locus.conv2d %xf, %w1f stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x6x6xf32>
  %r1 = locus.relu %c1 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>
  %r1b = locus.cast %r1 to bf16 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xbf16>
  %r1f = locus.cast %r1b to f32 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xbf16> -> tensor<2x16x6x6xf32>
  %w2b = locus.cast %w2 to bf16 {locus.device = #locus.device<cpu>} : tensor<16x16x3x3xf32> -> tensor<16x16x3x3xbf16>
  %w2f = locus.cast %w2b to f32 {locus.device = #locus.device<cpu>} : tensor<16x16x3x3xbf16> -> tensor<16x16x3x3xf32>
  %c2 = locus.conv2d %r1f, %w2f stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x6x6xf32>
  %a2 = locus.add %c2, %x {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>
  %r2 = locus.relu %a2 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>
  %r2b = locus.cast %r2 to bf16 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xbf16>
  %r2f = locus.cast %r2b to f32 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xbf16> -> tensor<2x16x6x6xf32>
  %c3 = locus.conv2d %r2f, %w1f stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x6x6xf32>
  %c4 = locus.conv2d %r2f, %w2f stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x4x4xf32>
  %n = locus.neg %r2f {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>
  locus.output "y" = %c3 : tensor<2x16x6x6xf32>
  locus.output "z" = %c4 : tensor<2x16x4x4xf32>
  locus.output "n" = %n : tensor<2x16x6x6xf32>
  locus.output "r" = %r2 : tensor<2x16x6x6xf32>
}

// -----

// A chain of autocast convolutions whose 16-bit values only calls read:
// NHWC between them, seen through the casts up of their inputs.
// CHECK-LABEL: locus.graph @chain
// CHECK: locus.kernel on <cpu> -> tensor<1x32x8x8xbf16> {
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.cast
// CHECK-NEXT: locus.conv2d
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.cast
// LAYOUT-LABEL: locus.graph @chain
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_result}
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_input}
locus.graph @chain {
  %x = locus.input "x" : tensor<1x32x8x8xbf16>
  %w = locus.input "w" : tensor<32x32x3x3xbf16>
  %xf = locus.cast %x to f32 {locus.device = #locus.device<cpu>} : tensor<1x32x8x8xbf16> -> tensor<1x32x8x8xf32>
  %wf = locus.cast %w to f32 {locus.device = #locus.device<cpu>} : tensor<32x32x3x3xbf16> -> tensor<32x32x3x3xf32>
  %c1 = locus.conv2d %xf, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x8x8xf32>
  %r1 = locus.relu %c1 {locus.device = #locus.device<cpu>} : tensor<1x32x8x8xf32>
  %r1b = locus.cast %r1 to bf16 {locus.device = #locus.device<cpu>} : tensor<1x32x8x8xf32> -> tensor<1x32x8x8xbf16>
  %r1f = locus.cast %r1b to f32 {locus.device = #locus.device<cpu>} : tensor<1x32x8x8xbf16> -> tensor<1x32x8x8xf32>
  %c2 = locus.conv2d %r1f, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32> -> tensor<1x32x8x8xf32>
  locus.output "y" = %c2 : tensor<1x32x8x8xf32>
}

// -----

// On a GPU, and as a convolution's bias, the cast up stays where it was.
// CHECK-LABEL: locus.graph @not_here
// CHECK: locus.kernel on <cuda:0> -> tensor<1x8x4x4xf32> {
// CHECK-NEXT: locus.cast %x to f32
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<8xf32> {
// CHECK-NEXT: locus.cast %b to f32
// CHECK-NEXT: locus.yield
locus.graph @not_here {
  %x = locus.input "x" : tensor<1x8x4x4xbf16> on <cuda:0>
  %w = locus.input "w" : tensor<8x8x1x1xf32> on <cuda:0>
  %b = locus.input "b" : tensor<8xbf16>
  %wc = locus.input "wc" : tensor<8x8x1x1xf32>
  %xc = locus.input "xc" : tensor<1x8x4x4xf32>
  %xf = locus.cast %x to f32 {locus.device = #locus.device<cuda:0>} : tensor<1x8x4x4xbf16> -> tensor<1x8x4x4xf32>
  %c = locus.conv2d %xf, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x4x4xf32>
  %bf = locus.cast %b to f32 {locus.device = #locus.device<cpu>} : tensor<8xbf16> -> tensor<8xf32>
  %d = locus.conv2d %xc, %wc, %bf stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, tensor<8xf32> -> tensor<1x8x4x4xf32>
  locus.output "c" = %c : tensor<1x8x4x4xf32>
  locus.output "d" = %d : tensor<1x8x4x4xf32>
}

// -----

// Two autocast ResNet blocks: the first block's output is its call's f32
// result and that result's rounding, given side by side; the next block
// adds the first (its residual) and its first convolution reads the
// second. Both only calls read: the call writes NHWC, the rounding keeps
// the layout, and both readers read NHWC.
// LAYOUT-LABEL: locus.graph @blocks
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_result}
// LAYOUT: locus.kernel on <cpu> -> tensor<1x16x6x6xf32>, tensor<1x16x6x6xbf16>
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_input, locus.nhwc_result}
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_input, locus.nhwc_result}
// LAYOUT: locus.conv2d {{.*}} {locus.device = #locus.device<cpu>, locus.nhwc_input, locus.nhwc_residual}
locus.graph @blocks {
  %x = locus.input "x" : tensor<1x16x6x6xf32>
  %w = locus.input "w" : tensor<16x16x3x3xbf16>
  %xb = locus.cast %x to bf16 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32> -> tensor<1x16x6x6xbf16>
  %xf = locus.cast %xb to f32 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xbf16> -> tensor<1x16x6x6xf32>
  %wf = locus.cast %w to f32 {locus.device = #locus.device<cpu>} : tensor<16x16x3x3xbf16> -> tensor<16x16x3x3xf32>
  %c0 = locus.conv2d %xf, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  %b0 = locus.cast %c0 to bf16 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32> -> tensor<1x16x6x6xbf16>
  %b0f = locus.cast %b0 to f32 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xbf16> -> tensor<1x16x6x6xf32>
  %c1 = locus.conv2d %b0f, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  %a1 = locus.add %c1, %x {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>
  %r1 = locus.relu %a1 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>
  %r1b = locus.cast %r1 to bf16 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32> -> tensor<1x16x6x6xbf16>
  %r1f = locus.cast %r1b to f32 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xbf16> -> tensor<1x16x6x6xf32>
  %c2 = locus.conv2d %r1f, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  %b2 = locus.cast %c2 to bf16 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32> -> tensor<1x16x6x6xbf16>
  %b2f = locus.cast %b2 to f32 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xbf16> -> tensor<1x16x6x6xf32>
  %c3 = locus.conv2d %b2f, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<1x16x6x6xf32>
  %a3 = locus.add %c3, %r1 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>
  %r3 = locus.relu %a3 {locus.device = #locus.device<cpu>} : tensor<1x16x6x6xf32>
  locus.output "y" = %r3 : tensor<1x16x6x6xf32>
}

// -----

// The gradients too: a rounded dy that both gradients read (one cast each,
// in each gradient's kernel), and the rounded x and weight.
// CHECK-LABEL: locus.graph @grads
// CHECK: locus.kernel on <cpu> -> tensor<2x16x6x6xf32> {
// CHECK-NEXT: %[[B:.*]] = locus.cast %w to f32
// CHECK-NEXT: %[[A:.*]] = locus.cast %dy to f32
// CHECK-NEXT: locus.conv2d_input_grad %[[A]], %[[B]]
// CHECK: locus.kernel on <cpu> -> tensor<8x16x3x3xf32> {
// CHECK-NEXT: %[[C:.*]] = locus.cast %x to f32
// CHECK-NEXT: %[[D:.*]] = locus.cast %dy to f32
// CHECK-NEXT: locus.conv2d_weight_grad %[[C]], %[[D]]
locus.graph @grads {
  %dy = locus.input "dy" : tensor<2x8x6x6xbf16>
  %w = locus.input "w" : tensor<8x16x3x3xbf16>
  %x = locus.input "x" : tensor<2x16x6x6xbf16>
  %dyf = locus.cast %dy to f32 {locus.device = #locus.device<cpu>} : tensor<2x8x6x6xbf16> -> tensor<2x8x6x6xf32>
  %wf = locus.cast %w to f32 {locus.device = #locus.device<cpu>} : tensor<8x16x3x3xbf16> -> tensor<8x16x3x3xf32>
  %xf = locus.cast %x to f32 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xbf16> -> tensor<2x16x6x6xf32>
  %dx = locus.conv2d_input_grad %dyf, %wf input_shape [2, 16, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x8x6x6xf32>, tensor<8x16x3x3xf32> -> tensor<2x16x6x6xf32>
  %dw = locus.conv2d_weight_grad %xf, %dyf weight_shape [8, 16, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x16x6x6xf32>, tensor<2x8x6x6xf32> -> tensor<8x16x3x3xf32>
  locus.output "dx" = %dx : tensor<2x16x6x6xf32>
  locus.output "dw" = %dw : tensor<8x16x3x3xf32>
}
