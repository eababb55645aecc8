// RuntimeTest.cpp - the runtime's C API: statuses, initialisers, devices.

#include "locus/abi.h"
#include "locus/half.hpp"
#include "locus/locus_runtime.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

/// Frees a status at scope exit and shows its message on failure.
struct StatusGuard {
  locus_status_t status;
  ~StatusGuard() { locus_status_free(status); }
};

std::vector<float> fill(locus_init_kind_t kind, double a, double b,
                        uint64_t seed, size_t n) {
  std::vector<float> values(n, -12345.0f);
  StatusGuard guard{locus_init_fill(kind, a, b, seed, n, values.data())};
  EXPECT_EQ(guard.status, nullptr) << locus_status_message(guard.status);
  return values;
}

TEST(Status, NullIsSuccess) {
  EXPECT_EQ(locus_status_code(nullptr), LOCUS_STATUS_OK);
  EXPECT_STREQ(locus_status_message(nullptr), "");
  locus_status_free(nullptr);
  EXPECT_STREQ(locus_status_code_name(LOCUS_STATUS_DATA_LOSS), "data loss");
}

TEST(Status, ErrorsCarryCodeAndMessage) {
  StatusGuard guard{locus_init_fill(LOCUS_INIT_UNIFORM, 1.0, -1.0, 0, 4,
                                    std::vector<float>(4).data())};
  ASSERT_NE(guard.status, nullptr);
  EXPECT_EQ(locus_status_code(guard.status), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(locus_status_message(guard.status), "a > b"), nullptr)
      << locus_status_message(guard.status);
}

// The kernels' allocator: 64-byte aligned blocks of any size; a small block
// a thread frees comes back to its next request of that size (its own
// cache), a large one to any thread's; a block freed on another thread is
// still a block; every byte asked for is writable.
TEST(HostAlloc, BlocksAreAlignedWritableAndReused) {
  for (size_t bytes : {size_t{1}, size_t{64}, size_t{200}, size_t{4000},
                       size_t{65472}, size_t{1} << 20}) {
    void *p = locus_host_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);
    locus_host_free(p);
    void *again = locus_host_alloc(bytes);
    EXPECT_EQ(again, p) << bytes << " bytes: the freed block comes back";
    void *other = locus_host_alloc(bytes);
    EXPECT_NE(other, again) << bytes;
    locus_host_free(other);
    locus_host_free(again);
  }
  // Taken here, freed on another thread, taken again there and here.
  std::vector<void *> blocks;
  blocks.reserve(100);
  for (int i = 0; i < 100; ++i)
    blocks.push_back(locus_host_alloc(96));
  std::thread([&] {
    for (void *p : blocks)
      locus_host_free(p);
    void *p = locus_host_alloc(96);
    EXPECT_TRUE(std::find(blocks.begin(), blocks.end(), p) != blocks.end());
    std::memset(p, 0, 96);
    locus_host_free(p);
  }).join();
  void *p = locus_host_alloc(96);
  std::memset(p, 0, 96);
  locus_host_free(p);
  locus_host_free(nullptr);
  EXPECT_EQ(locus_host_alloc(SIZE_MAX - 8), nullptr) << "overflow";
}

TEST(Runtime, Version) {
  std::string version = locus_runtime_version();
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
}

TEST(InitFill, FullWritesTheValue) {
  for (float v : fill(LOCUS_INIT_FULL, -2.5, 0, 0, 17))
    EXPECT_EQ(v, -2.5f);
}

TEST(InitFill, UniformIsDeterministicAndCounterBased) {
  std::vector<float> a = fill(LOCUS_INIT_UNIFORM, -1, 1, 42, 1000);
  std::vector<float> b = fill(LOCUS_INIT_UNIFORM, -1, 1, 42, 1000);
  EXPECT_EQ(a, b);
  // Element i depends on (seed, i) only: a shorter fill is a prefix.
  std::vector<float> prefix = fill(LOCUS_INIT_UNIFORM, -1, 1, 42, 10);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin()));
  std::vector<float> other = fill(LOCUS_INIT_UNIFORM, -1, 1, 43, 1000);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i)
    same += a[i] == other[i];
  EXPECT_LT(same, 5u) << "seeds 42 and 43 give nearly the same values";
}

TEST(InitFill, UniformHasTheRightDistribution) {
  const double low = -0.316, high = 0.316;
  const size_t n = 200000;
  std::vector<float> v = fill(LOCUS_INIT_UNIFORM, low, high, 7, n);
  double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double var = 0;
  for (float x : v) {
    ASSERT_GE(x, static_cast<float>(low));
    ASSERT_LT(x, static_cast<float>(high));
    var += (x - mean) * (x - mean);
  }
  var /= n;
  double width = high - low;
  // U[a, b): mean (a + b) / 2, variance (b - a)^2 / 12. The standard error of
  // the mean is width / sqrt(12 n) = 4e-4; allow 5 of them.
  EXPECT_NEAR(mean, 0.0, 5 * width / std::sqrt(12.0 * n));
  EXPECT_NEAR(var, width * width / 12, 0.01 * width * width / 12);
  // Every tenth of the interval gets about a tenth of the values.
  std::vector<size_t> bins(10);
  for (float x : v)
    ++bins[std::min<size_t>(9, static_cast<size_t>((x - low) / width * 10))];
  for (size_t count : bins)
    EXPECT_NEAR(static_cast<double>(count), n / 10.0, n / 10.0 * 0.03);
}

TEST(InitFill, NormalHasTheRightDistribution) {
  const size_t n = 200000;
  std::vector<float> v = fill(LOCUS_INIT_NORMAL, 0.5, 2.0, 11, n);
  EXPECT_EQ(v, fill(LOCUS_INIT_NORMAL, 0.5, 2.0, 11, n));
  double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double var = 0, within1 = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    var += (x - mean) * (x - mean);
    within1 += std::abs(x - 0.5) < 2.0;
  }
  var /= n;
  // Standard error of the mean 2 / sqrt(n) = 0.0045; allow 5 of them.
  EXPECT_NEAR(mean, 0.5, 5 * 2.0 / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(var, 4.0, 0.02 * 4.0);
  // 68.27% within one standard deviation.
  EXPECT_NEAR(within1 / n, 0.6827, 0.005);
  StatusGuard negative{
      locus_init_fill(LOCUS_INIT_NORMAL, 0, -1, 0, 4, v.data())};
  EXPECT_NE(negative.status, nullptr);
}

TEST(InitFill, DegenerateIntervalGivesItsPoint) {
  for (float v : fill(LOCUS_INIT_UNIFORM, 0.5, 0.5, 1, 8))
    EXPECT_EQ(v, 0.5f);
}

TEST(InitFill, BadArgumentsFailAndWriteNothing) {
  std::vector<float> untouched(4, 9.0f);
  struct Case {
    locus_init_kind_t kind;
    double a, b;
    float *out;
    size_t n;
  } cases[] = {
      {LOCUS_INIT_UNIFORM, 1, 0, untouched.data(), 4},
      {LOCUS_INIT_UNIFORM, 0, INFINITY, untouched.data(), 4},
      {LOCUS_INIT_FULL, NAN, 0, untouched.data(), 4},
      // An unknown kind, as a C caller can pass: rejected, and within the
      // enum's range (LOCUS_INIT_KIND_MAX_ENUM), so not undefined behaviour;
      // the analyzer checks enumerator values, not the range.
      // NOLINTNEXTLINE(clang-analyzer-optin.core.EnumCastOutOfRange)
      {static_cast<locus_init_kind_t>(7), 0, 1, untouched.data(), 4},
      {LOCUS_INIT_FULL, 0, 0, nullptr, 4},
  };
  for (const Case &c : cases) {
    StatusGuard guard{locus_init_fill(c.kind, c.a, c.b, 0, c.n, c.out)};
    EXPECT_EQ(locus_status_code(guard.status), LOCUS_STATUS_INVALID_ARGUMENT);
  }
  for (float v : untouched)
    EXPECT_EQ(v, 9.0f);
  // Zero values into no buffer is fine.
  StatusGuard empty{locus_init_fill(LOCUS_INIT_FULL, 0, 0, 0, 0, nullptr)};
  EXPECT_EQ(empty.status, nullptr);
}

