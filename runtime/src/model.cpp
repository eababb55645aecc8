// model.cpp - loading a model, its devices, and running its plan.
//
// Devices: `cpu` runs host kernels on the host; `sim` stands in for a GPU:
// it runs the host version of each kernel placed on a GPU, in memory of its
// own, and fails any launch that touches memory it does not own (as a GPU's
// MMU would fault). Both keep a table of their allocations; every launch
// checks each buffer against it. The `cuda` device slots in behind the same
// interface (issue 5).

#include "device.h"
#include "host_code.h"
#include "plan.h"
#include "status_impl.h"

#include "cuda.h"
#include "locus/abi.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <vector>

using namespace locus::rt;

namespace {} // namespace

struct locus_model_s {
  Plan plan;
  std::unique_ptr<HostCode> code;               // null for a JIT model
  std::vector<KernelFn> kernels;                // by plan kernel, as run
  std::vector<KernelFn> hostKernels, launchers; // by plan kernel; launchers
                                                // only for CUDA kernels
  std::vector<std::unique_ptr<Device>> devices; // this machine's, used
  std::vector<Device *> deviceOf;               // by plan device
  std::vector<void *> persistent;               // by buffer; null if per-run
  std::vector<locus_tensor_info_t> inputs, outputs, states;
  std::vector<uint32_t> inputBuffers, outputBuffers, stateBuffers;
  std::string report;
  locus_run_stats_t loadStats{};
  // CUDA graphs: the device a step runs on when it runs on one CUDA device
  // alone (null otherwise, or when graphs are off); what a step counts.
  Device *graphDevice = nullptr;
  locus_run_stats_t stepCounts{};
  std::shared_mutex stateMutex; // runs share, state writes exclude
  bool writesState = false;     // a training step: its runs exclude too
  // LOCUS_PROFILE=1: time of each kernel and of the copies, printed to
  // stderr when the model is released.
  bool profile = false;
  std::unique_ptr<std::atomic<uint64_t>[]> kernelNs, kernelCalls;
  std::atomic<uint64_t> copyNs{0}, copyCalls{0};

  void printProfile() const;

  ~locus_model_s() {
    if (profile)
      printProfile();
    for (size_t i = 0; i < persistent.size(); ++i)
      if (persistent[i])
        deviceOf[plan.buffers[i].device]->release(persistent[i]);
  }
};

void locus_model_s::printProfile() const {
  std::vector<size_t> order(plan.kernels.size());
  uint64_t total = copyNs;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    total += kernelNs[i];
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return kernelNs[a] > kernelNs[b]; });
  std::fprintf(stderr, "locus profile: %-40s %-8s %8s %10s %10s %6s\n",
               "kernel", "device", "calls", "total ms", "mean us", "share");
  auto row = [&](const char *name, const char *device, uint64_t calls,
                 uint64_t ns) {
    std::fprintf(
        stderr, "locus profile: %-40s %-8s %8llu %10.3f %10.2f %5.1f%%\n", name,
        device, static_cast<unsigned long long>(calls),
        static_cast<double>(ns) / 1e6,
        calls ? static_cast<double>(ns) / 1e3 / static_cast<double>(calls)
              : 0.0,
        total ? 100.0 * static_cast<double>(ns) / static_cast<double>(total)
              : 0.0);
  };
  for (size_t i : order)
    row(plan.kernels[i].symbol.c_str(),
        deviceOf[plan.kernels[i].device]->name().c_str(), kernelCalls[i],
        kernelNs[i]);
  row("(copies)", "", copyCalls, copyNs);
}

struct locus_context_s {
  locus_model_t *model;
  std::vector<void *> arenas; // by plan device
  std::vector<bool> inputSet;
  locus_run_stats_t stats{};
  std::vector<void *> pointers; // scratch: a launch's buffers
  std::vector<bool> recorded;   // events of this step
  uint64_t runs = 0;
  void *graph = nullptr; // the captured step, on the model's graphDevice
  // Batch mode (locus_context_run_batches): the memory standing for a
  // buffer this step (by buffer; empty or null: the plan's), and the step's
  // commands the runner did ahead (by command).
  std::vector<void *> override;
  std::vector<bool> skip;
};

namespace {

const char *dtypeName(uint8_t dtype) {
  return dtype == LOCUS_PLAN_F32   ? "f32"
         : dtype == LOCUS_PLAN_I64 ? "i64"
                                   : "i1";
}

std::string shapeString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// N of "cuda:N"; -1 for anything else.
int cudaOrdinal(const std::string &name) {
  if (name.rfind("cuda:", 0) != 0 || name.size() == 5 || name.size() > 8)
    return -1;
  int n = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9')
      return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

/// Parses "cuda:0=sim,cuda:1=cpu" into artifact device -> target.
locus_status_t parseDeviceMap(const char *text,
                              std::map<std::string, std::string> &out) {
  std::string s = text ? text : "";
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "device map entry '%s' is not <device>=<target>",
                        item.c_str());
    std::string from = item.substr(0, eq), to = item.substr(eq + 1);
    if (to != "cpu" && to != "sim" && cudaOrdinal(to) < 0)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "device map target '%s' for %s: expected cpu, sim or "
                        "cuda:<N>",
                        to.c_str(), from.c_str());
    out[from] = to;
  }
  return nullptr;
}

