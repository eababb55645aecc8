// On a GPU, kernels that only move data or compute elementwise join one
// kernel when neither depends on the other, which --locus-map-to-gpu runs
// side by side in one launch: attention's q, k and v split into heads were
// three launches. A kernel joins an earlier one when every reader of the
// earlier one's results stands after it; it may read them itself (the
// kernel then gives both results). On the CPU nothing changes.
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=strict devices=cpu,cuda:0},locus-insert-transfers,locus-fuse-kernels))' | FileCheck %s

// The three head splits are one kernel of three results, where the last
// stood; the products read them from it.
// CHECK-LABEL: locus.graph @heads_gpu
// CHECK-SAME: locus.kernels = 3
// (k's two transposes fold into one.)
// CHECK: %[[H:.*]]:3 = locus.kernel on <cuda:0> -> tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> {
// CHECK-NEXT: locus.transpose %q
// CHECK-NEXT: locus.transpose %v
// CHECK-NEXT: locus.transpose %k [0, 2, 3, 1]
// CHECK-NEXT: locus.yield
// CHECK: %[[S:.*]] = locus.kernel on <cuda:0>
// CHECK-NEXT: locus.matmul %[[H]]#0, %[[H]]#2
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.matmul %[[S]], %[[H]]#1
locus.graph @heads_gpu {
  %q = locus.input "q" : tensor<2x8x4x4xf32> on <cuda:0>
  %k = locus.input "k" : tensor<2x8x4x4xf32> on <cuda:0>
  %v = locus.input "v" : tensor<2x8x4x4xf32> on <cuda:0>
  %qh = locus.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kh = locus.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vh = locus.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = locus.transpose %kh [0, 1, 3, 2] : tensor<2x4x8x4xf32> -> tensor<2x4x4x8xf32>
  %s = locus.matmul %qh, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %o = locus.matmul %s, %vh : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  locus.output "o" = %o : tensor<2x4x8x4xf32>
}

// The same on the CPU: a kernel per head split.
// CHECK-LABEL: locus.graph @heads_cpu
// CHECK-SAME: locus.kernels = 5
locus.graph @heads_cpu {
  %q = locus.input "q" : tensor<2x8x4x4xf32>
  %k = locus.input "k" : tensor<2x8x4x4xf32>
  %v = locus.input "v" : tensor<2x8x4x4xf32>
  %qh = locus.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kh = locus.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vh = locus.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = locus.transpose %kh [0, 1, 3, 2] : tensor<2x4x8x4xf32> -> tensor<2x4x4x8xf32>
  %s = locus.matmul %qh, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %o = locus.matmul %s, %vh : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  locus.output "o" = %o : tensor<2x4x8x4xf32>
}

// A layer norm's normalized input, which its affine output reads and the
// graph gives too: one kernel of both results, the affine one reading the
// normalized one inside it.
// CHECK-LABEL: locus.graph @reads_the_other
// CHECK-SAME: locus.kernels = 1
// CHECK: %[[K:.*]]:2 = locus.kernel on <cuda:0> -> tensor<8x16xf32>, tensor<8x16xf32> {
// CHECK: %[[N:.*]] = locus.mul
// CHECK: locus.mul %[[N]]
// CHECK: locus.add
// CHECK: locus.yield %[[N]], %{{.*}} : tensor<8x16xf32>, tensor<8x16xf32>
// CHECK: locus.output "n" = %[[K]]#0
// CHECK: locus.output "y" = %[[K]]#1
locus.graph @reads_the_other {
  %x = locus.input "x" : tensor<8x16xf32> on <cuda:0>
  %r = locus.input "r" : tensor<8x16xf32> on <cuda:0>
  %w = locus.input "w" : tensor<8x16xf32> on <cuda:0>
  %b = locus.input "b" : tensor<8x16xf32> on <cuda:0>
  %n = locus.mul %x, %r : tensor<8x16xf32>
  %nw = locus.mul %n, %w : tensor<8x16xf32>
  %y = locus.add %nw, %b : tensor<8x16xf32>
  locus.output "n" = %n : tensor<8x16xf32>
  locus.output "y" = %y : tensor<8x16xf32>
}

