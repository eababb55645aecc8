// comm.cpp - the communicator: rank and world size from the launcher's
// variables, and collectives over Open MPI found with dlopen. Open MPI is
// the engine (PyTorch, Horovod and DeepSpeed use it the same way); nothing
// here moves bytes itself. Every collective is non-blocking underneath and
// polled against a deadline, so a rank that never arrives is an error that
// ends the job, not a hang.
#include "comm.h"

#include "devices/cuda/cuda_device.h"
#include "dl.h"
#include "status_impl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

namespace locus::rt {

namespace {

// Open MPI's ABI (mpi.h of Open MPI 4 and 5): handles are pointers to its
// predefined objects, which dlsym finds by name.
using Handle = void *;
constexpr int kSuccess = 0;
constexpr int kThreadSerialized = 2;

struct Mpi {
  Library library;
  int (*initialized)(int *);
  int (*initThread)(int *, char ***, int, int *);
  int (*finalized)(int *);
  int (*finalize)();
  int (*commRank)(Handle, int *);
  int (*commSize)(Handle, int *);
  int (*commSetErrhandler)(Handle, Handle);
  int (*iallreduce)(const void *, void *, int, Handle, Handle, Handle,
                    Handle *);
  int (*ibcast)(void *, int, Handle, int, Handle, Handle *);
  int (*iallgather)(const void *, int, Handle, void *, int, Handle, Handle,
                    Handle *);
  int (*test)(Handle *, int *, void *);
  int (*abort)(Handle, int);
  int (*errorString)(int, char *, int *);
  int (*libraryVersion)(char *, int *);
  int (*queryThread)(int *);
  int threadLevel = 0; // what MPI_Init_thread provided
  Handle world, floatType, byteType, sum, errorsReturn;
  std::string why; // empty when it loaded
};

template <typename F> bool bind(void *handle, const char *name, F &out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  return out != nullptr;
}

/// Open MPI, opened once. Its components are plugins that need libmpi's
/// symbols: it is opened RTLD_GLOBAL.
Mpi &mpi() {
  static Mpi m = [] {
    Mpi m{};
    m.library =
        openFirst({"libmpi.so.40", "libmpi.so"}, RTLD_NOW | RTLD_GLOBAL);
    void *h = m.library.handle;
    if (!h) {
      m.why = "Open MPI's libmpi.so.40 is not installed (" + m.library.why +
              "); on Debian: apt install openmpi-bin";
      return m;
    }
    bool ok = bind(h, "MPI_Initialized", m.initialized) &&
              bind(h, "MPI_Init_thread", m.initThread) &&
              bind(h, "MPI_Finalized", m.finalized) &&
              bind(h, "MPI_Finalize", m.finalize) &&
              bind(h, "MPI_Comm_rank", m.commRank) &&
              bind(h, "MPI_Comm_size", m.commSize) &&
              bind(h, "MPI_Comm_set_errhandler", m.commSetErrhandler) &&
              bind(h, "MPI_Iallreduce", m.iallreduce) &&
              bind(h, "MPI_Ibcast", m.ibcast) &&
              bind(h, "MPI_Iallgather", m.iallgather) &&
              bind(h, "MPI_Test", m.test) && bind(h, "MPI_Abort", m.abort) &&
              bind(h, "MPI_Error_string", m.errorString) &&
              bind(h, "MPI_Get_library_version", m.libraryVersion) &&
              bind(h, "MPI_Query_thread", m.queryThread);
    m.world = dlsym(h, "ompi_mpi_comm_world");
    m.floatType = dlsym(h, "ompi_mpi_float");
    m.byteType = dlsym(h, "ompi_mpi_byte");
    m.sum = dlsym(h, "ompi_mpi_op_sum");
    m.errorsReturn = dlsym(h, "ompi_mpi_errors_return");
    if (!ok || !m.world || !m.floatType || !m.byteType || !m.sum ||
        !m.errorsReturn)
      m.why = m.library.name + " is not Open MPI 4 or later (another MPI's "
                               "ABI: Locus uses Open MPI)";
    return m;
  }();
  return m;
}

std::string mpiError(Mpi &m, int code) {
  char text[512] = {};
  int length = 0;
  if (m.errorString(code, text, &length) != kSuccess)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

/// An environment variable as a non-negative int, or -1.
int envInt(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return -1;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  return (*end || n < 0 || n > (1 << 24)) ? -2 : static_cast<int>(n);
}

void finalizeAtExit() {
  Mpi &m = mpi();
  int done = 0;
  if (m.finalized(&done) == kSuccess && !done)
    m.finalize();
}

/// MPI started (once per process), with this rank's errors returned.
locus_status_t startMpi(Mpi &m) {
  if (!m.why.empty())
    return makeStatus(LOCUS_STATUS_UNAVAILABLE, "data-parallel job: %s",
                      m.why.c_str());
  int started = 0;
  m.initialized(&started);
  if (!started) {
    if (int e =
            m.initThread(nullptr, nullptr, kThreadSerialized, &m.threadLevel))
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "data-parallel job: MPI_Init_thread failed: %s",
                        mpiError(m, e).c_str());
    std::atexit(finalizeAtExit);
  } else {
    m.queryThread(&m.threadLevel);
  }
  m.commSetErrhandler(m.world, m.errorsReturn);
  return nullptr;
}

double envSeconds(const char *name, double fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  double s = std::strtod(v, &end);
  return (*end || !(s > 0)) ? fallback : s;
}

} // namespace

/// Waits for `request` until the communicator's deadline.
static locus_status_t waitFor(Comm &c, Handle request, const char *what) {
  Mpi &m = mpi();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(c.timeoutSeconds);
  for (;;) {
    int done = 0;
    if (int e = m.test(&request, &done, nullptr))
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "rank %d of %d: %s failed: %s", c.rank, c.size, what,
                        mpiError(m, e).c_str());
    if (done)
      return nullptr;
    if (std::chrono::steady_clock::now() > deadline)
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "rank %d of %d: %s waited %.0f s for the other ranks "
                        "(LOCUS_COMM_TIMEOUT): a rank died, hangs or never "
                        "joined",
                        c.rank, c.size, what, c.timeoutSeconds);
    // MPI moves a large bucket in many fragments, each needing a call to
    // progress: poll, but yield the core to compute threads and to other
    // ranks that may share it (mpirun --oversubscribe), as Open MPI's own
    // blocking calls do when oversubscribed.
    std::this_thread::yield();
  }
}

