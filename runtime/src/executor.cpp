// executor.cpp - interpreting a plan's command list on the model's
// devices: launches (every buffer checked against the device), copies,
// events; a step, captured and replayed as a CUDA graph where it can be.

#include "model.h"

#include "status_impl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace locus::rt {

namespace {

/// Whether LOCUS_PROFILE=1 times this command: steps after a context's
/// first, whose time carries module loads, library handles and algorithm
/// choices (warm-up), and never the load-time commands.
bool profiling(const locus_model_t &m, const locus_context_t &ctx) {
  return m.profiler.on() && ctx.step != Trace::kLoad && ctx.step > 1;
}

/// The failure of a kernel that touches memory of another device.
locus_status_t foreignBuffer(const locus_model_t &m, const PlanCommand &c,
                             size_t arg, const Device &device) {
  const PlanKernel &kernel = m.plan.kernels[c.kernel];
  uint32_t index = c.args[arg];
  const PlanBuffer &b = m.plan.buffers[index];
  return makeStatus(
      LOCUS_STATUS_INTERNAL,
      "kernel %s on %s (%s) %s buffer %u, which is on %s (%s): a kernel may "
      "only touch memory of its own device",
      kernel.symbol.c_str(), m.plan.devices[kernel.device].name.c_str(),
      device.name().c_str(),
      arg >= c.args.size() - c.results ? "writes" : "reads", index,
      m.plan.devices[b.device].name.c_str(),
      m.deviceOf[b.device]->name().c_str());
}

/// The launch's buffer array: the context's scratch, or while capturing a
/// copy that lives as long as the graph (a device may keep it).
void *const *buffersOf(locus_context_t &ctx) {
  if (!ctx.capturing)
    return ctx.pointers.data();
  return ctx.graphArgs.emplace_back(ctx.pointers).data();
}

/// A copy of the run's sizes that lives as long as the graph being
/// captured, in its buffer arrays (an i64 per pointer slot).
void *capturedSizes(locus_context_t &ctx) {
  static_assert(sizeof(void *) == sizeof(int64_t));
  std::vector<void *> &copy =
      ctx.graphArgs.emplace_back(ctx.runSizes.size(), nullptr);
  void *bytes = static_cast<void *>(copy.data());
  std::memcpy(bytes, ctx.runSizes.data(),
              ctx.runSizes.size() * sizeof(int64_t));
  return bytes;
}

/// `checked`: this launch's buffers were found on its device in an earlier
/// run of the context, at the same addresses (no batch override).
locus_status_t launch(locus_model_t &m, locus_context_t &ctx,
                      const PlanCommand &c, locus_run_stats_t &stats,
                      bool checked) {
  Device *device = m.deviceOf[m.plan.kernels[c.kernel].device];
  ctx.pointers.resize(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    void *p = bufferPointer(m, ctx, c.args[i]);
    // The run's sizes are host memory on every device: a CUDA launcher
    // reads them on the host to size its launches. A captured launch keeps
    // the sizes of its capture, on every device alike.
    if (c.args[i] == m.plan.sizesBuffer) {
      p = ctx.capturing ? capturedSizes(ctx) : p;
    } else if (!checked && !device->owns(p, m.plan.buffers[c.args[i]].bytes)) {
      return foreignBuffer(m, c, i, *device);
    }
    ctx.pointers[i] = p;
  }
  bool profiled = profiling(m, ctx);
  bool timed = profiled || m.trace.on();
  auto start = timed ? Profiler::Clock::now() : Profiler::Clock::time_point();
  if (profiled) { // the device's own time of the kernel
    uint64_t ns = 0;
    if (locus_status_t s =
            device->launchTimed(m.kernels[c.kernel], ctx.pointers.data(), ns))
      return s;
    m.profiler.kernelTime(c.kernel, ns);
  } else if (locus_status_t s =
                 device->launch(m.kernels[c.kernel], buffersOf(ctx))) {
    return s;
  }
  if (m.trace.on()) {
    uint64_t bytes = 0;
    for (uint32_t b : c.args)
      bytes += m.plan.buffers[b].bytes;
    m.trace.kernel(c.kernel, bytes, ctx.id, ctx.step, start);
  }
  ++stats.launches;
  if (device->simulated())
    ++stats.sim_launches;
  return nullptr;
}

/// The bytes a copy of `buffer` moves: the buffer's, or for a value of
/// dynamic shape its run's elements, which lie packed at its start.
uint64_t copyBytes(const locus_model_t &m, const locus_context_t &ctx,
                   uint32_t buffer) {
  const PlanBuffer &b = m.plan.buffers[buffer];
  if (ctx.runSizes.empty() || buffer >= m.plan.dims.size() ||
      m.plan.dims[buffer].empty())
    return b.bytes;
  uint64_t n = dtypeSize(b.dtype);
  for (const PlanDim &d : m.plan.dims[buffer])
    n *= static_cast<uint64_t>(d.at(ctx.runSizes));
  return std::min(n, b.bytes);
}

locus_status_t copy(locus_model_t &m, locus_context_t &ctx,
                    const PlanCommand &c, locus_run_stats_t &stats) {
  const PlanBuffer &src = m.plan.buffers[c.src];
  const PlanBuffer &dst = m.plan.buffers[c.dst];
  uint64_t bytes = copyBytes(m, ctx, c.src);
  bool profiled = profiling(m, ctx);
  bool timed = profiled || m.trace.on();
  auto start = timed ? Profiler::Clock::now() : Profiler::Clock::time_point();
  if (locus_status_t s = m.deviceOf[dst.device]->copyFrom(
          *m.deviceOf[src.device], bufferPointer(m, ctx, c.src),
          bufferPointer(m, ctx, c.dst), bytes))
    return s;
  // Profiled, a copy is waited for: its time, not the time to issue it.
  if (profiled) {
    if (locus_status_t s = m.deviceOf[dst.device]->finish())
      return s;
    m.profiler.copyDone(start);
  }
  m.trace.copy(src.device, dst.device, bytes, ctx.id, ctx.step, start);
  ++stats.copies;
  stats.copy_bytes += bytes;
  return nullptr;
}

locus_status_t command(locus_model_t &m, locus_context_t &ctx,
                       const PlanCommand &c, locus_run_stats_t &stats,
                       bool checked) {
  switch (c.op) {
  case LOCUS_PLAN_LAUNCH:
    return launch(m, ctx, c, stats, checked);
  case LOCUS_PLAN_COPY:
    return copy(m, ctx, c, stats);
  case LOCUS_PLAN_RECORD:
    // Host and sim devices run in order: an event is done when recorded.
    ctx.recorded[c.event] = true;
    return nullptr;
  case LOCUS_PLAN_WAIT:
    if (!ctx.recorded[c.event])
      return makeStatus(LOCUS_STATUS_INTERNAL,
                        "%s waits for event %u, which was never recorded",
                        m.plan.devices[c.device].name.c_str(), c.event);
    return nullptr;
  default: // the plan reader accepts no other command
    return makeStatus(LOCUS_STATUS_INTERNAL, "unknown plan command %u", c.op);
  }
}

/// Reads the index checks `which` (counts of out-of-range indices, just
/// computed): the first above zero stops the run, in the user's terms.
locus_status_t runChecks(locus_model_t &m, locus_context_t &ctx,
                         const std::vector<uint32_t> &which) {
  for (uint32_t i : which) {
    const locus_model_t::Check &check = m.checks[i];
    float count = 0;
    if (locus_status_t s =
            m.deviceOf[m.plan.buffers[check.buffer].device]->download(
                bufferPointer(m, ctx, check.buffer), &count, sizeof count))
      return s;
    if (count > 0)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "%s: %s (%.0f found)",
                        check.op.c_str(), check.what.c_str(),
                        static_cast<double>(count));
  }
  return nullptr;
}

