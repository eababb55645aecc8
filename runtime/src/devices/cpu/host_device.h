// host_device.h - devices whose memory is host memory: `cpu`, and `sim`
// (devices/sim), which stands in for a GPU.
#ifndef LOCUS_RUNTIME_HOST_DEVICE_H
#define LOCUS_RUNTIME_HOST_DEVICE_H

#include "devices/device.h"

#include <shared_mutex>
#include <vector>

namespace locus::rt {

/// A device whose memory is host memory. It keeps a table of its
/// allocations, against which `owns` checks every buffer of every launch.
class HostDevice : public Device {
public:
  explicit HostDevice(std::string name) : Device(std::move(name)) {}
  ~HostDevice() override;

  void *allocate(size_t bytes) override;
  /// As allocate, in whole pages of its own (page-aligned, the size rounded
  /// up to pages): memory another device may pin (Device::pinHost).
  void *allocatePages(size_t bytes);
  /// The size allocatePages gives `bytes`.
  static size_t pageBytes(size_t bytes);
  void release(void *p) override;
  bool owns(const void *p, size_t bytes) const override;
  locus_status_t copyFrom(Device &from, const void *src, void *dst,
                          size_t bytes) override;
  locus_status_t upload(const void *host, void *dst, size_t bytes) override;
  locus_status_t download(const void *src, void *host, size_t bytes) override;
  locus_status_t launch(KernelFn kernel, void *const *buffers) override;

private:
  struct Range {
    const char *begin, *end;
    void *raw;         // what calloc or mmap returned
    size_t mapped = 0; // mmap's length (0: calloc's)
    bool operator<(const Range &o) const {
      return begin < o.begin || (begin == o.begin && end < o.end);
    }
  };
  void *record(char *start, size_t bytes, void *raw, size_t mapped);
  static void giveBack(const Range &r);

  mutable std::shared_mutex mutex_;
  std::vector<Range> ranges_;
};

/// The `cpu` device: host kernels on host memory.
std::unique_ptr<Device> makeCpuDevice();

/// memcpy between host buffers, over the runtime's threads when it is
/// large (1 MiB or more, an equal share of at least 256 KiB a thread).
void copyHostBytes(void *dst, const void *src, size_t bytes);

} // namespace locus::rt

#endif
