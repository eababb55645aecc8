//===- PlaceDevices.cpp - --locus-place-devices ---------------------------===//
//
// Gives every op of a graph a device (locus.device) and the reason
// (locus.placement), under one of four policies; see Passes.td. Every
// decision is logged under -debug-only=locus-place-devices.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/Autodiff.h"
#include "locus/Passes/CostModel.h"
#include "locus/Passes/MinCut.h"
#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "locus-place-devices"

namespace locus {
#define GEN_PASS_DEF_LOCUSPLACEDEVICES
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

using Policy = PlacementPolicy;

/// The pin of an op, if it has one: a locus.to, or a source created `on` a
/// device.
DeviceAttr pinOf(Operation *op) {
  if (auto to = dyn_cast<ToOp>(op))
    return to.getDevice();
  if (isa<InputOp, StateOp, ConstantOp>(op))
    return op->getAttrOfType<DeviceAttr>("device");
  return {};
}

class PlaceDevicesPass
    : public locus::impl::LocusPlaceDevicesBase<PlaceDevicesPass> {
public:
  using Base::Base;

  void runOnOperation() override;

private:
  /// The decision for one op.
  struct Decision {
    DeviceAttr device;
    PlacementAttr reason;
  };

  PlacementAttr reason(PlacementKind kind) {
    return PlacementAttr::get(&getContext(), kind, std::nullopt, std::nullopt,
                              DeviceAttr());
  }

  bool hasCudaKernel(Operation *op) const {
    StringRef name = op->getName().getStringRef();
    return CudaKernelRegistry::instance().has(name) &&
           llvm::find(noCudaKernel, name) == noCudaKernel.end();
  }

  /// Sources and outputs, which no policy computes.
  static bool isInterface(Operation *op) {
    return isa<InputOp, StateOp, ConstantOp, OutputOp>(op);
  }

  LogicalResult readOptions(GraphOp graph);
  /// Pins first: kept under every policy but cpu (which ignores those to
  /// CUDA, with a note); soft, with a warning, when allowed and there is no
  /// CUDA target; otherwise an error when they name a device that is not a
  /// target.
  LogicalResult placePins(GraphOp graph);
  /// "cpu, cuda:0, cuda:1".
  std::string targetNames() const;
  /// Records a note on the graph (kPlacementNotesAttrName) and remarks it at
  /// `first`.
  void addNote(GraphOp graph, Operation *first, const Twine &text);
  /// The error for a pin to a device that is not a target, with the fix.
  void reportPinOffTargets(Operation *op, DeviceAttr pin);
  void placeCpuOnly(GraphOp graph);
  /// prefer-gpu: the CUDA target an op's operands are on (a layer pinned
  /// to cuda:1 stays there), else the first.
  DeviceAttr gpuOfOperands(Operation *op) const;
  void placePreferGpu(GraphOp graph);
  void placeAuto(GraphOp graph);
  /// auto's problem over `devices` (0 the CPU), its nodes the ops of `ops`
  /// in order; GPU launches as inside a replayed CUDA graph with `inGraph`.
  placement::MultiProblem autoProblem(ArrayRef<Operation *> ops,
                                      ArrayRef<DeviceAttr> devices,
                                      bool inGraph);
  /// The GPU (device index) the whole step's kernels can all run on, to
  /// replay as one CUDA graph: the one pins name, else the first. None when
  /// a computing op must run on the CPU (a pin, or no CUDA kernel) or pins
  /// name two GPUs, since then the step does not replay as a graph.
  static std::optional<int>
  wholeStepGpu(ArrayRef<Operation *> ops,
               const placement::MultiProblem &problem);
  /// `problem` solved with every computing op held on `gpu` (state and
  /// constants stay free).
  static placement::MultiSolution wholeStepOn(int gpu,
                                              ArrayRef<Operation *> ops,
                                              placement::MultiProblem problem);
  /// Nanoseconds per step of moving `value` between devices, as a k x k
  /// matrix (0 the CPU, i the CUDA target i - 1; zero on the diagonal).
  std::vector<int64_t> moveCostsNs(Value value, int k) const;
  /// The values `ops` read from each other, as terms of the problem.
  void addValues(ArrayRef<Operation *> ops,
                 const llvm::DenseMap<Operation *, int> &nodeOf,
                 placement::MultiProblem &problem);
  /// The launches --locus-fuse-kernels will save, as fusion terms.
  void addFusions(ArrayRef<Operation *> ops,
                  const llvm::DenseMap<Operation *, int> &nodeOf,
                  placement::MultiProblem &problem, bool inGraph);
  LogicalResult placeStrict(GraphOp graph);
  /// Resolves the gradients of .to() (locus.to_device_of): under strict, a
  /// locus.to to the device `ref` got; under the other policies, which
  /// insert copies themselves, nothing.
  void resolveMovesBack(GraphOp graph);
  /// Sources with no pin follow the ops that read them (prefer-gpu, strict).
  void placeFollowers(ArrayRef<Operation *> followers, bool cloneForEachDevice);
  /// The device the fix of a mismatch moves the operands to: the first
  /// CUDA one among `devices`, else the first.
  static DeviceAttr fixTarget(ArrayRef<DeviceAttr> devices);
  void reportMismatch(Operation *op, ArrayRef<Value> operands,
                      ArrayRef<DeviceAttr> devices);

  Policy policyKind = Policy::automatic;
  DeviceAttr cpuDevice;
  SmallVector<DeviceAttr> cudaTargets;
  CostProfile costProfile;
  llvm::DenseMap<Operation *, Decision> decisions;
  /// strict: the ops reported for operands on different devices.
  llvm::DenseSet<Operation *> reportedOps;
};

} // namespace

