//===- Autodiff.h - reverse-mode differentiation of a graph -----*- C++ -*-===//
//
// The one implementation of reverse-mode autodiff: --locus-autodiff and the
// frontend's locus::grad() both call it.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DIALECT_AUTODIFF_H
#define LOCUS_DIALECT_AUTODIFF_H

#include "locus/Dialect/LocusDialect.h"

#include <string>
#include <vector>

namespace locus {

/// Appends to `graph` the ops that compute the gradient of `loss` (a scalar
/// f32 value of the graph) with respect to each of `wrt` (f32 values of the
/// graph), and returns those gradients in order; a value the loss does not
/// depend on gets zeros. Every op it records carries the location of the
/// forward op it differentiates, as backwardLoc, so placement and errors name
/// the user's line. In a graph with dynamic sizes, each gradient has its
/// value's dims (broadcasts it made take theirs, see bindBroadcastDims). On
/// failure (an op with no gradient on the path, a bad operand) it emits an
/// error, erases whatever it recorded and returns failure: the graph is as it
/// was.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
differentiate(GraphOp graph, mlir::Value loss, llvm::ArrayRef<mlir::Value> wrt);

/// The location of an op of a gradient: the location of the forward op it
/// differentiates, marked as backward (a FusedLoc whose metadata is the
/// string "locus.backward"). Everything that reads a user line from a
/// location sees the forward op's line.
mlir::Location backwardLoc(mlir::Location forward);

/// Whether `loc` is one of backwardLoc's: its op was recorded by autodiff.
bool isBackwardLoc(mlir::Location loc);

/// The attribute differentiate() puts on the op that computes the gradient
/// of a parameter (a locus.state it differentiates with respect to): what
/// --locus-data-parallel all-reduces, as DDP does a parameter's .grad. A
/// unit attribute on an op of one result; on an op of several (a batch
/// norm's gradients), the array of the results that are parameters'
/// gradients. Gradients with respect to computed values are not marked.
inline constexpr llvm::StringLiteral kGradientAttrName = "locus.gradient";

/// The unit attribute of an op recorded under no_grad (NoGradGuard):
/// differentiate() treats its results as constants.
inline constexpr llvm::StringLiteral kNoGradAttrName = "locus.no_grad";

/// Whether `op` computes a parameter's gradient (kGradientAttrName).
bool isParameterGradient(mlir::Operation *op);

/// The results of `op` that are parameters' gradients (kGradientAttrName).
llvm::SmallVector<mlir::Value> parameterGradients(mlir::Operation *op);

/// An optimizer, with PyTorch's defaults.
struct OptimizerConfig {
  enum class Kind { sgd, adam };
  Kind kind = Kind::sgd;
  double lr = 0.01;
  double weightDecay = 0.0;
  // SGD
  double momentum = 0.0;
  bool nesterov = false;
  // Adam
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// AdamW: decoupled weight decay (locus.adam's `decoupled`).
  bool decoupled = false;
};

/// One parameter group of an optimizer: `count` consecutive parameters and
/// their settings (torch.optim's param_groups).
struct OptimizerGroup {
  OptimizerConfig config;
  size_t count = 0;
};

/// The name of parameter group `group`'s learning-rate state:
/// "<prefix>param_groups.<group>.lr".
std::string learningRateStateName(llvm::StringRef prefix, size_t group);

/// Appends one optimizer step to `graph`: for each parameter (the result of
/// a locus.state) and its gradient, a locus.sgd or locus.adam and the
/// locus.assign ops that write the parameter and the optimizer's state back.
/// `groups` split `params` in order; every group has the same kind. The
/// optimizer's state is new locus.state buffers, made where the parameter is
/// made: "<param>.momentum_buffer" (SGD with momentum), "<param>.exp_avg" and
/// "<param>.exp_avg_sq" (Adam), zeros at first; one "<prefix>step" count for
/// Adam; and each group's learning rate, a tensor<f32> that starts at its
/// `lr` (learningRateStateName), so a schedule changes it between runs. The
/// step count and each learning rate are kept once per device the
/// parameters are made on (pinned), so no update reads a scalar from
/// another device: the name above on the first parameter's device,
/// "<name>@<device>" on the others. `lrStates`, when given, receives each
/// group's learning-rate state names. Ops carry `loc`. Emits an error and
/// records nothing on failure (a parameter that is no state, or is assigned
/// already; a name taken; a bad setting).
mlir::LogicalResult
recordOptimizerStep(GraphOp graph, llvm::ArrayRef<mlir::Value> params,
                    llvm::ArrayRef<mlir::Value> grads,
                    llvm::ArrayRef<OptimizerGroup> groups,
                    llvm::StringRef prefix, mlir::Location loc,
                    std::vector<std::vector<std::string>> *lrStates = nullptr);

/// The same with one group of every parameter.
mlir::LogicalResult recordOptimizerStep(GraphOp graph,
                                        llvm::ArrayRef<mlir::Value> params,
                                        llvm::ArrayRef<mlir::Value> grads,
                                        const OptimizerConfig &config,
                                        llvm::StringRef prefix,
                                        mlir::Location loc);

} // namespace locus

#endif // LOCUS_DIALECT_AUTODIFF_H
