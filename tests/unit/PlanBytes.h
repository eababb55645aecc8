// PlanBytes.h - a plan written by hand, byte by byte, for the runtime's
// tests: little-endian integers and length-prefixed strings in the layout of
// locus/abi.h (what the compiler's plan writer emits).
#ifndef LOCUS_TESTS_PLANBYTES_H
#define LOCUS_TESTS_PLANBYTES_H

#include "locus/abi.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

struct PlanBytes {
  std::vector<uint8_t> bytes;

  void u8(uint8_t v) { bytes.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void f64(double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    u64(v);
  }
  void str(const std::string &s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  /// A buffer entry: a rank-1 f32 tensor of `elements` on `device`.
  void f32Buffer(uint8_t kind, uint32_t device, uint64_t elements,
                 uint64_t offset, const std::string &name) {
    u8(kind);
    u32(device);
    u8(LOCUS_PLAN_F32);
    u32(1);
    u64(elements);
    u64(4 * elements);
    u64(offset);
    str(name);
  }
  /// A command: op and its two fields; a launch and an all-reduce also
  /// their buffers.
  void command(uint8_t op, uint32_t first, uint32_t second,
               const std::vector<uint32_t> &buffers = {}) {
    u8(op);
    u32(first);
    u32(second);
    if (op == LOCUS_PLAN_LAUNCH || op == LOCUS_PLAN_ALL_REDUCE) {
      u32(static_cast<uint32_t>(buffers.size()));
      for (uint32_t b : buffers)
        u32(b);
    }
  }
};

#endif // LOCUS_TESTS_PLANBYTES_H
