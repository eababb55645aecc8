// Kernels: elementwise chains and trees, and an elementwise epilogue after
// one anchor, fuse into one kernel per device; everything else is a kernel
// of its own.
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels))' | FileCheck %s
// RUN: locus-opt %s -split-input-file --pass-pipeline='builtin.module(locus.graph(locus-place-devices{policy=cpu},locus-insert-transfers,locus-fuse-kernels{fuse=false}))' | FileCheck %s --check-prefix=UNFUSED

// MLP 8-16-16-4: each linear with its relu is one kernel.
// CHECK-LABEL: locus.graph @mlp
// CHECK-SAME: locus.kernels = 3
// CHECK-COUNT-3: locus.kernel on <cpu>
// CHECK-NOT: locus.kernel
// UNFUSED-LABEL: locus.graph @mlp
// UNFUSED-SAME: locus.kernels = 5
locus.graph @mlp {
  %x = locus.input "x" : tensor<2x8xf32>
  %w1 = locus.state "w1" parameter : tensor<16x8xf32> init <uniform(-0.3, 0.3), seed = 1>
  %w2 = locus.state "w2" parameter : tensor<16x16xf32> init <uniform(-0.3, 0.3), seed = 2>
  %w3 = locus.state "w3" parameter : tensor<4x16xf32> init <uniform(-0.3, 0.3), seed = 3>
  %0 = locus.linear %x, %w1 : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %1 = locus.relu %0 : tensor<2x16xf32>
  %2 = locus.linear %1, %w2 : tensor<2x16xf32>, tensor<16x16xf32> -> tensor<2x16xf32>
  %3 = locus.relu %2 : tensor<2x16xf32>
  %4 = locus.linear %3, %w3 : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
  locus.output "y" = %4 : tensor<2x4xf32>
}

// -----

