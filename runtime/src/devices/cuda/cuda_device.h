// cuda_device.h - the `cuda` device: NVIDIA GPUs through the driver API and
// cuBLAS, both loaded with dlopen, so a binary starts and runs on the CPU
// where there is no driver.
#ifndef LOCUS_RUNTIME_CUDA_H
#define LOCUS_RUNTIME_CUDA_H

#include "devices/device.h"

#include <memory>
#include <string>
#include <vector>

namespace locus::rt {

/// The names of this machine's CUDA devices, in ordinal order; none, with
/// `why`, when the driver is absent, lacks an entry point the device uses,
/// fails to start or reports no device.
std::vector<std::string> cudaDeviceNames(std::string &why);

/// Whether cuda:`ordinal` can run here; `why` says why not.
bool cudaUsable(int ordinal, std::string &why);

/// How a CUDA device runs convolutions: "cuDNN 9.x.y (<path>)", or
/// "generated kernels (no cuDNN (<why>))".
std::string convolutionPath();

/// Whether NCCL loads (data-parallel all-reduces of CUDA buffers go
/// through it), and "NCCL 2.28.9 (<path>)" or "no NCCL (<why>)".
bool ncclAvailable();
std::string ncclPath();

/// The device cuda:`ordinal` with the kernels of a PTX section (locus/abi.h)
/// loaded; null with `status` set when it cannot be made.
std::unique_ptr<Device> makeCudaDevice(int ordinal, const void *ptx,
                                       size_t ptxSize, bool graphs,
                                       locus_status_t &status);

} // namespace locus::rt

#endif
