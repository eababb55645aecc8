// Nothing pinned to a GPU runs on the CPU in silence: without a CUDA target
// a pin is an error with the fix; soft placement, when asked for, warns at
// the first pin; policy cpu runs everything on the CPU and says so.
// RUN: not locus-opt %s --locus-place-devices="policy=auto devices=cpu" 2>&1 | FileCheck %s --check-prefix=HARD
// RUN: locus-opt %s --locus-place-devices="policy=auto devices=cpu allow-soft-placement=true" 2>&1 | FileCheck %s --check-prefix=SOFT
// RUN: locus-opt %s --locus-place-devices="policy=cpu" 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: locus-opt %s --locus-place-devices="policy=prefer-gpu devices=cpu allow-soft-placement=true" 2>&1 | FileCheck %s --check-prefix=PREFER

// HARD: soft.mlir:[[@LINE+20]]:8: error: 'locus.state' op is pinned to cuda:0, which is not a target device (targets: cpu)
// HARD: soft.mlir:[[@LINE+19]]:8: note: fix: add cuda:0 to the target devices (where there is no GPU it runs on the sim device), or allow soft placement (allow-soft-placement, CompileOptions::allowSoftPlacement) to run it on cpu with a warning, or compile with policy=cpu
// HARD: soft.mlir:[[@LINE+20]]:9: error: 'locus.to' op is pinned to cuda:0

// SOFT: soft.mlir:[[@LINE+16]]:8: warning: soft placement: no CUDA device among the targets: 2 op(s) pinned to CUDA run on cpu (the first pin is here)
// SOFT: locus.graph @model attributes {locus.policy = "auto", locus.soft_placement = "no CUDA device among the targets: 2 op(s) pinned to CUDA run on cpu", locus.targets = [#locus.device<cpu>]}
// SOFT: locus.state "w" {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = soft>
// SOFT: locus.linear {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = policy>

// CPU: soft.mlir:[[@LINE+11]]:8: remark: policy cpu: 2 pin(s) to CUDA devices do not hold; .to() moves are no-ops and values created on a GPU are made on cpu (the first pin is here)
// CPU: locus.state "w" {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = policy>
// CPU: locus.to <cuda:0>, {{.*}}locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = policy>
// CPU-NOT: warning

// prefer-gpu without a GPU cannot do what it says: a warning at the graph.
// PREFER: soft.mlir:[[@LINE+5]]:8: warning: soft placement: no CUDA device among the targets: 2 op(s) pinned to CUDA run on cpu
// PREFER: soft.mlir:[[@LINE+3]]:1: warning: policy prefer-gpu, but no CUDA device among the targets (cpu): every op runs on cpu
// PREFER: locus.graph @model attributes {locus.policy = "prefer-gpu"
// PREFER: locus.linear {{.*}}locus.placement = #locus.placement<kind = soft>
locus.graph @model {
  %w = locus.state "w" parameter : tensor<2x10xf32> init <full(0.5)> on <cuda:0>
  %x = locus.input "x" : tensor<4x10xf32>
  %xg = locus.to <cuda:0>, %x : tensor<4x10xf32>
  %0 = locus.linear %xg, %w : tensor<4x10xf32>, tensor<2x10xf32> -> tensor<4x2xf32>
  locus.output "y" = %0 : tensor<4x2xf32>
}
