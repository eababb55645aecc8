// device.h - the cuda device's class, private to devices/cuda/: device.cpp
// makes it and keeps its memory, copies.cpp moves bytes, launches.cpp runs
// launchers and what they call.
#ifndef LOCUS_RUNTIME_CUDA_DEVICE_H
#define LOCUS_RUNTIME_CUDA_DEVICE_H

#include "devices/cuda/cublas.h"
#include "devices/cuda/cudnn.h"
#include "devices/cuda/driver.h"
#include "devices/cuda/nccl.h"
#include "devices/device.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace locus::rt {

/// The `cuda` device. One object per model and GPU holds:
///   - the GPU's primary context, made current on each calling thread;
///   - the PTX modules of the artifact, loaded once (cuModuleLoadData wants
///     the trailing NUL the section keeps), and a function per kernel number;
///   - a compute stream (kernels, cuBLAS, device-to-device copies) and a copy
///     stream (host-to-device copies through pinned staging, double
///     buffered), ordered with events;
///   - the allocations it made, against which `owns` checks every launch.
class CudaDevice : public Device {
public:
  CudaDevice(int ordinal, bool graphs);
  ~CudaDevice() override;
  locus_status_t init(const void *ptx, size_t ptxSize);
  bool canCapture() const override;

  /// Registers the pages with the driver (portable, so every CUDA device
  /// copies straight from them); false, and nothing lost, if it refuses.
  bool pinHost(void *p, size_t bytes) override;

  /// As pinHost, for a user's memory: the driver's refusal is a status
  /// (the device stays usable), and memory it says is registered already
  /// is taken as pinned, not registered again.
  locus_status_t pinUserHost(void *p, size_t bytes, bool &pinned) override;

  void unpinHost(void *p) override;
  void *allocate(size_t bytes) override;
  void release(void *p) override;
  bool owns(const void *p, size_t bytes) const override;
  locus_status_t copyFrom(Device &from, const void *src, void *dst,
                          size_t bytes) override;

  /// Host to device through pinned staging on the copy stream: the copy
  /// waits for the compute issued so far (which may still read `dst`), and
  /// compute issued later waits for the copy. Two staging buffers: filling
  /// one waits only for the copy before the last.
  locus_status_t upload(const void *host, void *dst, size_t bytes) override;

  /// As upload, without waiting for the compute issued so far: `dst` is a
  /// batch slot no issued work reads (the batch runner's double buffer), so
  /// the copy overlaps the step now running.
  locus_status_t prefetch(const void *host, void *dst, size_t bytes) override;

  locus_status_t copyIn(const void *host, void *dst, size_t bytes,
                        bool afterCompute);

  /// Device to host, after the compute issued so far; returns when the
  /// bytes are in `host`.
  locus_status_t download(const void *src, void *host, size_t bytes) override;

  /// Device to pageable host memory through both staging buffers: while
  /// the host copies one chunk out of one, the next chunk's DMA fills the
  /// other (before, each chunk's DMA and memcpy ran one after the other).
  locus_status_t downloadStaged(CUdeviceptr from, char *to, size_t bytes);

  locus_status_t launch(KernelFn launcher, void *const *buffers) override;

  /// The launch between two timing events on the compute stream, waited
  /// for: what the GPU spent on the launcher's kernels and library calls.
  locus_status_t launchTimed(KernelFn launcher, void *const *buffers,
                             uint64_t &ns) override;

  /// Runs the launcher, with the lock held and the context current.
  locus_status_t launchEntered(KernelFn launcher, void *const *buffers);

  /// Waits for the compute stream; after an all-reduce through NCCL, by
  /// polling, so that another rank's failure or the job's timeout ends
  /// the wait (the communicator aborted) instead of hanging it.
  locus_status_t finish() override;

  /// An NCCL communicator when NCCL loads, rank 0's unique id through
  /// `comm` (the job's bootstrap); nothing otherwise.
  locus_status_t joinCollectives(Comm &comm) override;
  /// Through NCCL on the compute stream once joined: no trip through host
  /// memory.
  bool allReduceHere(const std::vector<ReducePart> &parts, bool mean,
                     locus_status_t &status) override;
  locus_status_t beginCapture() override;
  locus_status_t endCapture(void **graph) override;
  locus_status_t replay(void *graph) override;
  void releaseGraph(void *graph) override;

