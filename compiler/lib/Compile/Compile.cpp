//===- Compile.cpp - compile a recorded graph and run it in-process -------===//
//
// locus::compile(): the driver (Driver.cpp) on a copy of the graph, the
// kernels compiled ahead of time for this CPU (in parts, side by side) and
// kept in the compile cache (Cache.cpp), then loaded as an artifact is;
// only when that cannot be done (no linker), the kernels JIT-compiled by
// mlir::ExecutionEngine. Either way the plan runs on the runtime (the same
// executor that runs artifacts).
//
//===----------------------------------------------------------------------===//

#include "locus/Compile.h"

#include "locus/Compile/Cache.h"
#include "locus/Compile/Driver.h"
#include "locus/Dialect/DynamicDims.h"
#include "locus/Frontend/Recorded.h"
#include "locus/Passes/Passes.h"
#include "locus/Support/Errors.h"
#include "locus/abi.h"
#include "locus/half.hpp"
#include "locus/locus_runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

using namespace locus;
using namespace locus::detail;

namespace {

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// A diagnostic at the user's line of `where` (an imported op's model file
/// and node), or at the compile call.
Diagnostic diagnosticAt(Diagnostic::Severity severity,
                        const std::string &message, mlir::Location where,
                        const Here &fallback) {
  mlir::Location loc = where;
  if (auto call = mlir::dyn_cast<mlir::CallSiteLoc>(loc))
    loc = call.getCaller();
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc))
    loc = fused.getLocations().front();
  if (auto call = mlir::dyn_cast<mlir::CallSiteLoc>(loc))
    loc = call.getCaller();
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc)) {
    // An imported op (detail::OriginScope): the model file and its node.
    if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(name.getChildLoc()))
      return {severity, file.getFilename().str(), 0, 0,
              name.getName().str() + ": " + message};
  }
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return {severity, file.getFilename().str(), file.getLine(),
            file.getColumn(), message};
  return {severity, fallback.file_name(), fallback.line(), fallback.column(),
          message};
}

/// An Error at the user's line of `where`, or at the compile call.
Error errorFrom(const std::string &message, mlir::Location where,
                const Here &fallback) {
  return Error(
      {diagnosticAt(Diagnostic::Severity::error, message, where, fallback)});
}

/// The message of a runtime status, which it frees.
std::string take(locus_status_t status) {
  std::string message = locus_status_message(status);
  locus_status_free(status);
  return message;
}

struct Slot {
  std::string name;
  Shape shape; ///< at the bounds, with dynamic sizes
  DType dtype;
  /// With dynamic sizes: by dimension, the size's name ("" for a static
  /// dimension); empty for a static tensor.
  std::vector<std::string> sizes;
  /// "[batch<=256, 784]" with dynamic sizes, else "[256, 784]".
  std::string shapeText() const {
    if (sizes.empty())
      return formatShape(shape);
    std::string text = "[";
    for (size_t d = 0; d < shape.size(); ++d)
      text += (d ? ", " : "") +
              (sizes[d].empty() ? std::to_string(shape[d])
                                : sizes[d] + "<=" + std::to_string(shape[d]));
    return text + "]";
  }
  /// Whether a tensor of `dims` fits: the rank, static dimensions equal,
  /// dynamic ones from 1 to their bound.
  bool fits(const Shape &dims) const {
    if (sizes.empty())
      return dims == shape;
    if (dims.size() != shape.size())
      return false;
    for (size_t d = 0; d < dims.size(); ++d)
      if (sizes[d].empty() ? dims[d] != shape[d]
                           : dims[d] < 1 || dims[d] > shape[d])
        return false;
    return true;
  }
};

Slot slotOf(const std::string &name, mlir::Type type) {
  auto tensor = mlir::cast<mlir::RankedTensorType>(type);
  return {name,
          Shape(tensor.getShape().begin(), tensor.getShape().end()),
          dtypeOf(tensor.getElementType()),
          {}};
}

} // namespace

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

HostTensor HostTensor::fromF32(Shape shape, std::vector<float> values,
                               DType dtype) {
  HostTensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.f32 = std::move(values);
  if (!t.isFloat())
    throw RunError(std::string("fromF32 makes f32, bf16 or f16 tensors, not ") +
                   dtypeName(dtype));
  return t;
}

HostTensor HostTensor::fromI64(Shape shape, std::vector<int64_t> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.dtype = DType::i64;
  t.i64 = std::move(values);
  return t;
}

HostTensor HostTensor::fromI32(Shape shape,
                               const std::vector<int32_t> &values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.dtype = DType::i32;
  t.i64.assign(values.begin(), values.end());
  return t;
}

