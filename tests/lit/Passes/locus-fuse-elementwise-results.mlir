// A producer that the kernel returns and one reader reads: with
// results-into-readers (the CUDA lowering) the reader recomputes it, so
// the two loop nests read only the kernel's inputs and do not depend on
// each other (--locus-map-to-gpu runs them side by side in one launch);
// chains fuse whole first, so no op of the producer's chain is left with
// two readers. Without it (the host) the reader reads the returned value.
// RUN: locus-opt %s --pass-pipeline='builtin.module(locus-lower-to-linalg,locus-fuse-elementwise{results-into-readers=true})' | FileCheck %s --check-prefix=GPU
// RUN: locus-opt %s --locus-lower-to-linalg --locus-fuse-elementwise | FileCheck %s --check-prefix=HOST

// GPU-LABEL: func.func @normalized_and_affine
// GPU: %[[N:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(
// GPU: arith.subf
// GPU: arith.mulf
// GPU: %[[Y:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3 : {{.*}}) outs(
// GPU: arith.subf
// GPU: arith.mulf
// GPU: arith.mulf
// GPU: arith.addf
// GPU-NOT: linalg.generic
// GPU: return %[[N]], %[[Y]]
// HOST-LABEL: func.func @normalized_and_affine
// HOST: %[[N:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(
// HOST: linalg.generic {{.*}} ins(%[[N]], %arg2, %arg3 : {{.*}}) outs(
func.func @normalized_and_affine(%x: tensor<8x16xf32>, %r: tensor<8x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %c = locus.sub %x, %r : tensor<8x16xf32>
  %n = locus.mul %c, %r : tensor<8x16xf32>
  %nw = locus.mul %n, %w : tensor<8x16xf32>
  %y = locus.add %nw, %b : tensor<8x16xf32>
  return %n, %y : tensor<8x16xf32>, tensor<8x16xf32>
}

// Not fused: a producer read by two ops besides the return, and a
// reduction reading a returned value.
// GPU-LABEL: func.func @other_readers
// GPU: %[[E:.*]] = linalg.generic {{.*}} ins(%arg0 : {{.*}})
// GPU: math.exp
// GPU: linalg.generic {{.*}} ins(%[[E]] : {{.*}})
// GPU: arith.mulf
// GPU: linalg.generic {{.*}}"reduction"{{.*}} ins(%[[E]] : {{.*}})
func.func @other_readers(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) {
  %e = locus.exp %x : tensor<8x16xf32>
  %s = locus.mul %e, %e : tensor<8x16xf32>
  %r = locus.sum %e axes [1] : tensor<8x16xf32> -> tensor<8xf32>
  return %e, %s, %r : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>
}
