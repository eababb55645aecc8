// Kernels of a graph with dynamic sizes compute at the run's sizes: their
// arguments are viewed at the run's dims, every value inside takes its
// dims, and results are packed back into their bound-sized buffers.
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu devices=cpu},locus-insert-transfers,locus-fuse-kernels),locus-outline-kernels,locus-extract-kernels,locus-lower-to-linalg,func.func(locus-dynamic-kernels))' -verify-diagnostics | FileCheck %s
// With keep-bounds (the CUDA lowering) a kernel keeps its sizes argument's
// index and the bounds, for --locus-map-to-gpu; without, nothing of them.
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu devices=cpu},locus-insert-transfers,locus-fuse-kernels),locus-outline-kernels,locus-extract-kernels,locus-lower-to-linalg,func.func(locus-dynamic-kernels{keep-bounds=true}))' -verify-diagnostics | FileCheck %s --check-prefix=BOUNDS
// BOUNDS-LABEL: func.func @mlp_k0_linear(
// BOUNDS-SAME: locus.size_bounds = array<i64: 256>, locus.sizes_arg = 3 : i64
// CHECK-NOT: locus.size_bounds

// CHECK-LABEL: func.func @mlp_k0_linear(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<256x784xf32> {bufferization.writable = false}
// CHECK-SAME: %[[SIZES:[a-z0-9]+]]: tensor<1xi64> {bufferization.writable = false}) -> tensor<256x10xf32>
// CHECK-NOT: locus.dims
// CHECK: %[[N:.*]] = tensor.extract %[[SIZES]]
// CHECK: %[[B:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<256x784xf32> into tensor<200704xf32>
// CHECK: %[[PREFIX:.*]] = tensor.extract_slice %[[FLAT]][0] [%{{.*}}] [1] : tensor<200704xf32> to tensor<?xf32>
// CHECK: %[[XV:.*]] = tensor.expand_shape %[[PREFIX]] {{\[\[}}0, 1]] output_shape [%{{.*}}, 784] : tensor<?xf32> into tensor<?x784xf32>
// The product's zeros and the bias added after it (the ReLU alone reads
// the layer) take the product's rows.
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x10xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul_transpose_b ins(%[[XV]], %{{.*}} : tensor<?x784xf32>, tensor<10x784xf32>) outs(%[[ZERO]] : tensor<?x10xf32>) -> tensor<?x10xf32>
// CHECK: linalg.generic {{.*}} ins(%[[Y]], %{{.*}} : tensor<?x10xf32>, tensor<10xf32>) outs(%{{.*}} : tensor<?x10xf32>)
// CHECK: arith.addf
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0] [%{{.*}}] [1] : tensor<?xf32> into tensor<2560xf32>
// CHECK: %[[BACK:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [256, 10] : tensor<2560xf32> into tensor<256x10xf32>
// CHECK: return %[[BACK]] : tensor<256x10xf32>

// The mean over the batch divides by the run's count.
// CHECK-LABEL: func.func @mlp_k1_mean(
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x10xf32>) outs(%{{.*}} : tensor<10xf32>)
// CHECK: %[[ROWS:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x10xf32>
// CHECK: arith.uitofp
// CHECK: arith.divf
// CHECK: return %{{.*}} : tensor<10xf32>
locus.graph @mlp attributes {locus.symbols = [["batch", 256]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 784)>} : tensor<256x784xf32>
  %w = locus.state "w" parameter : tensor<10x784xf32> init <full(0.5)>
  %b = locus.state "b" parameter : tensor<10xf32> init <full(0.5)>
  %y = locus.linear %x, %w, %b : tensor<256x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<256x10xf32>
  %r = locus.relu %y : tensor<256x10xf32>
  %m = locus.mean %r axes [0] : tensor<256x10xf32> -> tensor<10xf32>
  locus.output "r" = %r : tensor<256x10xf32>
  locus.output "m" = %m : tensor<10xf32>
}

// -----

