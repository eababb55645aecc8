//===- ConvCalls.h - convolutions as runtime calls (private) ----*- C++ -*-===//
//
// What --locus-conv-to-runtime and --locus-conv-to-cudnn share: a
// convolution's parameters in the runtime's order (abi.h's LOCUS_CONV_*),
// the constant globals that hold them, and the addresses a call passes.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_CONVCALLS_H
#define LOCUS_PASSES_CONVCALLS_H

#include "locus/Dialect/DynamicDims.h"
#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>
#include <map>
#include <vector>

namespace locus::conv {

using Params = std::array<int64_t, LOCUS_CONV_PARAM_COUNT>;

/// The shapes of a convolution (forward or gradient) in locus_conv2d's
/// parameter order: `in` the input's shape, `w` the weight's, `out` the
/// result's.
Params convParams(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> w,
                  llvm::ArrayRef<int64_t> out, llvm::ArrayRef<int64_t> stride,
                  llvm::ArrayRef<int64_t> padding,
                  llvm::ArrayRef<int64_t> dilation, int64_t groups,
                  int64_t flags);

/// Private constant globals of convolution parameters, one per distinct
/// set of values (a convolution and its gradients share theirs).
class ParamGlobals {
public:
  mlir::memref::GlobalOp get(mlir::ModuleOp module,
                             llvm::ArrayRef<int64_t> values);

private:
  std::map<std::vector<int64_t>, mlir::memref::GlobalOp> made;
  int64_t next = 0;
};

/// Builds what a call of the runtime reads: buffers' addresses as integers
/// (as with locus_sgemm), tensors' buffers read only.
struct Addresses {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value pointer(mlir::Value buffer);
  mlir::Value read(mlir::Value tensor);
  mlir::Value global(mlir::memref::GlobalOp g);
};

/// A convolution or gradient as locus_cuda_conv2d and locus_conv2d_grad
/// take it.
struct ConvCall {
  int64_t kind;
  Params params;
  mlir::Value a, b, bias; // bias: null when none
};

/// The call's view of `op`, a conv2d or one of its gradients; `tf32` is
/// LOCUS_CONV_TF32 or 0.
ConvCall describe(mlir::Operation *op, int64_t tf32);

/// A convolution or gradient of 16-bit operands (--locus-gpu-16bit-convs)
/// as the same op on them cast up to f32, built at `b`'s insertion point:
/// the f32 op and its result cast back down. The calls of the host (and
/// cuDNN's fallback) take f32 only; the cast up is exact, so this is the
/// 16-bit convolution with f32 accumulation.
struct Widened {
  mlir::Operation *op;
  mlir::Value result;
};
Widened widen(mlir::OpBuilder &b, mlir::Operation *op);

/// Whether `op`'s result is bf16 or f16.
bool isSixteenBit(mlir::Operation *op);

/// What a host convolution call (forward or gradient) reads in 16 bits:
/// the bf16 or f16 values its two tensor operands were cast up from, both
/// of one type, and the cast of its result down to that type when that is
/// the result's only reader in its block (LOCUS_CONV_BF16, _F16,
/// _Y_16BIT). All null when the operands are no such casts.
struct SixteenBit {
  mlir::Value a, b;
  CastOp round;
};
SixteenBit sixteenBitReads(mlir::Value a, mlir::Value b, mlir::Value result);

/// The call's flags for `reads`.
int64_t sixteenBitFlags(const SixteenBit &reads);

/// A host convolution and the ops that join its locus_conv2d call: a
/// residual add, a ReLU, then a pooling, each the only user of what comes
/// before it, in the same block. When its input and weight are cast up
/// from one 16-bit type, the call reads the 16-bit values (and the casts'
/// other readers keep them), and a cast of the last op's result down to
/// that type, its only reader, joins the call too.
struct Fused {
  Conv2dOp conv;
  mlir::Value residual; // null: none
  mlir::Operation *add = nullptr, *relu = nullptr;
  /// A max_pool2d or avg_pool2d of the result, or null.
  mlir::Operation *pool = nullptr;
  /// What the call reads in 16 bits (a: the input's, b: the weight's
  /// values) and the rounding it takes in: sixteen.round reads last().
  SixteenBit sixteen;
  /// The last f32 op fused.
  mlir::Operation *last() {
    if (pool)
      return pool;
    return relu ? relu : add ? add : conv.getOperation();
  }
  /// The op whose result the call replaces.
  mlir::Operation *output() {
    return sixteen.round ? sixteen.round.getOperation() : last();
  }
};

/// What joins `conv`'s call (--locus-conv-to-runtime; --locus-conv-layouts
/// predicts the calls with it).
Fused matchFused(Conv2dOp conv);

/// A kernel function with dynamic sizes (--locus-outline-kernels marks
/// it): the dims of its values, from its arguments' through each op, and
/// the argument that holds the run's sizes.
struct RunSizes {
  DynamicDims dims{llvm::SmallVector<DimSymbol>()};
  bool dynamic = false; // the function has dynamic sizes
  mlir::Value sizes;

  /// Fills `r` for `func`.
  static mlir::LogicalResult of(mlir::func::FuncOp func, RunSizes &r);

  bool isDynamic(mlir::Value v) const { return dynamic && dims.isDynamic(v); }

  /// `value`'s batch (its first dimension) at the run's sizes, as an i64.
  /// A convolution's other dimensions are static: `infer` refuses anything
  /// else (the shape rules' probes, and conv2d_input_grad's own check).
  mlir::Value batchOf(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value value) const;

  /// Marks the tensor `result` (a call's output, bound-sized) with the dims
  /// of `of`, which it replaces, for --locus-dynamic-kernels.
  void mark(mlir::Value result, mlir::Value of) const;
};

/// The address of the parameters in `global`, or, when `batchOf` has a
/// dynamic batch, of a copy on the stack whose LOCUS_CONV_N is the run's.
/// The copy's ops are host code (kHostOnlyAttrName): in a CUDA launcher
/// too, the runtime reads the parameters on the host.
mlir::Value paramsAddress(Addresses &at, mlir::memref::GlobalOp global,
                          const RunSizes &run, mlir::Value batchOf);

/// Unit attributes --locus-conv-layouts puts on a host convolution whose
/// input, residual or call result is laid out NHWC in memory
/// (LOCUS_CONV_X_NHWC, _RESIDUAL_NHWC, _Y_NHWC).
inline constexpr llvm::StringLiteral kNhwcInputAttr = "locus.nhwc_input";
inline constexpr llvm::StringLiteral kNhwcResidualAttr = "locus.nhwc_residual";
inline constexpr llvm::StringLiteral kNhwcResultAttr = "locus.nhwc_result";

} // namespace locus::conv

#endif // LOCUS_PASSES_CONVCALLS_H
