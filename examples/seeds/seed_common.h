// seed_common.h - what the seed examples share: deterministic data (the
// runtime's counter-based generator, which tests/seeds/torch_reference.py
// reproduces to train PyTorch from the same numbers), the command line, and
// the report of a compile error.

#ifndef LOCUS_EXAMPLES_SEED_COMMON_H
#define LOCUS_EXAMPLES_SEED_COMMON_H

#include "locus/Compile.h"
#include "locus/locus.h"
#include "locus/locus_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

namespace seed {

/// `n` values of U[low, high) from the runtime's generator with `seed`.
inline std::vector<float> uniform(size_t n, double low, double high,
                                  uint64_t seed) {
  std::vector<float> v(n);
  locus_status_t s =
      locus_init_fill(LOCUS_INIT_UNIFORM, low, high, seed, n, v.data());
  if (s) {
    std::fprintf(stderr, "locus_init_fill: %s\n", locus_status_message(s));
    locus_status_free(s);
    std::exit(2);
  }
  return v;
}

/// `n` class labels in [0, classes): floor of U[0, classes).
inline std::vector<int64_t> labels(size_t n, int classes, uint64_t seed) {
  std::vector<int64_t> out;
  for (float v : uniform(n, 0.0, classes, seed))
    out.push_back(std::min<int64_t>(static_cast<int64_t>(v), classes - 1));
  return out;
}

/// DataLoader(shuffle=True)'s order for one epoch, reproducibly: the
/// sample indices sorted by a uniform key each.
inline std::vector<size_t> shuffled(size_t n, uint64_t epochSeed) {
  std::vector<float> key = uniform(n, 0.0, 1.0, epochSeed);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return key[a] < key[b]; });
  return order;
}

/// --policy=NAME (default: strict, PyTorch's rules).
inline std::string policy(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--policy=", 9) == 0)
      return argv[i] + 9;
  return "strict";
}

inline bool flag(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return true;
  return false;
}

/// Compiles for the CPU and cuda:0 (a GPU where there is one, else the sim
/// device) and prints where everything runs; a compile error is printed as
/// the user sees it, and the program exits with 1.
inline locus::CompiledModel compile(const locus::Graph &g,
                                    const std::string &policy) {
  try {
    locus::CompiledModel model =
        locus::compile(g, {.policy = policy, .devices = {"cpu", "cuda:0"}});
    std::cout << model.placementSummary();
    std::cout << model.runtimeReport() << "\n";
    return model;
  } catch (const locus::Error &e) {
    std::cout << "compile error under policy=" << policy << ":\n"
              << e.what() << "\n";
    std::exit(1);
  }
}

inline locus::HostTensor f32(locus::Shape shape, std::vector<float> v) {
  return locus::HostTensor::fromF32(std::move(shape), std::move(v));
}

/// Rows [first, first + rows) of a row-major tensor of `width` per row.
template <typename T>
std::vector<T> rowsOf(const std::vector<T> &all,
                      const std::vector<size_t> &order, size_t first,
                      size_t rows, size_t width) {
  std::vector<T> out;
  out.reserve(rows * width);
  for (size_t r = first; r < first + rows; ++r)
    out.insert(out.end(), all.begin() + order[r] * width,
               all.begin() + (order[r] + 1) * width);
  return out;
}

/// Seed 000's loop: 10 epochs of the full 100x10 batch, printing each loss
/// (the data is the same in every example and in the PyTorch reference).
inline void trainLinear(const locus::CompiledModel &model, int epochs = 10) {
  std::vector<float> xs = uniform(100 * 10, -2.0, 2.0, 1001),
                     ys = uniform(100 * 2, -2.0, 2.0, 1002);
  float loss = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    locus::RunStats stats;
    auto out = model.run({{"input_data", f32({100, 10}, xs)},
                          {"target_data", f32({100, 2}, ys)}},
                         &stats);
    loss = out.at("loss").scalar();
    std::printf("Epoch %d, loss: %.4f (%llu kernel launches, %llu copies)\n",
                epoch + 1, loss,
                static_cast<unsigned long long>(stats.launches),
                static_cast<unsigned long long>(stats.copies));
  }
  std::printf("final loss %.9g\n", loss);
}

} // namespace seed

#endif
