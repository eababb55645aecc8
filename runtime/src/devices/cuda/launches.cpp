// launches.cpp - running launchers on the cuda device (timed for
// LOCUS_PROFILE=1, or captured into CUDA graphs and replayed) and what
// they call.
//
// A kernel's launcher (host code) calls locus_cuda_launch / _sgemm / _alloc
// / _free below, which act on the device of the launch in progress on this
// thread.

#include "devices/cuda/device.h"

#include "comm.h"

#include "guard.h"
#include "locus/abi.h"
#include "status_impl.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace locus::rt {

namespace {

/// The launch in progress on this thread: what the launcher's calls act on.
thread_local CudaDevice *current = nullptr;

} // namespace

locus_status_t CudaDevice::launch(KernelFn launcher, void *const *buffers) {
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  return launchEntered(launcher, buffers);
}

locus_status_t CudaDevice::launchTimed(KernelFn launcher, void *const *buffers,
                                       uint64_t &ns) {
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  const Driver &d = driver();
  if (!d.cuEventElapsedTime)
    return Device::launchTimed(launcher, buffers, ns);
  for (CUevent &e : timing_)
    if (!e)
      if (CUresult rc = d.cuEventCreate(&e, 0))
        return fail("cuEventCreate", rc);
  if (CUresult rc = d.cuEventRecord(timing_[0], compute_))
    return fail("cuEventRecord", rc);
  if (locus_status_t s = launchEntered(launcher, buffers))
    return s;
  if (CUresult rc = d.cuEventRecord(timing_[1], compute_))
    return fail("cuEventRecord", rc);
  if (CUresult rc = d.cuEventSynchronize(timing_[1]))
    return fail("cuEventSynchronize", rc);
  float ms = 0;
  if (CUresult rc = d.cuEventElapsedTime(&ms, timing_[0], timing_[1]))
    return fail("cuEventElapsedTime", rc);
  ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  return nullptr;
}

locus_status_t CudaDevice::launchEntered(KernelFn launcher,
                                         void *const *buffers) {
  current = this;
  launcher(buffers);
  current = nullptr;
  if (kept_) { // an exception in a locus_cuda_* call of the launcher
    locus_status_t s = kept_;
    kept_ = nullptr;
    pending_.clear();
    return s;
  }
  if (!pending_.empty()) {
    std::string what = std::move(pending_);
    pending_.clear();
    return makeStatus(pendingCode_, "%s: %s", name().c_str(), what.c_str());
  }
  return nullptr;
}

locus_status_t CudaDevice::finish() {
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  const Driver &d = driver();
  if (!ncclIssued_ || !d.cuStreamQuery) {
    if (CUresult rc = d.cuStreamSynchronize(compute_))
      return fail("cuStreamSynchronize", rc);
    return nullptr;
  }
  ncclIssued_ = false;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(ncclTimeout_);
  for (;;) {
    CUresult rc = d.cuStreamQuery(compute_);
    if (rc == kSuccess)
      return nullptr;
    if (rc != kNotReady)
      return fail("cuStreamQuery", rc);
    std::string error = nccl_->asyncError();
    if (error.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    nccl_->abort(); // the stream's wait on the other ranks ends
    nccl_.reset();
    if (error.empty())
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "%s: %s: an all-reduce through NCCL waited %.0f s for "
                        "the other ranks (LOCUS_COMM_TIMEOUT): a rank died, "
                        "hangs or never joined",
                        name().c_str(), ncclRank_.c_str(), ncclTimeout_);
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "%s: %s: an all-reduce through NCCL failed: %s",
                      name().c_str(), ncclRank_.c_str(), error.c_str());
  }
}

locus_status_t CudaDevice::joinCollectives(Comm &comm) {
  if (!nccl::library())
    return nullptr; // buckets through host memory; the report says why
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  nccl_.reset();
  std::string why;
  nccl_ = nccl::Communicator::make(
      comm.rank, comm.size,
      [&](void *id, size_t bytes) {
        locus_status_t s = comm.broadcast(id, bytes);
        std::string e = s ? locus_status_message(s) : "";
        locus_status_free(s);
        return e;
      },
      why);
  if (!nccl_)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE, "%s: joining NCCL: %s",
                      name().c_str(), why.c_str());
  ncclTimeout_ = comm.timeoutSeconds;
  ncclRank_ =
      "rank " + std::to_string(comm.rank) + " of " + std::to_string(comm.size);
  return nullptr;
}