/// The tensor info of a buffer (pointers into the plan, which lives as long
/// as the model).
locus_tensor_info_t infoOf(const Plan &plan, uint32_t index,
                           const std::string &name) {
  const PlanBuffer &b = plan.buffers[index];
  locus_tensor_info_t info{};
  info.name = name.c_str();
  info.dtype = static_cast<locus_dtype_t>(b.dtype);
  info.rank = static_cast<int32_t>(b.dims.size());
  info.dims = b.dims.data();
  info.byte_size = b.bytes;
  info.device = plan.devices[b.device].name.c_str();
  return info;
}

void *bufferPointer(const locus_model_t &m, const locus_context_t &ctx,
                    uint32_t index) {
  if (void *p = m.persistent[index])
    return p;
  if (!ctx.override.empty() && ctx.override[index])
    return ctx.override[index];
  const PlanBuffer &b = m.plan.buffers[index];
  return static_cast<char *>(ctx.arenas[b.device]) + b.offset;
}

const std::vector<locus_tensor_info_t> &infos(const locus_model_t *m,
                                              locus_tensor_role_t role) {
  return role == LOCUS_TENSOR_INPUT    ? m->inputs
         : role == LOCUS_TENSOR_OUTPUT ? m->outputs
                                       : m->states;
}

locus_status_t find(const locus_model_t *m, locus_tensor_role_t role,
                    const char *name, size_t &out) {
  const auto &list = infos(m, role);
  for (size_t i = 0; i < list.size(); ++i)
    if (name && std::strcmp(list[i].name, name) == 0) {
      out = i;
      return nullptr;
    }
  std::string names;
  for (const auto &info : list)
    names += (names.empty() ? "" : ", ") + std::string(info.name);
  const char *what = role == LOCUS_TENSOR_INPUT    ? "input"
                     : role == LOCUS_TENSOR_OUTPUT ? "output"
                                                   : "state";
  return makeStatus(LOCUS_STATUS_NOT_FOUND, "no %s named '%s' (%ss: %s)", what,
                    name ? name : "(null)", what,
                    names.empty() ? "none" : names.c_str());
}

locus_status_t checkSize(const locus_tensor_info_t &info, size_t bytes,
                         const char *what) {
  if (bytes == info.byte_size)
    return nullptr;
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                    "%s '%s' is %s %s (%zu bytes); %zu bytes were given", what,
                    info.name, shapeString(dims).c_str(),
                    dtypeName(static_cast<uint8_t>(info.dtype)), info.byte_size,
                    bytes);
}

/// The index of the tensor `name` of `role`, whose byte size must be
/// `bytes`: NOT_FOUND or INVALID_ARGUMENT otherwise.
locus_status_t lookup(const locus_model_t &m, locus_tensor_role_t role,
                      const char *name, size_t bytes, size_t &index) {
  if (locus_status_t s = find(&m, role, name, index))
    return s;
  const char *what = role == LOCUS_TENSOR_INPUT    ? "input"
                     : role == LOCUS_TENSOR_OUTPUT ? "output"
                                                   : "state";
  return checkSize(infos(&m, role)[index], bytes, what);
}

