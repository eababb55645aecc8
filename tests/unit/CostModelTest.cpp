// CostModelTest.cpp - cost profiles (defaults, JSON, errors) and the work
// estimated for ops.

#include "locus/Passes/CostModel.h"
#include "locus/Dialect/LocusDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

using namespace locus;

namespace {

TEST(CostProfile, JsonOverridesDefaults) {
  CostProfile profile;
  std::string error;
  ASSERT_TRUE(CostProfile::parse(R"({"version": 1,
      "cpu": {"peak_gflops": 400},
      "link": {"bandwidth_gbps": 25},
      "load_amortization_steps": 10, "run_ns": 2500})",
                                 profile, error))
      << error;
  EXPECT_DOUBLE_EQ(profile.cpu.peakFlops, 400e9);
  EXPECT_DOUBLE_EQ(profile.cpu.bandwidth, 20e9); // default kept
  EXPECT_DOUBLE_EQ(profile.linkBandwidth, 25e9);
  EXPECT_DOUBLE_EQ(profile.loadAmortizationSteps, 10);
  EXPECT_DOUBLE_EQ(profile.runNs, 2500);
  EXPECT_DOUBLE_EQ(profile.cuda.peakFlops, CostProfile().cuda.peakFlops);
}

TEST(CostProfile, MistakesAreErrorsAndChangeNothing) {
  struct Case {
    const char *json, *message;
  } cases[] = {
      {"[1]", "a profile is a JSON object"},
      {"{", "not JSON"},
      {R"({"version": 2})", "profile.version must be 1"},
      {R"({"gpu": {}})", "unknown field profile.gpu"},
      {R"({"cuda": {"launch": 1}})", "unknown field cuda.launch"},
      {R"({"cuda": {"launch_ns": -1}})", "cuda.launch_ns must be a positive"},
      {R"({"link": {"bandwidth_gbps": "fast"}})",
       "link.bandwidth_gbps must be a positive number"},
      {R"({"cpu": 3})", "cpu must be an object"},
      {R"({"cpu": {"conv_gflops": 0}})", "cpu.conv_gflops must be a positive"},
      {R"({"description": 7})", "profile.description must be a string"},
      {R"({"cpu": {"curves": {"gemm": []}}})", "unknown field cpu.curves.gemm"},
      {R"({"cpu": {"curves": {"matmul": []}}})",
       "cpu.curves.matmul must be a non-empty array"},
      {R"({"cuda": {"curves": {"conv": [[1, 2, 3]]}}})",
       "cuda.curves.conv must be a non-empty array of [work, rate] pairs"},
      {R"({"cpu": {"curves": {"elementwise": [[-1, 2]]}}})",
       "of positive numbers"},
      {R"({"cpu": {"curves": {"reduction": [[10, 2], [5, 3]]}}})",
       "cpu.curves.reduction must list its points in increasing work"},
  };
  for (const Case &c : cases) {
    CostProfile profile;
    profile.cpu.peakFlops = 1234;
    std::string error;
    EXPECT_FALSE(CostProfile::parse(c.json, profile, error)) << c.json;
    EXPECT_NE(error.find(c.message), std::string::npos)
        << c.json << " gave: " << error;
    EXPECT_EQ(profile.cpu.peakFlops, 1234) << "changed on failure";
  }
  CostProfile profile;
  std::string error;
  EXPECT_FALSE(CostProfile::load("/nonexistent/profile.json", profile, error));
  EXPECT_NE(error.find("cannot read cost profile"), std::string::npos);
}

TEST(CostProfile, ALoadedProfileNamesItsFileAndDescription) {
  std::string path = ::testing::TempDir() + "locus-profile-origin.json";
  {
    std::ofstream file(path);
    file << R"({"version": 1, "description": "measured on box",
                "cpu": {"conv_gflops": 80}})";
  }
  CostProfile profile;
  EXPECT_EQ(profile.origin, "built-in defaults");
  std::string error;
  ASSERT_TRUE(CostProfile::load(path, profile, error)) << error;
  EXPECT_EQ(profile.origin, path + " (measured on box)");
  EXPECT_DOUBLE_EQ(profile.cpu.convFlops, 80e9);
  std::remove(path.c_str());
}

