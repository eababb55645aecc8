//===- LocusOps.td - the ops of the locus dialect ---------------------------===//
//
// Every op but the sources and the graph container infers its result type
// from its operands and attributes (InferTypeOpAdaptor): the one place where a
// shape rule lives. The C++ frontend calls the same inference before it records
// an op, so a user error is reported at the user's line and nothing is added.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_OPS_TD
#define LOCUS_OPS_TD

include "locus/Dialect/LocusBase.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Locus_F32Tensor : StaticShapeTensorOf<[F32]>;
/// f32, or a 16-bit float (bf16, f16) that computing ops widen to f32
/// (--locus-widen-16bit) and products and convolutions keep as operands.
def Locus_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
def Locus_LabelTensor : StaticShapeTensorOf<[I64]>;
def Locus_BoolTensor : StaticShapeTensorOf<[I1]>;
def Locus_AnyTensor : StaticShapeTensorOf<[F32, BF16, F16, I64, I32, I1]>;
def Locus_ScalarF32 : 0DTensorOf<[F32]>;
/// A tensor<f32> operand whose type the assembly format need not spell.
def Locus_ScalarF32Operand : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}

class Locus_Op<string mnemonic, list<Trait> traits = []>
    : Op<Locus_Dialect, mnemonic, traits>;

/// An op whose result type follows from its operands and attributes by a shape
/// rule written in ShapeRules.cpp.
class Locus_InferOp<string mnemonic, list<Trait> traits = []>
    : Locus_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])>;

/// An op whose result has the type of its operands; ODS derives the inference.
class Locus_SameTypeOp<string mnemonic, list<Trait> traits = []>
    : Locus_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                              InferTypeOpInterface])>;

//===----------------------------------------------------------------------===//
// The graph and its outputs
//===----------------------------------------------------------------------===//

