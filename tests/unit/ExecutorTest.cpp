// The runtime's plan reader, devices and executor on hand-written plans with
// kernels written here: results, copies counted, the sim device refusing
// foreign memory, events, state, damage to every byte, and threads.

#include "PlanBytes.h"
#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

/// out[i] = in[i] + w[i] for 4 floats: buffers in, w, out.
void addKernel(void *const *buffers) {
  auto *in = static_cast<const float *>(buffers[0]);
  auto *w = static_cast<const float *>(buffers[1]);
  auto *out = static_cast<float *>(buffers[2]);
  for (int i = 0; i < 4; ++i)
    out[i] = in[i] + w[i];
}

/// Rows, inner dimension and columns of productKernel: large enough for
/// locus_sgemm to take oneDNN's matmul where it loads.
constexpr int kRows = 16, kInner = 64, kCols = 48;

/// y = x w^T through the kernel ABI: buffers x [kRows, kInner], w (a
/// state, [kCols, kInner]) and y [kRows, kCols].
void productKernel(void *const *buffers) {
  locus_sgemm(1, kRows, kCols, kInner, reinterpret_cast<uintptr_t>(buffers[0]),
              kInner, 0, 0, reinterpret_cast<uintptr_t>(buffers[1]), kInner, 0,
              1, 0.0f, reinterpret_cast<uintptr_t>(buffers[2]), kCols, 0);
}

void *resolve(void *, const char *symbol) {
  if (std::strcmp(symbol, "product") == 0)
    return reinterpret_cast<void *>(&productKernel);
  return std::strcmp(symbol, "add") == 0 ? reinterpret_cast<void *>(&addKernel)
                                         : nullptr;
}

struct PlanWriter : PlanBytes {
  /// A [4] f32 buffer.
  void buffer(uint8_t kind, uint32_t device, uint64_t offset,
              const std::string &name = "") {
    f32Buffer(kind, device, 4, offset, name);
  }
};

/// x (cpu) -> copy to cuda:0 -> add w (state on cuda:0) -> copy back -> y.
/// `foreign` launches the kernel on the cpu input directly instead.
/// `skipRecord` leaves out the first event's record. `seedAt`, when given,
/// is set to the offset of w's seed (8 bytes a full() initialiser ignores).
/// `unused`, when not 0, adds a state of that many elements ("unused", on
/// the cpu, uniform(-1, 1) with seed 7) that no command reads or writes.
std::vector<uint8_t> makePlan(bool foreign = false, bool skipRecord = false,
                              uint32_t version = LOCUS_PLAN_VERSION,
                              size_t *seedAt = nullptr, uint64_t unused = 0) {
  PlanWriter w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(version);
  w.u32(2); // devices
  w.u8(0);
  w.u32(0);
  w.u8(1);
  w.u32(0);
  w.u32(unused ? 6 : 5);                  // buffers
  w.buffer(LOCUS_PLAN_INPUT, 0, 0, "x");  // 0
  w.buffer(LOCUS_PLAN_ACTIVATION, 1, 0);  // 1: x on cuda:0
  w.buffer(LOCUS_PLAN_ACTIVATION, 1, 64); // 2: the sum
  w.buffer(LOCUS_PLAN_ACTIVATION, 0, 64); // 3: the sum on the cpu
  w.buffer(LOCUS_PLAN_STATE, 1, 0, "w");  // 4
  w.u8(0);                                // full(2.0)
  w.f64(2.0);
  w.f64(2.0);
  if (seedAt)
    *seedAt = w.bytes.size();
  w.u64(0);
  if (unused) {
    w.f32Buffer(LOCUS_PLAN_STATE, 0, unused, 0, "unused"); // 5
    w.u8(LOCUS_INIT_UNIFORM);
    w.f64(-1.0);
    w.f64(1.0);
    w.u64(7);
  }
  w.u64(128); // arenas
  w.u64(128);
  w.u32(1); // kernels
  w.str("add");
  w.u32(1);
  w.u32(0); // imports
  w.u32(0); // load commands
  w.u32(skipRecord ? 6 : 7);
  if (!skipRecord)
    w.command(LOCUS_PLAN_RECORD, 0, 0);
  w.command(LOCUS_PLAN_COPY, 0, 1);
  w.command(LOCUS_PLAN_WAIT, 1, 0);
  w.command(LOCUS_PLAN_LAUNCH, 0, 1, {foreign ? 0u : 1u, 4, 2});
  w.command(LOCUS_PLAN_RECORD, 1, 1);
  w.command(LOCUS_PLAN_COPY, 2, 3);
  w.command(LOCUS_PLAN_WAIT, 0, 1);
  w.u32(1); // outputs
  w.str("y");
  w.u32(3);
  w.u32(2); // events
  w.u32(0); // no dynamic sizes
  w.u32(0); // nor buffers they size
  return w.bytes;
}

struct Loaded {
  locus_model_t *model = nullptr;
  ~Loaded() { locus_model_release(model); }
};

std::string messageOf(locus_status_t status) {
  std::string m = locus_status_message(status);
  locus_status_free(status);
  return m;
}

locus_status_t load(const std::vector<uint8_t> &plan, Loaded &out,
                    const char *map = nullptr) {
  locus_model_options_t options{};
  options.device_map = map;
  return locus_model_create_from_plan(plan.data(), plan.size(), nullptr, 0,
                                      resolve, nullptr, &options, &out.model);
}

/// Runs one step on x; fills y and the stats.
locus_status_t runOnce(locus_model_t *model, const float *x, float *y,
                       locus_run_stats_t *stats = nullptr) {
  locus_context_t *ctx = nullptr;
  if (locus_status_t s = locus_context_create(model, &ctx))
    return s;
  locus_status_t s = locus_context_set_input(ctx, "x", x, 16);
  if (!s)
    s = locus_context_run(ctx);
  if (!s)
    s = locus_context_read_output(ctx, "y", y, 16);
  if (stats)
    locus_context_stats(ctx, stats);
  locus_context_release(ctx);
  return s;
}

} // namespace

TEST(Executor, RunsOnSimAndCountsCopies) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  EXPECT_NE(std::string(locus_model_report(m.model)).find("cuda:0 -> sim"),
            std::string::npos)
      << locus_model_report(m.model);
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  locus_run_stats_t stats;
  ASSERT_EQ(runOnce(m.model, x, y, &stats), nullptr);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y[i], x[i] + 2);
  EXPECT_EQ(stats.launches, 1u);
  EXPECT_EQ(stats.sim_launches, 1u);
  EXPECT_EQ(stats.copies, 2u);
  EXPECT_EQ(stats.copy_bytes, 32u);
}

