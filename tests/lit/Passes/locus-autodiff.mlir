// --locus-autodiff: gradients of the loss output with respect to the
// parameters (or wrt=), recorded with the forward op's location; or a whole
// training step with optimizer=sgd|adam.
// RUN: locus-opt %s -split-input-file --locus-autodiff | FileCheck %s
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1 momentum=0.9' | FileCheck %s --check-prefix=SGD
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=adam lr=0.001' | FileCheck %s --check-prefix=ADAM
// RUN: locus-opt %s -split-input-file --locus-autodiff='wrt=x' | FileCheck %s --check-prefix=WRT

// Linear + MSE: dW = g2^T x, db = sum over the batch; the seed's 1.0 is not
// multiplied in. Nothing flows into the input x (not a parameter).
// CHECK-LABEL: locus.graph @linear_mse
// CHECK: %[[LOSS:.*]] = locus.mse_loss %[[P:.*]], %y mean
// CHECK: %[[D:.*]] = locus.sub %[[P]], %y
// CHECK: %[[N:.*]] = locus.constant dense<0.00999999977> : tensor<f32>
// CHECK: %[[NB:.*]] = locus.broadcast %[[N]] [100, 2]
// CHECK: %[[G:.*]] = locus.mul %[[D]], %[[NB]] : tensor<100x2xf32>
// CHECK: %[[GT:.*]] = locus.transpose %[[G]] [1, 0]
// CHECK: %[[DW:.*]] = locus.matmul %[[GT]], %x {locus.gradient} : tensor<2x100xf32>, tensor<100x10xf32> -> tensor<2x10xf32>
// CHECK: %[[DB:.*]] = locus.sum %[[G]] axes [0]
// CHECK-NOT: locus.matmul
// CHECK: locus.output "fc.weight.grad" = %[[DW]]
// CHECK: locus.output "fc.bias.grad" = %[[DB]]

// The learning rate is state, so a schedule can change it between runs.
// SGD-LABEL: locus.graph @linear_mse
// SGD: %[[LR:.*]] = locus.state "optimizer.param_groups.0.lr" buffer : tensor<f32> init <full(0.10000000000000001)>
// SGD: %[[BUF:.*]] = locus.state "fc.weight.momentum_buffer" buffer : tensor<2x10xf32> init <full(0.0)>
// SGD: %[[S:.*]]:2 = locus.sgd %fc.weight, %{{.*}}, %[[BUF]] lr %[[LR]] momentum 9.000000e-01
// SGD: locus.assign %fc.weight = %[[S]]#0
// SGD: locus.assign %[[BUF]] = %[[S]]#1
// SGD: locus.sgd %fc.bias
// SGD-NOT: locus.output "fc.weight.grad"

// ADAM-LABEL: locus.graph @linear_mse
// ADAM: %[[T:.*]] = locus.state "optimizer.step" buffer : tensor<f32> init <full(0.0)>
// ADAM: %[[T1:.*]] = locus.add %[[T]], %{{.*}} : tensor<f32>
// ADAM: locus.assign %[[T]] = %[[T1]]
// ADAM: %[[LR:.*]] = locus.state "optimizer.param_groups.0.lr" buffer : tensor<f32>
// ADAM: locus.state "fc.weight.exp_avg" buffer
// ADAM: locus.state "fc.weight.exp_avg_sq" buffer
// ADAM: %{{.*}}, %{{.*}}, %{{.*}} = locus.adam %fc.weight, %{{.*}}, %{{.*}}, %{{.*}}, %[[T1]] lr %[[LR]] betas [9.000000e-01, 9.990000e-01] eps 1.000000e-08
// ADAM-COUNT-3: locus.assign
// ADAM: locus.adam %fc.bias

// WRT-LABEL: locus.graph @linear_mse
// WRT: %[[G:.*]] = locus.mul
// WRT: %[[DX:.*]] = locus.matmul %[[G]], %fc.weight : tensor<100x2xf32>, tensor<2x10xf32> -> tensor<100x10xf32>
// WRT: locus.output "x.grad" = %[[DX]]
locus.graph @linear_mse {
  %x = locus.input "x" : tensor<100x10xf32>
  %y = locus.input "y" : tensor<100x2xf32>
  %w = locus.state "fc.weight" parameter : tensor<2x10xf32> init <uniform(-0.316, 0.316), seed = 1>
  %b = locus.state "fc.bias" parameter : tensor<2xf32> init <uniform(-0.316, 0.316), seed = 2>
  %p = locus.linear %x, %w, %b : tensor<100x10xf32>, tensor<2x10xf32>, tensor<2xf32> -> tensor<100x2xf32>
  %l = locus.mse_loss %p, %y mean : tensor<100x2xf32> -> tensor<f32>
  locus.output "loss" = %l : tensor<f32>
}

// -----

