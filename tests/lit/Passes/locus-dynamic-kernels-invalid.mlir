// --locus-dynamic-kernels refuses a kernel whose dims contradict
// themselves: a loop walked by two different dynamic sizes.
// RUN: locus-opt %s --pass-pipeline='builtin.module(func.func(locus-dynamic-kernels))' -verify-diagnostics -split-input-file

#id = affine_map<(d0) -> (d0)>
func.func @k(%a: tensor<8xf32> {locus.dims = affine_map<()[s0, s1] -> (s0)>},
             %b: tensor<8xf32> {locus.dims = affine_map<()[s0, s1] -> (s1)>},
             %sizes: tensor<2xi64> {locus.sizes}) -> tensor<8xf32>
    attributes {locus.symbols = [["batch", 8], ["seq", 8]]} {
  %e = tensor.empty() : tensor<8xf32>
  // expected-error@+1 {{'linalg.generic' op has a loop that is both batch and seq}}
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// expected-error@+1 {{'func.func' op locus.symbols must be a list of [name, bound] pairs}}
func.func @k(%a: tensor<8xf32> {locus.dims = affine_map<()[s0] -> (s0)>},
             %sizes: tensor<1xi64> {locus.sizes}) -> tensor<8xf32>
    attributes {locus.symbols = ["batch"]} {
  return %a : tensor<8xf32>
}

// -----

// A value of dynamic size put at a window of a static dimension (the
// graph verifier refuses it first; here a kernel written by hand).
func.func @k(%a: tensor<8x4xf32> {locus.dims = affine_map<()[s0] -> (s0, 4)>},
             %sizes: tensor<1xi64> {locus.sizes}) -> tensor<16x4xf32>
    attributes {locus.symbols = [["batch", 8]]} {
  %e = tensor.empty() : tensor<16x4xf32>
  // expected-error@+1 {{'tensor.insert_slice' op takes a window of dimension 0 of [16, 4] as [batch, 4]: a window of dynamic size fills its dimension whole}}
  %r = tensor.insert_slice %a into %e[1, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<16x4xf32>
  return %r : tensor<16x4xf32>
}
