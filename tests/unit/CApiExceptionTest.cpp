// No C++ exception crosses the C API. This executable replaces the global
// operator new (every overload) with one that throws std::bad_alloc after a
// set number of allocations, and sweeps that number over every entry point
// of locus_runtime.h: n = 0, 1, 2, ... until the call succeeds. Each call
// goes through a plain C function pointer inside try/catch; an exception
// reaching the test fails it, every failed call must return a status that is
// not OK, and an out pointer must be NULL after a failure. The artifact is
// real: a plan and host code (CApiExceptionTestKernel.c, built as a shared
// object), so loading, running and reading are exercised.

#include "PlanBytes.h"
#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <vector>

namespace {

/// Allocations left before operator new throws; negative: no limit.
std::atomic<long> budget{-1};

void *allocate(size_t n, size_t align) {
  if (budget.load() >= 0 && budget.fetch_sub(1) <= 0)
    throw std::bad_alloc();
  void *p = nullptr;
  if (align <= alignof(std::max_align_t))
    p = std::malloc(n ? n : 1);
  else if (posix_memalign(&p, align, n ? n : 1) != 0)
    p = nullptr;
  if (!p)
    throw std::bad_alloc();
  return p;
}

void *allocateNothrow(size_t n, size_t align) noexcept {
  try {
    return allocate(n, align);
  } catch (...) {
    return nullptr;
  }
}

} // namespace