// A step that copies its input from the host, runs on the GPU and copies
// its output back is captured as a graph from its second run, copies
// included (the context's host arena is pinned), and every replay reads
// the memory as it is then: new inputs, a state written between runs.
TEST(Executor, AStepWithHostCopiesReplaysAsAGraph) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  std::string report = locus_model_report(m.model);
  EXPECT_NE(report.find("steps replay as a CUDA graph on sim"),
            std::string::npos)
      << report;
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  for (int run = 0; run < 5; ++run) {
    float x[4] = {1.0f * run, 2, 3, -4.0f * run}, y[4] = {};
    float w = 2.0f + static_cast<float>(run >= 3);
    if (run == 3) {
      float four[4] = {w, w, w, w};
      ASSERT_EQ(locus_model_write_state(m.model, "w", four, sizeof four),
                nullptr);
    }
    ASSERT_EQ(locus_context_set_input(ctx, "x", x, sizeof x), nullptr);
    ASSERT_EQ(locus_context_run(ctx), nullptr);
    ASSERT_EQ(locus_context_read_output(ctx, "y", y, sizeof y), nullptr);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(y[i], x[i] + w) << "run " << run << ", element " << i;
    locus_run_stats_t stats{};
    locus_context_stats(ctx, &stats);
    EXPECT_EQ(stats.launches, 1u);
    EXPECT_EQ(stats.sim_launches, 1u);
    EXPECT_EQ(stats.copies, 2u);
    EXPECT_EQ(stats.copy_bytes, 32u);
  }
  locus_context_release(ctx);
}

// Without graphs (an option), the report says nothing of them and the
// step runs command by command with the same results.
TEST(Executor, GraphsCanBeTurnedOff) {
  Loaded m;
  locus_model_options_t options{};
  options.disable_cuda_graphs = 1;
  std::vector<uint8_t> plan = makePlan();
  ASSERT_EQ(locus_model_create_from_plan(plan.data(), plan.size(), nullptr, 0,
                                         resolve, nullptr, &options, &m.model),
            nullptr);
  EXPECT_EQ(std::string(locus_model_report(m.model)).find("CUDA graph"),
            std::string::npos);
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(runOnce(m.model, x, y), nullptr);
    EXPECT_EQ(y[3], 6);
  }
}

TEST(Executor, DeviceMapRunsTheGpuPartOnTheCpu) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m, "cuda:0=cpu"), nullptr);
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  locus_run_stats_t stats;
  ASSERT_EQ(runOnce(m.model, x, y, &stats), nullptr);
  EXPECT_EQ(y[3], 6);
  EXPECT_EQ(stats.sim_launches, 0u);
  EXPECT_EQ(stats.copies, 2u);
}

TEST(Executor, SimRefusesAKernelOnCpuMemory) {
  Loaded m;
  ASSERT_EQ(load(makePlan(/*foreign=*/true), m), nullptr);
  float x[4] = {1, 2, 3, 4}, y[4] = {-1, -1, -1, -1};
  locus_status_t s = runOnce(m.model, x, y);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INTERNAL);
  EXPECT_EQ(messageOf(s),
            "kernel add on cuda:0 (sim) reads buffer 0, which is on cpu "
            "(cpu): a kernel may only touch memory of its own device");
  EXPECT_EQ(y[0], -1); // nothing was read out
  // A context remembers the launches it found on their devices, not the
  // ones it refused: every run of it is refused.
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  ASSERT_EQ(locus_context_set_input(ctx, "x", x, sizeof x), nullptr);
  for (int run = 0; run < 3; ++run) {
    locus_status_t again = locus_context_run(ctx);
    ASSERT_NE(again, nullptr) << "run " << run;
    EXPECT_NE(messageOf(again).find("a kernel may only touch memory of its "
                                    "own device"),
              std::string::npos);
  }
  locus_context_release(ctx);
}

// A plan whose event no command records is refused at load (before, its
// wait failed at run time: "cuda:0 waits for event 0, which was never
// recorded", which the executor still says should a step wait for an event
// only the load records).
TEST(Executor, WaitingForAnEventNeverRecordedFails) {
  Loaded m;
  locus_status_t s = load(makePlan(false, /*skipRecord=*/true), m);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_DATA_LOSS);
  EXPECT_EQ(messageOf(s), "the plan is damaged (2 events, but it records 1)");
  EXPECT_EQ(m.model, nullptr);
}

TEST(Executor, InputMistakes) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  locus_status_t s = locus_context_run(ctx);
  EXPECT_EQ(messageOf(s), "input 'x' ([4] f32) was not set");
  float x[8] = {};
  s = locus_context_set_input(ctx, "x", x, 32);
  EXPECT_EQ(messageOf(s),
            "input 'x' is [4] f32 (16 bytes); 32 bytes were given");
  s = locus_context_set_input(ctx, "z", x, 16);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_NOT_FOUND);
  EXPECT_EQ(messageOf(s), "no input named 'z' (inputs: x)");
  s = locus_context_read_output(ctx, "y", x, 4);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_status_free(s);
  locus_context_release(ctx);
}

/// x (input) + w (state, full(2.0)) -> y, all on cuda:0: one launch, no
/// copies; on a machine without a GPU the device is sim.
std::vector<uint8_t> gpuOnlyPlan() {
  PlanWriter w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(LOCUS_PLAN_VERSION);
  w.u32(1); // devices
  w.u8(1);
  w.u32(0);
  w.u32(3);                               // buffers
  w.buffer(LOCUS_PLAN_INPUT, 0, 0, "x");  // 0
  w.buffer(LOCUS_PLAN_ACTIVATION, 0, 64); // 1: y
  w.buffer(LOCUS_PLAN_STATE, 0, 0, "w");  // 2
  w.u8(0);                                // full(2.0)
  w.f64(2.0);
  w.f64(2.0);
  w.u64(0);
  w.u64(128); // arena
  w.u32(1);   // kernels
  w.str("add");
  w.u32(0); // on device 0
  w.u32(0); // imports
  w.u32(0); // load commands
  w.u32(1);
  w.command(LOCUS_PLAN_LAUNCH, 0, 0, {0, 2, 1});
  w.u32(1); // outputs
  w.str("y");
  w.u32(1);
  w.u32(0); // events
  w.u32(0); // no dynamic sizes
  w.u32(0); // nor buffers they size
  return w.bytes;
}