/// Runs one command list. Launches check that every buffer belongs to the
/// device they run on.
locus_status_t execute(locus_model_t &m, locus_context_t &ctx,
                       const std::vector<PlanCommand> &commands,
                       locus_run_stats_t &stats) {
  std::fill(ctx.recorded.begin(), ctx.recorded.end(), false);
  bool skipping = &commands == &m.plan.step && !ctx.skip.empty();
  for (size_t k = 0; k < commands.size(); ++k) {
    const PlanCommand &c = commands[k];
    if (skipping && ctx.skip[k])
      continue;
    switch (c.op) {
    case LOCUS_PLAN_LAUNCH: {
      const PlanKernel &kernel = m.plan.kernels[c.a];
      Device *device = m.deviceOf[kernel.device];
      ctx.pointers.resize(c.args.size());
      for (size_t i = 0; i < c.args.size(); ++i) {
        uint32_t index = c.args[i];
        void *p = bufferPointer(m, ctx, index);
        const PlanBuffer &b = m.plan.buffers[index];
        if (!device->owns(p, b.bytes))
          return makeStatus(
              LOCUS_STATUS_INTERNAL,
              "kernel %s on %s (%s) %s buffer %u, which is on %s (%s): a "
              "kernel may only touch memory of its own device",
              kernel.symbol.c_str(), m.plan.devices[kernel.device].name.c_str(),
              device->name().c_str(),
              i >= c.args.size() - c.b ? "writes" : "reads", index,
              m.plan.devices[b.device].name.c_str(),
              m.deviceOf[b.device]->name().c_str());
        ctx.pointers[i] = p;
      }
      auto start = m.profile ? std::chrono::steady_clock::now()
                             : std::chrono::steady_clock::time_point();
      if (locus_status_t s =
              device->launch(m.kernels[c.a], ctx.pointers.data()))
        return s;
      if (m.profile) {
        m.kernelNs[c.a] += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now() - start)
                .count());
        ++m.kernelCalls[c.a];
      }
      ++stats.launches;
      if (device->simulated())
        ++stats.sim_launches;
      break;
    }
    case LOCUS_PLAN_COPY: {
      const PlanBuffer &src = m.plan.buffers[c.a];
      const PlanBuffer &dst = m.plan.buffers[c.b];
      auto start = m.profile ? std::chrono::steady_clock::now()
                             : std::chrono::steady_clock::time_point();
      if (locus_status_t s = m.deviceOf[dst.device]->copyFrom(
              *m.deviceOf[src.device], bufferPointer(m, ctx, c.a),
              bufferPointer(m, ctx, c.b), src.bytes))
        return s;
      if (m.profile) {
        m.copyNs += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now() - start)
                .count());
        ++m.copyCalls;
      }
      ++stats.copies;
      stats.copy_bytes += src.bytes;
      break;
    }
    case LOCUS_PLAN_RECORD:
      // Host and sim devices run in order: an event is done when recorded.
      ctx.recorded[c.b] = true;
      break;
    case LOCUS_PLAN_WAIT:
      if (!ctx.recorded[c.b])
        return makeStatus(LOCUS_STATUS_INTERNAL,
                          "%s waits for event %u, which was never recorded",
                          m.plan.devices[c.a].name.c_str(), c.b);
      break;
    default: // the plan reader accepts no other command
      return makeStatus(LOCUS_STATUS_INTERNAL, "unknown plan command %u", c.op);
    }
  }
  return nullptr;
}

/// The model's state lock for one step: shared, or exclusive when the
/// model's steps write state (a training step).
class StepLock {
public:
  explicit StepLock(locus_model_t &m)
      : shared_(m.stateMutex, std::defer_lock),
        exclusive_(m.stateMutex, std::defer_lock) {
    if (m.writesState)
      exclusive_.lock();
    else
      shared_.lock();
  }

private:
  std::shared_lock<std::shared_mutex> shared_;
  std::unique_lock<std::shared_mutex> exclusive_;
};

/// One step: issued command by command, or, on a step that runs on one
/// CUDA device alone, captured on the second run and replayed after.
locus_status_t runStep(locus_model_t &m, locus_context_t &ctx,
                       locus_run_stats_t &stats) {
  ++ctx.runs;
  if (m.graphDevice && !ctx.graph && ctx.runs >= 2 && ctx.override.empty()) {
    if (locus_status_t s = m.graphDevice->beginCapture())
      return s;
    locus_run_stats_t counted{};
    locus_status_t s = execute(m, ctx, m.plan.step, counted);
    void *graph = nullptr;
    locus_status_t e = m.graphDevice->endCapture(&graph);
    if (s || e) {
      if (s && e)
        locus_status_free(e);
      return s ? s : e;
    }
    ctx.graph = graph;
  }
  if (ctx.graph && m.graphDevice && ctx.override.empty()) {
    if (locus_status_t s = m.graphDevice->replay(ctx.graph))
      return s;
    stats.launches = m.stepCounts.launches;
    stats.sim_launches = m.stepCounts.sim_launches;
    stats.copies = m.stepCounts.copies;
    stats.copy_bytes = m.stepCounts.copy_bytes;
  } else if (locus_status_t s = execute(m, ctx, m.plan.step, stats)) {
    return s;
  }
  for (const auto &device : m.devices)
    if (locus_status_t s = device->finish())
      return s;
  return nullptr;
}

