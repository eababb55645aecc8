// RUN: locus-opt %s --locus-map-to-gpu --split-input-file --verify-diagnostics

// A load left on the host would read device memory.
func.func @host_load(%x: memref<4xf32>, %y: memref<f32>) attributes {locus.device = #locus.device<cuda:0>} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op would read or write device memory on the host; it has no CUDA lowering}}
  %v = memref.load %x[%c0] : memref<4xf32>
  memref.store %v, %y[] : memref<f32>
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @dynamic(%x: memref<?xf32>, %y: memref<?xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  // expected-error @+1 {{has a dynamic loop range; CUDA kernels need static shapes}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @tensors(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> attributes {locus.device = #locus.device<cuda:0>} {
  // expected-error @+1 {{expected bufferized IR}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%y : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// In a kernel with dynamic sizes, an extent that does not come from them
// has no bound to size the launch by.
#id = affine_map<(d0) -> (d0)>
func.func @unbounded(%n: index, %sizes: memref<1xi64>, %y: memref<16xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 16>} {
  %x = memref.alloc(%n) : memref<?xf32>
  %yv = memref.reinterpret_cast %y to offset: [0], sizes: [%n], strides: [1] : memref<16xf32> to memref<?xf32>
  // expected-error @+1 {{'linalg.generic' op has a dynamic loop range (loop 0) with no bound from the graph's dynamic sizes}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<?xf32>) outs(%yv : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// A gather's table of dynamic shape read from the body needs a static
// layout to be viewed at its bounds.
#id = affine_map<(d0) -> (d0)>
func.func @table(%t: memref<16x16xf32>, %sizes: memref<1xi64>, %y: memref<4xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 16>} {
  %c0 = arith.constant 0 : index
  %n64 = memref.load %sizes[%c0] : memref<1xi64>
  %n = arith.index_cast %n64 : i64 to index
  %tv = memref.subview %t[0, 0] [%n, %n] [%n, 1] : memref<16x16xf32> to memref<?x?xf32, strided<[?, 1]>>
  // expected-error @+1 {{'linalg.generic' op reads a buffer of dynamic layout}}
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%y : memref<4xf32>) {
  ^bb0(%b: f32):
    %i = linalg.index 0 : index
    %v = memref.load %tv[%i, %i] : memref<?x?xf32, strided<[?, 1]>>
    linalg.yield %v : f32
  }
  return
}

// -----

// A reshape whose shape the host would read from a buffer it cannot fill
// (not one it stores each extent of): device memory on a GPU.
func.func @reshape(%x: memref<16xf32>, %sizes: memref<1xi64>, %shape: memref<2xindex>, %y: memref<16xf32>) attributes {locus.device = #locus.device<cuda:0>, locus.sizes_arg = 1 : i64, locus.size_bounds = array<i64: 16>} {
  // expected-error @+1 {{'memref.reshape' op reads its shape from a buffer the host cannot read on a GPU; it has no CUDA lowering}}
  %v = memref.reshape %x(%shape) : (memref<16xf32>, memref<2xindex>) -> memref<?x?xf32>
  return
}

// -----

// A scatter-add needs a static count of elements.
func.func @scatter_dynamic(%g: memref<?xf32>, %r: memref<4xf32>, %n: index) attributes {locus.device = #locus.device<cuda:0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' op is a scatter-add of no static extent; it has no CUDA lowering}}
  scf.for %p = %c0 to %n step %c1 {
    %v = memref.load %g[%p] : memref<?xf32>
    %old = memref.load %r[%c0] : memref<4xf32>
    %sum = arith.addf %old, %v : f32
    memref.store %sum, %r[%c0] : memref<4xf32>
  } {locus.scatter_add}
  return
}

// -----

// A marked loop with a store that adds nothing into what it loads is no
// scatter-add: its threads would race.
func.func @scatter_store(%g: memref<4xf32>, %r: memref<4xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{'scf.for' op is no scatter-add: its threads would race (its body must add into what it loads, and only that)}}
  scf.for %p = %c0 to %c4 step %c1 {
    %v = memref.load %g[%p] : memref<4xf32>
    memref.store %v, %r[%c0] : memref<4xf32>
  } {locus.scatter_add}
  return
}

// -----

// Nor is one that writes anything else (a copy).
func.func @scatter_copy(%g: memref<4xf32>, %r: memref<4xf32>) attributes {locus.device = #locus.device<cuda:0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{'scf.for' op is no scatter-add: its threads would race (its body must add into what it loads, and only that)}}
  scf.for %p = %c0 to %c4 step %c1 {
    %v = memref.load %g[%p] : memref<4xf32>
    %old = memref.load %r[%c0] : memref<4xf32>
    %sum = arith.addf %old, %v : f32
    memref.store %sum, %r[%c0] : memref<4xf32>
    memref.copy %g, %r : memref<4xf32> to memref<4xf32>
  } {locus.scatter_add}
  return
}
