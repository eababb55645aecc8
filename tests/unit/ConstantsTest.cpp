// The runtime's derived constants (runtime/src/constants.h), compiled in:
// a write of one state drops only the copies derived from it, so that a
// learning rate written between steps leaves the weights' library layouts.

#include "constants.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using locus::rt::Constants;

namespace {

/// A derived copy of `source` (4 bytes) under transform `how`.
const void *derive(Constants &c, const void *source, const void *how,
                   int *made) {
  return c.derived(source, how, 4, [&](void *out) {
    std::memcpy(out, source, 4);
    ++*made;
    return true;
  });
}

} // namespace

TEST(Constants, AWriteDropsOnlyTheCopiesOfItsMemory) {
  std::vector<float> weights(16, 1.0f), lr(1, 0.1f);
  int how = 0, made = 0;
  Constants c;
  const void *w = derive(c, &weights[4], &how, &made);
  derive(c, lr.data(), &how, &made);
  ASSERT_EQ(c.copies(), 2u);
  c.drop(lr.data(), sizeof(float));
  EXPECT_EQ(c.copies(), 1u);
  // The weights' copy is kept: asking again derives nothing.
  EXPECT_EQ(derive(c, &weights[4], &how, &made), w);
  EXPECT_EQ(made, 2);
  // A write of the weights' buffer drops a copy of memory inside it.
  c.drop(weights.data(), weights.size() * sizeof(float));
  EXPECT_EQ(c.copies(), 0u);
  derive(c, &weights[4], &how, &made);
  EXPECT_EQ(made, 3);
  c.drop();
  EXPECT_EQ(c.copies(), 0u);
}