// The seed CNN: the first convolution's input gets no gradient (no
// conv2d_input_grad); max pooling routes through max_pool2d_grad, ReLU through
// a select on the result, cross entropy through softmax and one_hot.
// CHECK-LABEL: locus.graph @cnn
// CHECK: locus.softmax %{{.*}} axis 1
// CHECK: locus.one_hot %labels classes 10 : tensor<4xi64> -> tensor<4x10xf32>
// CHECK: locus.max_pool2d_grad %{{.*}}, %{{.*}} kernel [2, 2] stride [2, 2] padding [0, 0]
// CHECK: %[[POS:.*]] = locus.cmp gt, %[[R:.*]], %{{.*}}
// CHECK: locus.select %[[POS]]
// CHECK-NOT: locus.conv2d_input_grad
// CHECK: locus.conv2d_weight_grad %x, %{{.*}} weight_shape [8, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
// CHECK: locus.sum %{{.*}} axes [0, 2, 3] {locus.gradient} : tensor<4x8x6x6xf32> -> tensor<8xf32>
// CHECK: locus.output "conv.weight.grad"
// CHECK: locus.output "conv.bias.grad"
// CHECK: locus.output "fc.weight.grad"
locus.graph @cnn {
  %x = locus.input "x" : tensor<4x3x6x6xf32>
  %labels = locus.input "labels" : tensor<4xi64>
  %cw = locus.state "conv.weight" parameter : tensor<8x3x3x3xf32> init <uniform(-0.19, 0.19), seed = 1>
  %cb = locus.state "conv.bias" parameter : tensor<8xf32> init <uniform(-0.19, 0.19), seed = 2>
  %fw = locus.state "fc.weight" parameter : tensor<10x72xf32> init <uniform(-0.1, 0.1), seed = 3>
  %c = locus.conv2d %x, %cw, %cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<4x3x6x6xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<4x8x6x6xf32>
  %r = locus.relu %c : tensor<4x8x6x6xf32>
  %p = locus.max_pool2d %r kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<4x8x6x6xf32> -> tensor<4x8x3x3xf32>
  %f = locus.reshape %p [4, 72] : tensor<4x8x3x3xf32> -> tensor<4x72xf32>
  %o = locus.linear %f, %fw : tensor<4x72xf32>, tensor<10x72xf32> -> tensor<4x10xf32>
  %l = locus.cross_entropy %o, %labels mean : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  locus.output "loss" = %l : tensor<f32>
}

// -----

// BatchNorm in training: one gradient op for the input, weight and bias;
// its weight and bias gradients are marked as parameters' (results 1 and
// 2) for --locus-data-parallel. The statistics feed no loss.
// CHECK-LABEL: locus.graph @batch_norm
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[VAR:.*]] = locus.batch_norm_train %x, %bn.weight, %bn.bias eps 1.000000e-05 : tensor<4x3x2x2xf32>, tensor<3xf32>
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = locus.batch_norm_train_grad %{{.*}}, %x, %[[MEAN]], %[[VAR]], %bn.weight eps 1.000000e-05 {locus.gradient = array<i64: 1, 2>} : tensor<4x3x2x2xf32>, tensor<3xf32>
// CHECK: locus.output "bn.weight.grad" = %[[DW]]
// CHECK: locus.output "bn.bias.grad" = %[[DB]]
// WRT-LABEL: locus.graph @batch_norm
// WRT: %[[DX:.*]], %{{.*}}, %{{.*}} = locus.batch_norm_train_grad
// WRT-NOT: locus.gradient
// WRT: locus.output "x.grad" = %[[DX]]
locus.graph @batch_norm {
  %x = locus.input "x" : tensor<4x3x2x2xf32>
  %w = locus.state "bn.weight" parameter : tensor<3xf32> init <full(1.0)>
  %b = locus.state "bn.bias" parameter : tensor<3xf32> init <full(0.0)>
  %y, %mean, %var = locus.batch_norm_train %x, %w, %b eps 1.0e-05 : tensor<4x3x2x2xf32>, tensor<3xf32>
  %s = locus.sum %y axes [0, 1, 2, 3] : tensor<4x3x2x2xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
}

// -----

