// A plain elementwise chain and a reduction over columns, for
// locus-compile-ptx.test.
locus.graph @ew {
  %x = locus.input "x" : tensor<1000x100xf32> on <cuda:0>
  %r = locus.relu %x : tensor<1000x100xf32>
  %s = locus.add %r, %x : tensor<1000x100xf32>
  %c = locus.sum %x axes [0] : tensor<1000x100xf32> -> tensor<100xf32>
  locus.output "s" = %s : tensor<1000x100xf32>
  locus.output "c" = %c : tensor<100xf32>
}
