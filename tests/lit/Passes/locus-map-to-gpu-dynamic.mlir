// RUN: locus-opt %s --locus-map-to-gpu | FileCheck %s
// RUN: locus-opt %s --locus-map-to-gpu=explain=true 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A kernel of a graph with dynamic sizes (a batch of at most 16): the host
// reads the run's batch from the sizes argument, and each launch is sized
// by it. A plain elementwise op over [batch, 10] stays flat: its buffers as
// 1-D views at their bounds (160), its grid and bounds checks at the run's
// batch * 10; the marks of --locus-dynamic-kernels are spent.
// CHECK-LABEL: func.func @relu
// CHECK-NOT: locus.size_bounds
// CHECK: %[[N64:.*]] = memref.load %arg1[%c0] : memref<1xi64>
// CHECK: %[[N:.*]] = arith.index_cast %[[N64]]
// CHECK: %[[XV:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [%[[N]], 10]
// CHECK: %[[B:.*]] = memref.dim %[[XV]], %c0
// CHECK: %[[ROWS:.*]] = arith.muli %c10{{.*}}, %[[B]] : index
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [160], strides: [1] : memref<f32> to memref<160xf32>
// CHECK: %[[UP:.*]] = arith.addi %[[ROWS]], %c1023
// CHECK: %[[GRID:.*]] = arith.divui %[[UP]], %c1024
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]],
// CHECK: %[[END:.*]] = arith.addi %{{.*}}, %c4
// CHECK: arith.cmpi ule, %[[END]], %[[ROWS]]
// CHECK-COUNT-4: memref.load {{.*}} : memref<160xf32>
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
func.func @relu(%x: memref<16x10xf32>, %sizes: memref<1xi64>, %y: memref<16x10xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 16>} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %n64 : i64 to index
  %xv = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 10], strides: [10, 1] : memref<16x10xf32> to memref<?x10xf32>
  %yv = memref.reinterpret_cast %y to offset: [0], sizes: [%n, 10], strides: [10, 1] : memref<16x10xf32> to memref<?x10xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xv : memref<?x10xf32>) outs(%yv : memref<?x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %cst : f32
    linalg.yield %m : f32
  }
  return
}

// A sum over the dynamic batch (a bias gradient): columns, chosen at the
// bound (10 outputs x 16), a thread per output folding its column up to the
// run's batch.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[B:.*]] = memref.dim
// CHECK: %[[COLS:.*]] = arith.muli %{{.*}}, %[[B]] : index
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[COLS]] step %c1
// EXPLAIN: remark: 10 output(s) x 16 element(s) at the bounds: columns: a thread per output
func.func @column_sum(%x: memref<16x10xf32>, %sizes: memref<1xi64>, %y: memref<10xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 16>} {
  %c0 = arith.constant 0 : index
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %n64 : i64 to index
  %xv = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 10], strides: [10, 1] : memref<16x10xf32> to memref<?x10xf32>
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%xv : memref<?x10xf32>) outs(%y : memref<10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// The same with a batch of at most 64 (4 shares of 16 at the bound): 4
// lanes per output combined by shuffles, each lane folding its share of
// the run's batch, in one launch.
// CHECK-LABEL: func.func @column_sum_lanes
// CHECK: %[[B:.*]] = memref.dim
// CHECK: %[[COLS:.*]] = arith.muli %{{.*}}, %[[B]] : index
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[COLS]] step %c4
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK-NOT: gpu.launch
// CHECK: return
// EXPLAIN: remark: 32 output(s) x 64 element(s) at the bounds: columns: 4 lanes per output, combined by shuffles
func.func @column_sum_lanes(%x: memref<64x32xf32>, %sizes: memref<1xi64>, %y: memref<32xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 64>} {
  %c0 = arith.constant 0 : index
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %n64 : i64 to index
  %xv = memref.reinterpret_cast %x to offset: [0], sizes: [%n, 32], strides: [32, 1] : memref<64x32xf32> to memref<?x32xf32>
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%xv : memref<?x32xf32>) outs(%y : memref<32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// Rows of a dynamic length (a softmax's max over [2, seq, seq] with seq
// at most 64, packed at the run's sizes): a reshape into two dynamic dims
// from a shape buffer the host fills becomes a cast with row-major strides
// (the buffer would be device memory). At the bound, rows of 64 go to a
// warp each; the grid takes the run's 2 * seq rows, 8 a block, each lane
// folding every 32nd of the run's seq elements.
// CHECK-LABEL: func.func @row_max
// CHECK-NOT: memref.reshape
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%c2, %[[S:[0-9a-z_]+]], %[[S]]], strides: [%{{.*}}, %{{.*}}, %{{.*}}] : memref<?xf32, strided<[1]>> to memref<2x?x?xf32>
// CHECK-NOT: memref.store
// CHECK: %[[UP:.*]] = arith.addi %{{.*}}, %c7
// CHECK: %[[GRID:.*]] = arith.divui %[[UP]], %c8
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]],
// CHECK: gpu.shuffle xor
// EXPLAIN: remark: 128 output(s) x 64 element(s) at the bounds: a warp per output, 8 per block
func.func @row_max(%x: memref<2x64x64xf32>, %sizes: memref<1xi64>, %y: memref<2x64xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 64>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %s = arith.index_cast %n64 : i64 to index
  %count = arith.muli %s, %s : index
  %all = arith.muli %count, %c2 : index
  %flat = memref.collapse_shape %x [[0, 1, 2]] : memref<2x64x64xf32> into memref<8192xf32>
  %packed = memref.subview %flat[0] [%all] [1] : memref<8192xf32> to memref<?xf32, strided<[1]>>
  %shape = memref.alloc() : memref<3xindex>
  memref.store %c2, %shape[%c0] : memref<3xindex>
  memref.store %s, %shape[%c1] : memref<3xindex>
  memref.store %s, %shape[%c2] : memref<3xindex>
  %xv = memref.reshape %packed(%shape) : (memref<?xf32, strided<[1]>>, memref<3xindex>) -> memref<2x?x?xf32>
  %yv = memref.reinterpret_cast %y to offset: [0], sizes: [2, %s], strides: [64, 1] : memref<2x64xf32> to memref<2x?xf32, strided<[64, 1]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xv : memref<2x?x?xf32>) outs(%yv : memref<2x?xf32, strided<[64, 1]>>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %b : f32
    linalg.yield %m : f32
  }
  memref.dealloc %shape : memref<3xindex>
  return
}

