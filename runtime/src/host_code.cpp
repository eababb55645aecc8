// host_code.cpp - loading an artifact's host code from memory.

#include "host_code.h"

#include "elf_check.h"
#include "status_impl.h"

#include "locus/abi.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <vector>

namespace locus::rt {

namespace {

void *runtimeFunction(const char *name) {
  const std::pair<const char *, void *> functions[] = {
      {LOCUS_ABI_SGEMM, reinterpret_cast<void *>(&locus_sgemm)},
      {LOCUS_ABI_GEMM_16, reinterpret_cast<void *>(&locus_gemm_16)},
      {LOCUS_ABI_CONV2D, reinterpret_cast<void *>(&locus_conv2d)},
      {LOCUS_ABI_CONV2D_GRAD, reinterpret_cast<void *>(&locus_conv2d_grad)},
      {LOCUS_ABI_HOST_ALLOC, reinterpret_cast<void *>(&locus_host_alloc)},
      {LOCUS_ABI_HOST_FREE, reinterpret_cast<void *>(&locus_host_free)},
      {LOCUS_ABI_MEMREF_COPY, reinterpret_cast<void *>(&locus_memref_copy)},
      {LOCUS_ABI_PARALLEL_FOR, reinterpret_cast<void *>(&locus_parallel_for)},
      {LOCUS_ABI_CUDA_LAUNCH, reinterpret_cast<void *>(&locus_cuda_launch)},
      {LOCUS_ABI_CUDA_SGEMM, reinterpret_cast<void *>(&locus_cuda_sgemm)},
      {LOCUS_ABI_CUDA_GEMM_16, reinterpret_cast<void *>(&locus_cuda_gemm_16)},
      {LOCUS_ABI_CUDA_SGEMM_TF32,
       reinterpret_cast<void *>(&locus_cuda_sgemm_tf32)},
      {LOCUS_ABI_CUDA_ALLOC, reinterpret_cast<void *>(&locus_cuda_alloc)},
      {LOCUS_ABI_CUDA_FREE, reinterpret_cast<void *>(&locus_cuda_free)},
      {LOCUS_ABI_CUDA_CONV2D, reinterpret_cast<void *>(&locus_cuda_conv2d)},
      {LOCUS_ABI_CUDA_DNN_READY,
       reinterpret_cast<void *>(&locus_cuda_dnn_ready)}};
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

/// The handles of the host code loaded now: the system loader must give
/// each load an object of its own.
std::mutex liveMutex;
std::set<void *> liveHandles;

/// dlopen()s the object from memory (a memfd), never from a file on disk.
/// The memfd stays open (`fd`) as long as the object is loaded: glibc hands
/// an object already loaded under the same path to a later dlopen(), and a
/// closed memfd's number, so its path /proc/self/fd/N, is soon reused.
locus_status_t openFromMemory(const unsigned char *bytes, size_t size,
                              void *&handle, int &fd) {
  fd = memfd_create("locus-host-code", MFD_CLOEXEC);
  if (fd < 0)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE, "memfd_create failed: %s",
                      std::strerror(errno));
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, bytes + written, size - written);
    if (n <= 0) {
      close(fd);
      fd = -1;
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "writing the host code to memory failed: %s",
                        std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    close(fd);
    fd = -1;
    const char *why = dlerror();
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the host code does not load: %s", why ? why : "?");
  }
  std::lock_guard<std::mutex> lock(liveMutex);
  if (!liveHandles.insert(handle).second) {
    dlclose(handle); // the other load's reference
    close(fd);
    fd = -1;
    handle = nullptr;
    return makeStatus(LOCUS_STATUS_INTERNAL,
                      "the system loader gave this host code an object "
                      "loaded before");
  }
  return nullptr;
}

/// Unloads what openFromMemory loaded.
void closeLoaded(void *handle, int fd) {
  if (handle) {
    std::lock_guard<std::mutex> lock(liveMutex);
    liveHandles.erase(handle);
    dlclose(handle);
  }
  if (fd >= 0)
    close(fd);
}

/// The string the pointer `name` of the code holds (`present` false when
/// there is no such symbol or it holds NULL); false when the pointer is not
/// the code's own aligned data or points outside the code.
bool codeString(const HostCode &code, const char *name, std::string &out,
                bool &present) {
  out.clear();
  present = false;
  const void *at = code.symbol(name);
  if (!at)
    return true;
  if (reinterpret_cast<uintptr_t>(at) % alignof(const char *) ||
      !code.holds(at, sizeof(const char *), PF_R))
    return false;
  const char *text = nullptr;
  std::memcpy(static_cast<void *>(&text), at, sizeof text);
  if (!text)
    return true;
  if (!code.holdsString(text))
    return false;
  out = text;
  present = true;
  return true;
}

/// The CPU features the code was compiled for are this CPU's; `note` says
/// what the code is for.
locus_status_t checkCpu(const HostCode &code, std::string &note) {
  std::string list, cpu;
  bool hasFeatures = false, hasCpu = false;
  if (!codeString(code, LOCUS_ABI_CPU_FEATURES_SYMBOL, list, hasFeatures))
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "the host code's CPU features are outside it");
  if (!hasFeatures) {
    note = "AOT host code";
    return nullptr;
  }
  std::string missing;
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
  if (!codeString(code, LOCUS_ABI_CPU_SYMBOL, cpu, hasCpu))
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "the host code's CPU name is outside it");
  note = "AOT host code for " +
         (hasCpu && !cpu.empty() ? cpu : std::string("x86-64"));
  if (!list.empty())
    note += ", which needs " + list;
  return nullptr;
}

