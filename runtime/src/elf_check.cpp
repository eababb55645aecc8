// elf_check.cpp - the checks made of an artifact's host code, an ELF shared
// object, before the system loader sees it.

#include "elf_check.h"

#include "status_impl.h"

#include "locus/abi.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace locus::rt {

namespace {

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
                             Elf64_Phdr &dynamic, Elf64_Phdr &relro) {
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
      // Readable (the loader reads its headers and tables there), never
      // writable and executable at once.
      if (!(p.p_flags & PF_R) || (p.p_flags & (PF_W | PF_X)) == (PF_W | PF_X))
        return malformed("a loadable segment that is not readable, or "
                         "writable code");
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
      // lld keeps room for a segment it dropped (no code: a model without
      // kernels), so the table may be larger than the headers it holds.
      if (p.p_offset != header.e_phoff ||
          p.p_filesz < uint64_t{header.e_phnum} * sizeof(Elf64_Phdr))
        return malformed("program headers");
      others.push_back(p);
      break;
    case PT_GNU_RELRO:
      relro = p;
      others.push_back(p);
      break;
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

/// Reads the u32 at `address` when it lies in a loadable segment's file
/// part.
bool readWord(const unsigned char *bytes, const std::vector<Elf64_Phdr> &loads,
              uint64_t address, uint32_t &out) {
  uint64_t offset = fileOffsetOf(loads, address, 4);
  if (offset == UINT64_MAX)
    return false;
  out = readAt<uint32_t>(bytes, offset);
  return true;
}

/// The number of symbols a GNU hash table at `address` reaches (the system
/// loader follows its buckets and chains without bounds); 0 if malformed.
uint64_t gnuHashSymbols(const unsigned char *bytes,
                        const std::vector<Elf64_Phdr> &loads,
                        uint64_t address) {
  uint32_t buckets = 0, offset = 0, blooms = 0, shift = 0;
  if (!readWord(bytes, loads, address, buckets) ||
      !readWord(bytes, loads, address + 4, offset) ||
      !readWord(bytes, loads, address + 8, blooms) ||
      !readWord(bytes, loads, address + 12, shift) || buckets == 0 ||
      buckets > (1u << 20) || blooms == 0 || (blooms & (blooms - 1)) ||
      blooms > (1u << 20) || shift >= 64)
    return 0;
  uint64_t bucketAt = address + 16 + uint64_t{8} * blooms;
  uint64_t chainAt = bucketAt + uint64_t{4} * buckets;
  if (!mapped(loads, address + 16, uint64_t{8} * blooms) ||
      !mapped(loads, bucketAt, uint64_t{4} * buckets))
    return 0;
  uint64_t symbols = offset;
  for (uint32_t b = 0; b < buckets; ++b) {
    uint32_t first = 0;
    readWord(bytes, loads, bucketAt + 4 * uint64_t{b}, first);
    if (first == 0)
      continue;
    if (first < offset)
      return 0;
    // A chain ends with its low bit set; a long one is refused.
    for (uint64_t i = first;; ++i) {
      uint32_t hash = 0;
      if (i - offset > (1u << 20) ||
          !readWord(bytes, loads, chainAt + 4 * (i - offset), hash))
        return 0;
      symbols = std::max(symbols, i + 1);
      if (hash & 1)
        break;
    }
  }
  return symbols;
}

/// Whether the string at `address` is `name` (its NUL included).
bool namedAs(const unsigned char *bytes, const std::vector<Elf64_Phdr> &loads,
             uint64_t address, const char *name) {
  size_t length = std::strlen(name) + 1;
  uint64_t at = fileOffsetOf(loads, address, length);
  return at != UINT64_MAX && std::memcmp(bytes + at, name, length) == 0;
}

/// The number of symbols of a SysV hash table at `address`, its buckets
/// and chains inside it; 0 if malformed.
uint64_t sysvHashSymbols(const unsigned char *bytes,
                         const std::vector<Elf64_Phdr> &loads,
                         uint64_t address) {
  uint32_t buckets = 0, chains = 0;
  if (!readWord(bytes, loads, address, buckets) ||
      !readWord(bytes, loads, address + 4, chains) || buckets == 0 ||
      buckets > (1u << 20) || chains > (1u << 20) ||
      !mapped(loads, address + 8, (uint64_t{buckets} + chains) * 4))
    return 0;
  for (uint64_t i = 0; i < uint64_t{buckets} + chains; ++i) {
    uint32_t index = 0;
    readWord(bytes, loads, address + 8 + 4 * i, index);
    if (index >= chains)
      return 0;
  }
  return chains;
}

/// The symbol table: `count` entries inside the file, each name inside the
/// string table, which ends in NUL. `slots` gets the names of the import
/// slots the code defines (LOCUS_ABI_IMPORT_PREFIX<function>).
locus_status_t checkSymbols(const unsigned char *bytes,
                            const std::vector<Elf64_Phdr> &loads,
                            uint64_t symtab, uint64_t count, uint64_t strtab,
                            uint64_t strsz, std::vector<std::string> &slots) {
  uint64_t strings = fileOffsetOf(loads, strtab, strsz);
  uint64_t symbols = fileOffsetOf(loads, symtab, count * sizeof(Elf64_Sym));
  if (strsz == 0 || strings == UINT64_MAX || bytes[strings + strsz - 1] != 0 ||
      count == 0 || count > (1u << 20) || symbols == UINT64_MAX)
    return malformed("its symbol or string table");
  for (uint64_t i = 0; i < count; ++i) {
    auto sym = readAt<Elf64_Sym>(bytes, symbols + i * sizeof(Elf64_Sym));
    if (sym.st_name >= strsz)
      return malformed("its symbol or string table");
    // NUL-terminated inside the table (its last byte is NUL).
    const char *name =
        reinterpret_cast<const char *>(bytes + strings + sym.st_name);
    // The loader runs an IFUNC symbol's resolver (code of the artifact)
    // when it binds it, and sets up storage for TLS and GNU-unique ones:
    // Locus's code has none of them.
    if (ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC ||
        ELF64_ST_TYPE(sym.st_info) == STT_TLS ||
        ELF64_ST_BIND(sym.st_info) == STB_GNU_UNIQUE)
      return malformed("an IFUNC, TLS or GNU-unique symbol");
    if (sym.st_shndx != SHN_UNDEF &&
        std::strncmp(name, LOCUS_ABI_IMPORT_PREFIX,
                     sizeof(LOCUS_ABI_IMPORT_PREFIX) - 1) == 0)
      slots.emplace_back(name + sizeof(LOCUS_ABI_IMPORT_PREFIX) - 1);
  }
  return nullptr;
}

/// Every relocation writes 8 bytes inside a writable loadable segment, of a
/// kind the linker makes for Locus's code, and names a symbol there is.
locus_status_t checkRelocations(const unsigned char *bytes,
                                const std::vector<Elf64_Phdr> &loads,
                                const Elf64_Phdr &dynamic, uint64_t address,
                                uint64_t size, uint64_t symbols) {
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
    if (ELF64_R_SYM(r.r_info) >= symbols)
      return malformed("a relocation of a symbol there is not");
    bool writable = false;
    for (const Elf64_Phdr &p : loads)
      writable |= (p.p_flags & PF_W) && r.r_offset >= p.p_vaddr &&
                  inside(r.r_offset - p.p_vaddr, 8, p.p_memsz);
    // Nor into the dynamic section, which the loader reads again after
    // relocating (a symbol lookup follows its table addresses).
    if (!writable || (r.r_offset + 8 > dynamic.p_vaddr &&
                      r.r_offset < dynamic.p_vaddr + dynamic.p_memsz))
      return malformed("a relocation outside writable memory");
  }
  return nullptr;
}

