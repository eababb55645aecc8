//===- LrScheduler.h - learning rates of a compiled model ------*- C++ -*-===//
//
// An optimizer keeps each parameter group's learning rate as scalar state
// (Optimizer::lrStateName). A compiled model reads it at every run, so the
// rate changes between runs with no recompile: setLr() is PyTorch's
// `optimizer.param_groups[i]["lr"] = ...`, and the schedulers below are
// torch.optim.lr_scheduler's, writing the model's state at step().
//
// Each scheduler computes an epoch's rate from the group's base rate (the
// optimizer's lr as constructed) in closed form, in double, as PyTorch's
// closed forms do; PyTorch's chained forms give the same numbers up to
// double rounding. The state holds the rate as f32, as PyTorch's kernels
// use it. A rate set by hand with setLr() lasts until the scheduler's next
// step(). Constructing a scheduler writes epoch 0's rates; resumeAt(k)
// continues a schedule after a checkpoint is loaded. A scheduled rate below
// zero (a negative gamma or lambda) is an Error, and nothing is written.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_COMPILE_LRSCHEDULER_H
#define LOCUS_COMPILE_LRSCHEDULER_H

#include "locus/Compile.h"
#include "locus/Frontend/Nn.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace locus::optim {

/// Group `group`'s learning rate in `model` now.
double getLr(const CompiledModel &model, const Optimizer &optimizer,
             size_t group = 0, Here loc = Here::current());
/// Sets group `group`'s learning rate for `model`'s later runs (PyTorch's
/// optimizer.param_groups[group]["lr"] = lr). A negative or non-finite rate,
/// a group the optimizer lacks, or a model without the group's rate (not
/// compiled from a graph in which the optimizer recorded its step) is an
/// Error, and nothing is written.
void setLr(CompiledModel &model, const Optimizer &optimizer, double lr,
           size_t group = 0, Here loc = Here::current());

namespace lr_scheduler {

/// A schedule over the learning rates of `optimizer`'s groups in `model`.
/// Constructing one writes epoch 0's rates (PyTorch's constructors take
/// that first step); step() moves to the next epoch and writes its rates.
class LRScheduler {
public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler &) = delete;
  LRScheduler &operator=(const LRScheduler &) = delete;

  /// The next epoch's rates, written into the model.
  void step(Here loc = Here::current());
  /// Writes epoch `epoch`'s rates and goes on from there: resuming from a
  /// checkpoint (constructing a scheduler writes epoch 0's rates over
  /// whatever the model held).
  void resumeAt(int64_t epoch, Here loc = Here::current());
  /// The rates written last, one per group (get_last_lr()).
  const std::vector<double> &getLastLr() const { return lastLr_; }
  /// The epoch of getLastLr(): 0 after construction (last_epoch).
  int64_t lastEpoch() const { return epoch_; }
  /// The rate of group `group` at `epoch` from its base rate `base`.
  virtual double lrAt(size_t group, double base, int64_t epoch) const = 0;
  /// Why `epoch` has no rate ("" when it has one).
  virtual std::string refuse(int64_t epoch) const;
  /// The base rates, one per group (base_lrs).
  const std::vector<double> &baseLrs() const { return baseLrs_; }
  /// Whether `other` writes the same learning-rate states of the same
  /// compiled model.
  bool sameRates(const LRScheduler &other) const;

protected:
  LRScheduler(const Optimizer &optimizer, CompiledModel &model,
              const Here &loc);
  /// Writes epoch `epoch`'s rates; each constructor ends with start().
  void moveTo(int64_t epoch, const Here &loc);
  void start(const Here &loc) { moveTo(0, loc); }
  size_t groupCount() const { return baseLrs_.size(); }
  std::vector<double> &bases() { return baseLrs_; }

private:
  CompiledModel model_; // a handle: copies share the model
  std::vector<std::vector<std::string>> lrStates_; // per group
  std::vector<double> baseLrs_;
  std::vector<double> lastLr_;
  int64_t epoch_ = 0;
};

