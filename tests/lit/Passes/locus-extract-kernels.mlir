// The graph leaves; the host keeps every kernel function, CUDA only those
// placed on a CUDA device, renamed <f>__cuda.
// RUN: locus-opt %s --locus-extract-kernels | FileCheck %s --check-prefix=HOST
// RUN: locus-opt %s --locus-extract-kernels=target=cuda | FileCheck %s --check-prefix=CUDA
// RUN: not locus-opt %s --locus-extract-kernels=target=tpu 2>&1 | FileCheck %s --check-prefix=BAD

// HOST-NOT: locus.graph
// HOST: func.func @g_k0_relu(
// HOST: func.func @g_k1_neg(
// HOST: func.func private @helper(

// CUDA-NOT: locus.graph
// CUDA-NOT: @g_k1_neg
// CUDA-NOT: @helper
// CUDA: func.func @g_k0_relu__cuda(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cuda:0>}
// CUDA-NOT: @g_k1_neg
// CUDA-NOT: @helper

// BAD: unknown target 'tpu'; expected host or cuda

locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  %0 = func.call @g_k0_relu(%x) {locus.device = #locus.device<cuda:0>} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @g_k1_neg(%0) {locus.device = #locus.device<cpu>} : (tensor<4xf32>) -> tensor<4xf32>
  locus.output "y" = %1 : tensor<4xf32>
}
func.func @g_k0_relu(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cuda:0>} {
  %r = locus.relu %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @g_k1_neg(%a: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cpu>} {
  %r = locus.neg %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
