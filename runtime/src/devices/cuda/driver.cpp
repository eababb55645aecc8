// driver.cpp - the CUDA driver's entry points, bound once per process, and
// the registry of pinned host memory.
//
// The driver API, cuBLAS (cublas.cpp) and cuDNN (cudnn.cpp) come from
// dlopen, never from linking: a binary linked against the driver (or its
// stub libcuda.so) fails to start on a machine without one, and the runtime
// must run on the CPU there.

#include "devices/cuda/driver.h"

#include "devices/ranges.h"
#include "dl.h"

#include <algorithm>

namespace locus::rt {

std::string Driver::error(CUresult rc) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(rc, &name);
  if (cuGetErrorString)
    cuGetErrorString(rc, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(rc)) +
         (text ? std::string(": ") + text : "");
}

void PinnedHost::add(const void *p, size_t bytes, Owner owner) {
  std::lock_guard lock(mutex_);
  const char *at = static_cast<const char *>(p);
  Range range{at, at + bytes, owner};
  ranges_.insert(std::upper_bound(ranges_.begin(), ranges_.end(), range),
                 range);
}

bool PinnedHost::remove(const void *p) {
  std::lock_guard lock(mutex_);
  // Two models may register the same memory: the second finds it
  // page-locked (foreign). Forgetting that entry first leaves the memory
  // locked until the last one goes.
  auto at = [&](const Range &r) { return r.begin == p; };
  auto it = std::find_if(ranges_.begin(), ranges_.end(), [&](const Range &r) {
    return at(r) && r.owner == Owner::foreign;
  });
  if (it == ranges_.end())
    it = std::find_if(ranges_.begin(), ranges_.end(), at);
  if (it == ranges_.end())
    return false;
  bool foreign = it->owner == Owner::foreign;
  ranges_.erase(it);
  return foreign;
}

bool PinnedHost::holds(const void *p, size_t bytes, Owner *owner) const {
  std::lock_guard lock(mutex_);
  const Range *r = findRange(ranges_, static_cast<const char *>(p), bytes);
  if (r && owner)
    *owner = r->owner;
  return r != nullptr;
}

PinnedHost &pinnedHost() {
  static PinnedHost pinned;
  return pinned;
}

const Driver &driver() {
  static const Driver d = [] {
    Driver d;
    Library cuda = openFirst({"libcuda.so.1"});
    d.handle = cuda.handle;
    if (!d.handle) {
      d.why = "no CUDA driver (" + cuda.why + ")";
      return d;
    }
    bool ok = true;
    const char *missing = nullptr;
#define LOCUS_BIND(field, symbol)                                              \
  if (!bindSymbol(d.handle, d.field, symbol) && ok) {                          \
    ok = false;                                                                \
    missing = symbol;                                                          \
  }
    LOCUS_BIND(cuInit, "cuInit")
    LOCUS_BIND(cuDeviceGetCount, "cuDeviceGetCount")
    LOCUS_BIND(cuDeviceGet, "cuDeviceGet")
    LOCUS_BIND(cuDeviceGetName, "cuDeviceGetName")
    LOCUS_BIND(cuGetErrorName, "cuGetErrorName")
    LOCUS_BIND(cuGetErrorString, "cuGetErrorString")
    LOCUS_BIND(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
    LOCUS_BIND(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
    LOCUS_BIND(cuCtxSetCurrent, "cuCtxSetCurrent")
    LOCUS_BIND(cuMemAlloc, "cuMemAlloc_v2")
    LOCUS_BIND(cuMemFree, "cuMemFree_v2")
    LOCUS_BIND(cuMemGetInfo, "cuMemGetInfo_v2")
    LOCUS_BIND(cuMemsetD8Async, "cuMemsetD8Async")
    LOCUS_BIND(cuMemHostAlloc, "cuMemHostAlloc")
    LOCUS_BIND(cuMemFreeHost, "cuMemFreeHost")
    LOCUS_BIND(cuMemcpyAsync, "cuMemcpyAsync")
    LOCUS_BIND(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
    LOCUS_BIND(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
    LOCUS_BIND(cuStreamCreate, "cuStreamCreate")
    LOCUS_BIND(cuStreamDestroy, "cuStreamDestroy_v2")
    LOCUS_BIND(cuStreamSynchronize, "cuStreamSynchronize")
    LOCUS_BIND(cuStreamQuery, "cuStreamQuery")
    LOCUS_BIND(cuStreamWaitEvent, "cuStreamWaitEvent")
    LOCUS_BIND(cuEventCreate, "cuEventCreate")
    LOCUS_BIND(cuEventDestroy, "cuEventDestroy_v2")
    LOCUS_BIND(cuEventRecord, "cuEventRecord")
    LOCUS_BIND(cuEventSynchronize, "cuEventSynchronize")
    LOCUS_BIND(cuModuleLoadData, "cuModuleLoadData")
    LOCUS_BIND(cuModuleUnload, "cuModuleUnload")
    LOCUS_BIND(cuModuleGetFunction, "cuModuleGetFunction")
    LOCUS_BIND(cuLaunchKernel, "cuLaunchKernel")
#undef LOCUS_BIND
    if (!ok) {
      d.why = std::string("the CUDA driver lacks ") + missing;
      return d;
    }
    // Optional: kernel times for LOCUS_PROFILE=1 (cuda.h maps the name to
    // _v2 from CUDA 12.8 on), stream-ordered allocation and graphs (CUDA
    // 11.4 and later).
    if (!bindSymbol(d.handle, d.cuEventElapsedTime, "cuEventElapsedTime_v2"))
      bindSymbol(d.handle, d.cuEventElapsedTime, "cuEventElapsedTime");
    bindSymbol(d.handle, d.cuMemAllocAsync, "cuMemAllocAsync");
    bindSymbol(d.handle, d.cuMemFreeAsync, "cuMemFreeAsync");
    bindSymbol(d.handle, d.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    bindSymbol(d.handle, d.cuStreamEndCapture, "cuStreamEndCapture");
    bindSymbol(d.handle, d.cuGraphInstantiateWithFlags,
               "cuGraphInstantiateWithFlags");
    bindSymbol(d.handle, d.cuGraphLaunch, "cuGraphLaunch");
    bindSymbol(d.handle, d.cuGraphExecDestroy, "cuGraphExecDestroy");
    bindSymbol(d.handle, d.cuGraphDestroy, "cuGraphDestroy");
    bindSymbol(d.handle, d.cuMemHostRegister, "cuMemHostRegister_v2");
    bindSymbol(d.handle, d.cuMemHostUnregister, "cuMemHostUnregister");
    if (CUresult rc = d.cuInit(0)) {
      d.why = "cuInit failed: " + d.error(rc);
      return d;
    }
    if (CUresult rc = d.cuDeviceGetCount(&d.count)) {
      d.why = "cuDeviceGetCount failed: " + d.error(rc);
      return d;
    }
    if (d.count == 0)
      d.why = "the CUDA driver reports no device";
    return d;
  }();
  return d;
}

} // namespace locus::rt
