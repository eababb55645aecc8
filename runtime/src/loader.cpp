// loader.cpp - loading a model: its plan, its kernels (from an artifact's
// host code or a JIT's resolver), this machine's devices for the plan's,
// its state and constants, its load-time copies, its interface and report.

#include "model.h"

#include "devices/cpu/host_device.h"
#include "devices/cuda/cuda_device.h"
#include "devices/sim/sim_device.h"
#include "status_impl.h"

#include "locus/abi.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

namespace locus::rt {

namespace {

/// N of "cuda:N"; -1 for anything else (the one parser of locus/abi.h).
int cudaOrdinal(const std::string &name) {
  return locus_abi_cuda_ordinal(name.data(), name.size());
}

using DeviceMap = std::map<std::string, std::string>;

/// Parses "cuda:0=sim,cuda:1=cpu" into artifact device -> target.
locus_status_t parseDeviceMap(const char *text, DeviceMap &out) {
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

/// The device map of the options, every device it names one of the plan's.
locus_status_t readDeviceMap(const Plan &plan,
                             const locus_model_options_t *opts,
                             DeviceMap &map) {
  if (locus_status_t s = parseDeviceMap(opts ? opts->device_map : nullptr, map))
    return s;
  std::string names;
  for (const PlanDevice &d : plan.devices)
    names += (names.empty() ? "" : ", ") + d.name;
  for (const auto &[from, to] : map) {
    bool known = false;
    for (const PlanDevice &d : plan.devices)
      known |= d.name == from;
    if (!known)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "device map names %s, which the artifact does not use "
                        "(it uses %s)",
                        from.c_str(), names.c_str());
  }
  return nullptr;
}

/// What placing the plan's devices needs besides the model.
struct Placement {
  DeviceMap map;
  std::string codeNote; // how the host code came, for the cpu's report line
  const void *ptx;      // the PTX section, or null
  size_t ptxSize;
  bool graphs;                             // CUDA graphs allowed
  std::map<std::string, Device *> targets; // made so far, by target
};

/// Whether every kernel of plan device `device` has a launcher (CUDA code).
/// A device with no kernels (one that only holds buffers and copies) needs
/// none, and runs on the GPU like any other.
bool hasCudaCode(const locus_model_t &m, const Placement &p, uint32_t device) {
  bool any = false;
  for (size_t i = 0; i < m.plan.kernels.size(); ++i) {
    if (m.plan.kernels[i].device != device)
      continue;
    if (!m.launchers[i])
      return false;
    any = true;
  }
  return !any || (p.ptx && p.ptxSize);
}

/// "; all-reduces through NCCL 2.28.9 (<path>)" (or "through host memory
/// and the communicator (no NCCL (<why>))") where the plan all-reduces
/// buffers of device `index`, "" where it does not.
std::string allReducePath(const locus_model_t &m, uint32_t index) {
  for (const PlanCommand &c : m.plan.step)
    if (c.op == LOCUS_PLAN_ALL_REDUCE && c.device == index)
      return "; all-reduces through " +
             (ncclAvailable()
                  ? ncclPath()
                  : "host memory and the communicator (" + ncclPath() + ")");
  return "";
}

/// The target plan device `index` runs on here, and why.
locus_status_t chooseTarget(const locus_model_t &m, const Placement &p,
                            uint32_t index, std::string &target,
                            std::string &why) {
  const PlanDevice &d = m.plan.devices[index];
  target = d.kind == LOCUS_DEVICE_CPU ? "cpu" : "sim";
  if (auto it = p.map.find(d.name); it != p.map.end()) {
    target = it->second;
    why = "by the device map";
    if (cudaOrdinal(target) >= 0 && !hasCudaCode(m, p, index))
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "the device map sends %s to %s, but the artifact "
                        "has no CUDA code for its kernels",
                        d.name.c_str(), target.c_str());
  } else if (d.kind == LOCUS_DEVICE_CUDA) {
    std::string absent;
    if (!hasCudaCode(m, p, index))
      absent = "the artifact has no CUDA code for its kernels";
    else if (cudaUsable(int(d.index), absent))
      target = d.name;
    why = target == d.name ? "PTX kernels and cuBLAS through the driver; "
                             "convolutions through " +
                                 convolutionPath() + allReducePath(m, index)
                           : "host versions of its kernels: " + absent;
  } else {
    why = p.codeNote;
  }
  return nullptr;
}

/// The device object for `target`, made on first use (one per target).
locus_status_t deviceFor(locus_model_t &m, Placement &p,
                         const std::string &target, Device *&out) {
  Device *&device = p.targets[target];
  if (!device) {
    std::unique_ptr<Device> made;
    if (int ordinal = cudaOrdinal(target); ordinal >= 0) {
      locus_status_t status = nullptr;
      made = makeCudaDevice(ordinal, p.ptx, p.ptxSize, p.graphs, status);
      if (status)
        return status;
    } else if (target == "sim") {
      made = makeSimDevice(p.graphs);
    } else {
      made = makeDevice(target);
    }
    if (!made)
      return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
    device = made.get();
    m.devices.push_back(std::move(made));
  }
  out = device;
  return nullptr;
}

/// "cuda:0 -> sim (why); 2 kernels".
void reportDevice(locus_model_t &m, uint32_t index, const std::string &target,
                  const std::string &why) {
  size_t kernels = 0;
  for (const PlanKernel &k : m.plan.kernels)
    kernels += k.device == index;
  m.report += m.plan.devices[index].name + " -> " + target + " (" + why +
              "); " + std::to_string(kernels) +
              (kernels == 1 ? " kernel\n" : " kernels\n");
}

/// This machine's devices for the plan's, and what each kernel runs as: its
/// launcher on a CUDA device, its host version elsewhere.
locus_status_t placeDevices(locus_model_t &m, Placement &p) {
  m.report.clear();
  for (uint32_t index = 0; index < m.plan.devices.size(); ++index) {
    std::string target, why;
    Device *device = nullptr;
    if (locus_status_t s = chooseTarget(m, p, index, target, why))
      return s;
    if (locus_status_t s = deviceFor(m, p, target, device))
      return s;
    m.deviceOf.push_back(device);
    reportDevice(m, index, target, why);
  }
  m.kernels = m.hostKernels;
  for (size_t i = 0; i < m.plan.kernels.size(); ++i)
    if (cudaOrdinal(m.deviceOf[m.plan.kernels[i].device]->name()) >= 0)
      m.kernels[i] = m.launchers[i];
  return nullptr;
}

/// Whether a device's memory is the host's own (cpu; not sim, which
/// stands in for a GPU).
bool hostMemory(const Device *d) {
  return dynamic_cast<const HostDevice *>(d) && !d->simulated();
}

/// A step whose launches all run on one CUDA device is captured as a CUDA
/// graph there, with its copies to and from the host (whose arenas that
/// device pins) but none from persistent host memory.
void findGraphDevice(locus_model_t &m) {
  Device *only = nullptr;
  bool one = true;
  auto join = [&](Device *on) {
    one &= !only || only == on;
    only = on;
  };
  for (const PlanCommand &c : m.plan.step) {
    // A collective is a host call between ranks: no graph holds it.
    one &= c.op != LOCUS_PLAN_ALL_REDUCE;
    if (c.op == LOCUS_PLAN_LAUNCH) {
      join(m.deviceOf[m.plan.kernels[c.kernel].device]);
    } else if (c.op == LOCUS_PLAN_COPY) {
      Device *to = m.deviceOf[m.plan.buffers[c.dst].device];
      Device *from = m.deviceOf[m.plan.buffers[c.src].device];
      if (hostMemory(to) || hostMemory(from)) {
        bool toHost = hostMemory(to);
        uint32_t host = toHost ? c.dst : c.src;
        one &= !m.persistent[host] && !(toHost && hostMemory(from));
        m.graphHostCopies = true;
        join(toHost ? from : to);
      } else {
        one &= from == to;
        join(to);
      }
    }
  }
  if (one && only && only->canCapture())
    m.graphDevice = only;
}

/// A step with index checks (labels, ids) replays in segments: each ends
/// after a command whose checks are read back before the next one runs
/// (whenChecksAreRead), so a bad label stops the step before it writes
/// state, as without a graph.
void findSegments(locus_model_t &m) {
  m.segmentEnds.clear();
  for (size_t k = 0; k < m.checksAfter.size(); ++k)
    if (!m.checksAfter[k].empty())
      m.segmentEnds.push_back(k + 1);
  if (m.segmentEnds.empty() || m.segmentEnds.back() != m.plan.step.size())
    m.segmentEnds.push_back(m.plan.step.size());
}

/// The device that pins the host arenas of a model's contexts: its graph
/// device, else its first GPU (a CUDA device's pinned memory serves every
/// other).
void findPinner(locus_model_t &m) {
  m.pinner = m.graphDevice;
  for (Device *d : m.deviceOf)
    if (!m.pinner && !dynamic_cast<HostDevice *>(d))
      m.pinner = d;
}

/// Whether a step writes state (a training step), and what it counts.
void countStep(locus_model_t &m) {
  for (const PlanCommand &c : m.plan.step)
    if (c.op == LOCUS_PLAN_LAUNCH) {
      for (size_t i = c.args.size() - c.results; i < c.args.size(); ++i)
        m.writesState |= m.plan.buffers[c.args[i]].kind == LOCUS_PLAN_STATE;
      ++m.stepCounts.launches;
      m.stepCounts.sim_launches +=
          m.deviceOf[m.plan.kernels[c.kernel].device]->simulated();
    } else if (c.op == LOCUS_PLAN_COPY) {
      m.writesState |= m.plan.buffers[c.dst].kind == LOCUS_PLAN_STATE;
      ++m.stepCounts.copies;
      m.stepCounts.copy_bytes += m.plan.buffers[c.src].bytes;
    }
}

} // namespace

