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
  ctx->inputDims.resize(m.inputs.size());
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
  for (auto &[sizes, kept] : ctx->otherGraphs)
    for (void *graph : kept.graphs)
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

namespace {

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t d = 0; d < dims.size(); ++d)
    text += (d ? ", " : "") + std::to_string(dims[d]);
  return text + "]";
}

/// `dims` for input `i`: its rank, its static dimensions, and each dynamic
/// one within its size's bound.
locus_status_t checkInputDims(const locus_model_t &m, size_t i,
                              const int64_t *given, size_t rank) {
  const PlanBuffer &b = m.plan.buffers[m.inputBuffers[i]];
  const std::vector<PlanDim> &exprs = m.plan.dims[m.inputBuffers[i]];
  bool ok = rank == b.dims.size();
  for (size_t d = 0; ok && d < rank; ++d) {
    if (given[d] == b.dims[d])
      continue; // the common case: no message, no allocation
    size_t k = 0;
    if (exprs.empty() || !exprs[d].isSize(k)) {
      ok = false;
      continue;
    }
    const PlanSize &size = m.plan.sizes[k];
    if (given[d] < 1 || given[d] > size.bound)
      return makeStatus(
          LOCUS_STATUS_INVALID_ARGUMENT,
          "input '%s' is %s, but its dimension %zu is %s, which runs from 1 "
          "to %lld",
          m.inputs[i].name,
          dimsString(std::vector<int64_t>(given, given + rank)).c_str(), d,
          size.name.c_str(), static_cast<long long>(size.bound));
  }
  if (ok)
    return nullptr;
  std::vector<int64_t> dims(given, given + rank);
  std::string expected = "[";
  for (size_t d = 0; d < b.dims.size(); ++d) {
    size_t k = 0;
    bool dynamic = !exprs.empty() && exprs[d].isSize(k);
    expected += (d ? ", " : "") +
                (dynamic ? m.plan.sizes[k].name +
                               "<=" + std::to_string(m.plan.sizes[k].bound)
                         : std::to_string(b.dims[d]));
  }
  return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                    "input '%s' is %s, but the graph takes %s]",
                    m.inputs[i].name, dimsString(dims).c_str(),
                    expected.c_str());
}

/// The run's sizes, from the dims each dynamic input was set with; an
/// error when two inputs give one size two values.
locus_status_t bindSizes(locus_model_t &m, locus_context_t &ctx) {
  std::vector<int64_t> sizes(m.plan.sizes.size(), 0);
  std::vector<size_t> from(sizes.size(), 0);
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const std::vector<PlanDim> &exprs = m.plan.dims[m.inputBuffers[i]];
    const std::vector<int64_t> &dims =
        ctx.inputDims[i].empty() ? m.plan.buffers[m.inputBuffers[i]].dims
                                 : ctx.inputDims[i];
    for (size_t d = 0; d < exprs.size(); ++d) {
      size_t k = 0;
      if (!exprs[d].isSize(k))
        continue;
      if (sizes[k] != 0 && sizes[k] != dims[d])
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "input '%s' has %s = %lld, but input '%s' has %s "
                          "= %lld",
                          m.inputs[from[k]].name, m.plan.sizes[k].name.c_str(),
                          static_cast<long long>(sizes[k]), m.inputs[i].name,
                          m.plan.sizes[k].name.c_str(),
                          static_cast<long long>(dims[d]));
      sizes[k] = dims[d];
      from[k] = i;
    }
  }
  for (size_t k = 0; k < sizes.size(); ++k)
    if (sizes[k] == 0) // no input has the size: it runs at its bound
      sizes[k] = m.plan.sizes[k].bound;
  uint32_t buffer = m.plan.sizesBuffer;
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->upload(
          sizes.data(), bufferPointer(m, ctx, buffer),
          sizes.size() * sizeof(int64_t)))
    return s;
  ctx.runSizes = std::move(sizes);
  return nullptr;
}

/// How many bytes a dynamic tensor of `dims` holds.
size_t bytesOf(const PlanBuffer &b, const std::vector<int64_t> &dims) {
  size_t n = dtypeSize(b.dtype);
  for (int64_t d : dims)
    n *= static_cast<size_t>(d);
  return n;
}

} // namespace

