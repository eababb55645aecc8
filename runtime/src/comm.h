// comm.h - a data-parallel job's communicator (locus_comm_t): rank, world
// size and the collectives a step's all-reduces and a join need, over Open
// MPI found with dlopen (docs/distributed.md).
#ifndef LOCUS_RUNTIME_COMM_H
#define LOCUS_RUNTIME_COMM_H

#include "locus/locus_runtime.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace locus::rt {

/// A sum of floats over the ranks that the communicator's thread runs
/// while the step goes on; its bytes are the job's until it is done.
struct ReduceJob {
  std::vector<float> data;
  bool done = false;
  locus_status_t status = nullptr; // owned by the waiter once done
};

/// The collectives of one job. World size 1 needs no library.
class Comm {
public:
  Comm() = default;
  Comm(const Comm &) = delete;
  Comm &operator=(const Comm &) = delete;
  virtual ~Comm();

  int rank = 0, size = 1, localRank = 0;
  /// How long a collective waits for the other ranks before it fails.
  double timeoutSeconds = 600;
  /// "Open MPI 4.1.4 (libmpi.so.40)", or "none" for world size 1.
  std::string backend = "none";
  /// Where this rank's artifact runs: "cuda:0=cuda:K", K its local rank
  /// modulo the GPUs of this machine, when it has two or more (one GPU per
  /// rank, as DDP binds them); "" otherwise (localDeviceMap).
  std::string deviceMap;

  /// Sums `count` floats over the ranks, in place.
  locus_status_t allReduceSum(float *data, size_t count);
  /// Rank 0's `bytes` bytes into every rank's `data`.
  locus_status_t broadcast(void *data, size_t bytes);
  /// Every rank's `bytes` bytes of `mine`, by rank, into `all`.
  locus_status_t allGather(const void *mine, void *all, size_t bytes);

  /// Starts `job`'s sum on the communicator's thread (in order of
  /// submission, which is the same on every rank), so it runs while the
  /// caller computes; or runs it now where MPI gives no thread support.
  void submit(const std::shared_ptr<ReduceJob> &job);
  /// Waits for `job`; its status (the caller owns it).
  locus_status_t wait(ReduceJob &job);
  /// Whether MPI lets the communicator's thread call it.
  bool threaded = false;

  /// One collective at a time (contexts of several models may share it).
  std::mutex mutex;

private:
  void work();
  std::thread worker;
  std::mutex queueMutex;
  std::condition_variable queueChanged;
  std::deque<std::shared_ptr<ReduceJob>> queue;
  bool stopping = false;
};

/// The device map of local rank `localRank` on a machine of `gpus` GPUs.
std::string localDeviceMap(int localRank, size_t gpus);

/// The communicator of the process's launcher: Open MPI's variables
/// (OMPI_COMM_WORLD_*, what mpirun and srun set) or torchrun's (RANK,
/// WORLD_SIZE, LOCAL_RANK); world size 1 when neither is set.
locus_status_t createComm(Comm *&out);

} // namespace locus::rt

struct locus_comm_s : locus::rt::Comm {};

#endif