/// Releases the graphs captured so far (a capture that failed part way).
void dropGraphs(locus_model_t &m, locus_context_t &ctx) {
  for (void *graph : ctx.graphs)
    m.graphDevice->releaseGraph(graph);
  ctx.graphs.clear();
  ctx.graphArgs.clear();
}

/// A capture in progress: ended (its graph dropped) if it is left by an
/// exception, so the device and the context never stay capturing.
class Capturing {
public:
  Capturing(locus_context_t &ctx, Device &device) : ctx(ctx), device(device) {
    ctx.capturing = true;
  }
  ~Capturing() {
    ctx.capturing = false;
    if (!open)
      return;
    void *graph = nullptr;
    locus_status_free(device.endCapture(&graph));
    if (graph)
      device.releaseGraph(graph);
  }
  /// Ends the capture; its graph in `graph`.
  locus_status_t end(void **graph) {
    ctx.capturing = false;
    open = false;
    return device.endCapture(graph);
  }
  Capturing(const Capturing &) = delete;
  Capturing &operator=(const Capturing &) = delete;

private:
  locus_context_t &ctx;
  Device &device;
  bool open = true;
};

/// Captures segment [begin, end) of the step as one graph (nothing runs).
locus_status_t captureSegment(locus_model_t &m, locus_context_t &ctx,
                              size_t begin, size_t end) {
  if (locus_status_t s = m.graphDevice->beginCapture())
    return s;
  Capturing capturing(ctx, *m.graphDevice);
  locus_run_stats_t counted{};
  locus_status_t s = executeRange(m, ctx, m.plan.step, begin, end, counted);
  void *graph = nullptr;
  locus_status_t e = capturing.end(&graph);
  if (s || e) {
    if (s && e)
      locus_status_free(e);
    if (graph)
      m.graphDevice->releaseGraph(graph);
    return s ? s : e;
  }
  ctx.graphs.push_back(graph);
  return nullptr;
}

