//===- UserText.h - errors and shapes in the user's terms (private) -*- C++
//-*-===//
//
// For the frontend files that use the public API only (Nn.cpp,
// Functional.cpp): no MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_FRONTEND_USERTEXT_H
#define LOCUS_FRONTEND_USERTEXT_H

#include "locus/Frontend/Graph.h"

#include <sstream>
#include <string>

namespace locus::detail {

/// BatchNorm in training as one op (locus.batch_norm_train, recorded in
/// Ops.cpp): the normalized and affine-transformed input, then the batch
/// mean [C] and biased variance [C].
struct BatchNormTrainResults {
  Tensor result, mean, var;
};
BatchNormTrainResults batchNormTrain(const Tensor &x, const Tensor &weight,
                                     const Tensor &bias, double eps,
                                     const Here &loc);
/// How many values of BatchNorm's input x [N, C, ...] each channel has (a
/// [] f32 locus.count over every axis but 1, which each run computes) when
/// x has dynamic sizes; an empty Tensor when its shape is static.
Tensor dynamicChannelCount(const Tensor &x, const Here &loc);

/// One locus.gather_elements (Ops.cpp) of x along `axis` (in range) by an
/// i64 index of x's shape but along it, when both have static shapes; an
/// empty Tensor otherwise (gather composes it from a one-hot product).
Tensor gatherElements(const Tensor &x, int64_t axis, const Tensor &index,
                      const Here &loc);

/// One locus.max_pool2d or locus.avg_pool2d (Ops.cpp) with `params`'
/// kernel, stride and symmetric padding; max_pool2d and avg_pool2d
/// (Functional.cpp) compose the other cases from it.
Tensor recordPool2d(const Tensor &x, const Pool2dParams &params, bool max,
                    const Here &loc);

/// The name of the user's call that errors name while it lives: a
/// function that records other ops (masked_fill records a where, expand a
/// broadcast) names itself in their errors, as the user wrote it. The
/// outermost call wins (std over the var it calls). Graph.cpp defines it.
class CallName {
public:
  explicit CallName(const char *name);
  ~CallName();
  CallName(const CallName &) = delete;
  CallName &operator=(const CallName &) = delete;

  /// The call being recorded, or `inner` (an op's own name) outside one.
  static std::string label(const std::string &inner);

private:
  bool outermost;
};

/// While one lives, every op recorded on this thread is marked as recorded
/// only for evaluation (locus/Dialect/Modes.h): a training compile erases
/// it. Graph.cpp defines it.
class EvalOnlyGuard {
public:
  EvalOnlyGuard();
  ~EvalOnlyGuard();
  EvalOnlyGuard(const EvalOnlyGuard &) = delete;
  EvalOnlyGuard &operator=(const EvalOnlyGuard &) = delete;
};

/// Marks `evalValue` (recorded under an EvalOnlyGuard) as what
/// `trainValue` is in evaluation; both must be the first result of their
/// ops. Graph.cpp defines it.
void markEvalValue(const Tensor &trainValue, const Tensor &evalValue,
                   const Here &loc);

/// A locus::Error at the user's `loc`.
inline Error errorAt(const Here &loc, const std::string &message) {
  return Error(loc.file_name(), loc.line(), loc.column(), message);
}

/// "[4, 5]", as the dialect's messages write shapes.
inline std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// A number as a person writes it: "2", "0.1", "1e-05".
inline std::string numberText(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

} // namespace locus::detail

#endif // LOCUS_FRONTEND_USERTEXT_H