/// Writes x through its view, runs, and returns y's view.
const float *runThroughViews(locus_context_t *ctx, const float (&x)[4]) {
  void *in = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(locus_context_input_view(ctx, "x", &in, &bytes), nullptr);
  EXPECT_EQ(bytes, 16u);
  std::memcpy(in, x, sizeof x);
  EXPECT_EQ(locus_context_run(ctx), nullptr);
  const void *out = nullptr;
  EXPECT_EQ(locus_context_output_view(ctx, "y", &out, &bytes), nullptr);
  EXPECT_EQ(bytes, 16u);
  return static_cast<const float *>(out);
}

// Inputs and outputs in host arenas are viewed where they are: no copy in
// or out is counted, and the output view is the arena's, rewritten by the
// next run.
TEST(Executor, ViewsOfHostTensorsAreTheirBuffers) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  const float *y = runThroughViews(ctx, {1, -2, 3.5f, 4});
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{3, 0, 5.5f, 6}));
  locus_run_stats_t stats;
  locus_context_stats(ctx, &stats);
  EXPECT_EQ(stats.input_bytes, 0u);
  EXPECT_EQ(stats.output_bytes, 0u);
  const float *again = runThroughViews(ctx, {10, 20, 30, 40});
  EXPECT_EQ(again, y);
  EXPECT_EQ(y[3], 42);
  locus_context_release(ctx);
}

// Tensors on a GPU (sim here) are viewed through host memory of the
// context's own: the input's view is copied in at each run until a
// set_input takes over, and asking for the view again makes it the input
// again, with what was written there kept. An output's view holds the run
// it was asked after.
TEST(Executor, ViewsOfGpuTensorsGoThroughHostMirrors) {
  Loaded m;
  ASSERT_EQ(load(gpuOnlyPlan(), m), nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  const float *y = runThroughViews(ctx, {1, 2, 3, 4});
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{3, 4, 5, 6}));
  locus_run_stats_t stats;
  locus_context_stats(ctx, &stats);
  EXPECT_EQ(stats.input_bytes, 16u);
  EXPECT_EQ(stats.output_bytes, 16u);

  float x[4] = {-1, -2, -3, -4}, out[4] = {};
  ASSERT_EQ(locus_context_set_input(ctx, "x", x, 16), nullptr);
  ASSERT_EQ(locus_context_run(ctx), nullptr);
  EXPECT_EQ(y[0], 3) << "a mirror changes only when its view is asked for";
  ASSERT_EQ(locus_context_read_output(ctx, "y", out, 16), nullptr);
  EXPECT_EQ(out[0], 1) << "set_input took over from the view";

  void *in = nullptr;
  size_t bytes = 0;
  ASSERT_EQ(locus_context_input_view(ctx, "x", &in, &bytes), nullptr);
  EXPECT_EQ(static_cast<float *>(in)[3], 4);
  ASSERT_EQ(locus_context_run(ctx), nullptr);
  const void *view = nullptr;
  ASSERT_EQ(locus_context_output_view(ctx, "y", &view, &bytes), nullptr);
  EXPECT_EQ(view, y);
  EXPECT_EQ(y[3], 6);
  locus_context_release(ctx);
}

// A view counts as setting its input; a context with views is released
// without leaks (the sanitizer build checks) whether or not it ran.
TEST(Executor, ViewMistakes) {
  Loaded m;
  ASSERT_EQ(load(gpuOnlyPlan(), m), nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  void *in = nullptr;
  const void *out = nullptr;
  size_t bytes = 0;
  locus_status_t s = locus_context_input_view(ctx, "y", &in, &bytes);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_NOT_FOUND);
  EXPECT_EQ(messageOf(s), "no input named 'y' (inputs: x)");
  s = locus_context_output_view(ctx, "x", &out, &bytes);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_NOT_FOUND);
  EXPECT_EQ(messageOf(s), "no output named 'x' (outputs: y)");
  s = locus_context_input_view(ctx, "x", nullptr, &bytes);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_status_free(s);
  s = locus_context_output_view(nullptr, "y", &out, &bytes);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_status_free(s);
  s = locus_context_output_view(ctx, "y", &out, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_status_free(s);
  ASSERT_EQ(locus_context_input_view(ctx, "x", &in, &bytes), nullptr);
  EXPECT_EQ(locus_context_run(ctx), nullptr) << "the view set the input";
  locus_context_release(ctx);
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  ASSERT_EQ(locus_context_input_view(ctx, "x", &in, &bytes), nullptr);
  locus_context_release(ctx);
}

// Host memory a user registers, with tensors on sim or copied there from
// the host: nothing is page-locked, the range is recorded, and copies to
// and from it are right;
// mistakes are clear errors that change nothing, and ranges left
// registered go with the model (the sanitizer build checks for leaks).
TEST(Executor, RegisteredHostMemory) {
  for (bool gpu : {true, false}) {
    SCOPED_TRACE(gpu ? "tensors on sim" : "host input and output");
    Loaded m;
    ASSERT_EQ(load(gpu ? gpuOnlyPlan() : makePlan(), m), nullptr);
    float x[4] = {1, -2, 3.5f, 4}, y[4] = {}, spare[8] = {};
    int pinned = -1;
    ASSERT_EQ(locus_model_register_host(m.model, x, sizeof x, &pinned),
              nullptr);
    EXPECT_EQ(pinned, 0) << "no GPU: nothing to page-lock";
    ASSERT_EQ(locus_model_register_host(m.model, y, sizeof y, nullptr),
              nullptr);
    ASSERT_EQ(runOnce(m.model, x, y), nullptr);
    const std::vector<float> want{3, 0, 5.5f, 6}; // x + 2 either way
    EXPECT_EQ(std::vector<float>(y, y + 4), want);

    locus_status_t s =
        locus_model_register_host(m.model, x + 2, sizeof(float), &pinned);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
    std::string message = messageOf(s);
    EXPECT_NE(message.find("overlap the 16 registered at"), std::string::npos)
        << message;
    EXPECT_EQ(pinned, 0) << "a refused call reports nothing pinned";
    s = locus_model_register_host(m.model, x, 0, nullptr);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
    locus_status_free(s);
    s = locus_model_register_host(nullptr, spare, sizeof spare, nullptr);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
    locus_status_free(s);
    s = locus_model_unregister_host(m.model, x + 1);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
    message = messageOf(s);
    EXPECT_NE(message.find("(2 ranges are registered)"), std::string::npos)
        << message;

    ASSERT_EQ(locus_model_unregister_host(m.model, x), nullptr);
    s = locus_model_unregister_host(m.model, x);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
    locus_status_free(s);
    // Unregistered, the same memory may be registered again, and memory
    // on either side of a range is free to register.
    ASSERT_EQ(locus_model_register_host(m.model, x, sizeof x, nullptr),
              nullptr);
    ASSERT_EQ(locus_model_register_host(m.model, spare, sizeof spare, nullptr),
              nullptr);
    ASSERT_EQ(runOnce(m.model, x, y), nullptr);
    EXPECT_EQ(std::vector<float>(y, y + 4), want);
  } // released with x, y and spare registered
}

