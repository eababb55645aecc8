// kernel_source.h - where a kernel comes from: the records of its
// __locus_source_<f> (LOCUS_ABI_SOURCE_PREFIX, locus/abi.h), read once at
// load, for traces, profiles and the load report.
#ifndef LOCUS_RUNTIME_KERNEL_SOURCE_H
#define LOCUS_RUNTIME_KERNEL_SOURCE_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace locus::rt {

/// One kind of user op in a kernel. A line of another form (an older
/// artifact's text, "..." after a cut) has only `op`, and `count` 0.
struct SourceOp {
  uint32_t count = 0;
  std::string op;    ///< "locus.linear"
  std::string at;    ///< the user's line, or ""
  std::string layer; ///< "layer1.0.conv1", "model.cpp:24", or ""
  std::string kind;  ///< how the layer was found: named, onnx, caller, ""
};

struct KernelSource {
  std::vector<SourceOp> ops;
  /// As people read it: "locus.linear at m.cpp:14 in fc1; locus.relu at
  /// m.cpp:15 (x2)" (the layer is said when a named layer recorded it).
  std::string text;

  /// Whether an op of this name is in the kernel (in an older artifact's
  /// text: named with its line, "locus.conv2d at m.cpp:3").
  bool has(std::string_view op) const;
};

/// Reads the records of `text` (at most LOCUS_ABI_MAX_SOURCE_BYTES - 1
/// bytes of it); never fails.
KernelSource parseKernelSource(std::string_view text);

} // namespace locus::rt

#endif // LOCUS_RUNTIME_KERNEL_SOURCE_H
