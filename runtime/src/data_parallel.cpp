// data_parallel.cpp - a model in a data-parallel job: joining the job
// (every rank runs the same plan; rank 0's state goes to all) and the
// step's all-reduce commands (a gradient bucket averaged over the ranks).
#include "comm.h"
#include "model.h"

#include "status_impl.h"

#include <algorithm>
#include <cstring>
#include <memory>
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
  // Devices that reduce in their own order of work (a GPU through NCCL)
  // join here, at the same point on every rank.
  for (size_t d = 0; d < m.plan.devices.size(); ++d) {
    bool reduces = false;
    for (const PlanCommand &c : m.plan.step)
      reduces |= c.op == LOCUS_PLAN_ALL_REDUCE && c.device == d;
    if (reduces)
      if (locus_status_t s = m.deviceOf[d]->joinCollectives(comm))
        return s;
  }
  m.comm = &comm;
  return nullptr;
}

locus_status_t startAllReduce(locus_model_t &m, locus_context_t &ctx,
                              size_t index) {
  const PlanCommand &c = m.plan.step[index];
  Device &device = *m.deviceOf[c.device];
  size_t n = c.args.size() / 2;
  if (m.comm) { // on the device where it can (a GPU through NCCL), at any
                // world size: one rank is the NCCL path on one GPU
    std::vector<Device::ReducePart> parts;
    size_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      bytes += m.plan.buffers[c.args[i]].bytes;
      parts.push_back({bufferPointer(m, ctx, c.args[i]),
                       bufferPointer(m, ctx, c.args[n + i]),
                       m.plan.buffers[c.args[i]].bytes / sizeof(float)});
    }
    locus_status_t status = nullptr;
    auto begin =
        m.trace.on() ? Trace::Clock::now() : Trace::Clock::time_point();
    if (device.allReduceHere(parts, c.reduction == LOCUS_PLAN_REDUCE_MEAN,
                             status)) {
      m.trace.allReduce(c.device, bytes, false, ctx.id, ctx.step, begin);
      return status;
    }
  }
  if (!m.comm || m.comm->size == 1) { // the average of one rank: itself
    for (size_t i = 0; i < n; ++i)
      if (locus_status_t s =
              device.copyFrom(device, bufferPointer(m, ctx, c.args[i]),
                              bufferPointer(m, ctx, c.args[n + i]),
                              m.plan.buffers[c.args[i]].bytes))
        return s;
    return nullptr;
  }
  size_t floats = 0;
  for (size_t i = 0; i < n; ++i)
    floats += m.plan.buffers[c.args[i]].bytes / sizeof(float);
  // The bucket in one host buffer: one collective call for all of it. A
  // new one per start: the communicator's thread may still hold the last.
  ctx.reduces.resize(m.plan.step.size());
  auto begin = m.trace.on() ? Trace::Clock::now() : Trace::Clock::time_point();
  auto job = std::make_shared<ReduceJob>();
  job->data.resize(floats);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t bytes = m.plan.buffers[c.args[i]].bytes;
    if (locus_status_t s = device.download(bufferPointer(m, ctx, c.args[i]),
                                           job->data.data() + at, bytes))
      return s;
    at += bytes / sizeof(float);
  }
  m.comm->submit(job);
  ctx.reduces[index] = std::move(job);
  m.trace.allReduce(c.device, floats * sizeof(float), false, ctx.id, ctx.step,
                    begin);
  return nullptr;
}

locus_status_t finishAllReduce(locus_model_t &m, locus_context_t &ctx,
                               size_t index) {
  // World size 1 starts no job: the results are written already.
  if (index >= ctx.reduces.size() || !ctx.reduces[index])
    return nullptr;
  std::shared_ptr<ReduceJob> job = std::move(ctx.reduces[index]);
  auto begin = m.trace.on() ? Trace::Clock::now() : Trace::Clock::time_point();
  if (locus_status_t s = m.comm->wait(*job))
    return s;
  const PlanCommand &c = m.plan.step[index];
  if (c.reduction == LOCUS_PLAN_REDUCE_MEAN) {
    float scale = 1.0f / static_cast<float>(m.comm->size);
    for (float &v : job->data)
      v *= scale;
  }
  Device &device = *m.deviceOf[c.device];
  size_t n = c.args.size() / 2;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t bytes = m.plan.buffers[c.args[n + i]].bytes;
    if (locus_status_t s = device.upload(
            job->data.data() + at, bufferPointer(m, ctx, c.args[n + i]), bytes))
      return s;
    at += bytes / sizeof(float);
  }
  m.trace.allReduce(c.device, job->data.size() * sizeof(float), true, ctx.id,
                    ctx.step, begin);
  return nullptr;
}

locus_status_t finishAllReduces(locus_model_t &m, locus_context_t &ctx) {
  locus_status_t first = nullptr;
  for (size_t k = 0; k < ctx.reduces.size(); ++k) {
    if (!ctx.reduces[k])
      continue;
    // Every job is waited for, even after a failure: none outlives the
    // step while the communicator's thread may write it.
    locus_status_t s = finishAllReduce(m, ctx, k);
    if (s && !first)
      first = s;
    else
      locus_status_free(s);
  }
  return first;
}

void findReduceWaits(locus_model_t &m) {
  const std::vector<PlanCommand> &step = m.plan.step;
  m.reduceWaits.assign(step.size(), {});
  std::vector<int64_t> resultOf(m.plan.buffers.size(), -1);
  for (size_t k = 0; k < step.size(); ++k) {
    const PlanCommand &c = step[k];
    // The first command that reads a result waits for its all-reduce.
    std::vector<uint32_t> reads;
    if (c.op == LOCUS_PLAN_LAUNCH)
      reads.assign(c.args.begin(), c.args.end() - c.results);
    else if (c.op == LOCUS_PLAN_COPY)
      reads.push_back(c.src);
    else if (c.op == LOCUS_PLAN_ALL_REDUCE)
      reads.assign(c.args.begin(), c.args.begin() + c.args.size() / 2);
    for (uint32_t b : reads) {
      int64_t from = resultOf[b];
      if (from < 0)
        continue;
      std::vector<uint32_t> &waits = m.reduceWaits[k];
      if (std::find(waits.begin(), waits.end(), from) == waits.end())
        waits.push_back(static_cast<uint32_t>(from));
      // Waited for here: later readers find the result in place.
      for (int64_t &r : resultOf)
        if (r == from)
          r = -1;
    }
    if (c.op == LOCUS_PLAN_ALL_REDUCE)
      for (size_t i = c.args.size() / 2; i < c.args.size(); ++i)
        resultOf[c.args[i]] = static_cast<int64_t>(k);
  }
}

} // namespace locus::rt
