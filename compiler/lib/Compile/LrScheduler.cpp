//===- LrScheduler.cpp - learning rates of a compiled model ---------------===//
//
// The closed forms of torch.optim.lr_scheduler (PyTorch 1.13's
// _get_closed_form_lr, and OneCycleLR's get_lr, which is one), written into
// the learning-rate state an optimizer records.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/LrScheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

using namespace locus;
using namespace locus::optim;
using namespace locus::optim::lr_scheduler;

namespace {

Error errorAt(const Here &loc, std::string message) {
  return Error(loc.file_name(), loc.line(), loc.column(), std::move(message));
}

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

/// The states of group `group`'s rate in `model` (one per device), checked:
/// the model holds them.
std::vector<std::string> lrStates(const CompiledModel &model,
                                  const Optimizer &optimizer, size_t group,
                                  const Here &loc) {
  std::vector<std::string> wanted = optimizer.lrStateNames(group, loc);
  const std::vector<std::string> &names = model.stateNames();
  for (const std::string &name : wanted)
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw errorAt(loc, "this model has no learning-rate state '" + name +
                             "': it was not compiled from the graph in which "
                             "the optimizer recorded its step()");
  return wanted;
}

/// Writes `lr` into each of `states`.
void writeLr(CompiledModel &model, const std::vector<std::string> &states,
             double lr) {
  HostTensor value = HostTensor::fromF32({}, {static_cast<float>(lr)});
  for (const std::string &name : states)
    model.setState(name, value);
}

void checkRate(double lr, const Here &loc, const std::string &what) {
  if (!std::isfinite(lr) || lr < 0)
    throw errorAt(loc,
                  what + " must be a non-negative number, got " + number(lr));
}

void checkPositive(int64_t value, const Here &loc, const std::string &what) {
  if (value <= 0)
    throw errorAt(loc,
                  what + " must be positive, got " + std::to_string(value));
}

} // namespace

double optim::getLr(const CompiledModel &model, const Optimizer &optimizer,
                    size_t group, Here loc) {
  return model.state(lrStates(model, optimizer, group, loc).front()).scalar();
}

void optim::setLr(CompiledModel &model, const Optimizer &optimizer, double lr,
                  size_t group, Here loc) {
  std::vector<std::string> states = lrStates(model, optimizer, group, loc);
  checkRate(lr, loc, "a learning rate");
  writeLr(model, states, lr);
}

//===----------------------------------------------------------------------===//
// LRScheduler
//===----------------------------------------------------------------------===//

LRScheduler::LRScheduler(const Optimizer &optimizer, CompiledModel &model,
                         const Here &loc)
    : model_(model) {
  for (size_t i = 0; i < optimizer.groupCount(); ++i) {
    lrStates_.push_back(lrStates(model, optimizer, i, loc));
    baseLrs_.push_back(optimizer.initialLr(i, loc));
  }
}

std::string LRScheduler::refuse(int64_t) const { return ""; }

void LRScheduler::step(Here loc) { moveTo(epoch_ + 1, loc); }

void LRScheduler::resumeAt(int64_t epoch, Here loc) {
  if (epoch < 0)
    throw errorAt(loc, "a scheduler resumes at an epoch >= 0, got " +
                           std::to_string(epoch));
  moveTo(epoch, loc);
}

bool LRScheduler::sameRates(const LRScheduler &other) const {
  return model_ == other.model_ && lrStates_ == other.lrStates_;
}

void LRScheduler::moveTo(int64_t epoch, const Here &loc) {
  std::string why = refuse(epoch);
  if (!why.empty())
    throw errorAt(loc, why);
  std::vector<double> rates;
  for (size_t i = 0; i < baseLrs_.size(); ++i) {
    rates.push_back(lrAt(i, baseLrs_[i], epoch));
    checkRate(rates.back(), loc,
              "the scheduled learning rate of group " + std::to_string(i) +
                  " at epoch " + std::to_string(epoch));
  }
  for (size_t i = 0; i < rates.size(); ++i)
    writeLr(model_, lrStates_[i], rates[i]);
  lastLr_ = std::move(rates);
  epoch_ = epoch;
}

//===----------------------------------------------------------------------===//
// The schedules
//===----------------------------------------------------------------------===//

StepLR::StepLR(const Optimizer &optimizer, CompiledModel &model,
               int64_t stepSize, double gamma, Here loc)
    : LRScheduler(optimizer, model, loc), stepSize_(stepSize), gamma_(gamma) {
  checkPositive(stepSize, loc, "StepLR's step_size");
  checkRate(gamma, loc, "StepLR's gamma");
  start(loc);
}

double StepLR::lrAt(size_t, double base, int64_t epoch) const {
  int64_t decays = epoch / stepSize_; // PyTorch's last_epoch // step_size
  return base * std::pow(gamma_, static_cast<double>(decays));
}