/// Everything after the plan and the kernels are in place: devices (CUDA
/// ones with the kernels of `ptx`, a PTX section), state, constants,
/// load-time copies, the interface, the report.
locus_status_t finishLoad(locus_model_t &m, const locus_model_options_t *opts,
                          const std::string &codeNote, const void *ptx,
                          size_t ptxSize) {
  std::map<std::string, std::string> map;
  if (locus_status_t s = parseDeviceMap(opts ? opts->device_map : nullptr, map))
    return s;
  for (const auto &[from, to] : map) {
    bool known = false;
    for (const PlanDevice &d : m.plan.devices)
      known |= d.name == from;
    if (!known) {
      std::string names;
      for (const PlanDevice &d : m.plan.devices)
        names += (names.empty() ? "" : ", ") + d.name;
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "device map names %s, which the artifact does not use "
                        "(it uses %s)",
                        from.c_str(), names.c_str());
    }
  }

  if (const char *env = std::getenv("LOCUS_PROFILE"); env && *env == '1') {
    size_t n = m.plan.kernels.size();
    m.kernelNs.reset(new (std::nothrow) std::atomic<uint64_t>[n]());
    m.kernelCalls.reset(new (std::nothrow) std::atomic<uint64_t>[n]());
    m.profile = m.kernelNs && m.kernelCalls;
  }

  // Whether every kernel of a plan device has a launcher (CUDA code).
  auto hasCudaCode = [&](uint32_t device) {
    if (!ptx || !ptxSize)
      return false;
    for (size_t i = 0; i < m.plan.kernels.size(); ++i)
      if (m.plan.kernels[i].device == device && !m.launchers[i])
        return false;
    return true;
  };
  bool graphs = !(opts && opts->disable_cuda_graphs) && !m.profile;
  if (const char *env = std::getenv("LOCUS_CUDA_GRAPHS"); env && *env == '0')
    graphs = false;

  // This machine's devices, one object per target.
  std::map<std::string, Device *> targets;
  m.report.clear();
  for (uint32_t index = 0; index < m.plan.devices.size(); ++index) {
    const PlanDevice &d = m.plan.devices[index];
    std::string target = d.kind == LOCUS_DEVICE_CPU ? "cpu" : "sim";
    std::string why;
    if (auto it = map.find(d.name); it != map.end()) {
      target = it->second;
      why = "by the device map";
      if (cudaOrdinal(target) >= 0 && !hasCudaCode(index))
        return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                          "the device map sends %s to %s, but the artifact "
                          "has no CUDA code for its kernels",
                          d.name.c_str(), target.c_str());
    } else if (d.kind == LOCUS_DEVICE_CUDA) {
      std::string absent;
      if (!hasCudaCode(index))
        absent = "the artifact has no CUDA code for its kernels";
      else if (cudaUsable(int(d.index), absent))
        target = d.name;
      why = target == d.name ? "PTX kernels and cuBLAS through the driver"
                             : "host versions of its kernels: " + absent;
    } else {
      why = codeNote;
    }
    Device *&device = targets[target];
    if (!device) {
      std::unique_ptr<Device> made;
      if (int ordinal = cudaOrdinal(target); ordinal >= 0) {
        locus_status_t status = nullptr;
        made = makeCudaDevice(ordinal, ptx, ptxSize, graphs, status);
        if (status)
          return status;
      } else {
        made = makeDevice(target);
      }
      if (!made)
        return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
      device = made.get();
      m.devices.push_back(std::move(made));
    }
    m.deviceOf.push_back(device);
    size_t kernels = 0;
    for (const PlanKernel &k : m.plan.kernels)
      kernels += &m.plan.devices[k.device] == &d;
    for (const std::string &part :
         {d.name, std::string(" -> "), target, std::string(" ("), why,
          std::string("); "), std::to_string(kernels),
          std::string(kernels == 1 ? " kernel\n" : " kernels\n")})
      m.report += part;
  }

  // What each kernel runs as: its launcher on a CUDA device, its host
  // version elsewhere.
  m.kernels = m.hostKernels;
  for (size_t i = 0; i < m.plan.kernels.size(); ++i)
    if (cudaOrdinal(m.deviceOf[m.plan.kernels[i].device]->name()) >= 0)
      m.kernels[i] = m.launchers[i];

  // A step on one CUDA device alone is captured as a CUDA graph.
  Device *only = nullptr;
  bool one = true;
  for (const PlanCommand &c : m.plan.step) {
    Device *on = nullptr;
    if (c.op == LOCUS_PLAN_LAUNCH)
      on = m.deviceOf[m.plan.kernels[c.a].device];
    else if (c.op == LOCUS_PLAN_COPY) {
      on = m.deviceOf[m.plan.buffers[c.b].device];
      one &= m.deviceOf[m.plan.buffers[c.a].device] == on;
    } else
      continue;
    one &= !only || only == on;
    only = on;
  }
  if (one && only && only->canCapture())
    m.graphDevice = only;
  for (const PlanCommand &c : m.plan.step) {
    if (c.op == LOCUS_PLAN_LAUNCH)
      for (size_t i = c.args.size() - c.b; i < c.args.size(); ++i)
        m.writesState |= m.plan.buffers[c.args[i]].kind == LOCUS_PLAN_STATE;
    else if (c.op == LOCUS_PLAN_COPY)
      m.writesState |= m.plan.buffers[c.b].kind == LOCUS_PLAN_STATE;
    if (c.op == LOCUS_PLAN_LAUNCH) {
      ++m.stepCounts.launches;
      m.stepCounts.sim_launches +=
          m.deviceOf[m.plan.kernels[c.a].device]->simulated();
    } else if (c.op == LOCUS_PLAN_COPY) {
      ++m.stepCounts.copies;
      m.stepCounts.copy_bytes += m.plan.buffers[c.a].bytes;
    }
  }

  // Persistent buffers: state from its initialiser, constants from the plan,
  // made on the host and uploaded.
  m.persistent.assign(m.plan.buffers.size(), nullptr);
  std::vector<float> staging;
  for (size_t i = 0; i < m.plan.buffers.size(); ++i) {
    const PlanBuffer &b = m.plan.buffers[i];
    if (b.kind == LOCUS_PLAN_ACTIVATION || b.kind == LOCUS_PLAN_INPUT)
      continue;
    void *p = m.deviceOf[b.device]->allocate(b.bytes);
    if (!p)
      return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                        "out of memory for %zu bytes of %s", size_t(b.bytes),
                        b.name.empty() ? "constants" : b.name.c_str());
    m.persistent[i] = p;
    Device &device = *m.deviceOf[b.device];
    if (b.kind == LOCUS_PLAN_STATE) {
      // In chunks: element i of uniform(a, b) is drawn from
      // seed + (i + 1) * 0x9E3779B97F4A7C15, so a chunk starting at k is the
      // same generator with seed + k * 0x9E3779B97F4A7C15.
      constexpr size_t kChunk = 1 << 16;
      staging.resize(kChunk);
      size_t count = b.bytes / 4;
      for (size_t k = 0; k < count; k += kChunk) {
        size_t n = std::min(kChunk, count - k);
        if (locus_status_t s = locus_init_fill(
                static_cast<locus_init_kind_t>(b.initKind), b.initA, b.initB,
                b.seed + k * 0x9E3779B97F4A7C15ull, n, staging.data()))
          return s;
        if (locus_status_t s = device.upload(
                staging.data(), static_cast<float *>(p) + k, n * 4))
          return s;
      }
    } else if (b.kind == LOCUS_PLAN_CONSTANT) {
      if (locus_status_t s = device.upload(b.data.data(), p, b.bytes))
        return s;
    }
  }

  // The interface, in the plan's order.
  for (uint32_t i = 0; i < m.plan.buffers.size(); ++i) {
    const PlanBuffer &b = m.plan.buffers[i];
    if (b.kind == LOCUS_PLAN_INPUT) {
      m.inputs.push_back(infoOf(m.plan, i, b.name));
      m.inputBuffers.push_back(i);
    } else if (b.kind == LOCUS_PLAN_STATE) {
      m.states.push_back(infoOf(m.plan, i, b.name));
      m.stateBuffers.push_back(i);
    }
  }
  for (const PlanOutput &o : m.plan.outputs) {
    m.outputs.push_back(infoOf(m.plan, o.buffer, o.name));
    m.outputBuffers.push_back(o.buffer);
  }

  // Load-time copies: state and constants go to their device once.
  locus_context_s loader{};
  loader.model = &m;
  loader.recorded.assign(m.plan.events, false);
  loader.arenas.assign(m.plan.devices.size(), nullptr);
  if (locus_status_t s = execute(m, loader, m.plan.load, m.loadStats))
    return s;
  for (const auto &device : m.devices)
    if (locus_status_t s = device->finish())
      return s;
  m.report +=
      "per step: " + std::to_string(m.plan.kernels.size()) + " kernel launches";
  size_t copies = 0;
  uint64_t bytes = 0;
  for (const PlanCommand &c : m.plan.step)
    if (c.op == LOCUS_PLAN_COPY) {
      ++copies;
      bytes += m.plan.buffers[c.a].bytes;
    }
  m.report +=
      ", " + std::to_string(copies) + " copies (" + std::to_string(bytes) +
      " bytes); at load: " + std::to_string(m.loadStats.copies) + " copies (" +
      std::to_string(m.loadStats.copy_bytes) + " bytes)\n";
  if (m.graphDevice)
    m.report += "steps replay as a CUDA graph on " + m.graphDevice->name() +
                " from the second run (LOCUS_CUDA_GRAPHS=0 turns it off)\n";
  return nullptr;
}

