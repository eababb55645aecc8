// Malformed attributes are rejected with a message at the attribute.
// RUN: locus-opt %s -split-input-file -verify-diagnostics

locus.graph @g {
  // expected-error@+1 {{unknown device 'gpu'; expected 'cpu' or 'cuda:N'}}
  %x = locus.input "x" : tensor<4xf32> on #locus.device<gpu>
}

// -----

locus.graph @g {
  // expected-error@+1 {{expected ':'}}
  %x = locus.input "x" : tensor<4xf32> on #locus.device<cuda>
}

// -----

locus.graph @g {
  // expected-error@+1 {{CUDA device index -1 is out of range; expected 0 to 65535}}
  %x = locus.input "x" : tensor<4xf32> on #locus.device<cuda:-1>
}

// -----

locus.graph @g {
  // expected-error@+1 {{unknown initialiser 'gaussian'; expected 'full', 'uniform' or 'normal'}}
  %w = locus.state "w" parameter : tensor<4xf32> init <gaussian(0.0, 1.0)>
}

// -----

locus.graph @g {
  // expected-error@+1 {{normal(0.0, -1.0) needs a standard deviation that is not negative}}
  %w = locus.state "w" parameter : tensor<4xf32> init <normal(0.0, -1.0), seed = 3>
}

// -----

locus.graph @g {
  // expected-error@+1 {{uniform(1.0, -1.0) needs a lower bound that is not above the upper}}
  %w = locus.state "w" parameter : tensor<4xf32> init <uniform(1.0, -1.0), seed = 3>
}

// -----

locus.graph @g {
  // expected-error@+1 {{expected ','}}
  %w = locus.state "w" parameter : tensor<4xf32> init <uniform(-1.0, 1.0)>
}

// -----

locus.graph @g {
  // expected-error@+2 {{unexpected decimal integer literal for a floating point value}}
  // expected-note@+1 {{add a trailing dot to make the literal a float}}
  %w = locus.state "w" parameter : tensor<4xf32> init <full(3)>
}

// -----

locus.graph @g {
  // expected-error@+2 {{expected ::locus::PlacementKind to be one of: pinned, follows_operands, no_kernel, cost, colocated, soft}}
  // expected-error@+1 {{failed to parse Locus_PlacementAttr parameter 'kind'}}
  %x = locus.input "x" {placement = #locus.placement<kind = guessed>} : tensor<4xf32>
}
