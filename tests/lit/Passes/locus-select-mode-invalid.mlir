// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-select-mode=mode=eval
// RUN: not locus-opt %s -split-input-file --locus-select-mode=mode=test 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: --locus-select-mode: mode must be train or eval, not 'test'

locus.graph @unpaired {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error @+1 {{no op is marked locus.eval_of = 3, the evaluation value of this one}}
  %t = locus.relu %x {locus.eval_value = 3 : i64} : tensor<4xf32>
  locus.output "y" = %t : tensor<4xf32>
}

// -----

locus.graph @bad_operand {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error @+1 {{locus.eval_operand 2 is not an operand of this op}}
  %d = locus.mul %x, %x {locus.eval_operand = 2 : i64} : tensor<4xf32>
  locus.output "y" = %d : tensor<4xf32>
}
