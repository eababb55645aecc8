//===- locus-cache.cpp - the compile cache: where, what, and clearing -----===//
//
//   locus-cache [--list] [--clear]
//
// The compile cache locus::compile(), Python's locus.compile and
// locus-compile share (docs/compile-cache.md). Alone, says where it is, how
// many entries it holds and its bound; --list gives each entry; --clear
// removes them all. LOCUS_CACHE, LOCUS_CACHE_DIR, XDG_CACHE_HOME and
// LOCUS_CACHE_MAX_BYTES choose it as they do for compiles.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Cache.h"
#include "locus/Support/ToolMain.h"

#include <ctime>
#include <iostream>
#include <string>
#include <string_view>

namespace {

const char *const usage = "usage: locus-cache [--list] [--clear]\n";

const char *const help =
    "The compile cache that locus::compile(), Python's locus.compile and\n"
    "locus-compile share: a compiled graph is kept there and taken back\n"
    "when the same graph is compiled again with the same options.\n"
    "\n"
    "  (nothing)  where the cache is, its entries, bytes and bound\n"
    "  --list     each entry: its key, graph, CPU, size and last use\n"
    "  --clear    remove every entry\n"
    "  --help     this text\n"
    "\n"
    "Environment: LOCUS_CACHE=0 turns the cache off; LOCUS_CACHE_DIR (else\n"
    "$XDG_CACHE_HOME/locus, else ~/.cache/locus) is its folder;\n"
    "LOCUS_CACHE_MAX_BYTES bounds it (default 2 GiB; the least recently\n"
    "used entries go first).\n";

std::string when(int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  char text[32] = "?";
  if (gmtime_r(&t, &tm))
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

/// Where the cache is, or why it is off; false when it is off.
bool describe(const locus::cache::Settings &s) {
  if (s.enabled)
    return true;
  if (!s.problem.empty())
    std::cerr << "locus-cache: the compile cache is off: " << s.problem << "\n";
  else if (s.dir.empty())
    std::cerr << "locus-cache: the compile cache is off (LOCUS_CACHE, or no "
                 "LOCUS_CACHE_DIR, XDG_CACHE_HOME or HOME)\n";
  return false;
}

int summary(const locus::cache::Settings &s) {
  uint64_t bytes = 0;
  std::vector<locus::cache::Listed> entries = locus::cache::list(s);
  for (const locus::cache::Listed &e : entries)
    bytes += e.bytes;
  std::cout << "compile cache: " << s.dir << "\n"
            << "entries: " << entries.size() << ", " << bytes << " B of "
            << s.maxBytes << " B\n";
  return 0;
}

int listEntries(const locus::cache::Settings &s) {
  for (const locus::cache::Listed &e : locus::cache::list(s))
    std::cout << e.key.substr(0, 16) << "  " << when(e.lastUsed) << " UTC  "
              << e.bytes << " B  " << e.cpu << "  " << e.graph << "\n";
  return 0;
}

int clearEntries(const locus::cache::Settings &s) {
  std::string error;
  int64_t removed = locus::cache::clear(s, error);
  if (removed < 0) {
    std::cerr << "locus-cache: " << error << "\n";
    return locus::kExitUserError;
  }
  std::cout << "removed " << removed << " entries from " << s.dir << "\n";
  return 0;
}

int run(int argc, char **argv) {
  std::string_view action;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage << "\n" << help;
      return 0;
    }
    if ((arg != "--list" && arg != "--clear") || !action.empty()) {
      std::cerr << "locus-cache: unexpected argument '" << arg << "'\n"
                << usage;
      return locus::kExitUsage;
    }
    action = arg;
  }
  locus::cache::Settings settings = locus::cache::Settings::resolve();
  if (!describe(settings))
    return locus::kExitUserError;
  if (action == "--list")
    return listEntries(settings);
  if (action == "--clear")
    return clearEntries(settings);
  return summary(settings);
}

} // namespace

int main(int argc, char **argv) {
  return locus::runTool("locus-cache", std::cerr,
                        [&] { return run(argc, argv); });
}
