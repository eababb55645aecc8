// Every shape rule and verifier rejects bad IR with a message that names the
// shapes involved. A shape rule's message comes first; MLIR then adds
// "failed to infer returned types" from the InferTypeOpInterface verifier.
// RUN: locus-opt %s -split-input-file -verify-diagnostics

locus.graph @g {
  %a = locus.input "a" : tensor<8x16xf32>
  %b = locus.input "b" : tensor<15x4xf32>
  // expected-error@+2 {{cannot multiply [8, 16] by [15, 4]: inner dimensions 16 and 15 differ}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.matmul %a, %b : tensor<8x16xf32>, tensor<15x4xf32> -> tensor<8x4xf32>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<2x8x16xf32>
  %b = locus.input "b" : tensor<3x16x4xf32>
  // expected-error@+2 {{batch dimensions of [2, 8, 16] and [3, 16, 4] differ}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.matmul %a, %b : tensor<2x8x16xf32>, tensor<3x16x4xf32> -> tensor<2x8x4xf32>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<16xf32>
  %b = locus.input "b" : tensor<16x4xf32>
  // expected-error@+2 {{multiplies [16] by [16, 4]; expected two operands of the same rank, at least 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.matmul %a, %b : tensor<16xf32>, tensor<16x4xf32> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<8x16xf32>
  %b = locus.input "b" : tensor<16x4xf32>
  // expected-error@+2 {{'locus.matmul' op inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<8x5xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x5xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<100x10xf32>
  %w = locus.input "w" : tensor<2x9xf32>
  // expected-error@+2 {{input [100, 10] has 10 features but weight [2, 9] expects 9}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.linear %x, %w : tensor<100x10xf32>, tensor<2x9xf32> -> tensor<100x2xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<100x10xf32>
  %w = locus.input "w" : tensor<2x10xf32>
  %b = locus.input "b" : tensor<3xf32>
  // expected-error@+2 {{bias [3] does not match weight [2, 10]; expected [2]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.linear %x, %w, %b : tensor<100x10xf32>, tensor<2x10xf32>, tensor<3xf32> -> tensor<100x2xf32>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<4x8xf32>
  %b = locus.input "b" : tensor<4x9xf32>
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "locus.add"(%a, %b) : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
}

// -----

locus.graph @g {
  %l = locus.input "l" : tensor<4xi64>
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4xi64>'}}
  %0 = locus.exp %l : tensor<4xi64>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<4x8xf32>
  %b = locus.input "b" : tensor<4x7xf32>
  // expected-error@+1 {{requires all operands to have the same type}}
  %0 = "locus.cmp"(%a, %b) {predicate = 2 : i32} : (tensor<4x8xf32>, tensor<4x7xf32>) -> tensor<4x8xi1>
}

// -----

locus.graph @g {
  %m = locus.input "m" : tensor<4x7xi1>
  %a = locus.input "a" : tensor<4x8xf32>
  // expected-error@+1 {{condition [4, 7] and values [4, 8] have different shapes}}
  %0 = locus.select %m, %a, %a : tensor<4x7xi1>, tensor<4x8xf32>
}

// -----