//===----------------------------------------------------------------------===//
// Options and pins
//===----------------------------------------------------------------------===//

LogicalResult PlaceDevicesPass::readOptions(GraphOp graph) {
  std::string wrong = checkPlacementOptions(
      policy, std::vector<std::string>(devices.begin(), devices.end()));
  std::optional<Policy> parsed = parsePlacementPolicy(policy);
  if (!wrong.empty() || !parsed)
    return graph.emitError() << wrong;
  policyKind = *parsed;

  SmallVector<std::string> targets(devices.begin(), devices.end());
  if (targets.empty())
    for (const std::string &name : defaultTargets())
      targets.push_back(name);
  cpuDevice = {};
  cudaTargets.clear();
  for (const std::string &text : targets) {
    // Checked above: every name is cpu or cuda:N, and cpu is among them.
    DeviceAttr device = parseDevice(&getContext(), text);
    if (!device)
      return graph.emitError() << "unknown device '" << text << "'";
    if (device.isCpu())
      cpuDevice = device;
    else if (llvm::find(cudaTargets, device) == cudaTargets.end())
      cudaTargets.push_back(device);
  }

  costProfile = CostProfile();
  if (!profile.empty()) {
    std::string error;
    if (!CostProfile::load(profile, costProfile, error))
      return graph.emitError() << error;
  }
  return success();
}

std::string PlaceDevicesPass::targetNames() const {
  std::string names = cpuDevice.str();
  for (DeviceAttr target : cudaTargets)
    names += ", " + target.str();
  return names;
}

void PlaceDevicesPass::addNote(GraphOp graph, Operation *first,
                               const Twine &text) {
  MLIRContext *context = &getContext();
  SmallVector<Attribute> notes;
  if (auto old = graph->getAttrOfType<ArrayAttr>(kPlacementNotesAttrName))
    notes.append(old.begin(), old.end());
  std::string where = userLine(first->getLoc());
  NamedAttribute fields[] = {
      {StringAttr::get(context, "text"), StringAttr::get(context, text)},
      {StringAttr::get(context, "where"), StringAttr::get(context, where)}};
  notes.push_back(DictionaryAttr::get(context, fields));
  graph->setAttr(kPlacementNotesAttrName, ArrayAttr::get(context, notes));
  first->emitRemark() << text;
}

void PlaceDevicesPass::reportPinOffTargets(Operation *op, DeviceAttr pin) {
  InFlightDiagnostic diag = op->emitOpError()
                            << "is pinned to " << pin.str()
                            << ", which is not a target device (targets: "
                            << targetNames() << ")";
  std::string fix = "fix: add " + pin.str() + " to the target devices";
  if (cudaTargets.empty())
    fix += " (where there is no GPU it runs on the sim device), or allow "
           "soft placement (allow-soft-placement, "
           "CompileOptions::allowSoftPlacement) to run it on cpu with a "
           "warning, or compile with policy=cpu";
  diag.attachNote(op->getLoc()) << fix;
}

