// file_io.h - files the runtime writes and reads whole: writes that cannot
// destroy what was there (a temporary file beside the target, flushed to
// disk, renamed over it), reads bounded by what the caller expects, and
// messages that carry errno's text.
#ifndef LOCUS_RUNTIME_FILE_IO_H
#define LOCUS_RUNTIME_FILE_IO_H

#include "locus/locus_runtime.h"

#include <cstddef>
#include <memory>

namespace locus::rt {

/// Writes `size` bytes to `path` atomically: the old file, if any, stays
/// whole until the new one is complete on disk. UNAVAILABLE with errno's
/// text on failure, and then no temporary file is left. The file gets
/// `mode` when it is given (0600 for a secret key), else a new file 0644
/// and a replaced one its old mode.
locus_status_t writeFileAtomic(const char *path, const void *data, size_t size,
                               int mode = -1);

/// Reads all of `path` (at most `maxSize` bytes: INVALID_ARGUMENT beyond).
/// NOT_FOUND for a missing file, UNAVAILABLE with errno's text otherwise.
locus_status_t readFile(const char *path, size_t maxSize,
                        std::unique_ptr<unsigned char[]> &out, size_t &outSize);

} // namespace locus::rt

#endif