/// Captures the step on the model's graph device, a graph per segment.
locus_status_t capture(locus_model_t &m, locus_context_t &ctx) {
  std::fill(ctx.recorded.begin(), ctx.recorded.end(), false);
  ctx.graphs.reserve(m.segmentEnds.size()); // no graph lost to a push
  size_t begin = 0;
  try {
    for (size_t end : m.segmentEnds) {
      if (locus_status_t s = captureSegment(m, ctx, begin, end)) {
        dropGraphs(m, ctx);
        return s;
      }
      begin = end;
    }
  } catch (...) { // out of memory: no part of a capture is kept
    dropGraphs(m, ctx);
    throw;
  }
  return nullptr;
}

/// Replays the captured step: each segment, then the index checks its
/// last command computed (waited for by their read).
locus_status_t replay(locus_model_t &m, locus_context_t &ctx) {
  for (size_t i = 0; i < ctx.graphs.size(); ++i) {
    if (locus_status_t s = m.graphDevice->replay(ctx.graphs[i]))
      return s;
    size_t last = m.segmentEnds[i] - 1;
    if (last < m.checksAfter.size())
      if (locus_status_t s = runChecks(m, ctx, m.checksAfter[last]))
        return s;
  }
  return nullptr;
}

} // namespace

void *bufferPointer(const locus_model_t &m, const locus_context_t &ctx,
                    uint32_t index) {
  if (void *p = m.persistent[index])
    return p;
  if (!ctx.override.empty() && ctx.override[index])
    return ctx.override[index];
  const PlanBuffer &b = m.plan.buffers[index];
  return static_cast<char *>(ctx.arenas[b.device]) + b.offset;
}

locus_status_t execute(locus_model_t &m, locus_context_t &ctx,
                       const std::vector<PlanCommand> &commands,
                       locus_run_stats_t &stats) {
  std::fill(ctx.recorded.begin(), ctx.recorded.end(), false);
  locus_status_t s = executeRange(m, ctx, commands, 0, commands.size(), stats);
  if (&commands != &m.plan.step)
    return s;
  // The step's all-reduces end with it, whatever stopped it.
  locus_status_t r = finishAllReduces(m, ctx);
  if (s && r)
    locus_status_free(r);
  return s ? s : r;
}

locus_status_t executeRange(locus_model_t &m, locus_context_t &ctx,
                            const std::vector<PlanCommand> &commands,
                            size_t begin, size_t end,
                            locus_run_stats_t &stats) {
  bool step = &commands == &m.plan.step;
  ctx.step = step ? ctx.runs : Trace::kLoad;
  bool skipping = step && !ctx.skip.empty();
  // A capture reads no checks back: the replay does, between segments.
  bool checking = step && !m.checks.empty() && !ctx.capturing;
  // A step's library calls may keep their own layouts of what it never
  // writes (the load-time commands write persistent buffers), unless
  // LOCUS_PACK_WEIGHTS=0 saves the memory those copies take.
  static const bool packing = [] {
    const char *env = std::getenv("LOCUS_PACK_WEIGHTS");
    return !env || std::string(env) != "0";
  }();
  StepConstants constants(step && packing ? &m.constants : nullptr);
  // A step's buffers lie where they lay in its earlier runs (arenas and
  // persistent buffers stay put) unless a batch overrides some: a launch
  // checked once against its device is not checked again (the check's
  // lock and search were 10% of a 19 us step).
  bool remember = step && ctx.override.empty();
  if (remember)
    ctx.launchChecked.resize(commands.size(), false);
  for (size_t k = begin; k < end; ++k) {
    if (skipping && ctx.skip[k])
      continue;
    if (step)
      for (uint32_t j : m.reduceWaits[k])
        if (locus_status_t s = finishAllReduce(m, ctx, j))
          return s;
    if (commands[k].op == LOCUS_PLAN_ALL_REDUCE) {
      if (locus_status_t s = startAllReduce(m, ctx, k))
        return s;
      continue;
    }
    if (locus_status_t s = command(m, ctx, commands[k], stats,
                                   remember && ctx.launchChecked[k]))
      return s;
    if (remember)
      ctx.launchChecked[k] = true;
    if (checking)
      if (locus_status_t s = runChecks(m, ctx, m.checksAfter[k]))
        return s;
  }
  return nullptr;
}

locus_status_t finishDevices(locus_model_t &m) {
  for (const auto &device : m.devices)
    if (locus_status_t s = device->finish())
      return s;
  return nullptr;
}

