// sim_device.h - the `sim` device: a stand-in for a GPU.
#ifndef LOCUS_RUNTIME_SIM_DEVICE_H
#define LOCUS_RUNTIME_SIM_DEVICE_H

#include "devices/device.h"

#include <memory>

namespace locus::rt {

/// The `sim` device: it runs the host version of each kernel placed on a
/// GPU, in host memory of its own, and is counted as a GPU (sim_launches).
/// Like a GPU's MMU, the executor's check of every launch against `owns`
/// fails a kernel that touches memory of another device. With `graphs`,
/// it captures and replays steps as a CUDA device does.
std::unique_ptr<Device> makeSimDevice(bool graphs = false);

} // namespace locus::rt

#endif