HostTensor HostTensor::fromBool(Shape shape,
                                const std::vector<int64_t> &values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.dtype = DType::i1;
  t.i64.reserve(values.size());
  for (int64_t v : values)
    t.i64.push_back(v != 0 ? 1 : 0);
  return t;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

float HostTensor::scalar() const {
  if (!isFloat() || f32.size() != 1)
    throw RunError("scalar() of a tensor of shape " + formatShape(shape) +
                   " and dtype " + dtypeName(dtype));
  return f32[0];
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

struct CompiledModel::Impl {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  locus_model_t *model = nullptr;
  PipelineResult parts;
  std::vector<Slot> inputs, states, outputs;
  std::vector<std::string> inputNames, stateNames, outputNames;
  std::mutex mutex; // guards pool and stateCache
  std::vector<locus_context_t *> pool;
  std::map<std::string, HostTensor> stateCache;
  bool fromCache = false;
  /// The data-parallel job the model joined (it outlives the model).
  Communicator comm;
  /// The compile cache, and the graph's key in it ("" when not cached).
  cache::Settings cache;
  std::string graphKey;

  Impl() = default;
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;
  ~Impl() {
    for (locus_context_t *context : pool)
      locus_context_release(context);
    locus_model_release(model);
  }
};

const std::string &CompiledModel::placementSummary() const {
  return impl_->parts.placementSummary;
}

int64_t CompiledModel::estimatedStepNs() const {
  return impl_->parts.estimatedStepNs;
}

void CompiledModel::writeTrace(const std::string &path) const {
  if (locus_status_t s = locus_model_write_trace(impl_->model, path.c_str()))
    throw RunError(take(s));
}

std::string CompiledModel::runtimeReport() const {
  return locus_model_report(impl_->model);
}

const std::vector<std::string> &CompiledModel::inputNames() const {
  return impl_->inputNames;
}
const std::vector<std::string> &CompiledModel::outputNames() const {
  return impl_->outputNames;
}
const std::vector<std::string> &CompiledModel::stateNames() const {
  return impl_->stateNames;
}

bool CompiledModel::fromCache() const { return impl_->fromCache; }

Communicator Communicator::fromEnvironment() {
  locus_comm_t *comm = nullptr;
  if (locus_status_t s = locus_comm_create(&comm))
    throw RunError(take(s));
  Communicator c;
  c.comm_ = std::shared_ptr<locus_comm_s>(comm, locus_comm_release);
  return c;
}

int Communicator::rank() const { return locus_comm_rank(comm_.get()); }
int Communicator::size() const { return locus_comm_size(comm_.get()); }
int Communicator::localRank() const {
  return locus_comm_local_rank(comm_.get());
}
std::string Communicator::backend() const {
  return locus_comm_backend(comm_.get());
}
std::string Communicator::deviceMap() const {
  return locus_comm_device_map(comm_.get());
}

std::vector<size_t> Communicator::shard(size_t count, bool dropLast) const {
  auto world = static_cast<size_t>(size());
  auto me = static_cast<size_t>(rank());
  size_t perRank = dropLast ? count / world : (count + world - 1) / world;
  std::vector<size_t> indices;
  if (count == 0)
    return indices;
  indices.reserve(perRank);
  for (size_t k = 0; k < perRank; ++k)
    indices.push_back((me + k * world) % count);
  return indices;
}

void CompiledModel::joinDataParallel(const Communicator &comm) {
  if (!comm.handle())
    throw RunError("joinDataParallel: the communicator is empty (make it "
                   "with Communicator::fromEnvironment())");
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stateCache.clear();
  }
  if (locus_status_t s = locus_model_join(impl_->model, comm.handle()))
    throw RunError(take(s));
  impl_->comm = comm;
}

size_t CompiledModel::kernelCount() const {
  return impl_->parts.summary.kernelFunctions.size();
}

/// The state slot named `name`; RunError naming the ones there are.
static const Slot &stateSlot(const CompiledModel::Impl &m,
                             const std::string &name) {
  auto slot = std::find_if(m.states.begin(), m.states.end(),
                           [&](const Slot &s) { return s.name == name; });
  if (slot == m.states.end())
    throw RunError("no state named '" + name +
                   "' (state: " + join(m.stateNames) + ")");
  return *slot;
}

const HostTensor &CompiledModel::state(const std::string &name) const {
  Impl &m = *impl_;
  const Slot *slot = &stateSlot(m, name);
  HostTensor value;
  value.shape = slot->shape;
  value.f32.resize(value.numel());
  if (locus_status_t s = locus_model_read_state(
          m.model, name.c_str(), value.f32.data(), value.f32.size() * 4))
    throw RunError(take(s));
  std::lock_guard lock(m.mutex);
  return m.stateCache[name] = std::move(value);
}

/// A RunError unless `value` fits the state slot.
static void checkState(const Slot &slot, const HostTensor &value) {
  if (value.shape != slot.shape || value.dtype != DType::f32 ||
      static_cast<int64_t>(value.f32.size()) != value.numel())
    throw RunError("state '" + slot.name + "' is " + formatShape(slot.shape) +
                   " f32; the value given is " + formatShape(value.shape) +
                   " " + dtypeName(value.dtype));
}

std::map<std::string, HostTensor> CompiledModel::state_dict() const {
  std::map<std::string, HostTensor> dict;
  for (const std::string &name : impl_->stateNames)
    dict[name] = state(name);
  return dict;
}

CompiledModel::StateDictKeys
CompiledModel::load_state_dict(const std::map<std::string, HostTensor> &dict,
                               bool strict) {
  Impl &m = *impl_;
  StateDictKeys keys;
  std::vector<std::string> &missing = keys.missing;
  std::vector<std::string> &unexpected = keys.unexpected;
  for (const Slot &slot : m.states)
    if (!dict.count(slot.name))
      missing.push_back(slot.name);
  for (const auto &entry : dict)
    if (std::find(m.stateNames.begin(), m.stateNames.end(), entry.first) ==
        m.stateNames.end())
      unexpected.push_back(entry.first);
  if (strict && (!missing.empty() || !unexpected.empty()))
    throw RunError("load_state_dict: missing state: " + join(missing) +
                   "; unexpected: " + join(unexpected) +
                   " (pass strict = false to load the names both have)");
  // Every value checked before the first is written.
  for (const Slot &slot : m.states)
    if (auto it = dict.find(slot.name); it != dict.end())
      checkState(slot, it->second);
  for (const Slot &slot : m.states)
    if (auto it = dict.find(slot.name); it != dict.end())
      setState(slot.name, it->second);
  return keys;
}

void CompiledModel::setState(const std::string &name, const HostTensor &value) {
  Impl &m = *impl_;
  const Slot *slot = &stateSlot(m, name);
  checkState(*slot, value);
  if (locus_status_t s = locus_model_write_state(
          m.model, name.c_str(), value.f32.data(), value.f32.size() * 4))
    throw RunError(take(s));
}

namespace {

/// A RunError unless `inputs` are exactly the model's, with their shapes.
void checkInputs(const CompiledModel::Impl &m,
                 const std::map<std::string, HostTensor> &inputs,
                 const std::string &where) {
  for (const auto &[name, tensor] : inputs)
    if (std::find(m.inputNames.begin(), m.inputNames.end(), name) ==
        m.inputNames.end()) {
      std::string message = where;
      message += "unknown input '" + name + "' (inputs: ";
      message += join(m.inputNames) + ")";
      throw RunError(message);
    }
  for (const Slot &slot : m.inputs) {
    auto it = inputs.find(slot.name);
    if (it == inputs.end())
      throw RunError(where + "missing input '" + slot.name + "' of shape " +
                     slot.shapeText());
    const HostTensor &t = it->second;
    // A float tensor feeds any float input: its values are rounded to the
    // input's type (NumPy has no bfloat16).
    bool floats =
        t.isFloat() && (slot.dtype == DType::f32 || slot.dtype == DType::bf16 ||
                        slot.dtype == DType::f16);
    if (!slot.fits(t.shape) || (t.dtype != slot.dtype && !floats))
      throw RunError(where + "input '" + slot.name + "' is " +
                     formatShape(t.shape) + " " + dtypeName(t.dtype) +
                     " but the graph takes " + slot.shapeText() + " " +
                     dtypeName(slot.dtype));
    size_t have = t.isFloat() ? t.f32.size() : t.i64.size();
    if (static_cast<int64_t>(have) != t.numel())
      throw RunError(where + "input '" + slot.name + "' has " +
                     std::to_string(have) + " values for shape " +
                     formatShape(t.shape));
    if (t.dtype == DType::i32)
      for (int64_t v : t.i64)
        if (v < INT32_MIN || v > INT32_MAX)
          throw RunError(where + "input '" + slot.name + "' is i32, but " +
                         std::to_string(v) + " is out of its range");
  }
}

/// The bytes the runtime takes for `t` as an input of `dtype` (checked by
/// checkInputs): f32 and i64 values as they are, i32 and i1 narrowed and
/// bf16 and f16 rounded into `scratch`.
std::pair<const void *, size_t> wireOf(const HostTensor &t, DType dtype,
                                       std::vector<unsigned char> &scratch) {
  switch (dtype) {
  case DType::f32:
    return {t.f32.data(), t.f32.size() * sizeof(float)};
  case DType::i64:
    return {t.i64.data(), t.i64.size() * sizeof(int64_t)};
  case DType::i32: {
    scratch.resize(t.i64.size() * sizeof(int32_t));
    for (size_t i = 0; i < t.i64.size(); ++i) {
      auto v = static_cast<int32_t>(t.i64[i]);
      std::memcpy(scratch.data() + i * sizeof v, &v, sizeof v);
    }
    return {scratch.data(), scratch.size()};
  }
  case DType::i1:
    scratch.resize(t.i64.size());
    for (size_t i = 0; i < t.i64.size(); ++i)
      scratch[i] = t.i64[i] != 0 ? 1 : 0;
    return {scratch.data(), scratch.size()};
  case DType::bf16:
  case DType::f16: {
    scratch.resize(t.f32.size() * sizeof(uint16_t));
    for (size_t i = 0; i < t.f32.size(); ++i) {
      uint16_t bits = dtype == DType::bf16 ? half::bf16Bits(t.f32[i])
                                           : half::f16Bits(t.f32[i]);
      std::memcpy(scratch.data() + i * sizeof bits, &bits, sizeof bits);
    }
    return {scratch.data(), scratch.size()};
  }
  }
  return {nullptr, 0};
}

/// A context of the model's pool (or a new one), back to the pool when the
/// lease ends.
struct Lease {
  explicit Lease(CompiledModel::Impl &m) : m(m) {
    {
      std::lock_guard lock(m.mutex);
      if (!m.pool.empty()) {
        context = m.pool.back();
        m.pool.pop_back();
      }
    }
    if (!context)
      if (locus_status_t s = locus_context_create(m.model, &context))
        throw RunError(take(s));
  }
  ~Lease() {
    std::lock_guard lock(m.mutex);
    m.pool.push_back(context);
  }
  Lease(const Lease &) = delete;
  Lease &operator=(const Lease &) = delete;
  CompiledModel::Impl &m;
  locus_context_t *context = nullptr;
};

/// Every output of the context's last run.
/// Whether the model has dynamic sizes (its outputs' shapes are the run's).
bool dynamicOutputs(const CompiledModel::Impl &m) {
  return llvm::any_of(m.inputs, [](const Slot &s) { return !s.sizes.empty(); });
}

std::map<std::string, HostTensor> readOutputs(const CompiledModel::Impl &m,
                                              locus_context_t *context) {
  std::map<std::string, HostTensor> results;
  for (const Slot &slot : m.outputs) {
    HostTensor out;
    out.shape = slot.shape;
    out.dtype = slot.dtype;
    // Its dims in this run (below the bounds, with dynamic sizes).
    if (dynamicOutputs(m)) {
      int64_t dims[64];
      size_t rank = 0;
      if (locus_status_t s = locus_context_output_shape(
              context, slot.name.c_str(), 64, dims, &rank))
        throw RunError(take(s));
      out.shape.assign(dims, dims + rank);
    }
    void *data;
    size_t bytes;
    std::vector<uint8_t> bools;
    std::vector<int32_t> narrow;
    std::vector<uint16_t> halves;
    bool isHalf = slot.dtype == DType::bf16 || slot.dtype == DType::f16;
    if (isHalf) {
      halves.resize(out.numel());
      data = halves.data();
      bytes = halves.size() * 2;
    } else if (slot.dtype == DType::f32) {
      out.f32.resize(out.numel());
      data = out.f32.data();
      bytes = out.f32.size() * 4;
    } else if (slot.dtype == DType::i64) {
      out.i64.resize(out.numel());
      data = out.i64.data();
      bytes = out.i64.size() * 8;
    } else if (slot.dtype == DType::i32) {
      narrow.resize(out.numel());
      data = narrow.data();
      bytes = narrow.size() * 4;
    } else {
      bools.resize(out.numel());
      data = bools.data();
      bytes = bools.size();
    }
    if (locus_status_t s =
            locus_context_read_output(context, slot.name.c_str(), data, bytes))
      throw RunError(take(s));
    if (isHalf) {
      out.f32.resize(halves.size());
      for (size_t i = 0; i < halves.size(); ++i)
        out.f32[i] = slot.dtype == DType::bf16 ? half::fromBf16Bits(halves[i])
                                               : half::fromF16Bits(halves[i]);
    } else if (slot.dtype == DType::i1)
      out.i64.assign(bools.begin(), bools.end());
    else if (slot.dtype == DType::i32)
      out.i64.assign(narrow.begin(), narrow.end());
    results[slot.name] = std::move(out);
  }
  return results;
}

void fillStats(locus_context_t *context, RunStats *stats) {
  if (!stats)
    return;
  locus_run_stats_t s;
  locus_context_stats(context, &s);
  stats->launches = s.launches;
  stats->simLaunches = s.sim_launches;
  stats->copies = s.copies;
  stats->copyBytes = s.copy_bytes;
}

} // namespace

std::map<std::string, HostTensor>
CompiledModel::run(const std::map<std::string, HostTensor> &inputs,
                   RunStats *stats) const {
  Impl &m = *impl_;
  checkInputs(m, inputs, "");
  // A context of our own: each run has its own activations.
  Lease lease(m);
  // One buffer per input: the runtime may read them only when it runs.
  std::vector<std::vector<unsigned char>> scratch(m.inputs.size());
  for (auto [i, slot] : llvm::enumerate(m.inputs)) {
    const HostTensor &t = inputs.at(slot.name);
    auto [data, bytes] = wireOf(t, slot.dtype, scratch[i]);
    if (locus_status_t s =
            slot.sizes.empty()
                ? locus_context_set_input(lease.context, slot.name.c_str(),
                                          data, bytes)
                : locus_context_set_input_shaped(
                      lease.context, slot.name.c_str(), data, bytes,
                      t.shape.size(), t.shape.data()))
      throw RunError(take(s));
  }
  if (locus_status_t s = locus_context_run(lease.context))
    throw RunError(take(s));
  std::map<std::string, HostTensor> results = readOutputs(m, lease.context);
  fillStats(lease.context, stats);
  return results;
}

void CompiledModel::runBatches(size_t steps, const BatchFn &next,
                               const StepFn &done, RunStats *stats) const {
  Impl &m = *impl_;
  // With dynamic sizes every batch may have its own (a short last one):
  // step by step, each batch checked as run() checks it.
  if (llvm::any_of(m.inputs, [](const Slot &s) { return !s.sizes.empty(); })) {
    for (size_t step = 0; step < steps; ++step) {
      std::map<std::string, HostTensor> batch = next(step);
      std::map<std::string, HostTensor> out = run(batch, stats);
      if (done)
        done(step, out);
    }
    return;
  }
  Lease lease(m);
  struct Loop {
    const Impl &m;
    const BatchFn &next;
    const StepFn &done;
    std::map<std::string, HostTensor> batch;
    std::vector<std::vector<unsigned char>> scratch;
    std::exception_ptr error;
  } loop{m, next, done, {}, {}, nullptr};
  loop.scratch.resize(m.inputs.size());
  auto onNext = [](void *user, uint64_t step,
                   const void **inputs) -> locus_status_t {
    auto &l = *static_cast<Loop *>(user);
    try {
      l.batch = l.next(step);
      checkInputs(l.m, l.batch, "batch " + std::to_string(step) + ": ");
      for (size_t i = 0; i < l.m.inputs.size(); ++i)
        inputs[i] = wireOf(l.batch.at(l.m.inputs[i].name), l.m.inputs[i].dtype,
                           l.scratch[i])
                        .first;
      return nullptr;
    } catch (...) {
      l.error = std::current_exception();
      return locus_status_create(LOCUS_STATUS_CANCELLED,
                                 "stopped by a callback");
    }
  };
  auto onDone = [](void *user, uint64_t step,
                   locus_context_t *context) -> locus_status_t {
    auto &l = *static_cast<Loop *>(user);
    if (!l.done)
      return nullptr;
    try {
      l.done(step, readOutputs(l.m, context));
      return nullptr;
    } catch (...) {
      l.error = std::current_exception();
      return locus_status_create(LOCUS_STATUS_CANCELLED,
                                 "stopped by a callback");
    }
  };
  locus_status_t s =
      locus_context_run_batches(lease.context, steps, onNext, onDone, &loop);
  if (loop.error) {
    locus_status_free(s);
    std::rethrow_exception(loop.error);
  }
  if (s)
    throw RunError(take(s));
  fillStats(lease.context, stats);
}

void CompiledModel::saveState(const std::string &path) const {
  if (locus_status_t s = locus_model_save_state(impl_->model, path.c_str()))
    throw RunError(take(s));
}

size_t CompiledModel::loadState(const std::string &path, bool strict) {
  locus_state_load_options_t options{};
  options.partial = strict ? 0 : 1;
  size_t loaded = 0;
  if (locus_status_t s =
          locus_model_load_state(impl_->model, path.c_str(), &options, &loaded))
    throw RunError(take(s));
  return loaded;
}

void CompiledModel::save(const std::string &path, const std::string &cpu,
                         const std::string &signKey) const {
  void *data = nullptr;
  size_t size = 0;
  if (locus_status_t s = locus_model_save_state_memory(
          impl_->model, LOCUS_STATE_CHANGED, &data, &size))
    throw RunError(take(s));
  std::string state(static_cast<const char *>(data), size);
  locus_free(data);
  // The host code for `cpu` from the compile cache, or compiled and kept
  // there.
  const Impl &m = *impl_;
  std::string key = cache::keyFor(m.graphKey, cpu), error;
  std::optional<cache::Entry> hit = cache::lookup(m.cache, key);
  HostCode code = hit ? std::move(hit->code) : HostCode{};
  if (!hit) {
    error = compileHostCode(m.parts, cpu, code);
    if (error.empty() && !key.empty())
      (void)cache::store(m.cache, key, {m.parts, code}); // best effort
  }
  if (error.empty())
    error = writeArtifact(m.parts, code, path, state, signKey);
  if (!error.empty())
    throw RunError("saving '" + path + "': " + error);
}

//===----------------------------------------------------------------------===//
// compile()
//===----------------------------------------------------------------------===//

namespace {

/// Refuses a graph without an output, or with an input, state or output of
/// a zero-size shape: MLIR 19's bare-pointer calling convention cannot pass
/// such a buffer. Refused at the graph's interface, at the user's line;
/// inside the graph they run.
void checkInterface(const RecordedGraph &g, const Here &loc) {
  bool hasOutput = false;
  for (mlir::Operation &op : g.body) {
    hasOutput |= mlir::isa<OutputOp>(op);
    mlir::Value value = mlir::isa<InputOp, StateOp>(op) ? op.getResult(0)
                        : mlir::isa<OutputOp>(op)       ? op.getOperand(0)
                                                        : mlir::Value();
    auto type = value ? mlir::dyn_cast<mlir::RankedTensorType>(value.getType())
                      : nullptr;
    if (type && type.getNumElements() == 0)
      throw errorFrom(
          "'" + op.getName().getStringRef().str() +
              "' has the zero-size shape " + formatShape(type.getShape()) +
              "; the host JIT does not yet take or return empty tensors",
          op.getLoc(), loc);
  }
  if (!hasOutput)
    throw userError(loc, "graph '" + g.name +
                             "' has no output: call g.output(name, value)");
}

/// The error diagnostics of a compilation, each with its notes but not the
/// IR, at the user's lines.
struct CompileErrors {
  std::vector<Diagnostic> errors;
  Here fallback;

  /// Keeps `d` when it is an error; warnings and remarks reach the user
  /// through the placement report instead.
  void record(mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
      return;
    std::string message = d.str();
    for (mlir::Diagnostic &note : d.getNotes()) {
      if (llvm::StringRef(note.str()).starts_with("see current operation"))
        continue; // the IR, which the user did not write
      std::string line = userLine(note.getLocation());
      message += "\n  " + (line == "unknown location" ? "" : line + ": ") +
                 "note: " + note.str();
    }
    errors.push_back(diagnosticAt(Diagnostic::Severity::error, message,
                                  d.getLocation(), fallback));
  }

  /// All of them as one Error (or a general one when none was reported).
  Error error() const {
    if (errors.empty())
      return userError(fallback, "compilation failed");
    return Error(errors);
  }
  std::string firstMessage() const {
    return errors.empty() ? "" : errors.front().message;
  }
};

/// This machine's devices; for data-parallel training the CPU and the first
/// GPU alone: each rank runs on one GPU, its own (rankOptions).
std::vector<std::string> compileTargets(const CompileOptions &options) {
  std::vector<std::string> targets = machineTargets();
  if (options.dataParallel)
    std::erase_if(targets, [](const std::string &t) {
      return t != "cpu" && t != "cuda:0";
    });
  return targets;
}

/// The pipeline's options from the user's: a policy or device they
/// misspelled is their error at `loc`.
PipelineOptions pipelineOptions(const CompileOptions &options,
                                const Here &loc) {
  std::string wrong;
  std::optional<PlacementOptions> placement = PlacementOptions::read(
      options.policy,
      options.devices.empty() ? compileTargets(options) : options.devices,
      wrong);
  if (!placement)
    throw userError(loc, "CompileOptions: " + wrong);
  placement->profile = options.profile;
  placement->fuse = options.fuse;
  placement->allowSoftPlacement = options.allowSoftPlacement;
  placement->dataParallel = options.dataParallel;
  placement->eval = options.eval;
  if (options.precision != "fp32" && options.precision != "tf32" &&
      options.precision != "bf16" && options.precision != "f16")
    throw userError(loc, "CompileOptions: precision must be fp32, tf32, "
                         "bf16 or f16, not '" +
                             options.precision + "'");
  placement->precision = options.precision;
  if (options.bucketBytes == 0)
    throw userError(loc, "CompileOptions: bucketBytes must be at least 1");
  placement->bucketBytes = options.bucketBytes;
  PipelineOptions pipeline;
  pipeline.placement = std::move(*placement);
  pipeline.allowTf32 = options.allowTf32 || options.precision == "tf32";
  return pipeline;
}

/// Gives the placement's warnings and notes to `handler`, or prints them to
/// stderr when there is none.
void report(const std::vector<dump::Warning> &warnings,
            const DiagnosticHandler &handler, const Here &loc) {
  for (const dump::Warning &warning : warnings) {
    Diagnostic d;
    d.severity = warning.note ? Diagnostic::Severity::note
                              : Diagnostic::Severity::warning;
    d.file = warning.source.file;
    d.line = warning.source.line;
    d.column = warning.source.column;
    d.message = warning.text;
    // An imported model has no lines: name the node, as errors do.
    const std::string &node = warning.source.node;
    if (!node.empty() && d.message.find(node) == std::string::npos)
      d.message = node + ": " + d.message;
    if (d.file.empty()) { // the whole graph: the compile call
      d.file = loc.file_name();
      d.line = loc.line();
      d.column = loc.column();
    }
    if (handler)
      handler(d);
    else
      llvm::errs() << d.str() << "\n";
  }
}

/// By dimension, the dynamic size of an input ("" for a static one); empty
/// for an input without dynamic sizes.
std::vector<std::string> inputSizes(InputOp input) {
  std::vector<std::string> sizes;
  auto map = input->getAttrOfType<mlir::AffineMapAttr>(kDimsAttrName);
  std::optional<DimExprs> dims =
      map ? dimsFromMap(map.getValue()) : std::nullopt;
  mlir::FailureOr<llvm::SmallVector<DimSymbol>> symbols =
      graphSymbols(input->getParentOfType<GraphOp>());
  if (!dims || mlir::failed(symbols))
    return sizes;
  for (const DimExpr &dim : *dims)
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    sizes.push_back(dim.isStatic() ? "" : formatDim(dim, *symbols));
  return sizes;
}

/// The graph's interface (inputs, state, outputs), from the original graph.
void recordInterface(const RecordedGraph &g, CompiledModel::Impl &impl) {
  for (mlir::Operation &op : g.body) {
    if (auto input = mlir::dyn_cast<InputOp>(op)) {
      impl.inputs.push_back(slotOf(input.getName().str(), input.getType()));
      impl.inputs.back().sizes = inputSizes(input);
      impl.inputNames.push_back(input.getName().str());
    } else if (auto state = mlir::dyn_cast<StateOp>(op)) {
      impl.states.push_back(slotOf(state.getName().str(), state.getType()));
      impl.stateNames.push_back(state.getName().str());
    } else if (auto output = mlir::dyn_cast<OutputOp>(op)) {
      impl.outputs.push_back(
          slotOf(output.getName().str(), output.getValue().getType()));
      impl.outputNames.push_back(output.getName().str());
    }
  }
}

/// A target machine for this CPU: without one, LLVM's cost model knows no
/// vector registers and the loop vectoriser does nothing.
std::unique_ptr<llvm::TargetMachine> hostTargetMachine() {
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder)
    LOCUS_INTERNAL_ERROR(llvm::toString(hostBuilder.takeError()));
  hostBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto hostMachine = hostBuilder->createTargetMachine();
  if (!hostMachine)
    LOCUS_INTERNAL_ERROR(llvm::toString(hostMachine.takeError()));
  return std::move(*hostMachine);
}

/// Binds what generated code calls to the runtime's implementations: each
/// function it may call, from the runtime's own table (the one the artifact
/// loader binds import slots from).
void registerRuntimeSymbols(mlir::ExecutionEngine &engine) {
  engine.registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    for (const std::string &name : runtimeImports(/*cuda=*/true))
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(
                                     locus_kernel_abi_function(name.c_str())),
                                 llvm::JITSymbolFlags::Exported};
    return symbols;
  });
}

