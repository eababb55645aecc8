// RUN: locus-opt %s --locus-map-to-gpu | FileCheck %s
// RUN: locus-opt %s --locus-map-to-gpu=explain=true 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN

// With explain=true each group, and each op left to the one-op
// strategies, says what it got and why.
// EXPLAIN: remark: a row group: 6 ops over 6 row(s) of 1024 in one launch, a block per row
// EXPLAIN: remark: a row group: 5 ops over 37 row(s) of 10 in one launch, a few lanes per row
// EXPLAIN: remark: 8 output(s) x 8 element(s): a thread per output (too few columns or too many rows)
// EXPLAIN: remark: 4 output(s) x 5000 element(s): a block per output
// EXPLAIN: remark: a row group: 2 ops over 4 row(s) of 1024 in one launch, a block per row
// EXPLAIN: remark: 4 output(s) x 1 element(s): 4 consecutive elements per thread, flat
// EXPLAIN: remark: a row group: 6 ops over 200 row(s) of 5000 in one launch, a block per row, looping over its columns

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#row2 = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>

// A softmax as lowering writes it (fill, row max, exp of the difference,
// fill, row sum, quotient) over rows of 1024: one launch, a block per row,
// each thread holding 4 elements (columns t, t+256, t+512, t+768) from op
// to op. The input is read once (4 loads), the rows combine with
// gpu.all_reduce, and only the output is written (4 stores); the three
// temporaries are gone.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: memref.alloc
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<6x1024xf32> into memref<6144xf32>
// CHECK: %[[Y:.*]] = memref.collapse_shape %arg1 {{\[\[}}0, 1]] : memref<6x1024xf32> into memref<6144xf32>
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c6{{[_0-9]*}}, {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK-COUNT-4: memref.load %[[X]]
// CHECK-NOT: memref.load
// CHECK: gpu.all_reduce  maximumf
// CHECK-COUNT-4: math.exp
// CHECK: gpu.all_reduce  add
// CHECK-COUNT-4: arith.divf
// CHECK-COUNT-4: memref.store {{.*}}, %[[Y]]
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @softmax(%x: memref<6x1024xf32>, %y: memref<6x1024xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %max = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<6xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<6x1024xf32>) outs(%max : memref<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %maxv = memref.expand_shape %max [[0, 1]] output_shape [6, 1] : memref<6xf32> into memref<6x1xf32>
  %e = memref.alloc() {alignment = 64 : i64} : memref<6x1024xf32>
  linalg.generic {indexing_maps = [#id, #row2, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %maxv : memref<6x1024xf32>, memref<6x1xf32>) outs(%e : memref<6x1024xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  %sum = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<6xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%e : memref<6x1024xf32>) outs(%sum : memref<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  %sumv = memref.expand_shape %sum [[0, 1]] output_shape [6, 1] : memref<6xf32> into memref<6x1xf32>
  linalg.generic {indexing_maps = [#id, #row2, #id], iterator_types = ["parallel", "parallel"]} ins(%e, %sumv : memref<6x1024xf32>, memref<6x1xf32>) outs(%y : memref<6x1024xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %max : memref<6xf32>
  memref.dealloc %e : memref<6x1024xf32>
  memref.dealloc %sum : memref<6xf32>
  return
}

// Rows of 10: 4 lanes per row (at most 4 elements a lane: columns lane,
// lane + 4 and lane + 8), 64 rows per block (37 rows: one block). A lane's
// element past the row's end (lane + 8 >= 10) reads the last column (minui,
// so every read is in bounds), adds the identity to the reductions
// (select), and stores nothing; rows past the last read the last row
// (minui) and store nothing. Two butterfly shuffles (2, 1) combine a row's
// lanes.
// CHECK-LABEL: func.func @short_rows
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c4
// CHECK: %[[ROW0:.*]] = arith.muli %[[B]], %c64
// CHECK: %[[SUB:.*]] = arith.divui %[[T]], %c4
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %[[SUB]]
// CHECK: %[[ACTIVE:.*]] = arith.cmpi ult, %[[ROW]], %c37
// CHECK: %[[SAFE:.*]] = arith.minui %[[ROW]], %c36
// CHECK: %[[COL0:.*]] = arith.addi %[[LANE]], %c0
// CHECK: %[[COL1:.*]] = arith.addi %[[LANE]], %c4
// CHECK: %[[COL2:.*]] = arith.addi %[[LANE]], %c8
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[COL2]], %c10
// CHECK: %[[READ:.*]] = arith.minui %[[COL2]], %c9
// CHECK-COUNT-2: memref.load
// CHECK: %[[AT0:.*]] = arith.muli %[[SAFE]], %c10
// CHECK: %[[AT:.*]] = arith.addi %[[AT0]], %[[READ]]
// CHECK: memref.load %{{.*}}[%[[AT]]]
// CHECK: arith.select %[[IN]]
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32{{[_0-9]*}} : f32
// CHECK-NOT: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: math.log
// CHECK: scf.if %[[ACTIVE]]
// CHECK: scf.if %[[ACTIVE]]
// CHECK: %[[OK:.*]] = arith.andi %[[ACTIVE]], %[[IN]] : i1
// CHECK: scf.if %[[OK]]
// CHECK: %[[TO0:.*]] = arith.muli %[[ROW]], %c10
// CHECK: %[[TO:.*]] = arith.addi %[[TO0]], %[[COL2]]
// CHECK: memref.store %{{.*}}[%[[TO]]]
// CHECK-NOT: gpu.all_reduce
// CHECK-NOT: gpu.launch
func.func @short_rows(%x: memref<37x10xf32>, %y: memref<37x10xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %max = memref.alloc() : memref<37xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<37xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<37x10xf32>) outs(%max : memref<37xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %sum = memref.alloc() : memref<37xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<37xf32>)
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %max : memref<37x10xf32>, memref<37xf32>) outs(%sum : memref<37xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %out : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max, %sum : memref<37x10xf32>, memref<37xf32>, memref<37xf32>) outs(%y : memref<37x10xf32>) {
  ^bb0(%in: f32, %m: f32, %s: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.log %s : f32
    %2 = arith.subf %0, %1 : f32
    linalg.yield %2 : f32
  }
  memref.dealloc %max : memref<37xf32>
  memref.dealloc %sum : memref<37xf32>
  return
}

// The end of a layer norm: a row sum, its scale (a rowwise op), then the
// normalization reading a row of the caller's (eps, loaded once per row)
// and two columns (gamma and beta, every row's). Rows of 768 take a block;
// 3 elements a thread. The mean is a temporary: it stays in registers.
// CHECK-LABEL: func.func @normalize
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, {{.*}} threads
// CHECK-COUNT-3: memref.load %{{.*}} : memref<3072xf32>
// CHECK: gpu.all_reduce  add
// CHECK: arith.mulf
// CHECK: memref.load %{{.*}} : memref<4xf32>
// CHECK: memref.load %{{.*}} : memref<3072xf32>
// CHECK: memref.load %arg3{{.*}} : memref<768xf32>
// CHECK: memref.load %arg4{{.*}} : memref<768xf32>
// CHECK: math.rsqrt
// CHECK: memref.load %{{.*}} : memref<3072xf32>
// CHECK: memref.load %arg3{{.*}} : memref<768xf32>
// CHECK: memref.load %arg4{{.*}} : memref<768xf32>
// CHECK: math.rsqrt
// CHECK: memref.load %{{.*}} : memref<3072xf32>
// CHECK: memref.load %arg3{{.*}} : memref<768xf32>
// CHECK: memref.load %arg4{{.*}} : memref<768xf32>
// CHECK: math.rsqrt
// CHECK-COUNT-3: memref.store {{.*}} : memref<3072xf32>
// CHECK-NOT: memref.store
// CHECK-NOT: gpu.launch
func.func @normalize(%c2: memref<4x768xf32>, %eps: memref<4x1xf32>, %c: memref<4x768xf32>, %g: memref<768xf32>, %be: memref<768xf32>, %y: memref<4x768xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %scale = arith.constant 1.302083e-03 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %sum = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%c2 : memref<4x768xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  %mean = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%sum : memref<4xf32>) outs(%mean : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %scale : f32
    linalg.yield %0 : f32
  }
  %meanv = memref.expand_shape %mean [[0, 1]] output_shape [4, 1] : memref<4xf32> into memref<4x1xf32>
  linalg.generic {indexing_maps = [#id, #row2, #row2, #col, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %meanv, %eps, %g, %be : memref<4x768xf32>, memref<4x1xf32>, memref<4x1xf32>, memref<768xf32>, memref<768xf32>) outs(%y : memref<4x768xf32>) {
  ^bb0(%in: f32, %m: f32, %e: f32, %gi: f32, %bi: f32, %out: f32):
    %0 = arith.addf %m, %e : f32
    %1 = math.rsqrt %0 : f32
    %2 = arith.mulf %in, %1 : f32
    %3 = arith.mulf %2, %gi : f32
    %4 = arith.addf %3, %bi : f32
    linalg.yield %4 : f32
  }
  memref.dealloc %sum : memref<4xf32>
  memref.dealloc %mean : memref<4xf32>
  return
}

// What is read after the run is written: here the row maxima, a buffer of
// the caller's, and an intermediate the caller reads. Lane 0 of each row
// stores the maximum.
// CHECK-LABEL: func.func @rows_read_after
// CHECK: gpu.launch
// CHECK: gpu.shuffle
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: %[[STORE:.*]] = arith.andi %{{.*}}, %[[FIRST]] : i1
// CHECK: scf.if %[[STORE]]
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<8xf32>
// CHECK: memref.store %{{.*}} : memref<512xf32>
// CHECK-NOT: gpu.launch
func.func @rows_read_after(%x: memref<8x64xf32>, %max: memref<8xf32>, %y: memref<8x64xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%max : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x64xf32>) outs(%max : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max : memref<8x64xf32>, memref<8xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    linalg.yield %0 : f32
  }
  return
}

// Not a group: the row sums are also read by column (y[i][j] = x[i][j] +
// s[j]), so a row needs others' sums and rows are not independent. One
// launch per op, as before.
// CHECK-LABEL: func.func @column_written
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
func.func @column_written(%x: memref<8x8xf32>, %s: memref<8xf32>, %y: memref<8x8xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<8x8xf32>, memref<8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %0 = arith.addf %in, %c : f32
    linalg.yield %0 : f32
  }
  return
}

// Not a group: rows of 5000 are longer than 16 elements a thread of a
// block (4096), and 4 of them (fewer than 128) would not fill the GPU
// looping a block each. The reduction keeps its own strategy and the
// quotient its own launch.
// CHECK-LABEL: func.func @long_rows
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
func.func @long_rows(%x: memref<4x5000xf32>, %s: memref<4xf32>, %y: memref<4x5000xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x5000xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<4x5000xf32>, memref<4xf32>) outs(%y : memref<4x5000xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %0 = arith.divf %in, %d : f32
    linalg.yield %0 : f32
  }
  return
}