LogicalResult PlaceDevicesPass::placePins(GraphOp graph) {
  bool ok = true;
  unsigned softened = 0, ignored = 0;
  Operation *firstSoft = nullptr, *firstIgnored = nullptr;
  for (Operation &op : graph.getBodyBlock()) {
    DeviceAttr pin = pinOf(&op);
    if (!pin)
      continue;
    if (pin.isCpu()) {
      decisions[&op] = {pin, reason(PlacementKind::pinned)};
      ++numPinned;
      continue;
    }
    if (policyKind == Policy::cpu) {
      decisions[&op] = {cpuDevice, reason(PlacementKind::policy)};
      firstIgnored = firstIgnored ? firstIgnored : &op;
      ++ignored;
    } else if (llvm::find(cudaTargets, pin) != cudaTargets.end()) {
      decisions[&op] = {pin, reason(PlacementKind::pinned)};
      ++numPinned;
    } else if (cudaTargets.empty() && allowSoftPlacement) {
      decisions[&op] = {cpuDevice, reason(PlacementKind::soft)};
      firstSoft = firstSoft ? firstSoft : &op;
      ++softened;
    } else {
      reportPinOffTargets(&op, pin);
      ok = false;
    }
  }
  if (softened) {
    std::string note =
        "no CUDA device among the targets: " + std::to_string(softened) +
        " op(s) pinned to CUDA run on cpu";
    graph->setAttr(kSoftNoteAttrName, StringAttr::get(&getContext(), note));
    firstSoft->emitWarning()
        << "soft placement: " << note << " (the first pin is here)";
  }
  if (ignored)
    addNote(graph, firstIgnored,
            "policy cpu: " + Twine(ignored) +
                " pin(s) to CUDA devices do not hold; .to() moves are no-ops "
                "and values created on a GPU are made on cpu (the first pin "
                "is here)");
  return success(ok);
}

//===----------------------------------------------------------------------===//
// cpu, and prefer-gpu or auto without a CUDA target
//===----------------------------------------------------------------------===//

void PlaceDevicesPass::placeCpuOnly(GraphOp graph) {
  // prefer-gpu asked for a GPU: without one, that is soft and said so.
  bool soft = cudaTargets.empty() && policyKind == Policy::preferGpu;
  for (Operation &op : graph.getBodyBlock()) {
    if (decisions.count(&op))
      continue;
    PlacementKind kind = PlacementKind::policy;
    if (isa<InputOp, OutputOp>(op))
      kind = PlacementKind::host_io;
    else if (soft && !isInterface(&op))
      kind = PlacementKind::soft;
    decisions[&op] = {cpuDevice, reason(kind)};
  }
  if (!soft)
    return;
  if (!graph->hasAttr(kSoftNoteAttrName))
    graph->setAttr(kSoftNoteAttrName,
                   StringAttr::get(&getContext(),
                                   "no CUDA device among the targets: every "
                                   "op runs on cpu"));
  graph.emitWarning() << "policy prefer-gpu, but no CUDA device among the "
                         "targets ("
                      << targetNames() << "): every op runs on cpu";
}

//===----------------------------------------------------------------------===//
// prefer-gpu
//===----------------------------------------------------------------------===//

