// cuda_device.cpp - the `cuda` device.
//
// The driver API, cuBLAS and cuDNN (cudnn.cpp) come from dlopen, never
// from linking: a binary
// linked against the driver (or its stub libcuda.so) fails to start on a
// machine without one, and the runtime must run on the CPU there. One
// device object per model and GPU holds:
//   - the GPU's primary context, made current on each calling thread;
//   - the PTX modules of the artifact, loaded once (cuModuleLoadData wants
//     the trailing NUL the section keeps), and a function per kernel number;
//   - a compute stream (kernels, cuBLAS, device-to-device copies) and a copy
//     stream (host-to-device copies through pinned staging, double
//     buffered), ordered with events;
//   - the allocations it made, against which `owns` checks every launch.
// A kernel's launcher (host code) calls locus_cuda_launch / _sgemm / _alloc
// / _free below, which act on the device of the launch in progress on this
// thread.
//
// Errors: every driver result is checked; a failure becomes a status that
// names the call and the driver's error. Out of memory is OUT_OF_MEMORY and
// leaves the device usable; a failed launch is INTERNAL and, when the
// driver reports the context as lost (e.g. an illegal address), every later
// call on this device fails with the first error instead of running.

#include "devices/cuda/cuda_device.h"

#include "devices/cuda/cudnn.h"
#include "devices/ranges.h"
#include "dl.h"

#include "guard.h"
#include "locus/abi.h"
#include "status_impl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace locus::rt {

namespace {

// The driver API's types, as far as this file needs them (cuda.h is not
// needed to build the runtime).
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
constexpr CUresult kNotSupported = 801;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;
constexpr int kCaptureThreadLocal = 1;
constexpr unsigned kHostRegisterPortable = 1;

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

  std::string error(CUresult rc) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName)
      cuGetErrorName(rc, &name);
    if (cuGetErrorString)
      cuGetErrorString(rc, &text);
    return std::string(name ? name : "CUDA error " + std::to_string(rc)) +
           (text ? std::string(": ") + text : "");
  }
};

/// Host memory pinned by any CUDA device of the process (portable: every
/// context's copies may go straight from it), by address.
class PinnedHost {
public:
  void add(const void *p, size_t bytes) {
    std::lock_guard lock(mutex_);
    const char *at = static_cast<const char *>(p);
    ranges_.insert(
        std::upper_bound(ranges_.begin(), ranges_.end(), Range{at, at + bytes}),
        Range{at, at + bytes});
  }
  void remove(const void *p) {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(ranges_.begin(), ranges_.end(),
                           [&](const Range &r) { return r.begin == p; });
    if (it != ranges_.end())
      ranges_.erase(it);
  }
  /// Whether [p, p + bytes) lies in one pinned range.
  bool holds(const void *p, size_t bytes) const {
    std::lock_guard lock(mutex_);
    return holdsRange(ranges_, static_cast<const char *>(p), bytes);
  }

private:
  struct Range {
    const char *begin, *end;
    bool operator<(const Range &o) const { return begin < o.begin; }
  };
  mutable std::mutex mutex_;
  std::vector<Range> ranges_;
};

PinnedHost &pinnedHost() {
  static PinnedHost pinned;
  return pinned;
}

