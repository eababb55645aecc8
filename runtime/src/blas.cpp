// blas.cpp - matrix products for generated kernels: OpenBLAS's cblas_sgemm
// when it can be loaded (dlopen, never linked), a blocked loop otherwise.
//
// Which OpenBLAS: $LOCUS_OPENBLAS when set, then Debian's OpenMP build by
// its path, then whatever libopenblas.so.0 is. Debian installs the pthreads
// build as the default alternative when it is present, and its threads spin
// beside the runtime's own workers on the same cores (the MLP training step
// took 18.8 ms instead of 14 on two cores); the OpenMP build's team spins
// only briefly when idle (openmp.h). The name says which build and
// threading was loaded, and the model's report shows it.
//
// On a CPU with AVX-512 that OpenBLAS does not know by model, it takes
// the AVX-512 (SkylakeX) kernels rather than the AVX2 ones it would pick
// (preferAvx512Kernels below).
//
// Products with one row or one column (a batch-1 layer) go to cblas_sgemv:
// OpenBLAS 0.3.21's sgemm packs the whole weight matrix on every call and
// has no such shortcut; for 1x1024 by 1024x1024 (transposed) it took
// 371 us against sgemv's 29 us on the build machine.

#include "constants.h"
#include "dl.h"
#include "dnnl.h"
#include "guard.h"
#include "locus/abi.h"
#include "locus/half.hpp"
#include "openmp.h"
#include "workspace.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

using locus::rt::bindSymbol;
using locus::rt::Library;
using locus::rt::openFirst;

namespace {

// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C,
// ldc) with CBLAS's enum values: RowMajor 101, NoTrans 111, Trans 112.
using Sgemm = void (*)(int, int, int, int, int, int, float, const float *, int,
                       const float *, int, float, float *, int);
// cblas_sgemv(order, trans, M, N, alpha, A, lda, x, incx, beta, y, incy).
using Sgemv = void (*)(int, int, int, int, float, const float *, int,
                       const float *, int, float, float *, int);

using SetThreads = void (*)(int);
using GetThreads = int (*)();
using GetParallel = int (*)();
using GetConfig = char *(*)();

struct Blas {
  Sgemm sgemm = nullptr;
  Sgemv sgemv = nullptr; // may be null when sgemm is not
  SetThreads setThreads = nullptr;
  GetThreads getThreads = nullptr;
  std::string name;
};

/// Below this many elements of A, B and C together (1 MiB of floats),
/// OpenBLAS's threads cost more than they give (bench/: the seed CNN's
/// convolution, 140K elements, runs 1.5x faster on one thread); above it
/// they pay, also for memory-bound products such as a batch-1 layer
/// (1x784 by 784x1024: 0.8M elements, 1.9x faster on two threads).
constexpr int64_t kThreadedElements = 256 << 10;

/// "OpenBLAS 0.3.21 ... Haswell ..., OpenMP threads (path)": its build, as
/// openblas_get_config and openblas_get_parallel say, and where it is.
std::string describe(void *handle, const char *library) {
  GetConfig config = nullptr;
  GetParallel parallel = nullptr;
  bindSymbol(handle, config, "openblas_get_config");
  bindSymbol(handle, parallel, "openblas_get_parallel");
  const char *text = config ? config() : nullptr;
  std::string name = text && *text ? text : "OpenBLAS";
  if (parallel) {
    int kind = parallel();
    name += kind == 0   ? ", single-threaded"
            : kind == 1 ? ", its own pthreads (they and Locus's workers share "
                          "the cores; LOCUS_OPENBLAS picks another build)"
            : kind == 2 ? ", OpenMP threads"
                        : ", threading " + std::to_string(kind);
  }
  return name + " (" + library + ")";
}

/// OpenBLAS 0.3.21 picks its kernels by CPU model and takes CPUs it does
/// not know, AMD's Zen 5 among them, for Haswell: AVX2 kernels on a CPU
/// with AVX-512 (a 256x1024 by 1024x784 product ran at 173 GFLOP/s on
/// the build machine's two cores as Haswell, 314 as SkylakeX). Where the
/// CPU has the AVX-512 subsets SkylakeX's kernels use, and the user has
/// not chosen (OPENBLAS_CORETYPE), ask for them; true when it did.
bool preferAvx512Kernels() {
#if defined(__x86_64__)
  if (std::getenv("OPENBLAS_CORETYPE"))
    return false;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") ||
      !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512cd"))
    return false;
  // Read once, when OpenBLAS is loaded.
  setenv("OPENBLAS_CORETYPE", "SkylakeX", /*overwrite=*/0);
  return true;
#else
  return false;
#endif
}

const Blas &blas() {
  static Blas loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    if (const char *choice = std::getenv("LOCUS_BLAS");
        choice && std::string(choice) == "builtin") {
      loaded.name = "built-in blocked loop (LOCUS_BLAS=builtin)";
      return;
    }
    // OpenBLAS's OpenMP team must not spin long while the runtime's own
    // worker threads run a kernel's loops.
    locus::rt::settleOpenMpTeams();
    bool avx512 = preferAvx512Kernels();
    std::vector<std::string> candidates;
    if (const char *chosen = std::getenv("LOCUS_OPENBLAS"); chosen && *chosen)
      candidates.emplace_back(chosen);
#if defined(__x86_64__)
    candidates.emplace_back(
        "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0");
#elif defined(__aarch64__)
    candidates.emplace_back(
        "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0");
#endif
    candidates.emplace_back("libopenblas.so.0");
    candidates.emplace_back("libopenblas.so");
    for (const std::string &candidate : candidates) {
      const char *library = candidate.c_str();
      Library opened = openFirst({library});
      void *handle = opened.handle;
      if (!handle) {
        why = opened.why;
        continue;
      }
      if (bindSymbol(handle, loaded.sgemm, "cblas_sgemm")) {
        bindSymbol(handle, loaded.sgemv, "cblas_sgemv");
        bindSymbol(handle, loaded.setThreads, "openblas_set_num_threads");
        bindSymbol(handle, loaded.getThreads, "openblas_get_num_threads");
        loaded.name = describe(handle, library);
        // The runtime's parallel loops join OpenBLAS's OpenMP team.
        locus::rt::adoptOpenMpTeam();
        if (avx512)
          loaded.name += ", AVX-512 kernels asked for (OPENBLAS_CORETYPE="
                         "SkylakeX: set it to choose others)";
        return;
      }
      why = std::string(library) + " has no cblas_sgemm";
    }
    loaded.name = "built-in blocked loop (" + why + ")";
  });
  return loaded;
}

