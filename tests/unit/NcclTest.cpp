// NcclTest.cpp - finding NCCL (runtime/src/devices/cuda/nccl.cpp) and the
// reports of its absence, on any machine; its all-reduces run on a GPU
// (tools/gpu-check, docs/distributed.md).

#include "devices/cuda/nccl.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/stat.h>

namespace {

using locus::rt::nccl::describe;
using locus::rt::nccl::load;

constexpr const char *kToolkitNccl = "/usr/local/cuda/lib64/libnccl.so.2";

bool exists(const char *path) {
  struct stat st{};
  return stat(path, &st) == 0;
}

TEST(Nccl, LoadsTheToolkitsLibraryByPath) {
  if (!exists(kToolkitNccl))
    GTEST_SKIP() << "[SKIP] no " << kToolkitNccl;
  std::string why;
  auto library = load(kToolkitNccl, why);
  ASSERT_TRUE(library) << why;
  std::string text = describe(library.get(), why);
  EXPECT_EQ(text.rfind("NCCL 2.", 0), 0u) << text;
  EXPECT_NE(text.find("libnccl.so.2"), std::string::npos) << text;
}

TEST(Nccl, SearchesTheUsualPlacesWhenNotNamed) {
  std::string why;
  auto library = load(nullptr, why);
  if (!exists(kToolkitNccl) && !library)
    GTEST_SKIP() << "[SKIP] no NCCL here: " << why;
  ASSERT_TRUE(library) << why;
  EXPECT_EQ(describe(library.get(), why).rfind("NCCL 2.", 0), 0u);
}

TEST(Nccl, AMissingNamedLibraryIsReportedAndNotReplaced) {
  std::string why;
  auto library = load("/nonexistent/locus/libnccl.so.2", why);
  EXPECT_FALSE(library);
  EXPECT_NE(why.find("LOCUS_NCCL"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/locus/libnccl.so.2"), std::string::npos)
      << why;
  EXPECT_EQ(describe(nullptr, why), "no NCCL (" + why + ")");
}

TEST(Nccl, ALibraryThatIsNotNcclIsRefused) {
  std::string why;
  auto library = load("libm.so.6", why);
  EXPECT_FALSE(library);
  EXPECT_NE(why.find("lacks ncclGetVersion"), std::string::npos) << why;
  EXPECT_NE(why.find("not NCCL 2"), std::string::npos) << why;
}

} // namespace
