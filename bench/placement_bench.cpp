// placement_bench.cpp - time of --locus-place-devices (policy=auto, the
// min-cut) followed by --locus-insert-transfers on generated graphs of 1k to
// 1M ops. Prints the median of several runs per size.
//
//   placement_bench [max_ops=1000000] [policy=auto] [profile.json]
//
// A generated graph looks like a model: every 64 ops an input and a
// parameter; each op reads one or two of the 16 most recent values (so values
// fan out); a mix of matmuls and elementwise ops on 128x128 f32 tensors; 1%
// of the values moved .to(cuda:0) by the user; the last values are outputs.

#include "locus/Dialect/LocusDialect.h"
#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace mlir;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

OwningOpRef<ModuleOp> generate(MLIRContext &context, int ops, unsigned seed) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto graph = b.create<locus::GraphOp>(loc, "generated");
  b.setInsertionPointToEnd(&graph.getBodyBlock());
  auto type = RankedTensorType::get({128, 128}, b.getF32Type());
  auto cuda = locus::DeviceAttr::get(&context, locus::DeviceKind::cuda, 0);
  auto init = locus::InitAttr::get(&context, locus::InitKind::full,
                                   llvm::APFloat(0.0), llvm::APFloat(0.0), 0);
  std::mt19937 rng(seed);
  std::vector<Value> recent;
  auto pick = [&] {
    size_t window = std::min<size_t>(recent.size(), 16);
    return recent[recent.size() - 1 -
                  std::uniform_int_distribution<size_t>(0, window - 1)(rng)];
  };
  int made = 0;
  while (made < ops) {
    if (made % 64 == 0) {
      std::string n = std::to_string(made);
      recent.push_back(b.create<locus::InputOp>(
          loc, type, b.getStringAttr("x" + n), locus::DeviceAttr()));
      recent.push_back(b.create<locus::StateOp>(
          loc, type, b.getStringAttr("w" + n), locus::StateRole::parameter,
          init, locus::DeviceAttr()));
      made += 2;
      continue;
    }
    int kind = std::uniform_int_distribution<int>(0, 99)(rng);
    Value result;
    if (kind < 1)
      result = b.create<locus::ToOp>(loc, pick(), cuda);
    else if (kind < 25)
      result = b.create<locus::MatmulOp>(loc, pick(), pick());
    else if (kind < 50)
      result = b.create<locus::AddOp>(loc, pick(), pick());
    else if (kind < 70)
      result = b.create<locus::MulOp>(loc, pick(), pick());
    else if (kind < 90)
      result = b.create<locus::ReluOp>(loc, pick());
    else
      result = b.create<locus::TanhOp>(loc, pick());
    recent.push_back(result);
    ++made;
  }
  for (int i = 0; i < 4; ++i)
    b.create<locus::OutputOp>(loc, b.getStringAttr("out" + std::to_string(i)),
                              recent[recent.size() - 1 - i]);
  return module;
}

} // namespace

int main(int argc, char **argv) {
  int maxOps = argc > 1 ? std::atoi(argv[1]) : 1000000;
  std::string policy = argc > 2 ? argv[2] : "auto";
  std::string profile = argc > 3 ? argv[3] : "";
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.getOrLoadDialect<locus::LocusDialect>();

  std::printf("%10s %6s %12s %12s %10s %10s\n", "ops", "runs", "median_s",
              "min_s", "cuda_ops", "copies");
  for (int ops = 1000; ops <= maxOps; ops *= 10) {
    int runs = ops <= 10000 ? 7 : ops <= 100000 ? 5 : 3;
    std::vector<double> times;
    int64_t cudaOps = 0, copies = 0;
    for (int r = 0; r < runs; ++r) {
      OwningOpRef<ModuleOp> module = generate(context, ops, 7 + r);
      PassManager pm(&context, ModuleOp::getOperationName(),
                     OpPassManager::Nesting::Implicit);
      pm.enableVerifier(false);
      locus::LocusPlaceDevicesOptions options;
      options.policy = policy;
      options.profile = profile;
      pm.addNestedPass<locus::GraphOp>(locus::createLocusPlaceDevices(options));
      pm.addNestedPass<locus::GraphOp>(locus::createLocusInsertTransfers());
      auto start = Clock::now();
      if (failed(pm.run(*module))) {
        std::fprintf(stderr, "placement failed at %d ops\n", ops);
        return 1;
      }
      times.push_back(seconds(start));
      if (failed(verify(*module))) {
        std::fprintf(stderr, "the placed graph does not verify\n");
        return 1;
      }
      cudaOps = copies = 0;
      module->walk([&](Operation *op) {
        if (auto device =
                op->getAttrOfType<locus::DeviceAttr>(locus::kDeviceAttrName))
          cudaOps += device.isCuda();
        copies += isa<locus::CopyOp>(op);
      });
    }
    std::sort(times.begin(), times.end());
    std::printf("%10d %6d %12.4f %12.4f %10lld %10lld\n", ops, runs,
                times[times.size() / 2], times.front(),
                static_cast<long long>(cudaOps),
                static_cast<long long>(copies));
    std::fflush(stdout);
  }
  return 0;
}