/// Fills the code's import slot of each runtime function it calls. Every
/// slot the code has (`slots`) must be one the plan lists: a slot left
/// empty would be a call of address 0.
locus_status_t bindImports(const HostCode &code,
                           const std::vector<std::string> &imports,
                           const std::vector<std::string> &slots) {
  for (const std::string &slot : slots)
    if (std::find(imports.begin(), imports.end(), slot) == imports.end())
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the host code calls %s, which the plan does not "
                        "list among its imports",
                        slot.c_str());
  for (const std::string &name : imports) {
    void *fn = runtimeFunction(name.c_str());
    if (!fn)
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "the host code calls %s, which this runtime lacks",
                        name.c_str());
    void *slot = code.symbol((LOCUS_ABI_IMPORT_PREFIX + name).c_str());
    if (!slot || reinterpret_cast<uintptr_t>(slot) % alignof(void *) ||
        !code.holds(slot, sizeof(void *), PF_W))
      return makeStatus(LOCUS_STATUS_DATA_LOSS,
                        "the host code has no import slot for %s",
                        name.c_str());
    std::memcpy(slot, static_cast<const void *>(&fn), sizeof fn);
  }
  return nullptr;
}

} // namespace

locus_status_t HostCode::load(const void *data, size_t size,
                              const std::vector<std::string> &imports,
                              std::unique_ptr<HostCode> &out,
                              std::string &note) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  std::vector<Elf64_Phdr> loads;
  Elf64_Phdr relro{};
  std::vector<std::string> slots;
  if (locus_status_t s = checkElf(bytes, size, loads, relro, slots))
    return s;
  void *handle = nullptr;
  int fd = -1;
  if (locus_status_t s = openFromMemory(bytes, size, handle, fd))
    return s;
  auto code = std::unique_ptr<HostCode>(new (std::nothrow) HostCode);
  if (!code) {
    closeLoaded(handle, fd);
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  code->handle = handle;
  code->fd = fd;
  // Where the segments were mapped: every address the runtime takes from
  // the code (a kernel, an import slot, a string) must lie in one.
  void *mapped = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, static_cast<void *>(&mapped)) != 0 ||
      !mapped)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the loaded host code has no link map");
  auto base =
      static_cast<uintptr_t>(static_cast<struct link_map *>(mapped)->l_addr);
  // The loader makes the RELRO range read-only after relocating (whole
  // pages): no part of it counts as writable.
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t pageSize = page > 0 ? static_cast<uintptr_t>(page) : 4096;
  uintptr_t roBegin = (base + relro.p_vaddr) / pageSize * pageSize;
  uintptr_t roEnd = (base + relro.p_vaddr + relro.p_memsz + pageSize - 1) /
                    pageSize * pageSize;
  for (const Elf64_Phdr &p : loads) {
    Segment whole{base + p.p_vaddr, base + p.p_vaddr + p.p_memsz, p.p_flags};
    if (!relro.p_memsz || !(p.p_flags & PF_W) || whole.end <= roBegin ||
        whole.begin >= roEnd) {
      code->segments.push_back(whole);
      continue;
    }
    if (whole.begin < roBegin)
      code->segments.push_back({whole.begin, roBegin, whole.flags});
    code->segments.push_back({std::max(whole.begin, roBegin),
                              std::min(whole.end, roEnd),
                              whole.flags & ~uint32_t{PF_W}});
    if (whole.end > roEnd)
      code->segments.push_back({roEnd, whole.end, whole.flags});
  }
  if (locus_status_t s = checkCpu(*code, note))
    return s;
  if (locus_status_t s = bindImports(*code, imports, slots))
    return s;
  out = std::move(code);
  return nullptr;
}

HostCode::~HostCode() { closeLoaded(handle, fd); }

void *HostCode::symbol(const char *name) const { return dlsym(handle, name); }

bool HostCode::holds(const void *address, size_t size, uint32_t flags) const {
  auto at = reinterpret_cast<uintptr_t>(address);
  for (const Segment &s : segments)
    if ((s.flags & flags) == flags && at >= s.begin && at <= s.end &&
        size <= s.end - at)
      return true;
  return false;
}

bool HostCode::holdsString(const char *text) const {
  auto at = reinterpret_cast<uintptr_t>(text);
  for (const Segment &s : segments)
    if ((s.flags & PF_R) && at >= s.begin && at < s.end)
      return std::memchr(text, 0, s.end - at) != nullptr;
  return false;
}

const void *HostCode::definedHere(const char *name, unsigned type,
                                  size_t &size) const {
  void *address = dlsym(handle, name);
  if (!address)
    return nullptr;
  Dl_info info{};
  void *extra = nullptr;
  if (!dladdr1(address, &info, &extra, RTLD_DL_SYMENT) || !extra)
    return nullptr;
  const auto *entry = static_cast<const ElfW(Sym) *>(extra);
  if (ELF64_ST_TYPE(entry->st_info) != type)
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
  size = entry->st_size;
  return address;
}

void *HostCode::function(const char *name) const {
  size_t size = 0;
  const void *address = definedHere(name, STT_FUNC, size);
  if (!address || !holds(address, 1, PF_X))
    return nullptr;
  return const_cast<void *>(address);
}

const void *HostCode::object(const char *name, size_t &size) const {
  const void *address = definedHere(name, STT_OBJECT, size);
  if (!address || !holds(address, size, PF_R))
    return nullptr;
  return address;
}

} // namespace locus::rt

/// Never allocates, so never throws.
extern "C" void *locus_kernel_abi_function(const char *name) {
  return name ? locus::rt::runtimeFunction(name) : nullptr;
}
