// model_common.h - what the model examples share: the seed examples' data
// generators (seed_common.h, which torch_models.py reproduces), their
// command line and the eval-mode hand-over of trained state.

#ifndef LOCUS_EXAMPLES_MODEL_COMMON_H
#define LOCUS_EXAMPLES_MODEL_COMMON_H

#include "../seeds/seed_common.h"
#include "locus/Frontend/Nn.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace models {

using seed::labels;
using seed::uniform;

/// The value of --NAME=VALUE, or `fallback`.
inline std::string option(int argc, char **argv, const char *name,
                          const std::string &fallback) {
  std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0)
      return argv[i] + prefix.size();
  return fallback;
}

/// --policy (default auto), --devices (comma-separated, default cpu),
/// --fuse=0 and --precision (fp32, tf32, bf16 or f16; default fp32).
inline locus::CompileOptions compileOptions(int argc, char **argv) {
  locus::CompileOptions options;
  options.policy = option(argc, argv, "policy", "auto");
  options.precision = option(argc, argv, "precision", "fp32");
  std::string devices = option(argc, argv, "devices", "cpu");
  for (size_t start = 0;;) {
    size_t end = devices.find(',', start);
    options.devices.push_back(devices.substr(start, end - start));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  options.fuse = option(argc, argv, "fuse", "1") != "0";
  return options;
}

/// --save-graph=FILE: write the recorded training step (forward, backward
/// and optimizer, with source locations and layer paths) as locus IR, what
/// locus-dump reads, and stop there. False (with a message) when it cannot
/// write.
inline bool saveGraph(const std::string &path, const locus::Graph &graph) {
  std::string tmp = path + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  std::string text = graph.str({.locations = true});
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = f && std::fclose(f) == 0 && ok;
  ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    std::remove(tmp.c_str());
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
  }
  return ok;
}

/// With --summary=1, where the training step runs.
inline void printSummary(int argc, char **argv,
                         const locus::CompiledModel &model) {
  if (option(argc, argv, "summary", "0") != "0")
    std::printf("%s", model.placementSummary().c_str());
}

/// "<tag> v v v ...", full float precision.
inline void printValues(const char *tag, const std::vector<float> &values) {
  std::printf("%s", tag);
  for (float v : values)
    std::printf(" %.9g", static_cast<double>(v));
  std::printf("\n");
}

} // namespace models

#endif