const Driver &driver() {
  static const Driver d = [] {
    Driver d;
    d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.handle) {
      const char *why = dlerror();
      d.why =
          std::string("no CUDA driver (") + (why ? why : "libcuda.so.1") + ")";
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

// cuBLAS, as far as sgemm needs it.
using cublasHandle_t = struct cublasContext *;
using cublasStatus_t = int;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDefaultMath = 0, kTf32Math = 3; // cublasMath_t

struct Blas {
  void *handle = nullptr;
  std::string why;
  cublasStatus_t (*create)(cublasHandle_t *) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*setStream)(cublasHandle_t, CUstream) = nullptr;
  // Optional (TF32 products; without it they run in fp32).
  cublasStatus_t (*setMathMode)(cublasHandle_t, int) = nullptr;
  cublasStatus_t (*sgemm)(cublasHandle_t, int, int, int, int, int,
                          const float *, const float *, int, const float *, int,
                          const float *, float *, int) = nullptr;
  cublasStatus_t (*sgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
                                        const float *, const float *, int,
                                        long long, const float *, int,
                                        long long, const float *, float *, int,
                                        long long, int) = nullptr;
};

const Blas &blas() {
  static const Blas b = [] {
    Blas b;
    for (const char *name : {"libcublas.so.13", "libcublas.so.12",
                             "libcublas.so.11", "libcublas.so"})
      if (void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        b.handle = handle;
        break;
      }
    if (!b.handle) {
      const char *why = dlerror();
      b.why = std::string("no cuBLAS (") + (why ? why : "libcublas.so") + ")";
      return b;
    }
    if (!bindSymbol(b.handle, b.create, "cublasCreate_v2") ||
        !bindSymbol(b.handle, b.destroy, "cublasDestroy_v2") ||
        !bindSymbol(b.handle, b.setStream, "cublasSetStream_v2") ||
        !bindSymbol(b.handle, b.sgemm, "cublasSgemm_v2") ||
        !bindSymbol(b.handle, b.sgemmStridedBatched,
                    "cublasSgemmStridedBatched"))
      b.why = "cuBLAS lacks cublasCreate_v2/cublasSetStream_v2/"
              "cublasSgemm_v2/cublasSgemmStridedBatched";
    bindSymbol(b.handle, b.setMathMode, "cublasSetMathMode");
    return b;
  }();
  return b;
}

/// An address passed as an integer, as a pointer: device memory is
/// addressed by integers (CUdeviceptr), and generated code passes integers.
template <typename T = void> T *addressToPointer(uint64_t address) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  return reinterpret_cast<T *>(static_cast<uintptr_t>(address));
}

class CudaDevice;

/// The launch in progress on this thread: what the launcher's calls act on.
thread_local CudaDevice *current = nullptr;

class CudaDevice : public Device {
public:
  CudaDevice(int ordinal, bool graphs)
      : Device("cuda:" + std::to_string(ordinal)), ordinal_(ordinal),
        graphs_(graphs) {}

  ~CudaDevice() override {
    const Driver &d = driver();
    if (!context_)
      return;
    d.cuCtxSetCurrent(context_);
    if (compute_)
      d.cuStreamSynchronize(compute_);
    if (copy_)
      d.cuStreamSynchronize(copy_);
    for (Staging &s : staging_) {
      if (s.done)
        d.cuEventDestroy(s.done);
      if (s.host)
        d.cuMemFreeHost(s.host);
    }
    if (computeDone_)
      d.cuEventDestroy(computeDone_);
    for (CUevent e : timing_)
      if (e)
        d.cuEventDestroy(e);
    if (blas_)
      blas().destroy(blas_);
    dnn_.reset(); // while the context is current
    for (CUmodule m : modules_)
      d.cuModuleUnload(m);
    for (const Range &r : ranges_)
      d.cuMemFree(r.begin);
    if (compute_)
      d.cuStreamDestroy(compute_);
    if (copy_)
      d.cuStreamDestroy(copy_);
    d.cuDevicePrimaryCtxRelease(device_);
  }

  locus_status_t init(const void *ptx, size_t ptxSize) {
    const Driver &d = driver();
    if (CUresult rc = d.cuDeviceGet(&device_, ordinal_))
      return fail("cuDeviceGet", rc);
    if (CUresult rc = d.cuDevicePrimaryCtxRetain(&context_, device_))
      return fail("cuDevicePrimaryCtxRetain", rc);
    if (CUresult rc = d.cuCtxSetCurrent(context_))
      return fail("cuCtxSetCurrent", rc);
    if (CUresult rc = d.cuStreamCreate(&compute_, kStreamNonBlocking))
      return fail("cuStreamCreate", rc);
    if (CUresult rc = d.cuStreamCreate(&copy_, kStreamNonBlocking))
      return fail("cuStreamCreate", rc);
    if (CUresult rc = d.cuEventCreate(&computeDone_, kEventDisableTiming))
      return fail("cuEventCreate", rc);
    for (Staging &s : staging_)
      if (CUresult rc = d.cuEventCreate(&s.done, kEventDisableTiming))
        return fail("cuEventCreate", rc);
    return loadKernels(ptx, ptxSize);
  }

