// cpu_device.cpp - the `cpu` device, and the host-memory device it shares
// with `sim`.

#include "devices/cpu/host_device.h"

#include "status_impl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

namespace locus::rt {

HostDevice::~HostDevice() {
  for (const Range &r : ranges_)
    std::free(r.raw);
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
  std::unique_lock lock(mutex_);
  Range range{start, start + bytes, raw};
  try {
    ranges_.insert(std::upper_bound(ranges_.begin(), ranges_.end(), range),
                   range);
  } catch (const std::bad_alloc &) {
    // No room to record it: the block is given back, never leaked.
    std::free(raw);
    return nullptr;
  }
  return start;
}

void HostDevice::release(void *p) {
  if (!p)
    return;
  void *raw = nullptr;
  {
    std::unique_lock lock(mutex_);
    auto it = std::find_if(ranges_.begin(), ranges_.end(), [&](const Range &r) {
      return r.begin == static_cast<char *>(p);
    });
    if (it == ranges_.end())
      return;
    raw = it->raw;
    ranges_.erase(it);
  }
  std::free(raw);
}

bool HostDevice::owns(const void *p, size_t bytes) const {
  const char *c = static_cast<const char *>(p);
  std::shared_lock lock(mutex_);
  // The last range starting at or before p; allocations never overlap.
  auto it = std::upper_bound(
      ranges_.begin(), ranges_.end(), c,
      [](const char *v, const Range &r) { return v < r.begin; });
  if (it == ranges_.begin())
    return false;
  --it;
  return it->begin <= c && c + bytes <= it->end;
}

locus_status_t HostDevice::copyFrom(Device &from, const void *src, void *dst,
                                    size_t bytes) {
  // Host memory on both sides; a CUDA source would copy to the host itself.
  if (!dynamic_cast<HostDevice *>(&from))
    return from.download(src, dst, bytes);
  if (bytes)
    std::memcpy(dst, src, bytes);
  return nullptr;
}

locus_status_t HostDevice::upload(const void *host, void *dst, size_t bytes) {
  if (bytes)
    std::memcpy(dst, host, bytes);
  return nullptr;
}

locus_status_t HostDevice::download(const void *src, void *host, size_t bytes) {
  if (bytes)
    std::memcpy(host, src, bytes);
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
