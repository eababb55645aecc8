// torch.autocast's contract on a recorded training step: the products,
// forward and backward, take bf16 (or f16) operands, each value is cast
// once however many products read it, a 16-bit result read by another
// product is not cast up and down again, and everything else (the relu,
// the loss, the weights and the optimizer) stays f32.
// RUN: locus-opt %s --locus-autocast=precision=bf16 | FileCheck %s
// RUN: locus-opt %s --locus-autocast=precision=f16 | FileCheck %s --check-prefix=F16
// RUN: locus-opt %s --locus-autocast=precision=fp32 | FileCheck %s --check-prefix=FP32
// RUN: locus-opt %s --locus-autocast=precision=tf32 | FileCheck %s --check-prefix=FP32
// RUN: not locus-opt %s --locus-autocast=precision=fp8 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: --locus-autocast: precision must be fp32, tf32, bf16 or f16, not 'fp8'

// CHECK-LABEL: locus.graph @step
// CHECK: %x = locus.input "x"
// CHECK-NEXT: %[[XB:.*]] = locus.cast %x to bf16 : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK: %w = locus.state "w"
// CHECK-NEXT: %[[WB:.*]] = locus.cast %w to bf16 : tensor<3x4xf32> -> tensor<3x4xbf16>
// CHECK: %[[Y:.*]] = locus.linear %[[XB]], %[[WB]] {locus.autocast = bf16} : tensor<8x4xbf16>, tensor<3x4xbf16> -> tensor<8x3xbf16>
// CHECK-NEXT: %[[YF:.*]] = locus.cast %[[Y]] to f32
// A product of a product: the bf16 result itself, no cast up and down.
// CHECK: locus.matmul %[[Y]], %{{.*}} {locus.autocast = bf16} : tensor<8x3xbf16>, tensor<3x3xbf16> -> tensor<8x3xbf16>
// CHECK: locus.relu %[[YF]] : tensor<8x3xf32>
// The weight's gradient: bf16 operands, the f32 result the optimizer reads.
// CHECK: %[[G:.*]] = locus.matmul %{{.*}}, %[[XB]] {locus.autocast = bf16, locus.gradient} : tensor<3x8xbf16>, tensor<8x4xbf16> -> tensor<3x4xbf16>
// CHECK-NEXT: %[[GF:.*]] = locus.cast %[[G]] to f32
// CHECK: locus.sgd %w, %[[GF]]
// CHECK-NOT: locus.cast %x to bf16

// F16: locus.linear %{{.*}}, %{{.*}} {locus.autocast = f16} : tensor<8x4xf16>, tensor<3x4xf16> -> tensor<8x3xf16>
// FP32-NOT: locus.cast
// FP32-NOT: locus.autocast
locus.graph @step {
  %x = locus.input "x" : tensor<8x4xf32>
  %w = locus.state "w" parameter : tensor<3x4xf32> init <uniform(-0.3, 0.3), seed = 1>
  %v = locus.state "v" buffer : tensor<3x3xf32> init <uniform(-0.3, 0.3), seed = 2>
  %y = locus.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  %p = locus.matmul %y, %v : tensor<8x3xf32>, tensor<3x3xf32> -> tensor<8x3xf32>
  %r = locus.relu %y : tensor<8x3xf32>
  %s = locus.add %r, %p : tensor<8x3xf32>
  %g = locus.input "g" : tensor<8x3xf32>
  %gt = locus.transpose %g [1, 0] : tensor<8x3xf32> -> tensor<3x8xf32>
  %dw = locus.matmul %gt, %x {locus.gradient} : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
  %lr = locus.state "lr" buffer : tensor<f32> init <full(0.01)>
  %nw = locus.sgd %w, %dw lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<3x4xf32> -> tensor<3x4xf32>
  locus.assign %w = %nw : tensor<3x4xf32>, tensor<3x4xf32>
  locus.output "s" = %s : tensor<8x3xf32>
}

// A convolution keeps its f32 type: its operands are rounded (cast down
// and up once per value), it accumulates in f32, and its result is f32,
// so the ReLU after it stays its epilogue.
// CHECK-LABEL: locus.graph @conv
// CHECK: %[[XB:.*]] = locus.cast %x to bf16
// CHECK-NEXT: %[[XR:.*]] = locus.cast %[[XB]] to f32
// CHECK: %[[WB:.*]] = locus.cast %w to bf16
// CHECK-NEXT: %[[WR:.*]] = locus.cast %[[WB]] to f32
// CHECK: %[[C:.*]] = locus.conv2d %[[XR]], %[[WR]] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.autocast = bf16} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT: locus.relu %[[C]] : tensor<1x4x6x6xf32>
locus.graph @conv {
  %x = locus.input "x" : tensor<1x4x6x6xf32>
  %w = locus.state "w" parameter : tensor<4x4x3x3xf32> init <uniform(-0.3, 0.3), seed = 1>
  %c = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  %r = locus.relu %c : tensor<1x4x6x6xf32>
  locus.output "r" = %r : tensor<1x4x6x6xf32>
}

