// file_io.cpp - atomic whole-file writes and bounded whole-file reads.

#include "file_io.h"

#include "guard.h"
#include "status_impl.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace locus::rt {

namespace {

/// UNAVAILABLE: "cannot write <path>: <step>: <errno text>".
locus_status_t writeError(const char *path, const char *step, int error) {
  return makeStatus(LOCUS_STATUS_UNAVAILABLE, "cannot write %s: %s: %s", path,
                    step, std::strerror(error));
}

/// Writes all of `data` to `fd`, through short writes and EINTR.
bool writeAll(int fd, const unsigned char *data, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

} // namespace

locus_status_t writeFileAtomic(const char *path, const void *data, size_t size,
                               int mode) {
  std::string temp = std::string(path) + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return writeError(path, "creating a temporary file beside it", errno);
  // A new file gets the usual mode, a replaced one keeps its own, unless
  // the caller says which (mkstemp made it 0600 already). A symbolic link
  // is replaced by the file, never followed: the new file does not take
  // the mode of whatever the link pointed to.
  struct stat old{};
  if (mode < 0)
    mode = ::lstat(path, &old) == 0 && S_ISREG(old.st_mode)
               ? static_cast<int>(old.st_mode & 07777)
               : 0644;
  const char *step = nullptr;
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0)
    step = "setting its mode";
  else if (!writeAll(fd, static_cast<const unsigned char *>(data), size))
    step = "writing";
  else if (::fsync(fd) != 0)
    step = "flushing to disk";
  int error = errno;
  if (::close(fd) != 0 && !step) {
    step = "closing";
    error = errno;
  }
  if (!step && ::rename(temp.c_str(), path) != 0) {
    step = "renaming the temporary file over it";
    error = errno;
  }
  if (step) {
    ::unlink(temp.c_str());
    return writeError(path, step, error);
  }
  return nullptr;
}

locus_status_t readFile(const char *path, size_t maxSize,
                        std::unique_ptr<unsigned char[]> &out,
                        size_t &outSize) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeStatus(errno == ENOENT ? LOCUS_STATUS_NOT_FOUND
                                      : LOCUS_STATUS_UNAVAILABLE,
                      "cannot open %s: %s", path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE, "cannot read %s: %s", path,
                      std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "cannot read %s: not a regular file", path);
  auto size = static_cast<uint64_t>(st.st_size);
  if (size > maxSize)
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "%s is %llu bytes, more than the %zu allowed", path,
                      static_cast<unsigned long long>(size), maxSize);
  std::unique_ptr<unsigned char[]> bytes(
      new (std::nothrow) unsigned char[size ? size : 1]);
  if (!bytes)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "%s: %llu bytes", path,
                      static_cast<unsigned long long>(size));
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, bytes.get() + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return makeStatus(LOCUS_STATUS_UNAVAILABLE, "cannot read %s: %s", path,
                        std::strerror(errno));
    if (n == 0)
      return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                        "cannot read %s: it shrank while being read", path);
    done += static_cast<size_t>(n);
  }
  out = std::move(bytes);
  outSize = size;
  return nullptr;
}

} // namespace locus::rt

extern "C" locus_status_t
locus_file_write_atomic(const char *path, const void *data, size_t size) {
  LOCUS_GUARD({
    if (!path || (!data && size))
      return locus::rt::makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                                   "locus_file_write_atomic: NULL argument");
    return locus::rt::writeFileAtomic(path, data, size);
  });
}
