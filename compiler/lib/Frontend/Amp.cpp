//===- Amp.cpp - dynamic loss scaling recorded into the step -------------===//
//
// GradScaler's scale, unscale, skipped step and scale update as ops of the
// training step: PyTorch's algorithm (torch/cuda/amp/grad_scaler.py and
// its _amp_update_scale_ kernel), with the decision to skip an update a
// select on the device instead of a value read back by the host.
//
//===----------------------------------------------------------------------===//

#include "GraphImpl.h"
#include "UserText.h"

#include "locus/Frontend/Amp.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <cfloat>

using namespace locus;
using namespace locus::detail;

namespace {

bool isFloat(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

/// x in f32 (a 16-bit loss or gradient: the scale, 2^16, is no f16).
Tensor inF32(const Tensor &x, const Here &loc) {
  return x.dtype() == DType::f32 ? x : locus::cast(x, DType::f32, loc);
}

/// The device `v` is computed on when its sources say: the first explicit
/// move or pinned source found walking back from it (strict placement
/// keeps an op's operands on one device); null when nothing is pinned.
DeviceAttr pinnedDeviceOf(mlir::Value v) {
  llvm::SmallVector<mlir::Value> work{v};
  llvm::DenseSet<mlir::Value> seen;
  while (!work.empty()) {
    mlir::Value x = work.pop_back_val();
    mlir::Operation *def = x.getDefiningOp();
    if (!seen.insert(x).second || !def)
      continue;
    if (auto to = mlir::dyn_cast<ToOp>(def))
      return to.getDeviceAttr();
    if (auto state = mlir::dyn_cast<StateOp>(def)) {
      if (state.getDeviceAttr())
        return state.getDeviceAttr();
      continue;
    }
    if (auto input = mlir::dyn_cast<InputOp>(def)) {
      if (input.getDeviceAttr())
        return input.getDeviceAttr();
      continue;
    }
    for (mlir::Value operand : llvm::reverse(def->getOperands()))
      work.push_back(operand);
  }
  return {};
}

/// Every locus.assign after `marker` writes its state's own value back
/// when the scalar i1 `skip` is true: the update did not happen.
void keepStateUnless(mlir::Operation *marker, mlir::Value skip) {
  std::vector<AssignOp> assigns;
  for (mlir::Operation *op = marker->getNextNode(); op; op = op->getNextNode())
    if (auto assign = mlir::dyn_cast<AssignOp>(op))
      assigns.push_back(assign);
  for (AssignOp assign : assigns) {
    mlir::OpBuilder b(assign);
    mlir::Location at = assign.getLoc();
    auto type = mlir::cast<mlir::RankedTensorType>(assign.getState().getType());
    mlir::Value mask = skip;
    if (type.getRank() > 0) {
      mask = b.create<ReshapeOp>(at, skip,
                                 llvm::SmallVector<int64_t>(type.getRank(), 1));
      mask = b.create<BroadcastOp>(at, mask, type.getShape());
    }
    mlir::Value kept =
        b.create<SelectOp>(at, mask, assign.getState(), assign.getValue());
    assign.getValueMutable().assign(kept);
  }
}

} // namespace

amp::GradScaler::GradScaler(const GradScalerOptions &options, Here loc)
    : options_(options) {
  if (!(options.initScale > 0) || options.initScale > FLT_MAX)
    throw userError(loc, "GradScaler: init_scale must be positive and "
                         "finite in f32, got " +
                             std::to_string(options.initScale));
  if (!(options.growthFactor > 1.0))
    throw userError(loc, "GradScaler: growth_factor must be above 1, got " +
                             std::to_string(options.growthFactor));
  if (!(options.backoffFactor > 0.0 && options.backoffFactor < 1.0))
    throw userError(loc, "GradScaler: backoff_factor must be between 0 and "
                         "1, got " +
                             std::to_string(options.backoffFactor));
  if (options.growthInterval < 1 || options.growthInterval > (1 << 24))
    throw userError(loc, "GradScaler: growth_interval must be in [1, 2^24], "
                         "got " +
                             std::to_string(options.growthInterval));
}

Tensor amp::GradScaler::scale(const Tensor &loss, Here loc) {
  if (!options_.enabled)
    return loss;
  if (scale_)
    throw userError(loc, "GradScaler.scale() records once: each run of the "
                         "compiled step scales its loss");
  if (!loss.shape().empty() || !isFloat(loss.dtype()))
    throw userError(loc, "GradScaler.scale() takes the scalar float loss, "
                         "got " +
                             std::string(dtypeName(loss.dtype())) + " " +
                             shapeText(loss.shape()));
  Graph graph = loss.graph(loc);
  GraphImpl &g = GraphImpl::of(loss, loc);
  Transaction tx(g);
  // The scaler's state lives where the loss is computed, as PyTorch makes
  // its scale on the loss's device: a GPU's step reads it without a copy.
  Tensor scale = graph.buffer(scaleStateName(), {},
                              Init::full(options_.initScale), {}, loc);
  Tensor tracker =
      graph.buffer(growthTrackerStateName(), {}, Init::zeros(), {}, loc);
  if (DeviceAttr device = pinnedDeviceOf(g.value(loss, loc)))
    for (const Tensor &t : {scale, tracker})
      g.value(t, loc).getDefiningOp<StateOp>().setDeviceAttr(device);
  // In f32 (a 16-bit loss times 2^16 overflows f16), as PyTorch promotes.
  // The scale is where the loss is when its sources are pinned; else both
  // follow placement.
  Tensor scaled = locus::mul(inF32(loss, loc), scale, loc);
  tx.commit();
  scale_ = scale;
  tracker_ = tracker;
  return scaled;
}

void amp::GradScaler::unscale_(std::vector<Tensor> &grads, Here loc) {
  if (!options_.enabled)
    return;
  if (!scale_)
    throw userError(loc, "GradScaler.unscale_() divides gradients of the "
                         "scaled loss: call scale(loss) first");
  if (unscaled_)
    throw userError(loc, "GradScaler.unscale_() was already called for "
                         "this step");
  if (grads.empty())
    throw userError(loc, "GradScaler.unscale_() takes the gradients, got "
                         "none");
  GraphImpl &g = GraphImpl::of(*scale_, loc);
  Transaction tx(g);
  Tensor inverse = locus::reciprocal(*scale_, loc);
  Tensor zero = scale_->graph(loc).constant(0.0F, loc);
  std::vector<Tensor> unscaled;
  std::optional<Tensor> total;
  for (const Tensor &grad : grads) {
    if (!isFloat(grad.dtype()))
      throw userError(loc, "GradScaler.unscale_(): a gradient is " +
                               std::string(dtypeName(grad.dtype())));
    // In f32, rounded once to the gradient's type (1/2^16 is subnormal in
    // f16).
    Tensor u = locus::mul(inF32(grad, loc), inverse, loc);
    if (grad.dtype() != DType::f32)
      u = locus::cast(u, grad.dtype(), loc);
    unscaled.push_back(u);
    // inf * 0 and NaN * 0 are NaN, any finite value * 0 is 0: the sum is
    // NaN exactly when some value is not finite.
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < static_cast<int64_t>(u.shape().size()); ++d)
      axes.push_back(d);
    Tensor zeros = locus::mul(inF32(u, loc), zero, loc);
    Tensor part = axes.empty() ? zeros : locus::sum(zeros, axes, false, loc);
    total = total ? locus::add(*total, part, loc) : part;
  }
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): grads is not empty.
  Tensor found = locus::ne(*total, *total, loc);
  tx.commit();
  grads = std::move(unscaled);
  found_ = found;
  unscaled_ = true;
  unscaledCount_ = grads.size();
}