/// C = op(A) op(B) + beta C, cache-blocked, for when there is no BLAS.
void blockedSgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  bool ta, const float *b, int64_t ldb, bool tb, float beta,
                  float *c, int64_t ldc) {
  // beta = 0 means C is not read (it may hold anything, NaN included).
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == 0.0f ? 0.0f : c[i * ldc + j] * beta;
  constexpr int64_t kBlock = 64;
  for (int64_t i0 = 0; i0 < m; i0 += kBlock)
    for (int64_t p0 = 0; p0 < k; p0 += kBlock)
      for (int64_t i = i0; i < std::min(m, i0 + kBlock); ++i)
        for (int64_t p = p0; p < std::min(k, p0 + kBlock); ++p) {
          float av = ta ? a[p * lda + i] : a[i * lda + p];
          float *crow = c + i * ldc;
          if (!tb) {
            const float *brow = b + p * ldb;
            for (int64_t j = 0; j < n; ++j)
              crow[j] += av * brow[j];
          } else {
            for (int64_t j = 0; j < n; ++j)
              crow[j] += av * b[j * ldb + p];
          }
        }
}

/// Products with at most this many rows (or columns) run as that many
/// matrix-vector products: each reads the matrix once, where OpenBLAS's
/// sgemm packs it (4x1024 by 1024x1000: 230 us as sgemm, about 120 as four
/// sgemv).
constexpr int64_t kVectorRows = 4;

