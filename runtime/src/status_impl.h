// status_impl.h - making statuses inside the runtime.
#ifndef LOCUS_RUNTIME_STATUS_IMPL_H
#define LOCUS_RUNTIME_STATUS_IMPL_H

#include "locus/locus_runtime.h"

namespace locus::rt {

/// A new status with a printf-style message; never returns NULL and never
/// throws (out of memory gives a static OUT_OF_MEMORY status).
locus_status_t makeStatus(locus_status_code_t code, const char *format,
                          ...) noexcept __attribute__((format(printf, 2, 3)));

} // namespace locus::rt

#endif
