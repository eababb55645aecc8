// The gradient and optimizer ops lowered to linalg (their numbers are checked
// against finite differences and PyTorch by tests/e2e/check_gradients.py and
// tests/seeds).
// RUN: locus-opt %s --locus-lower-to-linalg | FileCheck %s

// One-hot: a parallel generic comparing the label with the class index.
// CHECK-LABEL: func.func @one_hot
// CHECK: linalg.generic
// CHECK: linalg.index 1
// CHECK: arith.cmpi eq
// CHECK: arith.uitofp
func.func @one_hot(%l: tensor<4xi64>) -> tensor<4x5xf32> {
  %0 = locus.one_hot %l classes 5 : tensor<4xi64> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// Slice gradient: zeros with the slice inserted at its strides.
// CHECK-LABEL: func.func @slice_grad
// CHECK: linalg.fill
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 1] [4, 3] [1, 2] : tensor<4x3xf32> into tensor<4x7xf32>
func.func @slice_grad(%g: tensor<4x3xf32>) -> tensor<4x7xf32> {
  %0 = locus.slice_grad %g shape [4, 7] offsets [0, 1] strides [1, 2] : tensor<4x3xf32> -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// Gather gradient: zeros, then one loop over the gradient's elements (the
// outer dimension's index without a remainder), each in-range index adding
// its element where it points.
// CHECK-LABEL: func.func @gather_grad
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x9x2xf32>)
// CHECK: %[[R:.*]] = scf.for %[[P:.*]] = %c0 to %c24 step %c1 iter_args(%[[ACC:.*]] = %[[ZEROS]]) -> (tensor<3x9x2xf32>)
// CHECK: %[[K:.*]] = arith.remui %[[P]], %c2
// CHECK: %[[Q:.*]] = arith.divui %[[P]], %c2
// CHECK: %[[J:.*]] = arith.remui %[[Q]], %c4
// CHECK: %[[O:.*]] = arith.divui %[[Q]], %c4
// CHECK-NOT: arith.remui %[[O]]
// CHECK: %[[ID:.*]] = tensor.extract %{{.*}}[%[[J]]] : tensor<4xi64>
// CHECK: scf.if %{{.*}} -> (tensor<3x9x2xf32>)
// CHECK: %[[AT:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]][%[[O]], %[[AT]], %[[K]]]
// CHECK: %[[NEW:.*]] = tensor.extract %{{.*}}[%[[O]], %[[J]], %[[K]]] : tensor<3x4x2xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]] : f32
// CHECK: tensor.insert %[[SUM]] into %[[ACC]][%[[O]], %[[AT]], %[[K]]]
// CHECK: } else {
// CHECK: scf.yield %[[ACC]]
// CHECK: } {locus.scatter_add}
// CHECK: return %[[R]]
func.func @gather_grad(%g: tensor<3x4x2xf32>, %ids: tensor<4xi64>) -> tensor<3x9x2xf32> {
  %0 = locus.gather_grad %g, %ids axis 1 extent 9 : tensor<3x4x2xf32>, tensor<4xi64> -> tensor<3x9x2xf32>
  return %0 : tensor<3x9x2xf32>
}

// With one index nothing adds up: a parallel generic over the result that
// keeps the gradient where the index points (no loop, which would fold
// away with its mark).
// CHECK-LABEL: func.func @gather_grad_one
// CHECK-NOT: scf.for
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<1xi64>, tensor<3x1x2xf32>) outs(%{{.*}} : tensor<3x9x2xf32>)
// CHECK: %[[AT:.*]] = linalg.index 1 : index
// CHECK: %[[AT64:.*]] = arith.index_cast %[[AT]] : index to i64
// CHECK: %[[HIT:.*]] = arith.cmpi eq, %{{.*}}, %[[AT64]] : i64
// CHECK: arith.select %[[HIT]], %{{.*}}, %{{.*}} : f32
func.func @gather_grad_one(%g: tensor<3x1x2xf32>, %ids: tensor<1xi64>) -> tensor<3x9x2xf32> {
  %0 = locus.gather_grad %g, %ids axis 1 extent 9 : tensor<3x1x2xf32>, tensor<1xi64> -> tensor<3x9x2xf32>
  return %0 : tensor<3x9x2xf32>
}