  bool canCapture() const override {
    const Driver &d = driver();
    return graphs_ && d.cuStreamBeginCapture && d.cuStreamEndCapture &&
           d.cuGraphInstantiateWithFlags && d.cuGraphLaunch &&
           d.cuGraphExecDestroy && d.cuGraphDestroy;
  }

  /// Registers the pages with the driver (portable, so every CUDA device
  /// copies straight from them); false, and nothing lost, if it refuses.
  bool pinHost(void *p, size_t bytes) override {
    std::lock_guard lock(mutex_);
    const Driver &d = driver();
    if (!d.cuMemHostRegister || !d.cuMemHostUnregister || !bytes || !ready())
      return false;
    if (d.cuMemHostRegister(p, bytes, kHostRegisterPortable) != kSuccess)
      return false;
    pinnedHost().add(p, bytes);
    return true;
  }

  void unpinHost(void *p) override {
    std::lock_guard lock(mutex_);
    pinnedHost().remove(p);
    if (driver().cuCtxSetCurrent(context_) == kSuccess) {
      driver().cuStreamSynchronize(compute_);
      driver().cuMemHostUnregister(p);
    }
  }

  void *allocate(size_t bytes) override {
    std::lock_guard lock(mutex_);
    const Driver &d = driver();
    if (!ready())
      return nullptr;
    CUdeviceptr p = 0;
    if (d.cuMemAlloc(&p, std::max<size_t>(bytes, 1)) != kSuccess)
      return nullptr;
    if (d.cuMemsetD8Async(p, 0, bytes, compute_) != kSuccess ||
        d.cuStreamSynchronize(compute_) != kSuccess) {
      d.cuMemFree(p);
      return nullptr;
    }
    Range r{p, p + bytes};
    ranges_.insert(std::upper_bound(ranges_.begin(), ranges_.end(), r), r);
    return addressToPointer(p);
  }

  void release(void *p) override {
    std::lock_guard lock(mutex_);
    auto at = reinterpret_cast<CUdeviceptr>(p);
    auto it = std::find_if(ranges_.begin(), ranges_.end(),
                           [&](const Range &r) { return r.begin == at; });
    if (it == ranges_.end())
      return;
    driver().cuCtxSetCurrent(context_);
    driver().cuStreamSynchronize(compute_);
    driver().cuMemFree(at);
    ranges_.erase(it);
  }

  bool owns(const void *p, size_t bytes) const override {
    std::lock_guard lock(mutex_);
    return holdsRange(ranges_, reinterpret_cast<CUdeviceptr>(p), bytes);
  }

  locus_status_t copyFrom(Device &from, const void *src, void *dst,
                          size_t bytes) override {
    if (dynamic_cast<CudaDevice *>(&from)) {
      std::lock_guard lock(mutex_);
      if (locus_status_t s = enter())
        return s;
      if (!bytes)
        return nullptr;
      // Unified addressing: the driver finds both devices.
      if (CUresult rc = driver().cuMemcpyAsync(
              reinterpret_cast<CUdeviceptr>(dst),
              reinterpret_cast<CUdeviceptr>(src), bytes, compute_))
        return fail("cuMemcpyAsync", rc);
      return nullptr;
    }
    return upload(src, dst, bytes);
  }

  /// Host to device through pinned staging on the copy stream: the copy
  /// waits for the compute issued so far (which may still read `dst`), and
  /// compute issued later waits for the copy. Two staging buffers: filling
  /// one waits only for the copy before the last.
  locus_status_t upload(const void *host, void *dst, size_t bytes) override {
    return copyIn(host, dst, bytes, /*afterCompute=*/true);
  }

  /// As upload, without waiting for the compute issued so far: `dst` is a
  /// batch slot no issued work reads (the batch runner's double buffer), so
  /// the copy overlaps the step now running.
  locus_status_t prefetch(const void *host, void *dst, size_t bytes) override {
    return copyIn(host, dst, bytes, /*afterCompute=*/false);
  }

