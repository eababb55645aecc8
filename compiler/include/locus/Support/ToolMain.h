//===- ToolMain.h - the tools' exit codes -----------------------*- C++ -*-===//
//
// Every Locus tool exits with the same codes, so scripts can tell a bug of
// Locus from a mistake of theirs:
//   0   done;
//   1   the user's input, options or files are wrong (the message says how);
//   2   the command line itself is wrong (usage);
//   70  an internal error (sysexits.h's EX_SOFTWARE): a bug in Locus.
// runTool() wraps a tool's work so that no exception escapes main() and an
// internal error is never reported as the user's mistake.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_SUPPORT_TOOLMAIN_H
#define LOCUS_SUPPORT_TOOLMAIN_H

#include "locus/Support/Errors.h"

#include <exception>

namespace locus {

inline constexpr int kExitUserError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternalError = 70;

/// Runs `body` (a tool's work, returning its exit code). An InternalError
/// prints "<tool>: <message>" on `err` (a std::ostream or an
/// llvm::raw_ostream) and gives kExitInternalError; any
/// other exception (the tool's own handlers having caught the user's
/// errors they format) prints "<tool>: <what>" and gives kExitUserError.
template <typename Stream, typename Body>
int runTool(const char *tool, Stream &err, Body &&body) {
  try {
    return body();
  } catch (const InternalError &e) {
    err << tool << ": " << e.what() << "\n";
    return kExitInternalError;
  } catch (const std::exception &e) {
    err << tool << ": " << e.what() << "\n";
    return kExitUserError;
  }
}

} // namespace locus

#endif // LOCUS_SUPPORT_TOOLMAIN_H