locus.graph @g {
  %b = locus.input "b" : tensor<3xf32>
  // expected-error@+2 {{cannot broadcast [3] to [100, 2]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.broadcast %b [100, 2] : tensor<3xf32> -> tensor<100x2xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<3x5xf32>
  // expected-error@+2 {{permutation [0, 0] is not a permutation of the dimensions of [3, 5]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.transpose %x [0, 0] : tensor<3x5xf32> -> tensor<3x3xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<3x5xf32>
  // expected-error@+2 {{cannot reshape [3, 5] (15 elements) to [4, 4] (16 elements)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.reshape %x [4, 4] : tensor<3x5xf32> -> tensor<4x4xf32>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<2x3xf32>
  %b = locus.input "b" : tensor<3x3xf32>
  // expected-error@+2 {{cannot concatenate [2, 3] and [3, 3] along axis 1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<2x3xf32>
  // expected-error@+2 {{axis 2 is out of range for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4x8xf32>
  // expected-error@+2 {{window offsets [0, 6] sizes [4, 3] strides [1, 1] does not fit in input [4, 8] (dimension 1)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.slice %x offsets [0, 6] sizes [4, 3] strides [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4x8xf32>
  // expected-error@+2 {{sizes has 1 entries; expected 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.slice %x offsets [0, 0] sizes [4] strides [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<8x4xf32>
  // expected-error@+2 {{axis 2 is out of range for input [8, 4] of rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.sum %x axes [2] : tensor<8x4xf32> -> tensor<8x4xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<8x4xf32>
  // expected-error@+2 {{axis 1 is listed twice}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.mean %x axes [1, 1] : tensor<8x4xf32> -> tensor<8xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<8x4xf32>
  // expected-error@+1 {{axis 2 is out of range for input [8, 4] of rank 2}}
  %0 = locus.softmax %x axis 2 : tensor<8x4xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x4x9x9xf32>
  %w = locus.input "w" : tensor<6x3x3x3xf32>
  // expected-error@+2 {{weight [6, 3, 3, 3] expects 3 input channels but input [2, 4, 9, 9] has 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x4x9x9xf32>, tensor<6x3x3x3xf32> -> tensor<2x6x7x7xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x4x9x9xf32>
  %w = locus.input "w" : tensor<6x1x3x3xf32>
  // expected-error@+2 {{groups 3 must divide both the 4 input channels and the 6 output channels}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 3 : tensor<2x4x9x9xf32>, tensor<6x1x3x3xf32> -> tensor<2x6x7x7xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x4x5x5xf32>
  %w = locus.input "w" : tensor<6x4x7x7xf32>
  // expected-error@+2 {{kernel [7, 7] with dilation [1, 1] is larger than the padded input [5, 5] + padding [0, 0]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x4x5x5xf32>, tensor<6x4x7x7xf32> -> tensor<2x6x1x1xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x4x9x9xf32>
  %w = locus.input "w" : tensor<6x4x3x3xf32>
  // expected-error@+2 {{stride [0, 1] and dilation [1, 1] must be positive and padding [0, 0] non-negative}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d %x, %w stride [0, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x7x7xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4x9x9xf32>
  %w = locus.input "w" : tensor<6x4x3x3xf32>
  // expected-error@+2 {{expects an NCHW input of rank 4, got [4, 9, 9]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<4x9x9xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x7x7xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x4x9x9xf32>
  // expected-error@+2 {{padding [2, 2] must be between 0 and half of kernel_size [3, 3]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.max_pool2d %x kernel [3, 3] stride [1, 1] padding [2, 2] : tensor<2x4x9x9xf32> -> tensor<2x4x11x11xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x4x3x3xf32>
  // expected-error@+2 {{kernel_size [4, 4] does not fit input [2, 4, 3, 3] with padding [0, 0]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.avg_pool2d %x kernel [4, 4] stride [1, 1] padding [0, 0] : tensor<2x4x3x3xf32> -> tensor<2x4x1x1xf32>
}

// -----

locus.graph @g {
  %p = locus.input "p" : tensor<100x2xf32>
  %y = locus.input "y" : tensor<100x3xf32>
  // expected-error@+1 {{'locus.mse_loss' op requires all operands to have the same type}}
  %0 = "locus.mse_loss"(%p, %y) {reduction = 0 : i32} : (tensor<100x2xf32>, tensor<100x3xf32>) -> tensor<f32>
}

// -----

locus.graph @g {
  %logits = locus.input "logits" : tensor<32x10xf32>
  %labels = locus.input "labels" : tensor<16xi64>
  // expected-error@+2 {{labels [16] do not match logits [32, 10]; expected [32]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.cross_entropy %logits, %labels mean : tensor<32x10xf32>, tensor<16xi64> -> tensor<f32>
}