void PlaceDevicesPass::placeFollowers(ArrayRef<Operation *> followers,
                                      bool cloneForEachDevice) {
  // Last first: a follower's readers are decided before it is.
  for (Operation *op : llvm::reverse(followers)) {
    llvm::SetVector<DeviceAttr> wanted;
    for (Operation *user : op->getUsers())
      if (auto it = decisions.find(user);
          it != decisions.end() && !isa<AssignOp>(user))
        wanted.insert(it->second.device);
    if (wanted.empty()) {
      decisions[op] = {cpuDevice, reason(PlacementKind::colocated)};
      continue;
    }
    if (wanted.size() == 1 || !cloneForEachDevice) {
      // One device, or several (prefer-gpu): the CUDA one if among them; a
      // load-time copy serves the others.
      DeviceAttr device = wanted.front();
      for (DeviceAttr d : wanted)
        if (d.isCuda()) {
          device = d;
          break;
        }
      decisions[op] = {device, reason(PlacementKind::colocated)};
      continue;
    }
    // strict: a scalar-like constant (chain) used on several devices is
    // recorded once per device, as PyTorch treats Python scalars.
    decisions[op] = {wanted[0], reason(PlacementKind::colocated)};
    OpBuilder builder(op->getContext());
    for (DeviceAttr device : llvm::drop_begin(wanted)) {
      builder.setInsertionPointAfter(op);
      Operation *clone = builder.clone(*op);
      op->getResult(0).replaceUsesWithIf(
          clone->getResult(0), [&](OpOperand &use) {
            auto it = decisions.find(use.getOwner());
            return it != decisions.end() && it->second.device == device;
          });
      decisions[clone] = {device, reason(PlacementKind::colocated)};
    }
  }
}

DeviceAttr PlaceDevicesPass::gpuOfOperands(Operation *op) const {
  // The CUDA target most of its operands' bytes are on; the first one on a
  // tie or when none is.
  llvm::SmallDenseMap<DeviceAttr, int64_t, 4> bytesOn;
  for (Value operand : op->getOperands())
    if (auto it = decisions.find(operand.getDefiningOp());
        it != decisions.end() && it->second.device.isCuda())
      bytesOn[it->second.device] += bytesOf(operand.getType()) + 1;
  DeviceAttr best = cudaTargets.front();
  int64_t most = 0;
  for (DeviceAttr target : cudaTargets)
    if (bytesOn.lookup(target) > most) {
      most = bytesOn.lookup(target);
      best = target;
    }
  return best;
}

void PlaceDevicesPass::placePreferGpu(GraphOp graph) {
  SmallVector<Operation *> followers;
  for (Operation &op : graph.getBodyBlock()) {
    if (decisions.count(&op))
      continue;
    if (isa<InputOp, OutputOp>(op)) {
      decisions[&op] = {cpuDevice, reason(PlacementKind::host_io)};
    } else if (isa<StateOp, ConstantOp>(op)) {
      followers.push_back(&op);
    } else if (hasCudaKernel(&op)) {
      decisions[&op] = {gpuOfOperands(&op), reason(PlacementKind::policy)};
    } else {
      decisions[&op] = {
          cpuDevice,
          PlacementAttr::get(&getContext(), PlacementKind::no_kernel,
                             std::nullopt, std::nullopt, gpuOfOperands(&op))};
    }
  }
  placeFollowers(followers, /*cloneForEachDevice=*/false);
}

//===----------------------------------------------------------------------===//
// auto: the least estimated step time over the CPU and every CUDA target
//===----------------------------------------------------------------------===//

std::vector<int64_t> PlaceDevicesPass::moveCostsNs(Value value, int k) const {
  int64_t bytes = bytesOf(value.getType());
  bool loadTime = isLoadTimeValue(value);
  auto perStep = [&](int64_t ns) {
    return loadTime
               ? static_cast<int64_t>(ns / costProfile.loadAmortizationSteps)
               : ns;
  };
  int64_t host = perStep(copyCostNs(bytes, costProfile));
  int64_t peer = k > 2 ? perStep(peerCopyCostNs(bytes, costProfile)) : 0;
  std::vector<int64_t> move(k * k, 0);
  for (int from = 0; from < k; ++from)
    for (int to = 0; to < k; ++to)
      if (from != to)
        move[from * k + to] = from > 0 && to > 0 ? peer : host;
  return move;
}

