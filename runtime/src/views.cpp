// views.cpp - zero-copy inputs and outputs (locus_context_input_view,
// locus_context_output_view): host memory the context owns, written or
// read by the user in place of set_input's and read_output's copies.
//
// A tensor in a host arena is viewed where it is. A tensor on a GPU (or on
// sim, which stands in for one) is viewed through a mirror: page-aligned
// host memory of the context's own, pinned by the model's pinner where it
// has one, so the copy between it and the device is one DMA at link speed
// with no host memcpy (the staged path copies through pinned buffers with a
// memcpy each; on an H100 host that memcpy took 2.4-7.9 ms for 64 MiB where
// the DMA took 1.3).

#include "model.h"

#include "devices/cpu/host_device.h"

#include "status_impl.h"

namespace locus::rt {

namespace {

/// Whether buffer `b` can be viewed where it is: per-run memory (not
/// state, which other contexts share) in a host arena of the plan (not
/// sim's, which stands in for a GPU).
bool viewedInPlace(const locus_model_t &m, const locus_context_t &ctx,
                   uint32_t b) {
  const Device &device = *m.deviceOf[m.plan.buffers[b].device];
  return !m.persistent[b] && (ctx.override.empty() || !ctx.override[b]) &&
         dynamic_cast<const HostDevice *>(&device) && !device.simulated();
}

/// The mirror `v` of a `bytes`-byte tensor, made on first use.
locus_status_t makeMirror(locus_model_t &m, locus_context_t &ctx,
                          locus_context_s::HostView &v, size_t bytes) {
  if (v.data)
    return nullptr;
  if (!ctx.viewMemory)
    ctx.viewMemory = std::make_unique<HostDevice>("host");
  v.data = ctx.viewMemory->allocatePages(bytes);
  if (!v.data)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "out of host memory for a %zu-byte view", bytes);
  v.pinned =
      m.pinner && m.pinner->pinHost(v.data, HostDevice::pageBytes(bytes));
  return nullptr;
}

} // namespace

locus_status_t inputView(locus_context_t &ctx, const char *name, void *&data,
                         size_t &bytes) {
  locus_model_t &m = *ctx.model;
  size_t i = 0;
  if (locus_status_t s = find(m, LOCUS_TENSOR_INPUT, name, i))
    return s;
  bytes = m.inputs[i].byte_size;
  uint32_t buffer = m.inputBuffers[i];
  ctx.inputDims[i].clear(); // a view holds the input at its bounds
  if (viewedInPlace(m, ctx, buffer)) {
    std::shared_lock lock(m.stateMutex); // not inside another's capture
    data = bufferPointer(m, ctx, buffer);
  } else {
    if (locus_status_t s = makeMirror(m, ctx, ctx.inputViews[i], bytes))
      return s;
    data = ctx.inputViews[i].data;
    ctx.inputFromView[i] = true;
  }
  ctx.inputSet[i] = true;
  return nullptr;
}

locus_status_t uploadInputViews(locus_model_t &m, locus_context_t &ctx,
                                locus_run_stats_t &stats) {
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    if (!ctx.inputFromView[i])
      continue;
    uint32_t buffer = m.inputBuffers[i];
    size_t bytes = m.inputs[i].byte_size;
    if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->upload(
            ctx.inputViews[i].data, bufferPointer(m, ctx, buffer), bytes))
      return s;
    stats.input_bytes += bytes;
  }
  return nullptr;
}

locus_status_t outputView(locus_context_t &ctx, const char *name,
                          const void *&data, size_t &bytes) {
  locus_model_t &m = *ctx.model;
  size_t i = 0;
  if (locus_status_t s = find(m, LOCUS_TENSOR_OUTPUT, name, i))
    return s;
  bytes = m.outputs[i].byte_size;
  uint32_t buffer = m.outputBuffers[i];
  if (!m.plan.dims.empty() && !m.plan.dims[buffer].empty()) {
    // A dynamic output: its packed bytes at the last run's dims.
    std::vector<int64_t> dims;
    if (locus_status_t s = outputDims(ctx, i, dims))
      return s;
    bytes = dtypeSize(m.plan.buffers[buffer].dtype);
    for (int64_t d : dims)
      bytes *= static_cast<size_t>(d);
  }
  std::shared_lock lock(m.stateMutex); // not inside another's capture
  if (viewedInPlace(m, ctx, buffer)) {
    data = bufferPointer(m, ctx, buffer);
    return nullptr;
  }
  locus_context_s::HostView &v = ctx.outputViews[i];
  if (locus_status_t s = makeMirror(m, ctx, v, bytes))
    return s;
  if (locus_status_t s = m.deviceOf[m.plan.buffers[buffer].device]->download(
          bufferPointer(m, ctx, buffer), v.data, bytes))
    return s;
  ctx.stats.output_bytes += bytes;
  data = v.data;
  return nullptr;
}

void releaseViews(locus_context_t &ctx) noexcept {
  locus_model_t &m = *ctx.model;
  for (auto *views : {&ctx.inputViews, &ctx.outputViews})
    for (locus_context_s::HostView &v : *views) {
      if (!v.data)
        continue;
      if (v.pinned)
        m.pinner->unpinHost(v.data);
      ctx.viewMemory->release(v.data);
    }
}

} // namespace locus::rt
