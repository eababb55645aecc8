// json.cpp - JSON string literals.

#include "json.h"

#include <cstdint>

namespace locus::rt {

namespace {

/// The length of the valid UTF-8 sequence at s[i] (1 to 4), or 0.
size_t utf8Length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = c < 0x80           ? 1
             : (c >> 5) == 0x6  ? 2
             : (c >> 4) == 0xE  ? 3
             : (c >> 3) == 0x1E ? 4
                                : 0;
  if (n == 0 || i + n > s.size())
    return 0;
  uint32_t cp = n == 1   ? c
                : n == 2 ? (c & 0x1Fu)
                : n == 3 ? (c & 0xFu)
                         : (c & 0x7u);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  static const uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0; // overlong, beyond Unicode, or a surrogate
  return n;
}

} // namespace

std::string jsonQuoted(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = utf8Length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD"; // U+FFFD
      ++i;
    } else if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20 || c == 0x7F) {
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
    }
  }
  return out + "\"";
}

} // namespace locus::rt