/// C = op(A) op(B) + beta C as matrix-vector products when M or N is small;
/// false (nothing done) otherwise.
bool vectorProducts(const Blas &impl, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, bool ta, const float *b,
                    int64_t ldb, bool tb, float beta, float *c, int64_t ldc) {
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  if (!impl.sgemv || (m > kVectorRows && n > kVectorRows))
    return false;
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  // beta = 0 means C is not read; BLAS implementations differ on whether
  // 0 * NaN in y stays NaN, so C starts as zeros.
  if (beta == 0.0f)
    for (int64_t r = 0; r < m; ++r)
      std::fill(c + r * ldc, c + r * ldc + n, 0.0f);
  if (m <= n) {
    // Row r of C: c_r = op(B)^T a_r, where a_r is row r of op(A) (stride 1,
    // or lda when A is transposed). op(B) is [K, N]: B itself ([K, N],
    // read transposed) or B^T (B is [N, K], read as is).
    for (int64_t r = 0; r < m; ++r) {
      const float *row = ta ? a + r : a + r * lda;
      int64_t step = ta ? lda : 1;
      impl.sgemv(kRowMajor, tb ? kNoTrans : kTrans, i32(tb ? n : k),
                 i32(tb ? k : n), 1.0f, b, i32(ldb), row, i32(step), beta,
                 c + r * ldc, 1);
    }
    return true;
  }
  // Column j of C: op(A) b_j, where b_j is column j of op(B).
  for (int64_t j = 0; j < n; ++j) {
    const float *col = tb ? b + j * ldb : b + j;
    int64_t step = tb ? 1 : ldb;
    impl.sgemv(kRowMajor, ta ? kTrans : kNoTrans, i32(ta ? k : m),
               i32(ta ? m : k), 1.0f, a, i32(lda), col, i32(step), beta, c + j,
               i32(ldc));
  }
  return true;
}

#if LOCUS_HAVE_DNNL_H

/// Products with at least this many multiply-adds go to oneDNN where it
/// loads; smaller ones cost less in OpenBLAS on one thread than a
/// primitive's lookup and launch.
constexpr int64_t kDnnlMultiplyAdds = 32768;

/// LOCUS_BLAS=openblas (or builtin) keeps oneDNN out of matrix products.
bool dnnlChosen() {
  static const bool chosen = [] {
    const char *choice = std::getenv("LOCUS_BLAS");
    return !choice || !*choice;
  }();
  return chosen;
}

using locus::rt::Dnnl;
using locus::rt::ok;

/// What a matmul primitive is built for: shape, transposes, leading
/// dimensions, whether C is added (beta, a sum post-op), whether B is
/// read in oneDNN's own (packed) layout, and A's and B's element type (C
/// is f32).
using ProductKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool,
               float, bool, dnnl_data_type_t>;

/// A product's primitive and its operands' descriptions. With a packed B,
/// the matmul reads `packed`, which `pack` makes from B as it lies (`b`).
struct Product {
  dnnl_primitive_t matmul = nullptr, pack = nullptr;
  dnnl_memory_desc_t a{}, b{}, c{}, scratch{}, packed{};
  size_t scratchBytes = 0, packedBytes = 0;
};

