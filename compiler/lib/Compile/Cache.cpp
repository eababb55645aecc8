//===- Cache.cpp - the compile cache's key, entries and folder ------------===//
//
// An entry file: "LOCUSCC\0", the format, the key, the graph's name and the
// CPU (what locus-cache lists), then the pipeline's result and the host
// code, each field as a little-endian u64 length or value, and last a
// SHA-256 of every byte before it. Written as the runtime writes artifacts
// (locus_file_write_atomic: a temporary file beside it, flushed and renamed
// into place); read whole, checked, then parsed with bounds on every field.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Cache.h"

#include "locus/Pipelines/Pipelines.h"
#include "locus/locus_runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

using namespace locus;
using namespace locus::cache;

namespace {

/// The first eight bytes of an entry, its NUL included.
constexpr char kMagicText[] = "LOCUSCC";
const llvm::StringRef kMagic(kMagicText, sizeof kMagicText);
constexpr uint64_t kFormat = 2;
constexpr llvm::StringLiteral kSuffix = ".lcc";
/// What locus_file_write_atomic names its temporary file after: the
/// entry's name, then ".tmp-" and six characters.
constexpr llvm::StringLiteral kTempInfix = ".lcc.tmp-";
/// A temporary file this old is a dead writer's (a live one renames its
/// file within the seconds an entry takes to write).
constexpr int64_t kStaleTemporarySeconds = 3600;
constexpr size_t kKeyChars = 64;
constexpr size_t kDigestBytes = 32;

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

/// A stream that feeds what is written to it into a SHA-256: the graph is
/// hashed as it prints, never held as text.
class HashStream : public llvm::raw_ostream {
public:
  explicit HashStream(llvm::SHA256 &hash) : hash_(hash) {}
  ~HashStream() override { flush(); }

private:
  void write_impl(const char *data, size_t size) override {
    hash_.update(llvm::StringRef(data, size));
    pos_ += size;
  }
  uint64_t current_pos() const override { return pos_; }

  llvm::SHA256 &hash_;
  uint64_t pos_ = 0;
};

/// Adds a named field: its name and length go in too, so no two lists of
/// fields hash alike.
void field(llvm::SHA256 &hash, llvm::StringRef name, llvm::StringRef value) {
  hash.update(name);
  hash.update("=" + std::to_string(value.size()) + ":");
  hash.update(value);
  hash.update("\n");
}

std::string hex(llvm::ArrayRef<uint8_t> bytes) {
  return llvm::toHex(bytes, /*LowerCase=*/true);
}

/// The CPU the code is for: for "native", this host's name and features.
std::string cpuIdentity(const std::string &cpu) {
  if (cpu != "native")
    return cpu;
  std::vector<std::string> features;
  for (const auto &f : llvm::sys::getHostCPUFeatures())
    features.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
  std::sort(features.begin(), features.end());
  return "native " + llvm::sys::getHostCPUName().str() + " " +
         llvm::join(features, ",");
}

/// A file the result depends on, by what it holds; false when it cannot
/// be read.
bool fileDigest(const std::string &path, std::string &digest) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return false;
  digest = hex(
      llvm::SHA256::hash(llvm::arrayRefFromStringRef((*file)->getBuffer())));
  return true;
}

/// libdevice, which CUDA kernels link, by its path, size and time.
std::string libdeviceIdentity() {
  std::string path = findLibdevice();
  llvm::sys::fs::file_status status;
  if (path.empty() || llvm::sys::fs::status(path, status))
    return "none";
  return path + " " + std::to_string(status.getSize()) + " " +
         std::to_string(llvm::sys::toTimeT(status.getLastModificationTime()));
}

bool hasCudaTarget(const PlacementOptions &placement) {
  return llvm::any_of(placement.devices, [](const std::string &d) {
    return llvm::StringRef(d).starts_with("cuda");
  });
}

} // namespace

std::string locus::cache::graphKeyOf(mlir::ModuleOp module,
                                     const PipelineOptions &options) {
  if (options.printIrAfterAll || options.passTiming)
    return "";
  const PlacementOptions &p = options.placement;
  std::string profile = "none";
  if (!p.profile.empty() && !fileDigest(p.profile, profile))
    return "";
  llvm::SHA256 hash;
  field(hash, "format", "locus-compile-cache/" + std::to_string(kFormat));
  field(hash, "build", buildId());
  field(hash, "llvm", LLVM_VERSION_STRING);
  field(hash, "policy", placementPolicyName(p.policy));
  field(hash, "devices", llvm::join(p.devices, ","));
  field(hash, "profile", profile);
  field(hash, "flags",
        std::string(p.fuse ? "fuse" : "no-fuse") +
            (p.allowSoftPlacement ? " soft" : "") +
            (p.dataParallel ? " dp=" + std::to_string(p.bucketBytes) : "") +
            (p.eval ? " eval" : "") + (options.allowTf32 ? " tf32" : "") +
            (p.precision != "fp32" ? " precision=" + p.precision : ""));
  field(hash, "libdevice", hasCudaTarget(p) ? libdeviceIdentity() : "");
  hash.update("graph\n");
  {
    HashStream os(hash);
    module->print(os, mlir::OpPrintingFlags()
                          .enableDebugInfo(/*enable=*/true, /*pretty=*/false)
                          .printGenericOpForm());
  }
  return hex(hash.final());
}

