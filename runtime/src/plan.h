// plan.h - a plan read from an artifact, every field checked.
#ifndef LOCUS_RUNTIME_PLAN_H
#define LOCUS_RUNTIME_PLAN_H

#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace locus::rt {

struct PlanDevice {
  locus_device_kind_t kind;
  uint32_t index;
  std::string name; // "cpu", "cuda:0"
};

struct PlanBuffer {
  uint8_t kind;
  uint32_t device;
  uint8_t dtype;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
  uint64_t offset = 0; // activations and inputs
  std::string name;    // inputs and state
  // State: its initialiser.
  uint8_t initKind = 0;
  double initA = 0, initB = 0;
  uint64_t seed = 0;
  // Constants: their bytes.
  std::vector<unsigned char> data;
};

/// One command. The format stores two u32 fields whose meaning depends on
/// `op` (locus/abi.h); the reader puts them in the named fields of that op
/// and leaves the others 0.
struct PlanCommand {
  uint8_t op;
  uint32_t kernel = 0, results = 0; // LAUNCH: kernel number, result count
  uint32_t src = 0, dst = 0;        // COPY: source and destination buffers
  uint32_t device = 0, event = 0;   // RECORD, WAIT: device and event numbers
  uint32_t reduction = 0;           // ALL_REDUCE (and its `device`)
  std::vector<uint32_t> args;       // LAUNCH: reads, then `results` results;
                                    // ALL_REDUCE: operands, then results
};

struct PlanKernel {
  std::string symbol;
  uint32_t device;
};

struct PlanOutput {
  std::string name;
  uint32_t buffer;
};

/// A dynamic size: its name and bound.
struct PlanSize {
  std::string name;
  int64_t bound = 0;
};

/// One dimension of a buffer with dynamic sizes: factor times the product
/// of each size to its power.
struct PlanDim {
  int64_t factor = 0;
  std::vector<uint8_t> powers; // one per size
  /// The dimension at `sizes` (each within its bound: no overflow, as the
  /// buffer at the bounds fits).
  int64_t at(const std::vector<int64_t> &sizes) const {
    int64_t n = factor;
    for (size_t k = 0; k < powers.size(); ++k)
      for (uint8_t i = 0; i < powers[k]; ++i)
        n *= sizes[k];
    return n;
  }
  bool isSize(size_t &k) const; // exactly one size, to the power 1
};

struct Plan {
  std::vector<PlanDevice> devices;
  std::vector<PlanBuffer> buffers;
  std::vector<uint64_t> arenaBytes; // per device
  std::vector<PlanKernel> kernels;
  std::vector<std::string> imports; // runtime functions the code calls
  std::vector<PlanCommand> load, step;
  std::vector<PlanOutput> outputs;
  uint32_t events = 0;
  /// Dynamic sizes (plan version 5): the sizes, the buffer that holds a
  /// run's (LOCUS_PLAN_SIZES_INPUT; none without sizes), and by buffer its
  /// dims (empty for a static buffer).
  std::vector<PlanSize> sizes;
  uint32_t sizesBuffer = UINT32_MAX;
  std::vector<std::vector<PlanDim>> dims;
};

/// Reads and checks a plan: DATA_LOSS for anything malformed, UNAVAILABLE
/// for another plan version.
locus_status_t readPlan(const void *data, size_t size, Plan &out);

size_t dtypeSize(uint8_t dtype);

} // namespace locus::rt

#endif