def Locus_GraphOp : Locus_Op<"graph", [Locus_Structural, Symbol,
    IsolatedFromAbove, NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "A recorded dataflow graph.";
  let description = [{
    Holds one recorded graph, in recording order (which is a topological
    order). Its interface is the `locus.input`, `locus.state` and
    `locus.output` ops in its body; names are unique within each kind.

    ```mlir
    locus.graph @train_step {
      %x = locus.input "x" : tensor<100x10xf32>
      %w = locus.state "fc.weight" parameter : tensor<2x10xf32> init <uniform(-0.3, 0.3), seed = 1>
      ...
      locus.output "loss" = %l : tensor<f32>
    }
    ```

    Dynamic sizes: `locus.symbols = [["batch", 256], ...]` names the sizes
    a run gives and their bounds. Types stay static, sized at the bounds;
    an input's `locus.dims` (an affine map over the sizes, s0 the first)
    says which of its dimensions are dynamic (so does a reshape's or a
    broadcast's where the shapes alone cannot tell, a `locus.slice` that
    takes a static value's leading window at the run's sizes, and a
    `locus.random` drawn for a value of dynamic shape), and the verifier
    finds the dims of every other value by probing its op's shape rule,
    refusing what does not hold for every size up to the bounds:

    ```mlir
    locus.graph @mlp attributes {locus.symbols = [["batch", 256]]} {
      %x = locus.input "x" {locus.dims = affine_map<()[s0] -> (s0, 784)>} : tensor<256x784xf32>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  // After the ops inside are verified: the names checked here must exist.
  let hasRegionVerifier = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Locus_OutputOp : Locus_Op<"output", [Locus_Structural,
                                         HasParent<"GraphOp">]> {
  let summary = "Names a value as an output of the graph.";
  let description = [{
    ```mlir
    locus.output "loss" = %l : tensor<f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Locus_AnyTensor:$value);
  let assemblyFormat = "$name `=` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

def Locus_InputOp : Locus_Op<"input",
    [Locus_Structural, DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A value fed to the graph at each run.";
  let description = [{
    A named graph input. With `on`, the input is created on that device and
    the device is a pin under every policy.

    ```mlir
    %x = locus.input "x" : tensor<100x10xf32>
    %y = locus.input "y" : tensor<100x2xf32> on <cuda:0>
    ```

    Attributes of this dialect print in their short form (`<cuda:0>` for
    `#locus.device<cuda:0>`); both forms parse. The type comes before them
    so that a full-form attribute never runs into the op's `:`.
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<Locus_DeviceAttr>:$device);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result) (`on` $device^)?";
  let hasVerifier = 1;
}

def Locus_StateOp : Locus_Op<"state",
    [Locus_Structural, DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Persistent state: a parameter or an optimizer buffer.";
  let description = [{
    A named tensor that persists across runs. `parameter` marks trainable
    weights, `buffer` optimizer state and other persistent values. `init` says
    how the first value is made; with `on` the state is created on (pinned
    to) that device. State moves to its device once, at load.

    ```mlir
    %w = locus.state "fc.weight" parameter : tensor<2x10xf32> init <uniform(-0.316, 0.316), seed = 1>
    %m = locus.state "adam.m0" buffer : tensor<2x10xf32> init <full(0.0)> on <cuda:0>
    ```
  }];
  let arguments = (ins StrAttr:$name, Locus_StateRole:$role,
                       Locus_InitAttr:$init,
                       OptionalAttr<Locus_DeviceAttr>:$device);
  let results = (outs Locus_F32Tensor:$result);
  let assemblyFormat = [{
    $name $role attr-dict `:` type($result) `init` $init (`on` $device^)?
  }];
  let hasVerifier = 1;
}

def Locus_ConstantOp : Locus_Op<"constant", [Locus_Structural, ConstantLike, Pure,
                                             InferTypeOpAdaptor]> {
  let summary = "A constant tensor.";
  let description = [{
    ```mlir
    %c = locus.constant dense<2.0> : tensor<f32>
    %d = locus.constant dense<[1.0, 2.0]> : tensor<2xf32> on <cuda:0>
    ```
  }];
  let arguments = (ins ElementsAttr:$value,
                       OptionalAttr<Locus_DeviceAttr>:$device);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = "$value (`on` $device^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Locus_UnaryOp<string mnemonic, string formula>
    : Locus_SameTypeOp<mnemonic, [Locus_Elementwise]> {
  let summary = "Elementwise " # formula # ".";
  let description = [{
    Applies `}] # formula # [{` to every element of an f32 tensor.

    ```mlir
    %r = locus.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Locus_NegOp : Locus_UnaryOp<"neg", "-x">;
def Locus_ExpOp : Locus_UnaryOp<"exp", "e^x">;
def Locus_LogOp : Locus_UnaryOp<"log", "ln(x)">;
def Locus_SqrtOp : Locus_UnaryOp<"sqrt", "sqrt(x)">;
def Locus_ReluOp : Locus_UnaryOp<"relu", "max(x, 0)">;
def Locus_SigmoidOp : Locus_UnaryOp<"sigmoid", "1 / (1 + e^-x)">;
def Locus_TanhOp : Locus_UnaryOp<"tanh", "tanh(x)">;
def Locus_ErfOp : Locus_UnaryOp<"erf", "erf(x)">;
def Locus_SinOp : Locus_UnaryOp<"sin", "sin(x)">;
def Locus_CosOp : Locus_UnaryOp<"cos", "cos(x)">;
def Locus_AbsOp : Locus_UnaryOp<"abs", "|x|">;
def Locus_FloorOp : Locus_UnaryOp<"floor", "the largest integer not above x">;
def Locus_CeilOp : Locus_UnaryOp<"ceil", "the smallest integer not below x">;
def Locus_RoundOp : Locus_UnaryOp<"round",
    "x at the nearest integer, halves to the even one">;
def Locus_RsqrtOp : Locus_UnaryOp<"rsqrt", "1 / sqrt(x)">;
def Locus_ReciprocalOp : Locus_UnaryOp<"reciprocal", "1 / x">;
def Locus_SiluOp : Locus_UnaryOp<"silu", "x * sigmoid(x)">;

def Locus_GeluOp : Locus_SameTypeOp<"gelu", [Locus_Elementwise]> {
  let summary = "Elementwise GELU, exact or with PyTorch's tanh form.";
  let description = [{
    `x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))` for every element, as
    `torch.nn.functional.gelu(x)`; with `tanh`, PyTorch's
    `approximate='tanh'`: `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.

    ```mlir
    %r = locus.gelu %x : tensor<4x8xf32>
    %t = locus.gelu %x {tanh} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, UnitAttr:$tanh);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Locus_PowOp : Locus_SameTypeOp<"pow", [Locus_Elementwise]> {
  let summary = "Elementwise power by a scalar exponent.";
  let description = [{
    `x ^ exponent` for every element.

    ```mlir
    %sq = locus.pow %x, 2.0 : tensor<100x2xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, F64Attr:$exponent);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = "$input `,` $exponent attr-dict `:` type($result)";
}

class Locus_BinaryOp<string mnemonic, string formula>
    : Locus_SameTypeOp<mnemonic, [Locus_Elementwise]> {
  let summary = "Elementwise " # formula # ".";
  let description = [{
    `}] # formula # [{` of two f32 tensors of the same shape. Broadcasting is
    explicit: the frontend records a `locus.broadcast` first.

    ```mlir
    %r = locus.}] # mnemonic # [{ %a, %b : tensor<100x2xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$lhs, Locus_FloatTensor:$rhs);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Locus_AddOp : Locus_BinaryOp<"add", "a + b">;
def Locus_SubOp : Locus_BinaryOp<"sub", "a - b">;
def Locus_MulOp : Locus_BinaryOp<"mul", "a * b">;
def Locus_DivOp : Locus_BinaryOp<"div", "a / b">;
def Locus_MaximumOp : Locus_BinaryOp<"maximum", "max(a, b)">;
def Locus_MinimumOp : Locus_BinaryOp<"minimum", "min(a, b)">;
def Locus_FmodOp : Locus_BinaryOp<"fmod",
    "a - b trunc(a / b), exactly (C's fmod: the sign of a)">;

def Locus_CmpOp : Locus_InferOp<"cmp", [Locus_Elementwise, SameTypeOperands]> {
  let summary = "Elementwise comparison, giving an i1 tensor.";
  let description = [{
    Compares two tensors of one type (f32, i64, i32 or i1). Floats compare
    ordered (false when either is NaN) except `ne`, which is true for NaN,
    as in PyTorch; integers compare signed, booleans unsigned.

    ```mlir
    %m = locus.cmp gt, %a, %b : tensor<4x4xf32>
    %e = locus.cmp eq, %i, %j : tensor<4x5xi64>
    ```
    The result has the operands' shape and element type `i1`.
  }];
  let arguments = (ins Locus_CmpPredicate:$predicate,
                       Locus_AnyTensor:$lhs, Locus_AnyTensor:$rhs);
  let results = (outs Locus_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Locus_SelectOp : Locus_Op<"select",
    [Locus_Elementwise, Pure, AllTypesMatch<["true_value", "false_value", "result"]>,
     DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Elementwise choice by an i1 mask.";
  let description = [{
    `cond ? a : b` for every element; all three have the same shape, and the
    values one element type (f32, i64, i32 or i1).

    ```mlir
    %r = locus.select %m, %a, %b : tensor<4x4xi1>, tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Locus_BoolTensor:$condition,
                       Locus_AnyTensor:$true_value,
                       Locus_AnyTensor:$false_value);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:`
    type($condition) `,` type($result)
  }];
  let hasVerifier = 1;
}

def Locus_CastOp : Locus_InferOp<"cast", [Locus_Elementwise]> {
  let summary = "Converts the elements to another type, as Tensor.to(dtype).";
  let description = [{
    Between f32, i64, i32 and i1, with PyTorch's rules: f32 to an integer
    truncates toward zero (a value out of the integer's range, or NaN, gives
    an unspecified integer, as in PyTorch), anything to i1 is `x != 0` (NaN
    is true), i1 to a number is 0 or 1, i32 to i64 keeps the sign and i64 to
    i32 keeps the low 32 bits (wraps). Casting to the same type is the
    identity. Only f32
    to f32 has a gradient; a cast to or from an integer stops it, as
    PyTorch's integer tensors do.

    ```mlir
    %f = locus.cast %ids to f32 : tensor<4x5xi64> -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, TypeAttr:$element_type);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input `to` $element_type attr-dict `:` type($input) `->` type($result)
  }];
}

