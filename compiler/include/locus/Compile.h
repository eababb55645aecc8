//===- Compile.h - compiling a recorded graph and running it ----*- C++ -*-===//
//
//   locus::CompiledModel model = locus::compile(g);
//   auto out = model.run({{"x", locus::HostTensor::f32({100, 10}, xs)}});
//   float loss = out.at("loss").scalar();
//
// The host path: place, insert transfers, lower to linalg, bufferize, lower
// to LLVM, JIT with mlir::ExecutionEngine. For now a compiled model runs on
// the CPU only; the plan and the runtime devices come with the artifact.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_COMPILE_H
#define LOCUS_COMPILE_H

#include "locus/Frontend/Graph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace locus {

/// A tensor in host memory: f32 data or i64 labels, row-major.
struct HostTensor {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<float> f32;
  std::vector<int64_t> i64;

  static HostTensor fromF32(Shape shape, std::vector<float> values);
  static HostTensor fromI64(Shape shape, std::vector<int64_t> values);
  int64_t numel() const;
  /// The value of a one-element f32 tensor.
  float scalar() const;
};

/// A mistake found when running: a missing or unknown input, a wrong shape
/// or dtype. Nothing was computed.
class RunError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct CompileOptions {
  /// strict, prefer-gpu, auto or cpu (see docs/placement.md).
  std::string policy = "auto";
};

class CompiledModel {
public:
  /// One step: every input by name; returns every output by name. Safe to
  /// call from several threads at once.
  std::map<std::string, HostTensor>
  run(const std::map<std::string, HostTensor> &inputs) const;

  const std::vector<std::string> &inputNames() const;
  const std::vector<std::string> &outputNames() const;
  const std::vector<std::string> &stateNames() const;
  /// The current value of a parameter or buffer.
  const HostTensor &state(const std::string &name) const;
  /// What runs where and why, with copies and warnings (locus-dump's
  /// summary of the placed graph).
  const std::string &placementSummary() const;

  struct Impl;

private:
  friend CompiledModel compile(const Graph &, const CompileOptions &, Here);
  std::shared_ptr<Impl> impl_;
};

/// Compiles `graph` for this machine's CPU. Placement errors (strict mode)
/// and anything the compiler cannot do throw locus::Error at the user's
/// line; the graph itself is never changed.
CompiledModel compile(const Graph &graph, const CompileOptions &options = {},
                      Here loc = Here::current());

} // namespace locus

#endif // LOCUS_COMPILE_H