// -----

locus.graph @g {
  %logits = locus.input "logits" : tensor<32x10xf32>
  %labels = locus.input "labels" : tensor<32xf32>
  // expected-error@+1 {{operand #1 must be statically shaped tensor of 64-bit signless integer values, but got 'tensor<32xf32>'}}
  %0 = locus.cross_entropy %logits, %labels mean : tensor<32x10xf32>, tensor<32xf32> -> tensor<f32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{copies from cpu to the same device}}
  %0 = locus.copy <cpu> to <cpu>, %x : tensor<4xf32>
}

// -----

locus.graph @g {
  // expected-note@+1 {{first used here}}
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{name 'x' is already used}}
  %w = locus.state "x" parameter : tensor<4xf32> init <full(0.0)>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  locus.output "r" = %x : tensor<4xf32>
  // expected-note@-1 {{first used here}}
  // expected-error@+1 {{name 'r' is already used}}
  locus.output "r" = %x : tensor<4xf32>
}

// -----

locus.graph @g {
  // expected-error@+1 {{needs a non-empty name}}
  %x = locus.input "" : tensor<4xf32>
}

// -----

locus.graph @g {
  // expected-error@+1 {{must be statically shaped tensor}}
  %x = locus.input "x" : tensor<?x4xf32>
}

// -----

module @outside {
  %x = "locus.input"() {name = "x"} : () -> tensor<4xf32>
  // expected-error@+1 {{'locus.output' op expects parent op 'locus.graph'}}
  "locus.output"(%x) {name = "r"} : (tensor<4xf32>) -> ()
}


// -----

locus.graph @g {
  %g = locus.input "g" : tensor<2x4x5x5xf32>
  %w = locus.input "w" : tensor<4x3x3x3xf32>
  // expected-error@+2 {{grad [2, 4, 5, 5] does not match the forward result [2, 4, 6, 6]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d_input_grad %g, %w input_shape [2, 3, 6, 6] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x6x6xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x3x6x6xf32>
  %g = locus.input "g" : tensor<2x4x6x6xf32>
  // expected-error@+2 {{weight [4, 2, 3, 3] expects 2 input channels but input [2, 3, 6, 6] has 3}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.conv2d_weight_grad %x, %g weight_shape [4, 2, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x6x6xf32>, tensor<2x4x6x6xf32> -> tensor<4x2x3x3xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x3x6x6xf32>
  %g = locus.input "g" : tensor<2x3x2x2xf32>
  // expected-error@+2 {{grad [2, 3, 2, 2] does not match the forward result [2, 3, 3, 3]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.max_pool2d_grad %x, %g kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x6x6xf32>, tensor<2x3x2x2xf32> -> tensor<2x3x6x6xf32>
}

// -----

locus.graph @g {
  %s = locus.input "s" : tensor<4x3xf32>
  // expected-error@+2 {{grad [4, 3] at offsets [0, 1] strides [1, 3] does not fit in shape [4, 7] (dimension 1)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.slice_grad %s shape [4, 7] offsets [0, 1] strides [1, 3] : tensor<4x3xf32> -> tensor<4x7xf32>
}

// -----

locus.graph @g {
  %g = locus.input "g" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<5xi64>
  // expected-error@+2 {{grad [4, 3] has no slice per index [5] at axis 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_grad %g, %l axis 0 extent 9 : tensor<4x3xf32>, tensor<5xi64> -> tensor<9x3xf32>
}

// -----

locus.graph @g {
  %g = locus.input "g" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<3xi64>
  // expected-error@+2 {{axis 2 and indices [3] do not fit in grad [4, 3]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_grad %g, %l axis 2 extent 9 : tensor<4x3xf32>, tensor<3xi64> -> tensor<4x9xf32>
}

// -----