MultiStepLR::MultiStepLR(const Optimizer &optimizer, CompiledModel &model,
                         std::vector<int64_t> milestones, double gamma,
                         Here loc)
    : LRScheduler(optimizer, model, loc), milestones_(std::move(milestones)),
      gamma_(gamma) {
  checkRate(gamma, loc, "MultiStepLR's gamma");
  std::sort(milestones_.begin(), milestones_.end());
  start(loc);
}

double MultiStepLR::lrAt(size_t, double base, int64_t epoch) const {
  auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
      milestones_.begin();
  return base * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(const Optimizer &optimizer, CompiledModel &model,
                             double gamma, Here loc)
    : LRScheduler(optimizer, model, loc), gamma_(gamma) {
  checkRate(gamma, loc, "ExponentialLR's gamma");
  start(loc);
}

double ExponentialLR::lrAt(size_t, double base, int64_t epoch) const {
  return base * std::pow(gamma_, static_cast<double>(epoch));
}

CosineAnnealingLR::CosineAnnealingLR(const Optimizer &optimizer,
                                     CompiledModel &model, int64_t tMax,
                                     double etaMin, Here loc)
    : LRScheduler(optimizer, model, loc), tMax_(tMax), etaMin_(etaMin) {
  checkPositive(tMax, loc, "CosineAnnealingLR's T_max");
  checkRate(etaMin, loc, "CosineAnnealingLR's eta_min");
  start(loc);
}

double CosineAnnealingLR::lrAt(size_t, double base, int64_t epoch) const {
  return etaMin_ +
         (base - etaMin_) *
             (1 + std::cos(std::numbers::pi * static_cast<double>(epoch) /
                           static_cast<double>(tMax_))) /
             2;
}

LinearLR::LinearLR(const Optimizer &optimizer, CompiledModel &model,
                   double startFactor, double endFactor, int64_t totalIters,
                   Here loc)
    : LRScheduler(optimizer, model, loc), start_(startFactor), end_(endFactor),
      total_(totalIters) {
  if (!(startFactor > 0 && startFactor <= 1))
    throw errorAt(loc, "LinearLR's start_factor must be in (0, 1], got " +
                           number(startFactor));
  if (!(endFactor >= 0 && endFactor <= 1))
    throw errorAt(loc, "LinearLR's end_factor must be in [0, 1], got " +
                           number(endFactor));
  checkPositive(totalIters, loc, "LinearLR's total_iters");
  start(loc);
}

double LinearLR::lrAt(size_t, double base, int64_t epoch) const {
  double done = static_cast<double>(std::min(total_, epoch));
  return base * (start_ + (end_ - start_) * done / static_cast<double>(total_));
}

LambdaLR::LambdaLR(const Optimizer &optimizer, CompiledModel &model,
                   const Lambda &lambda, Here loc)
    : LambdaLR(optimizer, model,
               std::vector<Lambda>(optimizer.groupCount(), lambda), loc) {}

LambdaLR::LambdaLR(const Optimizer &optimizer, CompiledModel &model,
                   std::vector<Lambda> lambdas, Here loc)
    : LRScheduler(optimizer, model, loc), lambdas_(std::move(lambdas)) {
  if (lambdas_.size() != groupCount())
    throw errorAt(loc, "LambdaLR takes one lambda or one per parameter "
                       "group: " +
                           std::to_string(groupCount()) + " groups, " +
                           std::to_string(lambdas_.size()) + " lambdas");
  for (const Lambda &lambda : lambdas_)
    if (!lambda)
      throw errorAt(loc, "LambdaLR's lambda is empty");
  start(loc);
}

double LambdaLR::lrAt(size_t group, double base, int64_t epoch) const {
  return base * lambdas_[group](epoch);
}

//===----------------------------------------------------------------------===//
// OneCycleLR
//===----------------------------------------------------------------------===//

namespace {

/// OneCycleLR's settings, checked as PyTorch checks them; its step count.
int64_t oneCycleSteps(const OneCycleOptions &o, size_t groups,
                      const Here &loc) {
  if (o.cycleMomentum)
    throw errorAt(loc, "OneCycleLR with cycle_momentum cycles the momentum, "
                       "which a Locus optimizer records as a constant of the "
                       "step; pass cycleMomentum = false (cycle_momentum="
                       "False in Python)");
  if (o.maxLr.size() != 1 && o.maxLr.size() != groups)
    throw errorAt(loc, "OneCycleLR's max_lr takes one rate or one per "
                       "parameter group: " +
                           std::to_string(groups) + " groups, " +
                           std::to_string(o.maxLr.size()) + " rates");
  for (double lr : o.maxLr)
    checkRate(lr, loc, "OneCycleLR's max_lr");
  if (!(o.pctStart >= 0 && o.pctStart <= 1))
    throw errorAt(loc, "OneCycleLR's pct_start must be in [0, 1], got " +
                           number(o.pctStart));
  if (o.annealStrategy != "cos" && o.annealStrategy != "linear")
    throw errorAt(loc, "OneCycleLR's anneal_strategy must be 'cos' or "
                       "'linear', got '" +
                           o.annealStrategy + "'");
  if (!(o.divFactor > 0) || !(o.finalDivFactor > 0))
    throw errorAt(loc, "OneCycleLR's div_factor and final_div_factor must be "
                       "positive");
  if (o.totalSteps != 0) {
    checkPositive(o.totalSteps, loc, "OneCycleLR's total_steps");
    return o.totalSteps;
  }
  if (o.epochs == 0 && o.stepsPerEpoch == 0)
    throw errorAt(loc, "OneCycleLR needs total_steps, or epochs and "
                       "steps_per_epoch");
  checkPositive(o.epochs, loc, "OneCycleLR's epochs");
  checkPositive(o.stepsPerEpoch, loc, "OneCycleLR's steps_per_epoch");
  int64_t total = 0;
  if (__builtin_mul_overflow(o.epochs, o.stepsPerEpoch, &total))
    throw errorAt(loc, "OneCycleLR's epochs * steps_per_epoch overflows");
  return total;
}

} // namespace

OneCycleLR::OneCycleLR(const Optimizer &optimizer, CompiledModel &model,
                       const OneCycleOptions &options, Here loc)
    : LRScheduler(optimizer, model, loc), options_(options),
      totalSteps_(oneCycleSteps(options, optimizer.groupCount(), loc)) {
  if (options_.maxLr.size() == 1)
    options_.maxLr.assign(groupCount(), options_.maxLr.front());
  for (size_t i = 0; i < groupCount(); ++i)
    bases()[i] = options_.maxLr[i] / options_.divFactor;
  auto total = static_cast<double>(totalSteps_);
  double rise = options_.pctStart * total - 1;
  if (options_.threePhase)
    phases_ = {{rise, 0, 1},
               {2 * options_.pctStart * total - 2, 1, 0},
               {total - 1, 0, 2}};
  else
    phases_ = {{rise, 0, 1}, {total - 1, 1, 2}};
  start(loc);
}

std::string OneCycleLR::refuse(int64_t epoch) const {
  if (epoch <= totalSteps_)
    return "";
  return "OneCycleLR stepped " + std::to_string(epoch) +
         " times; its total_steps is " + std::to_string(totalSteps_);
}

double OneCycleLR::lrAt(size_t group, double base, int64_t epoch) const {
  double rates[3] = {base, options_.maxLr[group],
                     base / options_.finalDivFactor};
  double step = static_cast<double>(epoch), startStep = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase &phase = phases_[i];
    if (step <= phase.endStep || i + 1 == phases_.size()) {
      double pct = (step - startStep) / (phase.endStep - startStep);
      double from = rates[phase.startLr], to = rates[phase.endLr];
      double lr =
          options_.annealStrategy == "linear"
              ? (to - from) * pct + from
              : to + (from - to) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
      // The one step PyTorch allows past the end extrapolates, below zero
      // with linear annealing; a negative rate there is written as 0, so
      // the step after the schedule learns nothing instead of ascending.
      return epoch >= totalSteps_ ? std::max(lr, 0.0) : lr;
    }
    startStep = phase.endStep;
  }
  return base; // not reached: the last phase always answers
}