bool CudaDevice::allReduceHere(const std::vector<ReducePart> &parts, bool mean,
                               locus_status_t &status) {
  std::lock_guard lock(mutex_);
  if (!nccl_)
    return false;
  status = enter();
  if (status)
    return true;
  std::vector<nccl::Part> calls;
  calls.reserve(parts.size());
  for (const ReducePart &p : parts)
    calls.push_back({p.in, p.out, p.count});
  if (std::string e = nccl_->allReduce(calls, mean, compute_); !e.empty())
    status = makeStatus(LOCUS_STATUS_INTERNAL, "%s: all-reduce: %s",
                        name().c_str(), e.c_str());
  ncclIssued_ = true;
  return true;
}

bool CudaDevice::canCapture() const {
  const Driver &d = driver();
  return graphs_ && d.cuStreamBeginCapture && d.cuStreamEndCapture &&
         d.cuGraphInstantiateWithFlags && d.cuGraphLaunch &&
         d.cuGraphExecDestroy && d.cuGraphDestroy;
}

locus_status_t CudaDevice::beginCapture() {
  if (!canCapture()) // graphs turned off, or a driver without them
    return Device::beginCapture();
  mutex_.lock(); // held until endCapture: nothing else joins the graph
  if (locus_status_t s = enter()) {
    mutex_.unlock();
    return s;
  }
  if (CUresult rc =
          driver().cuStreamBeginCapture(compute_, kCaptureThreadLocal)) {
    mutex_.unlock();
    return fail("cuStreamBeginCapture", rc);
  }
  capturing_ = true;
  return nullptr;
}

locus_status_t CudaDevice::endCapture(void **graph) {
  const Driver &d = driver();
  CUgraph g = nullptr;
  capturing_ = false;
  CUresult rc = d.cuStreamEndCapture(compute_, &g);
  CUgraphExec exec = nullptr;
  if (rc == kSuccess)
    rc = d.cuGraphInstantiateWithFlags(&exec, g, 0);
  if (g)
    d.cuGraphDestroy(g);
  mutex_.unlock();
  if (rc != kSuccess)
    return fail("capturing a CUDA graph", rc);
  *graph = exec;
  return nullptr;
}

locus_status_t CudaDevice::replay(void *graph) {
  std::lock_guard lock(mutex_);
  if (locus_status_t s = enter())
    return s;
  if (CUresult rc =
          driver().cuGraphLaunch(static_cast<CUgraphExec>(graph), compute_))
    return fail("cuGraphLaunch", rc);
  return nullptr;
}

void CudaDevice::releaseGraph(void *graph) {
  if (graph) {
    driver().cuCtxSetCurrent(context_);
    driver().cuGraphExecDestroy(static_cast<CUgraphExec>(graph));
  }
}

void CudaDevice::kernel(int64_t number, const int64_t *grid,
                        const int64_t *block, int64_t shared, int64_t *slots,
                        int64_t count) {
  if (!pending_.empty())
    return;
  if (number < 0 || static_cast<size_t>(number) >= functions_.size()) {
    pend(LOCUS_STATUS_INTERNAL, "launch of kernel " + std::to_string(number) +
                                    ", which the " +
                                    "artifact's PTX section does not have");
    return;
  }
  // A grid the launcher sized by a run's extents may be empty (a dynamic
  // size below what a block takes): nothing to run, which the driver
  // would refuse to launch.
  if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
    return;
  params_.resize(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i] = &slots[i];
  CUresult rc = driver().cuLaunchKernel(
      functions_[number], unsigned(grid[0]), unsigned(grid[1]),
      unsigned(grid[2]), unsigned(block[0]), unsigned(block[1]),
      unsigned(block[2]), unsigned(shared), compute_, params_.data(), nullptr);
  if (rc != kSuccess)
    pendDriver("launching " + kernelNames_[number], rc);
}

const Blas *CudaDevice::blasOnStream(bool tf32) {
  if (!pending_.empty())
    return nullptr;
  const Blas &cb = blas();
  if (!cb.why.empty()) {
    pend(LOCUS_STATUS_UNAVAILABLE, "matrix product: " + cb.why);
    return nullptr;
  }
  if (!blas_) {
    if (cb.create(&blas_) != 0) {
      blas_ = nullptr;
      pend(LOCUS_STATUS_INTERNAL, "cublasCreate failed");
      return nullptr;
    }
  }
  if (cb.setStream(blas_, compute_) != 0) {
    pend(LOCUS_STATUS_INTERNAL, "cublasSetStream failed");
    return nullptr;
  }
  if (cb.setMathMode && tf32 != blasTf32_) {
    if (cb.setMathMode(blas_, tf32 ? kTf32Math : kDefaultMath) != 0) {
      pend(LOCUS_STATUS_INTERNAL, "cublasSetMathMode failed");
      return nullptr;
    }
    blasTf32_ = tf32;
  }
  return &cb;
}

