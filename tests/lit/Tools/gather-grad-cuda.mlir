// A gather's gradient with constant indices (a positional embedding's,
// arange) through the whole CUDA lowering: the scatter-add kernel reads
// the indices from the kernel module's own copy of the constant, not
// through a parameter (a host address there would mean nothing on the
// GPU); its only parameters are the gradient and the result, and each
// element is added with an atomic.
// RUN: rm -rf %t && locus-compile %s -o %t.locus --policy=prefer-gpu --no-cache --progress=never --emit-ptx=%t
// RUN: FileCheck %s < %t/pos_k0_gather_grad__cuda_kernel.1.ptx
// CHECK: .global .align {{[0-9]+}} .b8 __constant_4xi64[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1,
// CHECK: .visible .entry pos_k0_gather_grad__cuda_kernel(
// CHECK-NEXT: .param .u64 pos_k0_gather_grad__cuda_kernel_param_0,
// CHECK-NEXT: .param .u64 pos_k0_gather_grad__cuda_kernel_param_1
// CHECK-NEXT: )
// CHECK: ld.global.nc.u64
// CHECK: atom.global.add.f32
locus.graph @pos {
  %g = locus.input "g" : tensor<4x8xf32>
  %ids = locus.constant dense<[0, 1, 1, 3]> : tensor<4xi64>
  %d = locus.gather_grad %g, %ids axis 0 extent 10 : tensor<4x8xf32>, tensor<4xi64> -> tensor<10x8xf32>
  locus.output "d" = %d : tensor<10x8xf32>
}
