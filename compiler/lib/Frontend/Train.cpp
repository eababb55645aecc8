//===- Train.cpp - gradients, state updates and optimizers ---------------===//
//
// The frontend's side of training: locus::grad and the optimizers record
// through the dialect's one autodiff (locus/Dialect/Autodiff.h), inside a
// Transaction, so a failure leaves the graph as it was and names the user's
// line.
//
//===----------------------------------------------------------------------===//

#include "GraphImpl.h"
#include "UserText.h"

#include "locus/Dialect/Autodiff.h"
#include "locus/Frontend/Nn.h"

using namespace locus;
using namespace locus::detail;

namespace {

/// The graph of all of `tensors` (the first's), checked.
GraphImpl &graphOf(const Tensor &first, const std::vector<Tensor> &tensors,
                   const Here &loc) {
  GraphImpl &g = GraphImpl::of(first, loc);
  for (const Tensor &t : tensors)
    (void)g.value(t, loc);
  return g;
}

std::vector<mlir::Value>
valuesOf(GraphImpl &g, const std::vector<Tensor> &tensors, const Here &loc) {
  std::vector<mlir::Value> values;
  values.reserve(tensors.size());
  for (const Tensor &t : tensors)
    values.push_back(g.value(t, loc));
  return values;
}

/// The gradients of `loss`; an Error at `loc` with the dialect's message.
std::vector<mlir::Value> differentiateAt(GraphImpl &g, mlir::Value loss,
                                         llvm::ArrayRef<mlir::Value> wrt,
                                         const Here &loc) {
  DiagnosticCapture capture(&g.context);
  auto grads = differentiate(g.graph, loss, wrt);
  if (mlir::failed(grads))
    throw userError(loc, capture.take());
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  return {grads->begin(), grads->end()};
}

} // namespace

std::vector<Tensor> locus::grad(const Tensor &loss,
                                const std::vector<Tensor> &wrt, Here loc) {
  GraphImpl &g = graphOf(loss, wrt, loc);
  Transaction tx(g);
  std::vector<mlir::Value> values = valuesOf(g, wrt, loc);
  std::vector<mlir::Value> grads =
      differentiateAt(g, g.value(loss, loc), values, loc);
  if (mlir::failed(mlir::verify(g.graph)))
    LOCUS_INTERNAL_ERROR("the backward pass does not verify");
  tx.commit();
  std::vector<Tensor> result;
  result.reserve(grads.size());
  for (mlir::Value v : grads)
    result.push_back(g.wrap(v));
  return result;
}

void locus::assign(const Tensor &state, const Tensor &value, Here loc) {
  GraphImpl &g = GraphImpl::of(state, loc);
  Transaction tx(g);
  mlir::Value s = g.value(state, loc), v = g.value(value, loc);
  if (!s.getDefiningOp<StateOp>())
    throw userError(loc,
                    "assign() writes state (a parameter or buffer); "
                    "this tensor is the result of " +
                        (s.getDefiningOp()
                             ? s.getDefiningOp()->getName().getStringRef().str()
                             : std::string("a block argument")));
  if (s.getType() != v.getType())
    throw userError(
        loc, std::string("assign() writes ") + dtypeName(value.dtype()) + " " +
                 shapeText(value.shape()) + " into state '" +
                 stateName(state, loc) + "' of " + dtypeName(state.dtype()) +
                 " " + shapeText(state.shape()));
  if (AssignOp earlier = GraphImpl::assignOf(s)) {
    // The last write wins: the earlier assign moves after `value` (which it
    // must follow) and writes it. rollbackTo can put it back.
    g.movedAssigns.push_back({earlier, earlier.getValue(),
                              earlier->getPrevNode(), earlier.getLoc()});
    earlier->moveAfter(&g.body().back());
    earlier.getValueMutable().assign(v);
    earlier->setLoc(g.location(loc));
    tx.commit();
    return;
  }
  DiagnosticCapture capture(&g.context);
  auto op = g.builder.create<AssignOp>(g.location(loc), s, v);
  g.finish(op, loc, capture);
  tx.commit();
}

