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

/// The bfloat16 bits nearest `f`.
inline uint16_t bf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
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
  if (rest > 0x7F800000u) // NaN
    return static_cast<uint16_t>(sign | 0x7E00u);
  if (rest >= 0x477FF000u) // rounds past 65504: infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (rest < 0x38800000u) {
    // Subnormal (or zero) in f16: add 0.5 as a float so the FPU rounds
    // the bits below 2^-24 away, ties to even.
    float magnitude;
    std::memcpy(&magnitude, &rest, sizeof magnitude);
    float shifted = magnitude + 0.5f;
    uint32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return static_cast<uint16_t>(sign | (bits - 0x3F000000u));
  }
  uint32_t odd = (rest >> 13) & 1u;
  rest += 0xC8000FFFu + odd; // rebias the exponent (-112 << 23), round
  return static_cast<uint16_t>(sign | (rest >> 13));
}

inline float fromF16Bits(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  uint32_t u;
  if (exponent == 0x1F) {
    u = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    u = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    float f = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    std::memcpy(&u, &f, sizeof u);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

} // namespace locus::half

#endif // LOCUS_HALF_HPP
