// MergeModulesTest.cpp - the cuda stage's launchers joining the host
// module: each keeps reading its own constants.

#include "locus/Compile/Driver.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace {

/// A module with parameters @__locus_conv2d_params_0 = [7, flags], a
/// function `user` returning their address, and a runtime declaration.
std::string moduleText(const std::string &user, int flags) {
  return "llvm.mlir.global internal constant @__locus_conv2d_params_0("
         "dense<[7, " +
         std::to_string(flags) +
         "]> : tensor<2xi64>) {addr_space = 0 : i32} : !llvm.array<2 x i64>\n"
         "llvm.func @" +
         user +
         "() -> !llvm.ptr {\n"
         "  %0 = llvm.mlir.addressof @__locus_conv2d_params_0 : !llvm.ptr\n"
         "  llvm.return %0 : !llvm.ptr\n"
         "}\n"
         "llvm.func @locus_cuda_conv2d(i64)\n";
}

/// The flags word of the parameters `function` of `module` returns.
int64_t flagsRead(mlir::ModuleOp module, llvm::StringRef function) {
  auto func = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(function);
  if (!func)
    return -1;
  mlir::LLVM::AddressOfOp address;
  func.walk([&](mlir::LLVM::AddressOfOp op) { address = op; });
  if (!address)
    return -1;
  auto global =
      module.lookupSymbol<mlir::LLVM::GlobalOp>(address.getGlobalName());
  std::optional<mlir::Attribute> value =
      global ? global.getValue() : std::nullopt;
  if (!value)
    return -1;
  auto values = llvm::cast<mlir::DenseIntElementsAttr>(*value);
  return (*(values.value_begin<llvm::APInt>() + 1)).getSExtValue();
}

TEST(MergeModules, LaunchersKeepTheirOwnConstantsOfTheSameName) {
  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::LLVM::LLVMDialect>();
  auto host = mlir::parseSourceString<mlir::ModuleOp>(
      moduleText("k0_conv2d", 0), &context);
  auto cuda = mlir::parseSourceString<mlir::ModuleOp>(
      moduleText("k0_conv2d__cuda", 32), &context);
  ASSERT_TRUE(host && cuda);
  locus::mergeModules(*cuda, *host);
  EXPECT_EQ(flagsRead(*host, "k0_conv2d"), 0);
  EXPECT_EQ(flagsRead(*host, "k0_conv2d__cuda"), 32);
  int globals = 0, declarations = 0;
  for (auto g : host->getOps<mlir::LLVM::GlobalOp>()) {
    (void)g;
    ++globals;
  }
  for (auto f : host->getOps<mlir::LLVM::LLVMFuncOp>())
    declarations += f.isExternal();
  EXPECT_EQ(globals, 2);
  EXPECT_EQ(declarations, 1); // the runtime's function, once
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*host)));
}

} // namespace