void amp::GradScaler::step(optim::Optimizer &optimizer,
                           std::vector<Tensor> grads, Here loc) {
  if (!options_.enabled) {
    optimizer.step(grads, loc);
    return;
  }
  if (stepped_)
    throw userError(loc, "GradScaler.step() was already recorded: a scaler "
                         "serves one optimizer, and every run of the "
                         "compiled model performs its step");
  if (!scale_)
    throw userError(loc, "GradScaler.step() updates from gradients of the "
                         "scaled loss: call scale(loss) first");
  GraphImpl &g = GraphImpl::of(*scale_, loc);
  Transaction tx(g);
  if (unscaled_ && grads.size() != unscaledCount_)
    throw userError(loc, "GradScaler.step() takes the gradients unscale_() "
                         "divided: " +
                             std::to_string(unscaledCount_) + " there, " +
                             std::to_string(grads.size()) + " here");
  bool unscaledHere = !unscaled_;
  if (unscaledHere)
    unscale_(grads, loc);
  mlir::Operation *marker = &g.body().back();
  try {
    optimizer.step(grads, loc);
  } catch (...) {
    if (unscaledHere) {
      unscaled_ = false;
      found_.reset();
    }
    throw;
  }
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): unscale_ set it.
  keepStateUnless(marker, g.value(*found_, loc));
  if (mlir::failed(mlir::verify(g.graph)))
    LOCUS_INTERNAL_ERROR("the scaled training step does not verify");
  tx.commit();
  stepped_ = true;
}

void amp::GradScaler::update(Here loc) {
  if (!options_.enabled)
    return;
  if (!stepped_)
    throw userError(loc, "GradScaler.update() follows step(): the scale "
                         "changes by whether the step found an inf or NaN");
  if (updated_)
    throw userError(loc, "GradScaler.update() records once; every run of "
                         "the compiled model then performs it");
  // NOLINTBEGIN(bugprone-unchecked-optional-access): step() made them.
  const Tensor &scale = *scale_, &tracker = *tracker_, &found = *found_;
  // NOLINTEND(bugprone-unchecked-optional-access)
  GraphImpl &g = GraphImpl::of(scale, loc);
  Transaction tx(g);
  Graph graph = scale.graph(loc);
  auto constant = [&](double v) {
    return graph.constant(static_cast<float>(v), loc);
  };
  Tensor zero = constant(0.0);
  Tensor next = locus::add(tracker, constant(1.0), loc);
  Tensor grow = locus::ge(next, constant(options_.growthInterval), loc);
  Tensor grown = locus::mul(scale, constant(options_.growthFactor), loc);
  // As PyTorch: a grown scale that is not finite in f32 is not taken.
  grown =
      locus::where(locus::le(grown, constant(FLT_MAX), loc), grown, scale, loc);
  Tensor backedOff = locus::mul(scale, constant(options_.backoffFactor), loc);
  locus::assign(scale,
                locus::where(found, backedOff,
                             locus::where(grow, grown, scale, loc), loc),
                loc);
  locus::assign(
      tracker,
      locus::where(found, zero, locus::where(grow, zero, next, loc), loc), loc);
  tx.commit();
  updated_ = true;
}

Tensor amp::GradScaler::foundInf(Here loc) const {
  if (!options_.enabled)
    throw userError(loc, "GradScaler.foundInf(): this scaler is disabled "
                         "(enabled = false) and checks nothing");
  if (!found_)
    throw userError(loc, "GradScaler.foundInf() is known once unscale_() or "
                         "step() has recorded");
  return locus::cast(*found_, DType::f32, loc);
}
