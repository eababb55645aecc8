locus.graph @onerow {
  %x = locus.input "x" : tensor<1x4xf32>
  %w = locus.state "w" parameter : tensor<3x4xf32> init <uniform(-0.3, 0.3), seed = 1>
  %y = locus.linear %x, %w : tensor<1x4xf32>, tensor<3x4xf32> -> tensor<1x3xf32>
  locus.output "y" = %y : tensor<1x3xf32>
}