TEST(Executor, KeptLayoutsOfStateFollowItsWrites) {
  // y = x w^T on the cpu, w a state no step writes: the product keeps w in
  // its library's layout across steps (constants.h) and must see every
  // write of w, from one thread and from several at once.
  PlanBytes w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(LOCUS_PLAN_VERSION);
  w.u32(1); // devices: cpu
  w.u8(0);
  w.u32(0);
  w.u32(3); // buffers
  w.f32Buffer(LOCUS_PLAN_INPUT, 0, kRows * kInner, 0, "x");
  w.f32Buffer(LOCUS_PLAN_STATE, 0, kCols * kInner, 0, "w");
  w.u8(0); // full(0.5)
  w.f64(0.5);
  w.f64(0.5);
  w.u64(0);
  w.f32Buffer(LOCUS_PLAN_ACTIVATION, 0, kRows * kCols, 4 * kRows * kInner, "");
  w.u64(4 * (kRows * kInner + kRows * kCols)); // arena
  w.u32(1);                                    // kernels
  w.str("product");
  w.u32(0);
  w.u32(0); // imports
  w.u32(0); // load commands
  w.u32(1); // step
  w.command(LOCUS_PLAN_LAUNCH, 0, 1, {0, 1, 2});
  w.u32(1); // outputs
  w.str("y");
  w.u32(2);
  w.u32(0); // events
  w.u32(0); // no dynamic sizes
  w.u32(0); // nor buffers they size
  Loaded m;
  ASSERT_EQ(load(w.bytes, m), nullptr);

  std::vector<float> x(kRows * kInner);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6) / 8.0f;
  auto expected = [&](const std::vector<float> &weights) {
    std::vector<float> y(kRows * kCols);
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c) {
        double acc = 0;
        for (int k = 0; k < kInner; ++k)
          acc += double(x[r * kInner + k]) * weights[c * kInner + k];
        y[r * kCols + c] = static_cast<float>(acc);
      }
    return y;
  };
  auto run = [&] {
    std::vector<float> y(kRows * kCols);
    locus_context_t *ctx = nullptr;
    locus_status_t s = locus_context_create(m.model, &ctx);
    if (!s)
      s = locus_context_set_input(ctx, "x", x.data(), 4 * x.size());
    if (!s)
      s = locus_context_run(ctx);
    if (!s)
      s = locus_context_read_output(ctx, "y", y.data(), 4 * y.size());
    locus_context_release(ctx);
    EXPECT_EQ(s, nullptr);
    return y;
  };
  auto expectNear = [](const std::vector<float> &got,
                       const std::vector<float> &want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::abs(want[i]))
          << "element " << i;
  };
  std::vector<float> weights(kCols * kInner, 0.5f);
  expectNear(run(), expected(weights));
  expectNear(run(), expected(weights));
  for (int version = 1; version <= 3; ++version) {
    for (size_t i = 0; i < weights.size(); ++i)
      weights[i] =
          static_cast<float>(static_cast<int>((i + version) * 5 % 11) - 5) /
          4.0f;
    ASSERT_EQ(locus_model_write_state(m.model, "w", weights.data(),
                                      4 * weights.size()),
              nullptr);
    std::vector<float> want = expected(weights);
    expectNear(run(), want);
    std::vector<std::thread> threads;
    threads.reserve(4);
    std::vector<std::vector<float>> got(4);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] { got[t] = run(); });
    for (std::thread &t : threads)
      t.join();
    for (const auto &y : got)
      expectNear(y, want);
  }
}

TEST(Executor, StateIsReadAndWrittenWhereItLives) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  float w[4];
  ASSERT_EQ(locus_model_read_state(m.model, "w", w, 16), nullptr);
  EXPECT_EQ(w[2], 2.0f);
  float w2[4] = {10, 20, 30, 40};
  ASSERT_EQ(locus_model_write_state(m.model, "w", w2, 16), nullptr);
  float x[4] = {1, 1, 1, 1}, y[4];
  ASSERT_EQ(runOnce(m.model, x, y), nullptr);
  EXPECT_EQ(y[3], 41);
  locus_status_t s = locus_model_write_state(m.model, "w", w2, 8);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_status_free(s);
}

TEST(Executor, StateNoCommandUsesIsMadeOnlyWhenWritten) {
  // 2^31 floats (8 GiB) that no command touches: the load neither makes
  // nor fills them, so a small max_bytes admits it, and it is quick.
  Loaded big;
  locus_model_options_t options{};
  options.max_bytes = 1 << 20;
  std::vector<uint8_t> plan =
      makePlan(false, false, LOCUS_PLAN_VERSION, nullptr, uint64_t{1} << 31);
  ASSERT_EQ(locus_model_create_from_plan(plan.data(), plan.size(), nullptr, 0,
                                         resolve, nullptr, &options,
                                         &big.model),
            nullptr);
  float x[4] = {1, 2, 3, 4}, y[4];
  ASSERT_EQ(runOnce(big.model, x, y), nullptr);
  EXPECT_EQ(y[0], 3.0f);
  // Writing it would make it: beyond max_bytes, a clean refusal.
  locus_status_t s =
      locus_model_write_state(big.model, "unused", x, size_t{4} << 31);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_OUT_OF_MEMORY);
  EXPECT_NE(messageOf(s).find("beyond the load's max_bytes"),
            std::string::npos);

  // A small one reads as its initialiser's values before it is made, and
  // as what was written after.
  Loaded small;
  plan = makePlan(false, false, LOCUS_PLAN_VERSION, nullptr, 6);
  ASSERT_EQ(load(plan, small), nullptr);
  float want[6], got[6];
  ASSERT_EQ(locus_init_fill(LOCUS_INIT_UNIFORM, -1.0, 1.0, 7, 6, want),
            nullptr);
  ASSERT_EQ(locus_model_read_state(small.model, "unused", got, 24), nullptr);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(got[i], want[i]) << i;
  float written[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(locus_model_write_state(small.model, "unused", written, 24),
            nullptr);
  ASSERT_EQ(locus_model_read_state(small.model, "unused", got, 24), nullptr);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(got[i], written[i]) << i;
}