// Slices and concatenations along a static axis keep the dynamic batch
// whole: the window's sizes are the run's.
// CHECK-LABEL: func.func @halves_k0_slice(
// CHECK: %[[B:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract_slice %{{.*}}[0, 4] [%{{.*}}, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [%{{.*}}, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
// CHECK: tensor.empty(%{{.*}}) : tensor<?x8xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%{{.*}}, 4] [1, 1] : tensor<?x4xf32> into tensor<?x8xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 4] [%{{.*}}, 4] [1, 1] : tensor<?x4xf32> into tensor<?x8xf32>
// CHECK: return %{{.*}} : tensor<16x8xf32>
locus.graph @halves attributes {locus.symbols = [["batch", 16]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 8)>} : tensor<16x8xf32>
  %hi = locus.slice %x offsets [0, 4] sizes [16, 4] strides [1, 1] : tensor<16x8xf32> -> tensor<16x4xf32>
  %lo = locus.slice %x offsets [0, 0] sizes [16, 4] strides [1, 1] : tensor<16x8xf32> -> tensor<16x4xf32>
  %y = locus.concat %hi, %lo axis 1 : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x8xf32>
  locus.output "y" = %y : tensor<16x8xf32>
}

// -----

// Windows of fixed size in a dynamic dimension: row 1 from the start, and
// the last row at the run's size less one; the gradient of the last row
// writes it there into zeros of the run's size.
// CHECK-LABEL: func.func @rows_k0_slice(
// CHECK: %[[X:.*]] = tensor.expand_shape %{{.*}} : tensor<?xf32> into tensor<?x4xf32>
// CHECK: %[[END:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[LAST:.*]] = arith.addi %[[END]], %{{.*}} : index
// CHECK: tensor.extract_slice %[[X]][%[[LAST]], 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
// CHECK-LABEL: func.func @rows_k1_slice(
// CHECK: %[[Y:.*]] = tensor.expand_shape %{{.*}} : tensor<?xf32> into tensor<?x4xf32>
// CHECK: tensor.extract_slice %[[Y]][1, 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
// CHECK-LABEL: func.func @rows_k2_slice_grad(
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK: %[[END2:.*]] = tensor.dim %[[ZEROS]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[AT:.*]] = arith.addi %[[END2]], %{{.*}} : index
// CHECK: tensor.insert_slice %{{.*}} into %[[ZEROS]][%[[AT]], 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<?x4xf32>
locus.graph @rows attributes {locus.symbols = [["batch", 16]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<16x4xf32>
  %second = locus.slice %x offsets [1, 0] sizes [1, 4] strides [1, 1] : tensor<16x4xf32> -> tensor<1x4xf32>
  %last = locus.slice %x offsets [-1, 0] sizes [1, 4] strides [1, 1] : tensor<16x4xf32> -> tensor<1x4xf32>
  %s = locus.add %second, %last : tensor<1x4xf32>
  %g = locus.slice_grad %s shape [16, 4] offsets [-1, 0] strides [1, 1] {locus.dims = affine_map<()[s0] -> (s0, 4)>} : tensor<1x4xf32> -> tensor<16x4xf32>
  locus.output "s" = %s : tensor<1x4xf32>
  locus.output "g" = %g : tensor<16x4xf32>
}

// -----

// narrow_to's window of a static mask takes the run's sizes from offset 0
// and is copied packed; an argument of two dynamic dimensions is viewed
// through tensor.reshape (MLIR 19 cannot bufferize an expand_shape that
// splits one dimension into two dynamic ones).
// CHECK-LABEL: func.func @masked_k0_slice(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<16x16xf32>
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xindex>
// CHECK: %[[V:.*]] = tensor.reshape %{{.*}}(%[[SHAPE]]) : (tensor<?xf32>, tensor<2xindex>) -> tensor<?x?xf32>
// CHECK: %[[W:.*]] = tensor.extract_slice %{{.*}}[0, 0] [%{{.*}}, %{{.*}}] [1, 1] : tensor<16x16xf32> to tensor<?x?xf32>
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<?x?xf32>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[V]], %[[P]] : tensor<?x?xf32>, tensor<?x?xf32>)
locus.graph @masked attributes {locus.symbols = [["seq", 16]]} {
  %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, s0)>} : tensor<16x16xf32>
  %m = locus.state "m" buffer : tensor<16x16xf32> init <full(1.0)>
  %w = locus.slice %m offsets [0, 0] sizes [16, 16] strides [1, 1] {locus.dims = affine_map<()[s0] -> (s0, s0)>} : tensor<16x16xf32> -> tensor<16x16xf32>
  %y = locus.add %x, %w : tensor<16x16xf32>
  locus.output "y" = %y : tensor<16x16xf32>
}
