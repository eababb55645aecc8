// safetensors.h - the safetensors checkpoint format (Hugging Face's, as
// PyTorch users save weights): an 8-byte little-endian header length, a
// JSON header {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets":
// [begin, end]}, ..., "__metadata__": {"key": "value"}}, then the tensors'
// bytes, little-endian, row-major, offsets relative to the end of the
// header.
//
// The reader trusts nothing: lengths, offsets, shapes and sizes are checked
// against the file (with overflow checks), the JSON is parsed by a strict
// reader of exactly this structure, and every error says where.
#ifndef LOCUS_RUNTIME_SAFETENSORS_H
#define LOCUS_RUNTIME_SAFETENSORS_H

#include "locus/locus_runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace locus::rt {

/// One tensor of a safetensors file.
struct SafeTensor {
  std::string name;
  std::string dtype; // "F32", "F16", "BF16", "F64", "I64", ...
  std::vector<int64_t> shape;
  const unsigned char *data = nullptr; // into the parsed bytes
  uint64_t bytes = 0;
};

/// The largest header the reader takes (the reference implementation's
/// limit) and the largest rank.
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;
constexpr size_t kMaxSafetensorsRank = 64;

/// Parses `size` bytes (which must outlive `out`). DATA_LOSS naming `what`
/// (a path, "the artifact's state section") and the fault.
locus_status_t parseSafetensors(const void *bytes, size_t size,
                                const char *what, std::vector<SafeTensor> &out);

/// A tensor to write: f32, `shape`, `data` holding its elements.
struct SafeTensorOut {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// The bytes of a safetensors file holding `tensors` (F32), with
/// {"format": "pt"} as metadata so that Hugging Face's loaders take it.
std::string writeSafetensors(const std::vector<SafeTensorOut> &tensors);

/// Converts a tensor of dtype F32, F64, F16 or BF16 to `count` floats;
/// false for another dtype.
bool toF32(const SafeTensor &t, float *out, size_t count);

} // namespace locus::rt

#endif