TEST(Executor, BadDeviceMaps) {
  for (const char *map : {"cuda:1=sim", "cuda:0=gpu", "cuda:0"}) {
    Loaded m;
    locus_status_t s = load(makePlan(), m, map);
    ASSERT_NE(s, nullptr) << map;
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT) << map;
    locus_status_free(s);
    EXPECT_EQ(m.model, nullptr);
  }
}

TEST(Executor, AnotherPlanVersionIsUnavailable) {
  Loaded m;
  locus_status_t s = load(makePlan(false, false, LOCUS_PLAN_VERSION + 1), m);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_UNAVAILABLE);
  EXPECT_EQ(messageOf(s), "the plan has format version " +
                              std::to_string(LOCUS_PLAN_VERSION + 1) +
                              "; this runtime reads " +
                              std::to_string(LOCUS_PLAN_VERSION));
}

// Every truncation and every single-byte change of the plan either fails to
// load with a status or loads and runs (a changed initial value is still a
// valid plan; the artifact's checksum is what catches damage). Nothing
// crashes, under ASan too. Which outcome each change must have: every
// truncation and every change to the magic is DATA_LOSS, every change to
// the version UNAVAILABLE, and every change to the seed (which full()
// ignores) still loads and runs to the same result.
TEST(Executor, EveryDamagedPlanFailsCleanlyOrRuns) {
  size_t seedAt = 0;
  std::vector<uint8_t> plan =
      makePlan(false, false, LOCUS_PLAN_VERSION, &seedAt);
  ASSERT_GT(seedAt, 8u);
  float x[4] = {1, 2, 3, 4};
  size_t loaded = 0, rejected = 0;
  enum Outcome { kRejected, kRunFailed, kRan };
  /// Loads and runs `bytes`; `code` is the load's status code, `ok` whether
  /// the run's result is y = x + 2.
  auto attempt = [&](const std::vector<uint8_t> &bytes,
                     locus_status_code_t &code, bool &ok) {
    Loaded m;
    ok = false;
    if (locus_status_t s = load(bytes, m)) {
      ++rejected;
      code = locus_status_code(s);
      EXPECT_NE(code, LOCUS_STATUS_OK);
      EXPECT_EQ(m.model, nullptr);
      locus_status_free(s);
      return kRejected;
    }
    ++loaded;
    code = LOCUS_STATUS_OK;
    float y[4] = {};
    if (locus_status_t s = runOnce(m.model, x, y)) {
      EXPECT_NE(std::string(locus_status_message(s)), "");
      locus_status_free(s);
      return kRunFailed;
    }
    ok = true;
    for (int i = 0; i < 4; ++i)
      ok &= y[i] == x[i] + 2;
    return kRan;
  };
  locus_status_code_t code;
  bool ok = false;
  for (size_t n = 0; n < plan.size(); ++n) {
    EXPECT_EQ(
        attempt(std::vector<uint8_t>(plan.begin(), plan.begin() + n), code, ok),
        kRejected)
        << "truncated to " << n;
    EXPECT_EQ(code, LOCUS_STATUS_DATA_LOSS) << "truncated to " << n;
  }
  for (size_t i = 0; i < plan.size(); ++i)
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      std::vector<uint8_t> bytes = plan;
      bytes[i] ^= mask;
      Outcome outcome = attempt(bytes, code, ok);
      std::string where =
          "byte " + std::to_string(i) + " ^ " + std::to_string(mask);
      if (i < 4) {
        EXPECT_EQ(code, LOCUS_STATUS_DATA_LOSS) << where;
      } else if (i < 8) {
        EXPECT_EQ(code, LOCUS_STATUS_UNAVAILABLE) << where;
      } else if (i >= seedAt && i < seedAt + 8) {
        EXPECT_EQ(outcome, kRan) << where;
        EXPECT_TRUE(ok) << where;
      }
    }
  EXPECT_GT(rejected, plan.size()); // every truncation, and more
  EXPECT_GE(loaded, 8u * 3);        // every change to the seed, and more
}

/// A plan on the CPU alone: input x [4] at 0, activations at `aAt` and
/// `bAt`, an arena of `arena` bytes, one step copy `src` -> `dst`, and y
/// the output of buffer 2.
static std::vector<uint8_t> copyPlan(uint64_t aAt, uint64_t bAt, uint64_t arena,
                                     uint32_t src, uint32_t dst,
                                     uint32_t devices = 1,
                                     uint32_t events = 0) {
  PlanWriter w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(LOCUS_PLAN_VERSION);
  w.u32(devices);
  for (uint32_t d = 0; d < devices; ++d) {
    w.u8(0);
    w.u32(0);
  }
  w.u32(3);
  w.buffer(LOCUS_PLAN_INPUT, 0, 0, "x");
  w.buffer(LOCUS_PLAN_ACTIVATION, 0, aAt);
  w.buffer(LOCUS_PLAN_ACTIVATION, 0, bAt);
  for (uint32_t d = 0; d < devices; ++d)
    w.u64(d ? 0 : arena);
  w.u32(0); // kernels
  w.u32(0); // imports
  w.u32(0); // load commands
  w.u32(2);
  w.command(LOCUS_PLAN_COPY, 0, 1);
  w.command(LOCUS_PLAN_COPY, src, dst);
  w.u32(1);
  w.str("y");
  w.u32(2);
  w.u32(events);
  w.u32(0); // no dynamic sizes
  w.u32(0); // nor buffers they size
  return w.bytes;
}

