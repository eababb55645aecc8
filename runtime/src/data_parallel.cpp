// data_parallel.cpp - a model in a data-parallel job: joining the job
// (every rank runs the same plan; rank 0's state goes to all) and the
// step's all-reduce commands (a gradient bucket averaged over the ranks).
#include "comm.h"
#include "model.h"

#include "status_impl.h"

#include <cstring>
#include <vector>

namespace locus::rt {

namespace {

/// FNV-1a of what makes two plans the same step: their buffers and
/// commands. Ranks compare it at join.
struct Digest {
  uint64_t h = 1469598103934665603ull;
  void add(const void *p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char *>(p)[i];
      h *= 1099511628211ull;
    }
  }
  template <typename T> void add(const T &v) { add(&v, sizeof v); }
};

uint64_t planDigest(const Plan &plan) {
  Digest d;
  for (const PlanBuffer &b : plan.buffers) {
    d.add(b.kind);
    d.add(b.dtype);
    d.add(b.bytes);
    d.add(b.name.data(), b.name.size());
  }
  for (const PlanCommand &c : plan.step) {
    d.add(c.op);
    d.add(c.args.data(), c.args.size() * sizeof(uint32_t));
  }
  return d.h;
}

} // namespace

locus_status_t joinJob(locus_model_t &m, Comm &comm) {
  uint64_t mine[2] = {planDigest(m.plan), m.plan.buffers.size()};
  std::vector<uint64_t> all(2 * static_cast<size_t>(comm.size));
  if (locus_status_t s = comm.allGather(mine, all.data(), sizeof mine))
    return s;
  for (int r = 1; r < comm.size; ++r)
    if (all[2 * r] != all[0] || all[2 * r + 1] != all[1])
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "data-parallel join: rank %d runs another step than "
                        "rank 0 (its plan differs): every rank must load the "
                        "same artifact or compile the same graph",
                        r);
  // Rank 0's state (initial weights, or the checkpoint it loaded) on every
  // rank, in the plan's order; state no command uses stays as it is.
  std::vector<unsigned char> host;
  for (size_t i = 0; i < m.stateBuffers.size(); ++i) {
    uint32_t buffer = m.stateBuffers[i];
    if (m.lazyState[buffer])
      continue;
    const locus_tensor_info_t &info = m.states[i];
    host.resize(info.byte_size);
    if (locus_status_t s = readState(m, info.name, host.data(), host.size()))
      return s;
    if (locus_status_t s = comm.broadcast(host.data(), host.size()))
      return s;
    if (comm.rank != 0)
      if (locus_status_t s = writeState(m, info.name, host.data(), host.size()))
        return s;
  }
  m.comm = &comm;
  return nullptr;
}

locus_status_t allReduce(locus_model_t &m, locus_context_t &ctx,
                         const PlanCommand &c) {
  Device &device = *m.deviceOf[c.device];
  size_t n = c.args.size() / 2;
  size_t floats = 0;
  for (size_t i = 0; i < n; ++i)
    floats += m.plan.buffers[c.args[i]].bytes / sizeof(float);
  // The bucket in one host buffer: one collective call for all of it.
  std::vector<float> &bucket = ctx.reduceStaging;
  bucket.resize(floats);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t bytes = m.plan.buffers[c.args[i]].bytes;
    if (locus_status_t s = device.download(bufferPointer(m, ctx, c.args[i]),
                                           bucket.data() + at, bytes))
      return s;
    at += bytes / sizeof(float);
  }
  int world = m.comm ? m.comm->size : 1;
  if (m.comm)
    if (locus_status_t s = m.comm->allReduceSum(bucket.data(), floats))
      return s;
  if (c.reduction == LOCUS_PLAN_REDUCE_MEAN && world > 1) {
    float scale = 1.0f / static_cast<float>(world);
    for (float &v : bucket)
      v *= scale;
  }
  at = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t bytes = m.plan.buffers[c.args[n + i]].bytes;
    if (locus_status_t s = device.upload(
            bucket.data() + at, bufferPointer(m, ctx, c.args[n + i]), bytes))
      return s;
    at += bytes / sizeof(float);
  }
  return nullptr;
}

} // namespace locus::rt