/// The launcher of the kernel whose host entry is `symbol`:
/// LOCUS_ABI_KERNEL_PREFIX<f> -> LOCUS_ABI_CUDA_PREFIX<f>.
std::string launcherName(const std::string &symbol) {
  const std::string prefix = LOCUS_ABI_KERNEL_PREFIX;
  if (symbol.rfind(prefix, 0) != 0)
    return "";
  return LOCUS_ABI_CUDA_PREFIX + symbol.substr(prefix.size());
}

locus_status_t loadArtifact(locus_artifact_t *artifact,
                            const locus_model_options_t *options,
                            locus_model_t **out_model) {
  const void *planData = nullptr, *code = nullptr;
  size_t planSize = 0, codeSize = 0;
  if (locus_status_t s = locus_artifact_section(artifact, LOCUS_SECTION_PLAN,
                                                &planData, &planSize))
    return s;
  if (locus_status_t s = locus_artifact_section(
          artifact, LOCUS_SECTION_HOST_CODE, &code, &codeSize))
    return s;
  auto model = std::unique_ptr<locus_model_t>(new (std::nothrow) locus_model_t);
  if (!model)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
  if (locus_status_t s = readPlan(planData, planSize, model->plan))
    return s;
  std::string note;
  if (locus_status_t s = HostCode::load(code, codeSize, model->plan.imports,
                                        model->code, note))
    return s;
  for (const PlanKernel &k : model->plan.kernels) {
    void *fn = model->code->symbol(k.symbol.c_str());
    if (!fn)
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the host code has no kernel %s", k.symbol.c_str());
    model->hostKernels.push_back(reinterpret_cast<KernelFn>(fn));
    model->launchers.push_back(reinterpret_cast<KernelFn>(
        model->code->symbol(launcherName(k.symbol).c_str())));
  }
  const void *ptx = nullptr;
  size_t ptxSize = 0;
  if (locus_status_t s =
          locus_artifact_section(artifact, LOCUS_SECTION_PTX, &ptx, &ptxSize)) {
    if (locus_status_code(s) != LOCUS_STATUS_NOT_FOUND)
      return s;
    locus_status_free(s);
  }
  if (locus_status_t s = finishLoad(*model, options, note, ptx, ptxSize))
    return s;
  *out_model = model.release();
  return nullptr;
}

} // namespace

