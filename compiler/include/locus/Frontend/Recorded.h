//===- Recorded.h - a recorded graph for the layers above -*- C++ -*-===//
//
// The frontend's one view of a recorded graph for the layers above it (the
// compile layer): its MLIR, its name and the values its state starts from.
// The rest of the frontend's graph (GraphImpl) is private to the frontend.
// Not installed: it names MLIR types, which the public headers never do.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_FRONTEND_RECORDED_H
#define LOCUS_FRONTEND_RECORDED_H

#include "locus/Frontend/Graph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace locus::detail {

/// A recorded graph, borrowed from its Graph (which must outlive it).
struct RecordedGraph {
  const std::string &name;
  mlir::MLIRContext &context;
  /// The module that holds the locus.graph op.
  mlir::ModuleOp module;
  /// The locus.graph op's body.
  mlir::Block &body;
  /// The values state given them starts from, by state name.
  const std::map<std::string, std::shared_ptr<const std::vector<float>>>
      &stateValues;
};

/// `graph`'s recording.
RecordedGraph recorded(const Graph &graph);

/// A locus::Error at `loc`.
Error userError(const Here &loc, std::string message);

/// The DType of an element type of the dialect (f32, i64, i32 or i1).
DType dtypeOf(mlir::Type element);

} // namespace locus::detail

#endif // LOCUS_FRONTEND_RECORDED_H