Tensor locus::assignedValue(const Tensor &state, Here loc) {
  GraphImpl &g = GraphImpl::of(state, loc);
  mlir::Value s = g.value(state, loc);
  if (!s.getDefiningOp<StateOp>())
    throw userError(loc, "assignedValue() reads state (a parameter or "
                         "buffer); this tensor is computed");
  AssignOp assign = GraphImpl::assignOf(s);
  return assign ? g.wrap(assign.getValue()) : state;
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

struct optim::Optimizer::Config {
  OptimizerConfig value;
};

optim::Optimizer::Optimizer(std::vector<Tensor> params, Here loc)
    : params_(std::move(params)) {
  if (params_.empty())
    throw userError(loc, "an optimizer needs at least one parameter");
  GraphImpl &g = graphOf(params_.front(), params_, loc);
  for (const Tensor &p : params_)
    if (!g.value(p, loc).getDefiningOp<StateOp>())
      throw userError(loc, "an optimizer updates parameters (state made "
                           "with Graph::parameter or a layer); one of these "
                           "is a computed tensor");
}

void optim::Optimizer::step(const Tensor &loss, Here loc) {
  record({}, &loss, loc);
}

void optim::Optimizer::step(const std::vector<Tensor> &grads, Here loc) {
  if (grads.size() != params_.size())
    throw userError(loc, "step() takes one gradient per parameter: " +
                             std::to_string(params_.size()) + " parameters, " +
                             std::to_string(grads.size()) + " gradients");
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].shape() != params_[i].shape() ||
        grads[i].dtype() != params_[i].dtype())
      throw userError(loc, "step(): gradient " + std::to_string(i) + " is " +
                               dtypeName(grads[i].dtype()) + " " +
                               shapeText(grads[i].shape()) +
                               ", but parameter '" +
                               stateName(params_[i], loc) + "' is " +
                               dtypeName(params_[i].dtype()) + " " +
                               shapeText(params_[i].shape()));
  record(grads, nullptr, loc);
}

/// The update of every parameter from `grads`, or from the gradients of
/// `*loss` when it is given.
void optim::Optimizer::record(const std::vector<Tensor> &grads,
                              const Tensor *loss, const Here &loc) {
  if (stepped_)
    throw userError(loc, "step() records the training step once; every run "
                         "of the compiled model then performs it");
  GraphImpl &g = graphOf(loss ? *loss : grads.front(), params_, loc);
  Transaction tx(g);
  std::vector<mlir::Value> params = valuesOf(g, params_, loc);
  std::vector<mlir::Value> gradValues =
      loss ? differentiateAt(g, g.value(*loss, loc), params, loc)
           : valuesOf(g, grads, loc);
  Config config;
  configure(config);
  DiagnosticCapture capture(&g.context);
  if (mlir::failed(recordOptimizerStep(g.graph, params, gradValues,
                                       config.value, "optimizer.",
                                       g.location(loc))))
    throw userError(loc, capture.take());
  if (mlir::failed(mlir::verify(g.graph)))
    LOCUS_INTERNAL_ERROR("the training step does not verify: " +
                         capture.take());
  for (mlir::Operation &op : g.body())
    if (auto state = mlir::dyn_cast<StateOp>(op))
      g.sourceNames.try_emplace(state.getName().str(), GraphImpl::where(loc));
  tx.commit();
  stepped_ = true;
}

optim::SGD::SGD(std::vector<Tensor> params, const SGDOptions &options, Here loc)
    : Optimizer(std::move(params), loc), options_(options) {}

void optim::SGD::configure(Config &config) const {
  config.value.kind = OptimizerConfig::Kind::sgd;
  config.value.lr = options_.lr;
  config.value.momentum = options_.momentum;
  config.value.weightDecay = options_.weightDecay;
  config.value.nesterov = options_.nesterov;
}

optim::Adam::Adam(std::vector<Tensor> params, const AdamOptions &options,
                  Here loc)
    : Optimizer(std::move(params), loc), options_(options) {}

void optim::Adam::configure(Config &config) const {
  config.value.kind = OptimizerConfig::Kind::adam;
  config.value.lr = options_.lr;
  config.value.beta1 = options_.beta1;
  config.value.beta2 = options_.beta2;
  config.value.eps = options_.eps;
  config.value.weightDecay = options_.weightDecay;
}

optim::AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions &options,
                    Here loc)
    : Optimizer(std::move(params), loc), options_(options) {}

void optim::AdamW::configure(Config &config) const {
  config.value.kind = OptimizerConfig::Kind::adam;
  config.value.decoupled = true;
  config.value.lr = options_.lr;
  config.value.beta1 = options_.beta1;
  config.value.beta2 = options_.beta2;
  config.value.eps = options_.eps;
  config.value.weightDecay = options_.weightDecay;
}
