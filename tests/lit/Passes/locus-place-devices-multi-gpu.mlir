// Several GPUs: pins to any cuda:N hold under every policy, and the ops that
// read a pinned layer's weights go where the weights are.
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=prefer-gpu devices=cpu,cuda:0,cuda:1" | FileCheck %s --check-prefix=PREFER
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=auto devices=cpu,cuda:0,cuda:1" | FileCheck %s --check-prefix=AUTO

// A layer pinned to cuda:1: under prefer-gpu the first layer, which reads
// nothing from a GPU, goes to the first GPU, and the second to its weights.
// PREFER-LABEL: locus.graph @layers attributes {locus.policy = "prefer-gpu", locus.targets = [#locus.device<cpu>, #locus.device<cuda:0>, #locus.device<cuda:1>]}
// PREFER: locus.state "w2" {{.*}}locus.device = #locus.device<cuda:1>, locus.placement = #locus.placement<kind = pinned>
// PREFER: %[[L1:.*]] = locus.linear %x, %w1 {{.*}}locus.device = #locus.device<cuda:0>
// PREFER: locus.linear %[[R1:.*]], %w2 {{.*}}locus.device = #locus.device<cuda:1>
// PREFER: locus.sum {{.*}}locus.device = #locus.device<cuda:1>
// auto: the whole model runs where the pinned weights are, since a copy
// between GPUs would cost and a GPU is a GPU.
// AUTO-LABEL: locus.graph @layers
// AUTO: locus.state "w1" {{.*}}locus.device = #locus.device<cuda:1>
// AUTO: locus.state "w2" {{.*}}locus.device = #locus.device<cuda:1>, locus.placement = #locus.placement<kind = pinned>
// AUTO: locus.linear %x, %w1 {{.*}}locus.device = #locus.device<cuda:1>, locus.placement = #locus.placement<kind = cost
// AUTO: locus.linear {{.*}}, %w2 {{.*}}locus.device = #locus.device<cuda:1>
// AUTO: locus.sum {{.*}}locus.device = #locus.device<cuda:1>
locus.graph @layers {
  %x = locus.input "x" : tensor<256x1024xf32>
  %w1 = locus.state "w1" parameter : tensor<1024x1024xf32> init <full(0.0)>
  %w2 = locus.state "w2" parameter : tensor<1024x1024xf32> init <full(0.0)> on <cuda:1>
  %0 = locus.linear %x, %w1 : tensor<256x1024xf32>, tensor<1024x1024xf32> -> tensor<256x1024xf32>
  %1 = locus.relu %0 : tensor<256x1024xf32>
  %2 = locus.linear %1, %w2 : tensor<256x1024xf32>, tensor<1024x1024xf32> -> tensor<256x1024xf32>
  %3 = locus.relu %2 : tensor<256x1024xf32>
  %4 = locus.sum %3 axes [0, 1] : tensor<256x1024xf32> -> tensor<f32>
  locus.output "s" = %4 : tensor<f32>
}

// -----

// Model parallelism by hand: each half pinned to its GPU, the activation
// moved between them. Both policies keep both halves where they were put.
// PREFER-LABEL: locus.graph @pipeline
// PREFER: locus.linear %[[A:.*]], %w0 {{.*}}locus.device = #locus.device<cuda:0>
// PREFER: locus.linear %[[B:.*]], %w1 {{.*}}locus.device = #locus.device<cuda:1>
// AUTO-LABEL: locus.graph @pipeline
// AUTO: locus.linear %[[A:.*]], %w0 {{.*}}locus.device = #locus.device<cuda:0>
// AUTO: locus.linear %[[B:.*]], %w1 {{.*}}locus.device = #locus.device<cuda:1>
locus.graph @pipeline {
  %x = locus.input "x" : tensor<64x512xf32>
  %w0 = locus.state "w0" parameter : tensor<512x512xf32> init <full(0.0)> on <cuda:0>
  %w1 = locus.state "w1" parameter : tensor<512x512xf32> init <full(0.0)> on <cuda:1>
  %x0 = locus.to <cuda:0>, %x : tensor<64x512xf32>
  %0 = locus.linear %x0, %w0 : tensor<64x512xf32>, tensor<512x512xf32> -> tensor<64x512xf32>
  %1 = locus.to <cuda:1>, %0 : tensor<64x512xf32>
  %2 = locus.linear %1, %w1 : tensor<64x512xf32>, tensor<512x512xf32> -> tensor<64x512xf32>
  %3 = locus.to <cpu>, %2 : tensor<64x512xf32>
  locus.output "y" = %3 : tensor<64x512xf32>
}