namespace {

/// Whether `ctx`'s steps may replay as graphs on the model's graph device.
bool replayable(const locus_model_t &m, const locus_context_t &ctx) {
  return m.graphDevice && ctx.override.empty() &&
         (ctx.hostPinned || !m.graphHostCopies);
}

/// Releases the graphs of the sizes run least recently among those kept
/// aside.
void dropOldestSizes(locus_model_t &m, locus_context_t &ctx) {
  auto oldest = ctx.otherGraphs.begin();
  for (auto it = ctx.otherGraphs.begin(); it != ctx.otherGraphs.end(); ++it)
    if (it->second.lastRun < oldest->second.lastRun)
      oldest = it;
  for (void *graph : oldest->second.graphs)
    m.graphDevice->releaseGraph(graph);
  ctx.otherGraphs.erase(oldest);
}

/// With dynamic sizes: makes `ctx.graphs` those of this run's sizes (none
/// yet where it has not captured them), keeping the others aside, and
/// counts the run at its sizes.
void graphsForSizes(locus_model_t &m, locus_context_t &ctx) {
  if (ctx.runSizes != ctx.graphSizes) {
    if (!ctx.graphSizes.empty()) {
      locus_context_t::SizedGraphs &kept = ctx.otherGraphs[ctx.graphSizes];
      kept.graphs = std::move(ctx.graphs);
      kept.args = std::move(ctx.graphArgs);
      kept.runs = ctx.runsAtSizes;
      kept.lastRun = ctx.runs - 1;
    }
    ctx.graphs.clear();
    ctx.graphArgs.clear();
    ctx.runsAtSizes = 0;
    auto found = ctx.otherGraphs.find(ctx.runSizes);
    if (found != ctx.otherGraphs.end()) {
      ctx.graphs = std::move(found->second.graphs);
      ctx.graphArgs = std::move(found->second.args);
      ctx.runsAtSizes = found->second.runs;
      ctx.otherGraphs.erase(found);
    }
    ctx.graphSizes = ctx.runSizes;
    while (ctx.otherGraphs.size() + 1 > locus_context_t::kSizedGraphs)
      dropOldestSizes(m, ctx);
  }
  ++ctx.runsAtSizes;
}

/// The runs of `ctx` that count towards a capture: all of them, or with
/// dynamic sizes those at this run's sizes.
uint64_t runsForCapture(const locus_context_t &ctx) {
  return ctx.runSizes.empty() ? ctx.runs : ctx.runsAtSizes;
}

/// A step's commands, or its replay as a CUDA graph, then the devices
/// finish.
locus_status_t runCommands(locus_model_t &m, locus_context_t &ctx,
                           locus_run_stats_t &stats) {
  bool canReplay = replayable(m, ctx);
  if (canReplay && !ctx.runSizes.empty())
    graphsForSizes(m, ctx);
  if (canReplay && ctx.graphs.empty() && runsForCapture(ctx) >= 2)
    if (locus_status_t s = capture(m, ctx))
      return s;
  if (canReplay && !ctx.graphs.empty()) {
    if (locus_status_t s = replay(m, ctx))
      return s;
    stats.launches = m.stepCounts.launches;
    stats.sim_launches = m.stepCounts.sim_launches;
    stats.copies = m.stepCounts.copies;
    stats.copy_bytes = m.stepCounts.copy_bytes;
    if (!ctx.runSizes.empty()) { // the run's bytes, as its copies moved
      stats.copy_bytes = 0;
      for (const PlanCommand &c : m.plan.step)
        if (c.op == LOCUS_PLAN_COPY)
          stats.copy_bytes += copyBytes(m, ctx, c.src);
    }
  } else if (locus_status_t s = execute(m, ctx, m.plan.step, stats)) {
    return s;
  }
  return finishDevices(m);
}

} // namespace

bool capturesNextStep(const locus_model_t &m, const locus_context_t &ctx) {
  if (!replayable(m, ctx))
    return false;
  if (ctx.runSizes.empty() || ctx.runSizes == ctx.graphSizes)
    return ctx.graphs.empty() && runsForCapture(ctx) + 1 >= 2;
  // The next run switches to its sizes' graphs, or starts counting them.
  auto found = ctx.otherGraphs.find(ctx.runSizes);
  return found != ctx.otherGraphs.end() && found->second.graphs.empty() &&
         found->second.runs + 1 >= 2;
}

locus_status_t runStep(locus_model_t &m, locus_context_t &ctx,
                       locus_run_stats_t &stats) {
  ++ctx.runs;
  auto begin = m.trace.on() ? Trace::Clock::now() : Trace::Clock::time_point();
  locus_status_t s = runCommands(m, ctx, stats);
  if (!s)
    m.trace.step(ctx.id, ctx.runs, begin);
  return s;
}

} // namespace locus::rt
