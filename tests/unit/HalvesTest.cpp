// The runtime's 16-bit conversion loops (runtime/src/halves.h), in the
// clone this CPU picks, against the scalar conversions of locus/half.hpp
// bit for bit: specials, subnormals, ties, and random bits, at every
// length around a vector's width.

#include "halves.h"
#include "locus/half.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

std::vector<float> inputs() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.5f,
                          65504.0f,
                          65520.0f,
                          -70000.0f,
                          5.96e-8f,
                          2.98e-8f,
                          6.1e-5f,
                          1e-40f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::max(),
                          1.00390625f,  // a bf16 tie
                          1.001953125f, // another
                          1.00048828125f};
  std::mt19937 rng(11);
  for (int i = 0; i < 4000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    v.push_back(f);
  }
  return v;
}

TEST(Halves, NarrowingLoopsMatchTheScalarConversions) {
  std::vector<float> in = inputs();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{15},
                    int64_t{16}, int64_t{17}, int64_t{33}, int64_t{63},
                    static_cast<int64_t>(in.size())}) {
    std::vector<uint16_t> bf(static_cast<size_t>(n) + 1, 0xABCD),
        h(static_cast<size_t>(n) + 1, 0xABCD);
    locus::rt::narrowBf16(in.data(), n, bf.data());
    locus::rt::narrowF16(in.data(), n, h.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bf[i], locus::half::bf16Bits(in[i])) << "bf16 of " << in[i];
      ASSERT_EQ(h[i], locus::half::f16Bits(in[i])) << "f16 of " << in[i];
    }
    EXPECT_EQ(bf[n], 0xABCD) << "wrote past " << n;
    EXPECT_EQ(h[n], 0xABCD) << "wrote past " << n;
  }
}

TEST(Halves, WideningLoopsMatchTheScalarConversionsForEveryValue) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<uint16_t>(i);
  std::vector<float> bf(all.size()), h(all.size());
  locus::rt::widenBf16(all.data(), static_cast<int64_t>(all.size()), bf.data());
  locus::rt::widenF16(all.data(), static_cast<int64_t>(all.size()), h.data());
  // Bit for bit (NaNs included).
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
  };
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(bits(bf[i]), bits(locus::half::fromBf16Bits(all[i])))
        << "bf16 bits " << i;
    ASSERT_EQ(bits(h[i]), bits(locus::half::fromF16Bits(all[i])))
        << "f16 bits " << i;
  }
}

} // namespace
