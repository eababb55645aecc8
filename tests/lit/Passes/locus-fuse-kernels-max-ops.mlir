// A kernel stops growing at max-ops ops: a chain of 7 elementwise ops with
// max-ops=3 makes kernels of 3, 3 and 1 ops, in order; the default (1,024)
// keeps it whole. max-ops below 1 is an error.
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels{max-ops=3}))' | FileCheck %s
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels))' | FileCheck %s --check-prefix=WHOLE
// RUN: not locus-opt %s --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels{max-ops=0}))' 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: locus.graph @chain
// CHECK-SAME: locus.kernels = 3
// CHECK:      %[[K0:.*]] = locus.kernel on <cpu>
// CHECK-NEXT:   locus.relu
// CHECK-NEXT:   locus.neg
// CHECK-NEXT:   locus.exp
// CHECK-NEXT:   locus.yield
// CHECK:      %[[K1:.*]] = locus.kernel on <cpu>
// CHECK-NEXT:   locus.tanh %[[K0]]
// CHECK-NEXT:   locus.relu
// CHECK-NEXT:   locus.neg
// CHECK-NEXT:   locus.yield
// CHECK:      locus.kernel on <cpu>
// CHECK-NEXT:   locus.exp %[[K1]]
// CHECK-NEXT:   locus.yield
// WHOLE-LABEL: locus.graph @chain
// WHOLE-SAME: locus.kernels = 1
// BAD: error: --locus-fuse-kernels: max-ops must be at least 1, got 0
locus.graph @chain {
  %x = locus.input "x" : tensor<4xf32>
  %0 = locus.relu %x : tensor<4xf32>
  %1 = locus.neg %0 : tensor<4xf32>
  %2 = locus.exp %1 : tensor<4xf32>
  %3 = locus.tanh %2 : tensor<4xf32>
  %4 = locus.relu %3 : tensor<4xf32>
  %5 = locus.neg %4 : tensor<4xf32>
  %6 = locus.exp %5 : tensor<4xf32>
  locus.output "y" = %6 : tensor<4xf32>
}