/// torch.optim.lr_scheduler.StepLR: base * gamma^(epoch / stepSize).
class StepLR : public LRScheduler {
public:
  StepLR(const Optimizer &optimizer, CompiledModel &model, int64_t stepSize,
         double gamma = 0.1, Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;

private:
  int64_t stepSize_;
  double gamma_;
};

/// MultiStepLR: base * gamma^(how many milestones are <= epoch).
class MultiStepLR : public LRScheduler {
public:
  MultiStepLR(const Optimizer &optimizer, CompiledModel &model,
              std::vector<int64_t> milestones, double gamma = 0.1,
              Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;

private:
  std::vector<int64_t> milestones_; // sorted, repeats kept
  double gamma_;
};

/// ExponentialLR: base * gamma^epoch.
class ExponentialLR : public LRScheduler {
public:
  ExponentialLR(const Optimizer &optimizer, CompiledModel &model, double gamma,
                Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;

private:
  double gamma_;
};

/// CosineAnnealingLR: etaMin + (base - etaMin) * (1 + cos(pi * epoch /
/// tMax)) / 2 (rising again after tMax, as PyTorch's does).
class CosineAnnealingLR : public LRScheduler {
public:
  CosineAnnealingLR(const Optimizer &optimizer, CompiledModel &model,
                    int64_t tMax, double etaMin = 0.0,
                    Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;

private:
  int64_t tMax_;
  double etaMin_;
};

/// LinearLR (a warm-up): base * factor, the factor going linearly from
/// startFactor to endFactor over totalIters epochs, then staying.
class LinearLR : public LRScheduler {
public:
  LinearLR(const Optimizer &optimizer, CompiledModel &model,
           double startFactor = 1.0 / 3, double endFactor = 1.0,
           int64_t totalIters = 5, Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;

private:
  double start_, end_;
  int64_t total_;
};

/// LambdaLR: base * lambda(epoch), one lambda for every group or one per
/// group.
class LambdaLR : public LRScheduler {
public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(const Optimizer &optimizer, CompiledModel &model,
           const Lambda &lambda, Here loc = Here::current());
  LambdaLR(const Optimizer &optimizer, CompiledModel &model,
           std::vector<Lambda> lambdas, Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;

private:
  std::vector<Lambda> lambdas_;
};

/// OneCycleLR's settings (PyTorch's names and defaults). maxLr holds one
/// rate for every group or one per group. Give totalSteps, or epochs and
/// stepsPerEpoch.
struct OneCycleOptions {
  std::vector<double> maxLr;
  int64_t totalSteps = 0;
  int64_t epochs = 0;
  int64_t stepsPerEpoch = 0;
  double pctStart = 0.3;
  /// "cos" or "linear".
  std::string annealStrategy = "cos";
  /// PyTorch's default cycles the momentum too; Locus records the momentum
  /// as a constant of the step, so true is an Error that says so.
  bool cycleMomentum = true;
  double divFactor = 25.0;
  double finalDivFactor = 1e4;
  bool threePhase = false;
};

/// OneCycleLR: from maxLr / divFactor up to maxLr over pctStart of the
/// steps, then down to maxLr / divFactor / finalDivFactor (three phases
/// with threePhase). Stepped once per batch; stepping past totalSteps is an
/// Error, as in PyTorch. Its base rates are maxLr / divFactor. The one
/// step past totalSteps that PyTorch allows extrapolates, below zero with
/// linear annealing; a negative rate there is written as 0.
class OneCycleLR : public LRScheduler {
public:
  OneCycleLR(const Optimizer &optimizer, CompiledModel &model,
             const OneCycleOptions &options, Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;
  std::string refuse(int64_t epoch) const override;

private:
  struct Phase {
    double endStep;
    int startLr, endLr; // 0 initial, 1 max, 2 min
  };
  OneCycleOptions options_;
  int64_t totalSteps_;
  std::vector<Phase> phases_;
};

/// SequentialLR: `schedulers[i]` from epoch milestones[i - 1] on (the first
/// from 0), each counting its own epochs from 0 at its milestone. The
/// schedulers must be over the same optimizer and model.
class SequentialLR : public LRScheduler {
public:
  SequentialLR(const Optimizer &optimizer, CompiledModel &model,
               std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, Here loc = Here::current());
  double lrAt(size_t group, double base, int64_t epoch) const override;
  std::string refuse(int64_t epoch) const override;

private:
  /// The scheduler that runs at `epoch`, and its own epoch there.
  std::pair<const LRScheduler *, int64_t> at(int64_t epoch) const;

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

} // namespace lr_scheduler
} // namespace locus::optim

#endif // LOCUS_COMPILE_LRSCHEDULER_H
