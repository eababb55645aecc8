// Bad options and impossible pins are errors, at the graph or at the pin.
// RUN: not locus-opt %s --locus-place-devices="policy=fastest" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not locus-opt %s --locus-place-devices="devices=cpu,gpu:0" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not locus-opt %s --locus-place-devices="devices=cuda:0" 2>&1 | FileCheck %s --check-prefix=NOCPU
// RUN: not locus-opt %s --locus-place-devices="profile=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not locus-opt %s --locus-place-devices="profile=%S/Inputs/bad-field.json" 2>&1 | FileCheck %s --check-prefix=FIELD
// RUN: not locus-opt %s --locus-place-devices="devices=cpu,cuda:0" 2>&1 | FileCheck %s --check-prefix=PIN

// POLICY: unknown placement policy 'fastest'; expected strict, prefer-gpu, auto or cpu
// DEVICE: unknown device 'gpu:0' in devices=; expected cpu or cuda:N
// NOCPU: devices= must include cpu: inputs are fed and outputs read on the host
// MISSING: cannot read cost profile '{{.*}}missing.json'
// FIELD: unknown field cpu.peak_gflop (known: peak_gflops, bandwidth_gbps, launch_ns, graph_launch_ns, conv_gflops, half_gflops, half_conv_gflops, curves)
// PIN: invalid.mlir:[[@LINE+3]]:8: error: 'locus.input' op is pinned to cuda:1, which is not a target device (targets: cpu, cuda:0)
locus.graph @g {
  %a = locus.input "a" : tensor<4xf32>
  %b = locus.input "b" : tensor<4xf32> on <cuda:1>
  locus.output "r" = %b : tensor<4xf32>
}