  locus_status_t copyIn(const void *host, void *dst, size_t bytes,
                        bool afterCompute) {
    std::lock_guard lock(mutex_);
    if (locus_status_t s = enter())
      return s;
    const Driver &d = driver();
    const char *from = static_cast<const char *>(host);
    auto to = reinterpret_cast<CUdeviceptr>(dst);
    // Pinned host memory: one copy on the compute stream, in order with
    // the work around it, at link speed (a CUDA graph may hold it).
    if (afterCompute && bytes && pinnedHost().holds(host, bytes)) {
      if (CUresult rc = d.cuMemcpyHtoDAsync(to, host, bytes, compute_))
        return fail("cuMemcpyHtoDAsync", rc);
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
      std::memcpy(s.host, from, n);
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

  /// Device to host, after the compute issued so far; returns when the
  /// bytes are in `host`.
  locus_status_t download(const void *src, void *host, size_t bytes) override {
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

  /// Device to pageable host memory through both staging buffers: while
  /// the host copies one chunk out of one, the next chunk's DMA fills the
  /// other (before, each chunk's DMA and memcpy ran one after the other).
  locus_status_t downloadStaged(CUdeviceptr from, char *to, size_t bytes) {
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
      std::memcpy(to + at, s.host, std::min(kStagingBytes, bytes - at));
    }
    return nullptr;
  }

  locus_status_t launch(KernelFn launcher, void *const *buffers) override {
    std::lock_guard lock(mutex_);
    if (locus_status_t s = enter())
      return s;
    return launchEntered(launcher, buffers);
  }

  /// The launch between two timing events on the compute stream, waited
  /// for: what the GPU spent on the launcher's kernels and library calls.
  locus_status_t launchTimed(KernelFn launcher, void *const *buffers,
                             uint64_t &ns) override {
    std::lock_guard lock(mutex_);
    if (locus_status_t s = enter())
      return s;
    const Driver &d = driver();
    if (!d.cuEventElapsedTime)
      return Device::launchTimed(launcher, buffers, ns);
    for (CUevent &e : timing_)
      if (!e)
        if (CUresult rc = d.cuEventCreate(&e, 0))
          return fail("cuEventCreate", rc);
    if (CUresult rc = d.cuEventRecord(timing_[0], compute_))
      return fail("cuEventRecord", rc);
    if (locus_status_t s = launchEntered(launcher, buffers))
      return s;
    if (CUresult rc = d.cuEventRecord(timing_[1], compute_))
      return fail("cuEventRecord", rc);
    if (CUresult rc = d.cuEventSynchronize(timing_[1]))
      return fail("cuEventSynchronize", rc);
    float ms = 0;
    if (CUresult rc = d.cuEventElapsedTime(&ms, timing_[0], timing_[1]))
      return fail("cuEventElapsedTime", rc);
    ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    return nullptr;
  }

  /// Runs the launcher, with the lock held and the context current.
  locus_status_t launchEntered(KernelFn launcher, void *const *buffers) {
    current = this;
    launcher(buffers);
    current = nullptr;
    if (kept_) { // an exception in a locus_cuda_* call of the launcher
      locus_status_t s = kept_;
      kept_ = nullptr;
      pending_.clear();
      return s;
    }
    if (!pending_.empty()) {
      std::string what = std::move(pending_);
      pending_.clear();
      return makeStatus(pendingCode_, "%s: %s", name().c_str(), what.c_str());
    }
    return nullptr;
  }

  locus_status_t finish() override {
    std::lock_guard lock(mutex_);
    if (locus_status_t s = enter())
      return s;
    if (CUresult rc = driver().cuStreamSynchronize(compute_))
      return fail("cuStreamSynchronize", rc);
    return nullptr;
  }

  locus_status_t beginCapture() override {
    if (!canCapture()) // graphs turned off, or a driver without them
      return Device::beginCapture();
    mutex_.lock(); // held until endCapture: nothing else joins the graph
    if (locus_status_t s = enter()) {
      mutex_.unlock();
      return s;
    }
    if (CUresult rc =
            driver().cuStreamBeginCapture(compute_, kCaptureThreadLocal)) {
      mutex_.unlock();
      return fail("cuStreamBeginCapture", rc);
    }
    capturing_ = true;
    return nullptr;
  }

  locus_status_t endCapture(void **graph) override {
    const Driver &d = driver();
    CUgraph g = nullptr;
    capturing_ = false;
    CUresult rc = d.cuStreamEndCapture(compute_, &g);
    CUgraphExec exec = nullptr;
    if (rc == kSuccess)
      rc = d.cuGraphInstantiateWithFlags(&exec, g, 0);
    if (g)
      d.cuGraphDestroy(g);
    mutex_.unlock();
    if (rc != kSuccess)
      return fail("capturing a CUDA graph", rc);
    *graph = exec;
    return nullptr;
  }

  locus_status_t replay(void *graph) override {
    std::lock_guard lock(mutex_);
    if (locus_status_t s = enter())
      return s;
    if (CUresult rc =
            driver().cuGraphLaunch(static_cast<CUgraphExec>(graph), compute_))
      return fail("cuGraphLaunch", rc);
    return nullptr;
  }

  void releaseGraph(void *graph) override {
    if (graph) {
      driver().cuCtxSetCurrent(context_);
      driver().cuGraphExecDestroy(static_cast<CUgraphExec>(graph));
    }
  }

  // What launchers call (on this thread, inside launch()).
  void kernel(int64_t number, const int64_t *grid, const int64_t *block,
              int64_t shared, int64_t *slots, int64_t count) {
    if (!pending_.empty())
      return;
    if (number < 0 || static_cast<size_t>(number) >= functions_.size()) {
      pend(LOCUS_STATUS_INTERNAL, "launch of kernel " + std::to_string(number) +
                                      ", which the " +
                                      "artifact's PTX section does not have");
      return;
    }
    params_.resize(static_cast<size_t>(std::max<int64_t>(count, 0)));
    for (size_t i = 0; i < params_.size(); ++i)
      params_[i] = &slots[i];
    CUresult rc = driver().cuLaunchKernel(
        functions_[number], unsigned(grid[0]), unsigned(grid[1]),
        unsigned(grid[2]), unsigned(block[0]), unsigned(block[1]),
        unsigned(block[2]), unsigned(shared), compute_, params_.data(),
        nullptr);
    if (rc != kSuccess)
      pendDriver("launching " + kernelNames_[number], rc);
  }

  void sgemm(int64_t batch, int64_t m, int64_t n, int64_t k, uintptr_t a,
             int64_t lda, int64_t strideA, int32_t transA, uintptr_t b,
             int64_t ldb, int64_t strideB, int32_t transB, float beta,
             uintptr_t c, int64_t ldc, int64_t strideC, bool tf32) {
    if (!pending_.empty())
      return;
    const Blas &cb = blas();
    if (!cb.why.empty()) {
      pend(LOCUS_STATUS_UNAVAILABLE, "matrix product: " + cb.why);
      return;
    }
    if (!blas_) {
      if (cb.create(&blas_) != 0) {
        blas_ = nullptr;
        pend(LOCUS_STATUS_INTERNAL, "cublasCreate failed");
        return;
      }
    }
    if (cb.setStream(blas_, compute_) != 0) {
      pend(LOCUS_STATUS_INTERNAL, "cublasSetStream failed");
      return;
    }
    if (cb.setMathMode && tf32 != blasTf32_) {
      if (cb.setMathMode(blas_, tf32 ? kTf32Math : kDefaultMath) != 0) {
        pend(LOCUS_STATUS_INTERNAL, "cublasSetMathMode failed");
        return;
      }
      blasTf32_ = tf32;
    }
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
    // the operands swap, the transposes stay.
    const float one = 1.0f;
    int opB = transB ? kOpT : kOpN, opA = transA ? kOpT : kOpN;
    int status;
    if (batch == 1)
      status = cb.sgemm(blas_, opB, opA, int(n), int(m), int(k), &one,
                        addressToPointer<const float>(b), int(ldb),
                        addressToPointer<const float>(a), int(lda), &beta,
                        addressToPointer<float>(c), int(ldc));
    else
      status = cb.sgemmStridedBatched(
          blas_, opB, opA, int(n), int(m), int(k), &one,
          addressToPointer<const float>(b), int(ldb), strideB,
          addressToPointer<const float>(a), int(lda), strideA, &beta,
          addressToPointer<float>(c), int(ldc), strideC, int(batch));
    if (status != 0)
      pend(LOCUS_STATUS_INTERNAL,
           "cuBLAS sgemm failed with status " + std::to_string(status));
  }

  /// Whether convolutions run through cuDNN here (the handle is made on
  /// the first call, inside the first launch that asks).
  bool dnnReady() {
    if (!pending_.empty())
      return false;
    std::string why;
    return dnn_->ready(why);
  }

  void conv(int64_t kind, const int64_t *params, uintptr_t a, uintptr_t b,
            uintptr_t bias, uintptr_t y) {
    if (!pending_.empty())
      return;
    std::string why;
    if (!dnn_->ready(why)) { // a launcher asks dnnReady() first
      pend(LOCUS_STATUS_INTERNAL, "convolution: " + why);
      return;
    }
    cudnn::Workspace workspace{[this](size_t n) { return alloc(n); },
                               [this](void *p) { free(p); }};
    std::string failed =
        dnn_->run(compute_, kind, params, a, b, bias, y, workspace);
    if (!failed.empty())
      pend(LOCUS_STATUS_INTERNAL, "convolution through cuDNN: " + failed);
  }

  void *alloc(size_t bytes) {
    const Driver &d = driver();
    CUdeviceptr p = 0;
    CUresult rc =
        d.cuMemAllocAsync
            ? d.cuMemAllocAsync(&p, std::max<size_t>(bytes, 1), compute_)
            : d.cuMemAlloc(&p, std::max<size_t>(bytes, 1));
    if (rc != kSuccess) {
      if (pending_.empty())
        pendDriver("allocating " + std::to_string(bytes) +
                       " bytes of kernel temporaries",
                   rc);
      return nullptr;
    }
    return addressToPointer(p);
  }

  /// Keeps the status of an exception in a locus_cuda_* call (the first
  /// one): the launch in progress returns it.
  void keep(locus_status_t status) noexcept {
    if (kept_)
      locus_status_free(status);
    else
      kept_ = status;
  }

  void free(void *p) {
    if (!p)
      return;
    const Driver &d = driver();
    auto at = reinterpret_cast<CUdeviceptr>(p);
    if (d.cuMemFreeAsync)
      d.cuMemFreeAsync(at, compute_);
    else
      d.cuMemFree(at);
  }

private:
  static constexpr size_t kStagingBytes = size_t(8) << 20;

  struct Range {
    CUdeviceptr begin, end;
    bool operator<(const Range &o) const { return begin < o.begin; }
  };
  struct Staging {
    void *host = nullptr;
    CUevent done = nullptr;
  };

  /// Gives a staging buffer its pinned memory (once).
  locus_status_t pin(Staging &s) {
    if (s.host)
      return nullptr;
    if (CUresult rc = driver().cuMemHostAlloc(&s.host, kStagingBytes, 0)) {
      s.host = nullptr;
      return fail("cuMemHostAlloc", rc);
    }
    return nullptr;
  }

  bool ready() {
    return lost_.empty() && driver().cuCtxSetCurrent(context_) == kSuccess;
  }

  /// Makes the context current on this thread; fails once it is lost.
  locus_status_t enter() {
    if (!lost_.empty())
      return makeStatus(LOCUS_STATUS_INTERNAL,
                        "%s is unusable after an earlier error: %s",
                        name().c_str(), lost_.c_str());
    if (CUresult rc = driver().cuCtxSetCurrent(context_))
      return fail("cuCtxSetCurrent", rc);
    return nullptr;
  }

  /// A status for a failed driver call. Errors other than out-of-memory
  /// and not-supported may have lost the context: later calls report it.
  locus_status_t fail(const char *what, CUresult rc) {
    std::string text = driver().error(rc);
    if (rc == kOutOfMemory) {
      size_t free = 0, total = 0;
      driver().cuMemGetInfo(&free, &total);
      return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                        "%s: %s: %s (%zu of %zu MiB free)", name().c_str(),
                        what, text.c_str(), free >> 20, total >> 20);
    }
    if (rc != kNotSupported && context_)
      lost_ = std::string(what) + ": " + text;
    return makeStatus(LOCUS_STATUS_INTERNAL, "%s: %s: %s", name().c_str(), what,
                      text.c_str());
  }

  void pend(locus_status_code_t code, std::string what) {
    if (!pending_.empty())
      return;
    pending_ = std::move(what);
    pendingCode_ = code;
  }

  void pendDriver(const std::string &what, CUresult rc) {
    std::string text = driver().error(rc);
    if (rc == kOutOfMemory) {
      pend(LOCUS_STATUS_OUT_OF_MEMORY, what + ": " + text);
      return;
    }
    lost_ = what + ": " + text;
    pend(LOCUS_STATUS_INTERNAL, what + ": " + text);
  }

  locus_status_t loadKernels(const void *data, size_t size) {
    const auto *p = static_cast<const unsigned char *>(data);
    size_t at = 0;
    auto u32 = [&](uint32_t &v) {
      if (size - at < 4)
        return false;
      v = uint32_t(p[at]) | uint32_t(p[at + 1]) << 8 |
          uint32_t(p[at + 2]) << 16 | uint32_t(p[at + 3]) << 24;
      at += 4;
      return true;
    };
    auto str = [&](std::string &s) {
      uint32_t n;
      if (!u32(n) || size - at < n)
        return false;
      s.assign(reinterpret_cast<const char *>(p + at), n);
      at += n;
      return true;
    };
    if (!data || size == 0)
      return nullptr;
    uint32_t magic = 0, version = 0, count = 0;
    if (!u32(magic) || !u32(version) || !u32(count) || magic != LOCUS_PTX_MAGIC)
      return makeStatus(LOCUS_STATUS_DATA_LOSS, "the PTX section is damaged");
    if (version != LOCUS_PTX_VERSION)
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "the PTX section is version %u; this runtime reads %u",
                        version, LOCUS_PTX_VERSION);
    const Driver &d = driver();
    for (uint32_t i = 0; i < count; ++i) {
      std::string kernel, ptx;
      if (!str(kernel) || !str(ptx) || ptx.empty() || ptx.back() != '\0')
        return makeStatus(LOCUS_STATUS_DATA_LOSS,
                          "the PTX section is damaged at kernel %u", i);
      CUmodule module = nullptr;
      if (CUresult rc = d.cuModuleLoadData(&module, ptx.data()))
        return makeStatus(rc == kOutOfMemory ? LOCUS_STATUS_OUT_OF_MEMORY
                                             : LOCUS_STATUS_UNAVAILABLE,
                          "%s: loading the PTX of %s: %s", name().c_str(),
                          kernel.c_str(), d.error(rc).c_str());
      modules_.push_back(module);
      CUfunction fn = nullptr;
      if (CUresult rc = d.cuModuleGetFunction(&fn, module, kernel.c_str()))
        return makeStatus(LOCUS_STATUS_DATA_LOSS, "%s: no kernel %s: %s",
                          name().c_str(), kernel.c_str(), d.error(rc).c_str());
      functions_.push_back(fn);
      kernelNames_.push_back(kernel);
    }
    return nullptr;
  }

