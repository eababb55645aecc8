//===- MinCut.cpp - exact two-device placement by minimum cut -------------===//
//
// Network: source S is side 0 (CPU), sink T is side 1 (CUDA). A free node v
// on side 1 cuts S->v, so S->v carries cost[1]; on side 0 it cuts v->T, so
// v->T carries cost[0]. A pinned node is its terminal.
//
// A value p -> {consumers} costs move[1] when p is on side 0 and some
// consumer on side 1. With one free consumer f that is the edge p->f. With
// several, an auxiliary node x: p->x carries move[1] and x->f is infinite for
// every f, so x must join side 1 as soon as any f does, and then p->x is cut
// iff p is on side 0: one copy, however many consumers. The other direction
// mirrors it (f->y infinite, y->p carries move[0]). Consumers pinned to a
// side settle their direction alone: the copy is needed iff p is on the other
// side, a terminal capacity of p or a constant.
//
// A fusion p -> c saves saving[s] when both are on side s. As terms of the
// network: c gains -saving[s] on side s, and pays it back when p is on the
// other side (p->c carries saving[1], c->p saving[0]). Negative terminal
// capacities vanish when S->v and v->T are reduced to their difference.
//
// k devices: alpha-expansion. A move lets every node keep its device l_v
// (side 0) or switch to alpha (side 1). A value with producer p costs, per
// group G_d of consumers now on device d != alpha, move(l_p->d) when x_p = 0
// and move(alpha->d) when x_p = 1, if some consumer of G_d keeps d. That is
//   [some c in G_d on side 0] * move(l_p->d)
//   + [x_p = 1 and some c in G_d on side 0] * (move(alpha->d) - move(l_p->d)),
// the first a binary value read from an auxiliary node pinned to side 1, the
// second a binary value read from p, submodular only when the difference is
// not negative. When it is negative (a peer copy from alpha is cheaper than
// one from l_p) and p is free, the group is charged instead as
//   [some c in G_d on side 0] * move(alpha->d)
//   + [x_p = 0] * (move(l_p->d) - move(alpha->d)),
// which costs the difference too much when x_p = 0 and all of G_d switch to
// alpha: never the current assignment, so the move still cannot raise the
// cost (Rother et al. 2005). Measured against brute force, this finds the
// optimum more often than dropping the difference, which would overcharge
// the very moves a peer copy makes attractive. Consumers that end on alpha
// cost move(l_p->alpha) once when x_p = 0: a binary move[1]. A fusion saves
// saving[alpha] on side 1, and saving[l_p] on side 0 when l_p = l_c.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/MinCut.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include <algorithm>
#include <cassert>
#include <limits>

using namespace locus::placement;

int64_t locus::placement::evaluate(const Problem &problem,
                                   const std::vector<int> &side) {
  int64_t total = 0;
  for (size_t i = 0; i < problem.nodes.size(); ++i)
    total += problem.nodes[i].cost[side[i]];
  for (const Problem::Value &value : problem.values) {
    bool needed[2] = {false, false};
    for (int c : value.consumers)
      needed[side[c]] = true;
    int here = side[value.producer];
    for (int s = 0; s < 2; ++s)
      if (s != here && needed[s])
        total += value.move[s];
  }
  for (const Problem::Fusion &fusion : problem.fusions) {
    int s = side[fusion.producer];
    if (s == side[fusion.consumer])
      total -= fusion.saving[s];
  }
  return total;
}

namespace {

using Traits =
    boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Network = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS,
    boost::property<boost::vertex_color_t, boost::default_color_type,
                    boost::property<boost::vertex_distance_t, int64_t,
                                    boost::property<boost::vertex_predecessor_t,
                                                    Traits::edge_descriptor>>>,
    boost::property<boost::edge_capacity_t, int64_t,
                    boost::property<boost::edge_residual_capacity_t, int64_t,
                                    boost::property<boost::edge_reverse_t,
                                                    Traits::edge_descriptor>>>>;

/// Builds the network in two passes: first capacities are collected as
/// (from, to, capacity) with "infinite" as -1, then the infinite ones get a
/// capacity above the sum of all finite ones.
class Builder {
public:
  static constexpr int kSource = 0, kSink = 1;