/// JIT-compiles the kernels of the lowered `module`, optimised for this
/// CPU, into `impl.engine`. `firstError` ends the message of a failure.
void compileKernels(mlir::ModuleOp module, CompiledModel::Impl &impl,
                    const std::string &firstError) {
  std::unique_ptr<llvm::TargetMachine> hostMachine = hostTargetMachine();
  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = mlir::makeOptimizingTransformer(
      /*optLevel=*/3, /*sizeLevel=*/0, hostMachine.get());
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto builder = [&](mlir::Operation *op, llvm::LLVMContext &llvmContext) {
    return translateKernels(op, llvmContext, impl.parts.summary,
                            impl.parts.cudaFunctions);
  };
  engineOptions.llvmModuleBuilder = builder;
  auto engine = mlir::ExecutionEngine::create(module, engineOptions);
  if (!engine)
    LOCUS_INTERNAL_ERROR(
        "JIT compilation failed: " + llvm::toString(engine.takeError()) +
        (firstError.empty() ? "" : ": " + firstError));
  impl.engine = std::move(*engine);
  registerRuntimeSymbols(*impl.engine);
}

/// The runtime's options for a model of `options`; the strings it points
/// into are `options`'.
locus_model_options_t modelOptionsOf(const CompileOptions &options) {
  locus_model_options_t modelOptions{};
  modelOptions.device_map = options.deviceMap.c_str();
  modelOptions.trace_path = options.trace.c_str();
  modelOptions.disable_cuda_graphs = !options.cudaGraphs;
  return modelOptions;
}

