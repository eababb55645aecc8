// Two layers of one shape: their kernels differ in source lines only.
module {
  locus.graph @twice {
    %x = locus.input "x" : tensor<4x8xf32>
    %w1 = locus.state "w1" parameter : tensor<8x8xf32> init <full(0.125)>
    %b1 = locus.state "b1" parameter : tensor<8xf32> init <full(0.5)>
    %w2 = locus.state "w2" parameter : tensor<8x8xf32> init <full(0.125)>
    %b2 = locus.state "b2" parameter : tensor<8xf32> init <full(0.5)>
    %0 = locus.linear %x, %w1, %b1 : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %1 = locus.tanh %0 : tensor<4x8xf32>
    %2 = locus.linear %1, %w2, %b2 : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %3 = locus.tanh %2 : tensor<4x8xf32>
    locus.output "y" = %3 : tensor<4x8xf32>
  }
}
