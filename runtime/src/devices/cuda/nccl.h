// nccl.h - all-reduces of CUDA buffers through NCCL 2, loaded with dlopen:
// a data-parallel step sums its gradient buckets in the compute stream, on
// the GPU, where without NCCL each bucket goes through host memory and MPI
// (docs/distributed.md). nccl.h is not needed to build the runtime: the
// types and entry points used are declared in nccl.cpp, as NCCL 2 defines
// them.
#ifndef LOCUS_RUNTIME_NCCL_H
#define LOCUS_RUNTIME_NCCL_H

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace locus::rt::nccl {

struct Library;
struct LibraryDeleter {
  void operator()(Library *library) const;
};
using LibraryPtr = std::unique_ptr<Library, LibraryDeleter>;

/// Where NCCL is looked for, in order: `env` (LOCUS_NCCL, a library file)
/// alone when set; else a libnccl.so.2 already in the process, the
/// loader's search path, the CUDA toolkit's lib64, and the `nvidia/nccl/lib`
/// folder of a pip-installed PyTorch. Loads the first that opens and has
/// every entry point used here; null, with `why`, when none does.
LibraryPtr load(const char *env, std::string &why);

/// NCCL as this process found it (load(getenv("LOCUS_NCCL")), once); null
/// when absent, and `why` says why.
const Library *library(std::string *why = nullptr);

/// "NCCL 2.28.9 (<path>)", or "no NCCL (<why>)".
std::string describe(const Library *library, const std::string &why);
/// describe() of library(): for the model report.
std::string describe();

/// One buffer of a bucket: `count` floats of `in`, reduced into `out`
/// (the same address for in place).
struct Part {
  const void *in;
  void *out;
  size_t count;
};

/// An NCCL communicator of one rank of a job, for one GPU (the current
/// context's).
class Communicator {
public:
  /// Joins the job's `size` ranks as `rank`: rank 0 makes the unique id,
  /// `broadcast` (the job's bootstrap: MPI, or nothing at world size 1)
  /// gives it to every rank. Null, with `why`, on failure.
  static std::unique_ptr<Communicator>
  make(int rank, int size,
       const std::function<std::string(void *, size_t)> &broadcast,
       std::string &why);
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  /// Sums (or averages, `mean`) every part over the ranks, in one group of
  /// calls on `stream` (a CUstream); "" when issued, else what failed.
  std::string allReduce(const std::vector<Part> &parts, bool mean,
                        void *stream);
  /// An error the communicator met since (a rank gone, a network failure),
  /// or "".
  std::string asyncError();
  /// Ends the communicator's pending work, so a stream waiting on another
  /// rank that is gone returns.
  void abort();

private:
  Communicator() = default;
  void *comm_ = nullptr;
};

} // namespace locus::rt::nccl

#endif
