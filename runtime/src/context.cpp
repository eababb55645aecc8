// context.cpp - a context: one run's arenas (one per device), its inputs,
// its runs and its outputs.

#include "model.h"

#include "devices/cpu/host_device.h"

#include "status_impl.h"

#include <memory>

namespace locus::rt {

namespace {

/// The arena of plan device `d`: host memory in pages of its own, pinned
/// by the model's pinner where it has one (copies to and from the GPU then
/// run at link speed, and a CUDA graph may hold them).
void *makeArena(locus_model_t &m, locus_context_t &ctx, size_t d) {
  uint64_t bytes = m.plan.arenaBytes[d];
  auto *host = dynamic_cast<HostDevice *>(m.deviceOf[d]);
  if (!m.pinner || !host || host->simulated())
    return m.deviceOf[d]->allocate(bytes);
  void *arena = host->allocatePages(bytes);
  ctx.pinned[d] =
      arena && m.pinner->pinHost(arena, HostDevice::pageBytes(bytes));
  ctx.hostPinned = ctx.hostPinned && ctx.pinned[d];
  return arena;
}

void releaseArena(locus_model_t &m, locus_context_t &ctx, size_t d) {
  if (d < ctx.pinned.size() && ctx.pinned[d])
    m.pinner->unpinHost(ctx.arenas[d]);
  m.deviceOf[d]->release(ctx.arenas[d]);
}

/// An arena per plan device; on failure the ones made are released.
locus_status_t makeArenas(locus_model_t &m, locus_context_t &ctx) {
  ctx.pinned.assign(m.plan.devices.size(), false);
  ctx.arenas.assign(m.plan.devices.size(), nullptr);
  for (size_t d = 0; d < m.plan.devices.size(); ++d) {
    ctx.arenas[d] = makeArena(m, ctx, d);
    if (ctx.arenas[d])
      continue;
    for (size_t e = 0; e < d; ++e)
      releaseArena(m, ctx, e);
    ctx.arenas.clear();
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "out of memory for a %llu-byte arena on %s",
                      static_cast<unsigned long long>(m.plan.arenaBytes[d]),
                      m.plan.devices[d].name.c_str());
  }
  return nullptr;
}

/// The context's arenas and graph go back to their devices.
struct ContextDeleter {
  void operator()(locus_context_t *ctx) const { releaseContext(ctx); }
};

} // namespace

locus_status_t createContext(locus_model_t &m, locus_context_t **out) {
  auto ctx =
      std::unique_ptr<locus_context_t, ContextDeleter>(new locus_context_t);
  ctx->model = &m;
  ctx->id = ++m.contextsMade;
  ctx->inputSet.assign(m.inputs.size(), false);
  ctx->inputFromView.assign(m.inputs.size(), false);
  ctx->inputViews.resize(m.inputs.size());
  ctx->outputViews.resize(m.outputs.size());
  ctx->recorded.assign(m.plan.events, false);
  {
    // Not inside another context's capture (StepLock). On failure the
    // lock goes before `ctx`, whose release takes it again.
    std::shared_lock lock(m.stateMutex);
    if (locus_status_t s = makeArenas(m, *ctx))
      return s;
  }
  *out = ctx.release();
  return nullptr;
}

void releaseContext(locus_context_t *ctx) noexcept {
  if (!ctx)
    return;
  locus_model_t &m = *ctx->model;
  std::shared_lock lock(m.stateMutex); // not inside another's capture
  for (void *graph : ctx->graphs)
    m.graphDevice->releaseGraph(graph);
  // Releasing: the arenas go whether or not the devices finish cleanly.
  try {
    if (!ctx->arenas.empty())
      for (const auto &device : m.devices)
        locus_status_free(device->finish());
  } catch (...) { // NOLINT(bugprone-empty-catch): the arenas go regardless
  }
  releaseViews(*ctx);
  for (size_t d = 0; d < ctx->arenas.size(); ++d)
    releaseArena(m, *ctx, d);
  delete ctx;
}

locus_status_t setInput(locus_context_t &ctx, const char *name,
                        const void *data, size_t bytes) {
  locus_model_t &m = *ctx.model;
  size_t i = 0;
  if (locus_status_t s = lookup(m, LOCUS_TENSOR_INPUT, name, bytes, i))
    return s;
  std::shared_lock lock(m.stateMutex); // not inside another's capture
  uint32_t buffer = m.inputBuffers[i];
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->upload(
          data, bufferPointer(m, ctx, buffer), bytes))
    return s;
  ctx.inputSet[i] = true;
  ctx.inputFromView[i] = false; // this copy, not the view, is the input
  ctx.stats.input_bytes += bytes;
  return nullptr;
}

locus_status_t runContext(locus_context_t &ctx) {
  locus_model_t &m = *ctx.model;
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (!ctx.inputSet[i])
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "input '%s' (%s %s) was not set", m.inputs[i].name,
                        shapeString(m.inputs[i]).c_str(),
                        dtypeName(m.inputs[i].dtype));
  locus_run_stats_t stats{};
  stats.input_bytes = ctx.stats.input_bytes;
  StepLock lock(m, ctx);
  locus_status_t s = uploadInputViews(m, ctx, stats);
  if (!s)
    s = runStep(m, ctx, stats);
  ctx.stats = stats;
  return s;
}

locus_status_t readOutput(locus_context_t &ctx, const char *name, void *out,
                          size_t bytes) {
  locus_model_t &m = *ctx.model;
  size_t i = 0;
  if (locus_status_t s = lookup(m, LOCUS_TENSOR_OUTPUT, name, bytes, i))
    return s;
  std::shared_lock lock(m.stateMutex);
  uint32_t buffer = m.outputBuffers[i];
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->download(
          bufferPointer(m, ctx, buffer), out, bytes))
    return s;
  ctx.stats.output_bytes += bytes;
  return nullptr;
}

} // namespace locus::rt
