//===- Amp.h - dynamic loss scaling for f16 training ------------*- C++ -*-===//
//
// locus::amp::GradScaler: torch.cuda.amp.GradScaler's contract, recorded
// as ops of the training step, so no value leaves the step to decide
// whether it updates.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_FRONTEND_AMP_H
#define LOCUS_FRONTEND_AMP_H

#include "locus/Frontend/Nn.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace locus::amp {

/// torch.cuda.amp.GradScaler's settings and defaults.
struct GradScalerOptions {
  double initScale = 65536.0; // 2^16
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int64_t growthInterval = 2000;
  /// false: scale() returns the loss, step() is the optimizer's step, and
  /// nothing else is recorded (PyTorch's `enabled`).
  bool enabled = true;
};

/// Dynamic loss scaling, as torch.cuda.amp.GradScaler, for f16 training
/// (`precision = "f16"`): gradients too small for f16 would flush to zero,
/// so the loss is multiplied by a large scale before the backward pass and
/// the gradients divided by it before the update.
///
///   locus::amp::GradScaler scaler;
///   auto grads = locus::grad(scaler.scale(loss), model.parameters());
///   scaler.unscale_(grads);                 // optional: before clipping
///   locus::nn::utils::clip_grad_norm_(grads, 1.0);
///   scaler.step(opt, grads);                // skipped on inf or NaN
///   scaler.update();
///
/// Everything is recorded into the step: the scale and the count of steps
/// since it last changed are state ("grad_scaler.scale",
/// "grad_scaler.growth_tracker"), a step whose gradients hold an inf or a
/// NaN writes no parameter and no optimizer state (Adam's step count
/// included), and update() halves the scale after such a step and doubles
/// it after `growthInterval` steps without one. Checkpoints keep both.
/// Each call records once; a second is an Error, as is a call out of
/// order. One scaler serves one optimizer (PyTorch's scaler may step
/// several). The scale is f32 state on the device the loss is computed on
/// when its sources are pinned; scaled losses and unscaled gradients are
/// computed in f32 and rounded once to their types.
class GradScaler {
public:
  explicit GradScaler(const GradScalerOptions &options = {},
                      Here loc = Here::current());

  /// loss * scale, in the loss's type. Makes the scaler's state in the
  /// loss's graph.
  Tensor scale(const Tensor &loss, Here loc = Here::current());
  /// Divides each gradient (of scale()'s loss) by the scale, in place, and
  /// records whether any value of any of them is inf or NaN.
  void unscale_(std::vector<Tensor> &grads, Here loc = Here::current());
  /// optimizer.step(grads), unscaling them first unless unscale_() did,
  /// with every state write of the step kept from taking effect when the
  /// gradients held an inf or a NaN.
  void step(optim::Optimizer &optimizer, std::vector<Tensor> grads,
            Here loc = Here::current());
  /// Records the scale's update; after step().
  void update(Here loc = Here::current());

  /// A scalar f32: 1 when this step's gradients held an inf or a NaN (the
  /// step was skipped), else 0. The step may output it. After unscale_()
  /// or step().
  Tensor foundInf(Here loc = Here::current()) const;
  /// The names of the scaler's state in compiled models.
  static std::string scaleStateName() { return "grad_scaler.scale"; }
  static std::string growthTrackerStateName() {
    return "grad_scaler.growth_tracker";
  }
  const GradScalerOptions &options() const { return options_; }
  /// The scale, state of the step's graph, once scale() has recorded it
  /// (a step may output it to watch it).
  const std::optional<Tensor> &scaleState() const { return scale_; }

private:
  GradScalerOptions options_;
  std::optional<Tensor> scale_, tracker_, found_;
  bool unscaled_ = false, stepped_ = false, updated_ = false;
  size_t unscaledCount_ = 0;
};

} // namespace locus::amp

#endif // LOCUS_FRONTEND_AMP_H
