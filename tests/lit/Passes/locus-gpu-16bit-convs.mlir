// CUDA convolutions whose operands were cast up from one 16-bit type read
// the 16-bit values and give a 16-bit result (cuDNN in 16 bits): a reader
// that cast the f32 result down reads it directly, any other reader gets
// a cast up of its own. On the CPU, with operands of two types, with an
// f32 operand or with a bias, nothing changes.
// RUN: locus-opt %s --locus-gpu-16bit-convs | FileCheck %s
// RUN: locus-opt %s --locus-gpu-16bit-convs --locus-fuse-kernels | FileCheck %s --check-prefix=KERNELS

// CHECK-LABEL: locus.graph @forward
// CHECK-SAME: {
// CHECK: %[[XB:.*]] = locus.cast %x to bf16
// CHECK: %[[WB:.*]] = locus.cast %w to bf16
// The casts up only the convolution read are gone.
// CHECK-NOT: to f32
// CHECK: %[[Y:.*]] = locus.conv2d %[[XB]], %[[WB]] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.autocast = bf16, locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<2x4x8x8xbf16>
// Each reader its own cast up, with the device but not the autocast mark.
// CHECK-NEXT: %[[U1:.*]] = locus.cast %[[Y]] to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[R:.*]] = locus.relu %[[U1]]
// CHECK: %[[U2:.*]] = locus.cast %[[Y]] to f32
// CHECK-NEXT: locus.batch_norm_train %[[U2]]
// CHECK: locus.output "y" = %[[R]]
locus.graph @forward {
  %x = locus.input "x" : tensor<2x3x8x8xf32>
  %w = locus.input "w" : tensor<4x3x3x3xf32>
  %xb = locus.cast %x to bf16 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32> -> tensor<2x3x8x8xbf16>
  %xr = locus.cast %xb to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16> -> tensor<2x3x8x8xf32>
  %wb = locus.cast %w to bf16 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xbf16>
  %wr = locus.cast %wb to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xbf16> -> tensor<4x3x3x3xf32>
  %y = locus.conv2d %xr, %wr stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.autocast = bf16, locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %r = locus.relu %y {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xf32>
  %g = locus.input "g" : tensor<4xf32>
  %n, %mean, %var = locus.batch_norm_train %y, %g, %g eps 1.000000e-05 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xf32>, tensor<4xf32>
  locus.output "y" = %r : tensor<2x4x8x8xf32>
  locus.output "n" = %n : tensor<2x4x8x8xf32>
}

// Gradients as --locus-widen-16bit leaves them: f16 operands cast up, the
// result cast back down. The convolution now gives f16, which the readers
// of the cast down read; the weight gradient shares the input's f16 value.
// CHECK-LABEL: locus.graph @gradients
// CHECK: %[[DX:.*]] = locus.conv2d_input_grad %dy, %w input_shape [2, 3, 8, 8] {{.*}} : tensor<2x4x8x8xf16>, tensor<4x3x3x3xf16> -> tensor<2x3x8x8xf16>
// CHECK-NEXT: %[[DW:.*]] = locus.conv2d_weight_grad %x, %dy weight_shape [4, 3, 3, 3] {{.*}} : tensor<2x3x8x8xf16>, tensor<2x4x8x8xf16> -> tensor<4x3x3x3xf16>
// CHECK-NEXT: locus.output "dx" = %[[DX]] : tensor<2x3x8x8xf16>
// CHECK-NEXT: locus.output "dw" = %[[DW]] : tensor<4x3x3x3xf16>
locus.graph @gradients {
  %x = locus.input "x" : tensor<2x3x8x8xf16>
  %dy = locus.input "dy" : tensor<2x4x8x8xf16>
  %w = locus.input "w" : tensor<4x3x3x3xf16>
  %xf = locus.cast %x to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf16> -> tensor<2x3x8x8xf32>
  %dyf = locus.cast %dy to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xf16> -> tensor<2x4x8x8xf32>
  %wf = locus.cast %w to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xf16> -> tensor<4x3x3x3xf32>
  %dxf = locus.conv2d_input_grad %dyf, %wf input_shape [2, 3, 8, 8] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  %dx = locus.cast %dxf to f16 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf16>
  %dwf = locus.conv2d_weight_grad %xf, %dyf weight_shape [4, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<4x3x3x3xf32>
  %dw = locus.cast %dwf to f16 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf16>
  locus.output "dx" = %dx : tensor<2x3x8x8xf16>
  locus.output "dw" = %dw : tensor<4x3x3x3xf16>
}

// Left alone: on the CPU, operands of bf16 and f16, an operand not cast
// up, a bias (cuDNN's rounded 16-bit result and the bias added after would
// round twice).
// CHECK-LABEL: locus.graph @kept
// CHECK-COUNT-3: locus.conv2d %{{.*}} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
// CHECK: locus.conv2d %{{.*}} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x8x8xf32>
locus.graph @kept {
  %x = locus.input "x" : tensor<2x3x8x8xbf16>
  %w = locus.input "w" : tensor<4x3x3x3xbf16>
  %h = locus.input "h" : tensor<4x3x3x3xf16>
  %wf32 = locus.input "wf32" : tensor<4x3x3x3xf32>
  %xf = locus.cast %x to f32 : tensor<2x3x8x8xbf16> -> tensor<2x3x8x8xf32>
  %wf = locus.cast %w to f32 : tensor<4x3x3x3xbf16> -> tensor<4x3x3x3xf32>
  %y1 = locus.conv2d %xf, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cpu>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %xg = locus.cast %x to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16> -> tensor<2x3x8x8xf32>
  %hf = locus.cast %h to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xf16> -> tensor<4x3x3x3xf32>
  %y2 = locus.conv2d %xg, %hf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %y3 = locus.conv2d %xg, %wf32 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %b = locus.input "b" : tensor<4xf32>
  %wg = locus.cast %w to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xbf16> -> tensor<4x3x3x3xf32>
  %y4 = locus.conv2d %xg, %wg, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x8x8xf32>
  locus.output "y1" = %y1 : tensor<2x4x8x8xf32>
  locus.output "y2" = %y2 : tensor<2x4x8x8xf32>
  locus.output "y3" = %y3 : tensor<2x4x8x8xf32>
  locus.output "y4" = %y4 : tensor<2x4x8x8xf32>
}

// Kept too: a convolution whose result nothing rounds (operands rounded on
// purpose, no autocast mark, an f32 reader), and a weight gradient that an
// all-reduce reads first (data-parallel training sums it in f32, then
// rounds it once).
// CHECK-LABEL: locus.graph @not_rounded
// CHECK: locus.conv2d %{{.*}} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
// CHECK: locus.conv2d_weight_grad %{{.*}} : tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<4x3x3x3xf32>
locus.graph @not_rounded {
  %x = locus.input "x" : tensor<2x3x8x8xbf16>
  %w = locus.input "w" : tensor<4x3x3x3xbf16>
  %dy = locus.input "dy" : tensor<2x4x8x8xbf16>
  %xf = locus.cast %x to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16> -> tensor<2x3x8x8xf32>
  %wf = locus.cast %w to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xbf16> -> tensor<4x3x3x3xf32>
  %dyf = locus.cast %dy to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %y = locus.conv2d %xf, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %dw = locus.conv2d_weight_grad %xf, %dyf weight_shape [4, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.autocast = bf16, locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<4x3x3x3xf32>
  %r = locus.all_reduce mean bucket 0, %dw {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xf32>
  %rb = locus.cast %r to bf16 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xbf16>
  locus.output "y" = %y : tensor<2x4x8x8xf32>
  locus.output "dw" = %rb : tensor<4x3x3x3xbf16>
}

// One reader that is no elementwise op: its cast up goes to the reader's
// kernel, not to the convolution's (where, alone after the cuDNN call, it
// would be a launch writing f32). An elementwise reader and the cast join
// the convolution's kernel as one loop reading the 16-bit result.
// (KERNELS checks at the end of the file.)
locus.graph @one_reader {
  %x = locus.input "x" : tensor<2x3x8x8xbf16>
  %w = locus.input "w" : tensor<4x3x3x3xbf16>
  %xf = locus.cast %x to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16> -> tensor<2x3x8x8xf32>
  %wf = locus.cast %w to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xbf16> -> tensor<4x3x3x3xf32>
  %y = locus.conv2d %xf, %wf stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.autocast = bf16, locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %r = locus.softmax %y axis 1 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xf32>
  locus.output "r" = %r : tensor<2x4x8x8xf32>
}

// After fusion, each cast up stands in its reader's kernel: the relu's,
// and the batch norm's as its prologue. The convolution's kernel gives
// bf16.
// KERNELS-LABEL: locus.graph @forward
// KERNELS: locus.kernel on
// KERNELS: locus.conv2d
// KERNELS-NEXT: locus.yield {{.*}} : tensor<2x4x8x8xbf16>
// KERNELS: locus.kernel on
// KERNELS-NEXT: locus.cast %{{.*}} to f32
// KERNELS-NEXT: locus.relu
// KERNELS: locus.kernel on
// KERNELS-NEXT: locus.cast %{{.*}} to f32
// KERNELS-NEXT: locus.batch_norm_train
// KERNELS-LABEL: locus.graph @one_reader
// KERNELS: locus.kernel on
// KERNELS-NEXT: locus.conv2d
// KERNELS-NEXT: locus.yield {{.*}} : tensor<2x4x8x8xbf16>
// KERNELS: locus.kernel on
// KERNELS-NEXT: locus.cast %{{.*}} to f32
// KERNELS-NEXT: locus.softmax
