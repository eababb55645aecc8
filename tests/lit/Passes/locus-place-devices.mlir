// Placement under each policy: every op gets locus.device and locus.placement.
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=prefer-gpu" | FileCheck %s --check-prefix=PREFER
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=cpu" 2>/dev/null | FileCheck %s --check-prefix=CPU
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=strict" | FileCheck %s --check-prefix=STRICT
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=prefer-gpu devices=cpu allow-soft-placement=true" 2>/dev/null | FileCheck %s --check-prefix=SOFT
// RUN: locus-opt %s -split-input-file --locus-place-devices="policy=prefer-gpu no-cuda-kernel=locus.mse_loss" | FileCheck %s --check-prefix=NOKERNEL

// PREFER-LABEL: locus.graph @mlp attributes {locus.policy = "prefer-gpu", locus.targets = [#locus.device<cpu>, #locus.device<cuda:0>]}
// PREFER: locus.input "x" {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = host_io>}
// PREFER: locus.state "w" parameter {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = colocated>}
// PREFER: locus.linear {{.*}}locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = policy>
// PREFER: locus.mse_loss {{.*}}locus.device = #locus.device<cuda:0>
// PREFER: locus.output "loss" = {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = host_io>

// CPU-LABEL: locus.graph @mlp attributes {locus.policy = "cpu"
// CPU-NOT: cuda:0>,
// CPU: locus.linear {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = policy>

// STRICT-LABEL: locus.graph @mlp
// STRICT: locus.input "x" {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = created>}
// STRICT: locus.state "w" {{.*}}locus.placement = #locus.placement<kind = created>
// STRICT: locus.linear {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = follows_operands>
// STRICT: locus.output "loss" = {{.*}}locus.placement = #locus.placement<kind = follows_operands>

// Soft: no CUDA target, everything on the CPU and the graph says why.
// SOFT-LABEL: locus.graph @mlp attributes {locus.policy = "prefer-gpu", locus.soft_placement = "no CUDA device among the targets: every op runs on cpu", locus.targets = [#locus.device<cpu>]}
// SOFT: locus.linear {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = soft>

// NOKERNEL-LABEL: locus.graph @mlp
// NOKERNEL: locus.linear {{.*}}locus.device = #locus.device<cuda:0>
// NOKERNEL: locus.mse_loss {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = no_kernel, device = <cuda:0>>
locus.graph @mlp {
  %x = locus.input "x" : tensor<64x784xf32>
  %y = locus.input "y" : tensor<64x10xf32>
  %w = locus.state "w" parameter : tensor<10x784xf32> init <full(0.0)>
  %0 = locus.linear %x, %w : tensor<64x784xf32>, tensor<10x784xf32> -> tensor<64x10xf32>
  %1 = locus.mse_loss %0, %y mean : tensor<64x10xf32> -> tensor<f32>
  locus.output "loss" = %1 : tensor<f32>
}

// -----

// Pins hold under every policy but cpu: the input created on cuda:0 and the
// move. Under cpu, everything runs on the CPU and the graph notes it.
// PREFER-LABEL: locus.graph @pins
// PREFER: locus.input "x" {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = pinned>}
// PREFER: locus.to <cpu>, {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = pinned>
// CPU-LABEL: locus.graph @pins attributes {locus.placement_notes = [{text = "policy cpu: 1 pin(s) to CUDA devices do not hold; .to() moves are no-ops and values created on a GPU are made on cpu (the first pin is here)", where = "{{.*}}"}], locus.policy = "cpu"
// CPU: locus.input "x" {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = policy>}
// CPU: locus.relu {{.*}}locus.device = #locus.device<cpu>
// STRICT-LABEL: locus.graph @pins
// STRICT: locus.input "x" {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = pinned>}
// STRICT: locus.relu {{.*}}locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = follows_operands>
// STRICT: locus.to <cpu>, {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = pinned>
// SOFT-LABEL: locus.graph @pins attributes {locus.policy = "prefer-gpu", locus.soft_placement = "no CUDA device among the targets: 1 op(s) pinned to CUDA run on cpu"
// SOFT: locus.input "x" {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = soft>}
locus.graph @pins {
  %x = locus.input "x" : tensor<4xf32> on <cuda:0>
  %0 = locus.relu %x : tensor<4xf32>
  %1 = locus.to <cpu>, %0 : tensor<4xf32>
  locus.output "r" = %1 : tensor<4xf32>
}

// -----

// Strict: a constant is like a Python scalar. It follows its readers, and one
// read on two devices is recorded once per device.
// STRICT-LABEL: locus.graph @scalars
// STRICT: %[[C0:.*]] = locus.constant dense<2.000000e+00> : tensor<f32> {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = colocated>}
// STRICT: %[[C1:.*]] = locus.constant dense<2.000000e+00> : tensor<f32> {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = colocated>}
// STRICT: %[[B1:.*]] = locus.broadcast %[[C1]] [4] {{.*}}locus.device = #locus.device<cpu>
// STRICT: %[[B0:.*]] = locus.broadcast %[[C0]] [4] {{.*}}locus.device = #locus.device<cuda:0>
// STRICT: locus.mul %g, %[[B0]] {{.*}}locus.device = #locus.device<cuda:0>
// STRICT: locus.mul %h, %[[B1]] {{.*}}locus.device = #locus.device<cpu>
locus.graph @scalars {
  %g = locus.input "g" : tensor<4xf32> on <cuda:0>
  %h = locus.input "h" : tensor<4xf32>
  %c = locus.constant dense<2.0> : tensor<f32>
  %b = locus.broadcast %c [4] : tensor<f32> -> tensor<4xf32>
  %0 = locus.mul %g, %b : tensor<4xf32>
  %1 = locus.mul %h, %b : tensor<4xf32>
  locus.output "a" = %0 : tensor<4xf32>
  locus.output "b" = %1 : tensor<4xf32>
}
