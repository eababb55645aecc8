//===- CostModel.h - estimated time of ops and copies -----------*- C++ -*-===//
//
// Per op and device: max(flops / peak, bytes / bandwidth) + launch overhead.
// Per copy: latency + bytes / link bandwidth. Defaults describe a 2-core x86
// CPU and an H100-class GPU; a JSON profile (docs/cost-model.md) overrides
// them.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_COSTMODEL_H
#define LOCUS_PASSES_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace locus {

/// The classes of ops whose rate a profile may give per size.
enum class OpClass { other, matmul, conv, elementwise, reduction };
constexpr int kOpClasses = 5;

/// A rate measured at several sizes of one op: (work, rate) points in
/// increasing work, where work is the op's flops and rate flop/s (matmul,
/// conv), or its bytes and bytes/s (elementwise, reduction). Between the
/// points the rate is interpolated on log-log scales; outside them it is
/// the nearest point's.
using RateCurve = std::vector<std::pair<double, double>>;

/// The rate of `curve` at `work` (a non-empty curve).
double rateAt(const RateCurve &curve, double work);

/// "matmul", "conv", "elementwise", "reduction" (and "other").
llvm::StringRef opClassName(OpClass opClass);

struct DeviceProfile {
  double peakFlops; ///< flop/s
  double bandwidth; ///< bytes/s of its memory
  double launchNs;  ///< fixed cost of running one kernel
  /// The same inside a step replayed as a CUDA graph (a GPU's steps replay
  /// so when every kernel of the step runs on it); 0: launchNs.
  double graphLaunchNs = 0;
  /// flop/s of convolutions (forward and gradients), whose kernels reach
  /// another rate than a matmul; 0: peakFlops.
  double convFlops = 0;
  /// flop/s of matrix products of bf16 or f16 operands (tensor cores on a
  /// GPU, oneDNN's bf16 kernels on a CPU that has them); 0: the f32 rate.
  double halfFlops = 0;
  /// flop/s of convolutions that autocast gives bf16 or f16 operands (cuDNN
  /// on 16-bit tensor cores on a GPU); 0: convolutions' f32 rate (on the
  /// CPU they compute in f32).
  double halfConvFlops = 0;
  /// Per op class, the rate at several sizes (locus-calibrate measures
  /// them); an op of a class with a curve takes work / rate(work) plus the
  /// launch instead of the roofline.
  std::array<RateCurve, kOpClasses> curves{};
};

struct CostProfile {
  DeviceProfile cpu{100e9, 20e9, 200};
  /// A kernel launched alone costs an H100's host about 4 us; replayed in
  /// a CUDA graph, 1.1-1.2 us (a chain of 64 small kernels, 2026-11-27/28).
  /// 16-bit products run on tensor cores: 400 TFLOP/s, about 40% of an
  /// H100's dense bf16 peak (990), what large cuBLAS products reach; 16-bit
  /// convolutions through cuDNN, 300 TFLOP/s (not measured yet).
  DeviceProfile cuda{50e12, 2e12, 4000, 1200, 0, 400e12, 300e12};
  double linkLatencyNs = 10000; ///< one host<->device copy
  double linkBandwidth = 12e9;  ///< bytes/s (pageable PCIe)
  /// One copy between two CUDA devices over a peer link (NVLink or PCIe
  /// peer-to-peer); 0 when there is none: the copy goes through the host,
  /// two link copies.
  double peerLatencyNs = 0;
  double peerBandwidth = 0; ///< bytes/s
  /// The fixed cost of one run besides its kernels and copies: the
  /// executor, taking the inputs and handing back the outputs.
  double runNs = 10000;
  /// State and constants move once, at load: their copies count 1/N per step.
  double loadAmortizationSteps = 1000;
  /// Where the numbers come from, for the dump and the summary: "built-in
  /// defaults", or the profile file and its "description" (what
  /// locus-calibrate measured, on which machine, when).
  std::string origin = "built-in defaults";

  /// Reads a JSON profile over the defaults. Fields left out keep their
  /// default; an unknown field, a wrong type or a value that is not positive
  /// is an error, described in `error`.
  static bool parse(llvm::StringRef json, CostProfile &profile,
                    std::string &error);
  /// parse() of a file's contents.
  static bool load(llvm::StringRef path, CostProfile &profile,
                   std::string &error);
};

/// What an op computes and moves.
struct OpWork {
  double flops = 0;
  double bytes = 0;
  /// False for ops that are no kernel: sources, outputs, views (reshape),
  /// and moves (their cost is the copy's).
  bool kernel = false;
  /// Its class: a convolution's flops run at DeviceProfile::convFlops, and
  /// a class with a curve in the profile runs at the curve's rate.
  OpClass opClass = OpClass::other;
  /// A matrix product of bf16 or f16 operands: DeviceProfile::halfFlops.
  bool half = false;
  /// A convolution autocast gives bf16 or f16 operands (or one of 16-bit
  /// operands): DeviceProfile::halfConvFlops where the device has it.
  bool halfConv = false;
};

/// The work of `op` by its kind's rule; zero for a structural op. An op
/// of the locus dialect without a rule is an internal error.
OpWork estimateWork(mlir::Operation *op);

/// Whether estimateWork has a rule for ops named `name` (structural ops
/// need none).
bool hasCostRule(mlir::OperationName name);

/// Bytes of a value of this (statically shaped) tensor type; i1 counts 1.
int64_t bytesOf(mlir::Type type);

/// Nanoseconds of `work` on `device`; 0 for what is no kernel. With
/// `inGraph`, its launch is one inside a replayed CUDA graph.
int64_t opCostNs(const OpWork &work, const DeviceProfile &device,
                 bool inGraph = false);
/// The launch `opCostNs` counts.
double launchCostNs(const DeviceProfile &device, bool inGraph);

/// Nanoseconds of one copy of `bytes` between the host and a device.
int64_t copyCostNs(int64_t bytes, const CostProfile &profile);

/// Nanoseconds of one copy of `bytes` between two CUDA devices: over the
/// peer link when the profile has one, else through the host.
int64_t peerCopyCostNs(int64_t bytes, const CostProfile &profile);

} // namespace locus

#endif // LOCUS_PASSES_COSTMODEL_H