// Dims that canonicalization reads back from a reshape's shape buffer are
// the values the host stored there (the buffer goes with the reshape).
// CHECK-LABEL: func.func @split_heads
// CHECK-NOT: memref.reshape
// CHECK-NOT: memref.load %{{.*}} : memref<3xindex>
// CHECK: memref.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [%[[B:[0-9a-z_]+]], %[[S:[0-9a-z_]+]], 2, 16]
// CHECK-NOT: memref.alloc() {{.*}}memref<3xindex>
func.func @split_heads(%x: memref<8x16x32xf32>, %sizes: memref<2xi64>, %y: memref<8x16x2x16xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 8, 16>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %b64 = memref.load %sizes[%c0] : memref<2xi64>
  %b = arith.index_cast %b64 : i64 to index
  %s64 = memref.load %sizes[%c1] : memref<2xi64>
  %s = arith.index_cast %s64 : i64 to index
  %bs = arith.muli %b, %s : index
  %all = arith.muli %bs, %c32 : index
  %flat = memref.collapse_shape %x [[0, 1, 2]] : memref<8x16x32xf32> into memref<4096xf32>
  %packed = memref.subview %flat[0] [%all] [1] : memref<4096xf32> to memref<?xf32, strided<[1]>>
  %shape = memref.alloc() : memref<3xindex>
  memref.store %b, %shape[%c0] : memref<3xindex>
  memref.store %s, %shape[%c1] : memref<3xindex>
  memref.store %c32, %shape[%c2] : memref<3xindex>
  %xv = memref.reshape %packed(%shape) : (memref<?xf32, strided<[1]>>, memref<3xindex>) -> memref<?x?x32xf32>
  %d1 = memref.load %shape[%c1] : memref<3xindex>
  %d0 = memref.load %shape[%c0] : memref<3xindex>
  %heads = memref.expand_shape %xv [[0], [1], [2, 3]] output_shape [%d0, %d1, 2, 16] : memref<?x?x32xf32> into memref<?x?x2x16xf32>
  %yv = memref.reinterpret_cast %y to offset: [0], sizes: [%b, %s, 2, 16], strides: [512, 32, 16, 1] : memref<8x16x2x16xf32> to memref<?x?x2x16xf32, strided<[512, 32, 16, 1]>>
  memref.copy %heads, %yv : memref<?x?x2x16xf32> to memref<?x?x2x16xf32, strided<[512, 32, 16, 1]>>
  memref.dealloc %shape : memref<3xindex>
  return
}

// In a kernel of updates in place (locus.results_may_alias), independent
// parallel ops share a launch, but not one over a buffer of dynamic layout
// (a window at the run's last step): it needs the size bounds and takes a
// launch of its own.
// CHECK-LABEL: func.func @window_update
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
func.func @window_update(%x: memref<16x4xf32>, %sizes: memref<1xi64>, %a: memref<4xf32>, %b: memref<4xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1, -1>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 16>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %n64 : i64 to index
  %lastRow = arith.subi %n, %c1 : index
  %last = memref.subview %x[%lastRow, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%last : memref<4xf32, strided<[1], offset: ?>>) outs(%a : memref<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%b : memref<4xf32>) {
  ^bb0(%o: f32):
    %z = arith.constant 0.0 : f32
    linalg.yield %z : f32
  }
  return
}

// A count of the run's batch that the host computes is stored by a launch
// of one thread (the buffer is device memory).
// CHECK-LABEL: func.func @count
// CHECK: %[[F:.*]] = arith.uitofp
// CHECK: gpu.launch
// CHECK-NEXT: memref.store %[[F]], %arg1[] : memref<f32>
func.func @count(%sizes: memref<1xi64>, %y: memref<f32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 0 : i64, locus.size_bounds = array<i64: 16>} {
  %c0 = arith.constant 0 : index
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %f = arith.uitofp %n64 : i64 to f32
  memref.store %f, %y[] : memref<f32>
  return
}