// Not joined: the first split, which a product reads before the second
// stands. Joined: the second split with the exp, the sum with them (it
// reads the exp's result in the kernel, which still gives it), and the
// two scalings, which read the sum there too: every path between them
// runs inside the kernel.
// CHECK-LABEL: locus.graph @read_between
// CHECK-SAME: locus.kernels = 3
// CHECK: locus.kernel on <cuda:0> -> tensor<2x4x8x4xf32> {
// CHECK-NEXT: locus.transpose %q
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.matmul
// CHECK: locus.kernel on <cuda:0> -> tensor<2x4x8x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> {
// CHECK-NEXT: locus.transpose %k
// CHECK-NEXT: %[[E:.*]] = locus.exp %x
// CHECK-NEXT: %[[S:.*]] = locus.sum %[[E]]
// CHECK-NEXT: locus.broadcast %[[S]]
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.broadcast %[[S]]
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.yield
locus.graph @read_between {
  %q = locus.input "q" : tensor<2x8x4x4xf32> on <cuda:0>
  %k = locus.input "k" : tensor<2x8x4x4xf32> on <cuda:0>
  %w = locus.input "w" : tensor<2x4x4x8xf32> on <cuda:0>
  %x = locus.input "x" : tensor<2x8x4x4xf32> on <cuda:0>
  %qh = locus.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %s = locus.matmul %qh, %w : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %kh = locus.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %e = locus.exp %x : tensor<2x8x4x4xf32>
  %sum = locus.sum %e axes [0, 1, 2, 3] : tensor<2x8x4x4xf32> -> tensor<f32>
  %b1 = locus.broadcast %sum [2, 8, 4, 4] : tensor<f32> -> tensor<2x8x4x4xf32>
  %d1 = locus.mul %q, %b1 : tensor<2x8x4x4xf32>
  %b2 = locus.broadcast %sum [2, 8, 4, 4] : tensor<f32> -> tensor<2x8x4x4xf32>
  %d2 = locus.mul %k, %b2 : tensor<2x8x4x4xf32>
  locus.output "s" = %s : tensor<2x4x8x8xf32>
  locus.output "kh" = %kh : tensor<2x4x8x4xf32>
  locus.output "e" = %e : tensor<2x8x4x4xf32>
  locus.output "d1" = %d1 : tensor<2x8x4x4xf32>
  locus.output "d2" = %d2 : tensor<2x8x4x4xf32>
}

// Self-attention's packed q, k and v: three slices of one tensor, each
// read through a reshape that joins its reader's kernel. A reader stands
// where its kernel will, so the slices are one kernel; the add of q and k
// joins it too (it reads their results), and the two slices that only the
// add reads are no results of the kernel.
// CHECK-LABEL: locus.graph @unbind_gpu
// CHECK-SAME: locus.kernels = 3
// CHECK: %[[S:.*]]:2 = locus.kernel on <cuda:0> -> tensor<1x4x8xf32>, tensor<4x8xf32> {
// CHECK-NEXT: %[[Q:.*]] = locus.slice %x offsets [0, 0, 0]
// CHECK-NEXT: %[[Q2:.*]] = locus.reshape %[[Q]]
// CHECK-NEXT: %[[K:.*]] = locus.slice %x offsets [1, 0, 0]
// CHECK-NEXT: %[[K2:.*]] = locus.reshape %[[K]]
// CHECK-NEXT: %[[V:.*]] = locus.slice %x offsets [2, 0, 0]
// CHECK-NEXT: %[[QK:.*]] = locus.add %[[Q2]], %[[K2]]
// CHECK-NEXT: locus.yield %[[V]], %[[QK]]
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.matmul %[[S]]#1
// CHECK: locus.kernel on <cuda:0>
// CHECK-NEXT: locus.reshape %[[S]]#0
locus.graph @unbind_gpu {
  %x = locus.input "x" : tensor<3x4x8xf32> on <cuda:0>
  %w = locus.input "w" : tensor<8x4xf32> on <cuda:0>
  %q0 = locus.slice %x offsets [0, 0, 0] sizes [1, 4, 8] strides [1, 1, 1] : tensor<3x4x8xf32> -> tensor<1x4x8xf32>
  %q = locus.reshape %q0 [4, 8] : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %k0 = locus.slice %x offsets [1, 0, 0] sizes [1, 4, 8] strides [1, 1, 1] : tensor<3x4x8xf32> -> tensor<1x4x8xf32>
  %k = locus.reshape %k0 [4, 8] : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %v0 = locus.slice %x offsets [2, 0, 0] sizes [1, 4, 8] strides [1, 1, 1] : tensor<3x4x8xf32> -> tensor<1x4x8xf32>
  %v = locus.reshape %v0 [4, 8] : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %qk = locus.add %q, %k : tensor<4x8xf32>
  %s = locus.matmul %qk, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %o = locus.matmul %v, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  locus.output "s" = %s : tensor<4x4xf32>
  locus.output "o" = %o : tensor<4x4xf32>
}

// Not joined: a kernel whose result a locus.assign writes into a state.
// The plan may write that update into the state's own buffer when its
// kernel reads the state only elementwise, so another op of the same
// kernel reading the state (the doubled s) would read the update.
// CHECK-LABEL: locus.graph @state_update
// CHECK-SAME: locus.kernels = 2
locus.graph @state_update {
  %x = locus.input "x" : tensor<64xf32> on <cuda:0>
  %s = locus.state "s" buffer : tensor<64xf32> init <full(1.0)> on <cuda:0>
  %c = locus.constant dense<0.9> : tensor<64xf32> on <cuda:0>
  %t = locus.mul %s, %c : tensor<64xf32>
  %s2 = locus.add %t, %x : tensor<64xf32>
  %y = locus.add %s, %s : tensor<64xf32>
  locus.output "y" = %y : tensor<64xf32>
  locus.assign %s = %s2 : tensor<64xf32>, tensor<64xf32>
}

