//===- Plan.cpp - the plan of an outlined graph ---------------------------===//

#include "locus/Plan/Plan.h"

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dialect/UserSource.h"
#include "locus/Passes/Passes.h"
#include "locus/Plan/MemoryPlan.h"
#include "locus/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cstring>
#include <map>

using namespace mlir;
using namespace locus;

std::string locus::kernelEntryName(llvm::StringRef function) {
  return (LOCUS_ABI_KERNEL_PREFIX + function).str();
}

std::string locus::kernelSignatureName(llvm::StringRef function) {
  return (LOCUS_ABI_SIGNATURE_PREFIX + function).str();
}

std::string locus::kernelSourceName(llvm::StringRef function) {
  return (LOCUS_ABI_SOURCE_PREFIX + function).str();
}

namespace {

/// A load-time launch may make results of up to this many bytes from
/// smaller operands (or none).
constexpr uint64_t kLoadTimeBytes = 64 * 1024;

/// One record of a kernel's source (locus/abi.h).
struct SourceRecord {
  std::string op, at, layer;
  LayerKind kind = LayerKind::none;
  unsigned count = 1;

  bool sameOp(const SourceRecord &o) const {
    return op == o.op && at == o.at && layer == o.layer && kind == o.kind;
  }
};

llvm::StringRef kindName(LayerKind kind) {
  switch (kind) {
  case LayerKind::none:
    return "";
  case LayerKind::onnx:
    return "onnx";
  case LayerKind::named:
    return "named";
  case LayerKind::caller:
    return "caller";
  }
  return "";
}

/// A field as the format allows it: a file name may not bring a tab, a
/// newline or a NUL into it.
std::string field(llvm::StringRef text) {
  std::string out = text.str();
  for (char &c : out)
    if (c == '\t' || c == '\n' || c == '\r' || c == '\0')
      c = ' ';
  return out;
}

std::string serialise(const SourceRecord &r) {
  return std::to_string(r.count) + "\t" + field(r.op) + "\t" + field(r.at) +
         "\t" + field(r.layer) + "\t" + kindName(r.kind).str() + "\n";
}

} // namespace

std::string locus::describeKernelSource(func::FuncOp kernel) {
  // Each op of a kind at a line once, in the order the ops appear, counted.
  std::vector<SourceRecord> records;
  kernel.walk([&](Operation *op) {
    if (op->getDialect() == nullptr ||
        op->getDialect()->getNamespace() != "locus" || isa<ConstantOp>(op))
      return;
    SourceRecord record;
    record.op = op->getName().getStringRef().str();
    if (std::string line = userLine(op->getLoc()); line != "unknown location")
      record.at = line;
    // The layer of the op's first location, as the dump's rows take it (a
    // gradient's op: its forward op's).
    Layer layer = layerOf(userSourceOf(op->getLoc()));
    record.layer = layer.path;
    record.kind = layer.kind;
    for (SourceRecord &seen : records)
      if (seen.sameOp(record)) {
        ++seen.count;
        return;
      }
    records.push_back(std::move(record));
  });
  std::string out;
  const size_t limit = LOCUS_ABI_MAX_SOURCE_BYTES - 1;
  const std::string cut = "...\n";
  for (const SourceRecord &record : records) {
    std::string line = serialise(record);
    if (out.size() + line.size() > limit - cut.size()) {
      out += cut;
      break;
    }
    out += line;
  }
  return out;
}

std::string locus::cudaEntryName(llvm::StringRef function) {
  return (LOCUS_ABI_CUDA_PREFIX + function).str();
}

namespace {

class Writer {
public:
  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u(uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>(v >> (8 * i)));
  }
  void u32(uint32_t v) { u(v, 4); }
  void u64(uint64_t v) { u(v, 8); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof v);
    u64(bits);
  }
  void str(llvm::StringRef s) {
    u32(static_cast<uint32_t>(s.size()));
    out.append(s.begin(), s.end());
  }
  std::string out;
};

struct Buffer {
  uint8_t kind;
  uint32_t device;
  RankedTensorType type;
  std::string name;
  Operation *source = nullptr; // state or constant
  int64_t first = 0, last = 0; // steps, for activations and inputs
  uint64_t offset = 0;
  DimExprs dims; // with dynamic sizes: its dims, else empty
};

