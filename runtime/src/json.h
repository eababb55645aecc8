// json.h - writing JSON strings: the runtime's safetensors headers and
// traces.
#ifndef LOCUS_RUNTIME_JSON_H
#define LOCUS_RUNTIME_JSON_H

#include <string>
#include <string_view>

namespace locus::rt {

/// `s` as a JSON string literal, quotes included: quotes, backslashes and
/// control characters escaped, and every byte that is not part of valid
/// UTF-8 replaced by U+FFFD, so the result is valid JSON whatever `s` is.
std::string jsonQuoted(std::string_view s);

} // namespace locus::rt

#endif