locus_status_t initChunk(const PlanBuffer &b, size_t first, size_t count,
                         float *out) {
  // Element i of uniform(a, b) is drawn from seed + (i + 1) * golden and
  // element i of normal(m, s) from seed + (2i + 1) and (2i + 2) * golden,
  // so elements from `first` on are the same generator with seed + first
  // (uniform) or 2 * first (normal) times golden.
  uint64_t step = b.initKind == LOCUS_INIT_NORMAL ? 2 : 1;
  return locus_init_fill(static_cast<locus_init_kind_t>(b.initKind), b.initA,
                         b.initB, b.seed + first * step * 0x9E3779B97F4A7C15ull,
                         count, out);
}

namespace {

/// State from its initialiser, made on the host in chunks and uploaded.
locus_status_t initState(Device &device, const PlanBuffer &b, void *p) {
  constexpr size_t kChunk = 1 << 16;
  std::vector<float> staging(std::min<size_t>(kChunk, b.bytes / 4));
  size_t count = b.bytes / 4;
  for (size_t k = 0; k < count; k += kChunk) {
    size_t n = std::min(kChunk, count - k);
    if (locus_status_t s = initChunk(b, k, n, staging.data()))
      return s;
    if (locus_status_t s =
            device.upload(staging.data(), static_cast<float *>(p) + k, n * 4))
      return s;
  }
  return nullptr;
}

/// The persistent buffers no step command writes: what library calls may
/// keep in their own layouts (constants.h).
void findConstants(locus_model_t &m) {
  std::vector<bool> written(m.plan.buffers.size(), false);
  for (const PlanCommand &c : m.plan.step)
    if (c.op == LOCUS_PLAN_LAUNCH) {
      for (size_t i = c.args.size() - c.results; i < c.args.size(); ++i)
        written[c.args[i]] = true;
    } else if (c.op == LOCUS_PLAN_COPY) {
      written[c.dst] = true;
    }
  std::vector<std::pair<uintptr_t, size_t>> ranges;
  for (size_t i = 0; i < m.plan.buffers.size(); ++i)
    if (m.persistent[i] && !written[i])
      ranges.emplace_back(reinterpret_cast<uintptr_t>(m.persistent[i]),
                          m.plan.buffers[i].bytes);
  m.constants.setRanges(std::move(ranges));
}

/// State that no command reads or writes: a plan may name any amount of
/// it in a few bytes, so it is made only when a caller writes it.
void findLazyState(locus_model_t &m) {
  std::vector<bool> used(m.plan.buffers.size(), false);
  for (const auto *commands : {&m.plan.step, &m.plan.load})
    for (const PlanCommand &c : *commands)
      if (c.op == LOCUS_PLAN_LAUNCH || c.op == LOCUS_PLAN_ALL_REDUCE) {
        for (uint32_t b : c.args)
          used[b] = true;
      } else if (c.op == LOCUS_PLAN_COPY) {
        used[c.src] = used[c.dst] = true;
      }
  m.lazyState.assign(m.plan.buffers.size(), false);
  for (size_t i = 0; i < m.plan.buffers.size(); ++i)
    m.lazyState[i] = m.plan.buffers[i].kind == LOCUS_PLAN_STATE && !used[i];
}

/// Persistent buffers: state from its initialiser, constants from the plan.
/// Refuses a plan whose persistent buffers made at load and one context's
/// arenas need more than `maxBytes` (0: no bound), before anything is
/// allocated.
locus_status_t checkLoadBytes(const locus_model_t &m, uint64_t maxBytes) {
  if (!maxBytes)
    return nullptr;
  uint64_t need = 0;
  for (size_t i = 0; i < m.plan.buffers.size(); ++i) {
    const PlanBuffer &b = m.plan.buffers[i];
    if (b.kind != LOCUS_PLAN_ACTIVATION && b.kind != LOCUS_PLAN_INPUT &&
        !m.lazyState[i])
      need += b.bytes; // each below 2^48 (the plan reader): no overflow
  }
  for (uint64_t arena : m.plan.arenaBytes)
    need += arena;
  if (need > maxBytes)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "the model needs %llu bytes at load (state, constants "
                      "and one context's arenas), more than max_bytes %llu",
                      static_cast<unsigned long long>(need),
                      static_cast<unsigned long long>(maxBytes));
  return nullptr;
}

} // namespace