// torch.gather's gradient: the same loop, each element's index read at its
// own position and put in place of its axis coordinate.
// CHECK-LABEL: func.func @gather_elements_grad
// CHECK: %[[R:.*]] = scf.for %[[P:.*]] = %c0 to %c6 step %c1 iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<2x5xf32>)
// CHECK: %[[J:.*]] = arith.remui %[[P]], %c3
// CHECK: %[[I:.*]] = arith.divui %[[P]], %c3
// CHECK: %[[ID:.*]] = tensor.extract %{{.*}}[%[[I]], %[[J]]] : tensor<2x3xi64>
// CHECK: %[[AT:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: tensor.extract %[[ACC]][%[[I]], %[[AT]]]
// CHECK: tensor.extract %{{.*}}[%[[I]], %[[J]]] : tensor<2x3xf32>
// CHECK: tensor.insert %{{.*}} into %[[ACC]][%[[I]], %[[AT]]]
// CHECK: } {locus.scatter_add}
func.func @gather_elements_grad(%g: tensor<2x3xf32>, %ids: tensor<2x3xi64>) -> tensor<2x5xf32> {
  %0 = locus.gather_elements_grad %g, %ids axis 1 extent 5 : tensor<2x3xf32>, tensor<2x3xi64> -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// Weight gradient, one group: im2col, the gradient as [O, N*OH*OW], one
// product with the columns transposed (BLAS on the host, cuBLAS on a GPU).
// CHECK-LABEL: func.func @conv_weight_grad
// CHECK: tensor.pad
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x3x8x8xf32>) outs(%{{.*}} : tensor<3x3x3x2x6x6xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x4x6x6xf32>) outs(%{{.*}} : tensor<4x2x6x6xf32>) permutation = [1, 0, 2, 3]
// CHECK: linalg.matmul_transpose_b ins(%{{.*}}, %{{.*}} : tensor<4x72xf32>, tensor<27x72xf32>) outs(%{{.*}} : tensor<4x27xf32>)
func.func @conv_weight_grad(%x: tensor<2x3x6x6xf32>, %g: tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32> {
  %0 = locus.conv2d_weight_grad %x, %g weight_shape [4, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// Input gradient: the gradient spread by the stride with a margin of
// (K - 1) * dilation, a gather over (o, kh, kw), the padding cut off.
// CHECK-LABEL: func.func @conv_input_grad
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 2, 2] [1, 3, 3, 3] [1, 1, 2, 2] : tensor<1x3x3x3xf32> into tensor<1x3x9x9xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 1] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x2x7x7xf32> to tensor<1x2x5x5xf32>
func.func @conv_input_grad(%g: tensor<1x3x3x3xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %0 = locus.conv2d_input_grad %g, %w input_shape [1, 2, 5, 5] stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32> -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// Max pooling: one pass for each window's maximum and first position
// (a later position wins only when strictly greater), then, for windows
// that tile the input, one gather at (y floordiv 2, x floordiv 2).
// CHECK-LABEL: func.func @max_pool_grad
// CHECK: %[[ARG:.*]]:2 = linalg.generic
// CHECK: arith.cmpf ogt
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ARG]]#1 : tensor<2x3x3x3xf32>, tensor<2x3x3x3xf32>) outs(%{{.*}} : tensor<2x3x6x6xf32>)
// CHECK: arith.remui
// CHECK: arith.cmpf oeq
func.func @max_pool_grad(%x: tensor<2x3x6x6xf32>, %g: tensor<2x3x3x3xf32>) -> tensor<2x3x6x6xf32> {
  %0 = locus.max_pool2d_grad %x, %g kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x6x6xf32>, tensor<2x3x3x3xf32> -> tensor<2x3x6x6xf32>
  return %0 : tensor<2x3x6x6xf32>
}

// Overlapping windows: the gradient and the index spread out, then a gather.
// CHECK-LABEL: func.func @max_pool_grad_overlap
// CHECK: linalg.generic
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
// CHECK: linalg.generic
// CHECK: tensor.extract_slice
func.func @max_pool_grad_overlap(%x: tensor<2x3x6x6xf32>, %g: tensor<2x3x3x3xf32>) -> tensor<2x3x6x6xf32> {
  %0 = locus.max_pool2d_grad %x, %g kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x3x6x6xf32>, tensor<2x3x3x3xf32> -> tensor<2x3x6x6xf32>
  return %0 : tensor<2x3x6x6xf32>
}

// SGD with momentum: one elementwise generic with two results.
// CHECK-LABEL: func.func @sgd
// The learning rate is a scalar operand, read by every element.
// CHECK: %[[S:.*]]:2 = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %arg3, %{{.*}} : tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>) outs(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>)
// CHECK: return %[[S]]#0, %[[S]]#1
func.func @sgd(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0:2 = locus.sgd %p, %g, %b lr %lr momentum 0.9 weight_decay 0.0 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  return %0#0, %0#1 : tensor<8xf32>, tensor<8xf32>
}

