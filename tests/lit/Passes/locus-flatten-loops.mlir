// Host generics lose their unit dimensions and merge each run of adjacent
// loops that every operand indexes in order and contiguously; loops whose
// index the body reads, dynamic ones, strided windows and transposes stay.
// RUN: locus-opt %s --split-input-file --locus-flatten-loops | FileCheck %s

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A cast over a small image: one loop over all 37632 elements.
// CHECK-LABEL: func.func @round(
// CHECK-SAME: %[[X:.*]]: memref<64x3x14x14xf32>, %[[Y:.*]]: memref<64x3x14x14xbf16>
// CHECK-DAG: %[[CX:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1, 2, 3]] : memref<64x3x14x14xf32> into memref<37632xf32>
// CHECK-DAG: %[[CY:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1, 2, 3]] : memref<64x3x14x14xbf16> into memref<37632xbf16>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%[[CX]] : memref<37632xf32>) outs(%[[CY]] : memref<37632xbf16>)
// CHECK: arith.truncf
func.func @round(%x: memref<64x3x14x14xf32>, %y: memref<64x3x14x14xbf16>) {
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<64x3x14x14xf32>) outs(%y : memref<64x3x14x14xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan4 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>

// A per-channel operand indexed (0, d1, 0, 0): its unit dimensions go, so
// H and W merge; N and C stay apart (the channel operand reads C alone).
// CHECK-DAG: #[[MAP3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[MAPC:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @bias(
// CHECK-SAME: %[[X:.*]]: memref<8x4x6x5xf32>, %[[B:.*]]: memref<1x4x1x1xf32>, %[[Y:.*]]: memref<8x4x6x5xf32>
// CHECK-DAG: %[[CB:.*]] = memref.collapse_shape %[[B]] {{\[}}[0, 1, 2, 3]] : memref<1x4x1x1xf32> into memref<4xf32>
// CHECK-DAG: %[[CX:.*]] = memref.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : memref<8x4x6x5xf32> into memref<8x4x30xf32>
// CHECK-DAG: %[[CY:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0], [1], [2, 3]] : memref<8x4x6x5xf32> into memref<8x4x30xf32>
// CHECK: linalg.generic {indexing_maps = [#[[MAP3]], #[[MAPC]], #[[MAP3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[CX]], %[[CB]] : memref<8x4x30xf32>, memref<4xf32>) outs(%[[CY]] : memref<8x4x30xf32>)
func.func @bias(%x: memref<8x4x6x5xf32>, %b: memref<1x4x1x1xf32>, %y: memref<8x4x6x5xf32>) {
  linalg.generic {indexing_maps = [#id4, #chan4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<8x4x6x5xf32>, memref<1x4x1x1xf32>) outs(%y : memref<8x4x6x5xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %t = arith.addf %in, %c : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>

// BatchNorm's statistics: H and W (both reducing) merge; N, which reduces
// too, is not next to them.
// CHECK-LABEL: func.func @stats(
// CHECK: %[[CX:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : memref<8x4x6x5xf32> into memref<8x4x30xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[CX]] : memref<8x4x30xf32>) outs(%{{.*}} : memref<4xf32>)
func.func @stats(%x: memref<8x4x6x5xf32>, %acc: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id4, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<8x4x6x5xf32>) outs(%acc : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %in, %out : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A dynamic batch stays a loop of its own; the static loops after it merge.
// CHECK-LABEL: func.func @dynamic(
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : memref<?x4x6x5xf32> into memref<?x120xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : memref<?x120xf32>) outs(%{{.*}} : memref<?x120xf32>)
func.func @dynamic(%x: memref<?x4x6x5xf32>, %y: memref<?x4x6x5xf32>) {
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<?x4x6x5xf32>) outs(%y : memref<?x4x6x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.negf %in : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>

// Left as they are: a transpose (no operand walks both loops in order), a
// strided window (its rows are not contiguous), and a loop whose index the
// body reads.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: memref.collapse_shape
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : memref<6x5xf32>) outs(%{{.*}} : memref<5x6xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : memref<6x5xf32, strided<[10, 1]>>) outs(%{{.*}} : memref<6x5xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : memref<6x5xf32>)
// CHECK: linalg.index 1
// CHECK-NOT: memref.collapse_shape
func.func @kept(%x: memref<6x5xf32>, %t: memref<5x6xf32>,
                %w: memref<6x5xf32, strided<[10, 1]>>, %y: memref<6x5xf32>) {
  linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<6x5xf32>) outs(%t : memref<5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<6x5xf32, strided<[10, 1]>>) outs(%y : memref<6x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%y : memref<6x5xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    linalg.yield %f : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d0, d1)>

// A row sum of a 3-d tensor: the two parallel loops merge, the reduction
// stays innermost.
// CHECK-LABEL: func.func @rows(
// CHECK-DAG: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<4x6x7xf32> into memref<24x7xf32>
// CHECK-DAG: memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<4x6xf32> into memref<24xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : memref<24x7xf32>) outs(%{{.*}} : memref<24xf32>)
func.func @rows(%x: memref<4x6x7xf32>, %acc: memref<4x6xf32>) {
  linalg.generic {indexing_maps = [#id3, #last], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x6x7xf32>) outs(%acc : memref<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %in, %out : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A window of a 4x5 grid of rows of 12 (the first 6 of each): its rows'
// outer loops merge (stride 60 = 5 x 12), its columns stay apart from them.
// CHECK-LABEL: func.func @window_rows(
// CHECK-DAG: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<4x5x6xf32, strided<[60, 12, 1]>> into memref<20x6xf32, strided<[12, 1]>>
// CHECK-DAG: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : memref<4x5x6xf32> into memref<20x6xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]}
func.func @window_rows(%x: memref<4x5x6xf32, strided<[60, 12, 1]>>, %y: memref<4x5x6xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<4x5x6xf32, strided<[60, 12, 1]>>) outs(%y : memref<4x5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
#scalar = affine_map<(d0, d1, d2) -> ()>

// A scalar operand merges with anything; a bias that is a strided slice
// (a packed weight's block) and is not indexed by every loop keeps the op
// as it is.
// CHECK-LABEL: func.func @scalar_and_slice(
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : memref<2x3x4xf32> into memref<24xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%{{.*}}, %{{.*}} : memref<24xf32>, f32)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : memref<2x3x4xf32>, memref<4xf32, strided<[1], offset: 4>>)
func.func @scalar_and_slice(%x: memref<2x3x4xf32>, %s: f32, %b: memref<4xf32, strided<[1], offset: 4>>,
                            %y: memref<2x3x4xf32>, %z: memref<2x3x4xf32>) {
  linalg.generic {indexing_maps = [#id3, #scalar, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %s : memref<2x3x4xf32>, f32) outs(%y : memref<2x3x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %t = arith.mulf %in, %c : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id3, #last, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<2x3x4xf32>, memref<4xf32, strided<[1], offset: 4>>) outs(%z : memref<2x3x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %t = arith.addf %in, %c : f32
    linalg.yield %t : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Every dimension a unit one: a loop over nothing is left (rank 0).
// CHECK-LABEL: func.func @units(
// CHECK: linalg.generic {{.*}}iterator_types = []}
func.func @units(%x: memref<1x1xf32>, %y: memref<1x1xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<1x1xf32>) outs(%y : memref<1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.negf %in : f32
    linalg.yield %t : f32
  }
  return
}