/// The runtime's model of the plan, its kernels resolved in the JIT.
void createRuntimeModel(CompiledModel::Impl &impl,
                        const CompileOptions &options, const Here &loc) {
  locus_model_options_t modelOptions = modelOptionsOf(options);
  auto resolve = [](void *user, const char *symbol) -> void * {
    auto *engine = static_cast<mlir::ExecutionEngine *>(user);
    auto found = engine->lookup(symbol);
    if (!found) {
      llvm::consumeError(found.takeError());
      return nullptr;
    }
    return *found;
  };
  if (locus_status_t s = locus_model_create_from_plan(
          impl.parts.plan.data(), impl.parts.plan.size(),
          impl.parts.cudaKernels.data(), impl.parts.cudaKernels.size(), resolve,
          impl.engine.get(), &modelOptions, &impl.model))
    throw userError(loc, take(s));
}

/// The runtime's model of the artifact of impl.parts and `code`, loaded
/// as locus-run loads one: the path of every cached compile.
void loadRuntimeModel(CompiledModel::Impl &impl, const HostCode &code,
                      const CompileOptions &options, const Here &loc) {
  std::string bytes;
  std::string error = artifactBytes(impl.parts, code, bytes);
  if (!error.empty())
    LOCUS_INTERNAL_ERROR("making the artifact in memory: " + error);
  locus_model_options_t modelOptions = modelOptionsOf(options);
  if (locus_status_t s = locus_model_load_memory(bytes.data(), bytes.size(),
                                                 &modelOptions, &impl.model))
    throw userError(loc, take(s));
}

