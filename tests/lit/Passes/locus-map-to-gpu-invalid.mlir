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
