// What --locus-conv-to-cudnn refuses.
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-conv-to-cudnn

// cuDNN adds no 16-bit bias here (--locus-gpu-16bit-convs leaves
// convolutions with a bias in f32).
func.func @sixteen_bits_bias(%x: tensor<1x2x6x6xbf16>, %w: tensor<4x2x3x3xbf16>, %b: tensor<4xbf16>) -> tensor<1x4x4x4xbf16> {
  // expected-error @+1 {{'locus.conv2d' op of 16-bit operands with a bias has no cuDNN call; add the bias after the convolution}}
  %y = locus.conv2d %x, %w, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x2x6x6xbf16>, tensor<4x2x3x3xbf16>, tensor<4xbf16> -> tensor<1x4x4x4xbf16>
  return %y : tensor<1x4x4x4xbf16>
}
