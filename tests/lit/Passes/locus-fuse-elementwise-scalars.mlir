// Adam's bias corrections are a scalar producer (no loops) whose three
// results the update reads: with scalars-into-readers (the CUDA lowering)
// they fuse into the update, each element recomputing them; without it
// (the host) they stay a loop-free op of their own.
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus-lower-to-linalg,locus-fuse-elementwise{scalars-into-readers=true})' | FileCheck %s --check-prefix=GPU
// RUN: locus-opt %s --locus-lower-to-linalg --locus-fuse-elementwise | FileCheck %s --check-prefix=HOST

// GPU-LABEL: func.func @adam
// GPU: linalg.generic {{.*}}iterator_types = ["parallel"]
// GPU: math.powf
// GPU-NOT: linalg.generic
// GPU: return
// HOST-LABEL: func.func @adam
// HOST: linalg.generic {{.*}}iterator_types = []
// HOST: math.powf
// HOST: linalg.generic {{.*}}iterator_types = ["parallel"]
// HOST-NOT: math.powf
// HOST: return
func.func @adam(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<f32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0:3 = locus.adam %p, %g, %m, %v, %t lr %lr betas [0.9, 0.999] eps 1.0e-8 weight_decay 0.0 : tensor<8xf32>, tensor<f32>
  return %0#0, %0#1, %0#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