/// Starts `start(at, n, &request)` over [0, total) in parts of at most 2^30
/// elements (MPI counts are ints), each waited for; `what` names the
/// collective in errors.
template <typename Start>
static locus_status_t inParts(Comm &c, size_t total, const char *what,
                              Start start) {
  Mpi &m = mpi();
  constexpr size_t kPart = size_t{1} << 30;
  for (size_t at = 0; at < total; at += kPart) {
    int n = static_cast<int>(std::min(kPart, total - at));
    Handle request = nullptr;
    if (int e = start(at, n, &request))
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "rank %d of %d: %s failed: %s", c.rank, c.size, what,
                        mpiError(m, e).c_str());
    if (locus_status_t s = waitFor(c, request, what))
      return s;
  }
  return nullptr;
}

locus_status_t Comm::allReduceSum(float *data, size_t count) {
  if (size == 1)
    return nullptr;
  Mpi &m = mpi();
  std::lock_guard<std::mutex> lock(mutex);
  return inParts(*this, count, "a gradient all-reduce",
                 [&](size_t at, int n, Handle *request) {
                   // MPI_IN_PLACE is (void *)1 in Open MPI.
                   return m.iallreduce(reinterpret_cast<void *>(1), data + at,
                                       n, m.floatType, m.sum, m.world, request);
                 });
}

locus_status_t Comm::broadcast(void *data, size_t bytes) {
  if (size == 1)
    return nullptr;
  Mpi &m = mpi();
  std::lock_guard<std::mutex> lock(mutex);
  return inParts(*this, bytes, "the broadcast of the state",
                 [&](size_t at, int n, Handle *request) {
                   return m.ibcast(static_cast<char *>(data) + at, n,
                                   m.byteType, 0, m.world, request);
                 });
}