std::string locus::cache::keyFor(const std::string &graphKey,
                                 const std::string &cpu) {
  if (graphKey.empty())
    return "";
  llvm::SHA256 hash;
  field(hash, "graph", graphKey);
  field(hash, "cpu", cpuIdentity(cpu));
  return hex(hash.final());
}

namespace {

//===----------------------------------------------------------------------===//
// Entries: one visitor writes and reads every field, in one order
//===----------------------------------------------------------------------===//

class Writer {
public:
  std::string bytes;

  void operator()(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void operator()(int64_t v) { (*this)(static_cast<uint64_t>(v)); }
  void operator()(unsigned v) { (*this)(static_cast<uint64_t>(v)); }
  void operator()(int v) { (*this)(static_cast<uint64_t>(int64_t(v))); }
  void operator()(bool v) { (*this)(static_cast<uint64_t>(v)); }
  void operator()(const std::string &s) {
    (*this)(static_cast<uint64_t>(s.size()));
    bytes += s;
  }
  template <typename A, typename B> void operator()(const std::pair<A, B> &p) {
    (*this)(p.first);
    (*this)(p.second);
  }
  template <typename T> void operator()(const std::vector<T> &v) {
    (*this)(static_cast<uint64_t>(v.size()));
    for (const T &x : v)
      (*this)(x);
  }
  void operator()(const dump::Source &s);
  void operator()(const dump::Warning &w);
};

/// Reads what Writer wrote; any read past the end or count beyond what is
/// left clears `ok` and reads zeros from then on.
class Reader {
public:
  explicit Reader(llvm::StringRef in) : in_(in) {}
  bool ok = true;
  bool atEnd() const { return at_ == in_.size(); }

  void operator()(uint64_t &v) {
    v = 0;
    if (!ok || in_.size() - at_ < 8) {
      ok = false;
      return;
    }
    for (int i = 0; i < 8; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[at_ + i])) << (8 * i);
    at_ += 8;
  }
  template <typename T>
  std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, uint64_t>>
  operator()(T &v) {
    uint64_t raw = 0;
    (*this)(raw);
    v = static_cast<T>(raw);
  }
  void operator()(std::string &s) {
    uint64_t size = 0;
    (*this)(size);
    if (!ok || in_.size() - at_ < size) {
      ok = false;
      return;
    }
    s = in_.substr(at_, size).str();
    at_ += size;
  }
  template <typename A, typename B> void operator()(std::pair<A, B> &p) {
    (*this)(p.first);
    (*this)(p.second);
  }
  template <typename T> void operator()(std::vector<T> &v) {
    uint64_t count = 0;
    (*this)(count);
    // Every element takes at least 8 bytes.
    if (!ok || count > (in_.size() - at_) / 8) {
      ok = false;
      return;
    }
    v.resize(count);
    for (T &x : v)
      (*this)(x);
  }
  void operator()(dump::Source &s);
  void operator()(dump::Warning &w);

private:
  llvm::StringRef in_;
  size_t at_ = 0;
};

template <typename IO, typename S> void visitSource(IO &io, S &s) {
  io(s.file);
  io(s.line);
  io(s.column);
  io(s.callerFile);
  io(s.callerLine);
  io(s.node);
  io(s.layerPath);
}
template <typename IO, typename W> void visitWarning(IO &io, W &w) {
  io(w.text);
  io(w.source);
  io(w.note);
}
void Writer::operator()(const dump::Source &s) { visitSource(*this, s); }
void Writer::operator()(const dump::Warning &w) { visitWarning(*this, w); }
void Reader::operator()(dump::Source &s) { visitSource(*this, s); }
void Reader::operator()(dump::Warning &w) { visitWarning(*this, w); }

/// Every field of an entry after its header, in the file's order.
template <typename IO, typename E> void visitEntry(IO &io, E &e) {
  auto &r = e.result;
  io(r.placedGraph);
  io(r.placementSummary);
  io(r.warnings);
  io(r.estimatedStepNs);
  io(r.plan);
  auto &s = r.summary;
  io(s.kernelFunctions);
  io(s.kernelArgBytes);
  io(s.kernelSources);
  io(s.stepCopies);
  io(s.loadCopies);
  io(s.loadLaunches);
  io(s.stepCopyBytes);
  io(s.loadCopyBytes);
  io(s.inPlaceUpdates);
  io(s.stateCopies);
  io(s.arenas);
  io(s.unsharedBytes);
  io(r.bitcode);
  io(r.cudaFunctions);
  io(r.cudaKernels);
  io(r.cudaNote);
  io(e.code.features);
  io(e.code.object);
}

/// The header every entry starts with (what list() reads).
template <typename IO>
void visitHeader(IO &io, std::string &magic, uint64_t &format, std::string &key,
                 std::string &graph, std::string &cpu) {
  io(magic);
  io(format);
  io(key);
  io(graph);
  io(cpu);
}

std::string encode(const std::string &key, const Entry &entry) {
  Writer w;
  std::string magic = kMagic.str(), k = key, graph = entry.result.graphName,
              cpu = entry.code.cpu;
  uint64_t format = kFormat;
  visitHeader(w, magic, format, k, graph, cpu);
  visitEntry(w, entry);
  std::array<uint8_t, 32> digest =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(w.bytes));
  w.bytes.append(digest.begin(), digest.end());
  return std::move(w.bytes);
}

