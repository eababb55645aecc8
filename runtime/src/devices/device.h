// device.h - what the executor needs of a device: the one interface every
// device implements.
//
// The executor never touches device memory itself: it asks the device that
// owns it to allocate, copy, launch, and move bytes to and from the host.
// One folder per device: devices/cpu (host memory, HostDevice), devices/sim
// (host memory standing in for a GPU) and devices/cuda (the driver API).
// tests/unit/DeviceConformanceTest.cpp holds every device to this contract.
#ifndef LOCUS_RUNTIME_DEVICE_H
#define LOCUS_RUNTIME_DEVICE_H

#include "locus/locus_runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace locus::rt {

class Comm;

/// A kernel's host entry point: its buffers in plan order.
using KernelFn = void (*)(void *const *buffers);

class Device {
public:
  explicit Device(std::string name) : name_(std::move(name)) {}
  virtual ~Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// "cpu", "sim", "cuda:1": what this machine runs it as.
  const std::string &name() const { return name_; }
  /// Whether it stands in for a GPU (counted as such).
  virtual bool simulated() const { return false; }

  /// Zeroed memory of this device, 64-byte aligned; null when out of
  /// memory. Size 0 gives a valid pointer too.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *p) = 0;
  /// Whether [p, p + bytes) lies in memory of this device.
  virtual bool owns(const void *p, size_t bytes) const = 0;

  /// Copies between memory of `from` and of this device (a plan copy).
  virtual locus_status_t copyFrom(Device &from, const void *src, void *dst,
                                  size_t bytes) = 0;
  /// Host memory to this device's and back (inputs, outputs, state).
  virtual locus_status_t upload(const void *host, void *dst, size_t bytes) = 0;
  virtual locus_status_t download(const void *src, void *host,
                                  size_t bytes) = 0;
  /// Host memory to a buffer that no work issued so far touches (a batch
  /// runner's double-buffered slot): on cuda the copy runs alongside the
  /// step now running; later work still waits for it.
  virtual locus_status_t prefetch(const void *host, void *dst, size_t bytes) {
    return upload(host, dst, bytes);
  }
  /// Runs a kernel on buffers of this device: its host version on cpu and
  /// sim, its launcher on cuda.
  virtual locus_status_t launch(KernelFn kernel, void *const *buffers) = 0;
  /// As launch, and the time the kernel took on the device in `ns`
  /// (LOCUS_PROFILE=1): on cpu and sim the host clock around it; on cuda
  /// CUDA events recorded around it on the stream, waited for, so the time
  /// is the GPU's, not the launch's.
  virtual locus_status_t launchTimed(KernelFn kernel, void *const *buffers,
                                     uint64_t &ns);
  /// Waits until everything issued to this device is done (end of a run).
  virtual locus_status_t finish() { return nullptr; }

  /// Page-locks host memory [p, p + bytes) (page-aligned, whole pages) for
  /// copies between it and this device: they go straight to the device at
  /// link speed, without staging, and a CUDA graph may hold them. False
  /// where the device cannot; then nothing changed, and copies stage.
  virtual bool pinHost(void *p, size_t bytes) {
    (void)p;
    (void)bytes;
    return false;
  }
  /// Undoes pinHost or pinUserHost, before the memory is released.
  virtual void unpinHost(void *p) { (void)p; }
  /// Page-locks host memory a user keeps (locus_model_register_host), any
  /// alignment: copies between it and this device then go straight, and
  /// an upload from it is waited for (the caller may reuse it once
  /// set_input returns). Memory page-locked before (cudaHostRegister,
  /// cudaMallocHost) counts as pinned and stays so after unpinHost.
  /// `pinned` false where the device has no such copies (cpu, sim); a
  /// status, nothing pinned, when it has them and the driver refuses.
  virtual locus_status_t pinUserHost(void *p, size_t bytes, bool &pinned) {
    (void)p;
    (void)bytes;
    pinned = false;
    return nullptr;
  }

  /// CUDA graphs: whether this device can record a step's launches and
  /// copies once and replay them. Between beginCapture and endCapture the
  /// executor issues the step as usual; nothing runs until replay. A
  /// launch's `buffers` array stays valid as long as its graph does, and a
  /// copy's host memory is pinned (pinHost).
  virtual bool canCapture() const { return false; }
  virtual locus_status_t beginCapture();
  virtual locus_status_t endCapture(void **graph);
  virtual locus_status_t replay(void *graph);
  virtual void releaseGraph(void *graph) { (void)graph; }

  /// One buffer of a data-parallel all-reduce: `count` floats of `in`
  /// summed over the ranks into `out`.
  struct ReducePart {
    const void *in;
    void *out;
    size_t count;
  };
  /// Joins `comm`'s job for all-reduces in this device's own order of work
  /// (a GPU: an NCCL communicator), where it can; every rank calls it at
  /// the same point of the join.
  virtual locus_status_t joinCollectives(Comm &comm) {
    (void)comm;
    return nullptr;
  }
  /// Reduces `parts` over the ranks of the job joined above, in this
  /// device's own order of work, and returns true with its status; false,
  /// with nothing done, where the parts must go through host memory and
  /// the communicator instead.
  virtual bool allReduceHere(const std::vector<ReducePart> &parts, bool mean,
                             locus_status_t &status) {
    (void)parts, (void)mean, (void)status;
    return false;
  }

private:
  std::string name_;
};

/// The device for a target name: "cpu" or "sim" (devices/cpu, devices/sim);
/// null for others (devices/cuda/cuda_device.h makes CUDA devices).
std::unique_ptr<Device> makeDevice(const std::string &target);

} // namespace locus::rt

#endif