locus_status_t setInputShaped(locus_context_t &ctx, const char *name,
                              const void *data, size_t bytes, size_t rank,
                              const int64_t *dims) {
  locus_model_t &m = *ctx.model;
  size_t i = 0;
  if (locus_status_t s = find(m, LOCUS_TENSOR_INPUT, name, i))
    return s;
  if (rank > 0 && !dims)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "dims is null");
  if (locus_status_t s = checkInputDims(m, i, dims, rank))
    return s;
  uint32_t buffer = m.inputBuffers[i];
  const PlanBuffer &b = m.plan.buffers[buffer];
  size_t want = dtypeSize(b.dtype);
  bool atBounds = true;
  for (size_t d = 0; d < rank; ++d) {
    want *= static_cast<size_t>(dims[d]);
    atBounds = atBounds && dims[d] == b.dims[d];
  }
  if (bytes != want)
    return makeStatus(
        LOCUS_STATUS_INVALID_ARGUMENT,
        "input '%s' of %s %s holds %zu bytes, not %zu", m.inputs[i].name,
        dimsString(std::vector<int64_t>(dims, dims + rank)).c_str(),
        dtypeName(m.inputs[i].dtype), want, bytes);
  std::shared_lock lock(m.stateMutex); // not inside another's capture
  if (locus_status_t s = m.deviceOf[b.device]->upload(
          data, bufferPointer(m, ctx, buffer), bytes))
    return s;
  if (atBounds)
    ctx.inputDims[i].clear();
  else
    ctx.inputDims[i].assign(dims, dims + rank); // keeps its capacity
  ctx.inputSet[i] = true;
  ctx.inputFromView[i] = false;
  ctx.stats.input_bytes += bytes;
  return nullptr;
}

locus_status_t outputDims(const locus_context_t &ctx, size_t output,
                          std::vector<int64_t> &dims) {
  const locus_model_t &m = *ctx.model;
  uint32_t buffer = m.outputBuffers[output];
  dims = m.plan.buffers[buffer].dims;
  const std::vector<PlanDim> &exprs = m.plan.dims[buffer];
  if (exprs.empty())
    return nullptr;
  if (ctx.runSizes.empty())
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "output '%s' has dynamic dimensions and no run has "
                      "given them sizes yet",
                      m.outputs[output].name);
  for (size_t d = 0; d < dims.size(); ++d)
    dims[d] = exprs[d].at(ctx.runSizes);
  return nullptr;
}

locus_status_t setInput(locus_context_t &ctx, const char *name,
                        const void *data, size_t bytes) {
  locus_model_t &m = *ctx.model;
  size_t i = 0;
  if (m.plan.sizesBuffer != UINT32_MAX) {
    if (locus_status_t s = find(m, LOCUS_TENSOR_INPUT, name, i))
      return s;
  }
  if (m.plan.sizesBuffer != UINT32_MAX &&
      !m.plan.dims[m.inputBuffers[i]].empty()) {
    // A dynamic input by its bytes alone: at its bounds, or with one
    // dynamic dimension, the one its bytes leave.
    const PlanBuffer &b = m.plan.buffers[m.inputBuffers[i]];
    std::vector<int64_t> dims = b.dims;
    size_t dynamicDim = dims.size(), count = 0, k = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      if (m.plan.dims[m.inputBuffers[i]][d].isSize(k)) {
        dynamicDim = d;
        ++count;
      }
    if (bytes != b.bytes && count == 1) {
      size_t rest = bytesOf(b, dims) / static_cast<size_t>(dims[dynamicDim]);
      dims[dynamicDim] =
          rest && bytes % rest == 0 ? static_cast<int64_t>(bytes / rest) : 0;
    }
    return setInputShaped(ctx, name, data, bytes, dims.size(), dims.data());
  }
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
  if (m.plan.sizesBuffer != UINT32_MAX)
    if (locus_status_t s = bindSizes(m, ctx))
      return s;
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
  if (m.plan.sizesBuffer != UINT32_MAX) {
    if (locus_status_t s = find(m, LOCUS_TENSOR_OUTPUT, name, i))
      return s;
  }
  if (m.plan.sizesBuffer != UINT32_MAX &&
      !m.plan.dims[m.outputBuffers[i]].empty()) {
    // A dynamic output: its dims in the last run, packed at the start.
    std::vector<int64_t> dims;
    if (locus_status_t s = outputDims(ctx, i, dims))
      return s;
    const PlanBuffer &b = m.plan.buffers[m.outputBuffers[i]];
    if (bytes != bytesOf(b, dims))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "output '%s' is %s %s in the last run: %zu bytes, "
                        "not %zu",
                        m.outputs[i].name, dimsString(dims).c_str(),
                        dtypeName(m.outputs[i].dtype), bytesOf(b, dims), bytes);
  } else if (locus_status_t s =
                 lookup(m, LOCUS_TENSOR_OUTPUT, name, bytes, i)) {
    return s;
  }
  std::shared_lock lock(m.stateMutex);
  uint32_t buffer = m.outputBuffers[i];
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->download(
          bufferPointer(m, ctx, buffer), out, bytes))
    return s;
  ctx.stats.output_bytes += bytes;
  return nullptr;
}

} // namespace locus::rt
