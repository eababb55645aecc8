// trace.h - LOCUS_TRACE=trace.json (or locus_model_options_t::trace_path):
// every kernel launch, copy and step of a model's runs, written as Chrome
// trace JSON (chrome://tracing, ui.perfetto.dev) when the model is released
// or locus_model_write_trace is called.
#ifndef LOCUS_RUNTIME_TRACE_H
#define LOCUS_RUNTIME_TRACE_H

#include "devices/device.h"
#include "kernel_source.h"
#include "plan.h"

#include "locus/locus_runtime.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace locus::rt {

/// What a trace names: the plan, where its devices run, and each kernel's
/// source (its ops and the user's lines; empty when the code has none).
struct TraceNames {
  const Plan &plan;
  const std::vector<Device *> &deviceOf;
  const std::vector<KernelSource> &kernelSources;
};

/// Records timed events while on; thread-safe (contexts run at once). At
/// most kMaxEvents are kept, later ones counted as dropped.
class Trace {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxEvents = size_t{1} << 20;
  /// The step number of load-time commands.
  static constexpr uint64_t kLoad = UINT64_MAX;

  /// On when `path` (the option) or else LOCUS_TRACE names a file.
  void start(const char *path);
  bool on() const { return on_; }
  /// Where it is written at release ("" when off).
  const std::string &path() const { return path_; }
  /// Whether the path came from LOCUS_TRACE (shared by every model).
  bool fromEnvironment() const { return fromEnvironment_; }

  void kernel(uint32_t kernel, uint64_t bytes, uint64_t context, uint64_t step,
              Clock::time_point begin);
  void copy(uint32_t from, uint32_t to, uint64_t bytes, uint64_t context,
            uint64_t step, Clock::time_point begin);
  void step(uint64_t context, uint64_t step, Clock::time_point begin);
  /// A data-parallel bucket of `bytes` on plan device `device`: its start
  /// (copied out and handed to the communicator), or the wait for its sum
  /// and the copy back (`wait`): the communication the step did not hide.
  void allReduce(uint32_t device, uint64_t bytes, bool wait, uint64_t context,
                 uint64_t step, Clock::time_point begin);

  /// The JSON of every event so far.
  std::string json(const TraceNames &names) const;
  /// Writes it to `path` atomically.
  locus_status_t write(const char *path, const TraceNames &names) const;

private:
  enum class Kind : uint8_t { kernel, copy, step, allReduce };
  struct Event {
    Kind kind;
    uint32_t a = 0, b = 0; // kernel; or copy's source and target devices;
                           // or all-reduce's device and whether a wait
    uint64_t bytes = 0, context = 0, step = 0;
    int64_t beginNs = 0, durationNs = 0;
  };
  void add(Event e, Clock::time_point begin);

  bool on_ = false, fromEnvironment_ = false;
  std::string path_;
  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
  uint64_t dropped_ = 0;
};

} // namespace locus::rt

#endif
