// driver.h - the CUDA driver API, found with dlopen: its types and constants
// as far as the cuda device needs them, the table of its entry points, and
// the host memory the CUDA devices of the process pinned.
#ifndef LOCUS_RUNTIME_CUDA_DRIVER_H
#define LOCUS_RUNTIME_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace locus::rt {

// The driver API's types, as far as the cuda device needs them (cuda.h is
// not needed to build the runtime).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
constexpr CUresult kSuccess = 0;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotReady = 600;
constexpr CUresult kNotSupported = 801;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;
constexpr int kCaptureThreadLocal = 1;
constexpr unsigned kHostRegisterPortable = 1;
constexpr CUresult kHostMemoryAlreadyRegistered = 712;

struct Driver {
  void *handle = nullptr;
  std::string why; // empty when loaded and initialised
  int count = 0;
#define LOCUS_CU(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
  LOCUS_CU(cuInit, unsigned)
  LOCUS_CU(cuDeviceGetCount, int *)
  LOCUS_CU(cuDeviceGet, CUdevice *, int)
  LOCUS_CU(cuDeviceGetName, char *, int, CUdevice)
  LOCUS_CU(cuGetErrorName, CUresult, const char **)
  LOCUS_CU(cuGetErrorString, CUresult, const char **)
  LOCUS_CU(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)
  LOCUS_CU(cuDevicePrimaryCtxRelease, CUdevice)
  LOCUS_CU(cuCtxSetCurrent, CUcontext)
  LOCUS_CU(cuMemAlloc, CUdeviceptr *, size_t)
  LOCUS_CU(cuMemFree, CUdeviceptr)
  LOCUS_CU(cuMemAllocAsync, CUdeviceptr *, size_t, CUstream)
  LOCUS_CU(cuMemFreeAsync, CUdeviceptr, CUstream)
  LOCUS_CU(cuMemGetInfo, size_t *, size_t *)
  LOCUS_CU(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)
  LOCUS_CU(cuMemHostAlloc, void **, size_t, unsigned)
  LOCUS_CU(cuMemFreeHost, void *)
  LOCUS_CU(cuMemHostRegister, void *, size_t, unsigned)
  LOCUS_CU(cuMemHostUnregister, void *)
  LOCUS_CU(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream)
  LOCUS_CU(cuMemcpyHtoDAsync, CUdeviceptr, const void *, size_t, CUstream)
  LOCUS_CU(cuMemcpyDtoHAsync, void *, CUdeviceptr, size_t, CUstream)
  LOCUS_CU(cuStreamCreate, CUstream *, unsigned)
  LOCUS_CU(cuStreamDestroy, CUstream)
  LOCUS_CU(cuStreamSynchronize, CUstream)
  LOCUS_CU(cuStreamQuery, CUstream)
  LOCUS_CU(cuStreamWaitEvent, CUstream, CUevent, unsigned)
  LOCUS_CU(cuEventCreate, CUevent *, unsigned)
  LOCUS_CU(cuEventDestroy, CUevent)
  LOCUS_CU(cuEventRecord, CUevent, CUstream)
  LOCUS_CU(cuEventSynchronize, CUevent)
  LOCUS_CU(cuEventElapsedTime, float *, CUevent, CUevent)
  LOCUS_CU(cuModuleLoadData, CUmodule *, const void *)
  LOCUS_CU(cuModuleUnload, CUmodule)
  LOCUS_CU(cuModuleGetFunction, CUfunction *, CUmodule, const char *)
  LOCUS_CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned,
           unsigned, unsigned, unsigned, CUstream, void **, void **)
  LOCUS_CU(cuStreamBeginCapture, CUstream, int)
  LOCUS_CU(cuStreamEndCapture, CUstream, CUgraph *)
  LOCUS_CU(cuGraphInstantiateWithFlags, CUgraphExec *, CUgraph,
           unsigned long long)
  LOCUS_CU(cuGraphLaunch, CUgraphExec, CUstream)
  LOCUS_CU(cuGraphExecDestroy, CUgraphExec)
  LOCUS_CU(cuGraphDestroy, CUgraph)
#undef LOCUS_CU

  /// The driver's name and description of `rc`.
  std::string error(CUresult rc) const;
};

/// The driver, loaded and initialised once per process; `why` says why
/// it is unusable (absent, lacking an entry point, failing to start, no
/// device).
const Driver &driver();

/// Host memory pinned by any CUDA device of the process (portable: every
/// context's copies may go straight from it), by address.
class PinnedHost {
public:
  /// Who pinned a range, which says how copies treat it.
  enum class Owner {
    runtime, // the runtime's own (arenas, mirrors): copies may stay queued
    user,    // memory a user registered: an upload from it is waited for
    foreign, // a user's, page-locked before (cudaHostRegister): as user,
             // and left page-locked when removed
  };
  void add(const void *p, size_t bytes, Owner owner = Owner::runtime);
  /// Forgets the range at `p`; returns whether it was foreign (then the
  /// driver must not unregister it).
  bool remove(const void *p);
  /// Whether [p, p + bytes) lies in one pinned range, and whose it is.
  bool holds(const void *p, size_t bytes, Owner *owner = nullptr) const;

private:
  struct Range {
    const char *begin, *end;
    Owner owner;
    bool operator<(const Range &o) const { return begin < o.begin; }
  };
  mutable std::mutex mutex_;
  std::vector<Range> ranges_;
};

/// The process's pinned host memory (every CUDA device adds to it).
PinnedHost &pinnedHost();

/// An address passed as an integer, as a pointer: device memory is
/// addressed by integers (CUdeviceptr), and generated code passes integers.
template <typename T = void> T *addressToPointer(uint64_t address) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  return reinterpret_cast<T *>(static_cast<uintptr_t>(address));
}

} // namespace locus::rt

#endif
