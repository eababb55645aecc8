// sim_device.cpp - the `sim` device.

#include "devices/sim/sim_device.h"

#include "devices/cpu/host_device.h"

namespace locus::rt {

namespace {

/// Host memory of its own, counted as a GPU.
class SimDevice : public HostDevice {
public:
  SimDevice() : HostDevice("sim") {}
  bool simulated() const override { return true; }
};

} // namespace

std::unique_ptr<Device> makeSimDevice() {
  return std::make_unique<SimDevice>();
}

} // namespace locus::rt
