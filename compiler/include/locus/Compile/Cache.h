//===- Cache.h - compiled graphs kept between processes ---------*- C++ -*-===//
//
// The compile cache: what the pipeline made of a graph (PipelineResult) and
// its kernels compiled for one CPU (HostCode), in one file per key under
// $LOCUS_CACHE_DIR, $XDG_CACHE_HOME/locus or ~/.cache/locus. locus::compile(),
// locus-compile and Python share it; locus-cache lists and clears it. The
// key is a SHA-256 of everything the result depends on: Locus's build, LLVM's
// version, the CPU, the options (a cost profile's contents, libdevice) and
// the graph with its locations. docs/compile-cache.md has the contract.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_COMPILE_CACHE_H
#define LOCUS_COMPILE_CACHE_H

#include "locus/Compile/Driver.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace locus::cache {

/// The default bound on the cache's bytes (LOCUS_CACHE_MAX_BYTES).
constexpr uint64_t kDefaultMaxBytes = uint64_t(2) << 30;

/// A digest of the compiler's sources, made at build time: a rebuilt
/// compiler with other sources never reads its predecessor's entries.
const char *buildId();

/// Where the cache is, whether it is used, and its bound.
struct Settings {
  bool enabled = false;
  std::string dir;
  uint64_t maxBytes = kDefaultMaxBytes;
  /// Why it is off when it could not be used (an unsafe or unmakeable
  /// folder, a bad LOCUS_CACHE_MAX_BYTES); empty when it is on, or off by
  /// the switch (LOCUS_CACHE=0) or for want of a home.
  std::string problem;

  /// From the environment: LOCUS_CACHE (0, off, false or no: off),
  /// LOCUS_CACHE_DIR, else $XDG_CACHE_HOME/locus, else $HOME/.cache/locus,
  /// and LOCUS_CACHE_MAX_BYTES. A non-empty `dir` replaces the folder. The
  /// folder is made (mode 0700) and must be a directory of this user that
  /// no one else may write; otherwise the cache is off, and `problem` says
  /// why.
  static Settings resolve(const std::string &dir = "");
};

/// One compiled graph.
struct Entry {
  PipelineResult result;
  HostCode code;
};

/// The digest of compiling `module` (before the pipeline runs on it) with
/// `options`, whatever the CPU: 64 hex digits of Locus's build, LLVM's
/// version, the options (a cost profile's contents, libdevice) and the
/// graph with its locations. Empty when the compile may not be cached (a
/// cost profile that cannot be read: the pipeline then says why; IR
/// printing or pass timing asked for).
std::string graphKeyOf(mlir::ModuleOp module, const PipelineOptions &options);

/// The key of an entry: the graph's key and the host code's CPU (for
/// "native", this machine's CPU and features). Empty for an empty
/// `graphKey`.
std::string keyFor(const std::string &graphKey, const std::string &cpu);

/// The entry of `key`, when it is there and whole. A damaged or foreign
/// file (bad checksum, truncated, not this user's) is removed, and `note`
/// says so; a hit marks the entry used now (eviction goes by last use).
std::optional<Entry> lookup(const Settings &settings, const std::string &key,
                            std::string *note = nullptr);

/// Stores `entry` under `key`: written to a temporary file in the folder
/// and renamed into place, so concurrent writers and readers see a whole
/// entry or none. Then removes the least recently used entries until the
/// cache fits its bound. Returns what went wrong, or "" (a failed store is
/// no failed compile).
std::string store(const Settings &settings, const std::string &key,
                  const Entry &entry);

/// One entry, as locus-cache lists it.
struct Listed {
  std::string key, graph, cpu;
  uint64_t bytes = 0;
  int64_t lastUsed = 0; ///< seconds since the epoch
};

/// The entries, most recently used first (their headers only).
std::vector<Listed> list(const Settings &settings);

/// Removes every entry and leftover temporary file; returns how many
/// entries went, or -1 with `error` set.
int64_t clear(const Settings &settings, std::string &error);

} // namespace locus::cache

#endif // LOCUS_COMPILE_CACHE_H