TEST(DeviceProbe, CpuIsAlwaysDeviceZeroAndCudaAbsenceIsExplained) {
  locus_device_report_t *report = nullptr;
  StatusGuard guard{locus_device_probe(&report)};
  ASSERT_EQ(guard.status, nullptr) << locus_status_message(guard.status);
  ASSERT_NE(report, nullptr);
  ASSERT_GE(locus_device_report_count(report), 1u);
  locus_device_info_t cpu;
  StatusGuard get{locus_device_report_get(report, 0, &cpu)};
  ASSERT_EQ(get.status, nullptr);
  EXPECT_EQ(cpu.kind, LOCUS_DEVICE_CPU);
  EXPECT_EQ(std::strncmp(cpu.name, "cpu (", 5), 0) << cpu.name;

  size_t cudaCount = locus_device_report_count(report) - 1;
  std::string note = locus_device_report_cuda_note(report);
  if (cudaCount == 0) {
    // Where there is no GPU the report must say why, not stay silent.
    EXPECT_FALSE(note.empty());
    std::printf("[  NOTE    ] no CUDA device here: %s\n", note.c_str());
  } else {
    EXPECT_TRUE(note.empty()) << note;
    for (size_t i = 1; i <= cudaCount; ++i) {
      locus_device_info_t info;
      StatusGuard g{locus_device_report_get(report, i, &info)};
      ASSERT_EQ(g.status, nullptr);
      EXPECT_EQ(info.kind, LOCUS_DEVICE_CUDA);
      EXPECT_EQ(info.index, static_cast<int32_t>(i - 1));
    }
  }
  locus_device_info_t beyond;
  StatusGuard out{locus_device_report_get(
      report, locus_device_report_count(report), &beyond)};
  EXPECT_EQ(locus_status_code(out.status), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_device_report_release(report);
}

TEST(DeviceProbe, NullArgumentsAreErrorsNotCrashes) {
  StatusGuard probe{locus_device_probe(nullptr)};
  EXPECT_EQ(locus_status_code(probe.status), LOCUS_STATUS_INVALID_ARGUMENT);
  locus_device_info_t info;
  StatusGuard get{locus_device_report_get(nullptr, 0, &info)};
  EXPECT_EQ(locus_status_code(get.status), LOCUS_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(locus_device_report_count(nullptr), 0u);
  EXPECT_STREQ(locus_device_report_cuda_note(nullptr), "");
  locus_device_report_release(nullptr);
}

/// A ranked descriptor as MLIR lays it out, for rank 3.
struct Desc3 {
  float *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
};

TEST(KernelAbi, MemrefCopyFollowsBothStrides) {
  // src: a 2x3x4 row-major block at offset 5; dst: the same values written
  // transposed (strides of a 4x3x2 array read as 2x3x4).
  std::vector<float> src(5 + 24), dst(24, -1);
  for (int i = 0; i < 24; ++i)
    src[5 + i] = static_cast<float>(i);
  Desc3 s{src.data(), src.data(), 5, {2, 3, 4}, {12, 4, 1}};
  Desc3 d{dst.data(), dst.data(), 0, {2, 3, 4}, {1, 2, 6}};
  locus_unranked_memref_t us{3, &s}, ud{3, &d};
  locus_memref_copy(sizeof(float), &us, &ud);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(dst[a * 1 + b * 2 + c * 6], src[5 + a * 12 + b * 4 + c]);
}

TEST(KernelAbi, MemrefCopyOfSlicesMatchesElementByElement) {
  // Views whose runs are contiguous on both sides (copied by memcpy), on
  // one side only, or partly mergeable: a slice of the last dimension of
  // a 4x3x10 tensor (the q, k and v of a packed projection), a unit
  // dimension between, a window of rows and columns, and a strided column.
  std::vector<float> src(4 * 3 * 10);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<float>(i) * 0.5f + 1;
  struct Case {
    int64_t offset, sizes[3], strides[3], dstStrides[3];
  };
  for (const Case &c : {
           Case{4, {4, 3, 5}, {30, 10, 1}, {15, 5, 1}},   // last-dim slice
           Case{2, {4, 1, 8}, {30, 10, 1}, {8, 8, 1}},    // unit dimension
           Case{11, {2, 2, 3}, {30, 10, 1}, {6, 3, 1}},   // window
           Case{3, {4, 3, 1}, {30, 10, 1}, {1, 4, 12}},   // column, transposed
           Case{0, {4, 3, 10}, {30, 10, 1}, {30, 10, 1}}, // whole
       }) {
    int64_t n = c.sizes[0] * c.sizes[1] * c.sizes[2];
    std::vector<float> dst(static_cast<size_t>(n), -1);
    Desc3 s{src.data(),
            src.data(),
            c.offset,
            {c.sizes[0], c.sizes[1], c.sizes[2]},
            {c.strides[0], c.strides[1], c.strides[2]}};
    Desc3 d{dst.data(),
            dst.data(),
            0,
            {c.sizes[0], c.sizes[1], c.sizes[2]},
            {c.dstStrides[0], c.dstStrides[1], c.dstStrides[2]}};
    locus_unranked_memref_t us{3, &s}, ud{3, &d};
    locus_memref_copy(sizeof(float), &us, &ud);
    for (int64_t a = 0; a < c.sizes[0]; ++a)
      for (int64_t b = 0; b < c.sizes[1]; ++b)
        for (int64_t e = 0; e < c.sizes[2]; ++e)
          EXPECT_EQ(
              dst[static_cast<size_t>(a * c.dstStrides[0] +
                                      b * c.dstStrides[1] +
                                      e * c.dstStrides[2])],
              src[static_cast<size_t>(c.offset + a * c.strides[0] +
                                      b * c.strides[1] + e * c.strides[2])])
              << "offset " << c.offset << " at " << a << "," << b << "," << e;
  }
}

TEST(KernelAbi, MemrefCopyOfABroadcastAndOfAHighRank) {
  // A source that repeats one row (stride 0, a broadcast view) into a 3x4
  // block, and a rank-33 copy (sizes of 1 but two), which MLIR never makes
  // but the ABI allows.
  std::vector<float> row = {1, 2, 3, 4}, block(12, -1);
  Desc3 s{row.data(), row.data(), 0, {3, 1, 4}, {0, 0, 1}};
  Desc3 d{block.data(), block.data(), 0, {3, 1, 4}, {4, 4, 1}};
  locus_unranked_memref_t us{3, &s}, ud{3, &d};
  locus_memref_copy(sizeof(float), &us, &ud);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(block[i * 4 + j], row[j]);
  constexpr int64_t kRank = 33;
  std::vector<float> src(6), dst(6, -1);
  for (int i = 0; i < 6; ++i)
    src[i] = static_cast<float>(i) + 0.5f;
  // {allocated, aligned, offset, sizes[33], strides[33]}, as words; the
  // destination is the transpose of the source's 2x3.
  auto descriptor = [&](float *data, int64_t s0, int64_t s1) {
    std::vector<int64_t> words(3 + 2 * kRank, 0);
    auto address = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
    words[0] = words[1] = address;
    for (int64_t i = 0; i < kRank; ++i) {
      words[3 + i] = 1;
      words[3 + kRank + i] = 1;
    }
    words[3 + 0] = 2, words[3 + kRank - 1] = 3;
    words[3 + kRank + 0] = s0, words[3 + 2 * kRank - 1] = s1;
    return words;
  };
  std::vector<int64_t> ws = descriptor(src.data(), 3, 1);
  std::vector<int64_t> wd = descriptor(dst.data(), 1, 2);
  locus_unranked_memref_t hs{kRank, ws.data()}, hd{kRank, wd.data()};
  locus_memref_copy(sizeof(float), &hs, &hd);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(dst[i + 2 * j], src[3 * i + j]);
}

TEST(KernelAbi, MemrefCopyOfRankZeroAndOfNothing) {
  float one = 3.5f, out = 0;
  struct Desc0 {
    float *allocated, *aligned;
    int64_t offset;
  } s{&one, &one, 0}, d{&out, &out, 0};
  locus_unranked_memref_t us{0, &s}, ud{0, &d};
  locus_memref_copy(sizeof(float), &us, &ud);
  EXPECT_EQ(out, 3.5f);
  std::vector<float> a(4, 1), b(4, 2);
  Desc3 e1{a.data(), a.data(), 0, {2, 0, 2}, {2, 2, 1}};
  Desc3 e2{b.data(), b.data(), 0, {2, 0, 2}, {2, 2, 1}};
  locus_unranked_memref_t u1{3, &e1}, u2{3, &e2};
  locus_memref_copy(sizeof(float), &u1, &u2);
  EXPECT_EQ(b, std::vector<float>(4, 2)) << "an empty copy writes nothing";
}

/// op(A) op(B) + beta C in double, row-major.
std::vector<double> gemmRef(int m, int n, int k, const std::vector<float> &a,
                            bool ta, const std::vector<float> &b, bool tb,
                            float beta, const std::vector<float> &c) {
  std::vector<double> out(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = beta * c[i * n + j];
      for (int p = 0; p < k; ++p)
        acc += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) *
               (tb ? b[j * k + p] : b[p * n + j]);
      out[i * n + j] = acc;
    }
  return out;
}

// Which OpenBLAS build is loaded, and how it threads, is said (the model's
// report shows it); Debian's OpenMP build is preferred where it is.
TEST(Sgemm, NamesTheBlasBuildAndItsThreading) {
  std::string name = locus_blas_name();
  if (name.rfind("built-in", 0) == 0)
    GTEST_SKIP() << name;
  EXPECT_NE(name.find("OpenBLAS"), std::string::npos) << name;
  const char *openmp =
      "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0";
  if (!std::getenv("LOCUS_OPENBLAS") && access(openmp, R_OK) == 0) {
    EXPECT_NE(name.find("OpenMP threads"), std::string::npos) << name;
    EXPECT_NE(name.find(openmp), std::string::npos) << name;
  }
}

/// Uniform floats in [-1, 1) from a seeded generator: random(n) gives n.
struct RandomFloats {
  explicit RandomFloats(unsigned seed) : rng(seed) {}
  std::vector<float> operator()(int64_t count) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float &f : v)
      f = dist(rng);
    return v;
  }
  std::mt19937 rng;
  std::uniform_real_distribution<float> dist{-1, 1};
};