TEST(CostModel, ConvolutionsRunAtTheirOwnRateWhenTheProfileHasOne) {
  DeviceProfile device{1e12, 1e15, 0};
  OpWork conv{2e9, 0, true, OpClass::conv};
  EXPECT_EQ(opCostNs(conv, device), 2000000); // peak when no conv rate
  device.convFlops = 0.5e12;
  EXPECT_EQ(opCostNs(conv, device), 4000000);
  EXPECT_EQ(opCostNs({2e9, 0, true}, device), 2000000); // a matmul: peak
}

TEST(CostModel, ACurveGivesTheRateAtTheOpsSize) {
  CostProfile profile;
  std::string error;
  ASSERT_TRUE(CostProfile::parse(R"({"cpu": {"launch_ns": 100, "curves": {
      "matmul": [[1e6, 10], [1e8, 100]],
      "elementwise": [[1e3, 1], [1e6, 20]]}}})",
                                 profile, error))
      << error;
  const RateCurve &mm = profile.cpu.curves[static_cast<int>(OpClass::matmul)];
  ASSERT_EQ(mm.size(), 2u);
  EXPECT_DOUBLE_EQ(rateAt(mm, 1e5), 10e9);  // below: the first point
  EXPECT_DOUBLE_EQ(rateAt(mm, 1e9), 100e9); // above: the last
  EXPECT_NEAR(rateAt(mm, 1e7), std::sqrt(10e9 * 100e9), 1); // log-log middle
  // 1e7 flops at 31.6 GFLOP/s: 316 us, plus the launch.
  EXPECT_EQ(opCostNs({1e7, 1e4, true, OpClass::matmul}, profile.cpu),
            std::llround(1e7 / std::sqrt(10e9 * 100e9) * 1e9 + 100));
  // ... unless its bytes take longer at the measured streaming rate (a
  // matrix-vector product): 1e9 bytes at 20 GB/s.
  EXPECT_EQ(opCostNs({1e7, 1e9, true, OpClass::matmul}, profile.cpu),
            50000000 + 100);
  // Memory classes take their bytes: 1e3 bytes at 1 GB/s.
  EXPECT_EQ(opCostNs({1e9, 1e3, true, OpClass::elementwise}, profile.cpu),
            1000 + 100);
  // A class without a curve keeps the roofline.
  EXPECT_EQ(opCostNs({0, 1e9, true, OpClass::reduction}, profile.cpu),
            std::llround(1e9 / profile.cpu.bandwidth * 1e9 + 100));
}

TEST(CostModel, OpTimeIsTheSlowerOfComputeAndMemoryPlusLaunch) {
  DeviceProfile device{1e12, 1e11, 1000};
  EXPECT_EQ(opCostNs({2e9, 0, true}, device), 2000000 + 1000);  // compute
  EXPECT_EQ(opCostNs({0, 1e9, true}, device), 10000000 + 1000); // memory
  EXPECT_EQ(opCostNs({5, 5, false}, device), 0);                // no kernel
  // Inside a replayed CUDA graph a launch costs its own figure, and a
  // profile without one keeps the plain launch.
  EXPECT_EQ(opCostNs({0, 1e9, true}, device, true), 10000000 + 1000);
  device.graphLaunchNs = 300;
  EXPECT_EQ(opCostNs({0, 1e9, true}, device, true), 10000000 + 300);
  EXPECT_EQ(opCostNs({0, 1e9, true}, device, false), 10000000 + 1000);
  CostProfile defaults;
  EXPECT_LT(defaults.cuda.graphLaunchNs, defaults.cuda.launchNs);
  std::string error;
  ASSERT_TRUE(CostProfile::parse(R"({"cuda": {"graph_launch_ns": 900}})",
                                 defaults, error))
      << error;
  EXPECT_EQ(defaults.cuda.graphLaunchNs, 900);
  CostProfile profile;
  profile.linkLatencyNs = 500;
  profile.linkBandwidth = 1e9;
  EXPECT_EQ(copyCostNs(1000, profile), 500 + 1000);
}

