//===- half.hpp - bf16 and f16 values to and from f32 -----------*- C++ -*-===//
//
// The conversions the C++ API, Python and locus-run make at a graph's
// boundary for bf16 and f16 tensors, which they hold as f32 values: to
// 16 bits rounds to nearest, ties to even (as PyTorch's .to(torch.bfloat16)
// and .half()); from 16 bits is exact. NaN stays NaN.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_HALF_HPP
#define LOCUS_HALF_HPP

#include <cstdint>
#include <cstring>

namespace locus::half {

// The conversions to 16 bits are written without branches (selects of
// values computed for every input), so that loops of them vectorize; they
// give the same bits as the branching forms for every f32 input (checked
// over all 2^32).

/// The bfloat16 bits nearest `f`.
inline uint16_t bf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  uint32_t quiet = (u >> 16) | 0x40u; // NaN: keep it quiet
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet
                                                               : rounded);
}

inline float fromBf16Bits(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// The IEEE binary16 bits nearest `f` (overflow gives infinity).
inline uint16_t f16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t rest = u & 0x7FFFFFFFu;
  // Subnormal (or zero) in f16: add 0.5 as a float so the FPU rounds the
  // bits below 2^-24 away, ties to even.
  float magnitude;
  std::memcpy(&magnitude, &rest, sizeof magnitude);
  float shifted = magnitude + 0.5f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  uint32_t subnormal = bits - 0x3F000000u;
  // Normal: rebias the exponent (-112 << 23) and round to nearest even.
  uint32_t normal = (rest + 0xC8000FFFu + ((rest >> 13) & 1u)) >> 13;
  uint32_t v = rest < 0x38800000u ? subnormal : normal;
  v = rest >= 0x477FF000u ? 0x7C00u : v; // rounds past 65504: infinity
  v = rest > 0x7F800000u ? 0x7E00u : v;  // NaN
  return static_cast<uint16_t>(sign | v);
}

inline float fromF16Bits(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  uint32_t normal = sign | ((exponent + 112) << 23) | (mantissa << 13);
  uint32_t special = sign | 0x7F800000u | (mantissa << 13); // inf, NaN
  // Zero or subnormal: mantissa * 2^-24, exact in f32.
  float small = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  uint32_t subnormal;
  std::memcpy(&subnormal, &small, sizeof subnormal);
  subnormal |= sign;
  uint32_t u = exponent == 0x1F ? special : exponent ? normal : subnormal;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

} // namespace locus::half

#endif // LOCUS_HALF_HPP
