// device.cpp - the `cuda` device: making it (the context, streams and
// kernels), its memory, and how driver errors become statuses.
//
// Errors: every driver result is checked; a failure becomes a status that
// names the call and the driver's error. Out of memory is OUT_OF_MEMORY and
// leaves the device usable; a failed launch is INTERNAL and, when the
// driver reports the context as lost (e.g. an illegal address), every later
// call on this device fails with the first error instead of running.

#include "devices/cuda/device.h"

#include "devices/cuda/cuda_device.h"
#include "devices/ranges.h"

#include "locus/abi.h"
#include "status_impl.h"

#include <algorithm>

namespace locus::rt {

CudaDevice::CudaDevice(int ordinal, bool graphs)
    : Device("cuda:" + std::to_string(ordinal)), ordinal_(ordinal),
      graphs_(graphs) {}

CudaDevice::~CudaDevice() {
  const Driver &d = driver();
  if (!context_)
    return;
  d.cuCtxSetCurrent(context_);
  if (compute_)
    d.cuStreamSynchronize(compute_);
  if (copy_)
    d.cuStreamSynchronize(copy_);
  nccl_.reset(); // while the context is there
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

locus_status_t CudaDevice::init(const void *ptx, size_t ptxSize) {
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

bool CudaDevice::pinHost(void *p, size_t bytes) {
  std::lock_guard lock(mutex_);
  const Driver &d = driver();
  if (!d.cuMemHostRegister || !d.cuMemHostUnregister || !bytes || !ready())
    return false;
  if (d.cuMemHostRegister(p, bytes, kHostRegisterPortable) != kSuccess)
    return false;
  pinnedHost().add(p, bytes);
  return true;
}

locus_status_t CudaDevice::pinUserHost(void *p, size_t bytes, bool &pinned) {
  std::lock_guard lock(mutex_);
  pinned = false;
  const Driver &d = driver();
  if (!d.cuMemHostRegister || !d.cuMemHostUnregister)
    return nullptr;
  if (locus_status_t s = enter())
    return s;
  CUresult rc = d.cuMemHostRegister(p, bytes, kHostRegisterPortable);
  if (rc != kSuccess && rc != kHostMemoryAlreadyRegistered)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "%s: the driver could not page-lock %zu bytes at %p "
                      "(cuMemHostRegister: %s); copies of them stage",
                      name().c_str(), bytes, p, d.error(rc).c_str());
  pinnedHost().add(p, bytes,
                   rc == kSuccess ? PinnedHost::Owner::user
                                  : PinnedHost::Owner::foreign);
  pinned = true;
  return nullptr;
}

void CudaDevice::unpinHost(void *p) {
  std::lock_guard lock(mutex_);
  if (pinnedHost().remove(p))
    return; // page-locked by someone else, who unlocks it
  if (driver().cuCtxSetCurrent(context_) == kSuccess) {
    driver().cuStreamSynchronize(compute_);
    driver().cuMemHostUnregister(p);
  }
}

void *CudaDevice::allocate(size_t bytes) {
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

void CudaDevice::release(void *p) {
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

bool CudaDevice::owns(const void *p, size_t bytes) const {
  std::lock_guard lock(mutex_);
  return holdsRange(ranges_, reinterpret_cast<CUdeviceptr>(p), bytes);
}

void CudaDevice::keep(locus_status_t status) noexcept {
  if (kept_)
    locus_status_free(status);
  else
    kept_ = status;
}

bool CudaDevice::ready() {
  return lost_.empty() && driver().cuCtxSetCurrent(context_) == kSuccess;
}

locus_status_t CudaDevice::enter() {
  if (!lost_.empty())
    return makeStatus(LOCUS_STATUS_INTERNAL,
                      "%s is unusable after an earlier error: %s",
                      name().c_str(), lost_.c_str());
  if (CUresult rc = driver().cuCtxSetCurrent(context_))
    return fail("cuCtxSetCurrent", rc);
  return nullptr;
}

locus_status_t CudaDevice::fail(const char *what, CUresult rc) {
  std::string text = driver().error(rc);
  if (rc == kOutOfMemory) {
    size_t free = 0, total = 0;
    driver().cuMemGetInfo(&free, &total);
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "%s: %s: %s (%zu of %zu MiB free)", name().c_str(), what,
                      text.c_str(), free >> 20, total >> 20);
  }
  if (rc != kNotSupported && context_)
    lost_ = std::string(what) + ": " + text;
  return makeStatus(LOCUS_STATUS_INTERNAL, "%s: %s: %s", name().c_str(), what,
                    text.c_str());
}

void CudaDevice::pend(locus_status_code_t code, std::string what) {
  if (!pending_.empty())
    return;
  pending_ = std::move(what);
  pendingCode_ = code;
}

void CudaDevice::pendDriver(const std::string &what, CUresult rc) {
  std::string text = driver().error(rc);
  if (rc == kOutOfMemory) {
    pend(LOCUS_STATUS_OUT_OF_MEMORY, what + ": " + text);
    return;
  }
  lost_ = what + ": " + text;
  pend(LOCUS_STATUS_INTERNAL, what + ": " + text);
}

locus_status_t CudaDevice::loadKernels(const void *data, size_t size) {
  const auto *p = static_cast<const unsigned char *>(data);
  size_t at = 0;
  auto u32 = [&](uint32_t &v) {
    if (size - at < 4)
      return false;
    v = uint32_t(p[at]) | uint32_t(p[at + 1]) << 8 | uint32_t(p[at + 2]) << 16 |
        uint32_t(p[at + 3]) << 24;
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

bool ncclAvailable() { return nccl::library() != nullptr; }

std::string ncclPath() { return nccl::describe(); }

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
