// Host code computes exp, tanh and erf without libm (--locus-vector-math in
// the host pipeline): no llvm.intr.exp and no call of tanhf or erff remain
// in the kernels of a softmax, a tanh, a GELU and a sigmoid; log keeps its
// lowering.
// RUN: locus-compile %s -o %t.locus --policy=cpu --devices=cpu --progress=never --print-ir-after=host 2> %t.host
// RUN: FileCheck %s < %t.host
// CHECK: IR after stage 'host'
// CHECK-NOT: llvm.intr.exp
// CHECK-NOT: @tanhf
// CHECK-NOT: @erff
// CHECK: llvm.intr.log
// CHECK-NOT: llvm.intr.exp
// CHECK-NOT: @tanhf
// CHECK-NOT: @erff
locus.graph @transcendental {
  %x = locus.input "x" : tensor<64x300xf32>
  %s = locus.softmax %x axis 1 : tensor<64x300xf32>
  %t = locus.tanh %s : tensor<64x300xf32>
  %g = locus.gelu %t : tensor<64x300xf32>
  %y = locus.sigmoid %g : tensor<64x300xf32>
  %l = locus.log %y : tensor<64x300xf32>
  locus.output "y" = %l : tensor<64x300xf32>
}