TEST(Sgemm, MatchesADoubleReference) {
  std::printf("[  NOTE    ] locus_sgemm uses %s\n", locus_blas_name());
  RandomFloats random(5);
  struct Case {
    int m, n, k;
    bool ta, tb;
    float beta;
  } cases[] = {{7, 5, 3, false, false, 1},
               {64, 33, 129, false, true, 1},
               {1, 1024, 784, false, true, 0},
               {17, 9, 70, true, false, 1},
               // One row or one column, or a few: matrix-vector products.
               {1, 1024, 1024, false, true, 0},
               {1, 300, 200, false, false, 1},
               {1, 70, 50, true, true, 0},
               {3, 64, 96, true, false, 0},
               {50, 1, 30, false, false, 0},
               {40, 1, 20, true, true, 1},
               {60, 2, 33, false, true, 0},
               {1, 1, 5, false, false, 0},
               // At least 32K multiply-adds: oneDNN's matmul where it
               // loads, every transpose and beta.
               {48, 40, 64, true, true, 1},
               {40, 48, 72, true, false, 0},
               {96, 80, 50, false, false, 1}};
  for (const Case &c : cases) {
    std::vector<float> a = random(c.m * c.k), b = random(c.k * c.n),
                       out = random(c.m * c.n);
    std::vector<double> want =
        gemmRef(c.m, c.n, c.k, a, c.ta, b, c.tb, c.beta, out);
    // beta = 0: C is not read, so its garbage (NaN) must not leak.
    if (c.beta == 0)
      std::fill(out.begin(), out.end(), std::nanf(""));
    locus_sgemm(1, c.m, c.n, c.k, reinterpret_cast<uintptr_t>(a.data()),
                c.ta ? c.m : c.k, 0, c.ta,
                reinterpret_cast<uintptr_t>(b.data()), c.tb ? c.k : c.n, 0,
                c.tb, c.beta, reinterpret_cast<uintptr_t>(out.data()), c.n, 0);
    for (int i = 0; i < c.m * c.n; ++i)
      ASSERT_NEAR(out[i], want[i], 1e-5 * c.k + 1e-5 * std::abs(want[i]))
          << c.m << "x" << c.n << "x" << c.k << " element " << i;
  }
  // beta = 0: C is not read, so whatever it held (NaN here: a fresh
  // buffer's garbage) does not leak into the result. Small and large (the
  // threaded path) products.
  for (int size : {8, 256}) {
    std::vector<float> a = random(size * size), b = random(size * size),
                       out(size * size, std::nanf(""));
    std::vector<double> want = gemmRef(size, size, size, a, false, b, false, 0,
                                       std::vector<float>(size * size, 0));
    locus_sgemm(1, size, size, size, reinterpret_cast<uintptr_t>(a.data()),
                size, 0, 0, reinterpret_cast<uintptr_t>(b.data()), size, 0, 0,
                0.0f, reinterpret_cast<uintptr_t>(out.data()), size, 0);
    for (int i = 0; i < size * size; ++i)
      ASSERT_NEAR(out[i], want[i], 1e-5 * size + 1e-5 * std::abs(want[i]))
          << "beta 0, " << size << ": element " << i;
  }
  std::vector<float> nan(6, std::nanf("")), empty;
  locus_sgemm(1, 2, 3, 0, reinterpret_cast<uintptr_t>(empty.data()), 0, 0, 0,
              reinterpret_cast<uintptr_t>(empty.data()), 3, 0, 0, 0.0f,
              reinterpret_cast<uintptr_t>(nan.data()), 3, 0);
  EXPECT_EQ(nan, std::vector<float>(6, 0.0f));
  // Degenerate sizes: K = 0 leaves beta C; M = 0 or N = 0 touch nothing.
  std::vector<float> c(6, 2.0f), none;
  locus_sgemm(1, 2, 3, 0, reinterpret_cast<uintptr_t>(none.data()), 0, 0, 0,
              reinterpret_cast<uintptr_t>(none.data()), 3, 0, 0, 0.5f,
              reinterpret_cast<uintptr_t>(c.data()), 3, 0);
  EXPECT_EQ(c, std::vector<float>(6, 1.0f));
  locus_sgemm(1, 0, 3, 4, 0, 4, 0, 0, 0, 3, 0, 0, 1.0f,
              reinterpret_cast<uintptr_t>(c.data()), 3, 0);
  EXPECT_EQ(c, std::vector<float>(6, 1.0f));
  // Batched: three products, strides apart.
  const int batch = 3, m = 4, n = 6, k = 5;
  std::vector<float> a = random(batch * m * k), b = random(batch * k * n),
                     out(batch * m * n, 0);
  locus_sgemm(batch, m, n, k, reinterpret_cast<uintptr_t>(a.data()), k, m * k,
              0, reinterpret_cast<uintptr_t>(b.data()), n, k * n, 0, 1.0f,
              reinterpret_cast<uintptr_t>(out.data()), n, m * n);
  for (int i = 0; i < batch; ++i) {
    std::vector<float> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k),
        bi(b.begin() + i * k * n, b.begin() + (i + 1) * k * n), zero(m * n, 0);
    std::vector<double> want = gemmRef(m, n, k, ai, false, bi, false, 1, zero);
    for (int j = 0; j < m * n; ++j)
      ASSERT_NEAR(out[i * m * n + j], want[j], 1e-5);
  }
}

