// bench_inputs.h - the random inputs the benchmarks feed (fixed seeds, so
// every run times the same numbers).

#ifndef LOCUS_BENCH_INPUTS_H
#define LOCUS_BENCH_INPUTS_H

#include <cstdint>
#include <random>
#include <vector>

namespace bench {

/// `n` values of N(0, 1).
inline std::vector<float> randomValues(int64_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(rng);
  return v;
}

/// `n` class labels in [0, classes).
inline std::vector<int64_t> randomLabels(int64_t n, int64_t classes) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::vector<int64_t> v(n);
  for (int64_t &x : v)
    x = pick(rng);
  return v;
}

} // namespace bench

#endif
