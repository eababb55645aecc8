// copies.cpp - the cuda device's copies: between CUDA devices, and between
// the host and the device through pinned staging buffers (double buffered,
// on the copy stream) or straight from pinned host memory.

#include "devices/cpu/host_device.h"
#include "devices/cuda/device.h"

#include <algorithm>
#include <cstring>

namespace locus::rt {

locus_status_t CudaDevice::copyFrom(Device &from, const void *src, void *dst,
                                    size_t bytes) {
  if (dynamic_cast<CudaDevice *>(&from)) {
    std::lock_guard lock(mutex_);
    if (locus_status_t s = enter())
      return s;
    if (!bytes)
      return nullptr;
    // Unified addressing: the driver finds both devices.
    if (CUresult rc = driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                             reinterpret_cast<CUdeviceptr>(src),
                                             bytes, compute_))
      return fail("cuMemcpyAsync", rc);
    return nullptr;
  }
  return upload(src, dst, bytes);
}

locus_status_t CudaDevice::upload(const void *host, void *dst, size_t bytes) {
  return copyIn(host, dst, bytes, /*afterCompute=*/true);
}

locus_status_t CudaDevice::prefetch(const void *host, void *dst, size_t bytes) {
  return copyIn(host, dst, bytes, /*afterCompute=*/false);
}

locus_status_t CudaDevice::copyIn(const void *host, void *dst, size_t bytes,
                                  bool afterCompute) {
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  const Driver &d = driver();
  const char *from = static_cast<const char *>(host);
  auto to = reinterpret_cast<CUdeviceptr>(dst);
  // Pinned host memory: one copy on the compute stream, in order with
  // the work around it, at link speed (a CUDA graph may hold it). From a
  // user's memory it is waited for: the caller may reuse it on return.
  PinnedHost::Owner owner{};
  if (afterCompute && bytes && pinnedHost().holds(host, bytes, &owner)) {
    if (CUresult rc = d.cuMemcpyHtoDAsync(to, host, bytes, compute_))
      return fail("cuMemcpyHtoDAsync", rc);
    if (owner != PinnedHost::Owner::runtime && !capturing_)
      if (CUresult rc = d.cuStreamSynchronize(compute_))
        return fail("cuStreamSynchronize", rc);
    return nullptr;
  }
  while (bytes) {
    Staging &s = staging_[next_];
    next_ = (next_ + 1) % staging_.size();
    if (CUresult rc = d.cuEventSynchronize(s.done))
      return fail("cuEventSynchronize", rc);
    size_t n = std::min(bytes, kStagingBytes);
    if (locus_status_t st = pin(s))
      return st;
    copyHostBytes(s.host, from, n);
    if (afterCompute) {
      if (CUresult rc = d.cuEventRecord(computeDone_, compute_))
        return fail("cuEventRecord", rc);
      if (CUresult rc = d.cuStreamWaitEvent(copy_, computeDone_, 0))
        return fail("cuStreamWaitEvent", rc);
    }
    if (CUresult rc = d.cuMemcpyHtoDAsync(to, s.host, n, copy_))
      return fail("cuMemcpyHtoDAsync", rc);
    if (CUresult rc = d.cuEventRecord(s.done, copy_))
      return fail("cuEventRecord", rc);
    if (CUresult rc = d.cuStreamWaitEvent(compute_, s.done, 0))
      return fail("cuStreamWaitEvent", rc);
    from += n;
    to += n;
    bytes -= n;
  }
  return nullptr;
}

locus_status_t CudaDevice::download(const void *src, void *host, size_t bytes) {
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  const Driver &d = driver();
  char *to = static_cast<char *>(host);
  auto from = reinterpret_cast<CUdeviceptr>(src);
  // Into pinned host memory: straight there; waited for, unless a graph
  // is being captured (the run waits for the whole step).
  if (bytes && pinnedHost().holds(host, bytes)) {
    if (CUresult rc = d.cuMemcpyDtoHAsync(host, from, bytes, compute_))
      return fail("cuMemcpyDtoHAsync", rc);
    if (!capturing_)
      if (CUresult rc = d.cuStreamSynchronize(compute_))
        return fail("cuStreamSynchronize", rc);
    return nullptr;
  }
  return downloadStaged(from, to, bytes);
}

locus_status_t CudaDevice::downloadStaged(CUdeviceptr from, char *to,
                                          size_t bytes) {
  const Driver &d = driver();
  for (Staging &s : staging_) { // an upload may still read it
    if (CUresult rc = d.cuEventSynchronize(s.done))
      return fail("cuEventSynchronize", rc);
    if (bytes)
      if (locus_status_t st = pin(s))
        return st;
  }
  size_t chunks = (bytes + kStagingBytes - 1) / kStagingBytes;
  auto issue = [&](size_t i) -> locus_status_t {
    Staging &s = staging_[i % staging_.size()];
    size_t at = i * kStagingBytes;
    if (CUresult rc = d.cuMemcpyDtoHAsync(
            s.host, from + at, std::min(kStagingBytes, bytes - at), compute_))
      return fail("cuMemcpyDtoHAsync", rc);
    if (CUresult rc = d.cuEventRecord(s.done, compute_))
      return fail("cuEventRecord", rc);
    return nullptr;
  };
  if (chunks)
    if (locus_status_t st = issue(0))
      return st;
  for (size_t i = 0; i < chunks; ++i) {
    if (i + 1 < chunks)
      if (locus_status_t st = issue(i + 1))
        return st;
    Staging &s = staging_[i % staging_.size()];
    if (CUresult rc = d.cuEventSynchronize(s.done))
      return fail("cuEventSynchronize", rc);
    size_t at = i * kStagingBytes;
    copyHostBytes(to + at, s.host, std::min(kStagingBytes, bytes - at));
  }
  return nullptr;
}

locus_status_t CudaDevice::pin(Staging &s) {
  if (s.host)
    return nullptr;
  if (CUresult rc = driver().cuMemHostAlloc(&s.host, kStagingBytes, 0)) {
    s.host = nullptr;
    return fail("cuMemHostAlloc", rc);
  }
  return nullptr;
}

} // namespace locus::rt