/// The primitive of `key`, built on first use and kept (a model has a
/// handful of product shapes); null when oneDNN refuses it.
const Product *productFor(const Dnnl &d, const ProductKey &key) {
  static std::mutex mutex;
  // Never destroyed, as the convolutions' (conv.cpp).
  static auto *cache = new std::map<ProductKey, std::unique_ptr<Product>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache->try_emplace(key);
  if (!inserted)
    return it->second.get();
  auto [m, n, k, lda, ldb, ldc, ta, tb, beta, packB, type] = key;
  auto p = std::make_unique<Product>();
  // Row-major operands, each read as it lies: op(A) is [M, K], op(B)
  // [K, N], with the strides their transposes give.
  dnnl_dims_t aDims = {m, k}, bDims = {k, n}, cDims = {m, n};
  dnnl_dims_t aStrides = {ta ? 1 : lda, ta ? lda : 1},
              bStrides = {tb ? 1 : ldb, tb ? ldb : 1}, cStrides = {ldc, 1};
  dnnl_matmul_desc_t desc;
  if (!ok(d.dnnl_memory_desc_init_by_strides(&p->a, 2, aDims, type,
                                             aStrides)) ||
      !ok(d.dnnl_memory_desc_init_by_strides(&p->b, 2, bDims, type,
                                             bStrides)) ||
      !ok(d.dnnl_memory_desc_init_by_tag(&p->packed, 2, bDims, type,
                                         dnnl_format_tag_any)) ||
      !ok(d.dnnl_memory_desc_init_by_strides(&p->c, 2, cDims, dnnl_f32,
                                             cStrides)) ||
      !ok(d.dnnl_matmul_desc_init(&desc, &p->a, packB ? &p->packed : &p->b,
                                  nullptr, &p->c)))
    return nullptr;
  // oneDNN's own scratchpad raced when two threads ran products at once:
  // each thread brings its own.
  dnnl_primitive_desc_t pd =
      locus::rt::describePrimitive(d, &desc, beta, /*relu=*/false);
  const dnnl_memory_desc_t *scratch =
      pd ? d.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)
         : nullptr;
  const dnnl_memory_desc_t *weights =
      pd ? d.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)
         : nullptr;
  if (scratch) {
    p->scratch = *scratch;
    p->scratchBytes = d.dnnl_memory_desc_get_size(scratch);
  }
  if (packB && weights) {
    p->packed = *weights;
    p->packedBytes = d.dnnl_memory_desc_get_size(weights);
    p->pack = locus::rt::makeReorder(d, p->b, p->packed);
  }
  bool built = scratch && (!packB || p->pack) &&
               ok(d.dnnl_primitive_create(&p->matmul, pd));
  if (pd)
    d.dnnl_primitive_desc_destroy(pd);
  if (built) {
    it->second = std::move(p);
  } else {
    for (dnnl_primitive_t prim : {p->matmul, p->pack})
      if (prim)
        d.dnnl_primitive_destroy(prim);
  }
  return it->second.get();
}

/// C = op(A) op(B) + beta C through oneDNN's matmul (its AVX-512 brgemm
/// kernels where the CPU has them), A and B of `type` (f32, bf16 or f16),
/// C f32; false (nothing written) when it cannot.
bool dnnlProduct(const Dnnl &d, int64_t m, int64_t n, int64_t k, const void *a,
                 int64_t lda, bool ta, const void *b, int64_t ldb, bool tb,
                 float beta, float *c, int64_t ldc,
                 dnnl_data_type_t type = dnnl_f32) {
  size_t elementBytes = type == dnnl_f32 ? sizeof(float) : sizeof(uint16_t);
  // A B that no step writes (a layer's weights) is packed into oneDNN's
  // layout once, in a copy the model keeps (constants.h): 64x1024 by
  // 1024x1024 (transposed) ran in 342-360 us packed against 582-662 with B
  // read as it lies, on the build machine. Weights written by the step (a
  // training step's) are read as they lie.
  const void *weights = b;
  const Product *p = nullptr;
  locus::rt::Constants *constants = locus::rt::stepConstants();
  size_t bBytes = static_cast<size_t>(((tb ? n : k) - 1) * ldb + (tb ? k : n)) *
                  elementBytes;
  if (constants && constants->contains(b, bBytes)) {
    p = productFor(
        d, ProductKey{m, n, k, lda, ldb, ldc, ta, tb, beta, true, type});
    const void *packed =
        p ? constants->derived(b, p, p->packedBytes,
                               [&](void *out) {
                                 return locus::rt::reorderNow(
                                     d, p->pack, p->b, b, p->packed, out);
                               })
          : nullptr;
    if (packed)
      weights = packed;
    else
      p = nullptr;
  }
  if (!p)
    p = productFor(
        d, ProductKey{m, n, k, lda, ldb, ldc, ta, tb, beta, false, type});
  dnnl_stream_t stream = p ? locus::rt::dnnlStream(d) : nullptr;
  if (!stream)
    return false;
  // The calling thread's scratchpad: grows to the largest product's, then
  // is reused (no allocation per call).
  thread_local locus::rt::Workspace scratchpad;
  char *space = scratchpad.get(std::max<size_t>(p->scratchBytes, 64));
  if (!space)
    return false;
  dnnl_memory_t am = nullptr, bm = nullptr, cm = nullptr, sm = nullptr;
  bool ran =
      ok(d.dnnl_memory_create(&am, &p->a, d.engine, const_cast<void *>(a))) &&
      ok(d.dnnl_memory_create(&bm, p->pack ? &p->packed : &p->b, d.engine,
                              const_cast<void *>(weights))) &&
      ok(d.dnnl_memory_create(&cm, &p->c, d.engine, c)) &&
      ok(d.dnnl_memory_create(&sm, &p->scratch, d.engine, space));
  if (ran) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, am},
                              {DNNL_ARG_WEIGHTS, bm},
                              {DNNL_ARG_DST, cm},
                              {DNNL_ARG_SCRATCHPAD, sm}};
    ran = ok(d.dnnl_primitive_execute(p->matmul, stream, 4, args)) &&
          ok(d.dnnl_stream_wait(stream));
  }
  for (dnnl_memory_t mem : {am, bm, cm, sm})
    if (mem)
      d.dnnl_memory_destroy(mem);
  return ran;
}