void PlaceDevicesPass::addValues(ArrayRef<Operation *> ops,
                                 const llvm::DenseMap<Operation *, int> &nodeOf,
                                 placement::MultiProblem &problem) {
  // A state update is read where its state lives: the assigned value moves
  // there every step if placement separates them.
  llvm::DenseMap<Value, SmallVector<int>> stateWriters;
  for (Operation *op : ops)
    for (Operation *user : op->getUsers())
      if (auto assign = dyn_cast<AssignOp>(user);
          assign && assign.getState().getDefiningOp() == op)
        stateWriters[assign.getValue()].push_back(nodeOf.lookup(op));
  int k = problem.devices;
  for (Operation *op : ops) {
    for (Value result : op->getResults()) {
      placement::MultiProblem::Value value;
      value.producer = nodeOf.lookup(op);
      for (Operation *user : result.getUsers())
        if (auto it = nodeOf.find(user); it != nodeOf.end())
          value.consumers.push_back(it->second);
      if (auto it = stateWriters.find(result); it != stateWriters.end())
        value.consumers.insert(value.consumers.end(), it->second.begin(),
                               it->second.end());
      if (value.consumers.empty())
        continue;
      value.move = moveCostsNs(result, k);
      problem.values.push_back(std::move(value));
    }
  }
}

placement::MultiProblem
PlaceDevicesPass::autoProblem(ArrayRef<Operation *> ops,
                              ArrayRef<DeviceAttr> devices, bool inGraph) {
  int k = devices.size();
  placement::MultiProblem problem;
  problem.devices = k;
  llvm::DenseMap<Operation *, int> nodeOf;
  for (Operation *op : ops) {
    placement::MultiProblem::Node node;
    if (auto it = decisions.find(op); it != decisions.end())
      node.fixed = llvm::find(devices, it->second.device) - devices.begin();
    else if (isa<InputOp, OutputOp>(op) ||
             (!isInterface(op) && !hasCudaKernel(op)))
      node.fixed = 0; // fed or read on the host, or no CUDA kernel
    OpWork work = estimateWork(op);
    node.cost.assign(k, opCostNs(work, costProfile.cuda, inGraph));
    node.cost[0] = opCostNs(work, costProfile.cpu);
    nodeOf[op] = problem.nodes.size();
    problem.nodes.push_back(std::move(node));
  }
  addValues(ops, nodeOf, problem);
  if (fuse)
    addFusions(ops, nodeOf, problem, inGraph);
  return problem;
}

std::optional<int>
PlaceDevicesPass::wholeStepGpu(ArrayRef<Operation *> ops,
                               const placement::MultiProblem &problem) {
  int gpu = 0;
  for (auto [op, node] : llvm::zip(ops, problem.nodes)) {
    if (node.fixed == 0 && isComputing(op))
      return std::nullopt;
    if (node.fixed > 0 && gpu && node.fixed != gpu)
      return std::nullopt; // a step over two GPUs replays on neither
    if (node.fixed > 0)
      gpu = node.fixed;
  }
  return gpu ? gpu : 1;
}

placement::MultiSolution
PlaceDevicesPass::wholeStepOn(int gpu, ArrayRef<Operation *> ops,
                              placement::MultiProblem problem) {
  for (auto [op, node] : llvm::zip(ops, problem.nodes))
    if (isComputing(op))
      node.fixed = gpu;
  return placement::solvePlacement(problem);
}

void PlaceDevicesPass::placeAuto(GraphOp graph) {
  // Device 0 is the CPU, device i the CUDA target i - 1.
  SmallVector<DeviceAttr> devices{cpuDevice};
  devices.append(cudaTargets.begin(), cudaTargets.end());
  SmallVector<Operation *> ops;
  for (Operation &op : graph.getBodyBlock())
    if (!isa<AssignOp>(op)) // not a reader: it goes where its state is
      ops.push_back(&op);
  placement::MultiProblem problem = autoProblem(ops, devices, false);
  placement::MultiSolution solution = placement::solvePlacement(problem);
  // A step whose kernels all run on one GPU replays as a CUDA graph, where
  // a launch costs a fraction of one alone: the split above pays full
  // launches, so the whole step on the GPU is weighed on its own terms.
  // (When the split puts every kernel there too, it is the same step, and
  // each op's own estimate says why.)
  std::optional<int> gpu =
      devices.size() > 1 ? wholeStepGpu(ops, problem) : std::nullopt;
  std::optional<placement::MultiSolution> whole;
  if (gpu && llvm::any_of(llvm::seq<size_t>(0, ops.size()), [&](size_t i) {
        return isComputing(ops[i]) && solution.device[i] != *gpu;
      }))
    whole = wholeStepOn(*gpu, ops, autoProblem(ops, devices, true));
  bool wholeWins = whole && whole->cost < solution.cost;
  LLVM_DEBUG(llvm::dbgs() << "[locus-place-devices] " << devices.size()
                          << " devices, " << problem.nodes.size()
                          << " ops: estimated step " << solution.cost
                          << " ns split, "
                          << (whole ? std::to_string(whole->cost) : "-")
                          << " ns as one CUDA graph\n");
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (decisions.count(op))
      continue;
    const placement::MultiProblem::Node &node = problem.nodes[i];
    DeviceAttr device = devices[(wholeWins ? *whole : solution).device[i]];
    PlacementAttr why;
    if (isa<InputOp, OutputOp>(op))
      why = reason(PlacementKind::host_io);
    else if (isa<StateOp, ConstantOp>(op))
      why = reason(PlacementKind::colocated); // placed by its copies
    else if (node.fixed == 0)
      why = PlacementAttr::get(&getContext(), PlacementKind::no_kernel,
                               std::nullopt, std::nullopt, devices[1]);
    else if (wholeWins)
      why = PlacementAttr::get(&getContext(), PlacementKind::whole_step,
                               solution.cost, whole->cost, DeviceAttr());
    else
      why = PlacementAttr::get(&getContext(), PlacementKind::cost, node.cost[0],
                               node.cost[1], DeviceAttr());
    decisions[op] = {device, why};
  }
}