class Work : public ::testing::Test {
protected:
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  /// The work of the last op before the graph's end in `body`.
  OpWork workOf(const std::string &body) {
    context.getOrLoadDialect<LocusDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(
        "locus.graph @g {\n" + body + "\n}", &context);
    EXPECT_TRUE(module);
    auto graph = llvm::cast<GraphOp>(module->getBody()->front());
    return estimateWork(&graph.getBodyBlock().back());
  }
};

TEST_F(Work, MatmulLinearConvCountMultiplyAdds) {
  OpWork mm = workOf(R"(
    %a = locus.input "a" : tensor<3x8x16xf32>
    %b = locus.input "b" : tensor<3x16x4xf32>
    %0 = locus.matmul %a, %b : tensor<3x8x16xf32>, tensor<3x16x4xf32> -> tensor<3x8x4xf32>)");
  EXPECT_EQ(mm.flops, 2.0 * 3 * 8 * 16 * 4);
  EXPECT_EQ(mm.bytes, 4.0 * (3 * 8 * 16 + 3 * 16 * 4 + 3 * 8 * 4));
  EXPECT_TRUE(mm.kernel);

  OpWork linear = workOf(R"(
    %x = locus.input "x" : tensor<64x784xf32>
    %w = locus.input "w" : tensor<10x784xf32>
    %b = locus.input "b" : tensor<10xf32>
    %0 = locus.linear %x, %w, %b : tensor<64x784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<64x10xf32>)");
  EXPECT_EQ(linear.flops, 2.0 * 64 * 784 * 10 + 64 * 10);

  OpWork conv = workOf(R"(
    %x = locus.input "x" : tensor<32x3x14x14xf32>
    %w = locus.input "w" : tensor<16x3x3x3xf32>
    %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<32x3x14x14xf32>, tensor<16x3x3x3xf32> -> tensor<32x16x14x14xf32>)");
  EXPECT_EQ(conv.flops, 2.0 * 32 * 16 * 14 * 14 * 3 * 3 * 3);
  EXPECT_EQ(conv.opClass, OpClass::conv);
  EXPECT_EQ(linear.opClass, OpClass::matmul);
  EXPECT_EQ(mm.opClass, OpClass::matmul);
}

TEST_F(Work, ProductsOf16BitOperandsRunAtTheDevicesHalfRate) {
  OpWork half = workOf(R"(
    %x = locus.input "x" : tensor<256x1024xbf16>
    %w = locus.input "w" : tensor<1024x1024xbf16>
    %0 = locus.linear %x, %w : tensor<256x1024xbf16>, tensor<1024x1024xbf16> -> tensor<256x1024xbf16>)");
  EXPECT_TRUE(half.half);
  EXPECT_EQ(half.bytes, 2.0 * (256 * 1024 + 1024 * 1024 + 256 * 1024));
  OpWork full = workOf(R"(
    %x = locus.input "x" : tensor<256x1024xf32>
    %w = locus.input "w" : tensor<1024x1024xf32>
    %0 = locus.linear %x, %w : tensor<256x1024xf32>, tensor<1024x1024xf32> -> tensor<256x1024xf32>)");
  EXPECT_FALSE(full.half);
  OpWork conv = workOf(R"(
    %x = locus.input "x" : tensor<2x3x8x8xbf16>
    %w = locus.input "w" : tensor<4x3x3x3xbf16>
    %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<2x4x8x8xbf16>)");
  EXPECT_FALSE(conv.half) << "16-bit convolutions are no products";
  EXPECT_TRUE(conv.halfConv);
  // An autocast convolution (f32 operands holding 16-bit values) runs at
  // the GPU's 16-bit convolution rate, and at the f32 rate on the CPU.
  OpWork autocast = workOf(R"(
    %x = locus.input "x" : tensor<32x64x56x56xf32>
    %w = locus.input "w" : tensor<64x64x3x3xf32>
    %0 = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.autocast = bf16} : tensor<32x64x56x56xf32>, tensor<64x64x3x3xf32> -> tensor<32x64x56x56xf32>)");
  OpWork plain = autocast;
  plain.halfConv = false;
  EXPECT_TRUE(autocast.halfConv);
  CostProfile defaults;
  EXPECT_LT(opCostNs(autocast, defaults.cuda) * 2,
            opCostNs(plain, defaults.cuda));
  EXPECT_EQ(opCostNs(autocast, defaults.cpu), opCostNs(plain, defaults.cpu));
  std::string parseError;
  ASSERT_TRUE(CostProfile::parse(R"({"cuda": {"half_conv_gflops": 100000}})",
                                 defaults, parseError))
      << parseError;
  EXPECT_DOUBLE_EQ(defaults.cuda.halfConvFlops, 100e12);
  // On the default GPU, tensor cores: 8x fp32's rate (the launch aside,
  // and half the bytes); the CPU's default has no 16-bit rate, so the
  // product costs what f32's does there.
  CostProfile profile;
  double launch = profile.cuda.launchNs;
  EXPECT_LT((opCostNs(half, profile.cuda) - launch) * 4,
            opCostNs(full, profile.cuda) - launch);
  EXPECT_EQ(
      opCostNs(half, profile.cpu),
      opCostNs({half.flops, half.bytes, true, OpClass::matmul}, profile.cpu));
  std::string error;
  ASSERT_TRUE(
      CostProfile::parse(R"({"cpu": {"half_gflops": 400}})", profile, error))
      << error;
  EXPECT_DOUBLE_EQ(profile.cpu.halfFlops, 400e9);
  EXPECT_EQ(opCostNs(half, profile.cpu),
            std::llround(half.flops / 400e9 * 1e9 + profile.cpu.launchNs));
  EXPECT_FALSE(
      CostProfile::parse(R"({"cuda": {"half_gflops": -3}})", profile, error));
  EXPECT_NE(error.find("cuda.half_gflops must be a positive"),
            std::string::npos)
      << error;
}