  // What launchers call (on this thread, inside launch()).
  void kernel(int64_t number, const int64_t *grid, const int64_t *block,
              int64_t shared, int64_t *slots, int64_t count);
  void sgemm(int64_t batch, int64_t m, int64_t n, int64_t k, uintptr_t a,
             int64_t lda, int64_t strideA, int32_t transA, uintptr_t b,
             int64_t ldb, int64_t strideB, int32_t transB, float beta,
             uintptr_t c, int64_t ldc, int64_t strideC, bool tf32);
  /// The cuBLAS entry points with the handle on the compute stream in
  /// `tf32`'s math mode (made on first use); null, the reason pending,
  /// when there is none.
  const Blas *blasOnStream(bool tf32);
  /// sgemm of bf16 or f16 A and B (`dtype`, a plan code) into f32 C.
  void gemm16(int32_t dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
              uintptr_t a, int64_t lda, int64_t strideA, int32_t transA,
              uintptr_t b, int64_t ldb, int64_t strideB, int32_t transB,
              float beta, uintptr_t c, int64_t ldc, int64_t strideC);

  /// Whether convolutions run through cuDNN here (the handle is made on
  /// the first call, inside the first launch that asks).
  bool dnnReady();

  void conv(int64_t kind, const int64_t *params, uintptr_t a, uintptr_t b,
            uintptr_t bias, uintptr_t y);
  void *alloc(size_t bytes);

  /// Keeps the status of an exception in a locus_cuda_* call (the first
  /// one): the launch in progress returns it.
  void keep(locus_status_t status) noexcept;

  void free(void *p);

private:
  static constexpr size_t kStagingBytes = size_t(8) << 20;

  struct Range {
    CUdeviceptr begin, end;
    bool operator<(const Range &o) const { return begin < o.begin; }
  };
  struct Staging {
    void *host = nullptr;
    CUevent done = nullptr;
  };

  /// Gives a staging buffer its pinned memory (once).
  locus_status_t pin(Staging &s);

  bool ready();

  /// Makes the context current on this thread; fails once it is lost.
  locus_status_t enter();

  /// A status for a failed driver call. Errors other than out-of-memory
  /// and not-supported may have lost the context: later calls report it.
  locus_status_t fail(const char *what, CUresult rc);

  void pend(locus_status_code_t code, std::string what);
  void pendDriver(const std::string &what, CUresult rc);
  locus_status_t loadKernels(const void *data, size_t size);

  int ordinal_;
  bool graphs_;
  bool capturing_ = false; // between beginCapture and endCapture
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream compute_ = nullptr, copy_ = nullptr;
  CUevent computeDone_ = nullptr;
  CUevent timing_[2] = {nullptr, nullptr}; // LOCUS_PROFILE=1, made once
  std::vector<Staging> staging_ = std::vector<Staging>(2);
  size_t next_ = 0;
  cublasHandle_t blas_ = nullptr;
  bool blasTf32_ = false; // the handle's math mode: TF32 allowed
  std::unique_ptr<cudnn::Convolutions> dnn_ =
      std::make_unique<cudnn::Convolutions>();
  std::unique_ptr<nccl::Communicator> nccl_;
  bool ncclIssued_ = false;  // an all-reduce since the last finish()
  double ncclTimeout_ = 600; // seconds: the job's collective timeout
  std::string ncclRank_;     // "rank 1 of 4", for its errors
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
  std::vector<std::string> kernelNames_;
  mutable std::recursive_mutex mutex_;
  std::vector<Range> ranges_;
  std::vector<void *> params_;    // scratch: a launch's parameter pointers
  std::string lost_;              // why the context is unusable
  std::string pending_;           // the first error of the launch in progress
  locus_status_t kept_ = nullptr; // the first exception of that launch
  locus_status_code_t pendingCode_ = LOCUS_STATUS_INTERNAL;
};

} // namespace locus::rt

#endif