//===----------------------------------------------------------------------===//
// strict: PyTorch's rules
//===----------------------------------------------------------------------===//

DeviceAttr PlaceDevicesPass::fixTarget(ArrayRef<DeviceAttr> devices) {
  // PyTorch users mean the GPU: the fix moves what is elsewhere to it.
  for (DeviceAttr d : devices)
    if (d.isCuda())
      return d;
  return devices.front();
}

void PlaceDevicesPass::reportMismatch(Operation *op, ArrayRef<Value> operands,
                                      ArrayRef<DeviceAttr> devices) {
  DeviceAttr target = fixTarget(devices);
  InFlightDiagnostic diag = op->emitOpError()
                            << "has operands on different devices:";
  for (auto [i, value] : llvm::enumerate(operands))
    diag << (i ? "," : "") << " " << describeValue(value) << " is on "
         << devices[i].str();
  for (auto [value, device] : llvm::zip(operands, devices)) {
    Operation *producer = value.getDefiningOp();
    const char *verb = isa<ToOp>(producer) ? "moved to " : "created on ";
    if (!isInterface(producer) && !isa<ToOp>(producer))
      verb = "computed on ";
    if (reportedOps.contains(producer)) {
      diag.attachNote(producer->getLoc())
          << describeValue(value) << " is computed on " << device.str()
          << " here once the fix of its own error is applied";
      continue;
    }
    diag.attachNote(producer->getLoc())
        << describeValue(value) << " is " << verb << device.str() << " here";
  }
  // The fix changes this read only (state: where it is made), so that it
  // breaks no other reader; placement goes on as if it were applied.
  std::string call =
      target.isCpu() ? "locus::cpu()"
                     : "locus::cuda(" + std::to_string(target.getIndex()) + ")";
  for (auto [value, device] : llvm::zip(operands, devices)) {
    if (device == target)
      continue;
    Operation *producer = value.getDefiningOp();
    if (isa<StateOp>(producer)) {
      diag.attachNote(producer->getLoc())
          << "fix: create " << describeValue(value) << " on " << target.str()
          << " (.device = " << call << ") at " << userLine(producer->getLoc())
          << ", or compile with policy=prefer-gpu";
      continue;
    }
    // A layer's op: the fix goes where the user called the layer.
    Location site = op->getLoc();
    while (auto call = dyn_cast<CallSiteLoc>(site))
      site = call.getCaller();
    diag.attachNote(site) << "fix: move " << describeValue(value) << " to "
                          << target.str() << " where it is read here: add .to("
                          << call << ") to it at " << userLine(op->getLoc())
                          << ", or compile with policy=prefer-gpu";
  }
}