/// The dynamic section's entries up to its DT_NULL, into `tags`: only the
/// kinds Locus's linker writes, each once; no library it needs, no code run
/// when loaded (constructors).
locus_status_t readDynamicTags(const unsigned char *bytes,
                               const Elf64_Phdr &dynamic,
                               std::map<int64_t, uint64_t> &tags) {
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
    case DT_PREINIT_ARRAYSZ:
    case DT_INIT_ARRAY:
    case DT_INIT_ARRAYSZ:
    case DT_FINI_ARRAY:
    case DT_FINI_ARRAYSZ:
      return malformed("it runs code when loaded");
    case DT_SONAME:
    case DT_FLAGS:
    case DT_FLAGS_1:
    case DT_RELA:
    case DT_RELASZ:
    case DT_RELAENT:
    case DT_RELACOUNT:
    case DT_JMPREL:
    case DT_PLTRELSZ:
    case DT_PLTGOT:
    case DT_PLTREL:
    case DT_SYMTAB:
    case DT_SYMENT:
    case DT_STRTAB:
    case DT_STRSZ:
    case DT_HASH:
    case DT_GNU_HASH:
      if (tags.count(d.d_tag))
        return malformed("a dynamic entry twice");
      tags[d.d_tag] = d.d_un.d_val;
      break;
    default:
      return malformed("a dynamic entry of a kind Locus does not make");
    }
  }
  if (!ended)
    return malformed("an unterminated dynamic section");
  return nullptr;
}

