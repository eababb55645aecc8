locus.graph @mlp attributes {locus.symbols = [["batch", 256]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 784)>} : tensor<256x784xf32>
  %w = locus.state "w" parameter : tensor<10x784xf32> init <full(0.0)>
  %b = locus.state "b" parameter : tensor<10xf32> init <full(0.0)>
  %y = locus.linear %x, %w, %b : tensor<256x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<256x10xf32>
  %r = locus.relu %y : tensor<256x10xf32>
  %s = locus.sum %r axes [0] : tensor<256x10xf32> -> tensor<10xf32>
  locus.output "r" = %r : tensor<256x10xf32>
  locus.output "s" = %s : tensor<10xf32>
}
