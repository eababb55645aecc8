// halves.h - loops that convert between f32 and the 16-bit types (bf16,
// f16), built for AVX-512, AVX2 and the baseline x86-64 and chosen when
// the runtime loads (target_clones): the runtime itself is built for the
// baseline, where these loops run 4 lanes wide at best.

#ifndef LOCUS_RUNTIME_HALVES_H
#define LOCUS_RUNTIME_HALVES_H

#include <cstdint>

namespace locus::rt {

/// out[i] = in[i] rounded to nearest even, for i < n.
void narrowBf16(const float *in, int64_t n, uint16_t *out);
void narrowF16(const float *in, int64_t n, uint16_t *out);
/// out[i] = in[i], exactly, for i < n.
void widenBf16(const uint16_t *in, int64_t n, float *out);
void widenF16(const uint16_t *in, int64_t n, float *out);

} // namespace locus::rt

#endif // LOCUS_RUNTIME_HALVES_H
