//===- Calibrate.h - measuring this machine for the cost model --*- C++ -*-===//
//
// locus-calibrate's measurements: Locus's own kernels, compiled and run
// here, give the rates of the cost model (docs/cost-model.md). Each rate is
// the difference between two chains of the same op, one longer than the
// other, run in interleaved rounds (medians), so the fixed cost of a run
// (inputs, outputs, the executor) cancels out:
//
//   launch_ns          a chain of tiny elementwise kernels
//   run_ns             a run of the shortest such chain, less its kernel
//   curves.matmul      square matmuls at several sizes (peak_gflops: the
//                      largest)
//   curves.conv        3x3 convolutions at several sizes (conv_gflops)
//   curves.elementwise adds from in-cache to memory-bound sizes
//                      (bandwidth_gbps: the largest)
//   curves.reduction   softmax over rows at several sizes
//   link               round trips between the CPU and the measured GPU
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_COMPILE_CALIBRATE_H
#define LOCUS_COMPILE_CALIBRATE_H

#include "locus/Passes/CostModel.h"

#include <functional>
#include <string>
#include <vector>

namespace locus {

struct CalibrateOptions {
  /// A CUDA device to measure besides the CPU ("cuda:0"), or empty for the
  /// CPU alone.
  std::string device;
  /// Where the devices run in-process ("cuda:0=sim"), as
  /// CompileOptions::deviceMap.
  std::string deviceMap;
  /// Timed rounds per measurement; each round runs both chains once.
  int rounds = 11;
  /// Small problems: a rough profile in a second or two (for tests). The
  /// bandwidth then fits in cache and is too high.
  bool quick = false;
  /// Told of each measurement as it finishes, e.g. "cpu matmul 512x512x512:
  /// 1.27 ms per op, 211 GFLOP/s".
  std::function<void(const std::string &)> progress;
};

struct Calibration {
  /// The defaults with every measured field replaced.
  CostProfile profile;
  /// The profile as a file (docs/cost-model.md), with a description that
  /// names the machine, the date and what was measured.
  std::string json;
  /// One line per measurement, as progress() was told.
  std::vector<std::string> lines;
};

/// Measures this machine. Throws locus::Error when a chain does not compile
/// or run (a device that is not there, a map that does not parse).
Calibration calibrate(const CalibrateOptions &options);

} // namespace locus

#endif // LOCUS_COMPILE_CALIBRATE_H