locus_status_t makeBuffer(locus_model_t &m, uint32_t i) {
  const PlanBuffer &b = m.plan.buffers[i];
  Device &device = *m.deviceOf[b.device];
  void *p = device.allocate(b.bytes);
  if (!p)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "out of memory for %zu bytes of %s", size_t(b.bytes),
                      b.name.empty() ? "constants" : b.name.c_str());
  m.persistent[i] = p;
  m.persistentBytes += b.bytes;
  locus_status_t s = nullptr;
  if (b.kind == LOCUS_PLAN_STATE)
    s = initState(device, b, p);
  else if (b.kind == LOCUS_PLAN_CONSTANT)
    s = device.upload(b.data.data(), p, b.bytes);
  return s;
}

namespace {

locus_status_t makePersistent(locus_model_t &m) {
  m.persistent.assign(m.plan.buffers.size(), nullptr);
  for (size_t i = 0; i < m.plan.buffers.size(); ++i) {
    const PlanBuffer &b = m.plan.buffers[i];
    if (b.kind == LOCUS_PLAN_ACTIVATION || b.kind == LOCUS_PLAN_INPUT ||
        m.lazyState[i])
      continue;
    if (locus_status_t s = makeBuffer(m, static_cast<uint32_t>(i)))
      return s;
  }
  return nullptr;
}

/// Whether step command `c` writes state (a launch's result or a copy's
/// destination) or joins the other ranks (an all-reduce).
bool writesStateOrJoins(const locus_model_t &m, const PlanCommand &c) {
  if (c.op == LOCUS_PLAN_ALL_REDUCE)
    return true;
  if (c.op == LOCUS_PLAN_COPY)
    return m.plan.buffers[c.dst].kind == LOCUS_PLAN_STATE;
  if (c.op != LOCUS_PLAN_LAUNCH)
    return false;
  for (size_t i = c.args.size() - c.results; i < c.args.size(); ++i)
    if (m.plan.buffers[c.args[i]].kind == LOCUS_PLAN_STATE)
      return true;
  return false;
}

/// By step command, the checks read right after it. A check is read before
/// the first command after it that writes state or joins the other ranks,
/// else at the end of the step: a bad label then stops a training step
/// before its updates, and the commands in between (which never read out of
/// bounds, docs/passes.md) run on without a read-back. Replayed as a CUDA
/// graph, the step is cut only where checks are read: an inference step
/// stays one graph, a training step two (before its first update).
std::vector<std::vector<uint32_t>>
whenChecksAreRead(const locus_model_t &m,
                  const std::map<uint32_t, std::vector<uint32_t>> &checksOf) {
  std::vector<std::vector<uint32_t>> after(m.plan.step.size());
  std::vector<uint32_t> pending;
  for (size_t k = 0; k < m.plan.step.size() && !checksOf.empty(); ++k) {
    const PlanCommand &c = m.plan.step[k];
    if (!pending.empty() && writesStateOrJoins(m, c)) {
      after[k - 1] = std::move(pending);
      pending.clear();
    }
    if (c.op != LOCUS_PLAN_LAUNCH)
      continue;
    for (size_t i = c.args.size() - c.results; i < c.args.size(); ++i)
      if (auto it = checksOf.find(c.args[i]); it != checksOf.end())
        pending.insert(pending.end(), it->second.begin(), it->second.end());
  }
  if (!pending.empty())
    after.back() = std::move(pending);
  return after;
}

/// The interface, in the plan's order.
void makeInterface(locus_model_t &m) {
  for (uint32_t i = 0; i < m.plan.buffers.size(); ++i) {
    const PlanBuffer &b = m.plan.buffers[i];
    if (b.kind == LOCUS_PLAN_INPUT && i == m.plan.sizesBuffer)
      continue; // the runtime fills it
    if (b.kind == LOCUS_PLAN_INPUT) {
      m.inputs.push_back(infoOf(m.plan, i, b.name));
      m.inputBuffers.push_back(i);
    } else if (b.kind == LOCUS_PLAN_STATE) {
      m.states.push_back(infoOf(m.plan, i, b.name));
      m.stateBuffers.push_back(i);
    }
  }
  std::map<uint32_t, std::vector<uint32_t>> checksOf; // by buffer
  for (const PlanOutput &o : m.plan.outputs) {
    const std::string prefix = LOCUS_ABI_CHECK_PREFIX;
    size_t colon = o.name.find(':', prefix.size()),
           bar = o.name.find('|', prefix.size());
    const PlanBuffer &b = m.plan.buffers[o.buffer];
    if (o.name.rfind(prefix, 0) == 0 && colon < bar &&
        bar != std::string::npos && b.dtype == LOCUS_PLAN_F32 &&
        b.bytes == sizeof(float)) {
      checksOf[o.buffer].push_back(static_cast<uint32_t>(m.checks.size()));
      m.checks.push_back({o.buffer, o.name.substr(colon + 1, bar - colon - 1),
                          o.name.substr(bar + 1)});
      continue;
    }
    m.outputs.push_back(infoOf(m.plan, o.buffer, o.name));
    m.outputBuffers.push_back(o.buffer);
  }
  m.checksAfter = whenChecksAreRead(m, checksOf);
}

/// Runs load-time commands in a context of their own (no arenas: they
/// touch persistent buffers only), and waits for them.
locus_status_t runLoadCommands(locus_model_t &m,
                               const std::vector<PlanCommand> &commands,
                               locus_run_stats_t &stats) {
  locus_context_s loader{};
  loader.model = &m;
  loader.recorded.assign(m.plan.events, false);
  loader.arenas.assign(m.plan.devices.size(), nullptr);
  if (locus_status_t s = execute(m, loader, commands, stats))
    return s;
  return finishDevices(m);
}

/// Load-time commands: state and constants go to their device once, and
/// kernels of them alone make their persistent results.
locus_status_t runLoadCopies(locus_model_t &m) {
  return runLoadCommands(m, m.plan.load, m.loadStats);
}

/// The report's last lines: what a step and the load copy, graphs.
void finishReport(locus_model_t &m) {
  size_t copies = 0, launches = 0;
  uint64_t bytes = 0;
  for (const PlanCommand &c : m.plan.step)
    if (c.op == LOCUS_PLAN_COPY) {
      ++copies;
      bytes += m.plan.buffers[c.src].bytes;
    } else if (c.op == LOCUS_PLAN_LAUNCH) {
      ++launches;
    }
  m.report += "per step: " + std::to_string(launches) + " kernel launches, " +
              std::to_string(copies) + " copies (" + std::to_string(bytes) +
              " bytes); at load: " + std::to_string(m.loadStats.copies) +
              " copies (" + std::to_string(m.loadStats.copy_bytes) + " bytes)" +
              (m.loadStats.launches
                   ? ", " + std::to_string(m.loadStats.launches) +
                         " kernel launches (of constants and state no step "
                         "writes)"
                   : std::string()) +
              "\n";
  m.report += std::string("host matrix products: ") + locus_blas_name() + "\n";
  // Convolutions: said (and oneDNN loaded, about 2 ms) only for a model
  // whose host kernels run one, as their sources say.
  for (size_t k = 0; k < m.plan.kernels.size(); ++k)
    if (m.plan.kernels[k].symbol.rfind(LOCUS_ABI_KERNEL_PREFIX, 0) == 0 &&
        k < m.kernelSources.size() && m.kernelSources[k].has("locus.conv2d")) {
      m.report += std::string("host convolutions: ") + locus_conv_name() + "\n";
      break;
    }
  // After the libraries above: whether they brought libgomp decides.
  m.report +=
      "host parallel loops: " + std::to_string(locus_parallel_threads()) +
      " threads, " + locus_parallel_name() + "\n";
  if (m.graphDevice)
    m.report +=
        "steps replay as a CUDA graph on " + m.graphDevice->name() +
        " from the second run" +
        (m.segmentEnds.size() > 1
             ? " in " + std::to_string(m.segmentEnds.size()) + " parts (its " +
                   std::to_string(m.checks.size()) +
                   " index check(s) are read back between them)"
         : m.checks.empty() ? std::string()
                            : " (its " + std::to_string(m.checks.size()) +
                                  " index check(s) are read back after it)") +
        " (LOCUS_CUDA_GRAPHS=0 turns it off)\n";
  if (m.trace.on())
    m.report += "tracing every launch and copy to " + m.trace.path() +
                " (written when the model is released; no CUDA graphs "
                "while tracing)\n";
}

/// Everything after the plan and the kernels are in place, phase by phase.
locus_status_t finishLoad(locus_model_t &m, const locus_model_options_t *opts,
                          const std::string &codeNote, const void *ptx,
                          size_t ptxSize) {
  Placement p{{}, codeNote, ptx, ptxSize, true, {}};
  if (locus_status_t s = readDeviceMap(m.plan, opts, p.map))
    return s;
  m.profiler.start(m.plan.kernels.size());
  m.trace.start(opts ? opts->trace_path : nullptr);
  // A replayed graph shows no launches to time.
  p.graphs =
      !(opts && opts->disable_cuda_graphs) && !m.profiler.on() && !m.trace.on();
  if (const char *env = std::getenv("LOCUS_CUDA_GRAPHS"); env && *env == '0')
    p.graphs = false;
  if (locus_status_t s = placeDevices(m, p))
    return s;
  countStep(m);
  findReduceWaits(m);
  findLazyState(m);
  m.maxBytes = opts ? opts->max_bytes : 0;
  if (locus_status_t s = checkLoadBytes(m, m.maxBytes))
    return s;
  if (locus_status_t s = makePersistent(m))
    return s;
  findConstants(m);
  makeInterface(m);
  findGraphDevice(m);
  findPinner(m);
  findSegments(m);
  if (locus_status_t s = runLoadCopies(m))
    return s;
  finishReport(m);
  return nullptr;
}

/// Another symbol of the kernel whose host entry is `symbol`:
/// LOCUS_ABI_KERNEL_PREFIX<f> -> `prefix`<f>; "" for others.
std::string kernelSymbol(const std::string &symbol, const char *prefix) {
  const std::string entry = LOCUS_ABI_KERNEL_PREFIX;
  if (symbol.rfind(entry, 0) != 0)
    return "";
  return prefix + symbol.substr(entry.size());
}

/// Its CUDA launcher (LOCUS_ABI_CUDA_PREFIX<f>).
std::string launcherName(const std::string &symbol) {
  return kernelSymbol(symbol, LOCUS_ABI_CUDA_PREFIX);
}

/// The kernels of the plan, and their launchers, from the host code.
locus_status_t bindKernels(locus_model_t &m) {
  for (const PlanKernel &k : m.plan.kernels) {
    if (!m.code->symbol(k.symbol.c_str()))
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the host code has no kernel %s", k.symbol.c_str());
    // Only a function of the host code is run as a kernel: calling a data
    // symbol, or a library's function the plan names, would crash or worse.
    void *fn = m.code->function(k.symbol.c_str());
    if (!fn)
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the plan names %s as a kernel, which is no function "
                        "of the host code",
                        k.symbol.c_str());
    m.hostKernels.push_back(reinterpret_cast<KernelFn>(fn));
    m.launchers.push_back(reinterpret_cast<KernelFn>(
        m.code->function(launcherName(k.symbol).c_str())));
  }
  return nullptr;
}

