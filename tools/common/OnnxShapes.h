// OnnxShapes.h - the --shape NAME=DxDx... and --dynamic NAME=BOUND options
// of locus-import and locus-compile, parsed with messages that say what is
// wrong.
#ifndef LOCUS_TOOLS_ONNXSHAPES_H
#define LOCUS_TOOLS_ONNXSHAPES_H

#include "locus/Import/Onnx.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace locus::tools {

/// Adds each "NAME=DxDx..." of `specs` to `options.shapes`; throws
/// std::invalid_argument naming the bad entry.
inline void parseShapes(const std::vector<std::string> &specs,
                        OnnxImportOptions &options) {
  for (const std::string &spec : specs) {
    size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw std::invalid_argument("--shape takes NAME=DxDx... (e.g. "
                                  "input=1x3x224x224), not '" +
                                  spec + "'");
    Shape shape;
    std::string dims = spec.substr(eq + 1);
    size_t start = 0;
    while (start <= dims.size()) {
      size_t end = dims.find('x', start);
      std::string part = dims.substr(
          start, end == std::string::npos ? std::string::npos : end - start);
      char *stop = nullptr;
      errno = 0;
      long long d = std::strtoll(part.c_str(), &stop, 10);
      if (part.empty() || *stop || errno || d < 0 || d > (1LL << 40))
        throw std::invalid_argument("--shape '" + spec + "': '" +
                                    part.append("' is not a dimension"));
      shape.push_back(d);
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
    options.shapes[spec.substr(0, eq)] = shape;
  }
}

/// Adds each "NAME=BOUND" of `specs` (--dynamic) to
/// `options.dynamicSizes`: the model's symbolic dimension NAME stays dynamic
/// up to BOUND. Throws std::invalid_argument naming the bad entry.
inline void parseDynamicSizes(const std::vector<std::string> &specs,
                              OnnxImportOptions &options) {
  for (const std::string &spec : specs) {
    size_t eq = spec.rfind('=');
    std::string bound = eq == std::string::npos ? "" : spec.substr(eq + 1);
    char *stop = nullptr;
    errno = 0;
    long long b = std::strtoll(bound.c_str(), &stop, 10);
    if (eq == std::string::npos || eq == 0 || bound.empty() || *stop || errno ||
        b < 1 || b > (1LL << 40))
      throw std::invalid_argument("--dynamic takes NAME=BOUND (e.g. "
                                  "batch=64, a bound of at least 1), not '" +
                                  spec + "'");
    options.dynamicSizes[spec.substr(0, eq)] = b;
  }
}

} // namespace locus::tools

#endif
