// auto: the min-cut of the cost model. Each op's reason carries both
// estimates (ns).
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=auto" | FileCheck %s
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=auto profile=%S/Inputs/slow-link.json" | FileCheck %s --check-prefix=SLOW
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=auto fuse=false profile=%S/Inputs/no-graph-gain.json" | FileCheck %s --check-prefix=UNFUSED
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=auto fuse=false" | FileCheck %s --check-prefix=GRAPH
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=auto fuse=false no-cuda-kernel=locus.mse_loss" | FileCheck %s --check-prefix=NOKERNEL

// A big MLP layer: the GPU's speed pays for copying the batch there and the
// small result back. The weights move once, at load.
// CHECK-LABEL: locus.graph @big
// CHECK: locus.state "w" {{.*}}locus.device = #locus.device<cuda:0>
// CHECK: locus.linear {{.*}}locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = cost, cpu_ns = [[CPU:[0-9]+]], cuda_ns = [[GPU:[0-9]+]]>
// CHECK: locus.relu {{.*}}locus.device = #locus.device<cuda:0>
// With a link 1000x slower, the same layer stays on the CPU.
// SLOW-LABEL: locus.graph @big
// SLOW: locus.linear {{.*}}locus.device = #locus.device<cpu>
locus.graph @big {
  %x = locus.input "x" : tensor<256x1024xf32>
  %w = locus.state "w" parameter : tensor<1024x1024xf32> init <full(0.0)>
  %0 = locus.linear %x, %w : tensor<256x1024xf32>, tensor<1024x1024xf32> -> tensor<256x1024xf32>
  %1 = locus.relu %0 : tensor<256x1024xf32>
  %2 = locus.sum %1 axes [0, 1] : tensor<256x1024xf32> -> tensor<f32>
  locus.output "s" = %2 : tensor<f32>
}

// -----

// A tiny graph: a kernel launch on the GPU costs more than the work.
// CHECK-LABEL: locus.graph @tiny
// CHECK: locus.add {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = cost, cpu_ns = {{[0-9]+}}, cuda_ns = {{[0-9]+}}>
locus.graph @tiny {
  %a = locus.input "a" : tensor<8xf32>
  %b = locus.input "b" : tensor<8xf32>
  %0 = locus.add %a, %b : tensor<8xf32>
  locus.output "r" = %0 : tensor<8xf32>
}

// -----

// Data already on the GPU: the work follows it.
// CHECK-LABEL: locus.graph @resident
// CHECK: locus.add {{.*}}locus.device = #locus.device<cuda:0>
locus.graph @resident {
  %a = locus.input "a" : tensor<1024x1024xf32> on <cuda:0>
  %b = locus.input "b" : tensor<1024x1024xf32> on <cuda:0>
  %0 = locus.add %a, %b : tensor<1024x1024xf32>
  %1 = locus.to <cuda:0>, %0 : tensor<1024x1024xf32>
  locus.output "r" = %1 : tensor<1024x1024xf32>
}

// -----

// Batch-norm statistics: the running mean's update is a chain of small
// elementwise ops. One by one, their GPU launches cost more than copying the
// batch mean to the CPU; fused into one kernel they do not, so the update
// and its state stay by the op that computes the mean, and no statistic
// crosses devices. With fuse=false every op pays its own launch and the
// chain moves to the CPU, the state with it, where a launch in a CUDA graph
// costs what one alone does (no-graph-gain.json).
// By default it does not: a step whose kernels all run on one GPU replays
// as one CUDA graph, at about 1.2 us a launch, and that whole step beats
// the split even unfused. Each op says so, with both steps' estimates.
// GRAPH-LABEL: locus.graph @running_mean
// GRAPH: locus.state "running_mean" {{.*}}locus.device = #locus.device<cuda:0>
// GRAPH: locus.mean {{.*}}locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = whole_step, cpu_ns = [[SPLIT:[0-9]+]], cuda_ns = [[WHOLE:[0-9]+]]>
// GRAPH: locus.add {{.*}}locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = whole_step, cpu_ns = [[SPLIT]], cuda_ns = [[WHOLE]]>
// GRAPH: locus.assign %running_mean = {{.*}}locus.device = #locus.device<cuda:0>
// CHECK-LABEL: locus.graph @running_mean
// CHECK: locus.state "running_mean" {{.*}}locus.device = #locus.device<cuda:0>
// CHECK: locus.mean {{.*}}locus.device = #locus.device<cuda:0>
// CHECK: %[[NEW:.*]] = locus.add {{.*}}locus.device = #locus.device<cuda:0>
// CHECK: locus.assign %running_mean = %[[NEW]] {locus.device = #locus.device<cuda:0>
// UNFUSED-LABEL: locus.graph @running_mean
// UNFUSED: locus.state "running_mean" {{.*}}locus.device = #locus.device<cpu>
// UNFUSED: locus.mean {{.*}}locus.device = #locus.device<cuda:0>
// UNFUSED: locus.add {{.*}}locus.device = #locus.device<cpu>
locus.graph @running_mean {
  %x = locus.input "x" : tensor<256x1024xf32> on #locus.device<cuda:0>
  %rm = locus.state "running_mean" buffer : tensor<1024xf32> init <full(0.0)>
  %m = locus.mean %x axes [0] : tensor<256x1024xf32> -> tensor<1024xf32>
  %mb = locus.broadcast %m [256, 1024] : tensor<1024xf32> -> tensor<256x1024xf32>
  %c = locus.sub %x, %mb : tensor<256x1024xf32>
  %s = locus.sum %c axes [0, 1] : tensor<256x1024xf32> -> tensor<f32>
  locus.output "s" = %s : tensor<f32>
  %k0 = locus.constant dense<0.9> : tensor<f32>
  %b0 = locus.broadcast %k0 [1024] : tensor<f32> -> tensor<1024xf32>
  %old = locus.mul %rm, %b0 : tensor<1024xf32>
  %k1 = locus.constant dense<0.1> : tensor<f32>
  %b1 = locus.broadcast %k1 [1024] : tensor<f32> -> tensor<1024xf32>
  %now = locus.mul %m, %b1 : tensor<1024xf32>
  %new = locus.add %old, %now : tensor<1024xf32>
  locus.assign %rm = %new : tensor<1024xf32>, tensor<1024xf32>
}

// -----

// A step that cannot replay as one CUDA graph is weighed split alone: here
// the last op has no CUDA kernel, so it runs on the CPU, and every other
// op's reason is its own estimate, not the whole step's.
// NOKERNEL-LABEL: locus.graph @no_whole_step
// NOKERNEL: locus.mean {{.*}}locus.placement = #locus.placement<kind = cost,
// NOKERNEL: locus.add {{.*}}locus.placement = #locus.placement<kind = cost,
// NOKERNEL: locus.mse_loss {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = no_kernel
// NOKERNEL-NOT: whole_step
locus.graph @no_whole_step {
  %x = locus.input "x" : tensor<256x1024xf32> on #locus.device<cuda:0>
  %y = locus.input "y" : tensor<1024xf32>
  %m = locus.mean %x axes [0] : tensor<256x1024xf32> -> tensor<1024xf32>
  %k = locus.constant dense<0.5> : tensor<f32>
  %b = locus.broadcast %k [1024] : tensor<f32> -> tensor<1024xf32>
  %h = locus.mul %m, %b : tensor<1024xf32>
  %a = locus.add %h, %b : tensor<1024xf32>
  %l = locus.mse_loss %a, %y mean : tensor<1024xf32> -> tensor<f32>
  locus.output "l" = %l : tensor<f32>
}