LogicalResult PlaceDevicesPass::placeStrict(GraphOp graph) {
  // A value is "free" while it is an unpinned constant or computed from free
  // values only: it follows its readers, like a Python scalar in PyTorch.
  // An op whose operands are on different devices is reported with its fix
  // and then placed as the fix places it, so that one run also reports what
  // the fixes leave wrong downstream, and applying them all compiles.
  // Ops autodiff or an optimizer recorded (isBackwardLoc) run where the
  // forward pass left their operands: after a reported mistake their
  // mismatches are its consequences, not reported; with a correct forward
  // pass, a mismatch is a move nobody wrote or can write, made with a note.
  llvm::DenseSet<Operation *> free;
  SmallVector<Operation *> followers;
  SmallVector<std::pair<OpOperand *, DeviceAttr>> backwardMoves;
  unsigned reported = 0;
  for (Operation &op : graph.getBodyBlock()) {
    if (decisions.count(&op))
      continue;
    if (isa<ConstantOp>(op)) {
      free.insert(&op);
      followers.push_back(&op);
      continue;
    }
    if (isa<InputOp, StateOp>(op)) {
      decisions[&op] = {cpuDevice, reason(PlacementKind::created)};
      continue;
    }
    MutableArrayRef<OpOperand> read = op.getOpOperands();
    if (auto back = dyn_cast<ToDeviceOfOp>(op)) {
      // The gradient of .to() goes back where the forward input is, as
      // PyTorch's grad.to(input.device); a free input leaves it free.
      Operation *ref = back.getRef().getDefiningOp();
      if (!free.contains(ref)) {
        decisions[&op] = {decisions.lookup(ref).device,
                          reason(PlacementKind::follows_operands)};
        continue;
      }
      read = read.take_front();
    }
    SmallVector<OpOperand *> operands;
    SmallVector<Value> values;
    SmallVector<DeviceAttr> devices;
    for (OpOperand &operand : read) {
      Operation *producer = operand.get().getDefiningOp();
      if (free.contains(producer))
        continue;
      operands.push_back(&operand);
      values.push_back(operand.get());
      devices.push_back(decisions.lookup(producer).device);
    }
    if (operands.empty()) {
      free.insert(&op);
      followers.push_back(&op);
      continue;
    }
    DeviceAttr device = devices.front();
    if (llvm::any_of(devices, [&](DeviceAttr d) { return d != device; })) {
      device = fixTarget(devices);
      if (!isBackwardLoc(op.getLoc())) {
        reportMismatch(&op, values, devices);
        reportedOps.insert(&op);
        ++numMismatches;
        ++reported;
      } else if (reported == 0) {
        for (auto [operand, from] : llvm::zip(operands, devices))
          if (from != device)
            backwardMoves.push_back({operand, device});
      }
    }
    decisions[&op] = {device, reason(PlacementKind::follows_operands)};
  }
  placeFollowers(followers, /*cloneForEachDevice=*/true);
  if (reported)
    return failure();
  // One move per value and device, made before its first reader.
  llvm::DenseMap<std::pair<Value, DeviceAttr>, Value> moved;
  for (auto [operand, device] : backwardMoves) {
    Value &to = moved[{operand->get(), device}];
    if (!to) {
      Operation *reader = operand->getOwner();
      OpBuilder builder(reader);
      to = builder.create<ToOp>(reader->getLoc(), operand->get(), device);
      decisions[to.getDefiningOp()] = {device,
                                       reason(PlacementKind::follows_operands)};
    }
    operand->set(to);
  }
  if (!backwardMoves.empty())
    addNote(graph, backwardMoves.front().first->getOwner(),
            "strict: the backward pass or the optimizer reads " +
                Twine(moved.size()) +
                " value(s) on another device than the one it runs on; "
                "they are moved every step (the first read is here)");
  return success();
}

void PlaceDevicesPass::resolveMovesBack(GraphOp graph) {
  for (Operation &op : llvm::make_early_inc_range(graph.getBodyBlock())) {
    auto back = dyn_cast<ToDeviceOfOp>(op);
    if (!back)
      continue;
    Value moved = back.getInput();
    if (auto it = decisions.find(&op); it != decisions.end()) {
      OpBuilder builder(&op);
      auto to = builder.create<ToOp>(op.getLoc(), moved, it->second.device);
      decisions[to] = it->second;
      decisions.erase(&op);
      moved = to;
    }
    back.getResult().replaceAllUsesWith(moved);
    back.erase();
  }
}

