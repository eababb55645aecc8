// Every device (cpu, sim, cuda) against the contract of
// runtime/src/devices/device.h: memory, copies in both directions and
// within the device, zero-size and impossible requests, the order of issued
// work, launches through the device's own path, and ownership, which the
// executor checks every launch against (for sim: a kernel touching another
// device's memory fails with a status).
//
// The interface has no events of its own (the executor keeps a plan's
// events); what it promises about order is that work runs in the order it
// is issued, prefetches included, and that finish() waits for all of it.

#include "devices/cpu/host_device.h"
#include "devices/cuda/cuda_device.h"
#include "devices/device.h"
#include "devices/sim/sim_device.h"

#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace locus::rt;

namespace {

std::string messageOf(locus_status_t status) {
  std::string m = locus_status_message(status);
  locus_status_free(status);
  return m;
}

/// `n` random bytes, none of them all zero as a whole.
std::vector<unsigned char> randomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> bytes(n);
  for (unsigned char &b : bytes)
    b = static_cast<unsigned char>(gen() | 1); // odd: never zero
  return bytes;
}

/// What the test kernel saw: its buffers, and whether the launch path ran
/// it with the CUDA imports bound (locus_cuda_alloc gives memory).
struct Seen {
  void *buffers[2] = {nullptr, nullptr};
  bool hostMemory = false; // cpu, sim: the kernel may touch its buffers
  bool cudaAllocated = false;
  int calls = 0;
} seen;

/// The kernel ABI: void(void *const *buffers). out[i] = 2 * in[i] for 64
/// floats where the buffers are host memory; on cuda (a launcher, which
/// must not touch device memory) it asks the launch for temporary memory.
void doubleKernel(void *const *buffers) {
  ++seen.calls;
  seen.buffers[0] = buffers[0];
  seen.buffers[1] = buffers[1];
  if (seen.hostMemory) {
    const auto *in = static_cast<const float *>(buffers[0]);
    auto *out = static_cast<float *>(buffers[1]);
    for (int i = 0; i < 64; ++i)
      out[i] = 2 * in[i];
    return;
  }
  void *temp = locus_cuda_alloc(256);
  seen.cudaAllocated = temp != nullptr;
  locus_cuda_free(temp);
}

class DeviceConformance : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    seen = Seen{};
    if (GetParam() != "cuda") {
      device_ = makeDevice(GetParam());
      ASSERT_NE(device_, nullptr);
      seen.hostMemory = true;
      return;
    }
    std::string why;
    if (!cudaUsable(0, why))
      GTEST_SKIP() << "[SKIP] no CUDA device (" << why << ")";
    locus_status_t s = nullptr;
    device_ = makeCudaDevice(0, nullptr, 0, /*graphs=*/false, s);
    ASSERT_EQ(s, nullptr) << messageOf(s);
    ASSERT_NE(device_, nullptr);
  }

  /// Memory of the device, released at the end of the test.
  void *allocate(size_t bytes) {
    void *p = device_->allocate(bytes);
    if (p)
      owned_.push_back(p);
    return p;
  }

  void TearDown() override {
    if (!device_)
      return;
    EXPECT_EQ(device_->finish(), nullptr);
    for (void *p : owned_)
      device_->release(p);
  }

  std::unique_ptr<Device> device_;
  std::vector<void *> owned_;
};

TEST_P(DeviceConformance, NamesItself) {
  EXPECT_EQ(device_->name(), GetParam() == "cuda" ? "cuda:0" : GetParam());
  EXPECT_EQ(device_->simulated(), GetParam() == "sim");
}

