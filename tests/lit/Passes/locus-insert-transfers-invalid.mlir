// RUN: locus-opt %s -split-input-file -verify-diagnostics --locus-insert-transfers

// expected-error@+1 {{'locus.graph' op is not placed; run --locus-place-devices first}}
locus.graph @unplaced {
  %x = locus.input "x" : tensor<4xf32>
}

// -----

locus.graph @partly attributes {locus.policy = "auto", locus.targets = [#locus.device<cpu>]} {
  // expected-error@+1 {{has no locus.device; run --locus-place-devices first}}
  %x = locus.input "x" : tensor<4xf32>
}

// -----

#cpu = #locus.device<cpu>
#gpu = #locus.device<cuda:0>
#why = #locus.placement<kind = follows_operands>

// Strict never inserts a copy the user did not write.
locus.graph @strict attributes {locus.policy = "strict", locus.targets = [#cpu, #gpu]} {
  // expected-note@+1 {{input "x" is here}}
  %x = locus.input "x" {locus.device = #cpu, locus.placement = #why} : tensor<4xf32>
  // expected-error@+1 {{'locus.relu' op reads input "x" on cpu but runs on cuda:0; the strict policy inserts no copy the user did not write}}
  %0 = locus.relu %x {locus.device = #gpu, locus.placement = #why} : tensor<4xf32>
}