extern "C" {

locus_status_t locus_model_load_memory(const void *data, size_t size,
                                       const locus_model_options_t *options,
                                       locus_model_t **out_model) {
  if (!out_model)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "out_model is NULL");
  *out_model = nullptr;
  locus_artifact_t *artifact = nullptr;
  if (locus_status_t s = locus_artifact_load_memory(data, size, &artifact))
    return s;
  locus_status_t s = loadArtifact(artifact, options, out_model);
  locus_artifact_release(artifact);
  return s;
}

locus_status_t locus_model_load(const char *path,
                                const locus_model_options_t *options,
                                locus_model_t **out_model) {
  if (!out_model)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "out_model is NULL");
  *out_model = nullptr;
  locus_artifact_t *artifact = nullptr;
  if (locus_status_t s = locus_artifact_load(path, &artifact))
    return s;
  locus_status_t s = loadArtifact(artifact, options, out_model);
  locus_artifact_release(artifact);
  return s;
}

locus_status_t locus_model_create_from_plan(
    const void *plan, size_t plan_size, const void *cuda_kernels,
    size_t cuda_kernels_size, locus_symbol_resolver_t resolve, void *user_data,
    const locus_model_options_t *options, locus_model_t **out_model) {
  if (!out_model || !resolve || (!plan && plan_size))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "plan, resolve and out_model must not be NULL");
  *out_model = nullptr;
  auto model = std::unique_ptr<locus_model_t>(new (std::nothrow) locus_model_t);
  if (!model)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
  if (locus_status_t s = readPlan(plan, plan_size, model->plan))
    return s;
  for (const PlanKernel &k : model->plan.kernels) {
    void *fn = resolve(user_data, k.symbol.c_str());
    if (!fn)
      return makeStatus(LOCUS_STATUS_NOT_FOUND, "no kernel %s",
                        k.symbol.c_str());
    model->hostKernels.push_back(reinterpret_cast<KernelFn>(fn));
    std::string launcher = launcherName(k.symbol);
    model->launchers.push_back(reinterpret_cast<KernelFn>(
        launcher.empty() ? nullptr : resolve(user_data, launcher.c_str())));
  }
  if (locus_status_t s = finishLoad(*model, options, "JIT-compiled host code",
                                    cuda_kernels, cuda_kernels_size))
    return s;
  *out_model = model.release();
  return nullptr;
}

void locus_model_release(locus_model_t *model) { delete model; }

size_t locus_model_tensor_count(const locus_model_t *model,
                                locus_tensor_role_t role) {
  if (!model || role > LOCUS_TENSOR_STATE)
    return 0;
  return infos(model, role).size();
}

locus_status_t locus_model_tensor_info(const locus_model_t *model,
                                       locus_tensor_role_t role, size_t index,
                                       locus_tensor_info_t *out_info) {
  if (!model || !out_info || role > LOCUS_TENSOR_STATE ||
      index >= infos(model, role).size())
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "no tensor %zu of that role", index);
  *out_info = infos(model, role)[index];
  return nullptr;
}

locus_status_t locus_model_find_tensor(const locus_model_t *model,
                                       locus_tensor_role_t role,
                                       const char *name, size_t *out_index) {
  if (!model || !out_index || role > LOCUS_TENSOR_STATE)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
  return find(model, role, name, *out_index);
}

locus_status_t locus_model_read_state(const locus_model_t *model,
                                      const char *name, void *out_data,
                                      size_t byte_size) {
  if (!model || (!out_data && byte_size))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
  size_t i = 0;
  if (locus_status_t s = lookup(*model, LOCUS_TENSOR_STATE, name, byte_size, i))
    return s;
  auto *m = const_cast<locus_model_t *>(model);
  std::shared_lock lock(m->stateMutex);
  uint32_t buffer = m->stateBuffers[i];
  return m->deviceOf[m->plan.buffers[buffer].device]->download(
      m->persistent[buffer], out_data, byte_size);
}

