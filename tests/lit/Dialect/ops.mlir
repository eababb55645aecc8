// Every locus op round-trips: print, parse the print, print again.
// RUN: locus-opt %s | locus-opt | FileCheck %s
// RUN: locus-opt %s -mlir-print-op-generic | locus-opt | FileCheck %s

// CHECK-LABEL: locus.graph @sources
locus.graph @sources {
  // CHECK: %x = locus.input "x" : tensor<100x10xf32>
  %x = locus.input "x" : tensor<100x10xf32>
  // CHECK: %labels = locus.input "labels" : tensor<100xi64> on <cuda:1>
  %l = locus.input "labels" : tensor<100xi64> on #locus.device<cuda:1>
  // CHECK: %w = locus.state "w" parameter : tensor<2x10xf32> init <uniform(-0.5, 0.25), seed = 42>
  %w = locus.state "w" parameter : tensor<2x10xf32> init #locus.init<uniform(-0.5, 0.25), seed = 42>
  // CHECK: %m = locus.state "m" buffer : tensor<2x10xf32> init <full(0.0)> on <cpu>
  %m = locus.state "m" buffer : tensor<2x10xf32> init <full(0.0)> on #locus.device<cpu>
  // CHECK: locus.constant dense<2.000000e+00> : tensor<f32>
  %c = locus.constant dense<2.0> : tensor<f32>
  // CHECK: locus.constant dense<[1, 2]> : tensor<2xi64> on <cuda:0>
  %d = locus.constant dense<[1, 2]> : tensor<2xi64> on #locus.device<cuda:0>
  // CHECK: locus.output "w" = %w : tensor<2x10xf32>
  locus.output "w" = %w : tensor<2x10xf32>
}

// CHECK-LABEL: locus.graph @elementwise
locus.graph @elementwise {
  %a = locus.input "a" : tensor<4x8xf32>
  %b = locus.input "b" : tensor<4x8xf32>
  // CHECK: locus.add %a, %b : tensor<4x8xf32>
  %0 = locus.add %a, %b : tensor<4x8xf32>
  // CHECK: locus.sub
  %1 = locus.sub %0, %b : tensor<4x8xf32>
  // CHECK: locus.mul
  %2 = locus.mul %1, %b : tensor<4x8xf32>
  // CHECK: locus.div
  %3 = locus.div %2, %b : tensor<4x8xf32>
  // CHECK: locus.maximum
  %4 = locus.maximum %3, %a : tensor<4x8xf32>
  // CHECK: locus.neg %{{.*}} : tensor<4x8xf32>
  %5 = locus.neg %4 : tensor<4x8xf32>
  // CHECK: locus.exp
  %6 = locus.exp %5 : tensor<4x8xf32>
  // CHECK: locus.log
  %7 = locus.log %6 : tensor<4x8xf32>
  // CHECK: locus.sqrt
  %8 = locus.sqrt %7 : tensor<4x8xf32>
  // CHECK: locus.relu
  %9 = locus.relu %8 : tensor<4x8xf32>
  // CHECK: locus.sigmoid
  %10 = locus.sigmoid %9 : tensor<4x8xf32>
  // CHECK: locus.tanh
  %11 = locus.tanh %10 : tensor<4x8xf32>
  // CHECK: locus.pow %{{.*}}, 2.500000e+00 : tensor<4x8xf32>
  %12 = locus.pow %11, 2.5 : tensor<4x8xf32>
  // CHECK: %[[M:.*]] = locus.cmp gt, %{{.*}}, %b : tensor<4x8xf32>
  %13 = locus.cmp gt, %12, %b : tensor<4x8xf32>
  // CHECK: locus.select %[[M]], %a, %b : tensor<4x8xi1>, tensor<4x8xf32>
  %14 = locus.select %13, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>
  // CHECK: locus.broadcast %{{.*}} [2, 4, 8] : tensor<4x8xf32> -> tensor<2x4x8xf32>
  %15 = locus.broadcast %14 [2, 4, 8] : tensor<4x8xf32> -> tensor<2x4x8xf32>
  locus.output "r" = %15 : tensor<2x4x8xf32>
}

