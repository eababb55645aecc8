// CudaTest.cpp - the runtime's cuda device on a real GPU.
//
// Where there is no CUDA device these tests skip with "[SKIP] no CUDA
// device" (and why). On a GPU machine, tools/gpu-check sets
// LOCUS_GPU_CASES to the cases `check_lowering.py --compiled --export`
// wrote on a machine with the compiler: per op configuration an artifact
// with its kernels on cuda:0 (inputs on the CPU, copied), the same graph
// with its inputs made on cuda:0 (a step on the GPU alone: a CUDA graph from
// the second run), the inputs and the double reference.

#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::string messageOf(locus_status_t status) {
  std::string m = locus_status_message(status);
  locus_status_free(status);
  return m;
}

/// The number of CUDA devices; `why` says why there are none.
int cudaDevices(std::string &why) {
  locus_device_report_t *report = nullptr;
  if (locus_status_t s = locus_device_probe(&report)) {
    why = messageOf(s);
    return 0;
  }
  int count = 0;
  for (size_t i = 0; i < locus_device_report_count(report); ++i) {
    locus_device_info_t info{};
    if (locus_status_t s = locus_device_report_get(report, i, &info))
      locus_status_free(s);
    else
      count += info.kind == LOCUS_DEVICE_CUDA;
  }
  why = locus_device_report_cuda_note(report);
  locus_device_report_release(report);
  return count;
}

#define REQUIRE_CUDA(n)                                                        \
  do {                                                                         \
    std::string why;                                                           \
    if (cudaDevices(why) < (n))                                                \
      GTEST_SKIP() << "[SKIP] no CUDA device"                                  \
                   << ((n) > 1 ? " (this test needs " #n ")" : "") << ": "     \
                   << why;                                                     \
  } while (0)

/// The raw bytes of an .npy file (C order, little-endian).
bool readNpy(const std::string &path, std::vector<char> &data) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return false;
  size_t header = 10 + (static_cast<unsigned char>(bytes[8]) |
                        static_cast<unsigned char>(bytes[9]) << 8);
  if (header > bytes.size())
    return false;
  data.assign(bytes.begin() + static_cast<long>(header), bytes.end());
  return true;
}