def Locus_BroadcastOp : Locus_InferOp<"broadcast", [Locus_Elementwise]> {
  let summary = "Broadcasts a tensor to a shape, by numpy's rules.";
  let description = [{
    Dimensions are aligned from the right; each input dimension is 1 or equal
    to the target's; missing leading dimensions are added.

    ```mlir
    %b = locus.broadcast %bias [100, 2] : tensor<2xf32> -> tensor<100x2xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input $shape attr-dict `:` type($input) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra and layout
//===----------------------------------------------------------------------===//

def Locus_MatmulOp : Locus_InferOp<"matmul"> {
  let summary = "Matrix product, batched over equal leading dimensions.";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`; both operands have the same
    rank (at least 2) and the same leading (batch) dimensions.

    ```mlir
    %c = locus.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$lhs, Locus_FloatTensor:$rhs);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Locus_LinearOp : Locus_InferOp<"linear"> {
  let summary = "x * W^T + b, as torch.nn.functional.linear.";
  let description = [{
    `input [..., in]`, `weight [out, in]`, optional `bias [out]` gives
    `[..., out]`.

    ```mlir
    %y = locus.linear %x, %w, %b : tensor<100x10xf32>, tensor<2x10xf32>, tensor<2xf32> -> tensor<100x2xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, Locus_FloatTensor:$weight,
                       Optional<Locus_FloatTensor>:$bias);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
}

def Locus_TransposeOp : Locus_InferOp<"transpose"> {
  let summary = "Permutes dimensions.";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %t = locus.transpose %x [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
}

def Locus_ReshapeOp : Locus_InferOp<"reshape"> {
  let summary = "Gives a tensor a new shape with the same element count.";
  let description = [{
    Row-major; `flatten` is a reshape.

    ```mlir
    %f = locus.reshape %x [16, 784] : tensor<16x16x7x7xf32> -> tensor<16x784xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input $shape attr-dict `:` type($input) `->` type($result)
  }];
}

def Locus_ConcatOp : Locus_InferOp<"concat"> {
  let summary = "Joins tensors along one axis.";
  let description = [{
    All inputs have the same rank, element type and dimensions except `axis`.

    ```mlir
    %c = locus.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Locus_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` functional-type($inputs, $result)
  }];
}

def Locus_SliceOp : Locus_InferOp<"slice"> {
  let summary = "A strided window of a tensor.";
  let description = [{
    For each dimension `d`, takes `sizes[d]` elements starting at
    `offsets[d]`, `strides[d]` apart. The window must lie inside the input.
    An offset below zero counts back from the dimension's end, as Python's
    indices do: `-1` starts at the last element. For a dimension of
    dynamic size that end is the run's size, so `offsets [0, -1] sizes
    [4, 1]` is `x[:, -1:]` at every sequence length.

    ```mlir
    %s = locus.slice %x offsets [0, 2] sizes [4, 3] strides [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$strides);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input `offsets` $offsets `sizes` $sizes `strides` $strides attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Locus_GatherOp : Locus_InferOp<"gather"> {
  let summary = "Picks slices by i64 indices: embedding and index_select.";
  let description = [{
    `numpy.take(input, indices, axis)`: the result's shape is
    `input.shape[:axis] + indices.shape + input.shape[axis+1:]`, and each
    index picks a slice of `input` along `axis`. With `axis` 0 and a weight
    `[num_embeddings, dim]` this is an embedding lookup; with 1-D indices it
    is `torch.index_select`. An index outside `[0, input.shape[axis])` gives
    zeros (the kernel never reads outside `input`); the gradient of `input`
    adds each slice of the result's gradient at its index.

    ```mlir
    %e = locus.gather %weight, %ids axis 0 : tensor<100x16xf32>, tensor<4x5xi64> -> tensor<4x5x16xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, Locus_LabelTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `axis` $axis attr-dict `:` type($input) `,`
    type($indices) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Locus_ReduceOp<string mnemonic, string what>
    : Locus_InferOp<mnemonic> {
  let summary = "The " # what # " over axes.";
  let description = [{
    Reduces the listed `axes` (unique, in range) with the }] # what # [{.
    With `keepdim` the reduced axes stay as size 1, as in PyTorch.

    ```mlir
    %r = locus.}] # mnemonic # [{ %x axes [1] : tensor<8x4xf32> -> tensor<8xf32>
    %k = locus.}] # mnemonic # [{ %x axes [1] keepdim : tensor<8x4xf32> -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdim);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes (`keepdim` $keepdim^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  // One shape rule for the family (lib/Dialect/ShapeRules.h).
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return ::locus::rules::reduce(getOperationName(), loc,
                                    adaptor.getInput(), adaptor.getAxesAttr(),
                                    adaptor.getKeepdim(), results);
    }
  }];
}

