// ToolMainTest.cpp - the tools' exit codes (locus/Support/ToolMain.h).

#include "locus/Support/ToolMain.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

namespace {

TEST(ToolMain, ReturnsTheToolsOwnCode) {
  std::ostringstream err;
  EXPECT_EQ(locus::runTool("t", err, [] { return 0; }), 0);
  EXPECT_EQ(locus::runTool("t", err, [] { return 2; }), 2);
  EXPECT_EQ(err.str(), "");
}

TEST(ToolMain, AnInternalErrorIsExitCode70) {
  std::ostringstream err;
  int code = locus::runTool("locus-x", err, []() -> int {
    LOCUS_INTERNAL_ASSERT(1 + 1 == 3, "arithmetic");
    return 0;
  });
  EXPECT_EQ(code, locus::kExitInternalError);
  EXPECT_EQ(code, 70);
  EXPECT_NE(err.str().find("locus-x: internal error (a bug in Locus, please "
                           "report it) at "),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("assertion '1 + 1 == 3' failed: arithmetic"),
            std::string::npos)
      << err.str();
}

TEST(ToolMain, AnyOtherExceptionIsTheUsersError) {
  std::ostringstream err;
  int code = locus::runTool("locus-x", err, []() -> int {
    throw std::runtime_error("cannot read 'model.onnx'");
  });
  EXPECT_EQ(code, locus::kExitUserError);
  EXPECT_EQ(err.str(), "locus-x: cannot read 'model.onnx'\n");
}

} // namespace