/// A load-time launch: p = w + w (w a state full(2.0), p persistent of
/// `resultKind`), reading `loadRead` as its first operand; then per step
/// y = x + p.
static std::vector<uint8_t>
loadLaunchPlan(uint8_t resultKind = LOCUS_PLAN_PERSISTENT,
               uint32_t loadRead = 2) {
  PlanWriter w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(LOCUS_PLAN_VERSION);
  w.u32(1); // devices
  w.u8(0);
  w.u32(0);
  w.u32(4);                               // buffers
  w.buffer(LOCUS_PLAN_INPUT, 0, 0, "x");  // 0
  w.buffer(LOCUS_PLAN_ACTIVATION, 0, 64); // 1: y
  w.buffer(LOCUS_PLAN_STATE, 0, 0, "w");  // 2
  w.u8(0);                                // full(2.0)
  w.f64(2.0);
  w.f64(2.0);
  w.u64(0);
  w.buffer(resultKind, 0, resultKind == LOCUS_PLAN_ACTIVATION ? 128 : 0); // 3
  w.u64(resultKind == LOCUS_PLAN_ACTIVATION ? 192 : 128); // arena
  w.u32(1);                                               // kernels
  w.str("add");
  w.u32(0);
  w.u32(0); // imports
  w.u32(1); // load commands
  w.command(LOCUS_PLAN_LAUNCH, 0, 1, {loadRead, 2, 3});
  w.u32(1); // step commands
  w.command(LOCUS_PLAN_LAUNCH, 0, 1, {0, 3, 1});
  w.u32(1); // outputs
  w.str("y");
  w.u32(1);
  w.u32(0); // events
  w.u32(0); // no dynamic sizes
  w.u32(0); // nor buffers they size
  return w.bytes;
}

// A kernel of state no step writes runs at load, into a persistent buffer
// the steps read; writing the state runs it again. A load-time launch that
// writes an activation, or reads an input, is a damaged plan.
TEST(Executor, LoadTimeLaunchesFollowWritesOfTheirState) {
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  Loaded m;
  ASSERT_EQ(load(loadLaunchPlan(), m), nullptr);
  locus_run_stats_t stats{};
  ASSERT_EQ(runOnce(m.model, x, y, &stats), nullptr);
  EXPECT_EQ(stats.launches, 1U); // the step's; w + w ran at load
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y[i], x[i] + 4);
  const float w[4] = {1, -1, 10, 0.5f};
  ASSERT_EQ(locus_model_write_state(m.model, "w", w, sizeof w), nullptr);
  ASSERT_EQ(runOnce(m.model, x, y), nullptr);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y[i], x[i] + 2 * w[i]);
  EXPECT_NE(std::string(locus_model_report(m.model)).find("1 kernel launches"),
            std::string::npos);
  for (const auto &[plan, what] :
       {std::pair{loadLaunchPlan(LOCUS_PLAN_ACTIVATION),
                  "writes an activation"},
        std::pair{loadLaunchPlan(LOCUS_PLAN_PERSISTENT, 0),
                  "reads an input"}}) {
    SCOPED_TRACE(what);
    Loaded bad;
    locus_status_t s = load(plan, bad);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(messageOf(s), "the plan is damaged (a launch's buffers)");
  }
}

// Plans a hostile file could hold: each refused at load with DATA_LOSS and
// a message, never run (memcpy over overlapping buffers, an arena no
// buffer needs, a device named twice, a command count beyond the file).
TEST(Executor, HostilePlansAreRefusedAtLoad) {
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  {
    Loaded m; // the honest plan: x -> a -> b
    ASSERT_EQ(load(copyPlan(64, 128, 192, 1, 2), m), nullptr);
    ASSERT_EQ(runOnce(m.model, x, y), nullptr);
    EXPECT_EQ(y[2], 3);
  }
  struct Case {
    std::vector<uint8_t> plan;
    const char *message;
  } cases[] = {
      {copyPlan(64, 128, 192, 1, 1),
       "the plan is damaged (a copy between overlapping buffers)"},
      {copyPlan(64, 64, 128, 1, 2),
       "the plan is damaged (a copy between overlapping buffers)"},
      {copyPlan(64, 128, uint64_t{1} << 40, 1, 2),
       "the plan is damaged (an arena of 1099511627776 bytes on cpu, whose "
       "buffers need 192)"},
      {copyPlan(64, 128, 192, 1, 2, 2),
       "the plan is damaged (device cpu twice)"},
      // 2^32 - 1 events cost 533 MB per context: only recorded ones count.
      {copyPlan(64, 128, 192, 1, 2, 1, 0xFFFFFFFF),
       "the plan is damaged (4294967295 events, but it records 0)"},
  };
  for (const Case &c : cases) {
    Loaded m;
    locus_status_t s = load(c.plan, m);
    ASSERT_NE(s, nullptr) << c.message;
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_DATA_LOSS);
    EXPECT_EQ(messageOf(s), c.message);
    EXPECT_EQ(m.model, nullptr);
  }
  // A command count of 2^32 - 1 in a small file: refused without
  // allocating for it.
  std::vector<uint8_t> plan = copyPlan(64, 128, 192, 1, 2);
  size_t countAt = plan.size() - (4 + 2 * 9 + 4 + 4 + 1 + 4 + 4 + 8);
  ASSERT_EQ(plan[countAt], 2);
  plan[countAt] = plan[countAt + 1] = plan[countAt + 2] = plan[countAt + 3] =
      0xFF;
  Loaded m;
  locus_status_t s = load(plan, m);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(messageOf(s), "the plan is damaged (commands)");
}

TEST(Executor, ContextsRunFromManyThreadsAtOnce) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      locus_context_t *ctx = nullptr;
      if (locus_context_create(m.model, &ctx)) {
        wrong[t] = -1;
        return;
      }
      for (int i = 0; i < 2000; ++i) {
        float x[4] = {float(t), float(i), float(t * i), 1}, y[4];
        if (locus_context_set_input(ctx, "x", x, 16) ||
            locus_context_run(ctx) ||
            locus_context_read_output(ctx, "y", y, 16)) {
          ++wrong[t];
          continue;
        }
        for (int k = 0; k < 4; ++k)
          wrong[t] += y[k] != x[k] + 2;
      }
      locus_context_release(ctx);
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

namespace {

/// Feeds x = {step, step + 1, step + 2, step + 3}; records every y.
struct Feeder {
  std::vector<float> x;
  std::vector<std::vector<float>> ys;
  uint64_t stopAt = UINT64_MAX; // next() fails at this step
  bool leaveNull = false;
};

locus_status_t nextBatch(void *user, uint64_t step, const void **inputs) {
  auto &f = *static_cast<Feeder *>(user);
  if (step == f.stopAt)
    return locus_status_create(LOCUS_STATUS_CANCELLED, "no more data");
  f.x = {float(step), float(step + 1), float(step + 2), float(step + 3)};
  inputs[0] = f.leaveNull ? nullptr : f.x.data();
  // The runner copies the batch before asking again: scribbling over it
  // later must not change this step.
  return nullptr;
}

locus_status_t stepDone(void *user, uint64_t, locus_context_t *ctx) {
  auto &f = *static_cast<Feeder *>(user);
  std::vector<float> y(4);
  if (locus_status_t s = locus_context_read_output(ctx, "y", y.data(), 16))
    return s;
  f.ys.push_back(y);
  std::fill(f.x.begin(), f.x.end(), -1.0f);
  return nullptr;
}

} // namespace

