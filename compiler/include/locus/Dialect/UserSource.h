//===- UserSource.h - where the user wrote an op ----------------*- C++ -*-===//
//
// The user's source of an op, read once from its MLIR location into a
// struct: the line, the line that called a layer, the ONNX node, the named
// layer. The layer an op belongs to is decided here, and the dump, the
// kernel sources of the plan (locus/abi.h) and the traces all use it.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DIALECT_USERSOURCE_H
#define LOCUS_DIALECT_USERSOURCE_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace locus {

/// Where the user wrote an op.
struct UserSource {
  std::string file; ///< as recorded (absolute for C++ programs)
  int line = 0, column = 0;
  /// For an op a layer recorded: the line that called the layer.
  std::string callerFile;
  int callerLine = 0;
  /// For an imported op: its node in the model file, "node 'fc1' (Gemm)"
  /// (`file` is the model, `line` 0).
  std::string node;
  /// For an op a named C++ layer recorded: the layer's path
  /// ("layer1.0.conv1"; the NameLoc around the call site's callee).
  std::string layerPath;
};

/// The source of an op at `loc`; of the first location of a fused one (a
/// gradient's op, a fused kernel).
UserSource userSourceOf(mlir::Location loc);

/// How an op's layer was found.
enum class LayerKind {
  none,   ///< it belongs to no layer
  onnx,   ///< its ONNX node's scope
  named,  ///< a named C++ layer recorded it
  caller, ///< an unnamed C++ layer recorded it: the line that called it
};

struct Layer {
  LayerKind kind = LayerKind::none;
  /// "layer1.0.conv1", or for `caller` "model.cpp:24"; "" for `none`.
  std::string path;
};

/// The layer of an op written at `source`.
Layer layerOf(const UserSource &source);

/// The dotted module path of an ONNX node's scope: "node '/layer1/layer1.0/
/// conv1/Conv' (Conv)" -> "layer1.0.conv1" (PyTorch's exporter names each
/// level by its full path or its attribute); "" for a node without a scope.
std::string onnxLayer(llvm::StringRef node);

} // namespace locus

#endif // LOCUS_DIALECT_USERSOURCE_H