// locus_gemm_16: bf16 and f16 A and B (each value exact in f32) into an
// f32 C, on whichever path this CPU takes (oneDNN's 16-bit matmul when it
// measured faster, else widened to f32): an f32 sum of the exact products,
// every transpose and beta, a batch, and A read at an offset with rows
// further apart than their length.
TEST(Gemm16, MatchesADoubleReferenceOfTheRoundedOperands) {
  RandomFloats random(7);
  struct Case {
    int m, n, k;
    bool ta, tb;
    float beta;
  } cases[] = {{7, 5, 3, false, false, 1},
               {64, 40, 96, false, true, 0},
               {48, 40, 64, true, true, 1},
               {40, 48, 72, true, false, 0},
               {2, 100, 50, false, false, 1}};
  for (int32_t dtype : {int32_t{LOCUS_PLAN_BF16}, int32_t{LOCUS_PLAN_F16}})
    for (const Case &c : cases) {
      // 3 extra values per row of A (lda > its row), 5 before it.
      int rowsA = c.ta ? c.k : c.m, colsA = c.ta ? c.m : c.k;
      int lda = colsA + 3;
      std::vector<float> a = random(5 + rowsA * lda), b = random(c.k * c.n),
                         out = random(c.m * c.n);
      std::vector<uint16_t> a16(a.size()), b16(b.size());
      auto round = [&](std::vector<float> &v, std::vector<uint16_t> &bits) {
        for (size_t i = 0; i < v.size(); ++i) {
          bits[i] = dtype == LOCUS_PLAN_BF16 ? locus::half::bf16Bits(v[i])
                                             : locus::half::f16Bits(v[i]);
          v[i] = dtype == LOCUS_PLAN_BF16 ? locus::half::fromBf16Bits(bits[i])
                                          : locus::half::fromF16Bits(bits[i]);
        }
      };
      round(a, a16);
      round(b, b16);
      std::vector<float> dense(rowsA * colsA);
      for (int r = 0; r < rowsA; ++r)
        for (int j = 0; j < colsA; ++j)
          dense[r * colsA + j] = a[5 + r * lda + j];
      std::vector<double> want =
          gemmRef(c.m, c.n, c.k, dense, c.ta, b, c.tb, c.beta, out);
      if (c.beta == 0)
        std::fill(out.begin(), out.end(), std::nanf(""));
      locus_gemm_16(dtype, 1, c.m, c.n, c.k,
                    reinterpret_cast<uintptr_t>(a16.data() + 5), lda, 0, c.ta,
                    reinterpret_cast<uintptr_t>(b16.data()), c.tb ? c.k : c.n,
                    0, c.tb, c.beta, reinterpret_cast<uintptr_t>(out.data()),
                    c.n, 0);
      for (int i = 0; i < c.m * c.n; ++i)
        ASSERT_NEAR(out[i], want[i], 1e-5 * c.k + 1e-5 * std::abs(want[i]))
            << dtype << ": " << c.m << "x" << c.n << "x" << c.k << " element "
            << i;
    }
  // A batch of two, and K = 0 (C = beta C).
  std::vector<uint16_t> ones(2 * 4 * 4, locus::half::bf16Bits(1.0f));
  std::vector<float> out(2 * 4 * 4, 0.5f);
  locus_gemm_16(LOCUS_PLAN_BF16, 2, 4, 4, 4,
                reinterpret_cast<uintptr_t>(ones.data()), 4, 16, 0,
                reinterpret_cast<uintptr_t>(ones.data()), 4, 16, 0, 2.0f,
                reinterpret_cast<uintptr_t>(out.data()), 4, 16);
  EXPECT_EQ(out, std::vector<float>(32, 5.0f));
  locus_gemm_16(LOCUS_PLAN_F16, 1, 4, 4, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0.5f,
                reinterpret_cast<uintptr_t>(out.data()), 4, 0);
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 16),
            std::vector<float>(16, 2.5f));
}

} // namespace

//===----------------------------------------------------------------------===//
// locus_parallel_for
//===----------------------------------------------------------------------===//

namespace {

struct Ranges {
  std::vector<std::atomic<int>> hits;
  explicit Ranges(size_t n) : hits(n) {}
};

void markRange(void *args, int64_t lo, int64_t hi) {
  auto *r = static_cast<Ranges *>(args);
  for (int64_t i = lo; i < hi; ++i)
    ++r->hits[static_cast<size_t>(i)];
}

} // namespace

/// What generated code passes locus_conv2d: addresses as integers.
uintptr_t address(const void *p) { return reinterpret_cast<uintptr_t>(p); }

/// relu(conv2d(x, w) + bias + residual) in double, as locus_conv2d's flags
/// say.
std::vector<double> convRef(const int64_t *p, const std::vector<float> &x,
                            const std::vector<float> &w,
                            const std::vector<float> &bias,
                            const std::vector<float> &residual) {
  int64_t n = p[LOCUS_CONV_N], c = p[LOCUS_CONV_C], h = p[LOCUS_CONV_H],
          wd = p[LOCUS_CONV_W], o = p[LOCUS_CONV_O], kh = p[LOCUS_CONV_KH],
          kw = p[LOCUS_CONV_KW], oh = p[LOCUS_CONV_OH], ow = p[LOCUS_CONV_OW],
          g = p[LOCUS_CONV_GROUPS], flags = p[LOCUS_CONV_FLAGS];
  int64_t cg = c / g, og = o / g;
  std::vector<double> y(n * o * oh * ow);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < o; ++k)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = flags & LOCUS_CONV_BIAS ? bias[k] : 0.0;
          for (int64_t q = 0; q < cg; ++q)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t s = 0; s < kw; ++s) {
                int64_t row = i * p[LOCUS_CONV_STRIDE_H] +
                              r * p[LOCUS_CONV_DILATION_H] -
                              p[LOCUS_CONV_PAD_H];
                int64_t col = j * p[LOCUS_CONV_STRIDE_W] +
                              s * p[LOCUS_CONV_DILATION_W] -
                              p[LOCUS_CONV_PAD_W];
                if (row < 0 || row >= h || col < 0 || col >= wd)
                  continue;
                acc +=
                    double(
                        x[((b * c + k / og * cg + q) * h + row) * wd + col]) *
                    w[((k * cg + q) * kh + r) * kw + s];
              }
          int64_t at = ((b * o + k) * oh + i) * ow + j;
          if (flags & LOCUS_CONV_RESIDUAL)
            acc += residual[at];
          if (flags & LOCUS_CONV_RELU)
            acc = std::max(acc, 0.0);
          y[at] = acc;
        }
  if (!(flags & (LOCUS_CONV_MAX_POOL | LOCUS_CONV_AVG_POOL)))
    return y;
  // Then the pooling, as PyTorch's: max ignores padding, average counts it.
  bool isMax = flags & LOCUS_CONV_MAX_POOL;
  int64_t pkh = p[LOCUS_CONV_POOL_KH], pkw = p[LOCUS_CONV_POOL_KW],
          poh = p[LOCUS_CONV_POOL_OH], pow = p[LOCUS_CONV_POOL_OW];
  std::vector<double> pooled(n * o * poh * pow);
  for (int64_t plane = 0; plane < n * o; ++plane)
    for (int64_t i = 0; i < poh; ++i)
      for (int64_t j = 0; j < pow; ++j) {
        double acc = isMax ? -INFINITY : 0.0;
        for (int64_t a = 0; a < pkh; ++a)
          for (int64_t b = 0; b < pkw; ++b) {
            int64_t r = i * p[LOCUS_CONV_POOL_STRIDE_H] + a -
                        p[LOCUS_CONV_POOL_PAD_H],
                    col = j * p[LOCUS_CONV_POOL_STRIDE_W] + b -
                          p[LOCUS_CONV_POOL_PAD_W];
            if (r < 0 || r >= oh || col < 0 || col >= ow)
              continue;
            double v = y[(plane * oh + r) * ow + col];
            acc = isMax ? std::max(acc, v) : acc + v;
          }
        pooled[(plane * poh + i) * pow + j] =
            isMax ? acc : acc / double(pkh * pkw);
      }
  return pooled;
}

