// The backward pass under strict: the gradient of .to() is a move back
// (locus.to_device_of until placement), so the gradient ops run where their
// forward ops ran, as in PyTorch; the other policies drop the move and insert
// copies themselves. A move the backward pass needs that nobody wrote is
// made with a note.
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' | FileCheck %s --check-prefix=GRAD
// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-autodiff='optimizer=sgd lr=0.1' --locus-place-devices='policy=strict devices=cpu,cuda:0,cuda:1' --locus-insert-transfers | FileCheck %s --check-prefix=STRICT
// RUN: locus-opt %s -split-input-file --locus-autodiff='optimizer=sgd lr=0.1' --locus-place-devices='policy=auto devices=cpu,cuda:0,cuda:1' | FileCheck %s --check-prefix=AUTO

// The logits moved to the CPU for the loss: their gradient goes back.
// GRAD-LABEL: locus.graph @loss_on_cpu
// GRAD: %[[Z:.*]] = locus.linear
// GRAD: locus.to_device_of %{{.*}}, %[[Z]] : tensor<4x2xf32>
// STRICT-LABEL: locus.graph @loss_on_cpu
// STRICT: locus.copy <cuda:0> to <cpu>
// STRICT: locus.cross_entropy {{.*}}locus.device = #locus.device<cpu>
// STRICT: locus.copy <cpu> to <cuda:0>
// STRICT: locus.matmul {{.*}}locus.device = #locus.device<cuda:0>
// STRICT: locus.sgd {{.*}}locus.device = #locus.device<cuda:0>
// AUTO-LABEL: locus.graph @loss_on_cpu
// AUTO-NOT: locus.to_device_of
// AUTO: locus.sgd
locus.graph @loss_on_cpu {
  %x = locus.input "x" : tensor<4x3xf32> on <cuda:0>
  %labels = locus.input "labels" : tensor<4xi64>
  %w = locus.state "w" parameter : tensor<2x3xf32> init <full(0.5)> on <cuda:0>
  %z = locus.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  %zc = locus.to <cpu>, %z : tensor<4x2xf32>
  %l = locus.cross_entropy %zc, %labels mean : tensor<4x2xf32>, tensor<4xi64> -> tensor<f32>
  locus.output "loss" = %l : tensor<f32>
}

// -----

// Two layers on two GPUs, the loss on the CPU: each gradient goes back to
// its layer's GPU.
// STRICT-LABEL: locus.graph @two_gpus
// STRICT: locus.copy <cuda:1> to <cuda:0>
// STRICT-DAG: locus.sgd %b, {{.*}}locus.device = #locus.device<cuda:1>
// STRICT-DAG: locus.sgd %a, {{.*}}locus.device = #locus.device<cuda:0>
locus.graph @two_gpus {
  %x = locus.input "x" : tensor<3xf32> on <cuda:0>
  %a = locus.state "a" parameter : tensor<3xf32> init <full(0.5)> on <cuda:0>
  %b = locus.state "b" parameter : tensor<3xf32> init <full(2.0)> on <cuda:1>
  %ya = locus.mul %x, %a : tensor<3xf32>
  %yat = locus.to <cuda:1>, %ya : tensor<3xf32>
  %yb = locus.mul %yat, %b : tensor<3xf32>
  %s = locus.sum %yb axes [0] : tensor<3xf32> -> tensor<f32>
  %sc = locus.to <cpu>, %s : tensor<f32>
  locus.output "loss" = %sc : tensor<f32>
}