TEST(Executor, RunBatchesFeedsEveryStepAndPrefetchesTheCopies) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  Feeder f;
  ASSERT_EQ(locus_context_run_batches(ctx, 5, nextBatch, stepDone, &f),
            nullptr);
  ASSERT_EQ(f.ys.size(), 5u);
  for (size_t step = 0; step < 5; ++step)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(f.ys[step][i], float(step + i) + 2) << step << " " << i;
  // The last step: its input's copy to cuda:0 was made ahead by the runner
  // (counted), the result's copy back by the plan.
  locus_run_stats_t stats;
  locus_context_stats(ctx, &stats);
  EXPECT_EQ(stats.launches, 1u);
  EXPECT_EQ(stats.copies, 2u);
  EXPECT_EQ(stats.copy_bytes, 32u);
  // The context runs single steps as before afterwards.
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  ASSERT_EQ(locus_context_set_input(ctx, "x", x, 16), nullptr);
  ASSERT_EQ(locus_context_run(ctx), nullptr);
  ASSERT_EQ(locus_context_read_output(ctx, "y", y, 16), nullptr);
  EXPECT_EQ(y[3], 6.0f);
  locus_context_release(ctx);
}

TEST(Executor, RunBatchesStopsOnACallbackStatus) {
  Loaded m;
  ASSERT_EQ(load(makePlan(), m), nullptr);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  Feeder f;
  f.stopAt = 3;
  locus_status_t s =
      locus_context_run_batches(ctx, 10, nextBatch, stepDone, &f);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_CANCELLED);
  EXPECT_EQ(messageOf(s), "no more data");
  // Steps 0..2 ran; step 3's batch never came.
  EXPECT_EQ(f.ys.size(), 3u);

  Feeder missing;
  missing.leaveNull = true;
  s = locus_context_run_batches(ctx, 2, nextBatch, nullptr, &missing);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(messageOf(s).find("no data for input 'x'"), std::string::npos);
  s = locus_context_run_batches(ctx, 1, nullptr, nullptr, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_status_free(s);
  // Zero steps: nothing asked for, nothing run.
  Feeder none;
  EXPECT_EQ(locus_context_run_batches(ctx, 0, nextBatch, stepDone, &none),
            nullptr);
  EXPECT_TRUE(none.ys.empty());
  locus_context_release(ctx);
}

namespace {

/// x (cpu input) -> ALL_REDUCE mean -> y; `resultKind` is y's buffer kind
/// (an activation in a good plan), `odd` drops the result from the command.
std::vector<uint8_t> allReducePlan(uint8_t resultKind = LOCUS_PLAN_ACTIVATION,
                                   bool odd = false) {
  PlanWriter w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(LOCUS_PLAN_VERSION);
  w.u32(1); // devices
  w.u8(0);
  w.u32(0);
  w.u32(2);                                // buffers
  w.buffer(LOCUS_PLAN_INPUT, 0, 0, "x");   // 0
  w.buffer(resultKind, 0, 64, "y_buffer"); // 1
  w.u64(128);                              // arena
  w.u32(0);                                // kernels
  w.u32(0);                                // imports
  w.u32(0);                                // load commands
  w.u32(1);
  w.command(LOCUS_PLAN_ALL_REDUCE, 0, LOCUS_PLAN_REDUCE_MEAN,
            odd ? std::vector<uint32_t>{0} : std::vector<uint32_t>{0, 1});
  w.u32(1); // outputs
  w.str("y");
  w.u32(1);
  w.u32(0); // events
  w.u32(0); // no dynamic sizes
  w.u32(0); // nor buffers they size
  return w.bytes;
}

} // namespace

TEST(Executor, AnAllReduceOfOneRankIsItsOperand) {
  Loaded m;
  ASSERT_EQ(load(allReducePlan(), m), nullptr);
  const float x[4] = {1.5f, -2.0f, 3.25f, 0.0f};
  float y[4] = {};
  // No job joined: world size 1.
  ASSERT_EQ(runOnce(m.model, x, y), nullptr);
  EXPECT_EQ(std::vector<float>(y, y + 4), std::vector<float>(x, x + 4));
  // Joined to the job of a process no launcher started: world size 1 too.
  locus_comm_t *comm = nullptr;
  ASSERT_EQ(locus_comm_create(&comm), nullptr);
  EXPECT_EQ(locus_comm_size(comm), 1);
  EXPECT_EQ(locus_comm_rank(comm), 0);
  EXPECT_STREQ(locus_comm_backend(comm), "none");
  ASSERT_EQ(locus_model_join(m.model, comm), nullptr);
  std::fill(y, y + 4, 0.0f);
  ASSERT_EQ(runOnce(m.model, x, y), nullptr);
  EXPECT_EQ(std::vector<float>(y, y + 4), std::vector<float>(x, x + 4));
  locus_model_release(m.model);
  m.model = nullptr;
  locus_comm_release(comm);
}

TEST(Executor, ADamagedAllReduceIsRefused) {
  for (bool odd : {false, true}) {
    Loaded m;
    locus_status_t s = load(
        allReducePlan(odd ? LOCUS_PLAN_ACTIVATION : LOCUS_PLAN_INPUT, odd), m);
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_DATA_LOSS);
    std::string message = messageOf(s);
    EXPECT_NE(message.find("all-reduce"), std::string::npos) << message;
  }
}

TEST(Executor, TorchrunVariablesWithoutMpirunAreRefused) {
  ASSERT_EQ(setenv("WORLD_SIZE", "2", 1), 0);
  locus_comm_t *comm = nullptr;
  locus_status_t s = locus_comm_create(&comm);
  unsetenv("WORLD_SIZE");
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_UNAVAILABLE);
  EXPECT_NE(messageOf(s).find("mpirun -np 2"), std::string::npos);
}