TEST(Conv2d, MatchesADoubleReference) {
  std::printf("[  NOTE    ] locus_conv2d uses %s\n", locus_conv_name());
  RandomFloats random(7);
  // n, c, h, w, o, kh, kw, stride h/w, pad h/w, dilation h/w, groups, flags,
  // and the pooling's window, stride and padding (when flags ask for one)
  struct Case {
    int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g, flags;
    int64_t pk = 0, ps = 0, pp = 0;
  } cases[] = {
      {2, 3, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, LOCUS_CONV_BIAS},
      {1, 64, 20, 20, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU},
      {3, 6, 13, 11, 16, 5, 5, 2, 1, 0, 2, 1, 1, 1, LOCUS_CONV_RELU},
      {1, 8, 9, 9, 12, 3, 3, 1, 2, 2, 1, 2, 2, 4, LOCUS_CONV_BIAS},
      {2, 16, 7, 7, 32, 1, 1, 1, 1, 0, 0, 1, 1, 1, LOCUS_CONV_RESIDUAL},
      {1, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32,
       LOCUS_CONV_BIAS | LOCUS_CONV_RELU},
      {1, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0},
      // Fewer input channels than a vector has floats: the input is read
      // as NCHW; with a residual, dilation and a stride too.
      {2, 5, 12, 10, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU},
      {2, 12, 11, 13, 20, 3, 3, 2, 1, 2, 2, 2, 2, 1, LOCUS_CONV_BIAS},
      // A pooling after the epilogue: LeNet's and the seed CNN's, a
      // ResNet stem's overlapping padded window, an average, and a
      // residual block's output pooled.
      {2, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 1, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RELU | LOCUS_CONV_MAX_POOL, 2, 2, 0},
      {3, 3, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RELU | LOCUS_CONV_MAX_POOL, 2, 2, 0},
      {1, 3, 17, 17, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RELU | LOCUS_CONV_MAX_POOL, 3, 2, 1},
      {2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, LOCUS_CONV_AVG_POOL, 3, 2, 1},
      {1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1,
       LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU | LOCUS_CONV_MAX_POOL, 2, 2, 0},
      // Where oneDNN's Winograd convolution is asked for (2048 output
      // pixels of 64 channels; ConvChoiceTest), with every epilogue.
      {2, 64, 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU},
      {8, 64, 16, 16, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0}};
  for (const Case &t : cases) {
    int64_t oh = (t.h + 2 * t.ph - t.dh * (t.kh - 1) - 1) / t.sh + 1;
    int64_t ow = (t.w + 2 * t.pw - t.dw * (t.kw - 1) - 1) / t.sw + 1;
    int64_t poh = t.pk ? (oh + 2 * t.pp - t.pk) / t.ps + 1 : 0;
    int64_t pow = t.pk ? (ow + 2 * t.pp - t.pk) / t.ps + 1 : 0;
    int64_t p[LOCUS_CONV_PARAM_COUNT] = {
        t.n,  t.c,  t.h,  t.w,  t.o,  t.kh, t.kw, oh,      ow,
        t.sh, t.sw, t.ph, t.pw, t.dh, t.dw, t.g,  t.flags, t.pk,
        t.pk, t.ps, t.ps, t.pp, t.pp, poh,  pow};
    std::vector<float> x = random(t.n * t.c * t.h * t.w),
                       w = random(t.o * t.c / t.g * t.kh * t.kw),
                       bias = random(t.o),
                       residual = random(t.n * t.o * oh * ow);
    // The output's old contents (NaN) must not leak in.
    std::vector<float> y(t.pk ? t.n * t.o * poh * pow : t.n * t.o * oh * ow,
                         std::nanf(""));
    std::vector<double> want = convRef(p, x, w, bias, residual);
    for (int round = 0; round < 2; ++round) { // built, then cached
      locus_conv2d(address(p), address(x.data()), address(w.data()),
                   t.flags & LOCUS_CONV_BIAS ? address(bias.data()) : 0,
                   t.flags & LOCUS_CONV_RESIDUAL ? address(residual.data()) : 0,
                   address(y.data()));
      int64_t products = t.c / t.g * t.kh * t.kw; // per output element
      double tolerance = 1e-5 * double(products);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], want[i], tolerance + 1e-5 * std::abs(want[i]))
            << "case c=" << t.c << " o=" << t.o << " groups=" << t.g
            << " element " << i << " round " << round;
    }
  }
}

/// `v`, n images of `channels` x `plane` values, from NCHW to NHWC or
/// (`back`) from NHWC to NCHW.
std::vector<float> relayout(const std::vector<float> &v, int64_t n,
                            int64_t channels, int64_t plane, bool back) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        size_t nchw = static_cast<size_t>((i * channels + c) * plane + p),
               nhwc = static_cast<size_t>((i * plane + p) * channels + c);
        out[back ? nchw : nhwc] = v[back ? nhwc : nchw];
      }
  return out;
}