// clang-format off
void *operator new(size_t n) { return allocate(n, 0); }
void *operator new[](size_t n) { return allocate(n, 0); }
void *operator new(size_t n, std::align_val_t a) { return allocate(n, size_t(a)); }
void *operator new[](size_t n, std::align_val_t a) { return allocate(n, size_t(a)); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { return allocateNothrow(n, 0); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return allocateNothrow(n, 0); }
void *operator new(size_t n, std::align_val_t a, const std::nothrow_t &) noexcept { return allocateNothrow(n, size_t(a)); }
void *operator new[](size_t n, std::align_val_t a, const std::nothrow_t &) noexcept { return allocateNothrow(n, size_t(a)); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
// clang-format on

namespace {

/// Calls `call` (returning a status) with allocation n failing, for n = 0,
/// 1, 2, ... until it succeeds; `failed` checks what a failed call left.
/// Returns how many failing allocations it survived.
template <typename Call, typename Failed>
long sweep(const char *name, Call call, Failed failed) {
  for (long n = 0; n < 100000; ++n) {
    locus_status_t s = nullptr;
    bool threw = false;
    budget = n;
    try {
      s = call();
    } catch (...) {
      threw = true;
    }
    budget = -1;
    if (threw) {
      ADD_FAILURE() << name << ": an exception crossed the C API when "
                    << "allocation " << n << " failed";
      return n;
    }
    if (!s)
      return n;
    EXPECT_NE(locus_status_code(s), LOCUS_STATUS_OK) << name;
    EXPECT_STRNE(locus_status_message(s), "") << name;
    failed();
    locus_status_free(s);
  }
  ADD_FAILURE() << name << " never succeeded";
  return -1;
}

/// `s`, or null (freeing it) when it is the expected failure: `code` with
/// `text` in its message. A call whose failure builds a message is swept
/// this way, the expected status counting as its success.
locus_status_t unlessExpected(locus_status_t s, locus_status_code_t code,
                              const char *text) {
  if (locus_status_code(s) == code &&
      std::strstr(locus_status_message(s), text)) {
    locus_status_free(s);
    return nullptr;
  }
  return s;
}

/// The same for an entry point that returns no status: it must not throw.
template <typename Call> void sweepNoStatus(const char *name, Call call) {
  for (long n = 0; n < 64; ++n) {
    budget = n;
    try {
      call();
    } catch (...) {
      budget = -1;
      ADD_FAILURE() << name << ": an exception crossed the C API when "
                    << "allocation " << n << " failed";
      return;
    }
    budget = -1;
  }
}

void nothing() {}

struct Writer : PlanBytes {
  /// A [64] f32 buffer on the cpu.
  void buffer(uint8_t kind, uint64_t offset, const std::string &name) {
    f32Buffer(kind, 0, 64, offset, name);
  }
};

/// y = double(x); w (state, full 3.0) is an output-free state tensor.
std::vector<uint8_t> plan() {
  Writer w;
  w.u32(LOCUS_PLAN_MAGIC), w.u32(LOCUS_PLAN_VERSION);
  w.u32(1), w.u8(LOCUS_DEVICE_CPU), w.u32(0);
  w.u32(3);
  w.buffer(LOCUS_PLAN_INPUT, 0, "x");
  w.buffer(LOCUS_PLAN_ACTIVATION, 256, "");
  w.buffer(LOCUS_PLAN_STATE, 0, "w");
  w.u8(LOCUS_INIT_FULL), w.f64(3.0), w.f64(3.0), w.u64(0);
  w.u64(512);                                                  // arena
  w.u32(1), w.str(LOCUS_ABI_KERNEL_PREFIX "double"), w.u32(0); // kernel
  w.u32(0), w.u32(0);                                          // imports, load
  w.u32(1), w.u8(LOCUS_PLAN_LAUNCH), w.u32(0), w.u32(1), w.u32(2), w.u32(0),
      w.u32(1);
  w.u32(1), w.str("y"), w.u32(1); // outputs
  w.u32(0);                       // events
  w.u32(0);                       // no dynamic sizes
  w.u32(0);                       // nor buffers they size
  return w.bytes;
}

std::vector<uint8_t> hostCode() {
  std::ifstream in(LOCUS_TEST_KERNEL_OBJECT, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class CApi : public ::testing::Test {
protected:
  void SetUp() override {
    plan_ = plan();
    code_ = hostCode();
    ASSERT_GT(code_.size(), 64u) << LOCUS_TEST_KERNEL_OBJECT;
    path_ =
        ::testing::TempDir() + "capi-" + std::to_string(getpid()) + ".locus";
    locus_section_t sections[] = {
        {LOCUS_SECTION_PLAN, plan_.data(), plan_.size()},
        {LOCUS_SECTION_HOST_CODE, code_.data(), code_.size()}};
    auto write = &locus_artifact_write;
    sweep(
        "locus_artifact_write",
        [&] { return write(path_.c_str(), locus_host_arch(), sections, 2); },
        nothing);
    std::ifstream in(path_, std::ios::binary);
    artifact_.assign(std::istreambuf_iterator<char>(in), {});
    ASSERT_FALSE(artifact_.empty());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  /// A model loaded without failing allocations.
  locus_model_t *model() {
    locus_model_t *m = nullptr;
    EXPECT_EQ(locus_model_load_memory(artifact_.data(), artifact_.size(),
                                      nullptr, &m),
              nullptr);
    return m;
  }

  std::vector<uint8_t> plan_, code_, artifact_;
  std::string path_;
};

TEST_F(CApi, StatusAndInit) {
  auto create = &locus_status_create;
  sweep(
      "locus_status_create",
      [&] {
        locus_status_t s = create(LOCUS_STATUS_CANCELLED, "stop");
        // Success for the sweep is a status that was made in full.
        if (std::strcmp(locus_status_message(s), "stop") == 0) {
          locus_status_free(s);
          return locus_status_t(nullptr);
        }
        return s;
      },
      nothing);
  auto fill = &locus_init_fill;
  float values[16];
  sweep(
      "locus_init_fill",
      [&] { return fill(LOCUS_INIT_UNIFORM, 0, 1, 7, 16, values); }, nothing);
  sweepNoStatus("locus_status_code etc.", [] {
    (void)locus_status_code(nullptr);
    (void)locus_status_message(nullptr);
    (void)locus_status_code_name(LOCUS_STATUS_INTERNAL);
    (void)locus_runtime_version();
    locus_status_free(nullptr);
  });
}

TEST_F(CApi, DeviceProbe) {
  auto probe = &locus_device_probe;
  locus_device_report_t *report = nullptr;
  sweep(
      "locus_device_probe", [&] { return probe(&report); },
      [&] { EXPECT_EQ(report, nullptr); });
  ASSERT_NE(report, nullptr);
  auto get = &locus_device_report_get;
  locus_device_info_t info;
  sweep(
      "locus_device_report_get", [&] { return get(report, 0, &info); },
      nothing);
  sweepNoStatus("locus_device_report_*", [&] {
    (void)locus_device_report_count(report);
    (void)locus_device_report_cuda_note(report);
  });
  locus_device_report_release(report);
}

TEST_F(CApi, Artifacts) {
  auto loadMemory = &locus_artifact_load_memory;
  auto load = &locus_artifact_load;
  auto section = &locus_artifact_section;
  locus_artifact_t *a = nullptr;
  sweep(
      "locus_artifact_load_memory",
      [&] { return loadMemory(artifact_.data(), artifact_.size(), &a); },
      [&] { EXPECT_EQ(a, nullptr); });
  locus_artifact_release(a);
  a = nullptr;
  sweep(
      "locus_artifact_load", [&] { return load(path_.c_str(), &a); },
      [&] { EXPECT_EQ(a, nullptr); });
  const void *data = nullptr;
  size_t size = 0;
  sweep(
      "locus_artifact_section",
      [&] { return section(a, LOCUS_SECTION_PLAN, &data, &size); }, nothing);
  EXPECT_EQ(size, plan_.size());
  sweepNoStatus("locus_artifact_arch", [&] { (void)locus_artifact_arch(a); });
  locus_artifact_release(a);
}

TEST_F(CApi, LoadingModels) {
  auto loadMemory = &locus_model_load_memory;
  auto load = &locus_model_load;
  auto fromPlan = &locus_model_create_from_plan;
  locus_model_t *m = nullptr;
  long survived = sweep(
      "locus_model_load_memory",
      [&] {
        return loadMemory(artifact_.data(), artifact_.size(), nullptr, &m);
      },
      [&] { EXPECT_EQ(m, nullptr); });
  EXPECT_GT(survived, 10); // loading allocates: the sweep reached inside
  locus_model_release(m);
  m = nullptr;
  sweep(
      "locus_model_load", [&] { return load(path_.c_str(), nullptr, &m); },
      [&] { EXPECT_EQ(m, nullptr); });
  locus_model_release(m);
  m = nullptr;
  auto resolve = [](void *, const char *symbol) -> void * {
    return std::strcmp(symbol, LOCUS_ABI_KERNEL_PREFIX "double") == 0
               ? reinterpret_cast<void *>(&locus_parallel_threads)
               : nullptr;
  };
  sweep(
      "locus_model_create_from_plan",
      [&] {
        return fromPlan(plan_.data(), plan_.size(), nullptr, 0, resolve,
                        nullptr, nullptr, &m);
      },
      [&] { EXPECT_EQ(m, nullptr); });
  locus_model_release(m); // never run: its kernel is a stand-in
}

TEST_F(CApi, ModelInterfaceAndState) {
  locus_model_t *m = model();
  ASSERT_NE(m, nullptr);
  auto info = &locus_model_tensor_info;
  auto findTensor = &locus_model_find_tensor;
  auto readState = &locus_model_read_state;
  auto writeState = &locus_model_write_state;
  locus_tensor_info_t ti;
  size_t index = 0;
  float w[64];
  sweep(
      "locus_model_tensor_info",
      [&] { return info(m, LOCUS_TENSOR_INPUT, 0, &ti); }, nothing);
  sweep(
      "locus_model_find_tensor",
      [&] { return findTensor(m, LOCUS_TENSOR_STATE, "w", &index); }, nothing);
  sweep(
      "locus_model_read_state", [&] { return readState(m, "w", w, sizeof w); },
      nothing);
  EXPECT_EQ(w[5], 3.0f);
  w[5] = 4;
  sweep(
      "locus_model_write_state",
      [&] { return writeState(m, "w", w, sizeof w); }, nothing);
  float pinnedHere[16];
  sweep(
      "locus_model_register_host",
      [&] {
        locus_status_t s = locus_model_register_host(
            m, pinnedHere, sizeof pinnedHere, nullptr);
        if (!s) // registered: undo it for the next try
          s = locus_model_unregister_host(m, pinnedHere);
        return s;
      },
      nothing);
  // A failing unregister builds a message: it allocates.
  sweep(
      "locus_model_unregister_host (unknown)",
      [&] {
        return unlessExpected(locus_model_unregister_host(m, pinnedHere),
                              LOCUS_STATUS_INVALID_ARGUMENT, "no host memory");
      },
      nothing);
  // A failing lookup builds a message naming the tensors: it allocates.
  long survived = sweep(
      "locus_model_find_tensor (missing)",
      [&] {
        return unlessExpected(findTensor(m, LOCUS_TENSOR_STATE, "nope", &index),
                              LOCUS_STATUS_NOT_FOUND, "states: w");
      },
      nothing);
  EXPECT_GT(survived, 0);
  sweepNoStatus("locus_model_* (no status)", [&] {
    locus_run_stats_t stats;
    (void)locus_model_tensor_count(m, LOCUS_TENSOR_STATE);
    (void)locus_model_report(m);
    locus_model_load_stats(m, &stats);
  });
  locus_model_release(m);
}

TEST_F(CApi, ContextsRunAndRead) {
  locus_model_t *m = model();
  ASSERT_NE(m, nullptr);
  auto create = &locus_context_create;
  auto setInput = &locus_context_set_input;
  auto run = &locus_context_run;
  auto readOutput = &locus_context_read_output;
  locus_context_t *ctx = nullptr;
  sweep(
      "locus_context_create", [&] { return create(m, &ctx); },
      [&] { EXPECT_EQ(ctx, nullptr); });
  ASSERT_NE(ctx, nullptr);
  float x[64], y[64] = {};
  for (int i = 0; i < 64; ++i)
    x[i] = float(i);
  sweep(
      "locus_context_set_input",
      [&] { return setInput(ctx, "x", x, sizeof x); }, nothing);
  sweep("locus_context_run", [&] { return run(ctx); }, nothing);
  sweep(
      "locus_context_read_output",
      [&] { return readOutput(ctx, "y", y, sizeof y); }, nothing);
  EXPECT_EQ(y[21], 42.0f);
  void *in = nullptr;
  const void *out = nullptr;
  size_t bytes = 0;
  sweep(
      "locus_context_input_view",
      [&] { return locus_context_input_view(ctx, "x", &in, &bytes); }, nothing);
  sweep(
      "locus_context_output_view",
      [&] { return locus_context_output_view(ctx, "y", &out, &bytes); },
      nothing);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(static_cast<const float *>(out)[21], 42.0f);
  sweepNoStatus("locus_context_* (no status)", [&] {
    locus_run_stats_t stats;
    (void)locus_context_model(ctx);
    locus_context_stats(ctx, &stats);
  });
  locus_context_release(ctx);
  // Release under failing allocations too.
  for (long n = 0; n < 8; ++n) {
    locus_context_t *c = nullptr;
    ASSERT_EQ(locus_context_create(m, &c), nullptr);
    sweepNoStatus("locus_context_release", [&] {
      locus_context_release(c);
      c = nullptr;
    });
  }
  locus_model_release(m);
}

locus_status_t feed(void *user, uint64_t, const void **inputs) {
  inputs[0] = user;
  return nullptr;
}

TEST_F(CApi, RunBatches) {
  locus_model_t *m = model();
  ASSERT_NE(m, nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m, &ctx), nullptr);
  auto runBatches = &locus_context_run_batches;
  float x[64] = {}, y[64] = {};
  x[3] = 5;
  long survived = sweep(
      "locus_context_run_batches",
      [&] { return runBatches(ctx, 3, feed, nullptr, x); }, nothing);
  EXPECT_GT(survived, 0); // the runner allocates its feeds
  ASSERT_EQ(locus_context_read_output(ctx, "y", y, sizeof y), nullptr);
  EXPECT_EQ(y[3], 10.0f);
  locus_context_release(ctx);
  locus_model_release(m);
}

TEST_F(CApi, ANullStringIsAStatus) {
  locus_model_t *m = model();
  ASSERT_NE(m, nullptr);
  auto findTensor = &locus_model_find_tensor;
  auto load = &locus_model_load;
  size_t index = 0;
  locus_status_t s = nullptr;
  try {
    s = findTensor(m, LOCUS_TENSOR_INPUT, nullptr, &index);
  } catch (...) {
    ADD_FAILURE() << "an exception crossed the C API";
  }
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_NOT_FOUND);
  locus_status_free(s);
  locus_model_t *other = reinterpret_cast<locus_model_t *>(&index);
  try {
    s = load(nullptr, nullptr, &other);
  } catch (...) {
    ADD_FAILURE() << "an exception crossed the C API";
  }
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(other, nullptr);
  locus_status_free(s);
  locus_model_release(m);
}

} // namespace
