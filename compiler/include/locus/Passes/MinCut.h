//===- MinCut.h - device placement by minimum cut ---------------*- C++ -*-===//
//
// Stone's formulation of two-processor assignment as a minimum s-t cut,
// solved with Boost.Graph's Boykov-Kolmogorov max-flow on integer costs, and
// its extension to k devices by alpha-expansion, one min cut per move.
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

/// Each node runs on one of `devices` devices: 0 is the CPU, 1.. the GPUs.
struct MultiProblem {
  int devices = 2;
  struct Node {
    /// Estimated nanoseconds on each device (size `devices`).
    std::vector<int64_t> cost;
    /// -1 when the solver chooses; else pinned to that device.
    int fixed = -1;
  };
  /// A value produced by one node and read by others. Moving it from device
  /// a to device b costs move[a * devices + b] (0 on the diagonal), paid once
  /// per destination device that has at least one consumer, however many
  /// consumers are there.
  struct Value {
    int producer = 0;
    std::vector<int> consumers;
    std::vector<int64_t> move;
  };
  /// Producer and consumer together on device d cost saving[d] less (not
  /// negative; size `devices`), as Problem::Fusion.
  struct Fusion {
    int producer = 0;
    int consumer = 0;
    std::vector<int64_t> saving;
  };
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::vector<Fusion> fusions;
};

/// The cost of an assignment (`device[i]` for node i), straight from the
/// definitions above: what solvePlacement minimises.
int64_t evaluate(const MultiProblem &problem, const std::vector<int> &device);

struct MultiSolution {
  std::vector<int> device;
  /// evaluate(problem, device).
  int64_t cost = 0;
  /// Passes over all devices (alpha-expansion).
  int sweeps = 0;
  /// Expansion moves that lowered the cost.
  int moves = 0;
};

/// The binary move "keep or switch to `alpha`" from `device` (which keeps
/// the pins) as a two-device Problem: its node i is node i of `problem`, on
/// side 0 when it keeps device[i] and on side 1 when it runs on alpha (nodes
/// already on alpha, and so those pinned to it, are pinned to side 1; other
/// pinned nodes to side 0). Nodes past problem.nodes.size() are auxiliary,
/// pinned to side 1 at no cost. Its evaluate() equals the multi-device one of
/// the assignment each side stands for, except where a copy gets cheaper
/// when its producer moves to alpha, a term that is not submodular: it is
/// rewritten to cost more where the producer stays and all the consumers
/// that read it on one device switch, never at the current assignment.
Problem expansionMove(const MultiProblem &problem,
                      const std::vector<int> &device, int alpha);

/// An assignment of low cost that keeps every pin. One device: everything on
/// 0. Two devices: exact (one solveMinCut). More: alpha-expansion (Boykov,
/// Veksler, Zabih 2001): starting from every free node on device 0, for each
/// device alpha solve expansionMove exactly with solveMinCut, accept it only
/// if evaluate() drops, and sweep until no move helps. Not exact; the terms
/// rewritten in a move only overestimate, so the cost never rises.
MultiSolution solvePlacement(const MultiProblem &problem);

} // namespace locus::placement

#endif // LOCUS_PASSES_MINCUT_H