/// Its signature (LOCUS_ABI_SIGNATURE_PREFIX<f>).
std::string signatureName(const std::string &symbol) {
  return kernelSymbol(symbol, LOCUS_ABI_SIGNATURE_PREFIX);
}

/// Checks every launch of the plan against its kernel's signature (null
/// where there is none to check): the buffers the code takes and each
/// one's bytes. A kernel given fewer or smaller buffers than it was
/// compiled for would read and write past them.
locus_status_t checkLaunches(const Plan &plan,
                             const std::vector<const uint64_t *> &signatures) {
  for (const std::vector<PlanCommand> *list : {&plan.load, &plan.step})
    for (const PlanCommand &c : *list) {
      if (c.op != LOCUS_PLAN_LAUNCH || !signatures[c.kernel])
        continue;
      const uint64_t *sig = signatures[c.kernel];
      const char *name = plan.kernels[c.kernel].symbol.c_str();
      if (c.args.size() != sig[0])
        return makeStatus(LOCUS_STATUS_DATA_LOSS,
                          "the plan launches %s with %zu buffers; its code "
                          "takes %llu",
                          name, c.args.size(),
                          static_cast<unsigned long long>(sig[0]));
      for (size_t i = 0; i < c.args.size(); ++i)
        if (plan.buffers[c.args[i]].bytes != sig[1 + i])
          return makeStatus(
              LOCUS_STATUS_DATA_LOSS,
              "the plan gives %s buffer %u of %llu bytes as its argument "
              "%zu; its code takes %llu bytes there",
              name, c.args[i],
              static_cast<unsigned long long>(plan.buffers[c.args[i]].bytes), i,
              static_cast<unsigned long long>(sig[1 + i]));
    }
  return nullptr;
}

