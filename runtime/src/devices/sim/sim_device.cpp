// sim_device.cpp - the `sim` device.

#include "devices/sim/sim_device.h"

#include "devices/cpu/host_device.h"

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace locus::rt {

namespace {

/// Host memory of its own, counted as a GPU. It captures a step as a CUDA
/// device does: between beginCapture and endCapture its launches and
/// copies (to and from the host too) are recorded, not run, and a replay
/// runs them in order, reading the memory as it is then. So the executor's
/// graph path runs here with the same commands and buffers as on a GPU.
class SimDevice : public HostDevice {
public:
  explicit SimDevice(bool graphs) : HostDevice("sim"), graphs_(graphs) {}
  bool simulated() const override { return true; }

  // Host memory is as good as pinned here.
  bool pinHost(void *, size_t) override { return true; }

  locus_status_t copyFrom(Device &from, const void *src, void *dst,
                          size_t bytes) override {
    if (!capturing_)
      return HostDevice::copyFrom(from, src, dst, bytes);
    return recordCopy(src, dst, bytes);
  }
  locus_status_t upload(const void *host, void *dst, size_t bytes) override {
    if (!capturing_)
      return HostDevice::upload(host, dst, bytes);
    return recordCopy(host, dst, bytes);
  }
  locus_status_t download(const void *src, void *host, size_t bytes) override {
    if (!capturing_)
      return HostDevice::download(src, host, bytes);
    return recordCopy(src, host, bytes);
  }
  locus_status_t launch(KernelFn kernel, void *const *buffers) override {
    if (!capturing_)
      return HostDevice::launch(kernel, buffers);
    capturing_->push_back([kernel, buffers] { kernel(buffers); });
    return nullptr;
  }

  bool canCapture() const override { return graphs_; }
  locus_status_t beginCapture() override {
    if (!graphs_ || capturing_)
      return Device::beginCapture();
    capturing_ = std::make_unique<Graph>();
    return nullptr;
  }
  locus_status_t endCapture(void **graph) override {
    if (!capturing_)
      return Device::endCapture(graph);
    *graph = capturing_.release();
    return nullptr;
  }
  locus_status_t replay(void *graph) override {
    for (const auto &step : *static_cast<Graph *>(graph))
      step();
    return nullptr;
  }
  void releaseGraph(void *graph) override {
    delete static_cast<Graph *>(graph);
  }

private:
  using Graph = std::vector<std::function<void()>>;

  locus_status_t recordCopy(const void *src, void *dst, size_t bytes) {
    if (bytes)
      capturing_->push_back([=] { std::memcpy(dst, src, bytes); });
    return nullptr;
  }

  bool graphs_;
  std::unique_ptr<Graph> capturing_;
};

} // namespace

std::unique_ptr<Device> makeSimDevice(bool graphs) {
  return std::make_unique<SimDevice>(graphs);
}

} // namespace locus::rt
