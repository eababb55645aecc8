// parallel.cpp - locus_parallel_for: a small pool of worker threads for the
// outermost parallel loops of generated kernels.
//
// One job at a time, split into equal ranges, one per thread: the caller
// publishes it, runs range 0, and waits for the workers' ranges. Workers spin
// briefly between jobs (a kernel runs several loops back to back) and then
// sleep on a condition variable, so an idle runtime costs nothing.
//
// Once a library that brings libgomp is loaded (oneDNN, OpenBLAS's OpenMP
// build), jobs run on libgomp's team instead (GOMP_parallel, what
// `#pragma omp parallel` compiles to): one team for the whole process, so
// the runtime's workers never spin beside the libraries' threads on the
// same cores. With both pools, the MLP at batch 64 took a median of about
// 1080 us in some processes and 780 in others (the runtime's workers
// spinning through oneDNN's products); on the one team, 806-866 in six.

#include "dl.h"
#include "guard.h"
#include "locus/abi.h"
#include "openmp.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

/// libgomp's entry points, once a library has loaded it.
struct Gomp {
  void (*parallel)(void (*)(void *), void *, unsigned, unsigned) = nullptr;
  int (*threadNum)() = nullptr;
  int (*numThreads)() = nullptr;
};
std::atomic<const Gomp *> gomp{nullptr};

/// One job on libgomp's team: [0, n) in equal parts, one per thread.
struct GompJob {
  locus_parallel_body_t body;
  void *args;
  int64_t n;
  const Gomp *g;
};

void gompPart(void *data) {
  const auto &job = *static_cast<const GompJob *>(data);
  int64_t parts = job.g->numThreads(), index = job.g->threadNum();
  int64_t lo = job.n * index / parts, hi = job.n * (index + 1) / parts;
  if (lo < hi)
    job.body(job.args, lo, hi);
}

class Pool {
public:
  static Pool &get() {
    // Never destroyed: workers may still be asleep at exit.
    static Pool *pool = new Pool();
    return *pool;
  }

  int threads() const { return static_cast<int>(workers_) + 1; }

  void run(locus_parallel_body_t body, void *args, int64_t n) {
    if (n <= 0)
      return;
    std::unique_lock busy(runMutex_, std::try_to_lock);
    if (workers_ == 0 || n == 1 || !busy.owns_lock()) {
      body(args, 0, n);
      return;
    }
    if (const Gomp *g = gomp.load(std::memory_order_acquire)) {
      GompJob job{body, args, n, g};
      g->parallel(gompPart, &job,
                  static_cast<unsigned>(std::min<int64_t>(n, workers_ + 1)), 0);
      return;
    }
    // Every worker finished the previous job before it returned, so no one
    // reads these while they change.
    body_ = body;
    args_ = args;
    n_ = n;
    done_.store(0, std::memory_order_relaxed);
    {
      std::lock_guard lock(sleepMutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    part(0);
    while (done_.load(std::memory_order_acquire) != workers_)
      std::this_thread::yield();
  }

private:
  Pool() {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (const char *env = std::getenv("LOCUS_THREADS")) {
      int want = std::atoi(env);
      if (want >= 1)
        cores = static_cast<unsigned>(want);
    }
    // Fewer workers when a thread cannot be made (std::system_error) or
    // memory runs out; none of them runs a job before the pool is made.
    unsigned made = 0;
    try {
      for (; made + 1 < cores; ++made)
        std::thread([this, made] { loop(made + 1); }).detach();
    } catch (...) { // NOLINT(bugprone-empty-catch): fewer workers, as said
    }
    workers_ = made;
  }

  /// Range `index` of the current job: [0, n) in equal parts, one per thread.
  void part(unsigned index) {
    int64_t parts = workers_ + 1;
    int64_t lo = n_ * index / parts, hi = n_ * (index + 1) / parts;
    if (lo < hi)
      body_(args_, lo, hi);
  }

  void loop(unsigned index) {
    // Jobs are counted from 0, the generation when the pool was made: a
    // worker that starts after the first job was published still runs it.
    uint64_t seen = 0;
    for (;;) {
      // Spin a little: the next loop of the same kernel comes soon.
      auto until =
          std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock lock(sleepMutex_);
        wake_.wait(lock, [&] {
          return generation_.load(std::memory_order_acquire) != seen;
        });
      }
      seen = generation_.load(std::memory_order_acquire);
      part(index);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  unsigned workers_ = 0;
  std::mutex runMutex_;
  std::mutex sleepMutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<unsigned> done_{0};
  // The current job.
  locus_parallel_body_t body_ = nullptr;
  void *args_ = nullptr;
  int64_t n_ = 0;
};

} // namespace

namespace {

/// The pool; null when it cannot be made (out of memory), and then the
/// caller runs everything (making it is tried again next time).
Pool *pool() noexcept {
  return locus::rt::guardValue<Pool *>(nullptr, [] { return &Pool::get(); });
}

} // namespace

/// Never throws: without a pool the calling thread runs every range.
extern "C" void locus_parallel_for(locus_parallel_body_t body, void *args,
                                   int64_t n) {
  if (Pool *p = pool())
    p->run(body, args, n);
  else if (n > 0)
    body(args, 0, n);
}

extern "C" const char *locus_parallel_name(void) {
  return gomp.load(std::memory_order_acquire)
             ? "libgomp's OpenMP team (shared with the libraries above)"
             : "the runtime's own workers";
}

extern "C" int locus_parallel_threads(void) {
  Pool *p = pool();
  return p ? p->threads() : 1;
}

void locus::rt::adoptOpenMpTeam() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Already loaded by the library (RTLD_NOLOAD); the handle is kept.
    void *handle = openFirst({"libgomp.so.1"}, RTLD_NOW | RTLD_NOLOAD).handle;
    if (!handle)
      return;
    static Gomp g;
    if (bindSymbol(handle, g.parallel, "GOMP_parallel") &&
        bindSymbol(handle, g.threadNum, "omp_get_thread_num") &&
        bindSymbol(handle, g.numThreads, "omp_get_num_threads"))
      gomp.store(&g, std::memory_order_release);
  });
}

void locus::rt::settleOpenMpTeams() {
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
}
