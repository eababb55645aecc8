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
#include "locus/Dialect/DynamicDims.h"
#include "locus/Frontend/Nn.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace locus;
using namespace locus::detail;

namespace {

/// The prefix of an optimizer's own state names: "optimizer." for the
/// graph's first optimizer ("optimizer.step"), "optimizer1." for a second
/// one (a GAN's), and so on: the first whose names are free.
std::string freePrefix(GraphImpl &g) {
  llvm::StringSet<> names;
  for (mlir::Operation &op : g.body())
    if (auto state = mlir::dyn_cast<StateOp>(op))
      names.insert(state.getName());
  for (int i = 0;; ++i) {
    std::string prefix =
        i ? "optimizer" + std::to_string(i) + "." : std::string("optimizer.");
    if (!names.contains(learningRateStateName(prefix, 0)) &&
        !names.contains(prefix + "step"))
      return prefix;
  }
}

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
  // With dynamic sizes, the frontend's dims cover the new values.
  if (g.dynamic) {
    mlir::FailureOr<DynamicDims> dims = DynamicDims::analyze(g.graph);
    if (mlir::failed(dims))
      throw userError(loc, capture.take());
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    *g.dynamic = std::move(*dims);
  }
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

namespace {

/// The parameters of each group.
template <typename Options>
std::vector<std::vector<Tensor>>
groupParams(const std::vector<optim::ParamGroup<Options>> &groups) {
  std::vector<std::vector<Tensor>> params;
  params.reserve(groups.size());
  for (const optim::ParamGroup<Options> &group : groups)
    params.push_back(group.params);
  return params;
}

/// Each group's options: its own, or `defaults`.
template <typename Options>
std::vector<Options>
groupOptions(const std::vector<optim::ParamGroup<Options>> &groups,
             const Options &defaults) {
  std::vector<Options> options;
  options.reserve(groups.size());
  for (const optim::ParamGroup<Options> &group : groups)
    options.push_back(group.options.value_or(defaults));
  return options;
}

} // namespace

optim::Optimizer::Optimizer(std::vector<std::vector<Tensor>> groups, Here loc) {
  if (groups.empty())
    throw userError(loc, "an optimizer needs at least one parameter group");
  for (std::vector<Tensor> &group : groups) {
    if (group.empty())
      throw userError(loc, groups.size() == 1
                               ? "an optimizer needs at least one parameter"
                               : "parameter group " +
                                     std::to_string(groupSizes_.size()) +
                                     " has no parameters");
    groupSizes_.push_back(group.size());
    params_.insert(params_.end(), group.begin(), group.end());
  }
  GraphImpl &g = graphOf(params_.front(), params_, loc);
  llvm::DenseSet<mlir::Value> seen;
  for (const Tensor &p : params_) {
    mlir::Value v = g.value(p, loc);
    if (!v.getDefiningOp<StateOp>())
      throw userError(loc, "an optimizer updates parameters (state made "
                           "with Graph::parameter or a layer); one of these "
                           "is a computed tensor");
    if (!seen.insert(v).second)
      throw userError(loc, "parameter '" + stateName(p, loc) +
                               "' is given to the optimizer twice");
  }
}

std::vector<Tensor> optim::Optimizer::groupParameters(size_t group,
                                                      Here loc) const {
  checkGroup(group, "groupParameters", loc);
  size_t first = 0;
  for (size_t i = 0; i < group; ++i)
    first += groupSizes_[i];
  return {params_.begin() + static_cast<std::ptrdiff_t>(first),
          params_.begin() +
              static_cast<std::ptrdiff_t>(first + groupSizes_[group])};
}

std::string optim::Optimizer::lrStateName(size_t group, Here loc) const {
  return lrStateNames(group, loc).front();
}

std::vector<std::string> optim::Optimizer::lrStateNames(size_t group,
                                                        Here loc) const {
  checkGroup(group, "lrStateNames", loc);
  // Before step() the names are not known: a graph's second optimizer
  // takes "optimizer1." when it records.
  if (!stepped_)
    throw userError(loc, "the optimizer's learning rate is state once its "
                         "step() is recorded; call step() first");
  return lrStates_[group];
}

double optim::Optimizer::initialLr(size_t group, Here loc) const {
  checkGroup(group, "initialLr", loc);
  Config config;
  configure(config, group);
  return config.value.lr;
}

void optim::Optimizer::checkGroup(size_t group, const char *what,
                                  const Here &loc) const {
  if (group >= groupSizes_.size())
    throw userError(loc, std::string(what) + "(): parameter group " +
                             std::to_string(group) + " of an optimizer with " +
                             std::to_string(groupSizes_.size()) + " group" +
                             (groupSizes_.size() == 1 ? "" : "s"));
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
  std::vector<OptimizerGroup> groups;
  for (size_t i = 0; i < groupSizes_.size(); ++i) {
    Config config;
    configure(config, i);
    groups.push_back({config.value, groupSizes_[i]});
  }
  DiagnosticCapture capture(&g.context);
  std::vector<std::vector<std::string>> lrStates;
  std::string prefix = freePrefix(g);
  if (mlir::failed(recordOptimizerStep(g.graph, params, gradValues, groups,
                                       prefix, g.location(loc), &lrStates)))
    throw userError(loc, capture.take());
  if (mlir::failed(mlir::verify(g.graph)))
    LOCUS_INTERNAL_ERROR("the training step does not verify: " +
                         capture.take());
  for (mlir::Operation &op : g.body())
    if (auto state = mlir::dyn_cast<StateOp>(op))
      g.sourceNames.try_emplace(state.getName().str(), GraphImpl::where(loc));
  tx.commit();
  lrStates_ = std::move(lrStates);
  prefix_ = std::move(prefix);
  stepped_ = true;
}

optim::SGD::SGD(std::vector<Tensor> params, const SGDOptions &options, Here loc)
    : Optimizer({std::move(params)}, loc), options_{options} {}

optim::SGD::SGD(const std::vector<ParamGroup<SGDOptions>> &groups,
                const SGDOptions &defaults, Here loc)
    : Optimizer(groupParams(groups), loc),
      options_(groupOptions(groups, defaults)) {}

void optim::SGD::configure(Config &config, size_t group) const {
  const SGDOptions &o = options_[group];
  config.value.kind = OptimizerConfig::Kind::sgd;
  config.value.lr = o.lr;
  config.value.momentum = o.momentum;
  config.value.weightDecay = o.weightDecay;
  config.value.nesterov = o.nesterov;
}

optim::Adam::Adam(std::vector<Tensor> params, const AdamOptions &options,
                  Here loc)
    : Optimizer({std::move(params)}, loc), options_{options} {}

optim::Adam::Adam(const std::vector<ParamGroup<AdamOptions>> &groups,
                  const AdamOptions &defaults, Here loc)
    : Optimizer(groupParams(groups), loc),
      options_(groupOptions(groups, defaults)) {}

void optim::Adam::configure(Config &config, size_t group) const {
  const AdamOptions &o = options_[group];
  config.value.kind = OptimizerConfig::Kind::adam;
  config.value.lr = o.lr;
  config.value.beta1 = o.beta1;
  config.value.beta2 = o.beta2;
  config.value.eps = o.eps;
  config.value.weightDecay = o.weightDecay;
}

optim::AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions &options,
                    Here loc)
    : Optimizer({std::move(params)}, loc), options_{options} {}

optim::AdamW::AdamW(const std::vector<ParamGroup<AdamWOptions>> &groups,
                    const AdamWOptions &defaults, Here loc)
    : Optimizer(groupParams(groups), loc),
      options_(groupOptions(groups, defaults)) {}

void optim::AdamW::configure(Config &config, size_t group) const {
  const AdamWOptions &o = options_[group];
  config.value.kind = OptimizerConfig::Kind::adam;
  config.value.decoupled = true;
  config.value.lr = o.lr;
  config.value.beta1 = o.beta1;
  config.value.beta2 = o.beta2;
  config.value.eps = o.eps;
  config.value.weightDecay = o.weightDecay;
}