  int ordinal_;
  bool graphs_;
  bool capturing_ = false; // between beginCapture and endCapture
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream compute_ = nullptr, copy_ = nullptr;
  CUevent computeDone_ = nullptr;
  CUevent timing_[2] = {nullptr, nullptr}; // LOCUS_PROFILE=1, made once
  std::vector<Staging> staging_ = std::vector<Staging>(2);
  size_t next_ = 0;
  cublasHandle_t blas_ = nullptr;
  bool blasTf32_ = false; // the handle's math mode: TF32 allowed
  std::unique_ptr<cudnn::Convolutions> dnn_ =
      std::make_unique<cudnn::Convolutions>();
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
  std::vector<std::string> kernelNames_;
  mutable std::recursive_mutex mutex_;
  std::vector<Range> ranges_;
  std::vector<void *> params_;    // scratch: a launch's parameter pointers
  std::string lost_;              // why the context is unusable
  std::string pending_;           // the first error of the launch in progress
  locus_status_t kept_ = nullptr; // the first exception of that launch
  locus_status_code_t pendingCode_ = LOCUS_STATUS_INTERNAL;
};

} // namespace

std::vector<std::string> cudaDeviceNames(std::string &why) {
  const Driver &d = driver();
  std::vector<std::string> names;
  if (!d.why.empty()) {
    why = d.why;
    return names;
  }
  for (int i = 0; i < d.count; ++i) {
    CUdevice device = 0;
    char name[128] = "unnamed CUDA device";
    if (d.cuDeviceGet(&device, i) == kSuccess)
      d.cuDeviceGetName(name, sizeof name, device);
    names.emplace_back(name);
  }
  return names;
}

