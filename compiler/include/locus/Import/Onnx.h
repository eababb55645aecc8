//===- Onnx.h - ONNX models as Locus graphs ---------------------*- C++ -*-===//
//
// importOnnx() reads an ONNX model (parsed with ONNX's own protobuf classes
// from libonnx-dev) and records it into a locus::Graph through the same
// frontend calls C++ code makes, so the result is a graph like any other:
// it compiles for inference, or takes a loss and an optimizer for
// fine-tuning. Every op it records is located at its ONNX node (the model
// file, the node's name and op_type), so errors, locus-dump and the
// profiler point at the model.
//
// Initializers of f32 become parameters (named as in the model; BatchNorm
// statistics become buffers) that start from the model's values; integer
// initializers and constants stay constants. Shape computations
// (Shape/Gather/Concat/Reshape chains, ConstantOfShape, Range, ...) whose
// inputs are known are folded while importing, as input shapes are static.
//
// No MLIR here: the user API includes it.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_IMPORT_ONNX_H
#define LOCUS_IMPORT_ONNX_H

#include "locus/Frontend/Graph.h"

#include <map>
#include <string>
#include <vector>

namespace locus {

struct OnnxImportOptions {
  /// Shapes of inputs whose ONNX shape has symbolic dimensions ("batch"),
  /// by input name: the whole shape, e.g. {"input", {1, 3, 224, 224}}.
  std::map<std::string, Shape> shapes;
  /// Symbolic dimensions kept dynamic, by their ONNX name (dim_param), with
  /// their bound, e.g. {"batch", 64}: every input dimension of that name
  /// becomes the dynamic size `locus::dyn("batch", 64)`. An input in
  /// `shapes` takes its given shape instead.
  std::map<std::string, int64_t> dynamicSizes;
  /// The graph's name; the model's graph name when empty.
  std::string graphName;
};

/// The opsets of the default ONNX domain the importer reads.
constexpr int kOnnxMinOpset = 7;
constexpr int kOnnxMaxOpset = 17;

/// Imports the ONNX model at `path`. Throws locus::Error naming the file
/// (and the node, for a node's fault): an unreadable or invalid model, an
/// opset out of range, symbolic input dimensions without a shape in
/// `options` (naming the input and its dimensions), or unsupported ops (one
/// error listing every unsupported op_type with its count and first nodes).
Graph importOnnx(const std::string &path,
                 const OnnxImportOptions &options = {});

/// The op_types importOnnx() supports, sorted.
std::vector<std::string> onnxSupportedOps();

} // namespace locus

#endif // LOCUS_IMPORT_ONNX_H
