//===- MinCut.h - exact two-device placement by minimum cut -----*- C++ -*-===//
//
// Stone's formulation of two-processor assignment as a minimum s-t cut,
// solved with Boost.Graph's Boykov-Kolmogorov max-flow on integer costs.
// No MLIR here: the placement pass builds a Problem from IR, and the tests
// build random ones and compare against brute force.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_MINCUT_H
#define LOCUS_PASSES_MINCUT_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace locus::placement {

/// Each node runs on side 0 (the CPU) or side 1 (the CUDA device).
struct Problem {
  struct Node {
    /// Estimated nanoseconds on side 0 and on side 1.
    int64_t cost[2] = {0, 0};
    /// -1 when the solver chooses; 0 or 1 when pinned to that side.
    int fixed = -1;
  };
  /// A value produced by one node and read by others. Moving it to side s
  /// costs move[s], paid once when its producer is on the other side and at
  /// least one consumer is on side s, however many consumers are there.
  struct Value {
    int producer = 0;
    std::vector<int> consumers;
    int64_t move[2] = {0, 0};
  };
  /// A consumer that shares its producer's kernel launch when both run on
  /// one side (it is fused into the producer's kernel): together on side s
  /// they cost saving[s] less. Savings are not negative, and a consumer's
  /// saving on a side is at most its cost there.
  struct Fusion {
    int producer = 0;
    int consumer = 0;
    int64_t saving[2] = {0, 0};
  };
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::vector<Fusion> fusions;
};

/// The cost of an assignment (`side[i]` for node i), straight from the
/// definitions above: what the solver minimises.
int64_t evaluate(const Problem &problem, const std::vector<int> &side);

struct Solution {
  std::vector<int> side;
  /// evaluate(problem, side).
  int64_t cost = 0;
  /// Vertices and edges of the flow network (terminals and reverse edges
  /// included), for the record.
  std::size_t vertices = 0, edges = 0;
};

/// An assignment of least cost that keeps every pin. Exact: the cut of the
/// network equals the cost, up to a constant, for every assignment.
Solution solveMinCut(const Problem &problem);

} // namespace locus::placement

#endif // LOCUS_PASSES_MINCUT_H
