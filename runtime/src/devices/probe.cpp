// probe.cpp - which devices this machine has (locus_device_probe).
//
// CUDA is looked up at run time: dlopen("libcuda.so.1") and the few driver
// entry points needed to count and name devices. A binary that never links the
// driver starts everywhere and reports why CUDA is absent.

#include "guard.h"
#include "status_impl.h"

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using locus::rt::makeStatus;

struct locus_device_report_s {
  std::vector<locus_device_info_t> devices;
  std::string cudaNote;
};

namespace {

// The driver API's types, as far as the probe needs them.
using CUresult = int;
using CUdevice = int;
using cuInit_t = CUresult (*)(unsigned);
using cuDeviceGetCount_t = CUresult (*)(int *);
using cuDeviceGet_t = CUresult (*)(CUdevice *, int);
using cuDeviceGetName_t = CUresult (*)(char *, int, CUdevice);
using cuGetErrorName_t = CUresult (*)(CUresult, const char **);

void setName(locus_device_info_t &info, const std::string &name) {
  std::strncpy(info.name, name.c_str(), sizeof info.name - 1);
  info.name[sizeof info.name - 1] = '\0';
}

std::string errorName(cuGetErrorName_t getName, CUresult code) {
  const char *name = nullptr;
  if (getName && getName(code, &name) == 0 && name)
    return name;
  return "error " + std::to_string(code);
}

/// Appends the CUDA devices, or explains in `note` why there are none.
void probeCuda(std::vector<locus_device_info_t> &devices, std::string &note) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    const char *why = dlerror();
    note = std::string("no CUDA driver (") + (why ? why : "libcuda.so.1") + ")";
    return;
  }
  auto init = reinterpret_cast<cuInit_t>(dlsym(driver, "cuInit"));
  auto getCount =
      reinterpret_cast<cuDeviceGetCount_t>(dlsym(driver, "cuDeviceGetCount"));
  auto get = reinterpret_cast<cuDeviceGet_t>(dlsym(driver, "cuDeviceGet"));
  auto getName =
      reinterpret_cast<cuDeviceGetName_t>(dlsym(driver, "cuDeviceGetName"));
  auto getErrorName =
      reinterpret_cast<cuGetErrorName_t>(dlsym(driver, "cuGetErrorName"));
  if (!init || !getCount || !get || !getName) {
    note = "the CUDA driver lacks cuInit/cuDeviceGetCount/cuDeviceGet/"
           "cuDeviceGetName";
    return; // keep the library loaded: unloading a driver is not safe
  }
  if (CUresult rc = init(0)) {
    note = "cuInit failed: " + errorName(getErrorName, rc);
    return;
  }
  int count = 0;
  if (CUresult rc = getCount(&count)) {
    note = "cuDeviceGetCount failed: " + errorName(getErrorName, rc);
    return;
  }
  if (count == 0) {
    note = "the CUDA driver reports no device";
    return;
  }
  for (int i = 0; i < count; ++i) {
    locus_device_info_t info{};
    info.kind = LOCUS_DEVICE_CUDA;
    info.index = i;
    CUdevice device = 0;
    char name[128] = "unnamed CUDA device";
    if (get(&device, i) == 0)
      getName(name, sizeof name, device);
    setName(info, name);
    devices.push_back(info);
  }
}

} // namespace

extern "C" {

locus_status_t locus_device_probe(locus_device_report_t **out_report) {
  LOCUS_GUARD({
    if (!out_report)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_device_probe: out_report is NULL");
    *out_report = nullptr;
    auto report = std::make_unique<locus_device_report_s>();
    locus_device_info_t cpu{};
    cpu.kind = LOCUS_DEVICE_CPU;
    cpu.index = 0;
    setName(cpu, "cpu (" + std::to_string(std::thread::hardware_concurrency()) +
                     " threads)");
    report->devices.push_back(cpu);
    probeCuda(report->devices, report->cudaNote);
    *out_report = report.release();
    return nullptr;
  });
}

void locus_device_report_release(locus_device_report_t *report) {
  delete report;
}

size_t locus_device_report_count(const locus_device_report_t *report) {
  return report ? report->devices.size() : 0;
}

locus_status_t locus_device_report_get(const locus_device_report_t *report,
                                       size_t i,
                                       locus_device_info_t *out_info) {
  LOCUS_GUARD({
    if (!report || !out_info)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_device_report_get: NULL argument");
    if (i >= report->devices.size())
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_device_report_get: device %zu of %zu", i,
                        report->devices.size());
    *out_info = report->devices[i];
    return nullptr;
  });
}

const char *locus_device_report_cuda_note(const locus_device_report_t *report) {
  return report ? report->cudaNote.c_str() : "";
}

} // extern "C"
