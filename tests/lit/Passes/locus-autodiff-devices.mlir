// --locus-autodiff with an optimizer: the learning rate (and Adam's step
// count) is state once per device the parameters are pinned to, so no
// update reads a scalar from another device; the first parameter's device
// has the plain name, parameters without a device share "@unpinned".
// RUN: locus-opt %s --locus-autodiff='optimizer=adam lr=0.01' | FileCheck %s

// CHECK-LABEL: locus.graph @three_devices
// CHECK-DAG: %[[S0:.*]] = locus.state "optimizer.step" buffer : tensor<f32> init <full(0.0)> on <cpu>
// CHECK-DAG: %[[S1:.*]] = locus.state "optimizer.step@cuda:1" buffer : tensor<f32> init <full(0.0)> on <cuda:1>
// CHECK-DAG: %[[S2:.*]] = locus.state "optimizer.step@unpinned" buffer : tensor<f32>
// CHECK-DAG: %[[L0:.*]] = locus.state "optimizer.param_groups.0.lr" buffer : tensor<f32> init <full(0.01{{.*}})> on <cpu>
// CHECK-DAG: %[[L1:.*]] = locus.state "optimizer.param_groups.0.lr@cuda:1" buffer : tensor<f32> init <full(0.01{{.*}})> on <cuda:1>
// CHECK-DAG: %[[L2:.*]] = locus.state "optimizer.param_groups.0.lr@unpinned" buffer : tensor<f32>
// CHECK-DAG: locus.adam %a, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr %[[L0]]
// CHECK-DAG: locus.adam %b, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr %[[L1]]
// CHECK-DAG: locus.adam %c, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr %[[L2]]
locus.graph @three_devices {
  %x = locus.input "x" : tensor<3xf32>
  %a = locus.state "a" parameter : tensor<3xf32> init <full(0.5)> on <cpu>
  %b = locus.state "b" parameter : tensor<3xf32> init <full(2.0)> on <cuda:1>
  %c = locus.state "c" parameter : tensor<3xf32> init <full(1.0)>
  %ya = locus.mul %x, %a : tensor<3xf32>
  %xb = locus.to <cuda:1>, %x : tensor<3xf32>
  %yb = locus.mul %xb, %b : tensor<3xf32>
  %ybc = locus.to <cpu>, %yb : tensor<3xf32>
  %yc = locus.mul %x, %c : tensor<3xf32>
  %s1 = locus.add %ya, %ybc : tensor<3xf32>
  %s2 = locus.add %s1, %yc : tensor<3xf32>
  %s = locus.sum %s2 axes [0] : tensor<3xf32> -> tensor<f32>
  locus.output "loss" = %s : tensor<f32>
}
