// host_code.cpp - loading an artifact's host code from memory.

#include "host_code.h"

#include "status_impl.h"

#include "locus/abi.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <vector>

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
/// Reads a `T` at `offset` of `bytes` (the caller checked the range).
template <typename T> T readAt(const unsigned char *bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes + offset, sizeof value);
  return value;
}

/// Whether [offset, offset + length) lies inside `size` bytes.
bool inside(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

/// DATA_LOSS: "the host code is not a shared object Locus made: <why>".
locus_status_t malformed(const char *why) {
  return makeStatus(LOCUS_STATUS_DATA_LOSS,
                    "the host code is not a shared object Locus made: %s", why);
}

/// The program headers of a Locus shared object: loadable segments in
/// order, inside the file, one dynamic segment inside them, a stack that
/// is not executable, nothing else that would make the system loader run
/// or map something (an interpreter, TLS).
locus_status_t checkSegments(const unsigned char *bytes, size_t size,
                             const Elf64_Ehdr &header,
                             std::vector<Elf64_Phdr> &loads,
                             Elf64_Phdr &dynamic) {
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 ||
      header.e_phnum > 64 ||
      !inside(header.e_phoff, uint64_t{header.e_phnum} * sizeof(Elf64_Phdr),
              size))
    return malformed("program headers");
  int dynamics = 0;
  std::vector<Elf64_Phdr> others;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    auto p = readAt<Elf64_Phdr>(bytes, header.e_phoff + i * sizeof(Elf64_Phdr));
    if (!inside(p.p_offset, p.p_filesz, size) || p.p_filesz > p.p_memsz ||
        p.p_memsz > (uint64_t{1} << 32) ||
        (p.p_align > 1 && (p.p_align & (p.p_align - 1))))
      return malformed("a segment outside the file");
    switch (p.p_type) {
    case PT_LOAD:
      if ((p.p_align > 1 && p.p_offset % p.p_align != p.p_vaddr % p.p_align) ||
          (!loads.empty() &&
           p.p_vaddr < loads.back().p_vaddr + loads.back().p_memsz))
        return malformed("loadable segments out of order");
      loads.push_back(p);
      break;
    case PT_DYNAMIC:
      dynamic = p;
      ++dynamics;
      break;
    case PT_GNU_STACK:
      if (p.p_flags & PF_X)
        return malformed("an executable stack");
      break;
    case PT_PHDR:
      if (p.p_offset != header.e_phoff ||
          p.p_filesz != uint64_t{header.e_phnum} * sizeof(Elf64_Phdr))
        return malformed("program headers");
      others.push_back(p);
      break;
    case PT_GNU_RELRO:
    case PT_GNU_EH_FRAME:
    case PT_GNU_PROPERTY:
    case PT_NOTE:
      others.push_back(p);
      break;
    default:
      return malformed("a segment of a kind Locus does not make");
    }
  }
  if (loads.empty() || dynamics != 1 || dynamic.p_filesz % sizeof(Elf64_Dyn))
    return malformed("no dynamic segment");
  // The loader reads these segments in mapped memory; each must lie in one
  // loadable segment, its file bytes where that segment maps them (what is
  // checked here, in the file, is then what the loader reads).
  others.push_back(dynamic);
  for (const Elf64_Phdr &o : others) {
    bool within = false;
    for (const Elf64_Phdr &p : loads)
      within |= o.p_vaddr >= p.p_vaddr &&
                inside(o.p_vaddr - p.p_vaddr, o.p_memsz, p.p_memsz) &&
                (o.p_filesz == 0 ||
                 (inside(o.p_vaddr - p.p_vaddr, o.p_filesz, p.p_filesz) &&
                  o.p_offset == p.p_offset + (o.p_vaddr - p.p_vaddr)));
    if (!within)
      return malformed("a segment outside the loaded ones");
  }
  return nullptr;
}

/// Whether [address, address + length) lies in the file part of one
/// loadable segment.
bool mapped(const std::vector<Elf64_Phdr> &loads, uint64_t address,
            uint64_t length) {
  for (const Elf64_Phdr &p : loads)
    if (address >= p.p_vaddr && inside(address - p.p_vaddr, length, p.p_filesz))
      return true;
  return false;
}

/// The file offset of `address` in a loadable segment's file part, or
/// UINT64_MAX.
uint64_t fileOffsetOf(const std::vector<Elf64_Phdr> &loads, uint64_t address,
                      uint64_t length) {
  for (const Elf64_Phdr &p : loads)
    if (address >= p.p_vaddr && inside(address - p.p_vaddr, length, p.p_filesz))
      return p.p_offset + (address - p.p_vaddr);
  return UINT64_MAX;
}

/// Every relocation writes 8 bytes inside a writable loadable segment, of a
/// kind the linker makes for Locus's code.
locus_status_t checkRelocations(const unsigned char *bytes,
                                const std::vector<Elf64_Phdr> &loads,
                                uint64_t address, uint64_t size) {
  if (size % sizeof(Elf64_Rela))
    return malformed("relocations");
  uint64_t offset = fileOffsetOf(loads, address, size);
  if (size && offset == UINT64_MAX)
    return malformed("relocations outside the file");
  for (uint64_t at = 0; at < size; at += sizeof(Elf64_Rela)) {
    auto r = readAt<Elf64_Rela>(bytes, offset + at);
#if defined(__x86_64__)
    uint32_t type = ELF64_R_TYPE(r.r_info);
    if (type != R_X86_64_RELATIVE && type != R_X86_64_GLOB_DAT &&
        type != R_X86_64_JUMP_SLOT && type != R_X86_64_64)
      return malformed("a relocation of a kind Locus does not make");
#endif
    bool writable = false;
    for (const Elf64_Phdr &p : loads)
      writable |= (p.p_flags & PF_W) && r.r_offset >= p.p_vaddr &&
                  inside(r.r_offset - p.p_vaddr, 8, p.p_memsz);
    if (!writable)
      return malformed("a relocation outside writable memory");
  }
  return nullptr;
}

