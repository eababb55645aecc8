// probe.cpp - which devices this machine has (locus_device_probe).
//
// CUDA is looked up at run time through the cuda device's driver table
// (dlopen("libcuda.so.1"), devices/cuda/driver.cpp). A binary that
// never links the driver starts everywhere and reports why CUDA is absent.

#include "devices/cuda/cuda_device.h"
#include "guard.h"
#include "status_impl.h"

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

void setName(locus_device_info_t &info, const std::string &name) {
  std::strncpy(info.name, name.c_str(), sizeof info.name - 1);
  info.name[sizeof info.name - 1] = '\0';
}

/// Appends the CUDA devices, or explains in `note` why there are none:
/// what the cuda device itself sees (one table of driver entry points, so
/// the probe never lists a GPU the device could not use).
void probeCuda(std::vector<locus_device_info_t> &devices, std::string &note) {
  std::vector<std::string> names = locus::rt::cudaDeviceNames(note);
  for (size_t i = 0; i < names.size(); ++i) {
    locus_device_info_t info{};
    info.kind = LOCUS_DEVICE_CUDA;
    info.index = static_cast<int32_t>(i);
    setName(info, names[i]);
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
