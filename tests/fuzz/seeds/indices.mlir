// A fuzz seed with index inputs: an embedding lookup (gather) and a
// cross-entropy loss over class labels, both read from the fuzz bytes.
module {
  locus.graph @indices {
    %ids = locus.input "ids" : tensor<8xi64>
    %labels = locus.input "labels" : tensor<8xi64>
    %table = locus.state "embedding" parameter : tensor<50x10xf32> init <uniform(-1.0, 1.0), seed = 7>
    %e = locus.gather %table, %ids axis 0 : tensor<50x10xf32>, tensor<8xi64> -> tensor<8x10xf32>
    %loss = locus.cross_entropy %e, %labels mean : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
    locus.output "e" = %e : tensor<8x10xf32>
    locus.output "loss" = %loss : tensor<f32>
  }
}