def Locus_SumOp : Locus_ReduceOp<"sum", "sum">;
def Locus_MeanOp : Locus_ReduceOp<"mean", "mean">;
def Locus_MaxOp : Locus_ReduceOp<"max", "maximum">;
def Locus_MinOp : Locus_ReduceOp<"min", "minimum">;

class Locus_SoftmaxLikeOp<string mnemonic, string formula>
    : Locus_SameTypeOp<mnemonic> {
  let summary = formula # " along one axis.";
  let description = [{
    `}] # formula # [{` along `axis`, computed stably (the maximum is
    subtracted first).

    ```mlir
    %p = locus.}] # mnemonic # [{ %logits axis 1 : tensor<16x10xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Locus_SoftmaxOp : Locus_SoftmaxLikeOp<"softmax", "softmax">;
def Locus_LogSoftmaxOp : Locus_SoftmaxLikeOp<"log_softmax", "log_softmax">;

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

def Locus_Conv2dOp : Locus_InferOp<"conv2d"> {
  let summary = "2-D convolution, NCHW, as torch.nn.functional.conv2d.";
  let description = [{
    `input [N, C, H, W]`, `weight [O, C / groups, KH, KW]`, optional
    `bias [O]`. Output size per spatial dimension:
    `(in + 2 * padding - dilation * (k - 1) - 1) / stride + 1`, which must be
    at least 1. `groups` divides both `C` and `O`.

    ```mlir
    %y = locus.conv2d %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
        : tensor<32x3x14x14xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<32x16x14x14xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, Locus_FloatTensor:$weight,
                       Optional<Locus_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `stride` $stride `padding` $padding
    `dilation` $dilation `groups` $groups attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
}

class Locus_Pool2dOp<string mnemonic, string what>
    : Locus_InferOp<mnemonic> {
  let summary = "2-D " # what # " pooling, NCHW.";
  let description = [{
    Windows of `kernel_size`, `stride` apart, over an input padded by
    `padding` on each side (at most half the kernel, as in PyTorch).
    Output size: `(in + 2 * padding - kernel) / stride + 1`.}] #
    !if(!eq(mnemonic, "avg_pool2d"),
        " Padding counts in the average (PyTorch's count_include_pad).", "") # [{

    ```mlir
    %p = locus.}] # mnemonic # [{ %x kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<32x16x14x14xf32> -> tensor<32x16x7x7xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` $kernel_size `stride` $stride `padding` $padding attr-dict
    `:` type($input) `->` type($result)
  }];
  // One shape rule for the family (lib/Dialect/ShapeRules.h).
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return ::locus::rules::pool2d(getOperationName(), loc,
                                    adaptor.getInput(),
                                    adaptor.getKernelSizeAttr(),
                                    adaptor.getStrideAttr(),
                                    adaptor.getPaddingAttr(), results);
    }
  }];
}