TEST(Conv2d, NhwcOperandsMatchTheReference) {
  // What --locus-conv-layouts makes: any of x, the residual and y NHWC;
  // through oneDNN and through the built-in path.
  RandomFloats random(9);
  struct Case {
    int64_t n, c, h, o, k, pad, groups, flags, pool;
  } cases[] = {
      {2, 32, 9, 32, 3, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU, 0},
      {1, 4, 10, 16, 3, 1, 1, LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL, 0},
      {2, 16, 8, 24, 3, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RELU | LOCUS_CONV_MAX_POOL, 2},
      {1, 8, 7, 8, 3, 1, 2, LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU, 0},
      // Winograd's (ConvChoiceTest).
      {2, 64, 32, 64, 3, 1, 1,
       LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU, 0}};
  const char *saved = std::getenv("LOCUS_CONV");
  for (const char *path : {"default", "builtin"}) {
    if (std::string(path) == "builtin")
      setenv("LOCUS_CONV", "builtin", 1);
    for (const Case &t : cases)
      for (int64_t layouts = 1; layouts < 8; ++layouts) {
        int64_t flags = t.flags | (layouts & 1 ? LOCUS_CONV_X_NHWC : 0) |
                        (layouts & 2 ? LOCUS_CONV_RESIDUAL_NHWC : 0) |
                        (layouts & 4 ? LOCUS_CONV_Y_NHWC : 0);
        int64_t oh = t.h + 2 * t.pad - t.k + 1;
        int64_t ph = t.pool ? oh / t.pool : 0;
        int64_t p[LOCUS_CONV_PARAM_COUNT] = {
            t.n,    t.c,    t.h,    t.h,   t.o, t.k, t.k,      oh,    oh,
            1,      1,      t.pad,  t.pad, 1,   1,   t.groups, flags, t.pool,
            t.pool, t.pool, t.pool, 0,     0,   ph,  ph};
        std::vector<float> x = random(t.n * t.c * t.h * t.h),
                           w = random(t.o * t.c / t.groups * t.k * t.k),
                           bias = random(t.o),
                           residual = random(t.n * t.o * oh * oh);
        std::vector<double> want = convRef(p, x, w, bias, residual);
        if (layouts & 1)
          x = relayout(x, t.n, t.c, t.h * t.h, false);
        if (layouts & 2)
          residual = relayout(residual, t.n, t.o, oh * oh, false);
        int64_t side = t.pool ? ph : oh;
        std::vector<float> y(static_cast<size_t>(t.n * t.o * side * side),
                             std::nanf(""));
        locus_conv2d(address(p), address(x.data()), address(w.data()),
                     address(bias.data()), address(residual.data()),
                     address(y.data()));
        if (layouts & 4)
          y = relayout(y, t.n, t.o, side * side, true);
        int64_t products = t.c / t.groups * t.k * t.k; // per output element
        double tolerance = 1e-5 * double(products);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], want[i], tolerance + 1e-5 * std::abs(want[i]))
              << path << " c=" << t.c << " layouts " << layouts << " element "
              << i;
      }
  }
  if (saved)
    setenv("LOCUS_CONV", saved, 1);
  else
    unsetenv("LOCUS_CONV");
}

/// Runs body(path) on each path a 16-bit convolution call may take:
/// "default" (oneDNN's bf16 kernels where the CPU has AMX), "widen"
/// (LOCUS_CONV16=widen) and "builtin" (LOCUS_CONV=builtin too); the
/// caller's environment is restored after.
template <typename Body> void forEachSixteenBitPath(Body body) {
  std::vector<std::pair<const char *, std::optional<std::string>>> saved;
  for (const char *name : {"LOCUS_CONV", "LOCUS_CONV16"}) {
    const char *value = std::getenv(name);
    saved.emplace_back(name, value ? std::optional<std::string>(value)
                                   : std::nullopt);
  }
  for (const char *path : {"default", "widen", "builtin"}) {
    if (std::string(path) == "widen")
      setenv("LOCUS_CONV16", "widen", 1);
    if (std::string(path) == "builtin")
      setenv("LOCUS_CONV", "builtin", 1);
    body(path);
  }
  for (const auto &[name, value] : saved)
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
}

/// `v` rounded to bf16 (`f16`: to f16) and back, and its 16-bit bits.
std::vector<float> roundTo16(const std::vector<float> &v, bool f16,
                             std::vector<uint16_t> &bits) {
  std::vector<float> out(v.size());
  bits.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    bits[i] = f16 ? locus::half::f16Bits(v[i]) : locus::half::bf16Bits(v[i]);
    out[i] = f16 ? locus::half::fromF16Bits(bits[i])
                 : locus::half::fromBf16Bits(bits[i]);
  }
  return out;
}

TEST(Conv2d, SixteenBitOperandsMatchTheReference) {
  // LOCUS_CONV_BF16 and _F16: x and w 16-bit, sums in f32, and with
  // LOCUS_CONV_Y_16BIT y rounded once after the epilogue and pooling;
  // through oneDNN's bf16 kernels (where the CPU has them), widened to
  // f32 (LOCUS_CONV16=widen, and always for f16) and built-in.
  RandomFloats random(11);
  struct Case {
    int64_t n, c, h, o, k, pad, groups, flags, pool;
  } cases[] = {{2, 32, 9, 32, 3, 1, 1, LOCUS_CONV_BIAS | LOCUS_CONV_RELU, 0},
               {2, 64, 12, 48, 3, 1, 1,
                LOCUS_CONV_BIAS | LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU, 0},
               {1, 3, 15, 16, 7, 3, 1, LOCUS_CONV_BIAS | LOCUS_CONV_RELU, 0},
               {2, 16, 8, 24, 3, 1, 1,
                LOCUS_CONV_BIAS | LOCUS_CONV_RELU | LOCUS_CONV_MAX_POOL, 2},
               {1, 8, 7, 8, 3, 1, 2, LOCUS_CONV_RESIDUAL, 0},
               {2, 32, 6, 64, 1, 0, 1, 0, 0}};
  forEachSixteenBitPath([&](const char *path) {
    for (const Case &t : cases)
      for (int64_t variant = 0; variant < 8; ++variant) {
        bool f16 = variant & 1, y16 = variant & 2, nhwc = variant & 4;
        int64_t flags = t.flags | (f16 ? LOCUS_CONV_F16 : LOCUS_CONV_BF16) |
                        (y16 ? LOCUS_CONV_Y_16BIT : 0) |
                        (nhwc ? LOCUS_CONV_X_NHWC | LOCUS_CONV_Y_NHWC |
                                    LOCUS_CONV_RESIDUAL_NHWC
                              : 0);
        int64_t oh = t.h + 2 * t.pad - t.k + 1;
        int64_t ph = t.pool ? oh / t.pool : 0;
        int64_t p[LOCUS_CONV_PARAM_COUNT] = {
            t.n,    t.c,    t.h,    t.h,   t.o, t.k, t.k,      oh,    oh,
            1,      1,      t.pad,  t.pad, 1,   1,   t.groups, flags, t.pool,
            t.pool, t.pool, t.pool, 0,     0,   ph,  ph};
        std::vector<uint16_t> x16, w16;
        std::vector<float> x = roundTo16(random(t.n * t.c * t.h * t.h), f16,
                                         x16),
                           w = roundTo16(
                               random(t.o * t.c / t.groups * t.k * t.k), f16,
                               w16),
                           bias = random(t.o),
                           residual = random(t.n * t.o * oh * oh);
        std::vector<double> want = convRef(p, x, w, bias, residual);
        if (nhwc) {
          x = relayout(x, t.n, t.c, t.h * t.h, false);
          roundTo16(x, f16, x16);
          residual = relayout(residual, t.n, t.o, oh * oh, false);
        }
        int64_t side = t.pool ? ph : oh;
        size_t count = static_cast<size_t>(t.n * t.o * side * side);
        std::vector<float> y(count, std::nanf(""));
        std::vector<uint16_t> yBits(count, 0x7FC0);
        locus_conv2d(address(p), address(x16.data()), address(w16.data()),
                     address(bias.data()), address(residual.data()),
                     y16 ? address(yBits.data()) : address(y.data()));
        if (y16)
          for (size_t i = 0; i < count; ++i)
            y[i] = f16 ? locus::half::fromF16Bits(yBits[i])
                       : locus::half::fromBf16Bits(yBits[i]);
        if (nhwc)
          y = relayout(y, t.n, t.o, side * side, true);
        int64_t products = t.c / t.groups * t.k * t.k; // per output element
        // f32 sums, then (y16) one rounding: half a unit in the last
        // place, at most 2^-8 (bf16) or 2^-11 (f16) of the value.
        double rounding = y16 ? (f16 ? 0x1p-11 : 0x1p-8) : 0.0;
        double tolerance = 1e-5 * double(products);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], want[i],
                      tolerance + (1e-5 + rounding) * std::abs(want[i]))
              << path << " c=" << t.c << " f16 " << f16 << " y16 " << y16
              << " nhwc " << nhwc << " element " << i;
      }
  });
}

