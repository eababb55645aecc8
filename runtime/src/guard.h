// guard.h - no C++ exception crosses the C API.
//
// The runtime is compiled with exceptions, so that RAII unwinds, but
// libstdc++ may throw (std::bad_alloc when a vector grows, std::logic_error
// for std::string(nullptr)). Every LOCUS_API entry point runs its body
// through one of these guards: an exception becomes a status, or, for an
// entry point that cannot return one, a fallback value (or a status kept
// for a later call to report). Entry points that only read fields
// (locus_model_report, locus_context_stats, ...) cannot throw and need none.
#ifndef LOCUS_RUNTIME_GUARD_H
#define LOCUS_RUNTIME_GUARD_H

#include "status_impl.h"

#include "locus/locus_runtime.h"

#include <exception>
#include <new>

namespace locus::rt {

/// The status for an exception caught in `entry`: OUT_OF_MEMORY for
/// std::bad_alloc, INTERNAL naming the entry point for anything else. Call
/// only inside a catch block.
locus_status_t statusOfException(const char *entry) noexcept;

/// Runs `body` (returning locus_status_t) and returns its status, or the
/// status of the exception it threw.
template <typename Body>
locus_status_t guardStatus(const char *entry, Body &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return statusOfException(entry);
  }
}

/// Runs `body` and returns its value, or `fallback` when it threw (the
/// exception is dropped: the entry point has no way to report it; its
/// documentation says what the fallback means).
template <typename T, typename Body>
T guardValue(T fallback, Body &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

/// Runs `body`, which returns nothing; an exception it throws is dropped.
template <typename Body> void guardVoid(Body &&body) noexcept {
  try {
    body();
  } catch (...) { // NOLINT(bugprone-empty-catch): dropping it is the contract
  }
}

/// Runs `body`, which returns nothing; the status of an exception it throws
/// goes to `keep` (which must not throw), e.g. to be reported later by the
/// call that can return a status.
template <typename Body, typename Keep>
void guardVoid(const char *entry, Body &&body, Keep &&keep) noexcept {
  try {
    body();
  } catch (...) {
    keep(statusOfException(entry));
  }
}

} // namespace locus::rt

/// The body of an entry point that returns a status: LOCUS_GUARD({ ... }).
/// __func__ names the entry point in the status of an exception.
#define LOCUS_GUARD(...)                                                       \
  return ::locus::rt::guardStatus(__func__, [&]() -> locus_status_t __VA_ARGS__)

#endif