// Not one group: rows of 1024 share a block, and the [rows] op would store
// the caller's row buffer (lane 0, no barrier) that the quotient before it
// reads from memory in every warp. The longest group that keeps the rule
// (the maximum and the quotient) is one launch, and the [rows] op after it
// another.
// CHECK-LABEL: func.func @row_overwritten
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
func.func @row_overwritten(%x: memref<4x1024xf32>, %s: memref<4xf32>, %m: memref<4xf32>, %y: memref<4x1024xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x1024xf32>) outs(%m : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<4x1024xf32>, memref<4xf32>) outs(%y : memref<4x1024xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %0 = arith.divf %in, %d : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%m : memref<4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// Rows longer than registers hold (5000 > 4096), and rows enough (200, a
// block each) to fill the GPU: one launch still. Each lane loops over its
// columns (20 chunks of 256) once per reduction and once for the output;
// exp(x - max) is computed again where the sum and the quotient read it,
// from x re-read through the caches, so nothing but the output is
// written and no temporary is allocated.
// CHECK-LABEL: func.func @long_softmax
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c200{{[_0-9]*}}, {{.*}} threads
// CHECK: scf.for %{{.*}} = %c0{{[_0-9]*}} to %c20{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args
// CHECK: arith.minui %{{.*}}, %c4999
// CHECK: memref.load
// CHECK: arith.maximumf
// CHECK: arith.select
// CHECK: gpu.all_reduce  maximumf
// CHECK: scf.for {{.*}} iter_args
// CHECK: math.exp
// CHECK: gpu.all_reduce  add
// CHECK: scf.for
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: scf.if
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
func.func @long_softmax(%x: memref<200x5000xf32>, %y: memref<200x5000xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %max = memref.alloc() : memref<200xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<200xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<200x5000xf32>) outs(%max : memref<200xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %maxv = memref.expand_shape %max [[0, 1]] output_shape [200, 1] : memref<200xf32> into memref<200x1xf32>
  %e = memref.alloc() : memref<200x5000xf32>
  linalg.generic {indexing_maps = [#id, #row2, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %maxv : memref<200x5000xf32>, memref<200x1xf32>) outs(%e : memref<200x5000xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  %sum = memref.alloc() : memref<200xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<200xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%e : memref<200x5000xf32>) outs(%sum : memref<200xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  %sumv = memref.expand_shape %sum [[0, 1]] output_shape [200, 1] : memref<200xf32> into memref<200x1xf32>
  linalg.generic {indexing_maps = [#id, #row2, #id], iterator_types = ["parallel", "parallel"]} ins(%e, %sumv : memref<200x5000xf32>, memref<200x1xf32>) outs(%y : memref<200x5000xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %max : memref<200xf32>
  memref.dealloc %e : memref<200x5000xf32>
  memref.dealloc %sum : memref<200xf32>
  return
}

// A layer norm's input gradient, as --locus-fuse-kernels merges it into
// one kernel: t = dy * w, a row sum of t * c, d = t * r - s * c (the
// caller's buffer, so written), a row sum of d and dx = d - n / 32. One
// launch of 8 lanes per row (rows of 32: 2 blocks for 64 rows), each sum
// by 3 shuffles; t and the sums stay in registers (their buffers go), d
// and dx are written, 4 elements a lane.
// CHECK-LABEL: func.func @layer_norm_backward
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[D:.*]] = memref.collapse_shape %arg4
// CHECK-DAG: %[[DX:.*]] = memref.collapse_shape %arg5
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2,
// CHECK-COUNT-3: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-4: memref.store {{.*}}, %[[D]][
// CHECK-NOT: memref.store
// CHECK-COUNT-3: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-4: memref.store {{.*}}, %[[DX]][
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// EXPLAIN: remark: a row group: 7 ops over 64 row(s) of 32 in one launch, a few lanes per row
func.func @layer_norm_backward(%dy: memref<64x32xf32>, %w: memref<32xf32>, %c: memref<64x32xf32>, %r: memref<64x1xf32>, %d: memref<64x32xf32>, %dx: memref<64x32xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %zero = arith.constant 0.000000e+00 : f32
  %inv = arith.constant 3.125000e-02 : f32
  %t = memref.alloc() : memref<64x32xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%dy, %w : memref<64x32xf32>, memref<32xf32>) outs(%t : memref<64x32xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  }
  %s = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]} ins(%t, %c : memref<64x32xf32>, memref<64x32xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %0, %out : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row2, #row, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t, %r, %s, %c : memref<64x32xf32>, memref<64x1xf32>, memref<64xf32>, memref<64x32xf32>) outs(%d : memref<64x32xf32>) {
  ^bb0(%a: f32, %rr: f32, %ss: f32, %cc: f32, %out: f32):
    %0 = arith.mulf %a, %rr : f32
    %1 = arith.mulf %ss, %cc : f32
    %2 = arith.subf %0, %1 : f32
    linalg.yield %2 : f32
  }
  %n = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%n : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%d : memref<64x32xf32>) outs(%n : memref<64xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.addf %a, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %n : memref<64x32xf32>, memref<64xf32>) outs(%dx : memref<64x32xf32>) {
  ^bb0(%a: f32, %nn: f32, %out: f32):
    %0 = arith.mulf %nn, %inv : f32
    %1 = arith.subf %a, %0 : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<64x32xf32>
  memref.dealloc %s : memref<64xf32>
  memref.dealloc %n : memref<64xf32>
  return
}
