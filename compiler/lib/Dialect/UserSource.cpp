//===- UserSource.cpp - where the user wrote an op ------------------------===//

#include "locus/Dialect/UserSource.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace locus;

UserSource locus::userSourceOf(Location loc) {
  UserSource source;
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  Location callee = loc;
  if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    callee = call.getCallee();
    if (auto caller = dyn_cast<FileLineColLoc>(call.getCaller())) {
      source.callerFile = caller.getFilename().str();
      source.callerLine = static_cast<int>(caller.getLine());
    }
    // A named layer (detail::LayerScope): its path around where it was built.
    if (auto named = dyn_cast<NameLoc>(callee)) {
      source.layerPath = named.getName().str();
      callee = named.getChildLoc();
    }
  }
  if (auto name = dyn_cast<NameLoc>(callee)) { // an imported op
    if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc())) {
      source.file = file.getFilename().str();
      source.node = name.getName().str();
    }
    return source;
  }
  if (auto file = dyn_cast<FileLineColLoc>(callee)) {
    source.file = file.getFilename().str();
    source.line = static_cast<int>(file.getLine());
    source.column = static_cast<int>(file.getColumn());
  }
  return source;
}

Layer locus::layerOf(const UserSource &source) {
  if (!source.node.empty())
    return {LayerKind::onnx, onnxLayer(source.node)};
  if (!source.layerPath.empty())
    return {LayerKind::named, source.layerPath};
  if (!source.callerLine)
    return {};
  return {LayerKind::caller,
          llvm::sys::path::filename(source.callerFile).str() + ":" +
              std::to_string(source.callerLine)};
}

std::string locus::onnxLayer(llvm::StringRef node) {
  size_t open = node.find('\''), close = node.rfind('\'');
  if (open == llvm::StringRef::npos || close <= open)
    return "";
  llvm::StringRef name = node.slice(open + 1, close);
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '/', -1, /*KeepEmpty=*/false);
  if (parts.size() < 2)
    return "";
  parts.pop_back(); // the node itself
  std::string path;
  for (llvm::StringRef part : parts) {
    if (!path.empty() && part.starts_with(path + ".")) {
      path = part.str();
    } else {
      if (!path.empty())
        path += ".";
      path += part.str();
    }
  }
  return path;
}
