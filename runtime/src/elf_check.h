// elf_check.h - the checks made of an artifact's host code, an ELF shared
// object, before it is handed to the system loader (dlopen): a malformed
// header, segment or dynamic table would kill the process inside dlopen, and
// a constructor would run at load.
#ifndef LOCUS_RUNTIME_ELF_CHECK_H
#define LOCUS_RUNTIME_ELF_CHECK_H

#include "locus/locus_runtime.h"

#include <elf.h>

#include <cstddef>
#include <string>
#include <vector>

namespace locus::rt {

/// Whether the `size` bytes at `bytes` are a 64-bit little-endian ELF shared
/// object for this machine as Locus's linker makes it (the artifact's
/// checksum vouches for the rest): its ELF header; its segments (loadable
/// ones readable, in order and inside the file, none writable and
/// executable, the others inside a loadable one, no interpreter or TLS, no
/// executable stack); its dynamic section (only the entries Locus's linker
/// writes, no library it needs, no code run when loaded, every table inside
/// the file); its hash tables; its symbols (no IFUNC, TLS or GNU-unique one,
/// every name inside the string table); its relocations (of kinds the
/// linker makes, of symbols there are, into writable memory outside the
/// dynamic section). docs/artifact.md lists the checks.
///
/// Appends the loadable segments to `loads` in order, sets `relro` to the
/// RELRO segment (left as it was when there is none) and appends to `slots`
/// the functions whose import slots the code defines (the names after
/// LOCUS_ABI_IMPORT_PREFIX). Returns UNAVAILABLE when the object is for
/// another ELF machine, DATA_LOSS for anything else amiss ("the host code is
/// not a 64-bit little-endian ELF object", or "... is not a shared object
/// Locus made: <why>"); the outputs may then hold part of what was read.
locus_status_t checkElf(const unsigned char *bytes, size_t size,
                        std::vector<Elf64_Phdr> &loads, Elf64_Phdr &relro,
                        std::vector<std::string> &slots);

} // namespace locus::rt

#endif