/// One command of the plan. The format's two u32 fields mean, by op
/// (locus/abi.h): LAUNCH kernel and result count, COPY source and
/// destination buffer, RECORD/WAIT device and event.
struct Command {
  uint8_t op = LOCUS_PLAN_LAUNCH;
  uint32_t kernel = 0, results = 0; // LAUNCH
  uint32_t src = 0, dst = 0;        // COPY
  uint32_t device = 0, event = 0;   // RECORD, WAIT; ALL_REDUCE: reduction
  /// LAUNCH: the buffers the kernel reads, then those it writes;
  /// ALL_REDUCE: its operands, then its results.
  std::vector<uint32_t> buffers;

  static Command launch(uint32_t kernel, uint32_t results) {
    Command c;
    c.kernel = kernel;
    c.results = results;
    return c;
  }
  static Command copy(uint32_t src, uint32_t dst) {
    Command c;
    c.op = LOCUS_PLAN_COPY;
    c.src = src;
    c.dst = dst;
    return c;
  }
  /// An ALL_REDUCE on `device`; its buffers are added after.
  static Command allReduce(uint32_t device, bool mean) {
    Command c;
    c.op = LOCUS_PLAN_ALL_REDUCE;
    c.device = device;
    c.event = mean ? LOCUS_PLAN_REDUCE_MEAN : LOCUS_PLAN_REDUCE_SUM;
    return c;
  }
  /// A RECORD or WAIT.
  static Command sync(uint8_t op, uint32_t device, uint32_t event) {
    Command c;
    c.op = op;
    c.device = device;
    c.event = event;
    return c;
  }
  /// The two fields as the format orders them.
  std::pair<uint32_t, uint32_t> fields() const {
    switch (op) {
    case LOCUS_PLAN_LAUNCH:
      return {kernel, results};
    case LOCUS_PLAN_COPY:
      return {src, dst};
    default:
      return {device, event};
    }
  }
};

uint8_t dtypeOf(Type element) {
  if (element.isF32())
    return LOCUS_PLAN_F32;
  if (element.isInteger(64))
    return LOCUS_PLAN_I64;
  if (element.isInteger(32))
    return LOCUS_PLAN_I32;
  if (element.isBF16())
    return LOCUS_PLAN_BF16;
  if (element.isF16())
    return LOCUS_PLAN_F16;
  return LOCUS_PLAN_I1;
}

uint64_t bytesOf(RankedTensorType type) {
  Type element = type.getElementType();
  uint64_t size = (element.getIntOrFloatBitWidth() + 7) / 8; // i1: a byte
  return size * static_cast<uint64_t>(type.getNumElements());
}

/// A constant's bytes, row-major, splats expanded; i1 as one byte each.
std::string constantBytes(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  std::string out;
  if (!dense)
    return out;
  Type element = dense.getElementType();
  if (element.isF32()) {
    for (float v : dense.getValues<float>())
      out.append(reinterpret_cast<const char *>(&v), sizeof v);
  } else if (element.isInteger(64)) {
    for (int64_t v : dense.getValues<int64_t>())
      out.append(reinterpret_cast<const char *>(&v), sizeof v);
  } else if (element.isInteger(32)) {
    for (int32_t v : dense.getValues<int32_t>())
      out.append(reinterpret_cast<const char *>(&v), sizeof v);
  } else if (element.isBF16() || element.isF16()) {
    for (const APFloat &v : dense.getValues<APFloat>()) {
      auto bits = static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
      out.append(reinterpret_cast<const char *>(&bits), sizeof bits);
    }
  } else {
    for (bool v : dense.getValues<bool>())
      out.push_back(v ? 1 : 0);
  }
  return out;
}

/// Makes the plan of one outlined graph, in phases: walk the graph into
/// buffers and commands (with state updates in place where safe), extend
/// lifetimes to the end of the step where the caller needs them, give each
/// device an arena, and serialise.
class PlanBuilder {
public:
  PlanBuilder(GraphOp graph, PlanSummary &summary)
      : graph(graph), module(graph->getParentOfType<ModuleOp>()),
        summary(summary) {
    deviceIndex(nullptr); // the CPU is device 0
    if (module)
      symbols.emplace(module);
  }

