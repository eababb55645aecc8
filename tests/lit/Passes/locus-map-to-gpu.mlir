// RUN: locus-opt %s --locus-map-to-gpu | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// A plain elementwise op (identity maps and layouts): the buffers as flat
// 1-D views, 16-byte aligned (plan buffers are 64-byte aligned); each
// thread takes 4 consecutive elements (2 blocks of 256 threads for 1200):
// every load, then the bodies, then every store when all 4 are in range
// (the backend merges them into 16-byte accesses), one by one with a check
// otherwise. No division per element.
// CHECK-LABEL: func.func @exp
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<4x300xf32> into memref<1200xf32>
// CHECK: %[[Y:.*]] = memref.collapse_shape %arg1 {{\[\[}}0, 1]] : memref<4x300xf32> into memref<1200xf32>
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c2, {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK: memref.assume_alignment %[[X]], 16
// CHECK: memref.assume_alignment %[[Y]], 16
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// CHECK: %[[BASE:.*]] = arith.muli %[[ID]], %c4
// CHECK: %[[END:.*]] = arith.addi %[[BASE]], %c4
// CHECK: %[[WHOLE:.*]] = arith.cmpi ule, %[[END]], %c1200
// CHECK: scf.if %[[WHOLE]]
// CHECK-COUNT-4: memref.load %[[X]]
// CHECK-COUNT-4: math.exp
// CHECK-COUNT-4: memref.store {{.*}}, %[[Y]]
// CHECK: } else {
// CHECK: scf.for %[[K:.*]] = %c0 to %c4
// CHECK: %[[AT:.*]] = arith.addi %[[BASE]], %[[K]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[AT]], %c1200
// CHECK: scf.if %[[IN]]
// CHECK: memref.load %[[X]][%[[AT]]]
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %[[Y]][%[[AT]]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
func.func @exp(%x: memref<4x300xf32>, %y: memref<4x300xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x300xf32>) outs(%y : memref<4x300xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// A parallel op that reads through a transposition: one thread per
// element, 256 per block, the last loop dimension fastest (remui by 4
// first), a bounds check on the 1200.
// CHECK-LABEL: func.func @transposed
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c5{{[_0-9]*}}, {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK: scf.if %[[IN]]
// CHECK: %[[J:.*]] = arith.remui %[[ID]], %c4
// CHECK: memref.load %arg0
// CHECK: math.exp
// CHECK: memref.store
// CHECK-NOT: memref.assume_alignment
func.func @transposed(%x: memref<4x300xf32>, %y: memref<300x4xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x300xf32>) outs(%y : memref<300x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// A long reduction: one block per row; each thread strides by the block
// size; the block combines with gpu.all_reduce; thread 0 adds the output's
// initial value and stores.
// CHECK-LABEL: func.func @sum_rows
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4, {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[TX]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
// CHECK: arith.addf
// CHECK: %[[ALL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TX]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]]
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: %[[OUT:.*]] = arith.addf %[[ALL]], %[[INIT]] : f32
// CHECK: memref.store %[[OUT]], %arg1
func.func @sum_rows(%x: memref<4x300xf32>, %y: memref<4xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x300xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// Too few outputs to fill the GPU (2 sums of 40000 elements): split. The
// first launch has 2 x 9 blocks (9 = 40000 / (16 x 256), rounded down),
// each folding a share of 4445 elements into a temporary of partials; the
// second has one block per output that folds its 9 partials in order (32
// threads: 9 rounded up to a warp), adds the output's initial value and
// stores. No atomics: the same result on every run.
// CHECK-LABEL: func.func @split_sum
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<18xf32>
// CHECK: gpu.launch blocks(%[[B1:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c18{{[_0-9]*}}, {{.*}} threads(%[[T1:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}},
// CHECK: %[[ROW:.*]] = arith.divui %[[B1]], %c9{{[_0-9]*}}
// CHECK: %[[SHARE:.*]] = arith.remui %[[B1]], %c9{{[_0-9]*}}
// CHECK: %[[BEGIN:.*]] = arith.muli %[[SHARE]], %c4445{{[_0-9]*}}
// CHECK: %[[END0:.*]] = arith.addi %[[BEGIN]], %c4445{{[_0-9]*}}
// CHECK: %[[END:.*]] = arith.minui %[[END0]], %c40000{{[_0-9]*}}
// CHECK: %[[FIRST:.*]] = arith.addi %[[BEGIN]], %[[T1]]
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[FIRST]] to %[[END]] step %c256{{[_0-9]*}}
// CHECK: %[[ALL1:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: scf.if
// CHECK: memref.store %[[ALL1]], %[[PARTS]][%[[B1]]]
// CHECK: gpu.launch blocks(%[[B2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}}, {{.*}} threads(%[[T2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c32{{[_0-9]*}},
// CHECK: %[[BASE:.*]] = arith.muli %[[B2]], %c9{{[_0-9]*}}
// CHECK: scf.for %[[K:.*]] = %[[T2]] to %c9{{[_0-9]*}} step %c32{{[_0-9]*}}
// CHECK: %[[AT:.*]] = arith.addi %[[BASE]], %[[K]]
// CHECK: memref.load %[[PARTS]][%[[AT]]]
// CHECK: %[[ALL2:.*]] = gpu.all_reduce add
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: arith.addf %[[ALL2]], %[[INIT]] : f32
// CHECK: memref.store
// CHECK: memref.dealloc %[[PARTS]]
func.func @split_sum(%x: memref<2x40000xf32>, %y: memref<2xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<2x40000xf32>) outs(%y : memref<2xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// Short rows (64 elements): a warp per output, 8 per block of 256 threads
// (one block for the 8 rows). Each lane starts at -inf and folds every
// 32nd element with maximumf; five butterfly shuffles (xor 16 .. 1) combine
// the lanes, and lane 0 stores. The bounds check is per warp.
// CHECK-LABEL: func.func @max_rows
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[ROW0:.*]] = arith.muli %[[B]], %c8
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %[[WARP]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c8
// CHECK: scf.if %[[IN]]
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: %[[P0:.*]] = scf.for %{{.*}} = %[[LANE]] to %c64{{[_0-9]*}} step %c32
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle  xor %[[P0]], %c16_i32, %c32_i32 : f32
// CHECK: %[[P1:.*]] = arith.maximumf %[[S1]], %[[P0]] : f32
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK: %[[L0:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK: scf.if %[[L0]]
// CHECK: arith.maximumf
// CHECK: memref.store
// CHECK-NOT: gpu.all_reduce
func.func @max_rows(%x: memref<8x64xf32>, %y: memref<8xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x64xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

// A sum over the rows of a row-major matrix (a bias gradient): the outputs
// lie next to each other, so a thread per output, neighbours reading
// neighbours. 40 outputs cannot fill the GPU: the 2000 rows split into 125
// shares of 16 over grid.y, each thread folding its share into partials
// [125][40]; a second launch (64 threads: 40 rounded up to warps) folds each
// output's 125 partials in order into the output.
// CHECK-LABEL: func.func @sum_columns
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<5000xf32>
// CHECK: gpu.launch blocks(%[[BX:.*]], %[[BY:.*]], %{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c125{{[_0-9]*}}, {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK: %[[ID0:.*]] = arith.muli %[[BX]], %c256
// CHECK: %[[ID:.*]] = arith.addi %[[ID0]], %[[TX]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %c40
// CHECK: scf.if %[[IN]]
// CHECK: %[[BEGIN:.*]] = arith.muli %[[BY]], %c16
// CHECK: %[[END0:.*]] = arith.addi %[[BEGIN]], %c16
// CHECK: %[[END:.*]] = arith.minui %[[END0]], %c2000
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[BEGIN]] to %[[END]] step %c1
// CHECK: arith.addf
// CHECK: %[[AT0:.*]] = arith.muli %[[BY]], %c40
// CHECK: %[[AT:.*]] = arith.addi %[[AT0]], %[[ID]]
// CHECK: memref.store %[[PART]], %[[PARTS]][%[[AT]]]
// CHECK-NOT: gpu.all_reduce
// CHECK: gpu.launch blocks({{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64,
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: scf.for %[[K:.*]] = %c0{{[_0-9]*}} to %c125{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK: memref.load %[[PARTS]]
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: memref.dealloc %[[PARTS]]
func.func @sum_columns(%x: memref<2000x40xf32>, %y: memref<40xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<2000x40xf32>) outs(%y : memref<40xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// A small bias gradient (64 rows into 32 outputs) would split into 4
// shares of 16: instead 4 lanes of a warp share each output, in one launch
// (no partials). Lane l of a warp: output l % 8, share l / 8, folding the
// rows share, share + 4, ...; two butterfly shuffles (xor 8, 16) combine
// the shares; the lanes of share 0 store (added to the output's value).
// Lanes past the last output fold the last one and do not store.
// CHECK-LABEL: func.func @sum_columns_lanes
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK: %[[LANE:.*]] = arith.remui %[[TX]], %c32
// CHECK: %[[SHARE:.*]] = arith.divui %[[LANE]], %c8
// CHECK: %[[WARP:.*]] = arith.divui %[[TX]], %c32
// CHECK: %[[W8:.*]] = arith.muli %[[WARP]], %c8
// CHECK: %[[COL:.*]] = arith.remui %[[LANE]], %c8
// CHECK: %[[INWARP:.*]] = arith.addi %[[W8]], %[[COL]]
// CHECK: %[[B64:.*]] = arith.muli %[[BX]], %c64
// CHECK: %[[OUT:.*]] = arith.addi %[[B64]], %[[INWARP]]
// CHECK: %[[LAST:.*]] = arith.subi %c32{{[_0-9]*}}, %c1
// CHECK: %[[AT:.*]] = arith.minui %[[OUT]], %[[LAST]]
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[SHARE]] to %c64{{[_0-9]*}} step %c4
// CHECK: memref.load %arg0
// CHECK: arith.addf
// CHECK: %[[S8:.*]], %{{.*}} = gpu.shuffle xor %[[PART]], %c8_i32, %c32_i32
// CHECK: %[[P8:.*]] = arith.addf %[[S8]], %[[PART]]
// CHECK: %[[S16:.*]], %{{.*}} = gpu.shuffle xor %[[P8]], %c16_i32, %c32_i32
// CHECK: %[[P16:.*]] = arith.addf %[[S16]], %[[P8]]
// CHECK-NOT: gpu.shuffle
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[SHARE]], %c0
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[OUT]], %c32
// CHECK: %[[STORES:.*]] = arith.andi %[[FIRST]], %[[INSIDE]]
// CHECK: scf.if %[[STORES]]
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: %[[SUM:.*]] = arith.addf %[[P16]], %[[INIT]]
// CHECK: memref.store %[[SUM]], %arg1
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @sum_columns_lanes(%x: memref<64x32xf32>, %y: memref<32xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<64x32xf32>) outs(%y : memref<32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// 97 rows into 37 outputs (primes): 6 shares of 16 round up to 8 lanes, a
// warp holding 4 outputs, a block 32: 2 blocks, three shuffles.
// CHECK-LABEL: func.func @max_columns_lanes
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}},
// CHECK: arith.divui %{{.*}}, %c4
// CHECK: scf.for %{{.*}} = %{{.*}} to %c97{{[_0-9]*}} step %c8
// CHECK: arith.maximumf
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32
// CHECK-NOT: gpu.shuffle
// CHECK: arith.cmpi ult, %{{.*}}, %c37
func.func @max_columns_lanes(%x: memref<97x37xf32>, %y: memref<37xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<97x37xf32>) outs(%y : memref<37xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

// An i64 sum over columns splits over grid.y as f32 sums with more shares
// do: the lanes take f32 combiners only.
// CHECK-LABEL: func.func @sum_columns_i64
// CHECK: memref.alloc() : memref<128xi64>
// CHECK-NOT: gpu.shuffle
func.func @sum_columns_i64(%x: memref<64x32xi64>, %y: memref<32xi64>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<64x32xi64>) outs(%y : memref<32xi64>) {
  ^bb0(%a: i64, %b: i64):
    %s = arith.addi %a, %b : i64
    linalg.yield %s : i64
  }
  return
}

// Four outputs of 2,000,000 elements: the shares would be 67,584, past
// grid.y's 65,535; they are capped there (shares of 31: 64,517 of them).
// CHECK-LABEL: func.func @sum_columns_capped
// CHECK: memref.alloc() : memref<258068xf32>
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c64517{{[_0-9]*}},
// CHECK: arith.muli %{{.*}}, %c31
func.func @sum_columns_capped(%x: memref<2000000x4xf32>, %y: memref<4xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<2000000x4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// Outputs enough to fill the GPU (300000 columns): a thread per output
// folds its whole column, no split and no partials.
// CHECK-LABEL: func.func @max_columns
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: scf.for %{{.*}} = %c0{{[_0-9]*}} to %c4{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK: arith.maximumf
// CHECK-NOT: gpu.all_reduce
func.func @max_columns(%x: memref<4x300000xf32>, %y: memref<300000xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<4x300000xf32>) outs(%y : memref<300000xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.maximumf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

// A short reduction (8 elements): one thread per output element, looping.
// CHECK-LABEL: func.func @short_rows
// CHECK: gpu.launch
// CHECK: scf.if
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK-NOT: gpu.all_reduce
func.func @short_rows(%x: memref<100x8xf32>, %y: memref<100xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<100x8xf32>) outs(%y : memref<100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// Named ops and copies become launches too; a strided buffer is read
// through a flat view of its base pointer (offset 2, strides 10 and 3:
// the last element it reads is 2 + 2*10 + 2*3 = 28).
// CHECK-LABEL: func.func @named_and_strided
// CHECK: %[[SUB:.*]] = memref.subview %arg0
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[SUB]]
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [29], strides: [1]
// CHECK: gpu.launch
// CHECK: memref.load %[[FLAT]]
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[Z:.*]] = memref.collapse_shape %arg2
// CHECK: gpu.launch
// CHECK: memref.store %[[ZERO]], %[[Z]]
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.
func.func @named_and_strided(%src: memref<3x10xf32>, %y: memref<3x3xf32>, %z: memref<3x3xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %s = memref.subview %src[0, 2] [3, 3] [1, 3] : memref<3x10xf32> to memref<3x3xf32, strided<[10, 3], offset: 2>>
  memref.copy %s, %y : memref<3x3xf32, strided<[10, 3], offset: 2>> to memref<3x3xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%z : memref<3x3xf32>)
  return
}

// A fill then a reduction into the same buffer is one launch: the
// reduction starts from the filled value (here 1.0, not the sum's 0) and
// never loads the output. A fill followed by another op that touches
// memory (another fill), or by a reduction that also reads the buffer,
// stays a launch of its own.
// CHECK-LABEL: func.func @fill_then_sum
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: gpu.launch
// CHECK-NOT: memref.load %arg1
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[ONE]]) -> (f32)
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func.func @fill_kept
// CHECK-COUNT-4: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @fill_then_sum(%x: memref<8x100xf32>, %y: memref<100xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%y : memref<100xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<8x100xf32>) outs(%y : memref<100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}
func.func @fill_kept(%x: memref<8x100xf32>, %y: memref<100xf32>, %z: memref<100xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%y : memref<100xf32>)
  linalg.fill ins(%one : f32) outs(%z : memref<100xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<8x100xf32>) outs(%y : memref<100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#col, #id, #col], iterator_types = ["reduction", "parallel"]} ins(%z, %x : memref<100xf32>, memref<8x100xf32>) outs(%z : memref<100xf32>) {
  ^bb0(%c: f32, %a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// In a kernel function (with --locus-outline-kernels' aliasing facts),
// parallel ops next to each other that touch disjoint buffers (an
// optimizer's steps) share one launch, each taking its own range of
// blocks: the flat op 1 block (1000 elements, 4 a thread), the broadcast
// one 3 (600 elements, one a thread). An op that reads what one of them
// wrote gets a launch of its own.
// CHECK-LABEL: func.func @side_by_side
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{.*}}, {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[L0:.*]] = arith.subi %[[B]], %c0
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[L0]], %c1
// CHECK: scf.if %[[IN0]]
// CHECK: math.exp
// CHECK: %[[L1:.*]] = arith.subi %[[B]], %c1
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[L1]], %c3
// CHECK: scf.if %[[IN1]]
// CHECK: memref.load %arg2[]
// CHECK: arith.mulf
// CHECK: gpu.launch
// CHECK: math.sqrt
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @side_by_side(%x: memref<1000xf32>, %y: memref<600xf32>, %s: memref<f32>,
                        %ox: memref<1000xf32>, %oy: memref<600xf32>, %oz: memref<1000xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1, -1, -1>} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<1000xf32>) outs(%ox : memref<1000xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y, %s : memref<600xf32>, memref<f32>) outs(%oy : memref<600xf32>) {
  ^bb0(%a: f32, %c: f32, %b: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ox : memref<1000xf32>) outs(%oz : memref<1000xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = math.sqrt %a : f32
    linalg.yield %q : f32
  }
  return
}

// Reductions whose strategy is one launch of blocks that each serve their
// own outputs share a launch too: a bias gradient's column sums (200
// outputs of 64 elements: 4 lanes each, 64 outputs a block, 4 blocks
// from block 0), sums of 20 outputs over 2 x 32 elements (a warp per
// output, 8 a block: 3 blocks from block 4; two reduced loops, so no row
// group) and an elementwise op (1 block from block
// 7), each with the fill before it folded in: no share loads the outputs
// it folds into. A sum of 1 Mi elements, split over blocks and a second
// launch, keeps its own.
// CHECK-LABEL: func.func @reductions_side_by_side
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c8{{.*}}, {{.*}} threads
// CHECK-NOT: memref.load %arg4
// CHECK: %[[L0:.*]] = arith.subi %[[B]], %c0
// CHECK: arith.cmpi ult, %[[L0]], %c4
// CHECK-NOT: memref.load %arg4
// CHECK-COUNT-2: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: memref.load %arg4
// CHECK: %[[L1:.*]] = arith.subi %[[B]], %c4
// CHECK: arith.cmpi ult, %[[L1]], %c3
// CHECK-NOT: memref.load %arg5
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: memref.load %arg5
// CHECK: %[[L2:.*]] = arith.subi %[[B]], %c7
// CHECK: arith.cmpi ult, %[[L2]], %c1
// CHECK: math.exp
// CHECK: gpu.terminator
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @reductions_side_by_side(%g: memref<64x200xf32>, %n: memref<20x2x32xf32>, %x: memref<256xf32>, %big: memref<1048576xf32>,
                                   %db: memref<200xf32>, %rs: memref<20xf32>, %ex: memref<256xf32>, %tot: memref<f32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1, -1, -1, -1>} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%db : memref<200xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%g : memref<64x200xf32>) outs(%db : memref<200xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.fill ins(%zero : f32) outs(%rs : memref<20xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>], iterator_types = ["parallel", "reduction", "reduction"]} ins(%n : memref<20x2x32xf32>) outs(%rs : memref<20xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<256xf32>) outs(%ex : memref<256xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.fill ins(%zero : f32) outs(%tot : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%big : memref<1048576xf32>) outs(%tot : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc : f32
    linalg.yield %0 : f32
  }
  return
}

// A result that the plan may write into an argument's buffer (an update in
// place of %y) must not share a launch with an op that reads %y; without
// the aliasing facts nothing shares a launch.
// CHECK-LABEL: func.func @aliased
// CHECK-COUNT-2: gpu.launch
// CHECK-LABEL: func.func @no_facts
// CHECK-COUNT-2: gpu.launch
func.func @aliased(%x: memref<8xf32>, %y: memref<8xf32>, %ox: memref<8xf32>, %oy: memref<8xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: 1, -1>} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<8xf32>) outs(%ox : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y : memref<8xf32>) outs(%oy : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}
func.func @no_facts(%x: memref<8xf32>, %y: memref<8xf32>, %ox: memref<8xf32>, %oy: memref<8xf32>)
    attributes {locus.device = #locus.device<cuda:0>} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<8xf32>) outs(%ox : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y : memref<8xf32>) outs(%oy : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// Copies into separate windows of one buffer (a concatenation: rows 0-1,
// 2-3 and 4-5 of [6, 8]) share a launch; copies whose windows overlap
// (rows 0-1 and 1-2), or that read a window another writes, do not.
// CHECK-LABEL: func.func @concat_windows
// CHECK: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func.func @overlapping_windows
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func.func @reads_a_written_window
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @concat_windows(%a: memref<2x8xf32>, %b: memref<2x8xf32>, %c: memref<2x8xf32>, %y: memref<6x8xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1>} {
  %w0 = memref.subview %y[0, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  memref.copy %a, %w0 : memref<2x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  %w1 = memref.subview %y[2, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 16>>
  memref.copy %b, %w1 : memref<2x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 16>>
  %w2 = memref.subview %y[4, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %c, %w2 : memref<2x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 32>>
  return
}
func.func @overlapping_windows(%a: memref<2x8xf32>, %b: memref<2x8xf32>, %y: memref<6x8xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1>} {
  %w0 = memref.subview %y[0, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  memref.copy %a, %w0 : memref<2x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  %w1 = memref.subview %y[1, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 8>>
  memref.copy %b, %w1 : memref<2x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 8>>
  return
}
func.func @reads_a_written_window(%a: memref<2x8xf32>, %y: memref<6x8xf32>, %o: memref<2x8xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1, -1>} {
  %w0 = memref.subview %y[0, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  memref.copy %a, %w0 : memref<2x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  %r = memref.subview %y[1, 0] [2, 8] [1, 1] : memref<6x8xf32> to memref<2x8xf32, strided<[8, 1], offset: 8>>
  memref.copy %r, %o : memref<2x8xf32, strided<[8, 1], offset: 8>> to memref<2x8xf32>
  return
}

// An op whose body loads from a buffer that is no operand (a gather's
// table) reads it: it does not share a launch with the op that writes the
// table, which would race with it.
// CHECK-LABEL: func.func @body_reads_a_written_buffer
// CHECK-COUNT-2: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @body_reads_a_written_buffer(%x: memref<8xf32>, %ids: memref<4xi64>, %table: memref<8xf32>, %y: memref<4xf32>)
    attributes {locus.device = #locus.device<cuda:0>, locus.results_may_alias = array<i64: -1, -1>} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<8xf32>) outs(%table : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ids : memref<4xi64>) outs(%y : memref<4xf32>) {
  ^bb0(%id: i64, %b: f32):
    %i = arith.index_cast %id : i64 to index
    %v = memref.load %table[%i] : memref<8xf32>
    linalg.yield %v : f32
  }
  return
}

// A fill and a copy into a window of the same buffer (a slice's gradient:
// zeros, and the gradient in rows 32 to 63) are one launch: inside the
// window (from = i - 32 below 32, a multiple of the stride 1) an element
// takes the source's value at from / 1, outside the filled value. A copy
// whose source is a view of the filled buffer keeps its own launch.
// CHECK-LABEL: func.func @slice_gradient
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: gpu.launch
// CHECK: %[[FROM:.*]] = arith.subi %{{.*}}, %c32{{.*}} : index
// CHECK: arith.cmpi ult, %[[FROM]], %c32
// CHECK: arith.remui %[[FROM]], %c1
// CHECK: scf.if
// CHECK: memref.load %arg0
// CHECK: } else {
// CHECK: scf.yield %[[ZERO]]
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func.func @source_in_buffer
// CHECK-COUNT-2: gpu.launch
func.func @slice_gradient(%g: memref<32xf32>, %y: memref<96xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<96xf32>)
  %w = memref.subview %y[32] [32] [1] : memref<96xf32> to memref<32xf32, strided<[1], offset: 32>>
  memref.copy %g, %w : memref<32xf32> to memref<32xf32, strided<[1], offset: 32>>
  return
}
func.func @source_in_buffer(%y: memref<96xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<96xf32>)
  %s = memref.subview %y[0] [32] [1] : memref<96xf32> to memref<32xf32, strided<[1]>>
  %w = memref.subview %y[32] [32] [1] : memref<96xf32> to memref<32xf32, strided<[1], offset: 32>>
  memref.copy %s, %w : memref<32xf32, strided<[1]>> to memref<32xf32, strided<[1], offset: 32>>
  return
}

// Functions on the CPU stay as they are.
// CHECK-LABEL: func.func @on_cpu
// CHECK-NEXT: memref.copy
// CHECK-NOT: gpu.launch
func.func @on_cpu(%x: memref<4xf32>, %y: memref<4xf32>) attributes {locus.device = #locus.device<cpu>} {
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return
}