// Adam: the bias corrections once (a scalar generic with math.powf, from
// the step count and the learning rate), then one elementwise generic with
// three results.
// CHECK-LABEL: func.func @adam
// CHECK: %[[C:.*]]:3 = linalg.generic {{.*}} ins(%arg4, %arg5 : tensor<f32>, tensor<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK: math.powf
// CHECK: %[[A:.*]]:3 = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C]]#0, %[[C]]#1, %[[C]]#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK-NOT: math.powf
// CHECK: math.sqrt
// CHECK: return %[[A]]#0, %[[A]]#1, %[[A]]#2
func.func @adam(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<f32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0:3 = locus.adam %p, %g, %m, %v, %t lr %lr betas [0.9, 0.999] eps 1.0e-8 weight_decay 0.0 : tensor<8xf32>, tensor<f32>
  return %0#0, %0#1, %0#2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// A product of a transposed matrix reads it transposed.
// CHECK-LABEL: func.func @transposed_product
// CHECK: linalg.matmul_transpose_a ins(%arg0, %arg1 : tensor<8x4xf32>, tensor<8x6xf32>)
// CHECK-LABEL: func.func @product_transposed
// CHECK: linalg.matmul_transpose_b ins(%arg0, %arg1 : tensor<8x4xf32>, tensor<6x4xf32>)
func.func @transposed_product(%g: tensor<8x4xf32>, %x: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %gt = locus.transpose %g [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  %0 = locus.matmul %gt, %x : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
func.func @product_transposed(%g: tensor<8x4xf32>, %w: tensor<6x4xf32>) -> tensor<8x6xf32> {
  %wt = locus.transpose %w [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  %0 = locus.matmul %g, %wt : tensor<8x4xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// So does a batched product (attention's q k^T and its gradients): the
// leading axes fold into one batch, the transpose of the last two is read
// transposed; a transpose of other axes is a copy.
// CHECK-LABEL: func.func @batched_transposed_b
// CHECK: %[[K:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : tensor<2x3x5x4xf32> into tensor<6x5x4xf32>
// CHECK: linalg.batch_matmul_transpose_b ins(%{{.*}}, %[[K]] : tensor<6x5x4xf32>, tensor<6x5x4xf32>)
// CHECK-LABEL: func.func @batched_transposed_a
// CHECK: linalg.batch_matmul_transpose_a ins(%{{.*}}, %{{.*}} : tensor<3x4x5xf32>, tensor<3x4x6xf32>)
// CHECK-LABEL: func.func @batched_other_transpose
// CHECK: linalg.transpose
// CHECK: linalg.batch_matmul ins
func.func @batched_transposed_b(%q: tensor<2x3x5x4xf32>, %k: tensor<2x3x5x4xf32>) -> tensor<2x3x5x5xf32> {
  %kt = locus.transpose %k [0, 1, 3, 2] : tensor<2x3x5x4xf32> -> tensor<2x3x4x5xf32>
  %0 = locus.matmul %q, %kt : tensor<2x3x5x4xf32>, tensor<2x3x4x5xf32> -> tensor<2x3x5x5xf32>
  return %0 : tensor<2x3x5x5xf32>
}
func.func @batched_transposed_a(%g: tensor<3x4x5xf32>, %x: tensor<3x4x6xf32>) -> tensor<3x5x6xf32> {
  %gt = locus.transpose %g [0, 2, 1] : tensor<3x4x5xf32> -> tensor<3x5x4xf32>
  %0 = locus.matmul %gt, %x : tensor<3x5x4xf32>, tensor<3x4x6xf32> -> tensor<3x5x6xf32>
  return %0 : tensor<3x5x6xf32>
}
func.func @batched_other_transpose(%g: tensor<4x3x5xf32>, %x: tensor<3x5x6xf32>) -> tensor<3x4x6xf32> {
  %gt = locus.transpose %g [1, 0, 2] : tensor<4x3x5xf32> -> tensor<3x4x5xf32>
  %0 = locus.matmul %gt, %x : tensor<3x4x5xf32>, tensor<3x5x6xf32> -> tensor<3x4x6xf32>
  return %0 : tensor<3x4x6xf32>
}

// BatchNorm in training: the mean (a per-channel sum over N, H and W),
// then the centred squares' sum, then one elementwise pass for the result.
// CHECK-LABEL: func.func @batch_norm_train
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]{{.*}} ins(%{{.*}} : tensor<4x3x2x2xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3x2x2xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: math.sqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]{{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<4x3x2x2xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @batch_norm_train(%x: tensor<4x3x2x2xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y, %mean, %var = locus.batch_norm_train %x, %w, %b eps 1.0e-05 : tensor<4x3x2x2xf32>, tensor<3xf32>
  return %y, %mean, %var : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
}

// Its gradients: two per-channel sums (of the gradient, and of it times
// the normalized input), then the input's gradient in one pass.
// CHECK-LABEL: func.func @batch_norm_train_grad
// CHECK: math.sqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]{{.*}} ins(%{{.*}} : tensor<4x3x2x2xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]{{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3x2x2xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]{{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3x2x2xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<4x3x2x2xf32>)
func.func @batch_norm_train_grad(%g: tensor<4x3x2x2xf32>, %x: tensor<4x3x2x2xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %w: tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>) {
  %dx, %dw, %db = locus.batch_norm_train_grad %g, %x, %mean, %var, %w eps 1.0e-05 : tensor<4x3x2x2xf32>, tensor<3xf32>
  return %dx, %dw, %db : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
}