/// The signatures of the host code's kernels, which an artifact must have;
/// then every launch checked against them.
locus_status_t checkSignatures(const locus_model_t &m) {
  std::vector<const uint64_t *> signatures;
  signatures.reserve(m.plan.kernels.size());
  for (const PlanKernel &k : m.plan.kernels) {
    std::string name = signatureName(k.symbol);
    size_t size = 0;
    const auto *sig = static_cast<const uint64_t *>(
        name.empty() ? nullptr : m.code->object(name.c_str(), size));
    if (!sig || reinterpret_cast<uintptr_t>(sig) % alignof(uint64_t) ||
        size < sizeof(uint64_t) || sig[0] > LOCUS_ABI_MAX_KERNEL_ARGS ||
        size != (1 + sig[0]) * sizeof(uint64_t))
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the host code has no valid signature for kernel %s",
                        k.symbol.c_str());
    signatures.push_back(sig);
  }
  return checkLaunches(m.plan, signatures);
}

/// Each kernel's source (LOCUS_ABI_SOURCE_PREFIX<f>) as `read` finds it by
/// symbol name, read by parseKernelSource (none where there is none).
template <typename Read> void readSources(locus_model_t &m, Read read) {
  m.kernelSources.reserve(m.plan.kernels.size());
  for (const PlanKernel &k : m.plan.kernels) {
    std::string name = kernelSymbol(k.symbol, LOCUS_ABI_SOURCE_PREFIX);
    std::string text = name.empty() ? std::string() : read(name);
    m.kernelSources.push_back(parseKernelSource(text));
  }
}