TEST(Conv2d, ResidualMayBeTheInput) {
  // A ResNet block's identity: y = relu(conv(x) + x).
  int64_t p[LOCUS_CONV_PARAM_COUNT] = {1,
                                       16,
                                       6,
                                       6,
                                       16,
                                       3,
                                       3,
                                       6,
                                       6,
                                       1,
                                       1,
                                       1,
                                       1,
                                       1,
                                       1,
                                       1,
                                       LOCUS_CONV_RESIDUAL | LOCUS_CONV_RELU};
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(16 * 36), w(16 * 16 * 9), y(16 * 36);
  for (float &f : x)
    f = dist(rng);
  for (float &f : w)
    f = dist(rng);
  std::vector<double> want = convRef(p, x, w, {}, x);
  locus_conv2d(address(p), address(x.data()), address(w.data()), 0,
               address(x.data()), address(y.data()));
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 2e-3 + 1e-5 * std::abs(want[i])) << i;
}

TEST(Conv2d, NamesItsImplementation) {
  std::string name = locus_conv_name();
  if (const char *choice = std::getenv("LOCUS_CONV");
      choice && std::string(choice) == "builtin") {
    EXPECT_EQ(name.rfind("im2col", 0), 0u) << name;
    return;
  }
  if (access("/usr/lib/x86_64-linux-gnu/libdnnl.so.2", R_OK) == 0)
    EXPECT_EQ(name.rfind("oneDNN 2.", 0), 0u) << name;
}

namespace {

/// A convolution's shapes, as the gradient cases give them.
struct GradCase {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
};

/// The input gradient (input = true) or the weight gradient of the
/// convolution `p` in double: dx from dy and w, or dw from x and dy.
std::vector<double> convGradRef(const int64_t *p, bool input,
                                const std::vector<float> &a,
                                const std::vector<float> &b) {
  int64_t n = p[LOCUS_CONV_N], c = p[LOCUS_CONV_C], h = p[LOCUS_CONV_H],
          wd = p[LOCUS_CONV_W], o = p[LOCUS_CONV_O], kh = p[LOCUS_CONV_KH],
          kw = p[LOCUS_CONV_KW], oh = p[LOCUS_CONV_OH], ow = p[LOCUS_CONV_OW],
          g = p[LOCUS_CONV_GROUPS];
  int64_t cg = c / g, og = o / g;
  std::vector<double> y(input ? n * c * h * wd : o * cg * kh * kw, 0.0);
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t k = 0; k < o; ++k)
      for (int64_t q = 0; q < cg; ++q)
        for (int64_t r = 0; r < kh; ++r)
          for (int64_t s = 0; s < kw; ++s)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                int64_t row = i * p[LOCUS_CONV_STRIDE_H] +
                              r * p[LOCUS_CONV_DILATION_H] -
                              p[LOCUS_CONV_PAD_H];
                int64_t col = j * p[LOCUS_CONV_STRIDE_W] +
                              s * p[LOCUS_CONV_DILATION_W] -
                              p[LOCUS_CONV_PAD_W];
                if (row < 0 || row >= h || col < 0 || col >= wd)
                  continue;
                int64_t xAt = ((b0 * c + k / og * cg + q) * h + row) * wd + col;
                int64_t wAt = ((k * cg + q) * kh + r) * kw + s;
                int64_t dyAt = ((b0 * o + k) * oh + i) * ow + j;
                if (input)
                  y[xAt] += double(a[dyAt]) * b[wAt];
                else
                  y[wAt] += double(a[xAt]) * b[dyAt];
              }
  return y;
}

} // namespace