locus_status_t locus_model_write_state(locus_model_t *model, const char *name,
                                       const void *data, size_t byte_size) {
  if (!model || (!data && byte_size))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
  size_t i = 0;
  if (locus_status_t s = lookup(*model, LOCUS_TENSOR_STATE, name, byte_size, i))
    return s;
  std::unique_lock lock(model->stateMutex);
  uint32_t buffer = model->stateBuffers[i];
  const Plan &plan = model->plan;
  if (locus_status_t s = model->deviceOf[plan.buffers[buffer].device]->upload(
          data, model->persistent[buffer], byte_size))
    return s;
  // Copies of this state on other devices are refreshed too.
  for (const PlanCommand &c : plan.load)
    if (c.op == LOCUS_PLAN_COPY && c.a == buffer)
      if (locus_status_t s = model->deviceOf[plan.buffers[c.b].device]->upload(
              data, model->persistent[c.b], byte_size))
        return s;
  return nullptr;
}

const char *locus_model_report(const locus_model_t *model) {
  return model ? model->report.c_str() : "";
}

void locus_model_load_stats(const locus_model_t *model,
                            locus_run_stats_t *out_stats) {
  if (model && out_stats)
    *out_stats = model->loadStats;
}

locus_status_t locus_context_create(locus_model_t *model,
                                    locus_context_t **out_context) {
  if (!model || !out_context)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
  *out_context = nullptr;
  auto ctx =
      std::unique_ptr<locus_context_t>(new (std::nothrow) locus_context_t);
  if (!ctx)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
  ctx->model = model;
  ctx->inputSet.assign(model->inputs.size(), false);
  ctx->recorded.assign(model->plan.events, false);
  ctx->arenas.assign(model->plan.devices.size(), nullptr);
  for (size_t d = 0; d < model->plan.devices.size(); ++d) {
    ctx->arenas[d] = model->deviceOf[d]->allocate(model->plan.arenaBytes[d]);
    if (!ctx->arenas[d]) {
      for (size_t e = 0; e < d; ++e)
        model->deviceOf[e]->release(ctx->arenas[e]);
      return makeStatus(
          LOCUS_STATUS_OUT_OF_MEMORY,
          "out of memory for a %llu-byte arena on %s",
          static_cast<unsigned long long>(model->plan.arenaBytes[d]),
          model->plan.devices[d].name.c_str());
    }
  }
  *out_context = ctx.release();
  return nullptr;
}

void locus_context_release(locus_context_t *context) {
  if (!context)
    return;
  if (context->graph)
    context->model->graphDevice->releaseGraph(context->graph);
  for (const auto &device : context->model->devices)
    if (locus_status_t s = device->finish())
      locus_status_free(s); // releasing: the arenas go either way
  for (size_t d = 0; d < context->arenas.size(); ++d)
    context->model->deviceOf[d]->release(context->arenas[d]);
  delete context;
}

const locus_model_t *locus_context_model(const locus_context_t *context) {
  return context ? context->model : nullptr;
}

locus_status_t locus_context_set_input(locus_context_t *context,
                                       const char *name, const void *data,
                                       size_t byte_size) {
  if (!context || (!data && byte_size))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
  locus_model_t &m = *context->model;
  size_t i = 0;
  if (locus_status_t s = lookup(m, LOCUS_TENSOR_INPUT, name, byte_size, i))
    return s;
  uint32_t buffer = m.inputBuffers[i];
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->upload(
          data, bufferPointer(m, *context, buffer), byte_size))
    return s;
  context->inputSet[i] = true;
  context->stats.input_bytes += byte_size;
  return nullptr;
}

locus_status_t locus_context_run(locus_context_t *context) {
  if (!context)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "context is NULL");
  locus_model_t &m = *context->model;
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (!context->inputSet[i]) {
      std::vector<int64_t> dims(m.inputs[i].dims,
                                m.inputs[i].dims + m.inputs[i].rank);
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "input '%s' (%s %s) was not set", m.inputs[i].name,
                        shapeString(dims).c_str(),
                        dtypeName(static_cast<uint8_t>(m.inputs[i].dtype)));
    }
  locus_run_stats_t stats{};
  stats.input_bytes = context->stats.input_bytes;
  StepLock lock(m);
  locus_status_t s = runStep(m, *context, stats);
  context->stats = stats;
  return s;
}

locus_status_t locus_context_read_output(locus_context_t *context,
                                         const char *name, void *out_data,
                                         size_t byte_size) {
  if (!context || (!out_data && byte_size))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
  locus_model_t &m = *context->model;
  size_t i = 0;
  if (locus_status_t s = lookup(m, LOCUS_TENSOR_OUTPUT, name, byte_size, i))
    return s;
  std::shared_lock lock(m.stateMutex);
  uint32_t buffer = m.outputBuffers[i];
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->download(
          bufferPointer(m, *context, buffer), out_data, byte_size))
    return s;
  context->stats.output_bytes += byte_size;
  return nullptr;
}