void PlaceDevicesPass::addFusions(
    ArrayRef<Operation *> ops, const llvm::DenseMap<Operation *, int> &nodeOf,
    placement::MultiProblem &problem, bool inGraph) {
  // Mirrors --locus-fuse-kernels: an elementwise op joins the kernel of each
  // computing producer it alone reads, and a kernel holds one anchor (an op
  // that is not elementwise) at most. Every producer has one reader, so the
  // fused kernels are trees and each fusion saves exactly one launch.
  llvm::DenseSet<Operation *> anchored;
  for (Operation *op : ops) {
    if (!isComputing(op))
      continue;
    if (!isElementwise(op)) {
      anchored.insert(op);
      continue;
    }
    int consumer = nodeOf.lookup(op);
    bool anchorJoined = false;
    llvm::SmallPtrSet<Operation *, 4> joined;
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = producer ? nodeOf.find(producer) : nodeOf.end();
      if (it == nodeOf.end() || !isComputing(producer) ||
          !joined.insert(producer).second ||
          !llvm::all_of(producer->getUsers(),
                        [&](Operation *user) { return user == op; }))
        continue;
      bool carriesAnchor = anchored.contains(producer);
      if (carriesAnchor && anchorJoined)
        continue;
      anchorJoined |= carriesAnchor;
      placement::MultiProblem::Fusion fusion;
      fusion.producer = it->second;
      fusion.consumer = consumer;
      const placement::MultiProblem::Node &node = problem.nodes[consumer];
      for (auto [d, cost] : llvm::enumerate(node.cost))
        fusion.saving.push_back(std::min(
            cost, static_cast<int64_t>(
                      d == 0 ? costProfile.cpu.launchNs
                             : launchCostNs(costProfile.cuda, inGraph))));
      problem.fusions.push_back(std::move(fusion));
    }
    if (anchorJoined)
      anchored.insert(op);
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

void PlaceDevicesPass::runOnOperation() {
  GraphOp graph = getOperation();
  decisions.clear();
  reportedOps.clear();
  if (failed(readOptions(graph)) || failed(placePins(graph)))
    return signalPassFailure();

  // A state update is no reader of its state: the policies skip it, and it
  // goes where its state went.
  for (Operation &op : graph.getBodyBlock())
    if (isa<AssignOp>(op))
      decisions[&op] = {cpuDevice, reason(PlacementKind::colocated)};

  bool ok = true;
  if (policyKind == Policy::strict) {
    ok = succeeded(placeStrict(graph));
    resolveMovesBack(graph);
  } else {
    resolveMovesBack(graph);
    if (policyKind == Policy::cpu || cudaTargets.empty())
      placeCpuOnly(graph);
    else if (policyKind == Policy::preferGpu)
      placePreferGpu(graph);
    else
      placeAuto(graph);
  }

  for (Operation &op : graph.getBodyBlock())
    if (auto assign = dyn_cast<AssignOp>(op))
      decisions[&op] = {
          decisions.lookup(assign.getState().getDefiningOp()).device,
          reason(PlacementKind::colocated)};

  MLIRContext *context = &getContext();
  SmallVector<Attribute> targets{cpuDevice};
  targets.append(cudaTargets.begin(), cudaTargets.end());
  graph->setAttr(kPolicyAttrName, StringAttr::get(context, policy));
  graph->setAttr(kTargetsAttrName, ArrayAttr::get(context, targets));
  for (Operation &op : graph.getBodyBlock()) {
    Decision decision = decisions.lookup(&op);
    LOCUS_INTERNAL_ASSERT(decision.device,
                          "an op was not placed: " +
                              op.getName().getStringRef().str());
    op.setAttr(kDeviceAttrName, decision.device);
    op.setAttr(kPlacementAttrName, decision.reason);
    (decision.device.isCpu() ? numCpuOps : numCudaOps)++;
    LLVM_DEBUG(llvm::dbgs()
               << "[locus-place-devices] " << op.getName() << " at "
               << userLine(op.getLoc()) << " -> " << decision.device.str()
               << " (" << stringifyPlacementKind(decision.reason.getKind())
               << ")\n");
  }
  if (!ok)
    signalPassFailure();
}
