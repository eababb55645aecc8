// device.cpp - what every device shares: the defaults of the interface and
// the factory of the host-memory devices.

#include "devices/device.h"

#include "devices/cpu/host_device.h"
#include "devices/sim/sim_device.h"
#include "status_impl.h"

#include <chrono>

namespace locus::rt {

locus_status_t Device::launchTimed(KernelFn kernel, void *const *buffers,
                                   uint64_t &ns) {
  auto start = std::chrono::steady_clock::now();
  locus_status_t s = launch(kernel, buffers);
  ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start)
          .count());
  return s;
}

locus_status_t Device::beginCapture() {
  return makeStatus(LOCUS_STATUS_UNAVAILABLE, "%s cannot capture graphs",
                    name().c_str());
}
locus_status_t Device::endCapture(void **) { return beginCapture(); }
locus_status_t Device::replay(void *) { return beginCapture(); }

std::unique_ptr<Device> makeDevice(const std::string &target) {
  if (target == "cpu")
    return makeCpuDevice();
  if (target == "sim")
    return makeSimDevice();
  return nullptr;
}

} // namespace locus::rt
