//===- Placement.cpp - the vocabulary of placement ------------------------===//
//
// See Placement.h.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Placement.h"
#include "locus/Passes/Passes.h"
#include "locus/abi.h"

#include <algorithm>
#include <mutex>

using namespace mlir;
using namespace locus;

//===----------------------------------------------------------------------===//
// Devices and targets
//===----------------------------------------------------------------------===//

DeviceAttr locus::parseDevice(MLIRContext *context, StringRef text) {
  if (text == "cpu")
    return DeviceAttr::get(context, DeviceKind::cpu, 0);
  int32_t index = locus_abi_cuda_ordinal(text.data(), text.size());
  if (index < 0)
    return {};
  return DeviceAttr::get(context, DeviceKind::cuda,
                         static_cast<unsigned>(index));
}

std::vector<std::string> locus::defaultTargets() { return {"cpu", "cuda:0"}; }

std::vector<std::string> locus::splitTargets(StringRef list) {
  SmallVector<StringRef> parts;
  list.split(parts, ',', -1, false);
  std::vector<std::string> targets;
  for (StringRef part : parts)
    if (!part.trim().empty())
      targets.push_back(part.trim().str());
  return targets;
}

std::string
locus::checkPlacementOptions(StringRef policy,
                             const std::vector<std::string> &targets) {
  if (!llvm::is_contained({"strict", "prefer-gpu", "auto", "cpu"}, policy))
    return ("unknown placement policy '" + policy +
            "'; expected strict, prefer-gpu, auto or cpu")
        .str();
  bool cpu = targets.empty();
  for (const std::string &t : targets) {
    if (t != "cpu" && locus_abi_cuda_ordinal(t.data(), t.size()) < 0)
      return "unknown device '" + t + "' in devices=; expected cpu or cuda:N";
    cpu |= t == "cpu";
  }
  if (!cpu)
    return "devices= must include cpu: inputs are fed and outputs read on "
           "the host";
  return "";
}

std::optional<PlacementPolicy> locus::parsePlacementPolicy(StringRef text) {
  if (text == "strict")
    return PlacementPolicy::strict;
  if (text == "prefer-gpu")
    return PlacementPolicy::preferGpu;
  if (text == "auto")
    return PlacementPolicy::automatic;
  if (text == "cpu")
    return PlacementPolicy::cpu;
  return std::nullopt;
}

StringRef locus::placementPolicyName(PlacementPolicy policy) {
  switch (policy) {
  case PlacementPolicy::strict:
    return "strict";
  case PlacementPolicy::preferGpu:
    return "prefer-gpu";
  case PlacementPolicy::automatic:
    return "auto";
  case PlacementPolicy::cpu:
    return "cpu";
  }
  return "auto";
}

std::optional<PlacementOptions>
PlacementOptions::read(StringRef policy,
                       const std::vector<std::string> &devices,
                       std::string &error) {
  error = checkPlacementOptions(policy, devices);
  std::optional<PlacementPolicy> parsed = parsePlacementPolicy(policy);
  if (!error.empty() || !parsed)
    return std::nullopt;
  PlacementOptions options;
  options.policy = *parsed;
  options.devices = devices;
  return options;
}

//===----------------------------------------------------------------------===//
// Placed ops and moved values
//===----------------------------------------------------------------------===//

DeviceAttr locus::placedDevice(Operation *op) {
  return op->getAttrOfType<DeviceAttr>(kDeviceAttrName);
}

std::string locus::userLine(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine())).str();
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return userLine(call.getCaller());
  if (auto name = dyn_cast<NameLoc>(loc)) {
    // An imported op: "<model file>: <its node>" (line 0: no line).
    if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc());
        file && file.getLine() == 0)
      return (file.getFilename().getValue() + ": " + name.getName().getValue())
          .str();
    return userLine(name.getChildLoc());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations()) {
      std::string line = userLine(inner);
      if (line != "unknown location")
        return line;
    }
  return "unknown location";
}

std::string locus::layerPathOf(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (std::string path = layerPathOf(inner); !path.empty())
        return path;
    return "";
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    if (auto named = dyn_cast<NameLoc>(call.getCallee()))
      return named.getName().str();
  return "";
}

bool locus::isUpdatedState(Value value) {
  return isa_and_nonnull<StateOp>(value.getDefiningOp()) &&
         llvm::any_of(value.getUsers(),
                      [](Operation *user) { return isa<AssignOp>(user); });
}

std::string locus::describeValue(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return "a block argument";
  if (auto input = dyn_cast<InputOp>(op))
    return ("input \"" + input.getName() + "\"").str();
  if (auto state = dyn_cast<StateOp>(op))
    return (stringifyStateRole(state.getRole()) + " \"" + state.getName() +
            "\"")
        .str();
  if (isa<ConstantOp>(op))
    return "a constant";
  if (auto to = dyn_cast<ToOp>(op))
    return "the result of .to(" + to.getDevice().str() + ")";
  return ("the result of " + op->getName().getStringRef()).str();
}

bool locus::isCudaKernelFunction(Operation *op) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func || func.isExternal())
    return false;
  auto device = func->getAttrOfType<DeviceAttr>(kDeviceAttrName);
  return device && device.getKind() == DeviceKind::cuda;
}

bool locus::isLoadTimeValue(Value value) {
  return isa_and_nonnull<StateOp, ConstantOp>(value.getDefiningOp()) &&
         !isUpdatedState(value);
}

//===----------------------------------------------------------------------===//
// Kernel registry
//===----------------------------------------------------------------------===//

CudaKernelRegistry &CudaKernelRegistry::instance() {
  static CudaKernelRegistry registry;
  return registry;
}

bool CudaKernelRegistry::has(llvm::StringRef opName) const {
  // Until the CUDA code generator registers its kernels, every op counts.
  return names.empty() ||
         std::find(names.begin(), names.end(), opName) != names.end();
}

void CudaKernelRegistry::add(llvm::StringRef opName) {
  if (std::find(names.begin(), names.end(), opName) == names.end())
    names.push_back(opName.str());
}

void locus::registerCudaKernels(MLIRContext &context) {
  static std::once_flag registered;
  std::call_once(registered, [&] {
    for (RegisteredOperationName op : context.getRegisteredOperations()) {
      if (op.getDialectNamespace() != LocusDialect::getDialectNamespace())
        continue;
      // Structural ops (graph, sources, outputs, moves, state writes,
      // kernels) are no kernel; everything else the CUDA code generator
      // lowers.
      if (op.hasTrait<locus::OpTrait::Structural>())
        continue;
      CudaKernelRegistry::instance().add(op.getStringRef());
    }
  });
}
