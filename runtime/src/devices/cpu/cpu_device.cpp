// cpu_device.cpp - the `cpu` device, and the host-memory device it shares
// with `sim`.

#include "devices/cpu/host_device.h"

#include "locus/abi.h"

#include "devices/ranges.h"

#include "status_impl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

namespace locus::rt {

HostDevice::~HostDevice() {
  for (const Range &r : ranges_)
    giveBack(r);
}

void HostDevice::giveBack(const Range &r) {
  if (r.mapped)
    ::munmap(r.raw, r.mapped);
  else
    std::free(r.raw);
}

/// Records [start, start + bytes) as this device's memory; gives the block
/// back (never leaked) and returns null when there is no room to record it.
void *HostDevice::record(char *start, size_t bytes, void *raw, size_t mapped) {
  std::unique_lock lock(mutex_);
  Range range{start, start + bytes, raw, mapped};
  try {
    ranges_.insert(std::upper_bound(ranges_.begin(), ranges_.end(), range),
                   range);
  } catch (const std::bad_alloc &) {
    giveBack(range);
    return nullptr;
  }
  return start;
}

void *HostDevice::allocate(size_t bytes) {
  // calloc maps large blocks lazily: an arena costs only the pages a run
  // touches.
  if (bytes > (size_t(1) << 46))
    return nullptr;
  void *raw = std::calloc(1, bytes + 64);
  if (!raw)
    return nullptr;
  char *start = static_cast<char *>(raw) +
                (64 - reinterpret_cast<uintptr_t>(raw) % 64) % 64;
  return record(start, bytes, raw, 0);
}

size_t HostDevice::pageBytes(size_t bytes) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return std::max<size_t>(1, (bytes + page - 1) / page) * page;
}

void *HostDevice::allocatePages(size_t bytes) {
  if (bytes > (size_t(1) << 46))
    return nullptr;
  size_t length = pageBytes(bytes);
  // Anonymous pages: zeroed, aligned, mapped as touched, shared with no
  // other block (pinning works on whole pages). A large block starts on a
  // 2 MiB boundary and asks for huge pages (given on request where
  // transparent huge pages are "madvise", Debian's default): pinned for a
  // GPU, it then takes a page mapping per 2 MiB for the DMA, not one per
  // 4 KiB. A 64 MiB upload from a 4 KiB-page arena ran at 6.8 GB/s on an
  // H100 host (2026-11-27), where PyTorch's pinned memory runs at 53.
  constexpr size_t kHugePage = size_t(2) << 20;
  size_t slack = length >= 2 * kHugePage ? kHugePage : 0;
  void *raw = ::mmap(nullptr, length + slack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return nullptr;
  char *start = static_cast<char *>(raw);
  if (slack) {
    start +=
        (kHugePage - reinterpret_cast<uintptr_t>(raw) % kHugePage) % kHugePage;
#ifdef MADV_HUGEPAGE
    ::madvise(start, length, MADV_HUGEPAGE); // advice: failure changes nothing
#endif
  }
  return record(start, bytes, raw, length + slack);
}

void HostDevice::release(void *p) {
  if (!p)
    return;
  Range gone{};
  {
    std::unique_lock lock(mutex_);
    auto it = std::find_if(ranges_.begin(), ranges_.end(), [&](const Range &r) {
      return r.begin == static_cast<char *>(p);
    });
    if (it == ranges_.end())
      return;
    gone = *it;
    ranges_.erase(it);
  }
  giveBack(gone);
}

bool HostDevice::owns(const void *p, size_t bytes) const {
  std::shared_lock lock(mutex_);
  return holdsRange(ranges_, static_cast<const char *>(p), bytes);
}

namespace {

/// Host copies this large or larger run over the runtime's threads, each
/// thread moving at least this much (a wake-up costs a few microseconds,
/// a megabyte about a hundred).
constexpr size_t kParallelCopyBytes = size_t(1) << 20;
constexpr size_t kMinCopyChunk = size_t(256) << 10;

} // namespace

// One thread copied about 7 GB/s on an H100's host: 9 ms of the 10.9 a
// 64 MiB input took to reach the GPU, and 0.6 ms of each way's 6.4 MB in
// the ResNet blocks at batch 8 (2026-11-27). Each thread gets one run of
// whole cache lines.
void copyHostBytes(void *dst, const void *src, size_t bytes) {
  int threads = locus_parallel_threads();
  if (bytes < kParallelCopyBytes || threads < 2) {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return;
  }
  size_t share = (bytes + size_t(threads) - 1) / size_t(threads);
  size_t chunk = std::max(kMinCopyChunk, (share + 63) & ~size_t(63));
  struct Copy {
    char *dst;
    const char *src;
    size_t bytes, chunk;
  } copy{static_cast<char *>(dst), static_cast<const char *>(src), bytes,
         chunk};
  auto body = [](void *p, int64_t lo, int64_t hi) {
    auto *c = static_cast<Copy *>(p);
    size_t begin = static_cast<size_t>(lo) * c->chunk;
    size_t end = std::min(c->bytes, static_cast<size_t>(hi) * c->chunk);
    std::memcpy(c->dst + begin, c->src + begin, end - begin);
  };
  locus_parallel_for(body, &copy,
                     static_cast<int64_t>((bytes + chunk - 1) / chunk));
}

locus_status_t HostDevice::copyFrom(Device &from, const void *src, void *dst,
                                    size_t bytes) {
  // Host memory on both sides; a GPU source (and sim, which stands in for
  // one and may be capturing a graph) copies to the host itself.
  if (!dynamic_cast<HostDevice *>(&from) || (&from != this && from.simulated()))
    return from.download(src, dst, bytes);
  copyHostBytes(dst, src, bytes);
  return nullptr;
}

locus_status_t HostDevice::upload(const void *host, void *dst, size_t bytes) {
  copyHostBytes(dst, host, bytes);
  return nullptr;
}

locus_status_t HostDevice::download(const void *src, void *host, size_t bytes) {
  copyHostBytes(host, src, bytes);
  return nullptr;
}

locus_status_t HostDevice::launch(KernelFn kernel, void *const *buffers) {
  kernel(buffers);
  return nullptr;
}

std::unique_ptr<Device> makeCpuDevice() {
  return std::make_unique<HostDevice>("cpu");
}

} // namespace locus::rt
