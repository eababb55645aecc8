// status.cpp - locus_status_t: a code and a message, NULL for success.

#include "guard.h"
#include "status_impl.h"

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

struct locus_status_s {
  locus_status_code_t code;
  std::string message;
};

namespace locus::rt {

// A status that could not be allocated: returned when memory runs out while
// reporting an error, and never freed.
static locus_status_s kOutOfMemory{LOCUS_STATUS_OUT_OF_MEMORY,
                                   "out of memory while reporting an error"};

locus_status_t makeStatus(locus_status_code_t code, const char *format,
                          ...) noexcept {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  auto *status = new (std::nothrow) locus_status_s;
  if (!status)
    return &kOutOfMemory;
  status->code = code;
  try {
    status->message = buffer;
  } catch (...) {
    delete status;
    return &kOutOfMemory;
  }
  return status;
}

locus_status_t statusOfException(const char *entry) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "%s: out of memory", entry);
  } catch (const std::exception &e) {
    return makeStatus(LOCUS_STATUS_INTERNAL, "%s: internal error: %s", entry,
                      e.what());
  } catch (...) {
    return makeStatus(LOCUS_STATUS_INTERNAL,
                      "%s: internal error (an unknown exception)", entry);
  }
}

} // namespace locus::rt

extern "C" {

locus_status_code_t locus_status_code(locus_status_t status) {
  return status ? status->code : LOCUS_STATUS_OK;
}

const char *locus_status_message(locus_status_t status) {
  return status ? status->message.c_str() : "";
}

locus_status_t locus_status_create(locus_status_code_t code,
                                   const char *message) {
  LOCUS_GUARD({
    if (code == LOCUS_STATUS_OK)
      return nullptr;
    return locus::rt::makeStatus(code, "%s", message ? message : "");
  });
}

void locus_status_free(locus_status_t status) {
  if (status && status != &locus::rt::kOutOfMemory)
    delete status;
}

const char *locus_status_code_name(locus_status_code_t code) {
  switch (code) {
  case LOCUS_STATUS_OK:
    return "ok";
  case LOCUS_STATUS_INVALID_ARGUMENT:
    return "invalid argument";
  case LOCUS_STATUS_NOT_FOUND:
    return "not found";
  case LOCUS_STATUS_UNAVAILABLE:
    return "unavailable";
  case LOCUS_STATUS_DATA_LOSS:
    return "data loss";
  case LOCUS_STATUS_OUT_OF_MEMORY:
    return "out of memory";
  case LOCUS_STATUS_INTERNAL:
    return "internal";
  case LOCUS_STATUS_CANCELLED:
    return "cancelled";
  case LOCUS_STATUS_PERMISSION_DENIED:
    return "permission denied";
  case LOCUS_STATUS_CODE_MAX_ENUM:
    break;
  }
  return "unknown";
}

const char *locus_runtime_version(void) { return LOCUS_VERSION_STRING; }

} // extern "C"