/// The artifact's PTX section; null and 0 when it has none.
locus_status_t ptxSection(locus_artifact_t *artifact, const void *&ptx,
                          size_t &size) {
  locus_status_t s =
      locus_artifact_section(artifact, LOCUS_SECTION_PTX, &ptx, &size);
  if (!s || locus_status_code(s) != LOCUS_STATUS_NOT_FOUND)
    return s;
  locus_status_free(s);
  ptx = nullptr;
  size = 0;
  return nullptr;
}

/// The state values an artifact carries (a trained model's), over what
/// the initialisers made. Each must name a state of the plan.
locus_status_t loadStateSection(locus_artifact_t *artifact, locus_model_t &m) {
  const void *data = nullptr;
  size_t size = 0;
  locus_status_t s =
      locus_artifact_section(artifact, LOCUS_SECTION_STATE, &data, &size);
  if (s) {
    bool absent = locus_status_code(s) == LOCUS_STATUS_NOT_FOUND;
    if (absent)
      locus_status_free(s);
    return absent ? nullptr : s;
  }
  StateLoadRules rules;
  rules.allowMissing = true;
  size_t loaded = 0;
  s = loadState(m, data, size, "the artifact's state section", rules, loaded);
  if (!s)
    return nullptr;
  locus_status_t corrupt = makeStatus(
      LOCUS_STATUS_DATA_LOSS, "corrupt artifact: %s", locus_status_message(s));
  locus_status_free(s);
  return corrupt;
}

} // namespace