// A value read twice ends its kernel (it must go to memory); the two readers
// and their sum form a tree. The anchor (sum) starts another kernel, which
// takes the tree in as its prologue, since the sum alone reads it.
// CHECK-LABEL: locus.graph @tree
// CHECK-SAME: locus.kernels = 2
// CHECK: %[[A:.*]] = locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.add
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4xf32> {
// CHECK-NEXT: locus.exp %[[A]]
// CHECK-NEXT: locus.neg %[[A]]
// CHECK-NEXT: %[[B:.*]] = locus.sub
// CHECK-NEXT: locus.sum %[[B]]
// CHECK-NEXT: locus.yield
// UNFUSED-LABEL: locus.graph @tree
// UNFUSED-SAME: locus.kernels = 6
locus.graph @tree {
  %x = locus.input "x" : tensor<4x8xf32>
  %c = locus.constant dense<2.0> : tensor<4x8xf32>
  %0 = locus.mul %x, %c : tensor<4x8xf32>
  %1 = locus.add %0, %x : tensor<4x8xf32>
  %2 = locus.exp %1 : tensor<4x8xf32>
  %3 = locus.neg %1 : tensor<4x8xf32>
  %4 = locus.sub %2, %3 : tensor<4x8xf32>
  %5 = locus.sum %4 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  locus.output "y" = %5 : tensor<4xf32>
}

// -----

// A kernel holds one anchor at most: the add joins the first product only.
// An elementwise op after a reduction is its epilogue.
// CHECK-LABEL: locus.graph @anchors
// CHECK-SAME: locus.kernels = 3
// CHECK: locus.kernel on <cpu> -> tensor<4x4xf32> {
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4x4xf32> {
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.add
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4xf32> {
// CHECK-NEXT: locus.max
// CHECK-NEXT: locus.sqrt
// CHECK-NEXT: locus.yield
locus.graph @anchors {
  %a = locus.input "a" : tensor<4x4xf32>
  %b = locus.input "b" : tensor<4x4xf32>
  %0 = locus.matmul %a, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = locus.matmul %b, %a : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %2 = locus.add %1, %0 : tensor<4x4xf32>
  %3 = locus.max %2 axes [1] : tensor<4x4xf32> -> tensor<4xf32>
  %4 = locus.sqrt %3 : tensor<4xf32>
  locus.output "y" = %4 : tensor<4xf32>
}

// -----

// A matrix transpose read only by a product joins the product's kernel (the
// lowering then reads it transposed, with no copy); one read elsewhere too
// is copied into the product's kernel and stays a kernel of its own for
// the other reader.
// CHECK-LABEL: locus.graph @transposed_operand
// CHECK-SAME: locus.kernels = 3
// CHECK: locus.kernel on <cpu>
// CHECK-NEXT: locus.transpose
// CHECK-NEXT: locus.matmul
// CHECK: %[[XT:.*]] = locus.kernel on <cpu>
// CHECK-NEXT: locus.transpose %x
// CHECK-NEXT: locus.yield
// CHECK: %[[P:.*]] = locus.kernel on <cpu>
// CHECK-NEXT: locus.transpose %x
// CHECK-NEXT: locus.matmul
// CHECK: locus.output "p" = %[[P]]
// CHECK: locus.output "xt" = %[[XT]]
locus.graph @transposed_operand {
  %g = locus.input "g" : tensor<8x4xf32>
  %x = locus.input "x" : tensor<8x6xf32>
  %gt = locus.transpose %g [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  %dw = locus.matmul %gt, %x : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  locus.output "dw" = %dw : tensor<4x6xf32>
  %xt = locus.transpose %x [1, 0] : tensor<8x6xf32> -> tensor<6x8xf32>
  %p = locus.matmul %xt, %g : tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x4xf32>
  locus.output "p" = %p : tensor<6x4xf32>
  locus.output "xt" = %xt : tensor<6x8xf32>
}

// -----

// A pooling joins the convolution it pools, with the epilogue between them;
// one whose input is read elsewhere too (a training step's ReLU, which the
// pooling's gradient reads) stays a kernel of its own, and a second pooling
// never joins.
// CHECK-LABEL: locus.graph @pooled_conv
// CHECK-SAME: locus.kernels = 4
// CHECK: locus.kernel on <cpu> -> tensor<1x4x4x4xf32> {
// CHECK-NEXT: locus.conv2d
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.max_pool2d
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<1x4x2x2xf32> {
// CHECK-NEXT: locus.avg_pool2d
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<1x4x8x8xf32> {
// CHECK-NEXT: locus.conv2d
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<1x4x4x4xf32> {
// CHECK-NEXT: locus.max_pool2d
// CHECK-NEXT: locus.yield
// UNFUSED-LABEL: locus.graph @pooled_conv
// UNFUSED-SAME: locus.kernels = 7
locus.graph @pooled_conv {
  %x = locus.input "x" : tensor<1x2x8x8xf32>
  %w = locus.input "w" : tensor<4x2x3x3xf32>
  %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = locus.relu %0 : tensor<1x4x8x8xf32>
  %2 = locus.max_pool2d %1 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %3 = locus.avg_pool2d %2 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<1x4x4x4xf32> -> tensor<1x4x2x2xf32>
  locus.output "y" = %3 : tensor<1x4x2x2xf32>
  %4 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x8x8xf32>
  %5 = locus.relu %4 : tensor<1x4x8x8xf32>
  %6 = locus.max_pool2d %5 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  locus.output "p" = %6 : tensor<1x4x4x4xf32>
  locus.output "r" = %5 : tensor<1x4x8x8xf32>
}

// -----

// A flatten is a view inside the kernel of what reads it: the linear takes
// it in (as would an elementwise op), and it never joins the pooling that
// produced it. A reshape read twice is copied into each reader's kernel
// (no kernel of its own copies it).
// CHECK-LABEL: locus.graph @flatten
// CHECK-SAME: locus.kernels = 4
// CHECK: locus.kernel on <cpu> -> tensor<2x2x2x2xf32> {
// CHECK-NEXT: locus.max_pool2d
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x3xf32> {
// CHECK-NEXT: locus.reshape
// CHECK-NEXT: locus.linear
// CHECK-NEXT: locus.relu
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x8xf32> {
// CHECK-NEXT: locus.reshape
// CHECK-NEXT: locus.exp
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x8xf32> {
// CHECK-NEXT: locus.reshape
// CHECK-NEXT: locus.neg
// CHECK-NEXT: locus.yield
// UNFUSED-LABEL: locus.graph @flatten
// UNFUSED-SAME: locus.kernels = 7
locus.graph @flatten {
  %x = locus.input "x" : tensor<2x2x4x4xf32>
  %w = locus.input "w" : tensor<3x8xf32>
  %b = locus.input "b" : tensor<3xf32>
  %0 = locus.max_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x2x4x4xf32> -> tensor<2x2x2x2xf32>
  %1 = locus.reshape %0 [2, 8] : tensor<2x2x2x2xf32> -> tensor<2x8xf32>
  %2 = locus.linear %1, %w, %b : tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %3 = locus.relu %2 : tensor<2x3xf32>
  locus.output "y" = %3 : tensor<2x3xf32>
  %4 = locus.reshape %0 [2, 8] : tensor<2x2x2x2xf32> -> tensor<2x8xf32>
  %5 = locus.exp %4 : tensor<2x8xf32>
  %6 = locus.neg %4 : tensor<2x8xf32>
  locus.output "e" = %5 : tensor<2x8xf32>
  locus.output "n" = %6 : tensor<2x8xf32>
}

// -----

// A broadcast several elementwise ops read (a layer norm's statistic, read
// by its forward and its backward) is copied into each reader's kernel, an
// index map there, instead of a kernel of its own that materialises it. A
// product that reads it shares the original, which stays a kernel.
// CHECK-LABEL: locus.graph @broadcast_twice
// CHECK-SAME: locus.kernels = 4
// CHECK: %[[B:.*]] = locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.broadcast %s [4, 8]
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.broadcast %s [4, 8]
// CHECK-NEXT: locus.mul
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.broadcast %s [4, 8]
// CHECK-NEXT: locus.sub
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<8x8xf32> {
// CHECK-NEXT: locus.transpose %[[B]] [1, 0]
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.yield
// UNFUSED-LABEL: locus.graph @broadcast_twice
// UNFUSED-SAME: locus.kernels = 5
locus.graph @broadcast_twice {
  %x = locus.input "x" : tensor<4x8xf32>
  %s = locus.input "s" : tensor<4x1xf32>
  %w = locus.input "w" : tensor<4x8xf32>
  %b = locus.broadcast %s [4, 8] : tensor<4x1xf32> -> tensor<4x8xf32>
  %0 = locus.mul %x, %b : tensor<4x8xf32>
  %1 = locus.sub %x, %b : tensor<4x8xf32>
  %t = locus.transpose %b [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %2 = locus.matmul %t, %w : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  locus.output "m" = %0 : tensor<4x8xf32>
  locus.output "d" = %1 : tensor<4x8xf32>
  locus.output "p" = %2 : tensor<8x8xf32>
}

// -----

// Attention's q k^T: a transpose of the last two axes of a batch of
// matrices joins the batched product that reads it, also through
// reshapes (views too), and a copy of it joins each such product; a
// transpose of a transpose is the composed one (here none: the backward
// pass's (k^T)^T is k again), and a chain of reshapes read twice is copied
// whole into the reader that can take it in; an output keeps the original.
// CHECK-LABEL: locus.graph @attention_views
// CHECK-SAME: locus.kernels = 5
// CHECK: locus.kernel on <cpu> -> tensor<2x4x4xf32> {
// CHECK-NEXT: locus.transpose %k [0, 2, 1]
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x4x4xf32> {
// CHECK-NEXT: locus.transpose %k [0, 2, 1]
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<2x4x4xf32> {
// CHECK-NEXT: locus.matmul %s, %k
// CHECK-NEXT: locus.yield
// CHECK: %[[R:.*]] = locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.reshape %q [8, 4]
// CHECK-NEXT: locus.reshape {{.*}} [4, 8]
// CHECK-NEXT: locus.yield
// CHECK: %[[E:.*]] = locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.reshape %q [8, 4]
// CHECK-NEXT: locus.reshape {{.*}} [4, 8]
// CHECK-NEXT: locus.exp
// CHECK-NEXT: locus.yield
// CHECK-NOT: locus.kernel
// CHECK: locus.output "e2" = %[[E]] {
// CHECK: locus.output "r" = %[[R]] {
// UNFUSED-LABEL: locus.graph @attention_views
// UNFUSED-SAME: locus.kernels = 8
locus.graph @attention_views {
  %q = locus.input "q" : tensor<2x4x4xf32>
  %k = locus.input "k" : tensor<2x4x4xf32>
  %s = locus.input "s" : tensor<2x4x4xf32>
  %kt = locus.transpose %k [0, 2, 1] : tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %a = locus.matmul %q, %kt : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %b = locus.matmul %s, %kt : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %ktt = locus.transpose %kt [0, 2, 1] : tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %c = locus.matmul %s, %ktt : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %r1 = locus.reshape %q [8, 4] : tensor<2x4x4xf32> -> tensor<8x4xf32>
  %r2 = locus.reshape %r1 [4, 8] : tensor<8x4xf32> -> tensor<4x8xf32>
  %e = locus.exp %r2 : tensor<4x8xf32>
  locus.output "a" = %a : tensor<2x4x4xf32>
  locus.output "b" = %b : tensor<2x4x4xf32>
  locus.output "c" = %c : tensor<2x4x4xf32>
  locus.output "e2" = %e : tensor<4x8xf32>
  locus.output "r" = %r2 : tensor<4x8xf32>
}

// -----

// A packed weight's row blocks (attention's q of in_proj_weight): the
// linear layer and the backward pass's product each take in their own
// copy of the slice, which sgemm reads where it lies (its rows stay
// contiguous), and the bias slice joins the linear. A slice whose rows
// are not contiguous (stride 2 in the last axis) stays a kernel of its own.
// CHECK-LABEL: locus.graph @packed
// CHECK-SAME: locus.kernels = 4
// CHECK: locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.slice %b offsets [0] sizes [8]
// CHECK-NEXT: locus.slice %w offsets [0, 0] sizes [8, 8]
// CHECK-NEXT: locus.linear
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<4x8xf32> {
// CHECK-NEXT: locus.slice %w offsets [0, 0] sizes [8, 8]
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<8x4xf32> {
// CHECK-NEXT: locus.slice %w offsets [8, 0] sizes [8, 4] strides [1, 2]
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<8x4xf32> {
// CHECK-NEXT: locus.matmul
// CHECK-NEXT: locus.yield
locus.graph @packed {
  %x = locus.input "x" : tensor<4x8xf32>
  %g = locus.input "g" : tensor<4x8xf32>
  %w = locus.input "w" : tensor<24x8xf32>
  %b = locus.input "b" : tensor<24xf32>
  %m = locus.input "m" : tensor<4x4xf32>
  %wq = locus.slice %w offsets [0, 0] sizes [8, 8] strides [1, 1] : tensor<24x8xf32> -> tensor<8x8xf32>
  %bq = locus.slice %b offsets [0] sizes [8] strides [1] : tensor<24xf32> -> tensor<8xf32>
  %q = locus.linear %x, %wq, %bq : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %dx = locus.matmul %g, %wq : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %ws = locus.slice %w offsets [8, 0] sizes [8, 4] strides [1, 2] : tensor<24x8xf32> -> tensor<8x4xf32>
  %p = locus.matmul %ws, %m : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  locus.output "q" = %q : tensor<4x8xf32>
  locus.output "dx" = %dx : tensor<4x8xf32>
  locus.output "p" = %p : tensor<8x4xf32>
}

// -----

// An elementwise kernel joins the reduction kernel that alone reads it
// (GradScaler's inf check, sum(g * 0), where the update reads g too), on
// the CPU and on a GPU; not when another op reads it too (it must go to
// memory anyway), nor when a product reads it (a library call takes no
// prologue), nor when reductions of two kernels read it. (The sub, read
// by an output alone, is a kernel of its own as before.)
// CHECK-LABEL: locus.graph @prologues
// CHECK-SAME: locus.kernels = 9
// CHECK: %[[G:.*]] = locus.kernel on <cpu> -> tensor<16x8xf32> {
// CHECK-NEXT: locus.matmul
// CHECK: locus.kernel on <cpu> -> tensor<f32> {
// CHECK-NEXT: locus.mul %[[G]]
// CHECK-NEXT: locus.sum
// CHECK-NEXT: locus.yield
// CHECK: %[[T:.*]] = locus.kernel on <cpu> -> tensor<16x8xf32> {
// CHECK-NEXT: locus.exp %[[G]]
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<16xf32> {
// CHECK-NEXT: locus.max %[[T]]
// CHECK: locus.kernel on <cpu> -> tensor<8xf32> {
// CHECK-NEXT: locus.sum %[[T]]
// CHECK: %[[N:.*]] = locus.kernel on <cpu> -> tensor<16x8xf32> {
// CHECK-NEXT: locus.neg %[[G]]
// CHECK-NEXT: locus.yield
// CHECK: locus.kernel on <cpu> -> tensor<8x8xf32> {
// CHECK-NEXT: locus.transpose
// CHECK-NEXT: locus.matmul
// CHECK: locus.kernel on <cpu> -> tensor<8xf32> {
// CHECK-NEXT: locus.sum %[[N]]
// CHECK: locus.kernel on <cpu> -> tensor<16x8xf32> {
// CHECK-NEXT: locus.sub %[[G]]
// CHECK: locus.output "shared" = %[[N]]
// UNFUSED-LABEL: locus.graph @prologues
locus.graph @prologues {
  %x = locus.input "x" : tensor<16x4xf32>
  %w = locus.state "w" parameter : tensor<4x8xf32> init <uniform(-0.3, 0.3), seed = 1>
  %g = locus.matmul %x, %w : tensor<16x4xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
  %zero = locus.constant dense<0.0> : tensor<16x8xf32>
  %z = locus.mul %g, %zero : tensor<16x8xf32>
  %found = locus.sum %z axes [0, 1] : tensor<16x8xf32> -> tensor<f32>
  %e = locus.exp %g : tensor<16x8xf32>
  %rows = locus.max %e axes [1] : tensor<16x8xf32> -> tensor<16xf32>
  %cols = locus.sum %e axes [0] : tensor<16x8xf32> -> tensor<8xf32>
  %n = locus.neg %g : tensor<16x8xf32>
  %nt = locus.transpose %n [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %p = locus.matmul %nt, %g : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %ns = locus.sum %n axes [0] : tensor<16x8xf32> -> tensor<8xf32>
  %u = locus.sub %g, %g : tensor<16x8xf32>
  locus.output "found" = %found : tensor<f32>
  locus.output "rows" = %rows : tensor<16xf32>
  locus.output "cols" = %cols : tensor<8xf32>
  locus.output "p" = %p : tensor<8x8xf32>
  locus.output "shared" = %n : tensor<16x8xf32>
  locus.output "ns" = %ns : tensor<8xf32>
  locus.output "u" = %u : tensor<16x8xf32>
}
