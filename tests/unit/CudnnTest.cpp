// CudnnTest.cpp - finding cuDNN (runtime/src/devices/cuda/cudnn.cpp) and
// the reports of its absence, on any machine; the convolutions themselves
// run on a GPU (CudaTest's op and gradient cases, tools/gpu-check).

#include "devices/cuda/cudnn.h"
#include "devices/cuda/cuda_device.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/stat.h>

namespace {

using locus::rt::cudnn::describe;
using locus::rt::cudnn::load;

constexpr const char *kToolkitCudnn = "/usr/local/cuda/lib64/libcudnn.so.9";

bool exists(const char *path) {
  struct stat st{};
  return stat(path, &st) == 0;
}

TEST(Cudnn, LoadsTheToolkitsLibraryByPath) {
  if (!exists(kToolkitCudnn))
    GTEST_SKIP() << "[SKIP] no " << kToolkitCudnn;
  std::string why;
  auto library = load(kToolkitCudnn, why);
  ASSERT_TRUE(library) << why;
  std::string text = describe(library.get(), why);
  EXPECT_EQ(text.rfind("cuDNN 9.", 0), 0u) << text;
  EXPECT_NE(text.find("libcudnn.so.9"), std::string::npos) << text;
}

TEST(Cudnn, SearchesTheUsualPlacesWhenNotNamed) {
  std::string why;
  auto library = load(nullptr, why);
  if (!exists(kToolkitCudnn) && !library)
    GTEST_SKIP() << "[SKIP] no cuDNN here: " << why;
  ASSERT_TRUE(library) << why;
  EXPECT_EQ(describe(library.get(), why).rfind("cuDNN 9.", 0), 0u);
}

TEST(Cudnn, AMissingNamedLibraryIsReportedAndNotReplaced) {
  std::string why;
  auto library = load("/nonexistent/locus/libcudnn.so.9", why);
  EXPECT_FALSE(library);
  EXPECT_NE(why.find("LOCUS_CUDNN"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/locus/libcudnn.so.9"), std::string::npos)
      << why;
  EXPECT_EQ(describe(nullptr, why), "no cuDNN (" + why + ")");
}

TEST(Cudnn, ALibraryThatIsNotCudnnIsRefused) {
  std::string why;
  auto library = load("libm.so.6", why);
  EXPECT_FALSE(library);
  EXPECT_NE(why.find("lacks cudnnGetVersion"), std::string::npos) << why;
  EXPECT_NE(why.find("not cuDNN 9"), std::string::npos) << why;
}

TEST(Cudnn, TheConvolutionPathNamesCudnnOrWhyNot) {
  std::string path = locus::rt::convolutionPath();
  if (locus::rt::cudnn::library())
    EXPECT_EQ(path.rfind("cuDNN 9.", 0), 0u) << path;
  else
    EXPECT_EQ(path.rfind("generated kernels (no cuDNN (", 0), 0u) << path;
}

TEST(Cudnn, NoHandleWithoutAGpu) {
  std::string why;
  if (locus::rt::cudaUsable(0, why))
    GTEST_SKIP() << "[SKIP] this machine has a GPU";
  locus::rt::cudnn::Convolutions convolutions;
  EXPECT_FALSE(convolutions.ready(why));
  EXPECT_FALSE(why.empty());
  // Asked again: the same answer, no second attempt.
  std::string again;
  EXPECT_FALSE(convolutions.ready(again));
  EXPECT_EQ(why, again);
}

} // namespace