// The math and activation ops of real models.
// CHECK-LABEL: locus.graph @math
locus.graph @math {
  %a = locus.input "a" : tensor<4x8xf32>
  // CHECK: locus.erf %{{.*}} : tensor<4x8xf32>
  %0 = locus.erf %a : tensor<4x8xf32>
  // CHECK: locus.sin
  %1 = locus.sin %0 : tensor<4x8xf32>
  // CHECK: locus.cos
  %2 = locus.cos %1 : tensor<4x8xf32>
  // CHECK: locus.abs
  %3 = locus.abs %2 : tensor<4x8xf32>
  // CHECK: locus.rsqrt
  %4 = locus.rsqrt %3 : tensor<4x8xf32>
  // CHECK: locus.reciprocal
  %5 = locus.reciprocal %4 : tensor<4x8xf32>
  // CHECK: locus.silu
  %6 = locus.silu %5 : tensor<4x8xf32>
  // CHECK: locus.gelu %{{.*}} : tensor<4x8xf32>
  %7 = locus.gelu %6 : tensor<4x8xf32>
  // CHECK: locus.gelu %{{.*}} {tanh} : tensor<4x8xf32>
  %8 = locus.gelu %7 {tanh} : tensor<4x8xf32>
  locus.output "r" = %8 : tensor<4x8xf32>
}

// CHECK-LABEL: locus.graph @layout
locus.graph @layout {
  %a = locus.input "a" : tensor<8x16xf32>
  %b = locus.input "b" : tensor<16x4xf32>
  %ba = locus.input "ba" : tensor<3x8x16xf32>
  %bb = locus.input "bb" : tensor<3x16x4xf32>
  %w = locus.input "w" : tensor<5x16xf32>
  %bias = locus.input "bias" : tensor<5xf32>
  // CHECK: locus.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %0 = locus.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  // CHECK: locus.matmul %ba, %bb : tensor<3x8x16xf32>, tensor<3x16x4xf32> -> tensor<3x8x4xf32>
  %1 = locus.matmul %ba, %bb : tensor<3x8x16xf32>, tensor<3x16x4xf32> -> tensor<3x8x4xf32>
  // CHECK: locus.linear %a, %w, %bias : tensor<8x16xf32>, tensor<5x16xf32>, tensor<5xf32> -> tensor<8x5xf32>
  %2 = locus.linear %a, %w, %bias : tensor<8x16xf32>, tensor<5x16xf32>, tensor<5xf32> -> tensor<8x5xf32>
  // CHECK: locus.linear %a, %w : tensor<8x16xf32>, tensor<5x16xf32> -> tensor<8x5xf32>
  %3 = locus.linear %a, %w : tensor<8x16xf32>, tensor<5x16xf32> -> tensor<8x5xf32>
  // CHECK: locus.transpose %ba [2, 0, 1] : tensor<3x8x16xf32> -> tensor<16x3x8xf32>
  %4 = locus.transpose %ba [2, 0, 1] : tensor<3x8x16xf32> -> tensor<16x3x8xf32>
  // CHECK: locus.reshape %ba [24, 16] : tensor<3x8x16xf32> -> tensor<24x16xf32>
  %5 = locus.reshape %ba [24, 16] : tensor<3x8x16xf32> -> tensor<24x16xf32>
  // CHECK: locus.concat %a, %5 axis 0 : (tensor<8x16xf32>, tensor<24x16xf32>) -> tensor<32x16xf32>
  %6 = locus.concat %a, %5 axis 0 : (tensor<8x16xf32>, tensor<24x16xf32>) -> tensor<32x16xf32>
  // CHECK: locus.slice %6 offsets [1, 0] sizes [10, 8] strides [3, 2] : tensor<32x16xf32> -> tensor<10x8xf32>
  %7 = locus.slice %6 offsets [1, 0] sizes [10, 8] strides [3, 2] : tensor<32x16xf32> -> tensor<10x8xf32>
  locus.output "r" = %7 : tensor<10x8xf32>
}

// CHECK-LABEL: locus.graph @reductions
locus.graph @reductions {
  %x = locus.input "x" : tensor<8x4x3xf32>
  // CHECK: locus.sum %x axes [1] : tensor<8x4x3xf32> -> tensor<8x3xf32>
  %0 = locus.sum %x axes [1] : tensor<8x4x3xf32> -> tensor<8x3xf32>
  // CHECK: locus.mean %x axes [0, 2] keepdim : tensor<8x4x3xf32> -> tensor<1x4x1xf32>
  %1 = locus.mean %x axes [0, 2] keepdim : tensor<8x4x3xf32> -> tensor<1x4x1xf32>
  // CHECK: locus.max %x axes [0, 1, 2] : tensor<8x4x3xf32> -> tensor<f32>
  %2 = locus.max %x axes [0, 1, 2] : tensor<8x4x3xf32> -> tensor<f32>
  // CHECK: locus.softmax %x axis 2 : tensor<8x4x3xf32>
  %3 = locus.softmax %x axis 2 : tensor<8x4x3xf32>
  // CHECK: locus.log_softmax %x axis 0 : tensor<8x4x3xf32>
  %4 = locus.log_softmax %x axis 0 : tensor<8x4x3xf32>
  locus.output "r" = %4 : tensor<8x4x3xf32>
}