// A packed weight sliced into blocks side by side (attention's q, k and v
// rows of in_proj_weight): its gradient is the blocks' gradients joined by
// one concat, not a zero fill per block summed. Blocks that leave a gap,
// or overlap, are summed as slice gradients.
// CHECK-LABEL: locus.graph @packed
// The backward pass reaches v first, then k, then q.
// CHECK: %[[DV:.*]] = locus.matmul {{.*}} -> tensor<2x4xf32>
// CHECK: %[[DK:.*]] = locus.matmul {{.*}} -> tensor<2x4xf32>
// CHECK: %[[DQ:.*]] = locus.matmul {{.*}} -> tensor<2x4xf32>
// CHECK: %[[DW:.*]] = locus.concat %[[DQ]], %[[DK]], %[[DV]] axis 0 {locus.gradient} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<6x4xf32>
// CHECK-NOT: locus.slice_grad
// CHECK: locus.output "w.grad" = %[[DW]]
// CHECK-LABEL: locus.graph @gap
// CHECK-DAG: locus.slice_grad {{.*}} shape [6, 4] offsets [0, 0]
// CHECK-DAG: locus.slice_grad {{.*}} shape [6, 4] offsets [4, 0]
// CHECK: locus.add
locus.graph @packed {
  %x = locus.input "x" : tensor<3x4xf32>
  %w = locus.state "w" parameter : tensor<6x4xf32> init <uniform(-1.0, 1.0), seed = 1>
  %q = locus.slice %w offsets [0, 0] sizes [2, 4] strides [1, 1] : tensor<6x4xf32> -> tensor<2x4xf32>
  %k = locus.slice %w offsets [2, 0] sizes [2, 4] strides [1, 1] : tensor<6x4xf32> -> tensor<2x4xf32>
  %v = locus.slice %w offsets [4, 0] sizes [2, 4] strides [1, 1] : tensor<6x4xf32> -> tensor<2x4xf32>
  %a = locus.linear %x, %q : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  %b = locus.linear %x, %k : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  %c = locus.linear %x, %v : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  %ab = locus.add %a, %b : tensor<3x2xf32>
  %abc = locus.mul %ab, %c : tensor<3x2xf32>
  %l = locus.sum %abc axes [0, 1] : tensor<3x2xf32> -> tensor<f32>
  locus.output "loss" = %l : tensor<f32>
}

// -----

locus.graph @gap {
  %x = locus.input "x" : tensor<3x4xf32>
  %w = locus.state "w" parameter : tensor<6x4xf32> init <uniform(-1.0, 1.0), seed = 1>
  %q = locus.slice %w offsets [0, 0] sizes [2, 4] strides [1, 1] : tensor<6x4xf32> -> tensor<2x4xf32>
  %v = locus.slice %w offsets [4, 0] sizes [2, 4] strides [1, 1] : tensor<6x4xf32> -> tensor<2x4xf32>
  %a = locus.linear %x, %q : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  %c = locus.linear %x, %v : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  %ac = locus.mul %a, %c : tensor<3x2xf32>
  %l = locus.sum %ac axes [0, 1] : tensor<3x2xf32> -> tensor<f32>
  locus.output "loss" = %l : tensor<f32>
}

// -----

// An embedding: the weight's gradient adds each looked-up row's gradient
// at its id (locus.gather_grad), one read of the gradient; no one-hot
// matrix of [ids, rows] and no product with it.
// CHECK-LABEL: locus.graph @embedding
// CHECK: %[[E:.*]] = locus.gather %w, %ids axis 0 : tensor<1000x8xf32>, tensor<4x6xi64> -> tensor<4x6x8xf32>
// CHECK-NOT: locus.one_hot
// CHECK-NOT: locus.matmul
// CHECK: %[[G:.*]] = locus.gather_grad %{{.*}}, %ids axis 0 extent 1000 {{.*}}: tensor<4x6x8xf32>, tensor<4x6xi64> -> tensor<1000x8xf32>
// CHECK: locus.output "w.grad" = %[[G]] : tensor<1000x8xf32>
locus.graph @embedding {
  %w = locus.state "w" parameter : tensor<1000x8xf32> init <normal(0.0, 1.0), seed = 3>
  %ids = locus.input "ids" : tensor<4x6xi64>
  %x = locus.input "x" : tensor<4x6x8xf32>
  %e = locus.gather %w, %ids axis 0 : tensor<1000x8xf32>, tensor<4x6xi64> -> tensor<4x6x8xf32>
  %sq = locus.mul %e, %x : tensor<4x6x8xf32>
  %loss = locus.sum %sq axes [0, 1, 2] : tensor<4x6x8xf32> -> tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}

// -----

// torch.gather: the input's gradient adds each picked element's gradient
// back where it was picked (locus.gather_elements_grad).
// CHECK-LABEL: locus.graph @gather_elements
// CHECK: locus.gather_elements %w, %ids axis 1 : tensor<4x50xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
// CHECK: %[[G:.*]] = locus.gather_elements_grad %{{.*}}, %ids axis 1 extent 50 {{.*}}: tensor<4x3xf32>, tensor<4x3xi64> -> tensor<4x50xf32>
// CHECK: locus.output "w.grad" = %[[G]] : tensor<4x50xf32>
locus.graph @gather_elements {
  %w = locus.state "w" parameter : tensor<4x50xf32> init <normal(0.0, 1.0), seed = 3>
  %ids = locus.input "ids" : tensor<4x3xi64>
  %x = locus.input "x" : tensor<4x3xf32>
  %e = locus.gather_elements %w, %ids axis 1 : tensor<4x50xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
  %p = locus.mul %e, %x : tensor<4x3xf32>
  %loss = locus.sum %p axes [0, 1] : tensor<4x3xf32> -> tensor<f32>
  locus.output "loss" = %loss : tensor<f32>
}