void CudaDevice::sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                       uintptr_t a, int64_t lda, int64_t strideA,
                       int32_t transA, uintptr_t b, int64_t ldb,
                       int64_t strideB, int32_t transB, float beta, uintptr_t c,
                       int64_t ldc, int64_t strideC, bool tf32) {
  const Blas *cb = blasOnStream(tf32);
  if (!cb)
    return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
  // the operands swap, the transposes stay.
  const float one = 1.0f;
  int opB = transB ? kOpT : kOpN, opA = transA ? kOpT : kOpN;
  int status;
  if (batch == 1)
    status = cb->sgemm(blas_, opB, opA, int(n), int(m), int(k), &one,
                       addressToPointer<const float>(b), int(ldb),
                       addressToPointer<const float>(a), int(lda), &beta,
                       addressToPointer<float>(c), int(ldc));
  else
    status = cb->sgemmStridedBatched(
        blas_, opB, opA, int(n), int(m), int(k), &one,
        addressToPointer<const float>(b), int(ldb), strideB,
        addressToPointer<const float>(a), int(lda), strideA, &beta,
        addressToPointer<float>(c), int(ldc), strideC, int(batch));
  if (status != 0)
    pend(LOCUS_STATUS_INTERNAL,
         "cuBLAS sgemm failed with status " + std::to_string(status));
}

void CudaDevice::gemm16(int32_t dtype, int64_t batch, int64_t m, int64_t n,
                        int64_t k, uintptr_t a, int64_t lda, int64_t strideA,
                        int32_t transA, uintptr_t b, int64_t ldb,
                        int64_t strideB, int32_t transB, float beta,
                        uintptr_t c, int64_t ldc, int64_t strideC) {
  const Blas *cb = blasOnStream(/*tf32=*/false);
  if (!cb)
    return;
  if (!cb->gemmEx || !cb->gemmStridedBatchedEx) {
    pend(LOCUS_STATUS_UNAVAILABLE,
         "a bf16 or f16 matrix product: this cuBLAS lacks cublasGemmEx");
    return;
  }
  bool halfC = (dtype & LOCUS_GEMM_C_16BIT) != 0;
  dtype &= ~LOCUS_GEMM_C_16BIT;
  if (dtype != LOCUS_PLAN_BF16 && dtype != LOCUS_PLAN_F16) {
    pend(LOCUS_STATUS_INTERNAL,
         "a 16-bit matrix product of element type " + std::to_string(dtype));
    return;
  }
  // sgemm's operand swap; the operands in their type, the sums in f32
  // (CUBLAS_COMPUTE_32F: tensor cores, as PyTorch's autocast runs), C in
  // f32 or rounded once to the operands' type.
  int type = dtype == LOCUS_PLAN_BF16 ? kR16BF : kR16F;
  int typeC = halfC ? type : kR32F;
  const float one = 1.0f;
  int opB = transB ? kOpT : kOpN, opA = transA ? kOpT : kOpN;
  int status;
  if (batch == 1)
    status = cb->gemmEx(blas_, opB, opA, int(n), int(m), int(k), &one,
                        addressToPointer<const void>(b), type, int(ldb),
                        addressToPointer<const void>(a), type, int(lda), &beta,
                        addressToPointer<void>(c), typeC, int(ldc), kCompute32F,
                        kGemmDefault);
  else
    status = cb->gemmStridedBatchedEx(
        blas_, opB, opA, int(n), int(m), int(k), &one,
        addressToPointer<const void>(b), type, int(ldb), strideB,
        addressToPointer<const void>(a), type, int(lda), strideA, &beta,
        addressToPointer<void>(c), typeC, int(ldc), strideC, int(batch),
        kCompute32F, kGemmDefault);
  if (status != 0)
    pend(LOCUS_STATUS_INTERNAL,
         "cuBLAS gemmEx failed with status " + std::to_string(status));
}

bool CudaDevice::dnnReady() {
  if (!pending_.empty())
    return false;
  std::string why;
  return dnn_->ready(why);
}

void CudaDevice::conv(int64_t kind, const int64_t *params, uintptr_t a,
                      uintptr_t b, uintptr_t bias, uintptr_t y) {
  if (!pending_.empty())
    return;
  std::string why;
  if (!dnn_->ready(why)) { // a launcher asks dnnReady() first
    pend(LOCUS_STATUS_INTERNAL, "convolution: " + why);
    return;
  }
  cudnn::Workspace workspace{[this](size_t n) { return alloc(n); },
                             [this](void *p) { free(p); }};
  std::string failed =
      dnn_->run(compute_, kind, params, a, b, bias, y, workspace);
  if (!failed.empty())
    pend(LOCUS_STATUS_INTERNAL, "convolution through cuDNN: " + failed);
}