std::vector<std::string> caseDirs(const std::string &root) {
  std::vector<std::string> out;
  if (DIR *d = opendir(root.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.')
        out.push_back(root + "/" + e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Sets every input of `ctx` from `dir`'s .npy files: with set_input, or
/// written into its view (locus_context_input_view).
std::string feedInputs(locus_model_t *model, locus_context_t *ctx,
                       const std::string &dir, bool views) {
  for (size_t i = 0; i < locus_model_tensor_count(model, LOCUS_TENSOR_INPUT);
       ++i) {
    locus_tensor_info_t info{};
    if (locus_status_t s =
            locus_model_tensor_info(model, LOCUS_TENSOR_INPUT, i, &info))
      return messageOf(s);
    std::vector<char> data;
    if (!readNpy(dir + "/" + info.name + ".npy", data))
      return std::string("cannot read ") + info.name + ".npy";
    void *view = nullptr;
    size_t bytes = 0;
    if (!views) {
      if (locus_status_t s =
              locus_context_set_input(ctx, info.name, data.data(), data.size()))
        return messageOf(s);
    } else if (locus_status_t s =
                   locus_context_input_view(ctx, info.name, &view, &bytes)) {
      return messageOf(s);
    } else if (bytes != data.size()) {
      return std::string("the view of ") + info.name + " has another size";
    } else {
      std::memcpy(view, data.data(), bytes);
    }
  }
  return "";
}

/// Output `output` of the last run, read out or through its view.
std::string readOut(locus_model_t *model, locus_context_t *ctx,
                    const char *output, std::vector<float> &out, bool views) {
  size_t index = 0;
  locus_tensor_info_t info{};
  if (locus_status_t s =
          locus_model_find_tensor(model, LOCUS_TENSOR_OUTPUT, output, &index))
    return messageOf(s);
  if (locus_status_t s =
          locus_model_tensor_info(model, LOCUS_TENSOR_OUTPUT, index, &info))
    return messageOf(s);
  out.resize(info.byte_size / 4);
  const void *view = nullptr;
  size_t bytes = 0;
  if (!views) {
    if (locus_status_t s =
            locus_context_read_output(ctx, output, out.data(), info.byte_size))
      return messageOf(s);
  } else if (locus_status_t s =
                 locus_context_output_view(ctx, output, &view, &bytes)) {
    return messageOf(s);
  } else {
    std::memcpy(out.data(), view, std::min<size_t>(bytes, out.size() * 4));
  }
  return "";
}

/// Runs `artifact` `runs` times on the inputs of `dir`; the output
/// `output`. With `views`, the inputs and the output go through the
/// context's views.
std::string runCase(const std::string &dir, const std::string &artifact,
                    const locus_model_options_t &options, int runs,
                    std::vector<float> &out, std::string *report = nullptr,
                    const char *output = "r", bool views = false) {
  locus_model_t *model = nullptr;
  if (locus_status_t s =
          locus_model_load((dir + "/" + artifact).c_str(), &options, &model))
    return messageOf(s);
  if (report)
    *report = locus_model_report(model);
  locus_context_t *ctx = nullptr;
  if (locus_status_t s = locus_context_create(model, &ctx)) {
    locus_model_release(model);
    return messageOf(s);
  }
  std::string error = feedInputs(model, ctx, dir, views);
  for (int r = 0; error.empty() && r < runs; ++r)
    if (locus_status_t s = locus_context_run(ctx))
      error = messageOf(s);
  if (error.empty())
    error = readOut(model, ctx, output, out, views);
  locus_context_release(ctx);
  locus_model_release(model);
  return error;
}

/// The worst |got - want| / (1e-5 + 1e-4 |want|): float32 with another
/// summation order than the host's.
double worst(const std::vector<float> &got, const std::vector<float> &want) {
  double w = got.size() == want.size() ? 0 : INFINITY;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    w = std::max(w, std::abs(double(got[i]) - want[i]) /
                        (1e-5 + 1e-4 * std::abs(double(want[i]))));
  return w;
}

TEST(Cuda, ProbeListsDevicesOrSaysWhyNone) {
  std::string why;
  int n = cudaDevices(why);
  if (n == 0)
    EXPECT_FALSE(why.empty()) << "no CUDA device and no reason";
  else
    EXPECT_TRUE(why.empty()) << why;
}

TEST(Cuda, EveryOpMatchesTheReferenceOnTheGpu) {
  REQUIRE_CUDA(1);
  const char *root = std::getenv("LOCUS_GPU_CASES");
  if (!root)
    GTEST_SKIP() << "[SKIP] LOCUS_GPU_CASES is not set (tools/gpu-check sets "
                    "it)";
  std::vector<std::string> dirs = caseDirs(root);
  ASSERT_FALSE(dirs.empty()) << "no cases in " << root;
  locus_model_options_t onGpu{}, onHost{}, noGraphs{};
  onHost.device_map = "cuda:0=cpu";
  noGraphs.disable_cuda_graphs = 1;
  for (const std::string &dir : dirs) {
    SCOPED_TRACE(dir);
    std::vector<char> wantBytes;
    ASSERT_TRUE(readNpy(dir + "/expected.npy", wantBytes));
    std::vector<float> want(wantBytes.size() / 4);
    std::memcpy(want.data(), wantBytes.data(), want.size() * 4);

    // Kernels on the GPU, inputs copied from the CPU; twice, so the second
    // run reuses everything the first loaded.
    std::vector<float> gpu, host, graph, plain;
    std::string report;
    ASSERT_EQ(runCase(dir, "model.locus", onGpu, 2, gpu, &report), "");
    EXPECT_NE(report.find("cuda:0 -> cuda:0"), std::string::npos) << report;
    EXPECT_LE(worst(gpu, want), 1.0);
    ASSERT_EQ(runCase(dir, "model.locus", onHost, 1, host), "");
    EXPECT_LE(worst(gpu, host), 1.0);

    // Inputs on the GPU: the step runs on the GPU alone and is replayed
    // as a CUDA graph from the second run, one graph with its index
    // checks (labels, ids) read back after it; with graphs off, the same
    // numbers.
    ASSERT_EQ(runCase(dir, "model_gpu_inputs.locus", onGpu, 3, graph, &report),
              "");
    bool checked = report.find("index check") != std::string::npos;
    EXPECT_NE(report.find("steps replay as a CUDA graph on cuda:0"),
              std::string::npos)
        << report;
    EXPECT_EQ(checked, report.find(" index check(s) are read back after it)") !=
                           std::string::npos)
        << report;
    ASSERT_EQ(runCase(dir, "model_gpu_inputs.locus", noGraphs, 3, plain), "");
    EXPECT_LE(worst(graph, want), 1.0);
    EXPECT_EQ(graph, plain);
    // The same through views: the inputs from pinned mirrors copied in at
    // each run, the output copied into one.
    std::vector<float> viewed;
    ASSERT_EQ(runCase(dir, "model_gpu_inputs.locus", onGpu, 3, viewed, nullptr,
                      "r", true),
              "");
    EXPECT_EQ(viewed, graph);
  }
}

// Every gradient case of tests/e2e/check_gradients.py (exported with
// --export): the backward kernels on the GPU against the finite differences
// of the double reference, and against the same artifact's host versions.
TEST(Cuda, EveryGradientMatchesOnTheGpu) {
  REQUIRE_CUDA(1);
  const char *root = std::getenv("LOCUS_GPU_GRAD_CASES");
  if (!root)
    GTEST_SKIP() << "[SKIP] LOCUS_GPU_GRAD_CASES is not set (tools/gpu-check "
                    "sets it)";
  std::vector<std::string> dirs = caseDirs(root);
  ASSERT_FALSE(dirs.empty()) << "no cases in " << root;
  locus_model_options_t onGpu{}, onHost{};
  onHost.device_map = "cuda:0=cpu";
  const std::string suffix = ".grad.expected.npy";
  for (const std::string &dir : dirs) {
    SCOPED_TRACE(dir);
    int outputs = 0;
    for (const std::string &file : caseDirs(dir)) {
      std::string name = file.substr(dir.size() + 1);
      if (name.size() <= suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix))
        continue;
      std::string output =
          name.substr(0, name.size() - suffix.size()) + ".grad";
      SCOPED_TRACE(output);
      std::vector<char> wantBytes;
      ASSERT_TRUE(readNpy(file, wantBytes));
      std::vector<float> want(wantBytes.size() / 4), gpu, host;
      std::memcpy(want.data(), wantBytes.data(), want.size() * 4);
      std::string report;
      ASSERT_EQ(
          runCase(dir, "model.locus", onGpu, 1, gpu, &report, output.c_str()),
          "");
      EXPECT_NE(report.find("cuda:0 -> cuda:0"), std::string::npos) << report;
      ASSERT_EQ(
          runCase(dir, "model.locus", onHost, 1, host, nullptr, output.c_str()),
          "");
      // The finite differences' tolerance (check_gradients.py): 1e-4 +
      // 1e-3 |want|.
      double w = gpu.size() == want.size() ? 0 : INFINITY;
      for (size_t i = 0; i < gpu.size() && i < want.size(); ++i)
        w = std::max(w, std::abs(double(gpu[i]) - want[i]) /
                            (1e-4 + 1e-3 * std::abs(double(want[i]))));
      EXPECT_LE(w, 1.0);
      EXPECT_LE(worst(gpu, host), 1.0);
      ++outputs;
    }
    EXPECT_GT(outputs, 0) << "no *" << suffix << " in " << dir;
  }
}

TEST(Cuda, ArtifactsRelocateToAnotherGpu) {
  REQUIRE_CUDA(2);
  const char *root = std::getenv("LOCUS_GPU_CASES");
  if (!root)
    GTEST_SKIP() << "[SKIP] LOCUS_GPU_CASES is not set";
  std::vector<std::string> dirs = caseDirs(root);
  ASSERT_FALSE(dirs.empty());
  locus_model_options_t first{}, second{};
  second.device_map = "cuda:0=cuda:1";
  std::vector<float> a, b;
  std::string report;
  ASSERT_EQ(runCase(dirs.front(), "model.locus", first, 1, a), "");
  ASSERT_EQ(runCase(dirs.front(), "model.locus", second, 1, b, &report), "");
  EXPECT_NE(report.find("cuda:0 -> cuda:1"), std::string::npos) << report;
  EXPECT_EQ(a, b);
}

// Host memory a user registers is page-locked for the GPU, and the output
// read into it (one DMA) is what an unregistered read gives. Two models may
// register the same memory: the second finds it page-locked already, and
// it stays so until both unregister.
TEST(Cuda, RegisteredHostMemoryIsCopiedStraight) {
  REQUIRE_CUDA(1);
  const char *root = std::getenv("LOCUS_GPU_CASES");
  if (!root)
    GTEST_SKIP() << "[SKIP] LOCUS_GPU_CASES is not set";
  std::vector<std::string> dirs = caseDirs(root);
  ASSERT_FALSE(dirs.empty());
  const std::string &dir = dirs.front();
  locus_model_options_t options{};
  std::vector<float> plain;
  ASSERT_EQ(runCase(dir, "model.locus", options, 1, plain), "");
  locus_model_t *a = nullptr, *b = nullptr;
  ASSERT_EQ(locus_model_load((dir + "/model.locus").c_str(), &options, &a),
            nullptr);
  ASSERT_EQ(locus_model_load((dir + "/model.locus").c_str(), &options, &b),
            nullptr);
  std::vector<float> out(plain.size(), -1.0f);
  size_t bytes = out.size() * sizeof(float);
  int pinnedA = 0, pinnedB = 0;
  ASSERT_EQ(locus_model_register_host(a, out.data(), bytes, &pinnedA), nullptr);
  ASSERT_EQ(locus_model_register_host(b, out.data(), bytes, &pinnedB), nullptr);
  EXPECT_EQ(pinnedA, 1);
  EXPECT_EQ(pinnedB, 1) << "page-locked already counts";
  for (locus_model_t *model : {a, b}) {
    std::fill(out.begin(), out.end(), -1.0f);
    locus_context_t *ctx = nullptr;
    ASSERT_EQ(locus_context_create(model, &ctx), nullptr);
    ASSERT_EQ(feedInputs(model, ctx, dir, false), "");
    ASSERT_EQ(locus_context_run(ctx), nullptr);
    ASSERT_EQ(locus_context_read_output(ctx, "r", out.data(), bytes), nullptr);
    EXPECT_EQ(out, plain);
    locus_context_release(ctx);
    if (model == a) // b's copies must still be right
      ASSERT_EQ(locus_model_unregister_host(a, out.data()), nullptr);
  }
  locus_model_release(a);
  locus_model_release(b); // unregisters what is left
}

TEST(Cuda, AMissingGpuIsAClearError) {
  std::string why;
  int n = cudaDevices(why);
  const char *root = std::getenv("LOCUS_GPU_CASES");
  if (!root)
    GTEST_SKIP() << "[SKIP] LOCUS_GPU_CASES is not set";
  std::vector<std::string> dirs = caseDirs(root);
  ASSERT_FALSE(dirs.empty());
  std::string map = "cuda:0=cuda:" + std::to_string(n);
  locus_model_options_t options{};
  options.device_map = map.c_str();
  locus_model_t *model = nullptr;
  locus_status_t s = locus_model_load((dirs.front() + "/model.locus").c_str(),
                                      &options, &model);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(locus_status_code(s), LOCUS_STATUS_UNAVAILABLE);
  EXPECT_NE(messageOf(s).find("cuda:" + std::to_string(n)), std::string::npos);
  EXPECT_EQ(model, nullptr);
}

} // namespace
