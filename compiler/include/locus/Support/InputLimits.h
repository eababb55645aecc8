//===- InputLimits.h - limits checked before parsing a file -----*- C++ -*-===//
//
// MLIR's parser recurses once per nested region, list or type: a file
// nested 100,000 deep (by accident or on purpose) overflows the stack
// before any diagnostic. And MLIR 19 parses a dense array of i1
// (`array<i1: 1, 0>`) into storage its printer then reads past, which
// crashes any tool that prints the op or a diagnostic about it (upstream:
// the parser asserts on it in debug builds). The tools check the text for
// both first.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_SUPPORT_INPUTLIMITS_H
#define LOCUS_SUPPORT_INPUTLIMITS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace locus {

/// Deeper nesting than any graph needs (a graph's ops nest 3 deep, a
/// constant's dense literal a level per dimension), and far less than what
/// overflows the parser's stack.
constexpr unsigned kMaxTextNesting = 1000;

/// Whether `text` at `i` starts the keyword `array<i1` followed by `:` or
/// `>` (spaces allowed between the pieces).
inline bool startsBoolArray(std::string_view text, size_t i) {
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$';
  };
  if (text.substr(i, 5) != "array" || (i > 0 && word(text[i - 1])))
    return false;
  size_t j = i + 5;
  auto skip = [&] {
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t' ||
                               text[j] == '\n' || text[j] == '\r'))
      ++j;
  };
  skip();
  if (j >= text.size() || text[j] != '<')
    return false;
  ++j;
  skip();
  if (text.substr(j, 2) != "i1")
    return false;
  j += 2;
  skip();
  return j < text.size() && (text[j] == ':' || text[j] == '>');
}

/// Checks that `text` (MLIR) nests `(`, `[`, `{` and `<` at most `limit`
/// deep and holds no dense array of i1, outside string literals and
/// comments. Returns "" or what is wrong, with its line.
inline std::string checkText(std::string_view text,
                             unsigned limit = kMaxTextNesting) {
  unsigned depth = 0;
  size_t line = 1;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n')
      ++line;
    if (inString) {
      if (c == '\\')
        ++i; // an escaped character (a line break is not escaped in MLIR)
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == 'a' && startsBoolArray(text, i))
      return "the input has a dense array of i1 (array<i1: ...>, at line " +
             std::to_string(line) +
             "), which MLIR 19 cannot print; no graph needs one";
    switch (c) {
    case '"':
      inString = true;
      break;
    case '/':
      if (i + 1 < text.size() && text[i + 1] == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > limit)
        return "the input nests deeper than " + std::to_string(limit) +
               " levels (at line " + std::to_string(line) +
               "); no graph needs that";
      break;
    case ')':
    case ']':
    case '}':
      depth -= depth > 0;
      break;
    case '>':
      // Not the arrow of a function type, nor a comparison (>=).
      if ((i == 0 || text[i - 1] != '-') &&
          (i + 1 >= text.size() || text[i + 1] != '='))
        depth -= depth > 0;
      break;
    default:
      break;
    }
  }
  return "";
}

/// The highest rank a tensor may have (PyTorch's kernels stop at 25; no
/// model needs more).
constexpr size_t kMaxRank = 64;
/// The most bytes a tensor may have: 2^48 (256 TiB, beyond any device), so
/// that sums of tensor sizes and offsets in the plan cannot overflow int64.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 48;

/// Checks a static shape of elements of `elementBytes` each against
/// kMaxRank and kMaxTensorBytes. Returns "" or what is wrong.
template <typename Dims>
std::string checkTensorSize(const Dims &shape, int64_t elementBytes) {
  if (shape.size() > kMaxRank)
    return "has rank " + std::to_string(shape.size()) +
           "; Locus supports tensors of rank up to " + std::to_string(kMaxRank);
  int64_t bytes = elementBytes;
  for (int64_t dim : shape)
    if (dim > 0 &&
        (__builtin_mul_overflow(bytes, dim, &bytes) || bytes > kMaxTensorBytes))
      return "needs more than 2^48 bytes (256 TiB); no device holds it";
  return "";
}

} // namespace locus

#endif // LOCUS_SUPPORT_INPUTLIMITS_H