TEST_F(Work, SourcesViewsAndMovesAreNoKernels) {
  EXPECT_FALSE(workOf(R"(%x = locus.input "x" : tensor<4x4xf32>)").kernel);
  EXPECT_FALSE(workOf(R"(
    %x = locus.input "x" : tensor<4x4xf32>
    %0 = locus.reshape %x [16] : tensor<4x4xf32> -> tensor<16xf32>)")
                   .kernel);
  EXPECT_FALSE(workOf(R"(
    %x = locus.input "x" : tensor<4xf32>
    %0 = locus.to <cuda:0>, %x : tensor<4xf32>)")
                   .kernel);
  OpWork add = workOf(R"(
    %x = locus.input "x" : tensor<4x4xf32>
    %0 = locus.add %x, %x : tensor<4x4xf32>)");
  EXPECT_EQ(add.flops, 16);
  EXPECT_EQ(add.bytes, 3 * 64);
  EXPECT_EQ(bytesOf(mlir::RankedTensorType::get(
                {3}, mlir::IntegerType::get(&context, 1))),
            3);
}

TEST_F(Work, EveryOpOfTheDialectHasACostRule) {
  context.getOrLoadDialect<LocusDialect>();
  int ops = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != LocusDialect::getDialectNamespace())
      continue;
    ++ops;
    EXPECT_TRUE(hasCostRule(name))
        << "the cost model has no rule for '" << name.getStringRef().str()
        << "': add one to CostRules (CostModel.cpp), or mark the op "
           "Locus_Structural if no kernel computes it";
  }
  EXPECT_GT(ops, 60);
  // Another dialect's op has none (estimateWork counts its traffic).
  EXPECT_FALSE(hasCostRule(mlir::OperationName("test.unknown", &context)));
}

TEST_F(Work, StateWritesAreNoKernels) {
  // A structural op needs no rule: it is no kernel.
  EXPECT_FALSE(workOf(R"(
    %x = locus.input "x" : tensor<4xf32>
    %s = locus.state "s" buffer : tensor<4xf32> init <full(0.0)>
    locus.assign %s = %x : tensor<4xf32>, tensor<4xf32>)")
                   .kernel);
  EXPECT_TRUE(hasCostRule(mlir::OperationName("locus.assign", &context)));
}

} // namespace