/// The dynamic entries have the values the system loader assumes (it
/// asserts, or reads out of bounds, on others): each with its partner, the
/// entry sizes, flags and relocation kind Locus's linker writes, every table
/// they point to inside the file, a symbol table and hash table, and no
/// shared-object name but LOCUS_ABI_HOST_SONAME.
locus_status_t checkDynamicTags(const unsigned char *bytes,
                                const std::vector<Elf64_Phdr> &loads,
                                std::map<int64_t, uint64_t> &tags) {
  auto tag = [&](int64_t t) { return tags.count(t) ? tags[t] : 0; };
  // The loader reads an entry's partner without looking: DT_PLTREL without
  // DT_JMPREL (the fuzzer's find), a table without its size or entry size,
  // is a NULL read inside dlopen.
  auto has = [&](int64_t t) { return tags.count(t) != 0; };
  if (has(DT_RELA) != has(DT_RELASZ) || has(DT_RELA) != has(DT_RELAENT) ||
      has(DT_PLTREL) != has(DT_JMPREL) || has(DT_JMPREL) != has(DT_PLTRELSZ) ||
      (has(DT_RELACOUNT) && !has(DT_RELA)))
    return malformed("a dynamic entry without its partner");
  if ((tags.count(DT_RELAENT) && tag(DT_RELAENT) != sizeof(Elf64_Rela)) ||
      (tags.count(DT_SYMENT) && tag(DT_SYMENT) != sizeof(Elf64_Sym)) ||
      ((tags.count(DT_PLTREL) || tags.count(DT_JMPREL)) &&
       tag(DT_PLTREL) != DT_RELA) ||
      tag(DT_RELACOUNT) > tag(DT_RELASZ) / sizeof(Elf64_Rela) ||
      (tag(DT_FLAGS) & ~uint64_t{DF_BIND_NOW}) ||
      (tag(DT_FLAGS_1) & ~uint64_t{DF_1_NOW}) ||
      (tags.count(DT_SONAME) && tag(DT_SONAME) >= tag(DT_STRSZ)))
    return malformed("a dynamic entry Locus's linker does not write");
  struct Table {
    int64_t address, size;
  };
  for (Table t : {Table{DT_STRTAB, DT_STRSZ}, Table{DT_RELA, DT_RELASZ},
                  Table{DT_JMPREL, DT_PLTRELSZ}, Table{DT_SYMTAB, 0},
                  Table{DT_PLTGOT, 0}}) {
    if (!tags.count(t.address))
      continue;
    uint64_t length = t.size && tags.count(t.size) ? tags[t.size] : 1;
    if (!mapped(loads, tags[t.address], length))
      return malformed("a dynamic table outside the file");
  }
  if (!tags.count(DT_STRTAB) || !tags.count(DT_SYMTAB) ||
      (!tags.count(DT_HASH) && !tags.count(DT_GNU_HASH)))
    return malformed("no symbol table");
  if (tags.count(DT_SONAME) &&
      !namedAs(bytes, loads, tag(DT_STRTAB) + tag(DT_SONAME),
               LOCUS_ABI_HOST_SONAME))
    return malformed("a shared-object name other than " LOCUS_ABI_HOST_SONAME);
  return nullptr;
}