locus_status_t Comm::allGather(const void *mine, void *all, size_t bytes) {
  if (size == 1) {
    std::memcpy(all, mine, bytes);
    return nullptr;
  }
  Mpi &m = mpi();
  std::lock_guard<std::mutex> lock(mutex);
  Handle request = nullptr;
  int n = static_cast<int>(bytes);
  if (int e = m.iallgather(mine, n, m.byteType, all, n, m.byteType, m.world,
                           &request))
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "rank %d of %d: all-gather failed: %s", rank, size,
                      mpiError(m, e).c_str());
  return waitFor(*this, request, "the join");
}

Comm::~Comm() {
  {
    std::lock_guard<std::mutex> lock(queueMutex);
    stopping = true;
  }
  queueChanged.notify_all();
  if (worker.joinable())
    worker.join();
}

void Comm::submit(const std::shared_ptr<ReduceJob> &job) {
  if (!threaded || size == 1) {
    job->status = allReduceSum(job->data.data(), job->data.size());
    job->done = true;
    return;
  }
  std::lock_guard<std::mutex> lock(queueMutex);
  if (!worker.joinable())
    worker = std::thread([this] { work(); });
  queue.push_back(job);
  queueChanged.notify_all();
}

void Comm::work() {
  std::unique_lock<std::mutex> lock(queueMutex);
  for (;;) {
    queueChanged.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty())
      return;
    std::shared_ptr<ReduceJob> job = queue.front();
    lock.unlock();
    locus_status_t status = allReduceSum(job->data.data(), job->data.size());
    lock.lock();
    queue.pop_front();
    job->status = status;
    job->done = true;
    queueChanged.notify_all();
  }
}

locus_status_t Comm::wait(ReduceJob &job) {
  std::unique_lock<std::mutex> lock(queueMutex);
  queueChanged.wait(lock, [&] { return job.done; });
  locus_status_t status = job.status;
  job.status = nullptr;
  return status;
}

std::string localDeviceMap(int localRank, size_t gpus) {
  if (gpus < 2 || localRank < 0)
    return "";
  return "cuda:0=cuda:" + std::to_string(static_cast<size_t>(localRank) % gpus);
}

locus_status_t createComm(Comm *&out) {
  out = nullptr;
  int ompiSize = envInt("OMPI_COMM_WORLD_SIZE");
  int torchSize = envInt("WORLD_SIZE");
  auto comm = std::make_unique<locus_comm_s>();
  comm->timeoutSeconds = envSeconds("LOCUS_COMM_TIMEOUT", 600);
  if (ompiSize == -2 || torchSize == -2)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "data-parallel job: OMPI_COMM_WORLD_SIZE or WORLD_SIZE "
                      "is not a number");
  if (ompiSize > 0) {
    Mpi &m = mpi();
    if (locus_status_t s = startMpi(m))
      return s;
    m.commRank(m.world, &comm->rank);
    m.commSize(m.world, &comm->size);
    comm->threaded = m.threadLevel >= kThreadSerialized;
    int local = envInt("OMPI_COMM_WORLD_LOCAL_RANK");
    comm->localRank = local >= 0 ? local : 0;
    char version[256] = {};
    int length = 0;
    m.libraryVersion(version, &length);
    std::string v(version, static_cast<size_t>(std::max(0, length)));
    comm->backend = v.substr(0, v.find(',')) + " (" + m.library.name + ")";
  } else if (torchSize > 1) {
    return makeStatus(
        LOCUS_STATUS_UNAVAILABLE,
        "data-parallel job: WORLD_SIZE=%d, but not launched by Open MPI's "
        "mpirun or srun: Locus joins ranks through MPI, so launch with "
        "`mpirun -np %d` (a torchrun TCP rendezvous is not supported)",
        torchSize, torchSize);
  }
  if (comm->size > 1) {
    std::string whyNoCuda;
    comm->deviceMap =
        localDeviceMap(comm->localRank, cudaDeviceNames(whyNoCuda).size());
  }
  out = comm.release();
  return nullptr;
}

} // namespace locus::rt
