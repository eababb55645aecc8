// host_code.h - an artifact's host code: a shared object loaded from memory.
#ifndef LOCUS_RUNTIME_HOST_CODE_H
#define LOCUS_RUNTIME_HOST_CODE_H

#include "locus/locus_runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace locus::rt {

/// A shared object the compiler linked from the kernels' object code, loaded
/// from the artifact's bytes (through a memfd, never a file on disk). The
/// runtime functions the code calls (`imports`) are bound through the
/// object's import slots (LOCUS_ABI_IMPORT_PREFIX and the name), so it needs
/// nothing of the process but libc and libm.
class HostCode {
public:
  static locus_status_t load(const void *data, size_t size,
                             const std::vector<std::string> &imports,
                             std::unique_ptr<HostCode> &out, std::string &note);
  ~HostCode();
  void *symbol(const char *name) const;
  /// `name` as a kernel: a function the host code itself defines (not a
  /// data symbol, nor a function of a library it links, such as libc's);
  /// null otherwise.
  void *function(const char *name) const;
  /// `name` as data: an object the host code defines, all its `size` bytes
  /// in a readable segment; null otherwise.
  const void *object(const char *name, size_t &size) const;

  /// Whether `size` bytes at `address` lie in one segment of the loaded
  /// code whose ELF flags include `flags` (PF_R, PF_W, PF_X).
  bool holds(const void *address, size_t size, uint32_t flags) const;
  /// Whether `text` is a NUL-terminated string inside a readable segment.
  bool holdsString(const char *text) const;

private:
  /// The address and size of symbol `name` of ELF type `type` when the
  /// host code itself defines it; null otherwise.
  const void *definedHere(const char *name, unsigned type, size_t &size) const;
  struct Segment {
    uintptr_t begin, end;
    uint32_t flags;
  };
  void *handle = nullptr;
  int fd = -1; ///< the memfd the object was loaded from
  std::vector<Segment> segments;
};

} // namespace locus::rt

#endif