bool cudaUsable(int ordinal, std::string &why) {
  const Driver &d = driver();
  if (!d.why.empty()) {
    why = d.why;
    return false;
  }
  if (ordinal >= d.count) {
    why = "this machine has " + std::to_string(d.count) + " CUDA device" +
          (d.count == 1 ? "" : "s") +
          "; map it to one with a device map "
          "(cuda:" +
          std::to_string(ordinal) + "=cuda:0)";
    return false;
  }
  return true;
}

std::string convolutionPath() {
  if (cudnn::library())
    return cudnn::describe();
  return "generated kernels (" + cudnn::describe() + ")";
}

std::unique_ptr<Device> makeCudaDevice(int ordinal, const void *ptx,
                                       size_t ptxSize, bool graphs,
                                       locus_status_t &status) {
  status = nullptr;
  std::string why;
  if (!cudaUsable(ordinal, why)) {
    status = makeStatus(LOCUS_STATUS_UNAVAILABLE, "cuda:%d: %s", ordinal,
                        why.c_str());
    return nullptr;
  }
  auto device = std::make_unique<CudaDevice>(ordinal, graphs);
  status = device->init(ptx, ptxSize);
  if (status)
    return nullptr;
  return device;
}

} // namespace locus::rt

using locus::rt::current;