//===----------------------------------------------------------------------===//
// The compile cache
//===----------------------------------------------------------------------===//

/// Tells the user a warning about the compile itself: through their
/// handler when they gave one, else on stderr; `once` says it at most once
/// per process (a folder that cannot be used would otherwise be said at
/// every compile).
void notice(const CompileOptions &options, const Here &loc,
            const std::string &text, bool once = false) {
  static std::mutex mutex;
  static std::set<std::string> said;
  if (once) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!said.insert(text).second)
      return;
  }
  Diagnostic d{Diagnostic::Severity::warning, loc.file_name(), loc.line(),
               loc.column(), text};
  if (options.diagnostics)
    options.diagnostics(d);
  else
    llvm::errs() << d.str() << "\n";
}

/// The cache as `options` and the environment set it up; a folder that
/// cannot be used is said once.
cache::Settings cacheSettings(const CompileOptions &options, const Here &loc) {
  if (!options.cache)
    return {};
  cache::Settings settings = cache::Settings::resolve(options.cacheDir);
  if (!settings.problem.empty())
    notice(options, loc,
           "compile cache: off: " + settings.problem +
               " (LOCUS_CACHE=0 turns it off)",
           /*once=*/true);
  return settings;
}

/// The entry of `key`, when the cache has it.
std::optional<cache::Entry> lookupCached(const cache::Settings &settings,
                                         const std::string &key,
                                         const CompileOptions &options,
                                         const Here &loc) {
  if (key.empty())
    return std::nullopt;
  std::string note;
  std::optional<cache::Entry> entry = cache::lookup(settings, key, &note);
  if (!note.empty())
    notice(options, loc, "compile cache: " + note);
  return entry;
}

