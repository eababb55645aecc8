//===- LayerParams.h - what the layers' files share -------------*- C++ -*-===//
//
// Layer names and PyTorch's default parameter initialisation, for Nn.cpp
// and Recurrent.cpp. Private to the frontend.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_FRONTEND_LAYERPARAMS_H
#define LOCUS_FRONTEND_LAYERPARAMS_H

#include "locus/Frontend/Graph.h"

#include <cmath>
#include <optional>
#include <string>

namespace locus::detail {

/// `given`, or a fresh name from `stem` ("linear0").
inline std::string layerName(Graph &graph, const std::string &given,
                             const char *stem) {
  return given.empty() ? graph.freshName(stem) : given;
}

/// A parameter with PyTorch's default for Linear and Conv2d:
/// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), seeded by its name.
inline Tensor defaultParameter(Graph &graph, const std::string &name,
                               const Shape &shape, int64_t fanIn,
                               const std::optional<Device> &device,
                               const Here &loc) {
  double bound = fanIn > 0 ? 1.0 / std::sqrt(static_cast<double>(fanIn)) : 0;
  return graph.parameter(name, shape,
                         Init::uniform(-bound, bound, graph.seedFor(name)),
                         {device}, loc);
}

} // namespace locus::detail

#endif // LOCUS_FRONTEND_LAYERPARAMS_H
