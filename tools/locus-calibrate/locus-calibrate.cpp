//===- locus-calibrate.cpp - measure this machine for the cost model ------===//
//
//   locus-calibrate [-o profile.json] [--device cuda:N] [--device-map MAP]
//                   [--rounds N] [--quick]
//
// Compiles and runs Locus's own kernels here (chains of tiny adds, large
// adds, matmuls and 3x3 convolutions; round trips to the GPU) and writes the
// cost profile they give (docs/cost-model.md): pass it to locus-compile,
// locus-dump or CompileOptions::profile. Each measurement goes to stderr as
// it finishes; the profile to -o (written atomically) or stdout.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Calibrate.h"
#include "locus/Frontend/Graph.h"
#include "locus/Support/ToolMain.h"
#include "locus/locus_runtime.h"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

namespace {

const char *const usage =
    "usage: locus-calibrate [-o profile.json] [--device cuda:N] "
    "[--device-map MAP] [--rounds N] [--quick]\n";

const char *const help =
    "Measures this machine with Locus's own kernels and writes a cost\n"
    "profile (docs/cost-model.md) for locus-compile --profile, locus-dump\n"
    "--profile and CompileOptions::profile.\n"
    "\n"
    "  -o FILE            write the profile to FILE (atomically); default:\n"
    "                     stdout\n"
    "  --device cuda:N    also measure this GPU and the link to it\n"
    "  --device-map MAP   where devices run in-process, e.g. cuda:0=sim\n"
    "  --rounds N         timed rounds per measurement, medians (default 11)\n"
    "  --quick            small problems, a rough profile in seconds (the\n"
    "                     bandwidth then fits in cache and reads high)\n"
    "  --help             this text\n";

struct Options {
  std::string output;
  locus::CalibrateOptions calibrate;
};

/// Parses the command line into `o`; false (with a message on stderr) for a
/// mistake. `done` is set for --help.
bool parse(int argc, char **argv, Options &o, bool &done) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    size_t equals = arg.find('=');
    bool inlineValue = arg.rfind("--", 0) == 0 && equals != std::string::npos;
    if (inlineValue) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
    }
    auto next = [&]() -> bool {
      if (inlineValue)
        return true;
      if (i + 1 >= argc) {
        std::cerr << "locus-calibrate: " << arg << " needs a value\n" << usage;
        return false;
      }
      value = argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << usage << "\n" << help;
      done = true;
      return true;
    }
    if (arg == "--quick") {
      o.calibrate.quick = true;
    } else if (arg == "-o") {
      if (!next())
        return false;
      o.output = value;
    } else if (arg == "--device") {
      if (!next())
        return false;
      o.calibrate.device = value;
    } else if (arg == "--device-map") {
      if (!next())
        return false;
      o.calibrate.deviceMap = value;
    } else if (arg == "--rounds") {
      if (!next())
        return false;
      int rounds = 0;
      auto [end, error] =
          std::from_chars(value.data(), value.data() + value.size(), rounds);
      if (error != std::errc() || end != value.data() + value.size() ||
          rounds < 1 || rounds > 1000) {
        std::cerr << "locus-calibrate: --rounds takes a whole number from 1 "
                     "to 1000, not '"
                  << value << "'\n";
        return false;
      }
      o.calibrate.rounds = rounds;
    } else {
      std::cerr << "locus-calibrate: unknown argument '" << argv[i] << "'\n"
                << usage;
      return false;
    }
  }
  return true;
}

} // namespace

/// Calibrates and writes the profile; the tool's exit code.
static int calibrateAndWrite(Options &options) {
  options.calibrate.progress = [](const std::string &line) {
    std::cerr << line << "\n";
  };
  locus::Calibration calibration;
  try {
    calibration = locus::calibrate(options.calibrate);
  } catch (const locus::Error &error) {
    std::cerr << "locus-calibrate: " << error.message() << "\n";
    return 1;
  }
  if (options.output.empty()) {
    std::cout << calibration.json;
    return 0;
  }
  locus_status_t status = locus_file_write_atomic(
      options.output.c_str(), calibration.json.data(), calibration.json.size());
  if (status) {
    std::cerr << "locus-calibrate: cannot write '" << options.output
              << "': " << locus_status_message(status) << "\n";
    locus_status_free(status);
    return 1;
  }
  std::cerr << "wrote " << options.output << "\n";
  return 0;
}

int main(int argc, char **argv) {
  Options options;
  bool done = false;
  if (!parse(argc, argv, options, done))
    return 2;
  if (done)
    return 0;
  return locus::runTool("locus-calibrate", std::cerr,
                        [&] { return calibrateAndWrite(options); });
}