/// oneDNN when it loaded and no one chose otherwise, or null.
const Dnnl *productDnnl() {
  if (!dnnlChosen())
    return nullptr;
  const Dnnl &d = locus::rt::dnnl();
  return d.engine ? &d : nullptr;
}

/// How much slower than widening oneDNN's 16-bit products may time in
/// the probe and still be chosen: a wrong "widen" costs far more than a
/// wrong "native" (widening a weight at every call took 15x the native
/// time at one row; the slowest CPU's native kernels took 1.8x).
constexpr double kWidenMargin = 1.25;

/// The median over rounds of `a`'s time over `b`'s, the two run by turns
/// so that each pair meets the same threads, clocks and caches, after a
/// first run of each that builds its primitive; infinity when `a` cannot
/// run, 0 when `b` cannot.
template <typename A, typename B> double medianRatio(A a, B b) {
  constexpr int kRounds = 7;
  std::vector<double> ratios;
  for (int i = 0; i < kRounds; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (!a())
      return std::numeric_limits<double>::infinity();
    auto middle = std::chrono::steady_clock::now();
    if (!b())
      return 0.0;
    std::chrono::duration<double> tookA = middle - start,
                                  tookB =
                                      std::chrono::steady_clock::now() - middle;
    if (i > 0 && tookB.count() > 0)
      ratios.push_back(tookA.count() / tookB.count());
  }
  if (ratios.empty())
    return 1.0;
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2,
                   ratios.end());
  return ratios[ratios.size() / 2];
}

/// Whether oneDNN's products of `type` (bf16 or f16) operands run faster
/// than the same operands widened to f32 on this CPU, measured once per
/// process on a 256x256x256 product (about 3 ms): the median ratio of
/// the two run by turns. (The best of three of each, one after the
/// other, chose widening in 1 process of 8 on the 2-core Zen 4 build
/// machine, where a first step's products ran 8x slower at times; at one
/// row every product then took 15x as long.) oneDNN 2.6.3's bf16
/// kernels took 0.51x the f32 time on an AMD EPYC (Zen 4) and 1.8x on an
/// Intel Xeon, both with AVX512-BF16; its f16 products need AVX512-FP16.
/// LOCUS_GEMM16=dnnl or widen decides instead.
bool dnnl16Pays(const Dnnl &d, dnnl_data_type_t type) {
  static std::mutex mutex;
  static std::map<dnnl_data_type_t, bool> decided;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = decided.find(type); it != decided.end())
    return it->second;
  const char *choice = std::getenv("LOCUS_GEMM16");
  if (choice &&
      (std::strcmp(choice, "dnnl") == 0 || std::strcmp(choice, "widen") == 0))
    return decided[type] = std::strcmp(choice, "dnnl") == 0;
  constexpr int64_t kSide = 256;
  std::vector<uint16_t> halves(kSide * kSide);
  std::vector<float> floats(kSide * kSide), c(kSide * kSide);
  for (size_t i = 0; i < halves.size(); ++i) {
    floats[i] = 1.0f + static_cast<float>(i % 61) * 0.01f;
    halves[i] = type == dnnl_bf16 ? locus::half::bf16Bits(floats[i])
                                  : locus::half::f16Bits(floats[i]);
  }
  auto native = [&] {
    return dnnlProduct(d, kSide, kSide, kSide, halves.data(), kSide, false,
                       halves.data(), kSide, false, 0.0f, c.data(), kSide,
                       type);
  };
  auto widened = [&] {
    for (size_t i = 0; i < halves.size(); ++i) // what widening costs too
      floats[i] = type == dnnl_bf16 ? locus::half::fromBf16Bits(halves[i])
                                    : locus::half::fromF16Bits(halves[i]);
    return dnnlProduct(d, kSide, kSide, kSide, floats.data(), kSide, false,
                       floats.data(), kSide, false, 0.0f, c.data(), kSide);
  };
  return decided[type] = medianRatio(native, widened) < kWidenMargin;
}