namespace {

/// Hostile variants of dynamicPlan().
struct DynamicDamage {
  uint64_t bound = 4;
  uint64_t factor = 1;
  uint8_t power = 1;
  uint8_t sizesDtype = LOCUS_PLAN_I64;
  const char *sizesName = LOCUS_PLAN_SIZES_INPUT;
  uint32_t listedBuffer = 1; // the second buffer the dims are for
};

/// x [batch<=4] f32 copied to y: the dims of both are the size "batch",
/// which the runtime writes into the sizes input (buffer 2).
std::vector<uint8_t> dynamicPlan(const DynamicDamage &d = {}) {
  PlanWriter w;
  w.u32(LOCUS_PLAN_MAGIC);
  w.u32(LOCUS_PLAN_VERSION);
  w.u32(1); // devices: the cpu
  w.u8(0);
  w.u32(0);
  w.u32(3);                               // buffers
  w.buffer(LOCUS_PLAN_INPUT, 0, 0, "x");  // 0
  w.buffer(LOCUS_PLAN_ACTIVATION, 0, 64); // 1: y
  w.u8(LOCUS_PLAN_INPUT);                 // 2: the sizes
  w.u32(0);
  w.u8(d.sizesDtype);
  w.u32(1);
  w.u64(1);
  w.u64(d.sizesDtype == LOCUS_PLAN_I64 ? 8 : 4);
  w.u64(128);
  w.str(d.sizesName);
  w.u64(192); // arena
  w.u32(0);   // kernels
  w.u32(0);   // imports
  w.u32(0);   // load commands
  w.u32(1);   // step commands
  w.command(LOCUS_PLAN_COPY, 0, 1);
  w.u32(1); // outputs
  w.str("y");
  w.u32(1);
  w.u32(0); // events
  w.u32(1); // dynamic sizes
  w.str("batch");
  w.u64(d.bound);
  w.u32(2); // buffers they size
  for (uint32_t b : {uint32_t{0}, d.listedBuffer}) {
    w.u32(b);
    w.u64(d.factor);
    w.u8(d.power);
  }
  return w.bytes;
}

} // namespace

TEST(Executor, DynamicSizesAreBoundFromInputsAndGiveOutputsTheirDims) {
  Loaded m;
  ASSERT_EQ(load(dynamicPlan(), m), nullptr);
  // The sizes input is the runtime's, not the caller's.
  EXPECT_EQ(locus_model_tensor_count(m.model, LOCUS_TENSOR_INPUT), 1u);
  locus_context_t *ctx = nullptr;
  ASSERT_EQ(locus_context_create(m.model, &ctx), nullptr);
  int64_t dims[4] = {0};
  size_t rank = 0;
  EXPECT_NE(messageOf(locus_context_output_shape(ctx, "y", 4, dims, &rank))
                .find("no run has given them sizes yet"),
            std::string::npos);
  const float x[4] = {1, 2, 3, 4};
  int64_t three = 3;
  ASSERT_EQ(locus_context_set_input_shaped(ctx, "x", x, 12, 1, &three),
            nullptr);
  ASSERT_EQ(locus_context_run(ctx), nullptr);
  ASSERT_EQ(locus_context_output_shape(ctx, "y", 4, dims, &rank), nullptr);
  EXPECT_EQ(rank, 1u);
  EXPECT_EQ(dims[0], 3);
  float y[4] = {0, 0, 0, 0};
  EXPECT_EQ(messageOf(locus_context_read_output(ctx, "y", y, 16)),
            "output 'y' is [3] f32 in the last run: 12 bytes, not 16");
  ASSERT_EQ(locus_context_read_output(ctx, "y", y, 12), nullptr);
  EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{1, 2, 3}));
  // set_input by bytes alone: the one dynamic dimension they leave.
  ASSERT_EQ(locus_context_set_input(ctx, "x", x, 8), nullptr);
  ASSERT_EQ(locus_context_run(ctx), nullptr);
  ASSERT_EQ(locus_context_output_shape(ctx, "y", 4, dims, &rank), nullptr);
  EXPECT_EQ(dims[0], 2);
  int64_t five = 5, zero = 0;
  EXPECT_EQ(
      messageOf(locus_context_set_input_shaped(ctx, "x", x, 20, 1, &five)),
      "input 'x' is [5], but its dimension 0 is batch, which runs from "
      "1 to 4");
  EXPECT_EQ(messageOf(locus_context_set_input_shaped(ctx, "x", x, 0, 1, &zero)),
            "input 'x' is [0], but its dimension 0 is batch, which runs from "
            "1 to 4");
  EXPECT_EQ(
      messageOf(locus_context_set_input_shaped(ctx, "x", x, 8, 1, &three)),
      "input 'x' of [3] f32 holds 12 bytes, not 8");
  EXPECT_EQ(
      messageOf(locus_context_set_input_shaped(ctx, "x", x, 12, 1, nullptr)),
      "dims is null");
  EXPECT_EQ(messageOf(locus_context_output_shape(ctx, "y", 0, dims, &rank)),
            "output 'y' has rank 1; out_dims holds 0");
  locus_context_release(ctx);
}

TEST(Executor, DamagedDynamicSizesAreRefusedAtLoad) {
  struct Case {
    DynamicDamage damage;
    const char *message;
  };
  const Case cases[] = {
      {{.bound = 0}, "the plan is damaged (dynamic sizes)"},
      {{.factor = 2}, "the plan is damaged (dynamic dims)"},
      {{.power = 5}, "the plan is damaged (dynamic dims)"},
      {{.listedBuffer = 0}, "the plan is damaged (dynamic dims)"},
      {{.listedBuffer = 9}, "the plan is damaged (dynamic dims)"},
      {{.sizesDtype = LOCUS_PLAN_I32}, "the plan is damaged (its sizes input)"},
      {{.sizesName = "sizes"},
       "the plan is damaged (dynamic sizes without their input)"},
  };
  for (const Case &c : cases) {
    Loaded m;
    locus_status_t s = load(dynamicPlan(c.damage), m);
    ASSERT_NE(s, nullptr) << c.message;
    EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_DATA_LOSS);
    EXPECT_EQ(messageOf(s), c.message);
  }
  // Every byte of the plan flipped: a clean refusal, or a plan that runs.
  std::vector<uint8_t> plan = dynamicPlan();
  for (size_t i = 0; i < plan.size(); ++i) {
    std::vector<uint8_t> damaged = plan;
    damaged[i] ^= 0xA5;
    Loaded m;
    locus_status_t s = load(damaged, m);
    if (s) {
      locus_status_free(s);
      continue;
    }
    locus_context_t *ctx = nullptr;
    if (locus_context_create(m.model, &ctx))
      continue;
    const float x[4] = {1, 2, 3, 4};
    locus_status_free(locus_context_set_input(ctx, "x", x, 16));
    locus_status_free(locus_context_run(ctx));
    locus_context_release(ctx);
  }
}