// CHECK-LABEL: locus.graph @conv
locus.graph @conv {
  %x = locus.input "x" : tensor<2x4x9x9xf32>
  %w = locus.input "w" : tensor<6x2x3x3xf32>
  %b = locus.input "b" : tensor<6xf32>
  // CHECK: locus.conv2d %x, %w, %b stride [2, 1] padding [1, 0] dilation [1, 2] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<2x6x5x5xf32>
  %0 = locus.conv2d %x, %w, %b stride [2, 1] padding [1, 0] dilation [1, 2] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<2x6x5x5xf32>
  // CHECK: locus.conv2d %x, %w stride
  %1 = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x7x7xf32>
  // CHECK: locus.max_pool2d %0 kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x6x5x5xf32> -> tensor<2x6x3x3xf32>
  %2 = locus.max_pool2d %0 kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x6x5x5xf32> -> tensor<2x6x3x3xf32>
  // CHECK: locus.avg_pool2d %1 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x6x7x7xf32> -> tensor<2x6x3x3xf32>
  %3 = locus.avg_pool2d %1 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x6x7x7xf32> -> tensor<2x6x3x3xf32>
  locus.output "r" = %3 : tensor<2x6x3x3xf32>
}

// CHECK-LABEL: locus.graph @losses
locus.graph @losses {
  %p = locus.input "p" : tensor<100x2xf32>
  %y = locus.input "y" : tensor<100x2xf32>
  %logits = locus.input "logits" : tensor<32x10xf32>
  %labels = locus.input "labels" : tensor<32xi64>
  // CHECK: locus.mse_loss %p, %y mean : tensor<100x2xf32> -> tensor<f32>
  %0 = locus.mse_loss %p, %y mean : tensor<100x2xf32> -> tensor<f32>
  // CHECK: locus.mse_loss %p, %y sum : tensor<100x2xf32> -> tensor<f32>
  %1 = locus.mse_loss %p, %y sum : tensor<100x2xf32> -> tensor<f32>
  // CHECK: locus.cross_entropy %logits, %labels mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %2 = locus.cross_entropy %logits, %labels mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  locus.output "loss" = %2 : tensor<f32>
}

// CHECK-LABEL: locus.graph @devices
locus.graph @devices {
  %x = locus.input "x" : tensor<100x10xf32>
  // CHECK: %[[G:.*]] = locus.to <cuda:0>, %x : tensor<100x10xf32>
  %0 = locus.to #locus.device<cuda:0>, %x : tensor<100x10xf32>
  // CHECK: locus.copy <cuda:0> to <cpu>, %[[G]] : tensor<100x10xf32>
  %1 = locus.copy #locus.device<cuda:0> to <cpu>, %0 : tensor<100x10xf32>
  locus.output "x" = %1 : tensor<100x10xf32>
}

