// RUN: locus-opt %s -verify-diagnostics --locus-outline-kernels

locus.graph @unfused {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{'locus.relu' op is not in a kernel: run --locus-fuse-kernels before --locus-outline-kernels}}
  %0 = locus.relu %x : tensor<4xf32>
  locus.output "y" = %0 : tensor<4xf32>
}