locus.graph @g {
  %g = locus.input "g" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<4xi64>
  // expected-error@+2 {{extent must be positive, got 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_grad %g, %l axis 0 extent 0 : tensor<4x3xf32>, tensor<4xi64> -> tensor<0x3xf32>
}

// -----

locus.graph @g {
  %g = locus.input "g" : tensor<4x3xbf16>
  %l = locus.input "l" : tensor<4xi64>
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %0 = locus.gather_grad %g, %l axis 0 extent 9 : tensor<4x3xbf16>, tensor<4xi64> -> tensor<9x3xbf16>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<5x2xi64>
  // expected-error@+2 {{indices [5, 2] must have the shape of input [4, 3] but along axis 1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_elements %x, %l axis 1 : tensor<4x3xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<4xi64>
  // expected-error@+2 {{indices [4] must have the shape of input [4, 3] but along axis 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_elements %x, %l axis 0 : tensor<4x3xf32>, tensor<4xi64> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<4x3xi64>
  // expected-error@+2 {{axis 2 is out of range for input [4, 3] of rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_elements %x, %l axis 2 : tensor<4x3xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
}

// -----

locus.graph @g {
  %g = locus.input "g" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<4x2xi64>
  // expected-error@+2 {{indices [4, 2] must have the shape of grad [4, 3]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_elements_grad %g, %l axis 1 extent 5 : tensor<4x3xf32>, tensor<4x2xi64> -> tensor<4x5xf32>
}

// -----

locus.graph @g {
  %g = locus.input "g" : tensor<4x3xf32>
  %l = locus.input "l" : tensor<4x3xi64>
  // expected-error@+2 {{axis -1 is out of range for grad [4, 3]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather_elements_grad %g, %l axis -1 extent 5 : tensor<4x3xf32>, tensor<4x3xi64> -> tensor<4x5xf32>
}

// -----

locus.graph @g {
  %l = locus.input "l" : tensor<4xi64>
  // expected-error@+2 {{classes must be positive, got 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.one_hot %l classes 0 : tensor<4xi64> -> tensor<4x0xf32>
}

// -----

locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(0.0)>
  %d = locus.input "d" : tensor<4xf32>
  %lr = locus.input "lr" : tensor<f32>
  // expected-error@+2 {{with momentum needs a momentum buffer operand}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.sgd %w, %d lr %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(0.0)>
  // expected-note@+1 {{prior use here}}
  %d = locus.input "d" : tensor<4xf32>
  // The learning rate is a tensor<f32>; the parser says so.
  // expected-error@+1 {{use of value '%d' expects different type than prior uses: 'tensor<f32>' vs 'tensor<4xf32>'}}
  %0 = locus.sgd %w, %d lr %d momentum 0.0 weight_decay 0.0 : tensor<4xf32> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(0.0)>
  %d = locus.input "d" : tensor<4xf32>
  %t = locus.input "t" : tensor<f32>
  // The results are inferred while parsing: the rule's message alone.
  // expected-error@+1 {{betas must be in [0, 1), got 1.000000}}
  %0:3 = locus.adam %w, %d, %w, %w, %t lr %t betas [0.9, 1.0] eps 1.0e-8 weight_decay 0.0 : tensor<4xf32>, tensor<f32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{writes a value that is not a locus.state}}
  locus.assign %x = %x : tensor<4xf32>, tensor<4xf32>
}

// -----

locus.graph @g {
  %w = locus.state "w" parameter : tensor<4xf32> init <full(0.0)>
  %x = locus.input "x" : tensor<4xf32>
  // expected-note@+1 {{first assigned here}}
  locus.assign %w = %x : tensor<4xf32>, tensor<4xf32>
  // expected-error@+1 {{assigns state "w" a second time}}
  locus.assign %w = %x : tensor<4xf32>, tensor<4xf32>
}


// -----

locus.graph @g {
  %x = locus.input "x" : tensor<4xf32>
  // expected-error@+1 {{'locus.cast' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer values, but got 'tensor<4xf64>'}}
  %0 = locus.cast %x to f64 : tensor<4xf32> -> tensor<4xf64>
}