// Gradients, optimizers and state updates (what --locus-autodiff records).
// CHECK-LABEL: locus.graph @training
locus.graph @training {
  %x = locus.input "x" : tensor<2x3x6x6xf32>
  %g = locus.input "g" : tensor<2x4x6x6xf32>
  %p = locus.input "p" : tensor<2x3x3x3xf32>
  %s = locus.input "s" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<4xi64>
  %c = locus.input "c" : tensor<3xf32>
  %w = locus.state "w" parameter : tensor<4x3x3x3xf32> init <uniform(-0.1, 0.1), seed = 1>
  %t = locus.state "t" buffer : tensor<f32> init <full(0.0)>
  %lr = locus.state "lr" buffer : tensor<f32> init <full(0.01)>
  %buf = locus.state "buf" buffer : tensor<4x3x3x3xf32> init <full(0.0)>
  %m = locus.state "m" buffer : tensor<4x3x3x3xf32> init <full(0.0)>
  %v = locus.state "v" buffer : tensor<4x3x3x3xf32> init <full(0.0)>
  // CHECK: locus.one_hot %l classes 5 : tensor<4xi64> -> tensor<4x5xf32>
  %0 = locus.one_hot %l classes 5 : tensor<4xi64> -> tensor<4x5xf32>
  // CHECK: locus.slice_grad %s shape [4, 7] offsets [0, 1] strides [1, 2] : tensor<4x3xf32> -> tensor<4x7xf32>
  %1 = locus.slice_grad %s shape [4, 7] offsets [0, 1] strides [1, 2] : tensor<4x3xf32> -> tensor<4x7xf32>
  // CHECK: locus.conv2d_input_grad %g, %w input_shape [2, 3, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x6x6xf32>
  %2 = locus.conv2d_input_grad %g, %w input_shape [2, 3, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x6x6xf32>
  // CHECK: locus.conv2d_weight_grad %x, %g weight_shape [4, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<4x3x3x3xf32>
  %3 = locus.conv2d_weight_grad %x, %g weight_shape [4, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<4x3x3x3xf32>
  // CHECK: locus.max_pool2d_grad %x, %p kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x6x6xf32>, tensor<2x3x3x3xf32> -> tensor<2x3x6x6xf32>
  %4 = locus.max_pool2d_grad %x, %p kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x6x6xf32>, tensor<2x3x3x3xf32> -> tensor<2x3x6x6xf32>
  // CHECK: %{{.*}}, %[[MEAN:.*]], %[[VAR:.*]] = locus.batch_norm_train %x, %c, %c eps 1.000000e-05 : tensor<2x3x6x6xf32>, tensor<3xf32>
  %y, %mean, %var = locus.batch_norm_train %x, %c, %c eps 1.0e-05 : tensor<2x3x6x6xf32>, tensor<3xf32>
  // CHECK: locus.batch_norm_train_grad %x, %x, %[[MEAN]], %[[VAR]], %c eps 1.000000e-05 : tensor<2x3x6x6xf32>, tensor<3xf32>
  %dx, %dw, %db = locus.batch_norm_train_grad %x, %x, %mean, %var, %c eps 1.0e-05 : tensor<2x3x6x6xf32>, tensor<3xf32>
  // CHECK: %[[P:.*]]:2 = locus.sgd %w, %3, %buf lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 nesterov : tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>
  %5:2 = locus.sgd %w, %3, %buf lr %lr momentum 0.9 weight_decay 0.0 nesterov : tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>
  // CHECK: locus.sgd %w, %3 lr %lr momentum 0.000000e+00 weight_decay 1.000000e-04 : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>
  %6 = locus.sgd %w, %3 lr %lr momentum 0.0 weight_decay 0.0001 : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>
  // CHECK: locus.adam %w, %3, %m, %v, %t lr %lr betas [9.000000e-01, 9.990000e-01] eps 1.000000e-08 weight_decay 0.000000e+00 : tensor<4x3x3x3xf32>, tensor<f32>
  %7:3 = locus.adam %w, %3, %m, %v, %t lr %lr betas [0.9, 0.999] eps 1.0e-8 weight_decay 0.0 : tensor<4x3x3x3xf32>, tensor<f32>
  // CHECK: locus.assign %w = %[[P]]#0 : tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>
  locus.assign %w = %5#0 : tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>
  // CHECK: locus.assign %buf = %[[P]]#1
  locus.assign %buf = %5#1 : tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>
  // CHECK: locus.gather_grad %s, %l axis 0 extent 9 : tensor<4x3xf32>, tensor<4xi64> -> tensor<9x3xf32>
  %gg = locus.gather_grad %s, %l axis 0 extent 9 : tensor<4x3xf32>, tensor<4xi64> -> tensor<9x3xf32>
  %l4 = locus.broadcast %l [4, 4] : tensor<4xi64> -> tensor<4x4xi64>
  // CHECK: locus.gather_elements %s, %{{.*}} axis 1 : tensor<4x3xf32>, tensor<4x4xi64> -> tensor<4x4xf32>
  %ge = locus.gather_elements %s, %l4 axis 1 : tensor<4x3xf32>, tensor<4x4xi64> -> tensor<4x4xf32>
  // CHECK: locus.gather_elements_grad %{{.*}}, %{{.*}} axis 1 extent 3 : tensor<4x4xf32>, tensor<4x4xi64> -> tensor<4x3xf32>
  %gd = locus.gather_elements_grad %ge, %l4 axis 1 extent 3 : tensor<4x4xf32>, tensor<4x4xi64> -> tensor<4x3xf32>
  locus.output "o" = %0 : tensor<4x5xf32>
}

// CHECK-LABEL: locus.graph @types_and_indexing
locus.graph @types_and_indexing {
  %x = locus.input "x" : tensor<4x5xf32>
  %ids = locus.input "ids" : tensor<4x5xi64>
  %w = locus.state "emb" parameter : tensor<10x3xf32> init <normal(0.0, 1.0), seed = 7>
  // CHECK: init <normal(0.0, 1.0), seed = 7>
  // CHECK: locus.fmod %x, %x : tensor<4x5xf32>
  %f = locus.fmod %x, %x : tensor<4x5xf32>
  // CHECK: locus.floor %{{.*}} : tensor<4x5xf32>
  %fl = locus.floor %f : tensor<4x5xf32>
  // CHECK: locus.ceil
  %ce = locus.ceil %fl : tensor<4x5xf32>
  // CHECK: locus.round
  %ro = locus.round %ce : tensor<4x5xf32>
  // CHECK: locus.minimum %x, %x : tensor<4x5xf32>
  %0 = locus.minimum %x, %x : tensor<4x5xf32>
  // CHECK: locus.min %{{.*}} axes [1] keepdim : tensor<4x5xf32> -> tensor<4x1xf32>
  %1 = locus.min %0 axes [1] keepdim : tensor<4x5xf32> -> tensor<4x1xf32>
  // CHECK: %[[E:.*]] = locus.cmp eq, %ids, %ids : tensor<4x5xi64>
  %2 = locus.cmp eq, %ids, %ids : tensor<4x5xi64>
  // CHECK: locus.select %[[E]], %ids, %ids : tensor<4x5xi1>, tensor<4x5xi64>
  %3 = locus.select %2, %ids, %ids : tensor<4x5xi1>, tensor<4x5xi64>
  // CHECK: locus.cast %{{.*}} to f32 : tensor<4x5xi64> -> tensor<4x5xf32>
  %4 = locus.cast %3 to f32 : tensor<4x5xi64> -> tensor<4x5xf32>
  // CHECK: locus.cast %x to i1 : tensor<4x5xf32> -> tensor<4x5xi1>
  %5 = locus.cast %x to i1 : tensor<4x5xf32> -> tensor<4x5xi1>
  // CHECK: locus.gather %emb, %ids axis 0 : tensor<10x3xf32>, tensor<4x5xi64> -> tensor<4x5x3xf32>
  %6 = locus.gather %w, %ids axis 0 : tensor<10x3xf32>, tensor<4x5xi64> -> tensor<4x5x3xf32>
  locus.output "o" = %6 : tensor<4x5x3xf32>
}

// Counter-based random numbers on the graph's run counter.
// CHECK-LABEL: locus.graph @random
locus.graph @random {
  %t = locus.state "rng.step" buffer : tensor<f32> init <full(0.0)>
  // CHECK: %[[U:.*]] = locus.random uniform [4, 8] seed 42 step %rng.step : tensor<f32> -> tensor<4x8xf32>
  %0 = locus.random uniform [4, 8] seed 42 step %t : tensor<f32> -> tensor<4x8xf32>
  // CHECK: locus.random normal [16] seed -7 step %rng.step : tensor<f32> -> tensor<16xf32>
  %1 = locus.random normal [16] seed -7 step %t : tensor<f32> -> tensor<16xf32>
  // CHECK: locus.random uniform [] seed 0 step %rng.step : tensor<f32> -> tensor<f32>
  %2 = locus.random uniform [] seed 0 step %t : tensor<f32> -> tensor<f32>
  locus.output "u" = %0 : tensor<4x8xf32>
  locus.output "n" = %1 : tensor<16xf32>
  locus.output "s" = %2 : tensor<f32>
}

// The gradient of a .to(): a move back to where %x is.
// CHECK-LABEL: locus.graph @move_back
// CHECK: locus.to_device_of %g, %x : tensor<4xf32>
locus.graph @move_back {
  %x = locus.input "x" : tensor<4xf32>
  %g = locus.input "g" : tensor<4xf32>
  %b = locus.to_device_of %g, %x : tensor<4xf32>
  locus.output "b" = %b : tensor<4xf32>
}

// A gradient bucket averaged over the ranks of a data-parallel job.
// CHECK-LABEL: locus.graph @all_reduce
locus.graph @all_reduce {
  %a = locus.input "a" : tensor<2x3xf32>
  %b = locus.input "b" : tensor<4xf32>
  // CHECK: %{{.*}}:2 = locus.all_reduce mean bucket 3, %a, %b : tensor<2x3xf32>, tensor<4xf32>
  %r:2 = locus.all_reduce mean bucket 3, %a, %b : tensor<2x3xf32>, tensor<4xf32>
  // CHECK: locus.all_reduce bucket 0, %b : tensor<4xf32>
  %s = locus.all_reduce bucket 0, %b : tensor<4xf32>
  locus.output "a" = %r#0 : tensor<2x3xf32>
  locus.output "s" = %s : tensor<4xf32>
}