/// Parses and checks an entry file's bytes; what is wrong, or "".
std::string decode(llvm::StringRef bytes, const std::string &key,
                   Entry &entry) {
  if (bytes.size() < kDigestBytes)
    return "truncated";
  llvm::StringRef body = bytes.drop_back(kDigestBytes);
  std::array<uint8_t, 32> digest =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(body));
  if (bytes.take_back(kDigestBytes) !=
      llvm::StringRef(reinterpret_cast<const char *>(digest.data()),
                      digest.size()))
    return "its checksum does not match";
  Reader r(body);
  std::string magic, k;
  uint64_t format = 0;
  visitHeader(r, magic, format, k, entry.result.graphName, entry.code.cpu);
  if (!r.ok || magic != kMagic || format != kFormat || k != key)
    return "not an entry of this format and key";
  visitEntry(r, entry);
  if (!r.ok || !r.atEnd())
    return "its fields do not fit its size";
  return "";
}

//===----------------------------------------------------------------------===//
// The folder
//===----------------------------------------------------------------------===//

bool isKey(llvm::StringRef key) {
  return key.size() == kKeyChars &&
         llvm::all_of(key, [](char c) { return llvm::isHexDigit(c); });
}

std::string entryPath(const Settings &s, const std::string &key) {
  return s.dir + "/" + key + kSuffix.str();
}

/// Whether `value` of LOCUS_CACHE turns the cache off.
bool switchedOff(llvm::StringRef value) {
  std::string v = value.lower();
  return v == "0" || v == "off" || v == "false" || v == "no";
}

/// The folder from the environment, or "" when there is no home.
std::string defaultFolder() {
  if (const char *dir = std::getenv("LOCUS_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/locus";
  if (const char *home = std::getenv("HOME"); home && *home == '/')
    return std::string(home) + "/.cache/locus";
  return "";
}

/// Makes `dir` (mode 0700) when it is missing; what makes it unusable, or
/// "". Only this user may write it: an entry is code the process runs.
std::string prepareFolder(const std::string &dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(
          dir, /*IgnoreExisting=*/true, llvm::sys::fs::perms::owner_all))
    return "cannot make the folder " + dir + ": " + ec.message();
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return dir + " is not a folder";
  if (st.st_uid != ::geteuid())
    return dir + " belongs to another user";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return "others may write " + dir + " (chmod go-w it)";
  return "";
}

} // namespace

Settings Settings::resolve(const std::string &dir) {
  Settings s;
  if (const char *sw = std::getenv("LOCUS_CACHE"); sw && switchedOff(sw))
    return s;
  s.dir = dir.empty() ? defaultFolder() : dir;
  if (s.dir.empty())
    return s;
  if (const char *max = std::getenv("LOCUS_CACHE_MAX_BYTES"); max && *max) {
    if (llvm::StringRef(max).getAsInteger(10, s.maxBytes)) {
      s.problem = "LOCUS_CACHE_MAX_BYTES='" + std::string(max) +
                  "' is not a number of bytes";
      return s;
    }
  }
  s.problem = prepareFolder(s.dir);
  s.enabled = s.problem.empty();
  return s;
}

namespace {

enum class Read { absent, whole, bad };

/// Reads the regular file `path` of this user, at most `maxBytes`, or only
/// its first `head` bytes when `head` is not 0; `why` says what is wrong
/// with a bad one.
Read readEntryFile(const std::string &path, uint64_t maxBytes,
                   std::string &bytes, std::string &why, size_t head = 0) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return errno == ENOENT ? Read::absent : Read::bad;
  }
  struct stat st{};
  Read result = Read::whole;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid()) {
    why = "not a file of this user";
    result = Read::bad;
  } else if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    why = "larger than the cache's bound";
    result = Read::bad;
  } else {
    size_t size = static_cast<size_t>(st.st_size);
    bytes.resize(head ? std::min(size, head) : size);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  return result;
}

} // namespace