def Locus_MaxPool2dOp : Locus_Pool2dOp<"max_pool2d", "max">;
def Locus_AvgPool2dOp : Locus_Pool2dOp<"avg_pool2d", "average">;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Locus_MseLossOp : Locus_InferOp<"mse_loss", [SameTypeOperands]> {
  let summary = "Mean squared error, as torch.nn.MSELoss.";
  let description = [{
    `input` and `target` have the same shape; the result is a scalar, the mean
    (or sum) of the squared differences.

    ```mlir
    %l = locus.mse_loss %pred, %y mean : tensor<100x2xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, Locus_FloatTensor:$target,
                       Locus_Reduction:$reduction);
  let results = (outs Locus_ScalarF32:$result);
  let assemblyFormat = [{
    $input `,` $target $reduction attr-dict `:` type($input) `->` type($result)
  }];
}

def Locus_CrossEntropyOp : Locus_InferOp<"cross_entropy"> {
  let summary = "Cross entropy of logits and i64 class labels.";
  let description = [{
    As torch.nn.CrossEntropyLoss with class indices: `logits [N, C]` (f32),
    `labels [N]` (i64, each in [0, C)), result a scalar, the mean (or sum) of
    `-log_softmax(logits)[n, labels[n]]`. A label outside [0, C) never reads
    outside its row: its term, and so the result, is NaN. (The compiler's
    `--locus-check-indices` makes such a label an error of the run that
    names this op's line.)

    ```mlir
    %l = locus.cross_entropy %logits, %labels mean : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$logits, Locus_LabelTensor:$labels,
                       Locus_Reduction:$reduction);
  let results = (outs Locus_ScalarF32:$result);
  let assemblyFormat = [{
    $logits `,` $labels $reduction attr-dict `:` type($logits) `,`
    type($labels) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Gradients (recorded by --locus-autodiff; every one also a user op)
//===----------------------------------------------------------------------===//

def Locus_CountOp : Locus_InferOp<"count"> {
  let summary = "How many elements lie along axes, as an f32 scalar.";
  let description = [{
    The product of the input's dimensions along `axes` (unique, in range),
    at run time: with dynamic sizes it is the run's count, not the bound's.
    Gradients of means and losses that average divide by it in graphs with
    dynamic sizes; in a static graph it folds to a constant.

    ```mlir
    %n = locus.count %x axes [0] : tensor<256x10xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Locus_ScalarF32:$result);
  let assemblyFormat = [{
    $input `axes` $axes attr-dict `:` type($input) `->` type($result)
  }];
}

def Locus_OneHotOp : Locus_InferOp<"one_hot"> {
  let summary = "One-hot rows of i64 class labels, as f32.";
  let description = [{
    `labels [...]` (i64, each in [0, classes)) gives `[..., classes]`, 1.0 at
    the label and 0.0 elsewhere (a label out of range gives a row of zeros).

    ```mlir
    %h = locus.one_hot %labels classes 10 : tensor<32xi64> -> tensor<32x10xf32>
    ```
  }];
  let arguments = (ins Locus_LabelTensor:$labels, I64Attr:$classes);
  let results = (outs Locus_F32Tensor:$result);
  let assemblyFormat = [{
    $labels `classes` $classes attr-dict `:` type($labels) `->` type($result)
  }];
}

def Locus_GatherElementsOp : Locus_InferOp<"gather_elements"> {
  let summary = "Picks one element per index along an axis: torch.gather.";
  let description = [{
    `torch.gather(input, axis, indices)` (ONNX's GatherElements):
    `indices` has `input`'s rank and shape but along `axis`, and the
    result its shape; the result at a position is `input` there with its
    `axis` coordinate replaced by the index at that position. An index
    outside `[0, input.shape[axis])` gives zero (the kernel never reads
    outside `input`).

    ```mlir
    %r = locus.gather_elements %x, %ids axis 1 : tensor<4x100xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, Locus_LabelTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `axis` $axis attr-dict `:` type($input) `,`
    type($indices) `->` type($result)
  }];
}

def Locus_GatherElementsGradOp : Locus_InferOp<"gather_elements_grad"> {
  let summary = "The gradient of locus.gather_elements: elements added back.";
  let description = [{
    Zeros of `grad`'s shape with `extent` along `axis`, each element of
    `grad` added where `locus.gather_elements` with the same `indices`
    (of `grad`'s shape) picked it: `torch.scatter_add` into zeros. An
    index outside `[0, extent)` adds nothing. Repeated indices add in
    order on the host and atomically, in any order, on a GPU.

    ```mlir
    %d = locus.gather_elements_grad %g, %ids axis 1 extent 100 : tensor<4x3xf32>, tensor<4x3xi64> -> tensor<4x100xf32>
    ```
  }];
  let arguments = (ins Locus_F32Tensor:$grad, Locus_LabelTensor:$indices,
                       I64Attr:$axis, I64Attr:$extent);
  let results = (outs Locus_F32Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `axis` $axis `extent` $extent attr-dict `:`
    type($grad) `,` type($indices) `->` type($result)
  }];
}

def Locus_GatherGradOp : Locus_InferOp<"gather_grad"> {
  let summary = "The gradient of locus.gather: slices added at their indices.";
  let description = [{
    Zeros of `grad.shape[:axis] + [extent] + grad.shape[axis + r:]` (`r`
    the rank of `indices`, whose shape `grad.shape[axis:axis + r]` must
    be), with each slice of `grad` along `indices`' dimensions added at
    its index along `axis`: `torch.index_add` into zeros, the gradient of
    `locus.gather`'s input (an embedding's weight). An index outside `[0,
    extent)` adds nothing. The work is one read of `grad`, where the
    product of one-hot rows and `grad` it replaces took `extent` times as
    much. Indices that repeat add in order on the host; on a GPU each
    element of `grad` is added atomically, so repeated indices may sum in
    any order (as PyTorch's `index_add_` on CUDA).

    ```mlir
    %d = locus.gather_grad %g, %ids axis 0 extent 100 : tensor<4x5x16xf32>, tensor<4x5xi64> -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins Locus_F32Tensor:$grad, Locus_LabelTensor:$indices,
                       I64Attr:$axis, I64Attr:$extent);
  let results = (outs Locus_F32Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `axis` $axis `extent` $extent attr-dict `:`
    type($grad) `,` type($indices) `->` type($result)
  }];
}

def Locus_SliceGradOp : Locus_InferOp<"slice_grad"> {
  let summary = "The gradient of locus.slice: zeros with a slice filled in.";
  let description = [{
    A tensor of `shape`, zero except at the elements `locus.slice` with the
    same `offsets` and `strides` reads, which hold `grad` (an offset below
    zero counts back from the end, as there). With dynamic sizes, the
    result's dims are the sliced value's, given as `locus.dims` where the
    window is smaller than a dynamic dimension.

    ```mlir
    %d = locus.slice_grad %g shape [8, 6] offsets [0, 1] strides [1, 2] : tensor<8x3xf32> -> tensor<8x6xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$grad, DenseI64ArrayAttr:$shape,
                       DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$strides);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `shape` $shape `offsets` $offsets `strides` $strides attr-dict `:`
    type($grad) `->` type($result)
  }];
}

def Locus_Conv2dInputGradOp : Locus_InferOp<"conv2d_input_grad"> {
  let summary = "The gradient of locus.conv2d with respect to its input.";
  let description = [{
    `grad` is the gradient of the convolution's result, `weight` its weight;
    the result has `input_shape`, and `locus.conv2d` of that shape with the
    same attributes must give `grad`'s shape. Also the gradient of
    `avg_pool2d` (a grouped convolution with a constant weight).

    ```mlir
    %dx = locus.conv2d_input_grad %g, %w input_shape [16, 3, 14, 14] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
        : tensor<16x8x14x14xf32>, tensor<8x3x3x3xf32> -> tensor<16x3x14x14xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$grad, Locus_FloatTensor:$weight,
                       DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight `input_shape` $input_shape `stride` $stride `padding`
    $padding `dilation` $dilation `groups` $groups attr-dict `:` type($grad)
    `,` type($weight) `->` type($result)
  }];
}

def Locus_Conv2dWeightGradOp : Locus_InferOp<"conv2d_weight_grad"> {
  let summary = "The gradient of locus.conv2d with respect to its weight.";
  let description = [{
    `input` is the convolution's input, `grad` the gradient of its result; the
    result has `weight_shape`, and `locus.conv2d` of `input` with a weight of
    that shape and the same attributes must give `grad`'s shape. With one
    group it is im2col and one matrix product (BLAS, cuBLAS on a GPU).

    ```mlir
    %dw = locus.conv2d_weight_grad %x, %g weight_shape [8, 3, 3, 3] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
        : tensor<16x3x14x14xf32>, tensor<16x8x14x14xf32> -> tensor<8x3x3x3xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, Locus_FloatTensor:$grad,
                       DenseI64ArrayAttr:$weight_shape,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `weight_shape` $weight_shape `stride` $stride `padding`
    $padding `dilation` $dilation `groups` $groups attr-dict `:` type($input)
    `,` type($grad) `->` type($result)
  }];
}

def Locus_BatchNormTrainOp : Locus_InferOp<"batch_norm_train",
    [AllTypesMatch<["weight", "bias"]>]> {
  let summary = "BatchNorm in training: normalization by the batch's "
                "statistics, with its affine transform.";
  let description = [{
    `input` is [N, C, ...]; `weight` and `bias` are [C]. The statistics are
    over every axis but 1: `mean` [C] and the biased variance `var` [C] (as
    PyTorch normalizes; the running variance it keeps is the unbiased one,
    which the frontend derives). The result is
    `(input - mean) / sqrt(var + eps) * weight + bias`.

    One op rather than its arithmetic, so that its gradient is one op too
    (`locus.batch_norm_train_grad`): the decomposed form's gradient read the
    activations a dozen times. Only the first result carries a gradient;
    the statistics feed the running averages, which no loss reads.

    ```mlir
    %y, %mean, %var = locus.batch_norm_train %x, %w, %b eps 1.0e-05
        : tensor<8x4x6x6xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, Locus_FloatTensor:$weight,
                       Locus_FloatTensor:$bias, F64Attr:$eps);
  let results = (outs Locus_FloatTensor:$result, Locus_FloatTensor:$mean,
                      Locus_FloatTensor:$var);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $eps attr-dict `:` type($input) `,`
    type($weight)
  }];
}

def Locus_BatchNormTrainGradOp : Locus_InferOp<"batch_norm_train_grad",
    [AllTypesMatch<["grad", "input"]>,
     AllTypesMatch<["mean", "var", "weight"]>]> {
  let summary = "The gradients of locus.batch_norm_train.";
  let description = [{
    From `grad` (the gradient of the result), the forward's `input`, batch
    `mean` and `var` and `weight`, with `xhat = (input - mean) / sqrt(var +
    eps)` and `M` values per channel: `bias_grad = sum(grad)`, `weight_grad
    = sum(grad * xhat)` (over every axis but 1), and `input_grad = weight /
    sqrt(var + eps) * (grad - bias_grad / M - xhat * weight_grad / M)`,
    which counts the statistics' dependence on the input. Three passes over
    the activations: the two sums, then the input's gradient.

    ```mlir
    %dx, %dw, %db = locus.batch_norm_train_grad %g, %x, %mean, %var, %w eps 1.0e-05
        : tensor<8x4x6x6xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$grad, Locus_FloatTensor:$input,
                       Locus_FloatTensor:$mean, Locus_FloatTensor:$var,
                       Locus_FloatTensor:$weight, F64Attr:$eps);
  let results = (outs Locus_FloatTensor:$input_grad,
                      Locus_FloatTensor:$weight_grad,
                      Locus_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $mean `,` $var `,` $weight `eps` $eps attr-dict `:`
    type($input) `,` type($weight)
  }];
}

def Locus_MaxPool2dGradOp : Locus_InferOp<"max_pool2d_grad"> {
  let summary = "The gradient of locus.max_pool2d with respect to its input.";
  let description = [{
    Each window's gradient goes to the first position (row-major within the
    window) that holds its maximum, as PyTorch routes it; `grad` has the
    pooling's result shape, the result the input's.

    ```mlir
    %dx = locus.max_pool2d_grad %x, %g kernel [2, 2] stride [2, 2] padding [0, 0]
        : tensor<16x8x14x14xf32>, tensor<16x8x7x7xf32> -> tensor<16x8x14x14xf32>
    ```
  }];
  let arguments = (ins Locus_FloatTensor:$input, Locus_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel_size,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Locus_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `kernel` $kernel_size `stride` $stride `padding` $padding
    attr-dict `:` type($input) `,` type($grad) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Optimizers and state updates
//===----------------------------------------------------------------------===//

def Locus_SgdOp : Locus_InferOp<"sgd", [AllTypesMatch<["param", "grad"]>]> {
  let summary = "One step of torch.optim.SGD for one parameter.";
  let description = [{
    PyTorch's update: `d = grad + weight_decay * param`; with momentum,
    `buf' = momentum * buf + d` (the buffer starts at zero, so the first step
    gives `buf' = d`, as PyTorch's clone) and `d = buf'`, or with `nesterov`
    `d = d + momentum * buf'`; then `param' = param - lr * d`. The results
    are `param'` and, with momentum, `buf'`; `locus.assign` writes them back.
    Dampening is not offered.

    The learning rate `lr` is an operand, a `tensor<f32>` (the optimizer
    keeps it as state, so a schedule changes it between runs without a
    recompile).

    ```mlir
    %p2, %b2 = locus.sgd %w, %dw, %buf lr %lr momentum 0.9 weight_decay 0.0
        : tensor<2x10xf32>, tensor<2x10xf32> -> tensor<2x10xf32>, tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Locus_F32Tensor:$param, Locus_F32Tensor:$grad,
                       Optional<Locus_F32Tensor>:$buffer,
                       Locus_ScalarF32Operand:$lr, F64Attr:$momentum,
                       F64Attr:$weight_decay, UnitAttr:$nesterov);
  let results = (outs Variadic<Locus_F32Tensor>:$results);
  let assemblyFormat = [{
    $param `,` $grad (`,` $buffer^)? `lr` $lr `momentum` $momentum
    `weight_decay` $weight_decay (`nesterov` $nesterov^)? attr-dict `:`
    type($param) (`,` type($buffer)^)? `->` type($results)
  }];
}

def Locus_AdamOp : Locus_InferOp<"adam",
    [AllTypesMatch<["param", "grad", "m", "v"]>]> {
  let summary = "One step of torch.optim.Adam (or AdamW) for one parameter.";
  let description = [{
    PyTorch's update with bias correction, `step` being the step number
    after this step's increment (1 on the first step):
    `g = grad + weight_decay * param`, `m' = beta1 * m + (1 - beta1) * g`,
    `v' = beta2 * v + (1 - beta2) * g * g`,
    `param' = param - lr / (1 - beta1^step) * m' /
    (sqrt(v') / sqrt(1 - beta2^step) + eps)`. The results are `param'`,
    `m'` and `v'`.

    With `decoupled`, torch.optim.AdamW's decoupled weight decay instead:
    `param` is first scaled by `1 - lr * weight_decay`, and `g = grad`.

    The learning rate `lr` is an operand, a `tensor<f32>`, as in
    `locus.sgd`.

    ```mlir
    %p2, %m2, %v2 = locus.adam %w, %dw, %m, %v, %t lr %lr betas [0.9, 0.999] eps 1.0e-08 weight_decay 0.0
        : tensor<2x10xf32>, tensor<f32>
    %p3, %m3, %v3 = locus.adam %w, %dw, %m, %v, %t lr %lr betas [0.9, 0.999] eps 1.0e-08 weight_decay 0.01 decoupled
        : tensor<2x10xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Locus_F32Tensor:$param, Locus_F32Tensor:$grad,
                       Locus_F32Tensor:$m, Locus_F32Tensor:$v,
                       Locus_ScalarF32:$step, Locus_ScalarF32Operand:$lr,
                       DenseF64ArrayAttr:$betas, F64Attr:$eps,
                       F64Attr:$weight_decay, UnitAttr:$decoupled);
  let results = (outs Locus_F32Tensor:$new_param, Locus_F32Tensor:$new_m,
                      Locus_F32Tensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $step `lr` $lr `betas` $betas `eps`
    $eps `weight_decay` $weight_decay (`decoupled` $decoupled^)? attr-dict
    `:` type($param) `,` type($step)
  }];
}

def Locus_AssignOp : Locus_Op<"assign", [Locus_Structural,
                                         HasParent<"GraphOp">]> {
  let summary = "Writes a new value into persistent state, once per run.";
  let description = [{
    `state` is the result of a `locus.state`; after the run, the state holds
    `value` (the next run reads it). A state is assigned at most once, and
    the write is in place where the plan allows it: the kernel that computes
    `value` writes the state's own buffer.

    ```mlir
    locus.assign %w = %w2 : tensor<2x10xf32>, tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$state, Locus_AnyTensor:$value);
  let assemblyFormat = [{
    $state `=` $value attr-dict `:` type($state) `,` type($value)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Moving values between devices
//===----------------------------------------------------------------------===//

def Locus_ToOp : Locus_SameTypeOp<"to", [Locus_Structural]> {
  let summary = "The user's explicit move of a value to a device; a pin.";
  let description = [{
    Recorded by `t.to(locus::cuda(0))`. The result lives on `device` under
    every policy. Under `strict`, this is the only way a value changes device.

    ```mlir
    %xg = locus.to <cuda:0>, %x : tensor<100x10xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, Locus_DeviceAttr:$device);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = "$device `,` $input attr-dict `:` type($result)";
}

def Locus_ToDeviceOfOp : Locus_SameTypeOp<"to_device_of", [Locus_Structural]> {
  let summary = "The gradient of a `locus.to`: a move back to where `ref` is.";
  let description = [{
    Autodiff records it for the gradient of `input.to(d)` when the device of
    `input` is not known before placement (a computed value), as PyTorch's
    `grad.to(input.device)`. The result lives where `ref` (the forward
    input) lives.

    `--locus-place-devices` resolves it: under `strict` it becomes a
    `locus.to` to the device placement gave `ref`, so the backward pass
    runs where its forward pass ran; under the other policies, which insert
    copies themselves, it becomes its input. No later pass sees it.

    ```mlir
    %gx = locus.to_device_of %g, %x : tensor<8x3xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, Locus_AnyTensor:$ref);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = "$input `,` $ref attr-dict `:` type($result)";
}

def Locus_CopyOp : Locus_SameTypeOp<"copy", [Locus_Structural]> {
  let summary = "A transfer the compiler inserted.";
  let description = [{
    Copies a value from device `from` to device `to`. Inserted by
    `--locus-insert-transfers`, never written by users (they write
    `locus.to`). The two devices differ. `load_time` marks a copy of state or
    of a constant: it runs once, when the model is loaded, not at every step.

    ```mlir
    %c = locus.copy <cpu> to <cuda:0>, %x : tensor<100x10xf32>
    %w = locus.copy load_time <cpu> to <cuda:0>, %fc.weight : tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Locus_AnyTensor:$input, Locus_DeviceAttr:$from,
                       Locus_DeviceAttr:$to, UnitAttr:$load_time);
  let results = (outs Locus_AnyTensor:$result);
  let assemblyFormat = [{
    (`load_time` $load_time^)? $from `to` $to `,` $input attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (data-parallel training)
//===----------------------------------------------------------------------===//

def Locus_AllReduceOp : Locus_Op<"all_reduce", [Locus_Structural,
    HasParent<"GraphOp">, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Sums (or averages) tensors over every rank of a job.";
  let description = [{
    Each result is its operand summed over the ranks of a data-parallel
    job, or averaged (`mean`): a gradient bucket of DDP. Inserted by
    `--locus-data-parallel` after placement, on the device its operands
    were placed on (`locus.device`). The runtime makes it one collective
    call over the bucket; in a process without a communicator (world size
    1) each result is its operand. `bucket` numbers the op's bucket.

    ```mlir
    %g:2 = locus.all_reduce mean bucket 0, %gw, %gb
        : tensor<2x10xf32>, tensor<2xf32>
    ```
  }];
  let arguments = (ins Variadic<Locus_F32Tensor>:$inputs, UnitAttr:$mean,
                       I64Attr:$bucket);
  let results = (outs Variadic<Locus_F32Tensor>:$results);
  let assemblyFormat = [{
    (`mean` $mean^)? `bucket` $bucket `,` $inputs attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

def Locus_RandomOp : Locus_InferOp<"random"> {
  let summary = "Counter-based random numbers, U[0, 1) or N(0, 1).";
  let description = [{
    A tensor of `shape` whose element `i` (row-major) is a function of
    `seed`, `step` and `i` alone: Philox4x32-10 (Salmon et al., SC'11, as in
    cuRAND and PyTorch) with the counter `(i mod 2^32, i / 2^32, s mod
    2^32, s / 2^32)`, `s` being `step` as an integer, and the key `(seed mod
    2^32, seed / 2^32)`. The same bits come out on every device. Its
    outputs `x0, x1, ...` give:

    - `uniform`: `(x0 >> 8) * 2^-24`, exactly a float32 in [0, 1);
    - `normal`: Box-Muller, `sqrt(-2 ln(1 - u0)) * cos(2 pi u1)` with
      `u0`, `u1` from `x0`, `x1` as above (`1 - u0` is never 0).

    `step` is a 0-d f32 run counter (the frontend keeps one per graph in
    the buffer `rng.step`, one more at every run), so each run draws new
    numbers. No gradient flows through it.

    ```mlir
    %u = locus.random uniform [4, 8] seed 42 step %t : tensor<f32> -> tensor<4x8xf32>
    %n = locus.random normal [16] seed -7 step %t : tensor<f32> -> tensor<16xf32>
    ```
  }];
  let arguments = (ins Locus_ScalarF32:$step, Locus_Distribution:$distribution,
                       DenseI64ArrayAttr:$shape, I64Attr:$seed);
  let results = (outs Locus_F32Tensor:$result);
  let assemblyFormat = [{
    $distribution $shape `seed` $seed `step` $step attr-dict `:` type($step)
    `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Kernels (made by --locus-fuse-kernels)
//===----------------------------------------------------------------------===//

def Locus_KernelOp : Locus_Op<"kernel", [Locus_Structural, SingleBlock,
                                         RecursiveMemoryEffects]> {
  let summary = "Ops that run as one kernel on one device.";
  let description = [{
    Made by `--locus-fuse-kernels`: the ops in the body run as one kernel
    launch on `device`. The body reads values defined above it and yields
    the kernel's results; values inside do not escape except through
    `locus.yield`.

    ```mlir
    %0 = locus.kernel on <cpu> -> tensor<64x1024xf32> {
      %1 = locus.linear %x, %w, %b : tensor<64x784xf32>, tensor<1024x784xf32>, tensor<1024xf32>
      %2 = locus.relu %1 : tensor<64x1024xf32>
      locus.yield %2 : tensor<64x1024xf32>
    }
    ```
  }];
  let arguments = (ins Locus_DeviceAttr:$device);
  let results = (outs Variadic<Locus_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `on` $device (`->` type($results)^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Locus_YieldOp : Locus_Op<"yield", [Locus_Structural, Pure, Terminator,
                                       HasParent<"KernelOp">]> {
  let summary = "The results of a kernel.";
  let arguments = (ins Variadic<Locus_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // LOCUS_OPS_TD
