// --locus-data-parallel: the parameters' gradients (locus.gradient, which
// autodiff puts on them) averaged over the ranks in buckets, each right
// after its last gradient, before the optimizer reads any of them.
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' --locus-place-devices='policy=cpu' --locus-insert-transfers --locus-data-parallel | FileCheck %s
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' --locus-place-devices='policy=cpu' --locus-insert-transfers --locus-data-parallel='bucket-bytes=40' | FileCheck %s --check-prefix=SMALL
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' --locus-placement-pipeline='policy=cpu data-parallel=true' | FileCheck %s
// RUN: not locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' --locus-data-parallel 2>&1 | FileCheck %s --check-prefix=UNPLACED
// RUN: not locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' --locus-place-devices='policy=cpu' --locus-insert-transfers --locus-data-parallel='bucket-bytes=0' 2>&1 | FileCheck %s --check-prefix=ZERO

// One bucket (25 MiB, never full here): both gradients, averaged before
// the first op that reads one of them; the optimizer reads the averages.
// CHECK-LABEL: locus.graph @linear_mse
// CHECK: %[[DW:.*]] = locus.matmul {{.*}}locus.gradient
// CHECK: %[[DB:.*]] = locus.sum {{.*}}locus.gradient
// CHECK-NOT: locus.sgd
// CHECK: %[[R:.*]]:2 = locus.all_reduce mean bucket 0, %[[DW]], %[[DB]] {locus.device = #locus.device<cpu>} : tensor<2x10xf32>, tensor<2xf32>
// CHECK-NOT: locus.all_reduce
// CHECK: locus.sgd %fc.weight, %[[R]]#0
// CHECK: locus.sgd %fc.bias, %[[R]]#1

// Buckets of 40 bytes: the weight's gradient (80 bytes) fills one, which
// is averaged right after it; the bias's (8 bytes) before its first reader.
// SMALL-LABEL: locus.graph @linear_mse
// SMALL: %[[DW:.*]] = locus.matmul {{.*}}locus.gradient
// SMALL-NEXT: %[[RW:.*]] = locus.all_reduce mean bucket 0, %[[DW]]
// SMALL: %[[DB:.*]] = locus.sum {{.*}}locus.gradient
// SMALL: locus.sgd %fc.weight, %[[RW]]
// SMALL: %[[RB:.*]] = locus.all_reduce mean bucket 1, %[[DB]]
// SMALL-NEXT: locus.sgd %fc.bias, %[[RB]]

// UNPLACED: error: 'locus.graph' op is not placed: data-parallel buckets are made per device, after --locus-placement-pipeline
// ZERO: error: 'locus.graph' op bucket-bytes must be at least 1, got 0
locus.graph @linear_mse {
  %x = locus.input "x" : tensor<100x10xf32>
  %y = locus.input "y" : tensor<100x2xf32>
  %w = locus.state "fc.weight" parameter : tensor<2x10xf32> init <uniform(-0.316, 0.316), seed = 1>
  %b = locus.state "fc.bias" parameter : tensor<2xf32> init <uniform(-0.316, 0.316), seed = 2>
  %p = locus.linear %x, %w, %b : tensor<100x10xf32>, tensor<2x10xf32>, tensor<2xf32> -> tensor<100x2xf32>
  %l = locus.mse_loss %p, %y mean : tensor<100x2xf32> -> tensor<f32>
  locus.output "loss" = %l : tensor<f32>
}