/// The dynamic section holds only what Locus's linker writes, with the
/// values the system loader assumes (it asserts, or reads out of bounds,
/// on others): no library it needs, no code run when loaded
/// (constructors), every table it points to inside the file, hash tables
/// whose buckets and chains stay inside it, relocations of symbols there
/// are.
locus_status_t checkDynamic(const unsigned char *bytes,
                            const std::vector<Elf64_Phdr> &loads,
                            const Elf64_Phdr &dynamic,
                            std::vector<std::string> &slots) {
  std::map<int64_t, uint64_t> tags;
  if (locus_status_t s = readDynamicTags(bytes, dynamic, tags))
    return s;
  if (locus_status_t s = checkDynamicTags(bytes, loads, tags))
    return s;
  auto tag = [&](int64_t t) { return tags.count(t) ? tags[t] : 0; };
  // The symbols the loader can reach: through either hash table.
  uint64_t symbols =
      tags.count(DT_HASH) ? sysvHashSymbols(bytes, loads, tag(DT_HASH)) : 0;
  if (tags.count(DT_HASH) && !symbols)
    return malformed("its hash table");
  if (tags.count(DT_GNU_HASH)) {
    uint64_t gnu = gnuHashSymbols(bytes, loads, tag(DT_GNU_HASH));
    if (!gnu || (tags.count(DT_HASH) && gnu > symbols))
      return malformed("its hash table");
    symbols = std::max(symbols, gnu);
  }
  if (locus_status_t s = checkSymbols(bytes, loads, tag(DT_SYMTAB), symbols,
                                      tag(DT_STRTAB), tag(DT_STRSZ), slots))
    return s;
  if (locus_status_t s = checkRelocations(bytes, loads, dynamic, tag(DT_RELA),
                                          tag(DT_RELASZ), symbols))
    return s;
  // The loader applies the first DT_RELACOUNT relocations as relative ones
  // without looking (it asserts on another kind).
  uint64_t relative = fileOffsetOf(loads, tag(DT_RELA), tag(DT_RELASZ));
  for (uint64_t i = 0; i < tag(DT_RELACOUNT); ++i) {
    auto r = readAt<Elf64_Rela>(bytes, relative + i * sizeof(Elf64_Rela));
#if defined(__x86_64__)
    if (ELF64_R_TYPE(r.r_info) != R_X86_64_RELATIVE)
#elif defined(__aarch64__)
    if (ELF64_R_TYPE(r.r_info) != R_AARCH64_RELATIVE)
#endif
      return malformed("a dynamic entry Locus's linker does not write");
  }
  return checkRelocations(bytes, loads, dynamic, tag(DT_JMPREL),
                          tag(DT_PLTRELSZ), symbols);
}

} // namespace

locus_status_t checkElf(const unsigned char *bytes, size_t size,
                        std::vector<Elf64_Phdr> &loads, Elf64_Phdr &relro,
                        std::vector<std::string> &slots) {
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
  if (locus_status_t s =
          checkSegments(bytes, size, header, loads, dynamic, relro))
    return s;
  return checkDynamic(bytes, loads, dynamic, slots);
}

} // namespace locus::rt