TEST(Conv2dGrad, MatchesADoubleReference) {
  std::printf("[  NOTE    ] locus_conv2d_grad uses %s\n", locus_conv_name());
  RandomFloats random(11);
  // n, c, h, w, o, kh, kw, stride h/w, pad h/w, dilation h/w, groups
  GradCase cases[] = {{2, 3, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                      {1, 64, 20, 20, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                      // A ResNet stage's first conv and its downsample: stride
                      // 2 on an even size, so the last row and column get no
                      // gradient from the last output.
                      {2, 16, 16, 16, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1},
                      {2, 16, 16, 16, 32, 1, 1, 2, 2, 0, 0, 1, 1, 1},
                      {3, 6, 13, 11, 16, 5, 5, 2, 1, 0, 2, 1, 1, 1},
                      {1, 8, 9, 9, 12, 3, 3, 1, 2, 2, 1, 2, 2, 4},
                      {2, 16, 7, 7, 32, 1, 1, 1, 1, 0, 0, 1, 1, 1},
                      {2, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32},
                      {1, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 1, 1, 1},
                      {2, 12, 11, 13, 20, 3, 3, 2, 1, 2, 2, 2, 2, 1},
                      // Winograd's (ConvChoiceTest).
                      {2, 64, 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                      {8, 64, 16, 16, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1}};
  for (const GradCase &t : cases) {
    int64_t oh = (t.h + 2 * t.ph - t.dh * (t.kh - 1) - 1) / t.sh + 1;
    int64_t ow = (t.w + 2 * t.pw - t.dw * (t.kw - 1) - 1) / t.sw + 1;
    int64_t p[LOCUS_CONV_PARAM_COUNT] = {t.n,  t.c,  t.h,  t.w,  t.o,  t.kh,
                                         t.kw, oh,   ow,   t.sh, t.sw, t.ph,
                                         t.pw, t.dh, t.dw, t.g,  0};
    std::vector<float> x = random(t.n * t.c * t.h * t.w),
                       w = random(t.o * t.c / t.g * t.kh * t.kw),
                       dy = random(t.n * t.o * oh * ow);
    for (int64_t kind : {LOCUS_CONV_INPUT_GRAD, LOCUS_CONV_WEIGHT_GRAD}) {
      bool input = kind == LOCUS_CONV_INPUT_GRAD;
      const std::vector<float> &a = input ? dy : x, &b = input ? w : dy;
      std::vector<double> want = convGradRef(p, input, a, b);
      // Terms summed per element: over output channels and the window for
      // dx, over images and output positions for dw.
      int64_t terms = input ? t.o / t.g * t.kh * t.kw : t.n * oh * ow;
      double tolerance = 1e-5 * double(terms);
      for (int round = 0; round < 2; ++round) { // built, then cached
        // The output's old contents (NaN) must not leak in.
        std::vector<float> y(want.size(), std::nanf(""));
        locus_conv2d_grad(kind, address(p), address(a.data()),
                          address(b.data()), address(y.data()));
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], want[i], tolerance + 1e-5 * std::abs(want[i]))
              << (input ? "input" : "weight") << " gradient, case c=" << t.c
              << " o=" << t.o << " groups=" << t.g << " stride=" << t.sh
              << " element " << i << " round " << round;
      }
    }
  }
}

TEST(Conv2dGrad, SixteenBitOperandsMatchTheReference) {
  // LOCUS_CONV_BF16 and _F16: the two inputs of either gradient 16-bit,
  // sums in f32, and with LOCUS_CONV_Y_16BIT the result rounded once;
  // through oneDNN's bf16 kernels (where the CPU has them), widened to f32
  // (LOCUS_CONV16=widen, and always for f16) and built-in.
  RandomFloats random(12);
  GradCase cases[] = {{2, 32, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                      {2, 16, 12, 12, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1},
                      {2, 16, 8, 8, 32, 1, 1, 2, 2, 0, 0, 1, 1, 1},
                      {1, 3, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                      {1, 8, 9, 9, 12, 3, 3, 1, 2, 2, 1, 2, 2, 4}};
  forEachSixteenBitPath([&](const char *path) {
    for (const GradCase &t : cases)
      for (int64_t variant = 0; variant < 4; ++variant) {
        bool f16 = variant & 1, y16 = variant & 2;
        int64_t oh = (t.h + 2 * t.ph - t.dh * (t.kh - 1) - 1) / t.sh + 1;
        int64_t ow = (t.w + 2 * t.pw - t.dw * (t.kw - 1) - 1) / t.sw + 1;
        int64_t flags = (f16 ? LOCUS_CONV_F16 : LOCUS_CONV_BF16) |
                        (y16 ? LOCUS_CONV_Y_16BIT : 0);
        int64_t p[LOCUS_CONV_PARAM_COUNT] = {t.n,  t.c,  t.h,  t.w,  t.o,  t.kh,
                                             t.kw, oh,   ow,   t.sh, t.sw, t.ph,
                                             t.pw, t.dh, t.dw, t.g,  flags};
        std::vector<uint16_t> x16, w16, dy16;
        std::vector<float> x = roundTo16(random(t.n * t.c * t.h * t.w), f16,
                                         x16),
                           w = roundTo16(random(t.o * t.c / t.g * t.kh * t.kw),
                                         f16, w16),
                           dy = roundTo16(random(t.n * t.o * oh * ow), f16,
                                          dy16);
        for (int64_t kind : {LOCUS_CONV_INPUT_GRAD, LOCUS_CONV_WEIGHT_GRAD}) {
          bool input = kind == LOCUS_CONV_INPUT_GRAD;
          std::vector<double> want =
              convGradRef(p, input, input ? dy : x, input ? w : dy);
          const std::vector<uint16_t> &a = input ? dy16 : x16,
                                      &b = input ? w16 : dy16;
          std::vector<float> y(want.size(), std::nanf(""));
          std::vector<uint16_t> bits(want.size(), 0x7FC0);
          locus_conv2d_grad(kind, address(p), address(a.data()),
                            address(b.data()),
                            y16 ? address(bits.data()) : address(y.data()));
          if (y16)
            for (size_t i = 0; i < y.size(); ++i)
              y[i] = f16 ? locus::half::fromF16Bits(bits[i])
                         : locus::half::fromBf16Bits(bits[i]);
          int64_t terms = input ? t.o / t.g * t.kh * t.kw : t.n * oh * ow;
          double rounding = y16 ? (f16 ? 0x1p-11 : 0x1p-8) : 0.0;
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_NEAR(y[i], want[i],
                        1e-5 * double(terms) +
                            (1e-5 + rounding) * std::abs(want[i]))
                << path << (input ? " input" : " weight")
                << " gradient c=" << t.c << " f16 " << f16 << " y16 " << y16
                << " element " << i;
        }
      }
  });
}

namespace {

void expectEveryIndexOnce() {
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 100003}) {
    Ranges r(static_cast<size_t>(n));
    for (int round = 0; round < 3; ++round)
      locus_parallel_for(markRange, &r, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(r.hits[static_cast<size_t>(i)].load(), 3)
          << "n " << n << " index " << i;
  }
}

void expectManyCallersAtOnce() {
  // One job at a time runs on the pool; the others run on their callers.
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  threads.reserve(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        Ranges r(513);
        locus_parallel_for(markRange, &r, 513);
        for (auto &h : r.hits)
          wrong[t] += h.load() != 1;
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

// LOCUS_GEMM_C_16BIT: C in the operands' 16-bit type, each f32 sum rounded
// once to nearest even (what a product whose only reader rounded its f32
// result calls). The operands are multiples of 1/8 in [-4, 4], so every
// sum is exact in f32 and the result must be that sum rounded, bit for
// bit (truncating, or rounding twice, gives other bits); over a batch of
// two, rows of C further apart than their length (the gap untouched), and
// a beta that reads C widened.
TEST(Gemm16, WritesA16BitResultRoundedOnce) {
  std::mt19937 random(11);
  std::uniform_int_distribution<int> eighths(-32, 32);
  for (int32_t dtype : {int32_t{LOCUS_PLAN_BF16}, int32_t{LOCUS_PLAN_F16}})
    for (float beta : {0.0f, 0.5f}) {
      auto bits = [&](float v) {
        return dtype == LOCUS_PLAN_BF16 ? locus::half::bf16Bits(v)
                                        : locus::half::f16Bits(v);
      };
      auto value = [&](uint16_t b) {
        return dtype == LOCUS_PLAN_BF16 ? locus::half::fromBf16Bits(b)
                                        : locus::half::fromF16Bits(b);
      };
      const int batch = 2, m = 33, n = 17, k = 70, ldc = n + 3;
      auto exact = [&](size_t size) {
        std::vector<uint16_t> v(size);
        for (uint16_t &x : v)
          x = bits(static_cast<float>(eighths(random)) / 8.0f);
        return v;
      };
      std::vector<uint16_t> a16 = exact(batch * m * k),
                            b16 = exact(batch * k * n),
                            c16 = exact(batch * m * ldc);
      std::vector<uint16_t> before = c16;
      locus_gemm_16(dtype | LOCUS_GEMM_C_16BIT, batch, m, n, k,
                    reinterpret_cast<uintptr_t>(a16.data()), k, m * k, 0,
                    reinterpret_cast<uintptr_t>(b16.data()), n, k * n, 0, beta,
                    reinterpret_cast<uintptr_t>(c16.data()), ldc, m * ldc);
      for (int i = 0; i < batch; ++i)
        for (int r = 0; r < m; ++r) {
          for (int j = 0; j < n; ++j) {
            int64_t at = i * m * ldc + r * ldc + j;
            double sum = beta * value(before[at]);
            for (int p = 0; p < k; ++p)
              sum += static_cast<double>(value(a16[i * m * k + r * k + p])) *
                     value(b16[i * k * n + p * n + j]);
            ASSERT_EQ(c16[at], bits(static_cast<float>(sum)))
                << dtype << " beta " << beta << " batch " << i << " [" << r
                << ", " << j << "]: sum " << sum;
          }
          for (int j = n; j < ldc; ++j)
            ASSERT_EQ(c16[i * m * ldc + r * ldc + j],
                      before[i * m * ldc + r * ldc + j]);
        }
    }
}

} // namespace

// ctest runs each test in a process of its own: these two see the
// runtime's own workers (nothing has loaded libgomp yet) ...
TEST(ParallelFor, EveryIndexRunsExactlyOnce) {
  std::printf("[  NOTE    ] locus_parallel_for uses %d threads\n",
              locus_parallel_threads());
  EXPECT_GE(locus_parallel_threads(), 1);
  expectEveryIndexOnce();
}

TEST(ParallelFor, CallersOnManyThreadsAtOnce) { expectManyCallersAtOnce(); }

// ... and this one libgomp's team, which the runtime's loops join once
// oneDNN or OpenBLAS's OpenMP build brought it (naming them loads them).
TEST(ParallelFor, OnTheLibrariesOpenMpTeam) {
  std::printf("[  NOTE    ] %s; %s\n", locus_blas_name(), locus_conv_name());
  expectEveryIndexOnce();
  expectManyCallersAtOnce();
}
