// DlTest.cpp - the one way the runtime loads an optional library (dl.h):
// the first candidate that opens, the reason the first one did not, the
// file a library came from, and the NVIDIA wheels pip installs.

#include "dl.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace locus::rt;
namespace fs = std::filesystem;

TEST(Dl, OpensTheFirstCandidateThatLoadsAndNamesIt) {
  Library libm = openFirst({"/nonexistent/libm.so.6", "libm.so.6"});
  ASSERT_NE(libm.handle, nullptr) << libm.why;
  EXPECT_EQ(libm.name, "libm.so.6");
  EXPECT_TRUE(libm.why.empty());
  double (*cosine)(double) = nullptr;
  EXPECT_TRUE(bindSymbol(libm.handle, cosine, "cos"));
  ASSERT_NE(cosine, nullptr);
  EXPECT_EQ(cosine(0.0), 1.0);
  void (*absent)() = nullptr;
  EXPECT_FALSE(bindSymbol(libm.handle, absent, "locus_no_such_symbol"));
  EXPECT_EQ(absent, nullptr);
  EXPECT_NE(libraryFileOf(reinterpret_cast<void *>(cosine)).find("libm"),
            std::string::npos);
  EXPECT_EQ(libraryFileOf(nullptr), "");
}

TEST(Dl, SaysWhyTheFirstCandidateDidNotOpen) {
  Library none = openFirst(std::vector<std::string>{
      "/nonexistent/locus/libfirst.so", "/nonexistent/locus/libsecond.so"});
  EXPECT_EQ(none.handle, nullptr);
  EXPECT_NE(none.why.find("/nonexistent/locus/libfirst.so"), std::string::npos)
      << none.why;
}

TEST(Dl, FindsAWheelOfTheActiveVirtualEnvironmentFirst) {
  fs::path root =
      fs::temp_directory_path() / ("locus-dl-" + std::to_string(::getpid()));
  fs::path lib =
      root / "lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2";
  fs::create_directories(lib.parent_path());
  std::ofstream(lib) << "not a library";
  const char *old = std::getenv("VIRTUAL_ENV");
  std::string saved = old ? old : "";
  setenv("VIRTUAL_ENV", root.c_str(), 1);
  std::vector<std::string> found = pythonWheelFiles("nccl", "libnccl.so.2");
  if (old)
    setenv("VIRTUAL_ENV", saved.c_str(), 1);
  else
    unsetenv("VIRTUAL_ENV");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front(), lib.string());
  EXPECT_TRUE(pythonWheelFiles("locus-none", "libnone.so").empty());
  // A file that is no library is refused with the loader's reason, which
  // says more than a missing first candidate's.
  std::vector<std::string> candidates{"/nonexistent/locus/libnccl.so.2"};
  candidates.insert(candidates.end(), found.begin(), found.end());
  Library bad = openFirst(candidates);
  EXPECT_EQ(bad.handle, nullptr);
  EXPECT_NE(bad.why.find(lib.string()), std::string::npos) << bad.why;
  fs::remove_all(root);
}
