// batch_runner.cpp - locus_context_run_batches: steps fed from a callback,
// the next batch copied to its device while a step runs.

#include "model.h"

#include "status_impl.h"

#include <algorithm>

namespace locus::rt {

namespace {

/// What the runner feeds: every input buffer, and every buffer a step copy
/// fills from an input (the runner makes that copy ahead, and the step
/// skips it). Two slots each, step i using slot i % 2.
struct Feed {
  size_t input;    // which input's bytes
  uint32_t buffer; // the buffer it stands for
  Device *device;
  void *slot[2] = {nullptr, nullptr};
  bool owned[2] = {false, false};
};

/// One locus_context_run_batches call. Its destructor gives the slots back
/// and returns the context to single steps.
class BatchRunner {
public:
  BatchRunner(locus_context_t &ctx, locus_next_batch_fn next,
              locus_step_done_fn done, void *user)
      : m_(*ctx.model), ctx_(ctx), next_(next), done_(done), user_(user) {}
  ~BatchRunner();

  /// The feeds and their slots.
  locus_status_t prepare();
  locus_status_t run(uint64_t steps);

private:
  void addFeeds();
  locus_status_t allocateSlots();
  /// Asks for step `i`'s batch and copies it into slot i % 2.
  locus_status_t fetch(uint64_t i, locus_run_stats_t &stats);
  /// Runs step `i` and fetches step i + 1's batch meanwhile (into `ahead`;
  /// a failed fetch is returned by `fetched`).
  locus_status_t step(uint64_t i, uint64_t steps, locus_run_stats_t &ahead,
                      locus_status_t &fetched);

  locus_model_t &m_;
  locus_context_t &ctx_;
  locus_next_batch_fn next_;
  locus_step_done_fn done_;
  void *user_;
  std::vector<Feed> feeds_;
  std::vector<bool> skip_;
  std::vector<const void *> batch_;
};

BatchRunner::~BatchRunner() {
  for (Feed &f : feeds_)
    for (int p = 0; p < 2; ++p)
      if (f.owned[p])
        f.device->release(f.slot[p]);
  ctx_.override.clear();
  ctx_.skip.clear();
}

void BatchRunner::addFeeds() {
  skip_.assign(m_.plan.step.size(), false);
  for (size_t i = 0; i < m_.inputBuffers.size(); ++i) {
    uint32_t b = m_.inputBuffers[i];
    feeds_.push_back({i, b, m_.deviceOf[m_.plan.buffers[b].device]});
    feeds_.back().slot[0] = bufferPointer(m_, ctx_, b);
  }
  for (size_t k = 0; k < m_.plan.step.size(); ++k) {
    const PlanCommand &c = m_.plan.step[k];
    if (c.op != LOCUS_PLAN_COPY ||
        m_.plan.buffers[c.src].kind != LOCUS_PLAN_INPUT)
      continue;
    auto input = static_cast<size_t>(
        std::find(m_.inputBuffers.begin(), m_.inputBuffers.end(), c.src) -
        m_.inputBuffers.begin());
    feeds_.push_back(
        {input, c.dst, m_.deviceOf[m_.plan.buffers[c.dst].device]});
    skip_[k] = true;
  }
}

locus_status_t BatchRunner::allocateSlots() {
  for (Feed &f : feeds_)
    for (int p = 0; p < 2; ++p) {
      if (f.slot[p])
        continue;
      // Slots of their own: an activation's arena bytes are other buffers'
      // at other times of the step.
      size_t bytes = m_.plan.buffers[f.buffer].bytes;
      f.slot[p] = f.device->allocate(bytes);
      f.owned[p] = f.slot[p] != nullptr;
      if (!f.slot[p])
        return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                          "out of memory for the batch buffers of input '%s' "
                          "on %s (%zu bytes)",
                          m_.inputs[f.input].name, f.device->name().c_str(),
                          bytes);
    }
  return nullptr;
}

locus_status_t BatchRunner::prepare() {
  addFeeds();
  if (locus_status_t s = allocateSlots())
    return s;
  batch_.resize(m_.inputs.size());
  ctx_.override.assign(m_.plan.buffers.size(), nullptr);
  ctx_.skip = skip_;
  return nullptr;
}

locus_status_t BatchRunner::fetch(uint64_t i, locus_run_stats_t &stats) {
  std::fill(batch_.begin(), batch_.end(), nullptr);
  if (locus_status_t s = next_(user_, i, batch_.data()))
    return s;
  for (size_t j = 0; j < batch_.size(); ++j)
    if (!batch_[j] && m_.inputs[j].byte_size)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "step %llu: no data for input '%s'",
                        static_cast<unsigned long long>(i), m_.inputs[j].name);
  for (Feed &f : feeds_) {
    size_t bytes = m_.plan.buffers[f.buffer].bytes;
    if (locus_status_t s =
            f.device->prefetch(batch_[f.input], f.slot[i % 2], bytes))
      return s;
    if (f.buffer != m_.inputBuffers[f.input]) {
      ++stats.copies;
      stats.copy_bytes += bytes;
    } else {
      stats.input_bytes += bytes;
    }
  }
  return nullptr;
}

locus_status_t BatchRunner::step(uint64_t i, uint64_t steps,
                                 locus_run_stats_t &ahead,
                                 locus_status_t &fetched) {
  for (Feed &f : feeds_)
    ctx_.override[f.buffer] = f.slot[i % 2];
  locus_run_stats_t stats = ahead;
  ahead = {};
  locus_status_t status = nullptr;
  {
    StepLock lock(m_, ctx_);
    ++ctx_.runs;
    auto begin =
        m_.trace.on() ? Trace::Clock::now() : Trace::Clock::time_point();
    status = execute(m_, ctx_, m_.plan.step, stats);
    // The next batch while this step runs on its devices. If it fails,
    // this step still finishes and is reported; the loop stops after it.
    if (!status && i + 1 < steps)
      fetched = fetch(i + 1, ahead);
    for (const auto &device : m_.devices)
      if (locus_status_t s = device->finish(); s && !status)
        status = s;
      else if (s)
        locus_status_free(s);
    if (!status)
      m_.trace.step(ctx_.id, ctx_.runs, begin);
  }
  ctx_.stats = stats;
  if (!status && done_)
    status = done_(user_, i, &ctx_);
  return status;
}

locus_status_t BatchRunner::run(uint64_t steps) {
  locus_status_t status = nullptr;
  locus_run_stats_t ahead{};
  if (steps)
    status = fetch(0, ahead);
  for (uint64_t i = 0; i < steps && !status; ++i) {
    locus_status_t fetched = nullptr;
    status = step(i, steps, ahead, fetched);
    if (status)
      locus_status_free(fetched);
    else
      status = fetched;
  }
  return status;
}

} // namespace

locus_status_t runBatches(locus_context_t &ctx, uint64_t steps,
                          locus_next_batch_fn next, locus_step_done_fn done,
                          void *user) {
  BatchRunner runner(ctx, next, done, user);
  if (locus_status_t s = runner.prepare())
    return s;
  return runner.run(steps);
}

} // namespace locus::rt