#endif // LOCUS_HAVE_DNNL_H

/// The `rows` x `cols` 16-bit matrix at `x` (rows `ld` apart) as dense
/// f32 in `out` (exact).
void widen(int32_t dtype, const uint16_t *x, int64_t rows, int64_t cols,
           int64_t ld, float *out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] = dtype == LOCUS_PLAN_BF16
                              ? locus::half::fromBf16Bits(x[r * ld + j])
                              : locus::half::fromF16Bits(x[r * ld + j]);
}

/// C = op(A) op(B) + beta C of 16-bit A and B, reading them in place (no
/// memory): when widening them finds none.
void directGemm16(int32_t dtype, int64_t m, int64_t n, int64_t k,
                  const uint16_t *a, int64_t lda, bool ta, const uint16_t *b,
                  int64_t ldb, bool tb, float beta, float *c, int64_t ldc) {
  auto value = [dtype](uint16_t bits) {
    return dtype == LOCUS_PLAN_BF16 ? locus::half::fromBf16Bits(bits)
                                    : locus::half::fromF16Bits(bits);
  };
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p)
        acc += value(ta ? a[p * lda + r] : a[r * lda + p]) *
               value(tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[r * ldc + j] = acc + (beta == 0.0f ? 0.0f : beta * c[r * ldc + j]);
    }
}

} // namespace

extern "C" void locus_sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                            uintptr_t a, int64_t lda, int64_t strideA,
                            int32_t transA, uintptr_t b, int64_t ldb,
                            int64_t strideB, int32_t transB, float beta,
                            uintptr_t c, int64_t ldc, int64_t strideC) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return; // nothing to compute
  // Never throws: when finding the BLAS runs out of memory, the built-in
  // loop computes the product (and the search is tried again next call).
  static const Blas kNone{};
  const Blas &impl = *locus::rt::guardValue(&kNone, [] { return &blas(); });
#if LOCUS_HAVE_DNNL_H
  const Dnnl *dnnl = locus::rt::guardValue(static_cast<const Dnnl *>(nullptr),
                                           [] { return productDnnl(); });
#endif
  // Generated code has the buffers' addresses as integers
  // (memref.extract_aligned_pointer_as_index); this is where they become
  // pointers again.
  auto address = [](uintptr_t value) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    return reinterpret_cast<float *>(value);
  };
  for (int64_t i = 0; i < batch; ++i) {
    const float *pa = address(a) + i * strideA;
    const float *pb = address(b) + i * strideB;
    float *pc = address(c) + i * strideC;
    if (k <= 0) {
      // C = beta C. CBLAS wants lda >= max(1, K): do it here instead.
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < n; ++j)
          pc[r * ldc + j] = beta == 0.0f ? 0.0f : pc[r * ldc + j] * beta;
      continue;
    }
#if LOCUS_HAVE_DNNL_H
    if (dnnl && m > kVectorRows && n > kVectorRows &&
        m * n * k >= kDnnlMultiplyAdds && locus::rt::guardValue(false, [&] {
          return dnnlProduct(*dnnl, m, n, k, pa, lda, transA, pb, ldb, transB,
                             beta, pc, ldc);
        }))
      continue;