/// The dynamic section: no library it needs, no code run when loaded
/// (constructors), and every table it points to inside the file.
locus_status_t checkDynamic(const unsigned char *bytes,
                            const std::vector<Elf64_Phdr> &loads,
                            const Elf64_Phdr &dynamic) {
  std::map<int64_t, uint64_t> tags;
  bool ended = false;
  for (uint64_t at = 0; at < dynamic.p_filesz && !ended;
       at += sizeof(Elf64_Dyn)) {
    auto d = readAt<Elf64_Dyn>(bytes, dynamic.p_offset + at);
    switch (d.d_tag) {
    case DT_NULL:
      ended = true;
      break;
    case DT_NEEDED:
      return malformed("it needs another library");
    case DT_INIT:
    case DT_FINI:
    case DT_PREINIT_ARRAY:
      return malformed("it runs code when loaded");
    default:
      tags[d.d_tag] = d.d_un.d_val;
    }
  }
  if (!ended)
    return malformed("an unterminated dynamic section");
  for (int64_t sized : {DT_INIT_ARRAYSZ, DT_FINI_ARRAYSZ})
    if (tags.count(sized) && tags[sized])
      return malformed("it runs code when loaded");
  struct Table {
    int64_t address, size;
  };
  for (Table t : {Table{DT_STRTAB, DT_STRSZ}, Table{DT_RELA, DT_RELASZ},
                  Table{DT_JMPREL, DT_PLTRELSZ}, Table{DT_SYMTAB, 0},
                  Table{DT_HASH, 0}, Table{DT_GNU_HASH, 0}}) {
    if (!tags.count(t.address))
      continue;
    uint64_t length = t.size && tags.count(t.size) ? tags[t.size] : 1;
    if (!mapped(loads, tags[t.address], length))
      return malformed("a dynamic table outside the file");
  }
  if (!tags.count(DT_STRTAB) || !tags.count(DT_SYMTAB))
    return malformed("no symbol table");
  if (locus_status_t s = checkRelocations(
          bytes, loads, tags.count(DT_RELA) ? tags[DT_RELA] : 0,
          tags.count(DT_RELASZ) ? tags[DT_RELASZ] : 0))
    return s;
  return checkRelocations(bytes, loads,
                          tags.count(DT_JMPREL) ? tags[DT_JMPREL] : 0,
                          tags.count(DT_PLTRELSZ) ? tags[DT_PLTRELSZ] : 0);
}

locus_status_t checkElf(const unsigned char *bytes, size_t size,
                        std::vector<Elf64_Phdr> &loads) {
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
  // The rest is checked before the system loader sees a byte of it: a
  // malformed header, segment or dynamic table killed the process inside
  // dlopen, and a constructor ran at load.
  auto header = readAt<Elf64_Ehdr>(bytes, 0);
  if (header.e_ident[EI_VERSION] != EV_CURRENT ||
      header.e_version != EV_CURRENT || header.e_type != ET_DYN ||
      header.e_ehsize != sizeof(Elf64_Ehdr))
    return malformed("its ELF header");
  if (header.e_shnum &&
      (header.e_shentsize != sizeof(Elf64_Shdr) ||
       !inside(header.e_shoff, uint64_t{header.e_shnum} * sizeof(Elf64_Shdr),
               size)))
    return malformed("section headers outside the file");
  Elf64_Phdr dynamic{};
  if (locus_status_t s = checkSegments(bytes, size, header, loads, dynamic))
    return s;
  return checkDynamic(bytes, loads, dynamic);
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
  if (features && (!code.holds(static_cast<const void *>(features),
                               sizeof *features, PF_R) ||
                   (*features && !code.holdsString(*features))))
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "the host code's CPU features are outside it");
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
  if (cpu && (!code.holds(static_cast<const void *>(cpu), sizeof *cpu, PF_R) ||
              (*cpu && !code.holdsString(*cpu))))
    return makeStatus(LOCUS_STATUS_DATA_LOSS,
                      "the host code's CPU name is outside it");
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
    if (!slot ||
        !code.holds(static_cast<const void *>(slot), sizeof(void *), PF_W))
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
  std::vector<Elf64_Phdr> loads;
  if (locus_status_t s = checkElf(bytes, size, loads))
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
  // Where the segments were mapped: every address the runtime takes from
  // the code (a kernel, an import slot, a string) must lie in one.
  void *mapped = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, static_cast<void *>(&mapped)) != 0 ||
      !mapped)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the loaded host code has no link map");
  auto base =
      static_cast<uintptr_t>(static_cast<struct link_map *>(mapped)->l_addr);
  for (const Elf64_Phdr &p : loads)
    code->segments.push_back(
        {base + p.p_vaddr, base + p.p_vaddr + p.p_memsz, p.p_flags});
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