  FailureOr<std::string> build(const std::vector<std::string> &imports) {
    FailureOr<DynamicDims> analysis = DynamicDims::analyze(graph);
    if (failed(analysis))
      return failure();
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    dynamic = std::move(*analysis);
    collectAssignments();
    for (Operation &op : graph.getBodyBlock())
      if (failed(plan(op)))
        return failure();
    finishLifetimes();
    planArenas();
    return serialize(imports);
  }

private:
  // ---- Devices and buffers ------------------------------------------------

  uint32_t deviceIndex(DeviceAttr device) {
    if (!device)
      device = DeviceAttr::get(graph.getContext(), DeviceKind::cpu, 0);
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i] == device)
        return static_cast<uint32_t>(i);
    devices.push_back(device);
    return static_cast<uint32_t>(devices.size() - 1);
  }

  /// A new buffer for `value`, alive from the current step.
  uint32_t add(Value value, uint8_t kind, DeviceAttr device,
               std::string name = "") {
    Buffer b;
    b.kind = kind;
    b.device = deviceIndex(device);
    b.type = cast<RankedTensorType>(value.getType());
    b.name = std::move(name);
    b.source = value.getDefiningOp();
    b.first = b.last = static_cast<int64_t>(step.size());
    if (dynamic && dynamic->isDynamic(value))
      b.dims = dynamic->dimsOf(value);
    buffers.push_back(b);
    bufferOf[value] = static_cast<uint32_t>(buffers.size() - 1);
    return static_cast<uint32_t>(buffers.size() - 1);
  }

  /// The buffer of a value read now (its life extends to this step), or -1.
  int64_t use(Value value) {
    auto it = bufferOf.find(value);
    if (it == bufferOf.end())
      return -1;
    buffers[it->second].last = static_cast<int64_t>(step.size());
    return it->second;
  }

  // ---- State updates --------------------------------------------------------

  /// State updates: a kernel whose result a locus.assign writes into a state
  /// writes the state's own buffer when that is safe (see inPlace).
  void collectAssignments() {
    for (Operation &op : graph.getBodyBlock())
      if (auto assign = dyn_cast<AssignOp>(op)) {
        assignedTo[assign.getValue()] =
            assign.getState().getDefiningOp<StateOp>();
        writtenStates.insert(assign.getState().getDefiningOp());
      }
  }

  /// `writer` may put `result` into `state`'s buffer: same type and device,
  /// and every other reader of the state runs before it (or is it).
  bool stateFree(Operation *writer, Value result, StateOp state) {
    auto b = bufferOf.find(state.getResult());
    if (b == bufferOf.end() || buffers[b->second].type != result.getType() ||
        buffers[b->second].device != deviceIndex(placedDevice(writer)))
      return false;
    for (Operation *user : state.getResult().getUsers())
      if (user != writer && !isa<AssignOp>(user) &&
          !user->isBeforeInBlock(writer))
        return false;
    return true;
  }

  /// The kernel function `call` launches (null outside a module). By the
  /// module's symbol table: a lookup per call that scanned the module took
  /// seconds for 10,000 kernels.
  func::FuncOp calleeOf(func::CallOp call) const {
    return symbols ? symbols->lookup<func::FuncOp>(call.getCallee())
                   : func::FuncOp();
  }

  /// The launch `call` may write `result` into `state`'s buffer: the state
  /// is free for it, and the kernel reads the state only elementwise, each
  /// element before it writes it.
  bool inPlace(func::CallOp call, Value result, StateOp state) {
    if (!stateFree(call, result, state))
      return false;
    func::FuncOp callee = calleeOf(call);
    if (!callee)
      return false;
    for (auto [operand, arg] :
         llvm::zip(call.getOperands(), callee.getArguments())) {
      if (operand != state.getResult())
        continue;
      for (Operation *reader : arg.getUsers())
        if (!(isElementwise(reader) && !isa<BroadcastOp>(reader)) &&
            !isa<SgdOp, AdamOp>(reader))
          return false;
    }
    return true;
  }

  // ---- The walk
  // ---------------------------------------------------------------

  LogicalResult plan(Operation &op) {
    if (auto input = dyn_cast<InputOp>(op)) {
      DeviceAttr device = placedDevice(input);
      add(input, LOCUS_PLAN_INPUT, device ? device : input.getDeviceAttr(),
          input.getName().str());
      buffers.back().first = 0;
      return success();
    }
    if (auto state = dyn_cast<StateOp>(op)) {
      add(state, LOCUS_PLAN_STATE, placedDevice(state), state.getName().str());
      return success();
    }
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      if (!constant->use_empty())
        add(constant, LOCUS_PLAN_CONSTANT, placedDevice(constant));
      return success();
    }
    if (auto copy = dyn_cast<CopyOp>(op))
      return planCopy(copy);
    if (auto call = dyn_cast<func::CallOp>(op))
      return planLaunch(call);
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      return planAllReduce(reduce);
    if (auto assign = dyn_cast<AssignOp>(op))
      return planAssign(assign);
    if (auto output = dyn_cast<OutputOp>(op))
      return planOutput(output);
    return op.emitOpError() << "cannot be planned: run --locus-fuse-kernels "
                               "and --locus-outline-kernels first";
  }

  /// A load-time copy into a persistent buffer, or a per-step copy between
  /// an event recorded on the source device and waited for on the
  /// destination.
  LogicalResult planCopy(CopyOp copy) {
    if (copy->use_empty())
      return success();
    int64_t found = use(copy.getInput());
    if (found < 0)
      return copy.emitOpError() << "copies a value the plan has no buffer "
                                   "for";
    auto src = static_cast<uint32_t>(found);
    if (copy.getLoadTime()) {
      uint32_t dst = add(copy, LOCUS_PLAN_PERSISTENT, copy.getTo());
      load.push_back(Command::copy(src, dst));
      ++summary.loadCopies;
      summary.loadCopyBytes += bytesOf(buffers[dst].type);
      return success();
    }
    uint32_t event = events++;
    step.push_back(
        Command::sync(LOCUS_PLAN_RECORD, deviceIndex(copy.getFrom()), event));
    // A value copied back to its state's device for a locus.assign: the
    // copy writes the state itself once nothing else reads the old value.
    uint32_t dst;
    StateOp target = assignedTo.lookup(copy.getResult());
    if (target && stateFree(copy, copy.getResult(), target)) {
      dst = bufferOf.lookup(target.getResult());
      bufferOf[copy.getResult()] = dst;
      ++summary.inPlaceUpdates;
    } else {
      dst = add(copy, LOCUS_PLAN_ACTIVATION, copy.getTo());
    }
    step.push_back(Command::copy(src, dst));
    step.push_back(
        Command::sync(LOCUS_PLAN_WAIT, deviceIndex(copy.getTo()), event));
    ++summary.stepCopies;
    summary.stepCopyBytes += bytesOf(buffers[dst].type);
    return success();
  }

  // ---- Load-time launches
  // -------------------------------------------------------

  /// A buffer that holds the same values at every step: a constant, state
  /// no step writes (weights at inference), or what a load-time command
  /// made of those.
  bool sameEveryStep(uint32_t index) const {
    const Buffer &b = buffers[index];
    return b.kind == LOCUS_PLAN_CONSTANT || b.kind == LOCUS_PLAN_PERSISTENT ||
           (b.kind == LOCUS_PLAN_STATE && !writtenStates.contains(b.source));
  }

  /// Whether `call` runs at load, into persistent buffers (see
  /// LOCUS_PLAN_VERSION 6): it reads only buffers that hold the same values
  /// at every step, so it computes the same results at every step (a
  /// weight cast to bf16, a constant broadcast). Not when a result is an
  /// output or a state update, or when its results outgrow what it reads
  /// past kLoadTimeBytes (a constant broadcast to a large shape costs less
  /// per step than kept).
  bool runsAtLoad(func::CallOp call) {
    uint64_t reads = 0, writes = 0;
    for (Value operand : call.getOperands()) {
      auto b = bufferOf.find(operand);
      if (b == bufferOf.end() || !sameEveryStep(b->second))
        return false;
      reads += bytesOf(cast<RankedTensorType>(operand.getType()));
    }
    for (Value result : call.getResults()) {
      for (Operation *user : result.getUsers())
        if (isa<OutputOp, AssignOp>(user))
          return false;
      writes += bytesOf(cast<RankedTensorType>(result.getType()));
    }
    return writes <= std::max(reads, kLoadTimeBytes);
  }

  /// A launch at load: its results are persistent buffers.
  LogicalResult planLoadLaunch(func::CallOp call) {
    DeviceAttr device = placedDevice(call);
    Command launch = Command::launch(static_cast<uint32_t>(kernels.size()),
                                     call.getNumResults());
    for (Value operand : call.getOperands())
      launch.buffers.push_back(static_cast<uint32_t>(use(operand)));
    for (Value result : call.getResults())
      launch.buffers.push_back(add(result, LOCUS_PLAN_PERSISTENT, device));
    addKernel(call, device);
    load.push_back(std::move(launch));
    ++summary.loadLaunches;
    return success();
  }

  /// Records the kernel `call` launches: its entry, device, argument sizes
  /// and source.
  void addKernel(func::CallOp call, DeviceAttr device) {
    std::vector<uint64_t> argBytes;
    for (Type type : call.getCalleeType().getInputs())
      argBytes.push_back(bytesOf(cast<RankedTensorType>(type)));
    for (Type type : call.getCalleeType().getResults())
      argBytes.push_back(bytesOf(cast<RankedTensorType>(type)));
    summary.kernelArgBytes.push_back(std::move(argBytes));
    kernels.push_back(kernelEntryName(call.getCallee()));
    kernelDevices.push_back(deviceIndex(device));
    summary.kernelFunctions.push_back(call.getCallee().str());
    func::FuncOp callee = calleeOf(call);
    summary.kernelSources.push_back(callee ? describeKernelSource(callee)
                                           : std::string());
  }

  /// A launch of the kernel a func.call calls: its operands' buffers, then
  /// its results' (a state's own buffer for an update in place).
  LogicalResult planLaunch(func::CallOp call) {
    if (runsAtLoad(call))
      return planLoadLaunch(call);
    DeviceAttr device = placedDevice(call);
    Command launch = Command::launch(static_cast<uint32_t>(kernels.size()),
                                     call.getNumResults());
    for (Value operand : call.getOperands()) {
      int64_t b = use(operand);
      if (b < 0)
        return call.emitOpError() << "reads a value the plan has no buffer "
                                     "for";
      launch.buffers.push_back(static_cast<uint32_t>(b));
    }
    for (Value result : call.getResults()) {
      StateOp state = assignedTo.lookup(result);
      if (state && inPlace(call, result, state)) {
        uint32_t target = bufferOf.lookup(state.getResult());
        bufferOf[result] = target;
        launch.buffers.push_back(target);
        ++summary.inPlaceUpdates;
        continue;
      }
      launch.buffers.push_back(add(result, LOCUS_PLAN_ACTIVATION, device));
    }
    addKernel(call, device);
    step.push_back(std::move(launch));
    return success();
  }

  /// An all-reduce of a gradient bucket: its operands' buffers, then new
  /// buffers for its results, all on the bucket's device.
  LogicalResult planAllReduce(AllReduceOp reduce) {
    DeviceAttr device = placedDevice(reduce);
    Command c = Command::allReduce(deviceIndex(device), reduce.getMean());
    for (Value operand : reduce.getInputs()) {
      int64_t b = use(operand);
      if (b < 0)
        return reduce.emitOpError() << "reads a value the plan has no buffer "
                                       "for";
      c.buffers.push_back(static_cast<uint32_t>(b));
      summary.allReduceBytes +=
          bytesOf(cast<RankedTensorType>(operand.getType()));
    }
    for (Value result : reduce.getResults())
      c.buffers.push_back(add(result, LOCUS_PLAN_ACTIVATION, device));
    ++summary.allReduces;
    step.push_back(std::move(c));
    return success();
  }

  /// A state update not made in place: a copy at the end of the step's
  /// order, on the state's device (the transfers put the value there).
  LogicalResult planAssign(AssignOp assign) {
    int64_t src = use(assign.getValue());
    auto dst = bufferOf.find(assign.getState());
    if (src < 0 || dst == bufferOf.end())
      return assign.emitOpError() << "writes a value the plan has no buffer "
                                     "for";
    if (static_cast<uint32_t>(src) != dst->second) {
      deferred.push_back(
          Command::copy(static_cast<uint32_t>(src), dst->second));
      ++summary.stateCopies;
    }
    return success();
  }

  LogicalResult planOutput(OutputOp output) {
    auto b = bufferOf.find(output.getValue());
    if (b == bufferOf.end())
      return output.emitOpError() << "names a value the plan has no buffer "
                                     "for";
    outputs.emplace_back(output.getName().str(), b->second);
    return success();
  }

  // ---- Lifetimes and arenas
  // ---------------------------------------------------

  void finishLifetimes() {
    // State written by copy: after every reader of the old value. The source
    // lives to the end (its copy is last).
    for (Command &c : deferred) {
      buffers[c.src].last = static_cast<int64_t>(step.size()) + 1;
      step.push_back(std::move(c));
    }
    // Outputs and inputs live to the end of the step (outputs are read after
    // it, inputs are the caller's until the next run).
    int64_t end = static_cast<int64_t>(step.size());
    for (auto &[name, index] : outputs)
      buffers[index].last = end;
    for (Buffer &b : buffers)
      if (b.kind == LOCUS_PLAN_INPUT)
        b.last = end;
  }

  /// One arena per device for its activations and inputs.
  void planArenas() {
    arenas.assign(devices.size(), 0);
    for (uint32_t d = 0; d < devices.size(); ++d) {
      std::vector<LiveRange> ranges;
      std::vector<size_t> which;
      for (size_t i = 0; i < buffers.size(); ++i)
        if (buffers[i].device == d &&
            (buffers[i].kind == LOCUS_PLAN_ACTIVATION ||
             buffers[i].kind == LOCUS_PLAN_INPUT)) {
          ranges.push_back(
              {bytesOf(buffers[i].type), buffers[i].first, buffers[i].last});
          summary.unsharedBytes += bytesOf(buffers[i].type);
          which.push_back(i);
        }
      MemoryPlan memory = planMemory(ranges, LOCUS_PLAN_ALIGNMENT);
      for (size_t j = 0; j < which.size(); ++j)
        buffers[which[j]].offset = memory.offsets[j];
      arenas[d] = memory.arenaBytes;
      summary.arenas.emplace_back(devices[d].str(), memory.arenaBytes);
    }
  }

  // ---- Serialisation (layout: locus/abi.h, docs/artifact.md)
  // -----------------

  FailureOr<std::string> serialize(const std::vector<std::string> &imports) {
    Writer w;
    w.u32(LOCUS_PLAN_MAGIC);
    w.u32(LOCUS_PLAN_VERSION);
    w.u32(static_cast<uint32_t>(devices.size()));
    for (DeviceAttr d : devices) {
      w.u8(d.isCpu() ? 0 : 1);
      w.u32(d.isCpu() ? 0 : d.getIndex());
    }
    w.u32(static_cast<uint32_t>(buffers.size()));
    for (const Buffer &b : buffers)
      if (failed(writeBuffer(w, b)))
        return failure();
    for (uint64_t a : arenas)
      w.u64(a);
    w.u32(static_cast<uint32_t>(kernels.size()));
    for (size_t i = 0; i < kernels.size(); ++i) {
      w.str(kernels[i]);
      w.u32(kernelDevices[i]);
    }
    w.u32(static_cast<uint32_t>(imports.size()));
    for (const std::string &name : imports)
      w.str(name);
    writeCommands(w, load);
    writeCommands(w, step);
    w.u32(static_cast<uint32_t>(outputs.size()));
    for (const auto &[name, index] : outputs) {
      w.str(name);
      w.u32(index);
    }
    w.u32(events);
    writeDynamicSizes(w);
    return w.out;
  }

  /// The sizes, then each buffer with a dynamic dimension and its dims
  /// (factor, then a power per size).
  void writeDynamicSizes(Writer &w) const {
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    ArrayRef<DimSymbol> symbols = dynamic->symbols();
    w.u32(static_cast<uint32_t>(symbols.size()));
    for (const DimSymbol &symbol : symbols) {
      w.str(symbol.name);
      w.u64(static_cast<uint64_t>(symbol.bound));
    }
    uint32_t count = 0;
    for (const Buffer &b : buffers)
      count += b.dims.empty() ? 0 : 1;
    w.u32(count);
    for (auto [i, b] : llvm::enumerate(buffers)) {
      if (b.dims.empty())
        continue;
      w.u32(static_cast<uint32_t>(i));
      for (const DimExpr &dim : b.dims) {
        w.u64(static_cast<uint64_t>(dim.factor));
        for (size_t k = 0; k < symbols.size(); ++k)
          w.u8(static_cast<uint8_t>(k < dim.powers.size() ? dim.powers[k] : 0));
      }
    }
  }

  static LogicalResult writeBuffer(Writer &w, const Buffer &b) {
    w.u8(b.kind);
    w.u32(b.device);
    w.u8(dtypeOf(b.type.getElementType()));
    w.u32(static_cast<uint32_t>(b.type.getRank()));
    for (int64_t d : b.type.getShape())
      w.u64(static_cast<uint64_t>(d));
    w.u64(bytesOf(b.type));
    w.u64(b.offset);
    w.str(b.name);
    if (b.kind == LOCUS_PLAN_STATE) {
      InitAttr init = cast<StateOp>(b.source).getInit();
      bool full = init.getKind() == InitKind::full;
      w.u8(full                                  ? LOCUS_INIT_FULL
           : init.getKind() == InitKind::uniform ? LOCUS_INIT_UNIFORM
                                                 : LOCUS_INIT_NORMAL);
      w.f64(init.low());
      w.f64(full ? init.low() : init.high());
      w.u64(init.getSeed());
    } else if (b.kind == LOCUS_PLAN_CONSTANT) {
      std::string data = constantBytes(cast<ConstantOp>(b.source));
      if (data.size() != bytesOf(b.type))
        return b.source->emitOpError() << "has a value the plan cannot store";
      w.out += data;
    }
    return success();
  }

  static void writeCommands(Writer &w, const std::vector<Command> &commands) {
    w.u32(static_cast<uint32_t>(commands.size()));
    for (const Command &c : commands) {
      auto [first, second] = c.fields();
      w.u8(c.op);
      w.u32(first);
      w.u32(second);
      if (c.op == LOCUS_PLAN_LAUNCH || c.op == LOCUS_PLAN_ALL_REDUCE) {
        w.u32(static_cast<uint32_t>(c.buffers.size()));
        for (uint32_t b : c.buffers)
          w.u32(b);
      }
    }
  }

  GraphOp graph;
  ModuleOp module;
  std::optional<SymbolTable> symbols;
  PlanSummary &summary;
  std::vector<DeviceAttr> devices;
  std::vector<Buffer> buffers;
  DenseMap<Value, uint32_t> bufferOf;
  DenseMap<Value, StateOp> assignedTo;
  /// The states some locus.assign writes (a training step's parameters).
  DenseSet<Operation *> writtenStates;
  std::vector<Command> load, step, deferred;
  std::vector<std::string> kernels;
  std::vector<uint32_t> kernelDevices;
  std::vector<std::pair<std::string, uint32_t>> outputs;
  std::vector<uint64_t> arenas;
  uint32_t events = 0;
  std::optional<DynamicDims> dynamic;
};

} // namespace

FailureOr<std::string> locus::buildPlan(GraphOp graph,
                                        const std::vector<std::string> &imports,
                                        PlanSummary &summary) {
  return PlanBuilder(graph, summary).build(imports);
}

std::string locus::serializeCudaKernels(
    const std::vector<std::pair<std::string, std::string>> &kernels) {
  Writer w;
  w.u32(LOCUS_PTX_MAGIC);
  w.u32(LOCUS_PTX_VERSION);
  w.u32(static_cast<uint32_t>(kernels.size()));
  for (const auto &[name, ptx] : kernels) {
    w.str(name);
    w.str(ptx);
  }
  return w.out;
}