#endif
    if (impl.sgemm) {
      // Small products on one thread. OpenBLAS's thread count is global:
      // a product running at the same moment in another thread may run on
      // one thread too, which costs time, never correctness.
      bool single = impl.setThreads && impl.getThreads &&
                    m * k + k * n + m * n < kThreadedElements;
      int saved = single ? impl.getThreads() : 1;
      if (saved > 1)
        impl.setThreads(1);
      if (!vectorProducts(impl, m, n, k, pa, lda, transA, pb, ldb, transB, beta,
                          pc, ldc))
        impl.sgemm(101, transA ? 112 : 111, transB ? 112 : 111,
                   static_cast<int>(m), static_cast<int>(n),
                   static_cast<int>(k), 1.0f, pa, static_cast<int>(lda), pb,
                   static_cast<int>(ldb), beta, pc, static_cast<int>(ldc));
      if (saved > 1)
        impl.setThreads(saved);
    } else {
      blockedSgemm(m, n, k, pa, lda, transA, pb, ldb, transB, beta, pc, ldc);
    }
  }
}

namespace {

/// One product of 16-bit A and B into f32 C (locus_gemm_16's per-batch
/// work): oneDNN's 16-bit matmul when `native`, else A and B widened.
void gemm16Into(int32_t dtype, [[maybe_unused]] bool native, int64_t m,
                int64_t n, int64_t k, const uint16_t *pa, int64_t lda,
                int32_t transA, const uint16_t *pb, int64_t ldb, int32_t transB,
                float beta, float *pc, int64_t ldc) {
#if LOCUS_HAVE_DNNL_H
  if (native && k > 0 && m * n * k >= kDnnlMultiplyAdds &&
      locus::rt::guardValue(false, [&] {
        return dnnlProduct(*productDnnl(), m, n, k, pa, lda, transA, pb, ldb,
                           transB, beta, pc, ldc,
                           dtype == LOCUS_PLAN_BF16 ? dnnl_bf16 : dnnl_f16);
      }))
    return;
#endif
  thread_local locus::rt::Workspace wideA, wideB;
  int64_t rowsA = transA ? k : m, colsA = transA ? m : k;
  int64_t rowsB = transB ? n : k, colsB = transB ? k : n;
  auto *fa = reinterpret_cast<float *>(
      wideA.get(static_cast<size_t>(std::max<int64_t>(1, rowsA * colsA)) *
                sizeof(float)));
  auto *fb = reinterpret_cast<float *>(
      wideB.get(static_cast<size_t>(std::max<int64_t>(1, rowsB * colsB)) *
                sizeof(float)));
  if (!fa || !fb) {
    directGemm16(dtype, m, n, k, pa, lda, transA, pb, ldb, transB, beta, pc,
                 ldc);
    return;
  }
  widen(dtype, pa, rowsA, colsA, lda, fa);
  widen(dtype, pb, rowsB, colsB, ldb, fb);
  locus_sgemm(1, m, n, k, reinterpret_cast<uintptr_t>(fa),
              std::max<int64_t>(1, colsA), 0, transA,
              reinterpret_cast<uintptr_t>(fb), std::max<int64_t>(1, colsB), 0,
              transB, beta, reinterpret_cast<uintptr_t>(pc), ldc, 0);
}

/// The `m` x `n` f32 sums at `sums` (dense) rounded to nearest even into
/// the 16-bit C at `c` (rows `ldc` apart).
void roundInto(int32_t dtype, const float *sums, int64_t m, int64_t n,
               uint16_t *c, int64_t ldc) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j)
      c[r * ldc + j] = dtype == LOCUS_PLAN_BF16
                           ? locus::half::bf16Bits(sums[r * n + j])
                           : locus::half::f16Bits(sums[r * n + j]);
}