/// The host code of the pipeline's `parts` for this CPU, stored under
/// `key` when there is one; an empty object when it cannot be compiled
/// ahead of time (no linker), and the caller JIT-compiles instead.
HostCode compileForThisCpu(const cache::Settings &settings,
                           const std::string &key, const PipelineResult &parts,
                           const CompileOptions &options, const Here &loc) {
  HostCode code;
  std::string error = compileHostCode(parts, "native", code);
  if (!error.empty()) {
    notice(options, loc,
           "the kernels were JIT-compiled on one thread, since compiling "
           "them ahead of time failed: " +
               error,
           /*once=*/true);
    return {};
  }
  if (key.empty())
    return code;
  error = cache::store(settings, key, {parts, code});
  if (!error.empty())
    notice(options, loc, "compile cache: not stored: " + error,
           /*once=*/true);
  return code;
}

} // namespace

namespace {

/// "cpu" and "cuda:N" for each GPU of this machine; `whyNoCuda` says why
/// there is none (the runtime's probe).
std::vector<std::string> probeTargets(std::string &whyNoCuda) {
  std::vector<std::string> targets{"cpu"};
  locus_device_report_t *report = nullptr;
  if (locus_status_t s = locus_device_probe(&report)) {
    whyNoCuda = take(s);
    return targets;
  }
  for (size_t i = 0; i < locus_device_report_count(report); ++i) {
    locus_device_info_t info{};
    if (locus_status_t s = locus_device_report_get(report, i, &info))
      locus_status_free(s);
    else if (info.kind == LOCUS_DEVICE_CUDA)
      targets.push_back("cuda:" + std::to_string(info.index));
  }
  whyNoCuda = locus_device_report_cuda_note(report);
  locus_device_report_release(report);
  return targets;
}

/// When the targets were this machine's and a pin is off them, says so:
/// the user may not know compile() looked at the machine.
void explainMachineTargets(const CompileOptions &options,
                           CompileErrors &errors) {
  if (!options.devices.empty() ||
      llvm::none_of(errors.errors, [](const Diagnostic &d) {
        return d.message.find("which is not a target device") !=
               std::string::npos;
      }))
    return;
  std::string whyNoCuda;
  std::vector<std::string> targets = probeTargets(whyNoCuda);
  std::string names;
  for (const std::string &t : targets)
    names += (names.empty() ? "" : ", ") + t;
  Diagnostic note{Diagnostic::Severity::note, "", 0, 0,
                  "CompileOptions::devices was empty, so the targets are "
                  "this machine's devices: " +
                      names +
                      (whyNoCuda.empty() ? "" : " (" + whyNoCuda + ")")};
  errors.errors.push_back(std::move(note));
}

} // namespace