// A linear layer of one row against a small weight no step writes stays
// f32 (a bf16 call would cost more than it saves), and says so; one of
// eight rows takes bf16.
// CHECK-LABEL: locus.graph @rows
// CHECK: locus.linear %one, %w {locus.autocast = f32} : tensor<1x4xf32>, tensor<3x4xf32> -> tensor<1x3xf32>
// CHECK: locus.linear %{{.*}}, %{{.*}} {locus.autocast = bf16} : tensor<8x4xbf16>, tensor<3x4xbf16> -> tensor<8x3xbf16>
locus.graph @rows {
  %one = locus.input "one" : tensor<1x4xf32>
  %eight = locus.input "eight" : tensor<8x4xf32>
  %w = locus.state "w" parameter : tensor<3x4xf32> init <uniform(-0.3, 0.3), seed = 1>
  %a = locus.linear %one, %w : tensor<1x4xf32>, tensor<3x4xf32> -> tensor<1x3xf32>
  %b = locus.linear %eight, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  locus.output "a" = %a : tensor<1x3xf32>
  locus.output "b" = %b : tensor<8x3xf32>
}

// Against a weight of 2^17 elements or more a product of one row takes
// bf16 when no step writes the weight (its cast runs once, at load), and
// stays f32 when a step does (its cast would run every step).
// CHECK-LABEL: locus.graph @large_weights
// CHECK: locus.linear %{{.*}}, %{{.*}} {locus.autocast = bf16} : tensor<1x512xbf16>, tensor<256x512xbf16> -> tensor<1x256xbf16>
// CHECK: locus.linear %one, %trained {locus.autocast = f32} : tensor<1x512xf32>, tensor<256x512xf32> -> tensor<1x256xf32>
// CHECK: locus.matmul %{{.*}}, %{{.*}} {locus.autocast = f32} : tensor<1x512xf32>, tensor<512x255xf32> -> tensor<1x255xf32>
locus.graph @large_weights {
  %one = locus.input "one" : tensor<1x512xf32>
  %frozen = locus.state "frozen" parameter : tensor<256x512xf32> init <uniform(-0.3, 0.3), seed = 1>
  %trained = locus.state "trained" parameter : tensor<256x512xf32> init <uniform(-0.3, 0.3), seed = 2>
  %small = locus.state "small" parameter : tensor<512x255xf32> init <uniform(-0.3, 0.3), seed = 3>
  %a = locus.linear %one, %frozen : tensor<1x512xf32>, tensor<256x512xf32> -> tensor<1x256xf32>
  %b = locus.linear %one, %trained : tensor<1x512xf32>, tensor<256x512xf32> -> tensor<1x256xf32>
  %c = locus.matmul %one, %small : tensor<1x512xf32>, tensor<512x255xf32> -> tensor<1x255xf32>
  %half = locus.constant dense<0.5> : tensor<256x512xf32>
  %next = locus.mul %trained, %half : tensor<256x512xf32>
  locus.assign %trained = %next : tensor<256x512xf32>, tensor<256x512xf32>
  locus.output "a" = %a : tensor<1x256xf32>
  locus.output "b" = %b : tensor<1x256xf32>
  locus.output "c" = %c : tensor<1x255xf32>
}

// A product of views (reshape, transpose, slice) of a value: the views move
// the 16-bit value, and a 16-bit result cast up is read as it was (no cast
// down after the views). A view read in f32 too keeps its f32 original.
// CHECK-LABEL: locus.graph @views
// CHECK: %[[P:.*]] = locus.linear %{{.*}} : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[PF:.*]] = locus.cast %[[P]] to f32
// CHECK-NEXT: %[[R:.*]] = locus.reshape %[[PF]] [2, 4, 16] : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[RB:.*]] = locus.reshape %[[P]] [2, 4, 16] : tensor<8x16xbf16> -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[T:.*]] = locus.transpose %[[R]] [0, 2, 1] : tensor<2x4x16xf32> -> tensor<2x16x4xf32>
// CHECK-NEXT: %[[TB:.*]] = locus.transpose %[[RB]] [0, 2, 1] : tensor<2x4x16xbf16> -> tensor<2x16x4xbf16>
// CHECK-NEXT: %[[S:.*]] = locus.slice %[[RB]] offsets [0, 0, 0] sizes [2, 4, 8] strides [1, 1, 1] : tensor<2x4x16xbf16> -> tensor<2x4x8xbf16>
// CHECK-NOT: locus.cast
// CHECK: locus.matmul %[[S]], %{{.*}} : tensor<2x4x8xbf16>, tensor<2x8x4xbf16> -> tensor<2x4x4xbf16>
// CHECK: locus.output "t" = %[[T]]
locus.graph @views {
  %x = locus.input "x" : tensor<8x16xf32>
  %w = locus.state "w" parameter : tensor<16x16xf32> init <uniform(-0.3, 0.3), seed = 1>
  %p = locus.linear %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %r = locus.reshape %p [2, 4, 16] : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %t = locus.transpose %r [0, 2, 1] : tensor<2x4x16xf32> -> tensor<2x16x4xf32>
  %s = locus.slice %r offsets [0, 0, 0] sizes [2, 4, 8] strides [1, 1, 1] : tensor<2x4x16xf32> -> tensor<2x4x8xf32>
  %u = locus.slice %t offsets [0, 0, 0] sizes [2, 8, 4] strides [1, 1, 1] : tensor<2x16x4xf32> -> tensor<2x8x4xf32>
  %m = locus.matmul %s, %u : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  locus.output "t" = %t : tensor<2x16x4xf32>
  locus.output "m" = %m : tensor<2x4x4xf32>
}