  explicit Builder(const Problem &problem) : problem(problem) {
    vertexOf.assign(problem.nodes.size(), -1);
    for (size_t i = 0; i < problem.nodes.size(); ++i) {
      int fixed = problem.nodes[i].fixed;
      vertexOf[i] = fixed == 0 ? kSource : fixed == 1 ? kSink : newVertex();
    }
    for (size_t i = 0; i < problem.nodes.size(); ++i)
      if (problem.nodes[i].fixed < 0)
        terminal(vertexOf[i], problem.nodes[i].cost[1],
                 problem.nodes[i].cost[0]);
      else
        constant += problem.nodes[i].cost[problem.nodes[i].fixed];
    for (const Problem::Value &value : problem.values)
      addValue(value);
    for (const Problem::Fusion &fusion : problem.fusions)
      addFusion(fusion);
  }

  Solution solve() {
    // S->v and v->T both cut exactly one of them: keep the difference.
    for (size_t v = 2; v < toSink.size(); ++v) {
      int64_t common = std::min(fromSource[v], toSink[v]);
      constant += common;
      fromSource[v] -= common;
      toSink[v] -= common;
    }
    int64_t finite = 0;
    for (size_t v = 2; v < toSink.size(); ++v)
      finite += fromSource[v] + toSink[v];
    for (const Arc &arc : arcs)
      if (arc.capacity > 0)
        finite += arc.capacity;
    const int64_t infinite = finite + 1;

    Network network(toSink.size());
    auto capacity = boost::get(boost::edge_capacity, network);
    auto reverse = boost::get(boost::edge_reverse, network);
    auto add = [&](int from, int to, int64_t cap) {
      auto forward = boost::add_edge(from, to, network).first;
      auto backward = boost::add_edge(to, from, network).first;
      capacity[forward] = cap;
      capacity[backward] = 0;
      reverse[forward] = backward;
      reverse[backward] = forward;
    };
    for (size_t v = 2; v < toSink.size(); ++v) {
      if (fromSource[v] > 0)
        add(kSource, static_cast<int>(v), fromSource[v]);
      if (toSink[v] > 0)
        add(static_cast<int>(v), kSink, toSink[v]);
    }
    for (const Arc &arc : arcs)
      if (arc.capacity != 0)
        add(arc.from, arc.to, arc.capacity < 0 ? infinite : arc.capacity);

    Solution solution;
    solution.vertices = boost::num_vertices(network);
    solution.edges = boost::num_edges(network);
    if (solution.vertices > 2)
      boost::boykov_kolmogorov_max_flow(network, kSource, kSink);
    auto color = boost::get(boost::vertex_color, network);
    auto sourceColor = boost::get(color, kSource);
    solution.side.resize(problem.nodes.size());
    for (size_t i = 0; i < problem.nodes.size(); ++i) {
      int fixed = problem.nodes[i].fixed;
      solution.side[i] =
          fixed >= 0 ? fixed
                     : (boost::get(color, vertexOf[i]) == sourceColor ? 0 : 1);
    }
    solution.cost = evaluate(problem, solution.side);
    return solution;
  }

private:
  struct Arc {
    int from, to;
    int64_t capacity; // -1: infinite
  };

  int newVertex() {
    fromSource.push_back(0);
    toSink.push_back(0);
    return static_cast<int>(toSink.size() - 1);
  }

  /// v pays `onSide1` when on side 1 and `onSide0` when on side 0.
  void terminal(int v, int64_t onSide1, int64_t onSide0) {
    if (v == kSource)
      constant += onSide0;
    else if (v == kSink)
      constant += onSide1;
    else {
      fromSource[v] += onSide1;
      toSink[v] += onSide0;
    }
  }