namespace {

/// The options a model loads with: for a data-parallel rank that mpirun or
/// srun launched, with no device map given, the map that gives it its own
/// GPU (Communicator::deviceMap).
CompileOptions rankOptions(const CompileOptions &options) {
  CompileOptions out = options;
  const char *world = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (options.dataParallel && options.deviceMap.empty() && world &&
      std::string(world) != "1")
    out.deviceMap = Communicator::fromEnvironment().deviceMap();
  return out;
}

} // namespace

std::vector<std::string> locus::machineTargets() {
  std::string whyNoCuda;
  return probeTargets(whyNoCuda);
}

CompiledModel locus::compile(const Graph &graph, const CompileOptions &options,
                             Here loc) {
  RecordedGraph g = recorded(graph);
  mlir::MLIRContext &context = g.context;
  preparePipeline(context);
  checkInterface(g, loc);

  // Work on a copy: the user's graph never changes.
  mlir::OwningOpRef<mlir::ModuleOp> module(g.module.clone());
  CompileErrors errors{{}, loc};
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors.record(d);
    return mlir::success();
  });

  auto impl = std::make_shared<CompiledModel::Impl>();
  PipelineOptions pipeline = pipelineOptions(options, loc);
  cache::Settings settings = cacheSettings(options, loc);
  std::string graphKey =
      settings.enabled ? cache::graphKeyOf(*module, pipeline) : "";
  std::string key = cache::keyFor(graphKey, "native");
  HostCode code;
  if (std::optional<cache::Entry> hit =
          lookupCached(settings, key, options, loc)) {
    impl->parts = std::move(hit->result);
    code = std::move(hit->code);
    impl->fromCache = true;
  } else {
    if (mlir::failed(runPipeline(*module, pipeline, impl->parts))) {
      explainMachineTargets(options, errors);
      throw errors.error();
    }
    code = compileForThisCpu(settings, key, impl->parts, options, loc);
  }
  impl->cache = settings;
  impl->graphKey = graphKey;
  report(impl->parts.warnings, options.diagnostics, loc);
  recordInterface(g, *impl);
  CompileOptions loading = rankOptions(options);
  if (code.object.empty()) {
    compileKernels(*module, *impl, errors.firstMessage());
    createRuntimeModel(*impl, loading, loc);
  } else {
    loadRuntimeModel(*impl, code, loading, loc);
  }
  // State given values (imported or pretrained weights) starts from them.
  for (const std::string &name : impl->stateNames)
    if (auto given = g.stateValues.find(name); given != g.stateValues.end())
      if (locus_status_t s = locus_model_write_state(
              impl->model, name.c_str(), given->second->data(),
              given->second->size() * sizeof(float)))
        throw userError(loc, take(s));
  CompiledModel model;
  model.impl_ = std::move(impl);
  return model;
}