std::optional<Entry> locus::cache::lookup(const Settings &settings,
                                          const std::string &key,
                                          std::string *note) {
  if (!settings.enabled || !isKey(key))
    return std::nullopt;
  std::string path = entryPath(settings, key), bytes, why;
  Read read = readEntryFile(path, settings.maxBytes, bytes, why);
  if (read == Read::absent)
    return std::nullopt;
  Entry entry;
  if (read == Read::whole)
    why = decode(bytes, key, entry);
  if (!why.empty()) {
    ::unlink(path.c_str());
    if (note)
      *note = "removed the damaged compile cache entry " + path + " (" + why +
              "); compiling again";
    return std::nullopt;
  }
  // Eviction goes by last use: a hit is a use.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return entry;
}

namespace {

/// The entry files and temporary files of the folder.
struct FolderFile {
  std::string name, path;
  uint64_t bytes = 0;
  int64_t modified = 0;
  bool entry = false;
};

std::vector<FolderFile> folderFiles(const std::string &dir) {
  std::vector<FolderFile> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    FolderFile f;
    f.path = it->path();
    f.name = llvm::sys::path::filename(f.path).str();
    llvm::StringRef name(f.name);
    f.entry = name.ends_with(kSuffix) && isKey(name.drop_back(kSuffix.size()));
    struct stat st{};
    if ((!f.entry && !name.contains(kTempInfix)) ||
        ::lstat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    f.bytes = static_cast<uint64_t>(st.st_size);
    f.modified = st.st_mtim.tv_sec;
    files.push_back(std::move(f));
  }
  return files;
}

/// Removes the temporary files of writers that died (killed mid-write),
/// then the least recently used entries (never `keep`) until the entries
/// fit `maxBytes`.
void evict(const Settings &s, const std::string &keep) {
  std::vector<FolderFile> files = folderFiles(s.dir);
  uint64_t total = 0;
  int64_t stale =
      static_cast<int64_t>(std::time(nullptr)) - kStaleTemporarySeconds;
  for (const FolderFile &f : files) {
    if (!f.entry && f.modified < stale)
      ::unlink(f.path.c_str());
    total += f.entry ? f.bytes : 0;
  }
  std::sort(files.begin(), files.end(),
            [](const FolderFile &a, const FolderFile &b) {
              return a.modified < b.modified;
            });
  for (const FolderFile &f : files) {
    if (total <= s.maxBytes)
      break;
    if (f.entry && f.path != keep && ::unlink(f.path.c_str()) == 0)
      total -= f.bytes;
  }
}

} // namespace

std::string locus::cache::store(const Settings &settings,
                                const std::string &key, const Entry &entry) {
  if (!settings.enabled || !isKey(key))
    return "";
  std::string bytes = encode(key, entry), why;
  if (bytes.size() > settings.maxBytes)
    return "the entry (" + std::to_string(bytes.size()) +
           " bytes) is larger than the cache's bound";
  std::string path = entryPath(settings, key);
  if (locus_status_t s =
          locus_file_write_atomic(path.c_str(), bytes.data(), bytes.size())) {
    why = locus_status_message(s);
    locus_status_free(s);
    return why;
  }
  evict(settings, path);
  return "";
}

std::vector<Listed> locus::cache::list(const Settings &settings) {
  std::vector<Listed> out;
  if (!settings.enabled)
    return out;
  for (const FolderFile &f : folderFiles(settings.dir)) {
    if (!f.entry)
      continue;
    std::string bytes, why;
    // The header is the first few fields: a key and two names.
    if (readEntryFile(f.path, settings.maxBytes, bytes, why, 64 << 10) !=
        Read::whole)
      continue;
    Reader r(bytes);
    Listed l;
    std::string magic;
    uint64_t format = 0;
    visitHeader(r, magic, format, l.key, l.graph, l.cpu);
    if (!r.ok || magic != kMagic || format != kFormat)
      l.graph = "(damaged or of another format)";
    l.key = f.name.substr(0, kKeyChars);
    l.bytes = f.bytes;
    l.lastUsed = f.modified;
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const Listed &a, const Listed &b) {
    return a.lastUsed > b.lastUsed;
  });
  return out;
}

int64_t locus::cache::clear(const Settings &settings, std::string &error) {
  if (!settings.enabled) {
    error = settings.problem.empty() ? "the compile cache is off"
                                     : settings.problem;
    return -1;
  }
  int64_t removed = 0;
  for (const FolderFile &f : folderFiles(settings.dir))
    if (::unlink(f.path.c_str()) == 0 && f.entry)
      ++removed;
  return removed;
}
