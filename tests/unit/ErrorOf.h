// ErrorOf.h - what a call that should fail with a locus::Error said.

#ifndef LOCUS_TESTS_ERROROF_H
#define LOCUS_TESTS_ERROROF_H

#include "locus/locus.h"

#include <string>

namespace locus::test {

/// The message of the locus::Error `fn` throws (and its line), or "".
template <typename Fn> std::string errorOf(Fn fn, unsigned *line = nullptr) {
  try {
    fn();
  } catch (const Error &e) {
    if (line)
      *line = e.line();
    return e.message();
  }
  return "";
}

} // namespace locus::test

#endif // LOCUS_TESTS_ERROROF_H
