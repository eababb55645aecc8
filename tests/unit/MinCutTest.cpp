// MinCutTest.cpp - the min-cut placement is the exact minimum of the cost
// model: compared with brute force over every assignment of random graphs.

#include "locus/Passes/MinCut.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

using namespace locus::placement;

namespace {

/// The least cost over every assignment that keeps the pins.
int64_t bruteForce(const Problem &problem) {
  size_t n = problem.nodes.size();
  int64_t best = std::numeric_limits<int64_t>::max();
  std::vector<int> side(n);
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    bool keepsPins = true;
    for (size_t i = 0; i < n; ++i) {
      side[i] = (mask >> i) & 1;
      int fixed = problem.nodes[i].fixed;
      keepsPins &= fixed < 0 || fixed == side[i];
    }
    if (keepsPins)
      best = std::min(best, evaluate(problem, side));
  }
  return best;
}

/// A random dataflow graph: node i reads values of earlier nodes.
Problem randomProblem(std::mt19937_64 &rng, int n) {
  std::uniform_int_distribution<int64_t> cost(0, 5000), move(0, 3000);
  std::uniform_int_distribution<int> pin(0, 9), fanout(0, 4);
  Problem problem;
  problem.nodes.resize(n);
  for (auto &node : problem.nodes) {
    node.cost[0] = cost(rng);
    node.cost[1] = cost(rng);
    int p = pin(rng);
    node.fixed = p == 0 ? 0 : p == 1 ? 1 : -1; // a fifth of the nodes pinned
  }
  for (int producer = 0; producer + 1 < n; ++producer) {
    int k = fanout(rng);
    if (k == 0)
      continue;
    Problem::Value value;
    value.producer = producer;
    std::uniform_int_distribution<int> later(producer + 1, n - 1);
    for (int j = 0; j < k; ++j)
      value.consumers.push_back(later(rng));
    value.move[0] = move(rng);
    value.move[1] = move(rng);
    problem.values.push_back(value);
  }
  // A fused consumer saves at most its own cost on that side.
  std::uniform_int_distribution<int> fuses(0, 2);
  for (int consumer = 1; consumer < n; ++consumer) {
    if (fuses(rng) != 0)
      continue;
    std::uniform_int_distribution<int> earlier(0, consumer - 1);
    Problem::Fusion fusion;
    fusion.producer = earlier(rng);
    fusion.consumer = consumer;
    for (int s = 0; s < 2; ++s)
      fusion.saving[s] = std::uniform_int_distribution<int64_t>(
          0, problem.nodes[consumer].cost[s])(rng);
    problem.fusions.push_back(fusion);
  }
  return problem;
}

TEST(MinCut, MatchesBruteForceOnRandomGraphs) {
  std::mt19937_64 rng(20261121);
  int checked = 0;
  for (int n = 1; n <= 16; ++n) {
    int trials = n <= 12 ? 60 : 15;
    for (int t = 0; t < trials; ++t, ++checked) {
      Problem problem = randomProblem(rng, n);
      Solution solution = solveMinCut(problem);
      ASSERT_EQ(solution.side.size(), problem.nodes.size());
      for (int i = 0; i < n; ++i)
        if (problem.nodes[i].fixed >= 0)
          ASSERT_EQ(solution.side[i], problem.nodes[i].fixed) << "pin broken";
      ASSERT_EQ(solution.cost, evaluate(problem, solution.side));
      ASSERT_EQ(solution.cost, bruteForce(problem))
          << "n = " << n << ", trial " << t;
    }
  }
  EXPECT_EQ(checked, 12 * 60 + 4 * 15);
}

TEST(MinCut, ACopyIsPaidOncePerDestination) {
  // A CPU-pinned input read by three GPU-cheap ops: moving it once (cost 10)
  // and running all three on the GPU (3 x 1) beats the CPU (3 x 100), even
  // though three separate copies (30) would also have paid off -- but the
  // cost must be 10 + 3, not 30 + 3.
  Problem problem;
  problem.nodes = {{{0, 0}, 0}, {{100, 1}, -1}, {{100, 1}, -1}, {{100, 1}, -1}};
  problem.values = {{0, {1, 2, 3}, {0, 10}}};
  Solution solution = solveMinCut(problem);
  EXPECT_EQ(solution.side, (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(solution.cost, 13);
}

TEST(MinCut, ExpensiveMovesKeepWorkWhereItsDataIs) {
  // The GPU is 10x faster, but moving the data costs more than it saves.
  Problem problem;
  problem.nodes = {{{0, 0}, 0}, {{50, 5}, -1}, {{0, 0}, 0}};
  problem.values = {{0, {1}, {0, 100}}, {1, {2}, {100, 0}}};
  Solution solution = solveMinCut(problem);
  EXPECT_EQ(solution.side, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(solution.cost, 50);
  // Cheap moves: the GPU wins.
  problem.values = {{0, {1}, {0, 10}}, {1, {2}, {10, 0}}};
  solution = solveMinCut(problem);
  EXPECT_EQ(solution.side, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(solution.cost, 25);
}

TEST(MinCut, FusionKeepsAChainOnOneSide) {
  // A GPU-pinned product feeds three small elementwise ops whose result the
  // CPU reads. Alone, each costs 40 on the GPU (its launch) and 1 on the
  // CPU, so moving them after the product looks cheaper (3 + one copy of
  // 30). Fused into the product's kernel they cost nothing extra on the
  // GPU: the chain stays, and only the final copy remains.
  Problem problem;
  problem.nodes = {
      {{0, 0}, 1}, {{1, 40}, -1}, {{1, 40}, -1}, {{1, 40}, -1}, {{0, 0}, 0}};
  problem.values = {{0, {1}, {30, 30}},
                    {1, {2}, {30, 30}},
                    {2, {3}, {30, 30}},
                    {3, {4}, {30, 30}}};
  Solution solution = solveMinCut(problem);
  EXPECT_EQ(solution.side, (std::vector<int>{1, 0, 0, 0, 0}));
  EXPECT_EQ(solution.cost, 30 + 3);
  problem.fusions = {{0, 1, {0, 40}}, {1, 2, {1, 40}}, {2, 3, {1, 40}}};
  solution = solveMinCut(problem);
  EXPECT_EQ(solution.side, (std::vector<int>{1, 1, 1, 1, 0}));
  EXPECT_EQ(solution.cost, 30);
}

TEST(MinCut, AllPinnedOrEmpty) {
  Problem empty;
  EXPECT_EQ(solveMinCut(empty).cost, 0);
  Problem pinned;
  pinned.nodes = {{{3, 4}, 1}, {{5, 6}, 0}};
  pinned.values = {{0, {1}, {7, 8}}};
  Solution solution = solveMinCut(pinned);
  EXPECT_EQ(solution.side, (std::vector<int>{1, 0}));
  EXPECT_EQ(solution.cost, 4 + 5 + 7);
}

} // namespace
