// RUN: locus-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(locus.graph(locus-fuse-kernels))'

locus.graph @unresolved {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{'locus.to' op must be resolved by --locus-insert-transfers before fusion}}
  %0 = locus.to <cuda:0>, %x : tensor<4xf32>
  locus.output "y" = %0 : tensor<4xf32>
}

// -----

locus.graph @twice {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{'locus.kernel' op the graph is fused already}}
  %0 = locus.kernel on <cpu> -> tensor<4xf32> {
    %1 = locus.relu %x : tensor<4xf32>
    locus.yield %1 : tensor<4xf32>
  }
  locus.output "y" = %0 : tensor<4xf32>
}

// -----

locus.graph @badyield {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{'locus.kernel' op yields 0 values whose types differ from the kernel's 1 results}}
  %0 = locus.kernel on <cpu> -> tensor<4xf32> {
    locus.yield
  }
  locus.output "y" = %0 : tensor<4xf32>
}