locus_status_t rerunLoadCommands(locus_model_t &m, uint32_t written) {
  std::vector<bool> stale(m.plan.buffers.size(), false);
  stale[written] = true;
  std::vector<PlanCommand> again;
  for (const PlanCommand &c : m.plan.load) {
    bool launch = c.op == LOCUS_PLAN_LAUNCH;
    if (!launch && c.op != LOCUS_PLAN_COPY)
      continue;
    size_t reads = launch ? c.args.size() - c.results : 1;
    bool reads_stale = false;
    for (size_t i = 0; i < reads; ++i)
      reads_stale |= stale[launch ? c.args[i] : c.src];
    if (!reads_stale)
      continue;
    for (size_t i = reads; i < (launch ? c.args.size() : reads); ++i)
      stale[c.args[i]] = true;
    if (!launch)
      stale[c.dst] = true;
    again.push_back(c);
  }
  if (again.empty())
    return nullptr;
  for (uint32_t b = 0; b < stale.size(); ++b)
    if (stale[b] && b != written && m.persistent[b])
      m.constants.drop(m.persistent[b], m.plan.buffers[b].bytes);
  locus_run_stats_t stats{};
  return runLoadCommands(m, again, stats);
}

locus_status_t loadModel(locus_artifact_t *artifact,
                         const locus_model_options_t *options,
                         locus_model_t **out_model) {
  const void *plan = nullptr, *code = nullptr, *ptx = nullptr;
  size_t planSize = 0, codeSize = 0, ptxSize = 0;
  if (locus_status_t s = locus_artifact_section(artifact, LOCUS_SECTION_PLAN,
                                                &plan, &planSize))
    return s;
  if (locus_status_t s = locus_artifact_section(
          artifact, LOCUS_SECTION_HOST_CODE, &code, &codeSize))
    return s;
  auto model = std::make_unique<locus_model_t>();
  if (locus_status_t s = readPlan(plan, planSize, model->plan))
    return s;
  std::string note;
  if (locus_status_t s = HostCode::load(code, codeSize, model->plan.imports,
                                        model->code, note))
    return s;
  if (locus_status_t s = bindKernels(*model))
    return s;
  if (locus_status_t s = checkSignatures(*model))
    return s;
  readSources(*model, [&](const std::string &name) -> std::string {
    size_t size = 0;
    const auto *text =
        static_cast<const char *>(model->code->object(name.c_str(), size));
    size_t length =
        text ? strnlen(text, std::min<size_t>(size, LOCUS_ABI_MAX_SOURCE_BYTES))
             : size;
    // Only a string that ends inside its object, as the compiler makes it.
    return text && length < size ? std::string(text, length) : "";
  });
  if (locus_status_t s = ptxSection(artifact, ptx, ptxSize))
    return s;
  if (locus_status_t s = finishLoad(*model, options, note, ptx, ptxSize))
    return s;
  if (locus_status_t s = loadStateSection(artifact, *model))
    return s;
  model->loaded = true;
  *out_model = model.release();
  return nullptr;
}