namespace {

/// Runs `body` on the device of the launch in progress. Never throws: the
/// status of an exception is kept and returned by that launch.
template <typename Body> void onCurrent(const char *entry, Body &&body) {
  if (!current)
    std::abort(); // only launchers call this, and only inside launch()
  locus::rt::guardVoid(
      entry, [&] { body(*current); },
      [](locus_status_t s) { current->keep(s); });
}

} // namespace

extern "C" {

void locus_cuda_launch(int64_t kernel, int64_t gx, int64_t gy, int64_t gz,
                       int64_t bx, int64_t by, int64_t bz, int64_t shared,
                       int64_t args, int64_t count) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    int64_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    d.kernel(kernel, grid, block, shared,
             locus::rt::addressToPointer<int64_t>(static_cast<uint64_t>(args)),
             count);
  });
}

void locus_cuda_sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                      uintptr_t a, int64_t lda, int64_t stride_a,
                      int32_t trans_a, uintptr_t b, int64_t ldb,
                      int64_t stride_b, int32_t trans_b, float beta,
                      uintptr_t c, int64_t ldc, int64_t stride_c) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.sgemm(batch, m, n, k, a, lda, stride_a, trans_a, b, ldb, stride_b,
            trans_b, beta, c, ldc, stride_c, /*tf32=*/false);
  });
}

void locus_cuda_sgemm_tf32(int64_t batch, int64_t m, int64_t n, int64_t k,
                           uintptr_t a, int64_t lda, int64_t stride_a,
                           int32_t trans_a, uintptr_t b, int64_t ldb,
                           int64_t stride_b, int32_t trans_b, float beta,
                           uintptr_t c, int64_t ldc, int64_t stride_c) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.sgemm(batch, m, n, k, a, lda, stride_a, trans_a, b, ldb, stride_b,
            trans_b, beta, c, ldc, stride_c, /*tf32=*/true);
  });
}

int32_t locus_cuda_dnn_ready(void) {
  int32_t ready = 0;
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) { ready = d.dnnReady(); });
  return ready;
}

void locus_cuda_conv2d(int64_t kind, uintptr_t params, uintptr_t a, uintptr_t b,
                       uintptr_t bias, uintptr_t y) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.conv(kind, locus::rt::addressToPointer<const int64_t>(params), a, b, bias,
           y);
  });
}

/// NULL, and the launch fails, on an exception too.
void *locus_cuda_alloc(size_t bytes) {
  void *p = nullptr;
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) { p = d.alloc(bytes); });
  return p;
}

void locus_cuda_free(void *p) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) { d.free(p); });
}

} // extern "C"