void *CudaDevice::alloc(size_t bytes) {
  const Driver &d = driver();
  CUdeviceptr p = 0;
  CUresult rc =
      d.cuMemAllocAsync
          ? d.cuMemAllocAsync(&p, std::max<size_t>(bytes, 1), compute_)
          : d.cuMemAlloc(&p, std::max<size_t>(bytes, 1));
  if (rc != kSuccess) {
    if (pending_.empty())
      pendDriver("allocating " + std::to_string(bytes) +
                     " bytes of kernel temporaries",
                 rc);
    return nullptr;
  }
  return addressToPointer(p);
}

void CudaDevice::free(void *p) {
  if (!p)
    return;
  const Driver &d = driver();
  auto at = reinterpret_cast<CUdeviceptr>(p);
  if (d.cuMemFreeAsync)
    d.cuMemFreeAsync(at, compute_);
  else
    d.cuMemFree(at);
}

} // namespace locus::rt

using locus::rt::current;

namespace {

/// Runs `body` on the device of the launch in progress. Never throws: the
/// status of an exception is kept and returned by that launch.
template <typename Body> void onCurrent(const char *entry, Body &&body) {
  if (!current)
    std::abort(); // only launchers call this, and only inside launch()
  locus::rt::guardVoid(
      entry, [&] { body(*current); },
      [](locus_status_t s) { current->keep(s); });
}

} // namespace

extern "C" {

void locus_cuda_launch(int64_t kernel, int64_t gx, int64_t gy, int64_t gz,
                       int64_t bx, int64_t by, int64_t bz, int64_t shared,
                       int64_t args, int64_t count) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    int64_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    d.kernel(kernel, grid, block, shared,
             locus::rt::addressToPointer<int64_t>(static_cast<uint64_t>(args)),
             count);
  });
}

void locus_cuda_sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                      uintptr_t a, int64_t lda, int64_t stride_a,
                      int32_t trans_a, uintptr_t b, int64_t ldb,
                      int64_t stride_b, int32_t trans_b, float beta,
                      uintptr_t c, int64_t ldc, int64_t stride_c) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.sgemm(batch, m, n, k, a, lda, stride_a, trans_a, b, ldb, stride_b,
            trans_b, beta, c, ldc, stride_c, /*tf32=*/false);
  });
}

void locus_cuda_sgemm_tf32(int64_t batch, int64_t m, int64_t n, int64_t k,
                           uintptr_t a, int64_t lda, int64_t stride_a,
                           int32_t trans_a, uintptr_t b, int64_t ldb,
                           int64_t stride_b, int32_t trans_b, float beta,
                           uintptr_t c, int64_t ldc, int64_t stride_c) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.sgemm(batch, m, n, k, a, lda, stride_a, trans_a, b, ldb, stride_b,
            trans_b, beta, c, ldc, stride_c, /*tf32=*/true);
  });
}

void locus_cuda_gemm_16(int32_t dtype, int64_t batch, int64_t m, int64_t n,
                        int64_t k, uintptr_t a, int64_t lda, int64_t stride_a,
                        int32_t trans_a, uintptr_t b, int64_t ldb,
                        int64_t stride_b, int32_t trans_b, float beta,
                        uintptr_t c, int64_t ldc, int64_t stride_c) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.gemm16(dtype, batch, m, n, k, a, lda, stride_a, trans_a, b, ldb, stride_b,
             trans_b, beta, c, ldc, stride_c);
  });
}

int32_t locus_cuda_dnn_ready(void) {
  int32_t ready = 0;
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) { ready = d.dnnReady(); });
  return ready;
}

void locus_cuda_conv2d(int64_t kind, uintptr_t params, uintptr_t a, uintptr_t b,
                       uintptr_t bias, uintptr_t y) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) {
    d.conv(kind, locus::rt::addressToPointer<const int64_t>(params), a, b, bias,
           y);
  });
}

/// NULL, and the launch fails, on an exception too.
void *locus_cuda_alloc(size_t bytes) {
  void *p = nullptr;
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) { p = d.alloc(bytes); });
  return p;
}

void locus_cuda_free(void *p) {
  onCurrent(__func__, [&](locus::rt::CudaDevice &d) { d.free(p); });
}

} // extern "C"