//===----------------------------------------------------------------------===//
// SequentialLR
//===----------------------------------------------------------------------===//

SequentialLR::SequentialLR(const Optimizer &optimizer, CompiledModel &model,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, Here loc)
    : LRScheduler(optimizer, model, loc), schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  if (schedulers_.empty())
    throw errorAt(loc, "SequentialLR needs at least one scheduler");
  if (milestones_.size() + 1 != schedulers_.size())
    throw errorAt(loc, "SequentialLR takes one milestone fewer than "
                       "schedulers: " +
                           std::to_string(schedulers_.size()) +
                           " schedulers, " +
                           std::to_string(milestones_.size()) + " milestones");
  for (const std::shared_ptr<LRScheduler> &s : schedulers_)
    if (!s || !s->sameRates(*this))
      throw errorAt(loc, "SequentialLR's schedulers must all be over its "
                         "optimizer and model");
  if (!std::is_sorted(milestones_.begin(), milestones_.end()) ||
      (!milestones_.empty() && milestones_.front() <= 0))
    throw errorAt(loc, "SequentialLR's milestones must be positive and in "
                       "order");
  start(loc);
}

std::pair<const LRScheduler *, int64_t> SequentialLR::at(int64_t epoch) const {
  size_t i = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) -
             milestones_.begin();
  return {schedulers_[i].get(), i == 0 ? epoch : epoch - milestones_[i - 1]};
}

std::string SequentialLR::refuse(int64_t epoch) const {
  auto [scheduler, local] = at(epoch);
  return scheduler->refuse(local);
}

double SequentialLR::lrAt(size_t group, double, int64_t epoch) const {
  auto [scheduler, local] = at(epoch);
  return scheduler->lrAt(group, scheduler->baseLrs()[group], local);
}