  /// Cost `cost` iff `from` is on side 0 and `to` on side 1.
  void arc(int from, int to, int64_t cost) {
    if (cost == 0 || from == to)
      return;
    if (from == kSource && to == kSink)
      constant += cost;
    else if (from == kSource)
      terminal(to, cost, 0);
    else if (to == kSink)
      terminal(from, 0, cost);
    else if (from != kSink && to != kSource)
      arcs.push_back({from, to, cost});
  }

  void addValue(const Problem::Value &value) {
    int p = vertexOf[value.producer];
    bool pinnedConsumer[2] = {false, false};
    std::vector<int> free;
    for (int c : value.consumers) {
      int v = vertexOf[c];
      if (v == kSource)
        pinnedConsumer[0] = true;
      else if (v == kSink)
        pinnedConsumer[1] = true;
      else if (std::find(free.begin(), free.end(), v) == free.end())
        free.push_back(v);
    }
    // To side 1: paid iff p on side 0 and a consumer on side 1.
    if (value.move[1] > 0 && p != kSink) {
      if (pinnedConsumer[1])
        arc(p, kSink, value.move[1]);
      else if (free.size() == 1)
        arc(p, free[0], value.move[1]);
      else if (free.size() > 1) {
        int x = newVertex();
        arc(p, x, value.move[1]);
        for (int f : free)
          arcs.push_back({x, f, -1});
      }
    }
    // To side 0: paid iff p on side 1 and a consumer on side 0.
    if (value.move[0] > 0 && p != kSource) {
      if (pinnedConsumer[0])
        arc(kSource, p, value.move[0]);
      else if (free.size() == 1)
        arc(free[0], p, value.move[0]);
      else if (free.size() > 1) {
        int y = newVertex();
        arc(y, p, value.move[0]);
        for (int f : free)
          arcs.push_back({f, y, -1});
      }
    }
  }

  void addFusion(const Problem::Fusion &fusion) {
    assert(fusion.saving[0] >= 0 && fusion.saving[1] >= 0 &&
           "a fusion that costs is not submodular");
    int p = vertexOf[fusion.producer], c = vertexOf[fusion.consumer];
    terminal(c, -fusion.saving[1], -fusion.saving[0]);
    arc(p, c, fusion.saving[1]);
    arc(c, p, fusion.saving[0]);
  }

  const Problem &problem;
  std::vector<int> vertexOf;
  // Index 0 and 1 are the terminals; their entries stay unused.
  std::vector<int64_t> fromSource{0, 0}, toSink{0, 0};
  std::vector<Arc> arcs;
  int64_t constant = 0;
};

} // namespace

Solution locus::placement::solveMinCut(const Problem &problem) {
  return Builder(problem).solve();
}

int64_t locus::placement::evaluate(const MultiProblem &problem,
                                   const std::vector<int> &device) {
  const int k = problem.devices;
  int64_t total = 0;
  for (size_t i = 0; i < problem.nodes.size(); ++i)
    total += problem.nodes[i].cost[device[i]];
  std::vector<char> paid(k, 0);
  for (const MultiProblem::Value &value : problem.values) {
    int from = device[value.producer];
    for (int c : value.consumers) {
      int to = device[c];
      if (to != from && !paid[to]) {
        paid[to] = 1;
        total += value.move[from * k + to];
      }
    }
    for (int c : value.consumers)
      paid[device[c]] = 0;
  }
  for (const MultiProblem::Fusion &fusion : problem.fusions) {
    int d = device[fusion.producer];
    if (d == device[fusion.consumer])
      total -= fusion.saving[d];
  }
  return total;
}