locus_status_t createModelFromPlan(const void *plan, size_t planSize,
                                   const void *ptx, size_t ptxSize,
                                   locus_symbol_resolver_t resolve,
                                   void *userData,
                                   const locus_model_options_t *options,
                                   locus_model_t **out_model) {
  auto model = std::make_unique<locus_model_t>();
  if (locus_status_t s = readPlan(plan, planSize, model->plan))
    return s;
  // The caller's own compiled code: a signature is checked when the
  // resolver has one.
  std::vector<const uint64_t *> signatures;
  signatures.reserve(model->plan.kernels.size());
  for (const PlanKernel &k : model->plan.kernels) {
    std::string sig = signatureName(k.symbol);
    signatures.push_back(static_cast<const uint64_t *>(
        sig.empty() ? nullptr : resolve(userData, sig.c_str())));
    void *fn = resolve(userData, k.symbol.c_str());
    if (!fn)
      return makeStatus(LOCUS_STATUS_NOT_FOUND, "no kernel %s",
                        k.symbol.c_str());
    model->hostKernels.push_back(reinterpret_cast<KernelFn>(fn));
    std::string launcher = launcherName(k.symbol);
    model->launchers.push_back(reinterpret_cast<KernelFn>(
        launcher.empty() ? nullptr : resolve(userData, launcher.c_str())));
  }
  if (locus_status_t s = checkLaunches(model->plan, signatures))
    return s;
  readSources(*model, [&](const std::string &name) -> std::string {
    const auto *text =
        static_cast<const char *>(resolve(userData, name.c_str()));
    return text ? std::string(text, strnlen(text, LOCUS_ABI_MAX_SOURCE_BYTES))
                : "";
  });
  if (locus_status_t s =
          finishLoad(*model, options, "JIT-compiled host code", ptx, ptxSize))
    return s;
  model->loaded = true;
  *out_model = model.release();
  return nullptr;
}

} // namespace locus::rt
