//===- Errors.h - user errors and internal errors ---------------*- C++ -*-===//
//
// The compiler tells two kinds of failure apart, as Halide does:
//
// - a user error (locus::Error, locus/Frontend/Graph.h): the user's graph or
//   options are wrong; the message says what, at the user's source line, in
//   the user's terms. Inside the compiler these travel as MLIR diagnostics
//   and LogicalResult/FailureOr, and become exceptions only at the user API
//   (compile(), the recording frontend) or exit codes in the tools.
// - an internal error (locus::InternalError): a bug in Locus, never the
//   user's doing. LOCUS_INTERNAL_ASSERT / LOCUS_INTERNAL_ERROR throw one with
//   the compiler's own file and line; the tools print it as a bug to report.
//
// No MLIR here: the user API includes it.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_SUPPORT_ERRORS_H
#define LOCUS_SUPPORT_ERRORS_H

#include <stdexcept>
#include <string>

namespace locus {

/// A bug in Locus: a check the compiler makes of itself failed.
class InternalError : public std::logic_error {
public:
  InternalError(const char *file, unsigned line, const std::string &what)
      : std::logic_error("internal error (a bug in Locus, please report it) "
                         "at " +
                         std::string(file) + ":" + std::to_string(line) + ": " +
                         what),
        file_(file), line_(line) {}
  const char *file() const { return file_; }
  unsigned line() const { return line_; }

private:
  const char *file_;
  unsigned line_;
};

} // namespace locus

/// Throws locus::InternalError with `message` (a std::string expression).
#define LOCUS_INTERNAL_ERROR(message)                                          \
  throw ::locus::InternalError(__FILE__, __LINE__, (message))

/// Throws locus::InternalError with `message` unless `condition` holds.
#define LOCUS_INTERNAL_ASSERT(condition, message)                              \
  do {                                                                         \
    if (!(condition))                                                          \
      LOCUS_INTERNAL_ERROR(                                                    \
          std::string("assertion '" #condition "' failed: ") + (message));     \
  } while (false)

#endif // LOCUS_SUPPORT_ERRORS_H