Problem locus::placement::expansionMove(const MultiProblem &problem,
                                        const std::vector<int> &device,
                                        int alpha) {
  const int k = problem.devices;
  const int anchor = static_cast<int>(problem.nodes.size());
  Problem move;
  move.nodes.resize(problem.nodes.size() + 1);
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const MultiProblem::Node &node = problem.nodes[i];
    move.nodes[i].cost[0] = node.cost[device[i]];
    move.nodes[i].cost[1] = node.cost[alpha];
    if (device[i] == alpha)
      move.nodes[i].fixed = 1;
    else if (node.fixed >= 0)
      move.nodes[i].fixed = 0;
  }
  move.nodes[anchor].fixed = 1;
  std::vector<std::vector<int>> group(k);
  for (const MultiProblem::Value &value : problem.values) {
    int p = value.producer, from = device[p];
    for (int c : value.consumers)
      group[device[c]].push_back(c);
    for (int d = 0; d < k; ++d) {
      if (d == alpha || group[d].empty())
        continue;
      int64_t stay = value.move[from * k + d];
      int64_t extra = value.move[alpha * k + d] - stay;
      // Not submodular, see above; a pinned p keeps l_p, and it vanishes.
      if (extra < 0 && move.nodes[p].fixed < 0) {
        move.nodes[p].cost[0] -= extra;
        stay += extra;
      }
      if (stay > 0)
        move.values.push_back({anchor, group[d], {stay, 0}});
      if (extra > 0)
        move.values.push_back({p, group[d], {extra, 0}});
    }
    if (from != alpha)
      move.values.push_back(
          {p, value.consumers, {0, value.move[from * k + alpha]}});
    for (std::vector<int> &g : group)
      g.clear();
  }
  for (const MultiProblem::Fusion &fusion : problem.fusions) {
    int at = device[fusion.producer];
    int64_t kept = at == device[fusion.consumer] ? fusion.saving[at] : 0;
    move.fusions.push_back(
        {fusion.producer, fusion.consumer, {kept, fusion.saving[alpha]}});
  }
  return move;
}

namespace {

/// Every cost has one entry per device (or pair), no copy within a device.
[[maybe_unused]] bool wellFormed(const MultiProblem &problem) {
  const size_t k = problem.devices;
  bool ok = k >= 1;
  for (const MultiProblem::Node &node : problem.nodes)
    ok &= node.cost.size() == k && node.fixed < problem.devices;
  for (const MultiProblem::Value &value : problem.values) {
    ok &= value.move.size() == k * k;
    for (size_t d = 0; ok && d < k; ++d)
      ok &= value.move[d * k + d] == 0;
  }
  for (const MultiProblem::Fusion &fusion : problem.fusions)
    ok &= fusion.saving.size() == k;
  return ok;
}

/// One alpha-expansion move, kept only if the true cost drops.
bool expand(const MultiProblem &problem, int alpha, MultiSolution &solution) {
  Solution cut = solveMinCut(expansionMove(problem, solution.device, alpha));
  std::vector<int> device = solution.device;
  for (size_t i = 0; i < device.size(); ++i)
    if (cut.side[i] == 1)
      device[i] = alpha;
  int64_t cost = evaluate(problem, device);
  if (cost >= solution.cost)
    return false;
  solution.device = std::move(device);
  solution.cost = cost;
  ++solution.moves;
  return true;
}

} // namespace

MultiSolution locus::placement::solvePlacement(const MultiProblem &problem) {
  assert(wellFormed(problem) && "costs must match the device count");
  MultiSolution solution;
  for (const MultiProblem::Node &node : problem.nodes)
    solution.device.push_back(std::max(node.fixed, 0));
  solution.cost = evaluate(problem, solution.device);
  bool improved = problem.devices > 1;
  while (improved) {
    improved = false;
    ++solution.sweeps;
    // Two devices: from the start (free nodes on 0), the move to device 1 is
    // the whole problem with no term dropped, so its cut is the optimum.
    if (problem.devices == 2) {
      expand(problem, 1, solution);
      break;
    }
    for (int alpha = 0; alpha < problem.devices; ++alpha)
      improved |= expand(problem, alpha, solution);
  }
  return solution;
}
