//===- RandomValues.h - random test inputs ----------------------*- C++ -*-===//
//
// Uniform float32 values from a fixed seed: the inputs the compile tests
// check kernels on (random, never zeros), shared so each file does not keep
// its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_TESTS_UNIT_RANDOMVALUES_H
#define LOCUS_TESTS_UNIT_RANDOMVALUES_H

#include <cstddef>
#include <random>
#include <vector>

/// `n` values uniform in [low, high) from `seed`.
inline std::vector<float> randomValues(size_t n, unsigned seed, float low = -1,
                                       float high = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

#endif // LOCUS_TESTS_UNIT_RANDOMVALUES_H
