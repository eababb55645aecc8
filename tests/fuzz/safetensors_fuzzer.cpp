// libFuzzer over the runtime's safetensors reader (checkpoints and weights
// come from files users download): parse, then convert every tensor the
// parser accepted to f32, as loading state does. Any crash, overflow,
// leak or sanitizer report is a finding; a refusal is fine.

#include "safetensors.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<locus::rt::SafeTensor> tensors;
  if (locus_status_t s =
          locus::rt::parseSafetensors(data, size, "fuzz input", tensors)) {
    locus_status_free(s);
    return 0;
  }
  for (const locus::rt::SafeTensor &t : tensors) {
    size_t count = 1;
    for (int64_t d : t.shape)
      count *= static_cast<size_t>(d);
    // The parser checked bytes = count * element size; bound the buffer
    // anyway (an empty tensor, a huge count of zero-size data).
    if (count > (size_t{1} << 24))
      continue;
    std::vector<float> out(count);
    locus::rt::toF32(t, out.data(), count);
  }
  return 0;
}