TEST_P(DeviceConformance, AllocatesZeroedAlignedMemoryItOwns) {
  void *p = allocate(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_TRUE(device_->owns(p, 1000));
  EXPECT_TRUE(device_->owns(static_cast<char *>(p) + 999, 1));
  std::vector<unsigned char> host(1000, 0xAB);
  ASSERT_EQ(device_->download(p, host.data(), host.size()), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  EXPECT_EQ(host, std::vector<unsigned char>(1000, 0));
}

TEST_P(DeviceConformance, UploadThenDownloadGivesTheSameBytes) {
  std::vector<unsigned char> data = randomBytes(4096, 1), back(4096, 0);
  void *p = allocate(data.size());
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(device_->upload(data.data(), p, data.size()), nullptr);
  ASSERT_EQ(device_->download(p, back.data(), back.size()), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  EXPECT_EQ(back, data);
}

// Large copies go over several threads (2 MiB each) and, on a GPU, 8 MiB
// staging buffers: an odd size from an odd address keeps every byte.
TEST_P(DeviceConformance, LargeCopiesKeepEveryByte) {
  // Sizes around the host copies' split over threads (1 MiB, shares of
  // 256 KiB or more), from an odd address, the bytes around untouched.
  for (size_t bytes : {(size_t(17) << 20) + 12345, (size_t(1) << 20) + 7,
                       (size_t(3) << 20) - 1, size_t(1) << 20}) {
    std::vector<unsigned char> data = randomBytes(bytes + 3, 2),
                               back(bytes + 4, 0);
    void *p = allocate(bytes);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(device_->upload(data.data() + 3, p, bytes), nullptr);
    ASSERT_EQ(device_->download(p, back.data() + 3, bytes), nullptr);
    ASSERT_EQ(device_->finish(), nullptr);
    EXPECT_TRUE(std::equal(data.begin() + 3, data.end(), back.begin() + 3))
        << bytes << " bytes";
    EXPECT_EQ(back[0], 0);
    EXPECT_EQ(back.back(), 0) << bytes << " bytes";
  }
}

TEST_P(DeviceConformance, CopiesWithinTheDevice) {
  std::vector<unsigned char> data = randomBytes(3000, 2), back(3000, 0);
  void *a = allocate(data.size());
  void *b = allocate(data.size());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(device_->upload(data.data(), a, data.size()), nullptr);
  ASSERT_EQ(device_->copyFrom(*device_, a, b, data.size()), nullptr);
  ASSERT_EQ(device_->download(b, back.data(), back.size()), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  EXPECT_EQ(back, data);
}

TEST_P(DeviceConformance, ZeroSizeRequestsSucceed) {
  void *p = allocate(0);
  ASSERT_NE(p, nullptr); // "size 0 gives a valid pointer too"
  EXPECT_TRUE(device_->owns(p, 0));
  unsigned char host = 7;
  EXPECT_EQ(device_->upload(&host, p, 0), nullptr);
  EXPECT_EQ(device_->download(p, &host, 0), nullptr);
  EXPECT_EQ(device_->copyFrom(*device_, p, p, 0), nullptr);
  EXPECT_EQ(device_->finish(), nullptr);
  EXPECT_EQ(host, 7);
}

TEST_P(DeviceConformance, ImpossibleRequestsFailWithoutACrash) {
  // More memory than any machine has: null, not an abort.
  EXPECT_EQ(device_->allocate(size_t(1) << 62), nullptr);
  void *p = allocate(256);
  ASSERT_NE(p, nullptr);
  // Past the end, and memory it never made, are not its own.
  EXPECT_FALSE(device_->owns(p, 257));
  EXPECT_FALSE(device_->owns(static_cast<char *>(p) + 256, 1));
  int local = 0;
  EXPECT_FALSE(device_->owns(&local, sizeof local));
  // Releasing memory it never made is ignored; its own memory stays.
  device_->release(&local);
  EXPECT_TRUE(device_->owns(p, 256));
  // A capture where the device cannot capture is a status.
  if (!device_->canCapture()) {
    locus_status_t s = device_->beginCapture();
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_UNAVAILABLE);
    EXPECT_NE(messageOf(s).find("cannot capture graphs"), std::string::npos);
  }
}

TEST_P(DeviceConformance, WorkRunsInTheOrderItIsIssued) {
  std::vector<unsigned char> x = randomBytes(2048, 3), y = randomBytes(2048, 4);
  std::vector<unsigned char> b(2048, 0), c(2048, 0), d(2048, 0);
  void *pa = allocate(2048), *pb = allocate(2048), *pc = allocate(2048);
  void *pd = allocate(2048);
  ASSERT_TRUE(pa && pb && pc && pd);
  // a = x; b = a; a = y (a prefetch: later work still waits for it); c = a.
  ASSERT_EQ(device_->upload(x.data(), pa, x.size()), nullptr);
  ASSERT_EQ(device_->copyFrom(*device_, pa, pb, x.size()), nullptr);
  ASSERT_EQ(device_->prefetch(y.data(), pd, y.size()), nullptr);
  ASSERT_EQ(device_->copyFrom(*device_, pd, pa, y.size()), nullptr);
  ASSERT_EQ(device_->copyFrom(*device_, pa, pc, y.size()), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  ASSERT_EQ(device_->download(pb, b.data(), b.size()), nullptr);
  ASSERT_EQ(device_->download(pc, c.data(), c.size()), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  EXPECT_EQ(b, x);
  EXPECT_EQ(c, y);
}

TEST_P(DeviceConformance, LaunchesAKernelOnItsBuffers) {
  std::vector<float> in(64), out(64, 0);
  for (int i = 0; i < 64; ++i)
    in[i] = 0.5f * float(i) + 1;
  void *pin = allocate(256), *pout = allocate(256);
  ASSERT_TRUE(pin && pout);
  ASSERT_EQ(device_->upload(in.data(), pin, 256), nullptr);
  void *const buffers[2] = {pin, pout};
  ASSERT_EQ(device_->launch(&doubleKernel, buffers), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.buffers[0], pin);
  EXPECT_EQ(seen.buffers[1], pout);
  if (!seen.hostMemory) {
    EXPECT_TRUE(seen.cudaAllocated);
    return;
  }
  ASSERT_EQ(device_->download(pout, out.data(), 256), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(out[i], 2 * in[i]) << i;
}

// LOCUS_PROFILE=1's launches: the kernel runs as with launch(), and the
// time is the device's (CUDA events on cuda), above zero.
TEST_P(DeviceConformance, TimedLaunchesRunTheKernelAndGiveItsTime) {
  std::vector<float> in(64), out(64, 0);
  for (int i = 0; i < 64; ++i)
    in[i] = 0.25f * float(i) - 3;
  void *pin = allocate(256), *pout = allocate(256);
  ASSERT_TRUE(pin && pout);
  ASSERT_EQ(device_->upload(in.data(), pin, 256), nullptr);
  void *const buffers[2] = {pin, pout};
  int before = seen.calls;
  uint64_t ns = 0;
  ASSERT_EQ(device_->launchTimed(&doubleKernel, buffers, ns), nullptr);
  EXPECT_GT(ns, 0u);
  EXPECT_EQ(seen.calls, before + 1);
  if (!seen.hostMemory)
    return; // cuda: the launcher ran with the CUDA imports bound
  ASSERT_EQ(device_->download(pout, out.data(), 256), nullptr);
  ASSERT_EQ(device_->finish(), nullptr);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(out[i], 2 * in[i]) << i;
}

TEST_P(DeviceConformance, DoesNotOwnAnotherDevicesMemory) {
  // Both host devices keep host memory: ownership is by allocation.
  auto other = makeDevice(GetParam() == "cpu" ? "sim" : "cpu");
  ASSERT_NE(other, nullptr);
  void *theirs = other->allocate(128);
  ASSERT_NE(theirs, nullptr);
  EXPECT_FALSE(device_->owns(theirs, 128));
  void *mine = allocate(128);
  ASSERT_NE(mine, nullptr);
  EXPECT_FALSE(other->owns(mine, 128));
  other->release(theirs);
}

// A device that captures graphs (sim with graphs on, cuda) records a
// step's copies to and from pinned host memory and its launches without
// running them; each replay runs them on the memory as it is then.
TEST_P(DeviceConformance, ACapturedStepRunsOnlyWhenReplayed) {
  std::unique_ptr<Device> device;
  if (GetParam() == "sim") {
    device = makeSimDevice(/*graphs=*/true);
  } else if (GetParam() == "cuda") {
    locus_status_t s = nullptr;
    device = makeCudaDevice(0, nullptr, 0, /*graphs=*/true, s);
    ASSERT_EQ(s, nullptr) << messageOf(s);
  }
  if (!device || !device->canCapture())
    GTEST_SKIP() << GetParam() << " captures no graphs";
  auto host = makeCpuDevice();
  auto *pages = static_cast<HostDevice *>(host.get());
  float *in = static_cast<float *>(pages->allocatePages(256));
  float *out = static_cast<float *>(pages->allocatePages(256));
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(device->pinHost(in, HostDevice::pageBytes(256)));
  ASSERT_TRUE(device->pinHost(out, HostDevice::pageBytes(256)));
  void *pa = device->allocate(256), *pb = device->allocate(256);
  ASSERT_TRUE(pa && pb);
  void *const buffers[2] = {pa, pb};
  // On cuda the kernel is a launcher that computes nothing: the copy
  // round trip is what is checked there.
  void *const back = seen.hostMemory ? pb : pa;
  ASSERT_EQ(device->beginCapture(), nullptr);
  ASSERT_EQ(device->copyFrom(*host, in, pa, 256), nullptr);
  ASSERT_EQ(device->launch(&doubleKernel, buffers), nullptr);
  ASSERT_EQ(host->copyFrom(*device, back, out, 256), nullptr);
  void *graph = nullptr;
  ASSERT_EQ(device->endCapture(&graph), nullptr);
  ASSERT_EQ(device->finish(), nullptr);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(out[i], 0.0f) << "the capture ran element " << i;
  for (float scale : {1.0f, -3.0f}) {
    for (int i = 0; i < 64; ++i)
      in[i] = scale * (0.25f * float(i) + 1);
    ASSERT_EQ(device->replay(graph), nullptr);
    ASSERT_EQ(device->finish(), nullptr);
    for (int i = 0; i < 64; ++i)
      EXPECT_EQ(out[i], (seen.hostMemory ? 2 : 1) * in[i]) << "element " << i;
  }
  device->releaseGraph(graph);
  device->release(pa);
  device->release(pb);
  device->unpinHost(in);
  device->unpinHost(out);
  host->release(in);
  host->release(out);
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceConformance,
                         ::testing::Values("cpu", "sim", "cuda"),
                         [](const auto &info) { return info.param; });

// ---- sim: a kernel on another device's memory is a status -------------------

/// A plan: x (cpu input) and y (cuda:0, which runs on sim here); one kernel
/// on cuda:0 reading x where it lives, writing y.
std::vector<uint8_t> foreignPlan() {
  std::vector<uint8_t> b;
  auto u8 = [&](uint8_t v) { b.push_back(v); };
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i)
      b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i)
      b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto str = [&](const std::string &s) {
    u32(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
  };
  auto buffer = [&](uint8_t kind, uint32_t device, const std::string &name) {
    u8(kind), u32(device), u8(LOCUS_PLAN_F32), u32(1), u64(64), u64(256);
    u64(0), str(name);
  };
  u32(LOCUS_PLAN_MAGIC), u32(LOCUS_PLAN_VERSION);
  u32(2), u8(LOCUS_DEVICE_CPU), u32(0), u8(LOCUS_DEVICE_CUDA), u32(0);
  u32(2), buffer(LOCUS_PLAN_INPUT, 0, "x"),
      buffer(LOCUS_PLAN_ACTIVATION, 1, "");
  u64(256), u64(256);            // arenas
  u32(1), str("double"), u32(1); // the kernel, on cuda:0
  u32(0), u32(0);                // imports, load commands
  u32(1), u8(LOCUS_PLAN_LAUNCH), u32(0), u32(1), u32(2), u32(0), u32(1);
  u32(1), str("y"), u32(1); // outputs
  u32(0);                   // events
  u32(0);                   // no dynamic sizes
  u32(0);                   // nor buffers they size
  return b;
}

void *resolveDouble(void *, const char *symbol) {
  return std::strcmp(symbol, "double") == 0
             ? reinterpret_cast<void *>(&doubleKernel)
             : nullptr;
}

TEST(SimDevice, AKernelOnAnotherDevicesMemoryFailsWithAStatus) {
  seen = Seen{};
  seen.hostMemory = true;
  std::vector<uint8_t> plan = foreignPlan();
  locus_model_t *model = nullptr;
  ASSERT_EQ(locus_model_create_from_plan(plan.data(), plan.size(), nullptr, 0,
                                         resolveDouble, nullptr, nullptr,
                                         &model),
            nullptr);
  EXPECT_NE(std::string(locus_model_report(model)).find("cuda:0 -> sim"),
            std::string::npos)
      << locus_model_report(model);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(model, &ctx), nullptr);
  float x[64] = {};
  ASSERT_EQ(locus_context_set_input(ctx, "x", x, sizeof x), nullptr);
  locus_status_t s = locus_context_run(ctx);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INTERNAL);
  EXPECT_EQ(messageOf(s),
            "kernel double on cuda:0 (sim) reads buffer 0, which is on cpu "
            "(cpu): a kernel may only touch memory of its own device");
  EXPECT_EQ(seen.calls, 0); // refused before it ran
  locus_context_release(ctx);
  locus_model_release(model);
}

} // namespace
