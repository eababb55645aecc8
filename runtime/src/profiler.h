// profiler.h - LOCUS_PROFILE=1: the time of each kernel and of the copies.
#ifndef LOCUS_RUNTIME_PROFILER_H
#define LOCUS_RUNTIME_PROFILER_H

#include "devices/device.h"
#include "kernel_source.h"
#include "plan.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace locus::rt {

/// Times kernels and copies when LOCUS_PROFILE=1 is in the environment at
/// load; does nothing otherwise. Thread-safe: contexts add to it at once.
/// Kernel times are the device's own (Device::launchTimed: CUDA events on a
/// GPU), so a profiled step runs each launch to its end before the next.
class Profiler {
public:
  using Clock = std::chrono::steady_clock;

  /// Reads LOCUS_PROFILE and makes a counter per kernel when it is on.
  void start(size_t kernels);
  bool on() const { return on_; }
  /// When a timed piece of work starts (a zero time point when off).
  Clock::time_point now() const {
    return on_ ? Clock::now() : Clock::time_point();
  }
  /// Adds a launch of `kernel` that took `ns` on its device.
  void kernelTime(size_t kernel, uint64_t ns);
  void copyDone(Clock::time_point start);
  /// The table, to stderr: one row per kernel, slowest first, with its
  /// source (ops and the user's lines), and copies. Never throws (it runs
  /// while a model is released).
  void print(const Plan &plan, const std::vector<Device *> &deviceOf,
             const std::vector<KernelSource> &sources) const noexcept;

private:
  bool on_ = false;
  std::unique_ptr<std::atomic<uint64_t>[]> kernelNs_, kernelCalls_;
  std::atomic<uint64_t> copyNs_{0}, copyCalls_{0};
};

} // namespace locus::rt

#endif
