//===- ToolHelp.h - --help that shows a tool's own options ------*- C++ -*-===//
//
// LLVM registers hundreds of options (back ends, passes, debugging) in every
// program that links it; a tool's --help listed them all around its own
// handful. showOnlyInHelp() keeps --help to the tool's category and LLVM's
// help and version options; the rest stay usable and --help-hidden lists
// them.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_SUPPORT_TOOLHELP_H
#define LOCUS_SUPPORT_TOOLHELP_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace locus {

/// Hides every option outside `category` from --help (not from
/// --help-hidden), but LLVM's help and version options.
inline void showOnlyInHelp(llvm::cl::OptionCategory &category) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    llvm::StringRef name = entry.first();
    if (llvm::is_contained(option->Categories, &category) ||
        llvm::is_contained({"help", "help-list", "version"}, name) ||
        option->getOptionHiddenFlag() != llvm::cl::NotHidden)
      continue;
    option->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// Hides from --help (not from --help-hidden) every option but LLVM's help
/// and version options and the options `keep` names. A name may be one
/// value of an option that lists its values as flags (a pass of
/// mlir-opt's pass list): that option, with all its values, stays.
inline void showOnlyInHelp(llvm::ArrayRef<llvm::StringRef> keep) {
  auto &options = llvm::cl::getRegisteredOptions();
  llvm::SmallPtrSet<llvm::cl::Option *, 32> kept;
  for (llvm::StringRef name : keep)
    if (auto it = options.find(name); it != options.end())
      kept.insert(it->second);
  for (auto &entry : options) {
    llvm::cl::Option *option = entry.second;
    if (kept.contains(option) ||
        llvm::is_contained({"help", "help-list", "version"}, entry.first()) ||
        option->getOptionHiddenFlag() != llvm::cl::NotHidden)
      continue;
    option->setHiddenFlag(llvm::cl::Hidden);
  }
}

} // namespace locus

#endif // LOCUS_SUPPORT_TOOLHELP_H
