//===- DumpImpl.h - what locus-dump's files share (private) -----*- C++ -*-===//
//
// The text that the analysis (Dump.cpp) and its renderings (Table.cpp,
// Dot.cpp, Json.cpp, Html.cpp, Explain.cpp) write alike, and the JSON that
// the HTML page embeds.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DUMP_DUMPIMPL_H
#define LOCUS_DUMP_DUMPIMPL_H

#include "locus/Dump/Dump.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace locus::dump::detail {

/// "seed_models.cpp:23" (called from ":24" when a layer recorded it).
std::string shortSource(const Source &source);
/// "444 ns", "30.4 us", "2.1 ms".
std::string nanos(int64_t ns);
/// "4804 B", "12.5 KiB", "3.1 MiB".
std::string bytesText(int64_t bytes);

/// The report as JSON (schema locus-dump/1): what printJson writes and
/// printHtml embeds.
llvm::json::Value toJson(const Report &report);

} // namespace locus::dump::detail

#endif // LOCUS_DUMP_DUMPIMPL_H
