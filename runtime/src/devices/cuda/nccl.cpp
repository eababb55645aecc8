// nccl.cpp - NCCL 2 found with dlopen (nccl.h says why and how). Why NCCL:
// it is what PyTorch DDP, JAX, Horovod and DeepSpeed reduce GPU tensors
// with, NVIDIA tunes it per interconnect (NVLink, PCIe, InfiniBand), and a
// reduction in the compute stream spares each bucket two trips through
// host memory.

#include "devices/cuda/nccl.h"
#include "dl.h"

#include <cstdlib>
#include <mutex>

namespace locus::rt::nccl {

namespace {

using Result = int;                 // ncclResult_t; 0 is ncclSuccess
using Comm = struct ncclComm *;     // ncclComm_t
constexpr int kUniqueIdBytes = 128; // NCCL_UNIQUE_ID_BYTES
struct UniqueId {
  char internal[kUniqueIdBytes];
};
constexpr int kFloat32 = 7, kSum = 0, kAvg = 4; // ncclFloat32, ncclSum, ncclAvg
constexpr Result kInProgress = 7;               // ncclInProgress

} // namespace

struct Library {
  void *handle = nullptr;
  std::string path;
  int version = 0; // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch
  Result (*ncclGetVersion)(int *) = nullptr;
  Result (*ncclGetUniqueId)(UniqueId *) = nullptr;
  Result (*ncclCommInitRank)(Comm *, int, UniqueId, int) = nullptr;
  Result (*ncclCommDestroy)(Comm) = nullptr;
  Result (*ncclCommAbort)(Comm) = nullptr;
  Result (*ncclCommGetAsyncError)(Comm, Result *) = nullptr;
  Result (*ncclAllReduce)(const void *, void *, size_t, int, int, Comm,
                          void *) = nullptr;
  Result (*ncclGroupStart)() = nullptr;
  Result (*ncclGroupEnd)() = nullptr;
  const char *(*ncclGetErrorString)(Result) = nullptr;

  std::string error(Result r) const {
    const char *text = ncclGetErrorString ? ncclGetErrorString(r) : nullptr;
    return text ? text : "NCCL error " + std::to_string(r);
  }
};

namespace {

/// The entry points `l` lacks, "" when it has them all.
std::string bindAll(Library &l) {
  std::string missing;
  auto need = [&](auto &fn, const char *name) {
    if (!bindSymbol(l.handle, fn, name))
      missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need(l.ncclGetVersion, "ncclGetVersion");
  need(l.ncclGetUniqueId, "ncclGetUniqueId");
  need(l.ncclCommInitRank, "ncclCommInitRank");
  need(l.ncclCommDestroy, "ncclCommDestroy");
  need(l.ncclCommAbort, "ncclCommAbort");
  need(l.ncclCommGetAsyncError, "ncclCommGetAsyncError");
  need(l.ncclAllReduce, "ncclAllReduce");
  need(l.ncclGroupStart, "ncclGroupStart");
  need(l.ncclGroupEnd, "ncclGroupEnd");
  need(l.ncclGetErrorString, "ncclGetErrorString");
  return missing;
}

} // namespace

void LibraryDeleter::operator()(Library *library) const { delete library; }

LibraryPtr load(const char *env, std::string &why) {
  const bool named = env && *env;
  rt::Library opened =
      openNvidiaLibrary(env, "LOCUS_NCCL", "libnccl.so.2", "nccl", why);
  if (!opened.handle)
    return nullptr;
  LibraryPtr l(new Library);
  l->handle = opened.handle;
  l->path = libraryFileOf(dlsym(opened.handle, "ncclGetVersion"));
  if (l->path.empty())
    l->path = named ? env : "libnccl.so.2";
  if (std::string missing = bindAll(*l); !missing.empty()) {
    why = l->path + " lacks " + missing + ": not NCCL 2";
    return nullptr;
  }
  if (Result r = l->ncclGetVersion(&l->version)) {
    why = l->path + ": ncclGetVersion failed: " + l->error(r);
    return nullptr;
  }
  // ncclAvg came in 2.10.
  if (l->version / 10000 != 2 || l->version % 10000 / 100 < 10) {
    why = l->path + " is NCCL " + versionCodeText(l->version) +
          "; Locus uses NCCL 2.10 or later";
    return nullptr;
  }
  return l;
}

const Library *library(std::string *why) {
  static std::once_flag once;
  static LibraryPtr loaded;
  static std::string failure;
  std::call_once(once,
                 [] { loaded = load(std::getenv("LOCUS_NCCL"), failure); });
  if (why)
    *why = failure;
  return loaded.get();
}

std::string describe(const Library *library, const std::string &why) {
  if (!library)
    return "no NCCL (" + why + ")";
  return "NCCL " + versionCodeText(library->version) + " (" + library->path +
         ")";
}

std::string describe() {
  std::string why;
  const Library *l = library(&why);
  return describe(l, why);
}

std::unique_ptr<Communicator>
Communicator::make(int rank, int size,
                   const std::function<std::string(void *, size_t)> &broadcast,
                   std::string &why) {
  const Library *l = library(&why);
  if (!l)
    return nullptr;
  UniqueId id{};
  if (rank == 0)
    if (Result r = l->ncclGetUniqueId(&id)) {
      why = "ncclGetUniqueId: " + l->error(r);
      return nullptr;
    }
  if (std::string e = broadcast(&id, sizeof id); !e.empty()) {
    why = "sharing NCCL's unique id: " + e;
    return nullptr;
  }
  std::unique_ptr<Communicator> c(new Communicator);
  Comm comm = nullptr;
  if (Result r = l->ncclCommInitRank(&comm, size, id, rank)) {
    why = "ncclCommInitRank (rank " + std::to_string(rank) + " of " +
          std::to_string(size) + "): " + l->error(r);
    return nullptr;
  }
  c->comm_ = comm;
  return c;
}

Communicator::~Communicator() {
  if (const Library *l = library(); l && comm_)
    l->ncclCommDestroy(static_cast<Comm>(comm_));
}

std::string Communicator::allReduce(const std::vector<Part> &parts, bool mean,
                                    void *stream) {
  const Library &l = *library();
  auto comm = static_cast<Comm>(comm_);
  if (Result r = l.ncclGroupStart())
    return "ncclGroupStart: " + l.error(r);
  std::string failed;
  for (const Part &p : parts)
    if (Result r = l.ncclAllReduce(p.in, p.out, p.count, kFloat32,
                                   mean ? kAvg : kSum, comm, stream);
        r && failed.empty())
      failed = "ncclAllReduce: " + l.error(r);
  if (Result r = l.ncclGroupEnd(); r && r != kInProgress && failed.empty())
    failed = "ncclGroupEnd: " + l.error(r);
  return failed;
}

std::string Communicator::asyncError() {
  const Library &l = *library();
  Result state = 0;
  if (Result r = l.ncclCommGetAsyncError(static_cast<Comm>(comm_), &state))
    return "ncclCommGetAsyncError: " + l.error(r);
  return state == 0 || state == kInProgress ? "" : l.error(state);
}

void Communicator::abort() {
  if (const Library *l = library(); l && comm_) {
    l->ncclCommAbort(static_cast<Comm>(comm_));
    comm_ = nullptr;
  }
}

} // namespace locus::rt::nccl