// -----

locus.graph @g {
  %t = locus.input "t" : tensor<2xf32>
  // expected-error@+1 {{operand #0 must be 0D tensor of 32-bit float values}}
  %0 = locus.random uniform [4] seed 1 step %t : tensor<2xf32> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %w = locus.input "w" : tensor<10x3xf32>
  %i = locus.input "i" : tensor<4xi64>
  // expected-error@+2 {{'locus.gather' op axis 2 is out of range for input [10, 3] of rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather %w, %i axis 2 : tensor<10x3xf32>, tensor<4xi64> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %t = locus.input "t" : tensor<f32>
  // expected-error@+2 {{shape [4, -1] has a negative dimension}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.random normal [4, -1] seed 1 step %t : tensor<f32> -> tensor<4x1xf32>
}

// -----

locus.graph @g {
  %w = locus.input "w" : tensor<10x3xf32>
  %i = locus.input "i" : tensor<4xi64>
  // expected-error@+2 {{'locus.gather' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.gather %w, %i axis 0 : tensor<10x3xf32>, tensor<4xi64> -> tensor<4xf32>
}

// -----

locus.graph @g {
  %t = locus.input "t" : tensor<f32>
  // expected-error@+2 {{'locus.random' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x7xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = locus.random uniform [4, 8] seed 1 step %t : tensor<f32> -> tensor<4x7xf32>
}

// -----

locus.graph @g {
  // expected-error@+1 {{'locus.all_reduce' op reduces no tensors}}
  "locus.all_reduce"() {bucket = 0 : i64} : () -> ()
}

// -----

locus.graph @g {
  %a = locus.input "a" : tensor<4xf32>
  // expected-error@+1 {{'locus.all_reduce' op results must have the types of its operands}}
  %0 = "locus.all_reduce"(%a) {bucket = 0 : i64} : (tensor<4xf32>) -> tensor<5xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<6xf32>
  %c = locus.input "c" : tensor<6xf32>
  // expected-error@+1 {{'locus.batch_norm_train' op input must be [N, C, ...], got [6]}}
  %y, %m, %v = locus.batch_norm_train %x, %c, %c eps 1.0e-05 : tensor<6xf32>, tensor<6xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x3x4x4xf32>
  %c = locus.input "c" : tensor<4xf32>
  // expected-error@+1 {{'locus.batch_norm_train' op weight [4] does not match 3 channels of input [2, 3, 4, 4]}}
  %y, %m, %v = locus.batch_norm_train %x, %c, %c eps 1.0e-05 : tensor<2x3x4x4xf32>, tensor<4xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x3x4x4xf32>
  %c = locus.input "c" : tensor<3xf32>
  // expected-error@+1 {{'locus.batch_norm_train' op eps must be positive}}
  %y, %m, %v = locus.batch_norm_train %x, %c, %c eps 0.0 : tensor<2x3x4x4xf32>, tensor<3xf32>
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x3x4x4xf32>
  %c = locus.input "c" : tensor<3xf32>
  %v = locus.input "v" : tensor<2xf32>
  // expected-error@+1 {{'locus.batch_norm_train_grad' op failed to verify that all of {mean, var, weight} have same type}}
  %0:3 = "locus.batch_norm_train_grad"(%x, %x, %c, %v, %c) {eps = 1.0e-05 : f64} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
}

// -----

locus.graph @g {
  %x = locus.input "x" : tensor<2x3x4x4xf32>
  %g = locus.input "g" : tensor<2x3x4x5xf32>
  %c = locus.input "c" : tensor<3xf32>
  // expected-error@+1 {{'locus.batch_norm_train_grad' op failed to verify that all of {grad, input} have same type}}
  %0:3 = "locus.batch_norm_train_grad"(%g, %x, %c, %c, %c) {eps = 1.0e-05 : f64} : (tensor<2x3x4x5xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
}