/// One product into a 16-bit C: the sums in f32 (C widened into them when
/// beta reads it), rounded once. Without memory for the sums, 64 columns
/// of a row at a time.
void gemm16Rounded(int32_t dtype, bool native, int64_t m, int64_t n, int64_t k,
                   const uint16_t *pa, int64_t lda, int32_t transA,
                   const uint16_t *pb, int64_t ldb, int32_t transB, float beta,
                   uint16_t *pc, int64_t ldc) {
  thread_local locus::rt::Workspace sums;
  auto *wide = reinterpret_cast<float *>(
      sums.get(static_cast<size_t>(m * n) * sizeof(float)));
  if (wide) {
    if (beta != 0.0f)
      widen(dtype, pc, m, n, ldc, wide);
    gemm16Into(dtype, native, m, n, k, pa, lda, transA, pb, ldb, transB, beta,
               wide, n);
    roundInto(dtype, wide, m, n, pc, ldc);
    return;
  }
  constexpr int64_t kChunk = 64;
  std::array<float, kChunk> row{};
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      int64_t cols = std::min(kChunk, n - j0);
      uint16_t *out = pc + r * ldc + j0;
      if (beta != 0.0f)
        widen(dtype, out, 1, cols, ldc, row.data());
      directGemm16(dtype, 1, cols, k, transA ? pa + r : pa + r * lda, lda,
                   transA, transB ? pb + j0 * ldb : pb + j0, ldb, transB, beta,
                   row.data(), cols);
      roundInto(dtype, row.data(), 1, cols, out, ldc);
    }
}

} // namespace

extern "C" void locus_gemm_16(int32_t dtype, int64_t batch, int64_t m,
                              int64_t n, int64_t k, uintptr_t a, int64_t lda,
                              int64_t strideA, int32_t transA, uintptr_t b,
                              int64_t ldb, int64_t strideB, int32_t transB,
                              float beta, uintptr_t c, int64_t ldc,
                              int64_t strideC) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return; // nothing to compute
  bool halfC = (dtype & LOCUS_GEMM_C_16BIT) != 0;
  dtype &= ~LOCUS_GEMM_C_16BIT;
  bool native = false;
#if LOCUS_HAVE_DNNL_H
  dnnl_data_type_t type = dtype == LOCUS_PLAN_BF16 ? dnnl_bf16 : dnnl_f16;
  const Dnnl *dnnl = locus::rt::guardValue(static_cast<const Dnnl *>(nullptr),
                                           [] { return productDnnl(); });
  native = dnnl && locus::rt::guardValue(
                       false, [&] { return dnnl16Pays(*dnnl, type); });
#endif
  // NOLINTBEGIN(performance-no-int-to-ptr): generated code passes
  // addresses as integers.
  const auto *a16 = reinterpret_cast<const uint16_t *>(a);
  const auto *b16 = reinterpret_cast<const uint16_t *>(b);
  auto *c32 = reinterpret_cast<float *>(c);
  auto *c16 = reinterpret_cast<uint16_t *>(c);
  // NOLINTEND(performance-no-int-to-ptr)
  for (int64_t i = 0; i < batch; ++i) {
    const uint16_t *pa = a16 + i * strideA, *pb = b16 + i * strideB;
    if (halfC)
      gemm16Rounded(dtype, native, m, n, k, pa, lda, transA, pb, ldb, transB,
                    beta, c16 + i * strideC, ldc);
    else
      gemm16Into(dtype, native, m, n, k, pa, lda, transA, pb, ldb, transB, beta,
                 c32 + i * strideC, ldc);
  }
}

/// Never throws: "unknown (out of memory)" when finding the BLAS ran out.
extern "C" const char *locus_blas_name(void) {
  return locus::rt::guardValue("unknown (out of memory)", [] {
    static const std::string name = [] {
#if LOCUS_HAVE_DNNL_H
      if (blas().sgemm && productDnnl())
        return "oneDNN's matmul (" + locus::rt::dnnl().name +
               "); products with at most " + std::to_string(kVectorRows) +
               " rows or columns, or under " +
               std::to_string(kDnnlMultiplyAdds) +
               " multiply-adds: " + blas().name;
#endif
      return blas().name;
    }();
    return name.c_str();
  });
}
