// host_code.cpp - loading an artifact's host code from memory.

#include "host_code.h"

#include "status_impl.h"

#include "locus/abi.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>

namespace locus::rt {

namespace {

void *runtimeFunction(const char *name) {
  const std::pair<const char *, void *> functions[] = {
      {LOCUS_ABI_SGEMM, reinterpret_cast<void *>(&locus_sgemm)},
      {LOCUS_ABI_MEMREF_COPY, reinterpret_cast<void *>(&locus_memref_copy)},
      {LOCUS_ABI_PARALLEL_FOR, reinterpret_cast<void *>(&locus_parallel_for)},
      {LOCUS_ABI_CUDA_LAUNCH, reinterpret_cast<void *>(&locus_cuda_launch)},
      {LOCUS_ABI_CUDA_SGEMM, reinterpret_cast<void *>(&locus_cuda_sgemm)},
      {LOCUS_ABI_CUDA_ALLOC, reinterpret_cast<void *>(&locus_cuda_alloc)},
      {LOCUS_ABI_CUDA_FREE, reinterpret_cast<void *>(&locus_cuda_free)}};
  for (const auto &[known, fn] : functions)
    if (std::strcmp(name, known) == 0)
      return fn;
  return nullptr;
}

bool cpuHas(const std::string &feature) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (feature == "avx2")
    return __builtin_cpu_supports("avx2");
  if (feature == "fma")
    return __builtin_cpu_supports("fma");
  if (feature == "avx512f")
    return __builtin_cpu_supports("avx512f");
  if (feature == "sse4.2")
    return __builtin_cpu_supports("sse4.2");
#endif
  (void)feature;
  return false;
}

} // namespace

namespace {

/// A 64-bit little-endian ELF object for this machine: checked before the
/// system loader sees it (the artifact's checksum vouches for the rest).
locus_status_t checkElf(const unsigned char *bytes, size_t size) {
  if (size < 64 || std::memcmp(bytes, "\177ELF", 4) != 0 || bytes[4] != 2 ||
      bytes[5] != 1)
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "the host code is not a 64-bit little-endian ELF object");
  uint16_t machine = static_cast<uint16_t>(bytes[18] | bytes[19] << 8);
#if defined(__x86_64__)
  constexpr uint16_t kMachine = 62; // EM_X86_64
#elif defined(__aarch64__)
  constexpr uint16_t kMachine = 183; // EM_AARCH64
#else
  constexpr uint16_t kMachine = 0;
#endif
  if (machine != kMachine)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the host code is for ELF machine %u, not this one",
                      machine);
  return nullptr;
}

/// dlopen()s the object from memory (a memfd), never from a file on disk.
locus_status_t openFromMemory(const unsigned char *bytes, size_t size,
                              void *&handle) {
  int fd = memfd_create("locus-host-code", MFD_CLOEXEC);
  if (fd < 0)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE, "memfd_create failed: %s",
                      std::strerror(errno));
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, bytes + written, size - written);
    if (n <= 0) {
      close(fd);
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "writing the host code to memory failed: %s",
                        std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  close(fd);
  if (!handle) {
    const char *why = dlerror();
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the host code does not load: %s", why ? why : "?");
  }
  return nullptr;
}

/// The CPU features the code was compiled for are this CPU's; `note` says
/// what the code is for.
locus_status_t checkCpu(const HostCode &code, std::string &note) {
  auto *features = static_cast<const char *const *>(
      code.symbol(LOCUS_ABI_CPU_FEATURES_SYMBOL));
  if (!features || !*features) {
    note = "AOT host code";
    return nullptr;
  }
  std::string list = *features, missing;
  for (size_t pos = 0; pos < list.size();) {
    size_t comma = list.find(',', pos);
    std::string f = list.substr(pos, comma - pos);
    pos = comma == std::string::npos ? list.size() : comma + 1;
    if (!f.empty() && !cpuHas(f))
      missing += (missing.empty() ? "" : ", ") + f;
  }
  if (!missing.empty())
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the host code needs CPU features this CPU lacks: %s "
                      "(compile with --cpu=x86-64 for older CPUs)",
                      missing.c_str());
  auto *cpu =
      static_cast<const char *const *>(code.symbol(LOCUS_ABI_CPU_SYMBOL));
  note = "AOT host code for " + std::string(cpu && *cpu ? *cpu : "x86-64");
  if (!list.empty())
    note += ", which needs " + list;
  return nullptr;
}

/// Fills the code's import slot of each runtime function it calls.
locus_status_t bindImports(const HostCode &code,
                           const std::vector<std::string> &imports) {
  for (const std::string &name : imports) {
    void *fn = runtimeFunction(name.c_str());
    if (!fn)
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "the host code calls %s, which this runtime lacks",
                        name.c_str());
    auto *slot = static_cast<void **>(
        code.symbol((LOCUS_ABI_IMPORT_PREFIX + name).c_str()));
    if (!slot)
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the host code has no import slot for %s",
                        name.c_str());
    *slot = fn;
  }
  return nullptr;
}

} // namespace

locus_status_t HostCode::load(const void *data, size_t size,
                              const std::vector<std::string> &imports,
                              std::unique_ptr<HostCode> &out,
                              std::string &note) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  if (locus_status_t s = checkElf(bytes, size))
    return s;
  void *handle = nullptr;
  if (locus_status_t s = openFromMemory(bytes, size, handle))
    return s;
  auto code = std::unique_ptr<HostCode>(new (std::nothrow) HostCode);
  if (!code) {
    dlclose(handle);
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  code->handle = handle;
  if (locus_status_t s = checkCpu(*code, note))
    return s;
  if (locus_status_t s = bindImports(*code, imports))
    return s;
  out = std::move(code);
  return nullptr;
}

HostCode::~HostCode() {
  if (handle)
    dlclose(handle);
}

void *HostCode::symbol(const char *name) const { return dlsym(handle, name); }

void *HostCode::function(const char *name) const {
  void *address = dlsym(handle, name);
  if (!address)
    return nullptr;
  Dl_info info{};
  void *extra = nullptr;
  if (!dladdr1(address, &info, &extra, RTLD_DL_SYMENT) || !extra)
    return nullptr;
  const auto *entry = static_cast<const ElfW(Sym) *>(extra);
  if (ELF64_ST_TYPE(entry->st_info) != STT_FUNC)
    return nullptr;
  // In this object: its base address is the one the loader mapped the
  // host code at.
  void *mapped = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, static_cast<void *>(&mapped)) != 0 ||
      !mapped)
    return nullptr;
  auto base =
      static_cast<uintptr_t>(static_cast<struct link_map *>(mapped)->l_addr);
  if (reinterpret_cast<uintptr_t>(info.dli_fbase) != base)
    return nullptr;
  return address;
}

} // namespace locus::rt

/// Never allocates, so never throws.
extern "C" void *locus_kernel_abi_function(const char *name) {
  return name ? locus::rt::runtimeFunction(name) : nullptr;
}