void locus_context_stats(const locus_context_t *context,
                         locus_run_stats_t *out_stats) {
  if (context && out_stats)
    *out_stats = context->stats;
}

locus_status_t locus_context_run_batches(locus_context_t *context,
                                         uint64_t steps,
                                         locus_next_batch_fn next,
                                         locus_step_done_fn done, void *user) {
  if (!context || !next)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "locus_context_run_batches: context or next is NULL");
  locus_model_t &m = *context->model;
  locus_context_t &ctx = *context;

  // What the runner feeds: every input buffer, and every buffer a step copy
  // fills from an input (the runner makes that copy ahead, and the step
  // skips it). Two slots each, step i using slot i % 2.
  struct Feed {
    size_t input;    // which input's bytes
    uint32_t buffer; // the buffer it stands for
    Device *device;
    void *slot[2] = {nullptr, nullptr};
    bool owned[2] = {false, false};
  };
  std::vector<Feed> feeds;
  std::vector<bool> skip(m.plan.step.size(), false);
  for (size_t i = 0; i < m.inputBuffers.size(); ++i) {
    uint32_t b = m.inputBuffers[i];
    feeds.push_back({i, b, m.deviceOf[m.plan.buffers[b].device]});
    feeds.back().slot[0] = bufferPointer(m, ctx, b);
  }
  for (size_t k = 0; k < m.plan.step.size(); ++k) {
    const PlanCommand &c = m.plan.step[k];
    if (c.op != LOCUS_PLAN_COPY || m.plan.buffers[c.a].kind != LOCUS_PLAN_INPUT)
      continue;
    auto input = static_cast<size_t>(
        std::find(m.inputBuffers.begin(), m.inputBuffers.end(), c.a) -
        m.inputBuffers.begin());
    feeds.push_back({input, c.b, m.deviceOf[m.plan.buffers[c.b].device]});
    skip[k] = true;
  }
  auto cleanup = [&] {
    for (Feed &f : feeds)
      for (int p = 0; p < 2; ++p)
        if (f.owned[p])
          f.device->release(f.slot[p]);
    ctx.override.clear();
    ctx.skip.clear();
  };
  for (Feed &f : feeds)
    for (int p = 0; p < 2; ++p) {
      if (f.slot[p])
        continue;
      // Slots of their own: an activation's arena bytes are other buffers'
      // at other times of the step.
      size_t bytes = m.plan.buffers[f.buffer].bytes;
      f.slot[p] = f.device->allocate(bytes);
      f.owned[p] = f.slot[p] != nullptr;
      if (!f.slot[p]) {
        cleanup();
        return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                          "out of memory for the batch buffers of input '%s' "
                          "on %s (%zu bytes)",
                          m.inputs[f.input].name, f.device->name().c_str(),
                          bytes);
      }
    }

  std::vector<const void *> batch(m.inputs.size());
  /// Asks for step `i`'s batch and copies it into slot i % 2.
  auto fetch = [&](uint64_t i, locus_run_stats_t &stats) -> locus_status_t {
    std::fill(batch.begin(), batch.end(), nullptr);
    if (locus_status_t s = next(user, i, batch.data()))
      return s;
    for (size_t j = 0; j < batch.size(); ++j)
      if (!batch[j] && m.inputs[j].byte_size)
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "step %llu: no data for input '%s'",
                          static_cast<unsigned long long>(i), m.inputs[j].name);
    for (Feed &f : feeds) {
      size_t bytes = m.plan.buffers[f.buffer].bytes;
      if (locus_status_t s =
              f.device->prefetch(batch[f.input], f.slot[i % 2], bytes))
        return s;
      if (f.buffer != m.inputBuffers[f.input]) {
        ++stats.copies;
        stats.copy_bytes += bytes;
      } else {
        stats.input_bytes += bytes;
      }
    }
    return nullptr;
  };

  ctx.override.assign(m.plan.buffers.size(), nullptr);
  ctx.skip = skip;
  locus_status_t status = nullptr;
  locus_run_stats_t ahead{};
  if (steps)
    status = fetch(0, ahead);
  for (uint64_t i = 0; i < steps && !status; ++i) {
    for (Feed &f : feeds)
      ctx.override[f.buffer] = f.slot[i % 2];
    locus_run_stats_t stats = ahead;
    ahead = {};
    locus_status_t fetched = nullptr;
    {
      StepLock lock(m);
      ++ctx.runs;
      status = execute(m, ctx, m.plan.step, stats);
      // The next batch while this step runs on its devices. If it fails,
      // this step still finishes and is reported; the loop stops after it.
      if (!status && i + 1 < steps)
        fetched = fetch(i + 1, ahead);
      for (const auto &device : m.devices)
        if (locus_status_t s = device->finish(); s && !status)
          status = s;
        else if (s)
          locus_status_free(s);
    }
    ctx.stats = stats;
    if (!status && done)
      status = done(user, i, context);
    if (status)
      locus_status_free(fetched);
    else
      status = fetched;
  }
  cleanup();
  return status;
}

} // extern "C"
