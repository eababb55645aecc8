// init.cpp - the deterministic initialisers behind #locus.init<...>.

#include "guard.h"
#include "status_impl.h"

#include <cmath>

using locus::rt::makeStatus;

namespace {

/// splitmix64's finaliser (Steele, Lea, Flood 2014).
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

} // namespace

extern "C" locus_status_t locus_init_fill(locus_init_kind_t kind, double a,
                                          double b, uint64_t seed, size_t count,
                                          float *out_values) {
  LOCUS_GUARD({
    if (count > 0 && !out_values)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_init_fill: out_values is NULL for %zu values",
                        count);
    if (!std::isfinite(a) || !std::isfinite(b))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_init_fill: bounds must be finite");
    switch (kind) {
    case LOCUS_INIT_FULL:
      for (size_t i = 0; i < count; ++i)
        out_values[i] = static_cast<float>(a);
      return nullptr;
    case LOCUS_INIT_UNIFORM: {
      if (a > b)
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "locus_init_fill: uniform(%g, %g) has a > b", a, b);
      const float high = static_cast<float>(b);
      for (size_t i = 0; i < count; ++i) {
        uint64_t bits = mix(seed + (i + 1) * 0x9E3779B97F4A7C15ULL);
        double u = static_cast<double>(bits >> 40) * 0x1.0p-24;
        float value = static_cast<float>(a + (b - a) * u);
        // Rounding to f32 can reach b; keep the interval half-open.
        if (value >= high && a < b)
          value = std::nextafter(high, -INFINITY);
        out_values[i] = value;
      }
      return nullptr;
    }
    case LOCUS_INIT_NORMAL: {
      if (!(b >= 0))
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "locus_init_fill: normal(%g, %g) has a negative "
                          "standard deviation",
                          a, b);
      const double twoPi = 6.283185307179586476925286766559;
      for (size_t i = 0; i < count; ++i) {
        uint64_t first = mix(seed + (2 * i + 1) * 0x9E3779B97F4A7C15ULL);
        uint64_t second = mix(seed + (2 * i + 2) * 0x9E3779B97F4A7C15ULL);
        double u1 = 1.0 - static_cast<double>(first >> 11) * 0x1.0p-53;
        double u2 = static_cast<double>(second >> 11) * 0x1.0p-53;
        double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(twoPi * u2);
        out_values[i] = static_cast<float>(a + b * z);
      }
      return nullptr;
    }
    case LOCUS_INIT_KIND_MAX_ENUM:
      break;
    }
    return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                      "locus_init_fill: unknown initialiser kind %d",
                      static_cast<int>(kind));
  });
}
