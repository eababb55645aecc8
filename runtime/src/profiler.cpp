// profiler.cpp - LOCUS_PROFILE=1: kernel and copy times, printed to stderr
// when the model is released.

#include "profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace locus::rt {

namespace {

uint64_t since(Profiler::Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          Profiler::Clock::now() - start)
          .count());
}

void printRow(const char *name, const char *device, uint64_t calls, uint64_t ns,
              uint64_t total, const char *source) {
  std::fprintf(
      stderr, "locus profile: %-40s %-8s %8llu %10.3f %10.2f %5.1f%%  %s\n",
      name, device, static_cast<unsigned long long>(calls),
      static_cast<double>(ns) / 1e6,
      calls ? static_cast<double>(ns) / 1e3 / static_cast<double>(calls) : 0.0,
      total ? 100.0 * static_cast<double>(ns) / static_cast<double>(total)
            : 0.0,
      source);
}

/// `text` with control bytes shown as '?': an artifact's strings reach a
/// terminal.
std::string printable(std::string text) {
  for (char &c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      c = '?';
  return text;
}

} // namespace

void Profiler::start(size_t kernels) {
  const char *env = std::getenv("LOCUS_PROFILE");
  if (!env || *env != '1')
    return;
  kernelNs_.reset(new (std::nothrow) std::atomic<uint64_t>[kernels]());
  kernelCalls_.reset(new (std::nothrow) std::atomic<uint64_t>[kernels]());
  on_ = kernelNs_ && kernelCalls_;
}

void Profiler::kernelTime(size_t kernel, uint64_t ns) {
  if (!on_)
    return;
  kernelNs_[kernel] += ns;
  ++kernelCalls_[kernel];
}

void Profiler::copyDone(Clock::time_point start) {
  if (!on_)
    return;
  copyNs_ += since(start);
  ++copyCalls_;
}

void Profiler::print(const Plan &plan, const std::vector<Device *> &deviceOf,
                     const std::vector<KernelSource> &sources) const noexcept {
  if (!on_ || deviceOf.size() < plan.devices.size()) // a failed load
    return;
  try {
    std::vector<size_t> order(plan.kernels.size());
    uint64_t total = copyNs_;
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
      total += kernelNs_[i];
    }
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return kernelNs_[a] > kernelNs_[b]; });
    std::fprintf(stderr,
                 "locus profile: times on each kernel's device (CUDA events "
                 "on a GPU, the host clock on cpu and sim); copies waited "
                 "for\n");
    std::fprintf(stderr, "locus profile: %-40s %-8s %8s %10s %10s %6s  %s\n",
                 "kernel", "device", "calls", "total ms", "mean us", "share",
                 "source");
    for (size_t i : order)
      printRow(plan.kernels[i].symbol.c_str(),
               deviceOf[plan.kernels[i].device]->name().c_str(),
               kernelCalls_[i], kernelNs_[i], total,
               i < sources.size() ? printable(sources[i].text).c_str() : "");
    printRow("(copies)", "", copyCalls_, copyNs_, total, "");
  } catch (...) { // NOLINT(bugprone-empty-catch): said below
    // Out of memory for the order: the profile is lost, the release goes on.
  }
}

} // namespace locus::rt