// An output of a kernel's result that stands before the sibling joining
// it (an index check's count, an output right after its kernel) moves
// after the joined kernel; outputs keep their order, so none moves past
// another output.
// CHECK-LABEL: locus.graph @outputs_move
// CHECK-SAME: locus.kernels = 1
// CHECK: %[[K:.*]]:2 = locus.kernel on <cuda:0> -> tensor<f32>, tensor<f32> {
// CHECK-NEXT: locus.sum %a
// CHECK-NEXT: locus.sum %b
// CHECK: locus.output "c0" = %[[K]]#0
// CHECK-NEXT: locus.output "c1" = %[[K]]#1
locus.graph @outputs_move {
  %a = locus.input "a" : tensor<64xf32> on <cuda:0>
  %b = locus.input "b" : tensor<16xf32> on <cuda:0>
  %s0 = locus.sum %a axes [0] : tensor<64xf32> -> tensor<f32>
  locus.output "c0" = %s0 : tensor<f32>
  %s1 = locus.sum %b axes [0] : tensor<16xf32> -> tensor<f32>
  locus.output "c1" = %s1 : tensor<f32>
}

// CHECK-LABEL: locus.graph @output_between
// CHECK-SAME: locus.kernels = 2
// CHECK: locus.output "c0"
// CHECK-NEXT: locus.output "x"
// CHECK: locus.output "c1"
locus.graph @output_between {
  %a = locus.input "a" : tensor<64xf32> on <cuda:0>
  %b = locus.input "b" : tensor<16xf32> on <cuda:0>
  %x = locus.input "x" : tensor<4xf32> on <cuda:0>
  %s0 = locus.sum %a axes [0] : tensor<64xf32> -> tensor<f32>
  locus.output "c0" = %s0 : tensor<f32>
  locus.output "x" = %x : tensor<4xf32>
  %s1 = locus.sum %b axes [0] : tensor<16xf32> -> tensor<f32>
  locus.output "c1" = %s1 : tensor<f32>
}

// A reduction of more than 65536 elements joins no sibling: its strategy
// may split it over launches, and the kernel it joined would only stand
// later. A small one does (and the exp joins past the large one).
// CHECK-LABEL: locus.graph @large_reduction
// CHECK-SAME: locus.kernels = 2
// CHECK: locus.kernel on <cuda:0> -> tensor<256xf32> {
// CHECK-NEXT: locus.sum %big
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cuda:0> -> tensor<16xf32>, tensor<16xf32>, tensor<64xf32> {
// CHECK-NEXT: locus.exp %a
// CHECK-NEXT: locus.tanh %a
// CHECK-NEXT: locus.sum %small
locus.graph @large_reduction {
  %a = locus.input "a" : tensor<16xf32> on <cuda:0>
  %big = locus.input "big" : tensor<512x256xf32> on <cuda:0>
  %small = locus.input "small" : tensor<8x64xf32> on <cuda:0>
  %e = locus.exp %a : tensor<16xf32>
  %s = locus.sum %big axes [0] : tensor<512x256xf32> -> tensor<256xf32>
  %t = locus.tanh %a : tensor<16xf32>
  %u = locus.sum %small axes [0] : tensor<8x64xf32> -> tensor<64xf32>
  locus.output "e" = %e : tensor<16xf32>
  locus.output "s" = %s : tensor<256xf32>
  locus.output "t" = %t : tensor<16xf32>
  locus.output "u" = %u : tensor<64xf32>
}

// A kernel whose result updates a state (an Adam step counter's `+ 1`)
// joins a sibling that does not read that state: the plan may still
// write the update into the state's buffer, which only its own loop
// reads. Not one that reads the state.
// CHECK-LABEL: locus.graph @state_updates
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[K:.*]]:2 = locus.kernel on <cuda:0> -> tensor<f32>, tensor<16xf32> {
// CHECK-NEXT: locus.add %step
// CHECK-NEXT: locus.exp %a
// CHECK-NEXT: locus.yield
// CHECK-NEXT: }
// CHECK-NEXT: locus.assign %step = %[[K]]#0
// CHECK: locus.kernel on <cuda:0> -> tensor<f32> {
// CHECK-NEXT: locus.mul %step, %step
locus.graph @state_updates {
  %a = locus.input "a" : tensor<16xf32> on <cuda:0>
  %step = locus.state "step" buffer : tensor<f32> init <full(0.0)> on <cuda:0>
  %n = locus.add %step, %step : tensor<f32>
  locus.assign %step = %n : tensor<f32>, tensor<f32>
  %e = locus.exp %a : tensor<16xf32>
  %m = locus.mul %step, %step : tensor<f32>
  locus.output "e" = %e : tensor<16xf32>
  locus.output "m" = %m : tensor<f32>
}
