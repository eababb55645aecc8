//===- Aot.cpp - kernels ahead of time, and the artifact ------------------===//
//
// LLVM only (no MLIR): the kernels' bitcode gets the runtime's import slots
// and the CPU features it needs, is optimised and compiled for the chosen
// CPU into an object, linked by lld into a shared object, and written with
// the plan and the placed graph into one artifact (docs/artifact.md).
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Driver.h"

#include "locus/Support/Errors.h"
#include "locus/abi.h"
#include "locus/locus_runtime.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <thread>
#include <unistd.h>

#ifndef LOCUS_LLD_PATH
#define LOCUS_LLD_PATH ""
#endif

using namespace locus;

namespace {

/// Routes each runtime function the code calls through a pointer slot,
/// `__locus_import_<name>`, that the runtime fills at load: the shared
/// object then needs nothing of the process but libc and libm.
void addImportSlots(llvm::Module &module,
                    const std::vector<std::string> &imports) {
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::get(context, 0);
  llvm::IRBuilder<> b(context);
  for (const std::string &name : imports) {
    // The module owns its globals.
    auto *slot = llvm::cast<llvm::GlobalVariable>(
        module.getOrInsertGlobal(LOCUS_ABI_IMPORT_PREFIX + name, ptr));
    slot->setInitializer(llvm::ConstantPointerNull::get(ptr));
    llvm::Function *f = module.getFunction(name);
    if (!f || !f->isDeclaration())
      continue;
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", f));
    llvm::SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : f->args())
      args.push_back(&arg);
    llvm::Value *callee = b.CreateLoad(ptr, slot);
    llvm::CallInst *call = b.CreateCall(f->getFunctionType(), callee, args);
    if (f->getReturnType()->isVoidTy())
      b.CreateRetVoid();
    else
      b.CreateRet(call);
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
}

/// The features the runtime checks before it loads code for `cpu`.
std::string requiredFeatures(const std::string &cpu) {
  if (cpu == "x86-64-v4")
    return "avx512f,avx2,fma";
  if (cpu == "x86-64-v3")
    return "avx2,fma";
  if (cpu == "x86-64-v2")
    return "sse4.2";
  if (cpu == "native") {
    std::string out;
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (const char *f : {"avx512f", "avx2", "fma"})
      if (host.lookup(f))
        out += (out.empty() ? "" : ",") + std::string(f);
    return out;
  }
  return "";
}

std::string findLinker() {
  for (const char *name : {LOCUS_LLD_PATH, "ld.lld-19", "ld.lld"}) {
    if (!*name)
      continue;
    if (llvm::sys::path::is_absolute(name) && llvm::sys::fs::can_execute(name))
      return name;
    if (auto found = llvm::sys::findProgramByName(name))
      return *found;
  }
  return "";
}

/// The kernels' bitcode of `result`, parsed into `context`, with the
/// runtime's import slots.
std::unique_ptr<llvm::Module> loadKernels(const PipelineResult &result,
                                          llvm::LLVMContext &context) {
  auto parsed = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(result.bitcode, "kernels"), context);
  if (!parsed)
    LOCUS_INTERNAL_ERROR(llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> module = std::move(*parsed);
  addImportSlots(*module, runtimeImports(!result.cudaFunctions.empty()));
  return module;
}

/// What the runtime checks and reports: the CPU the code is for and the
/// features it needs, as constant strings of the module.
void addCpuGlobals(llvm::Module &module, const std::string &cpu,
                   const std::string &features) {
  llvm::LLVMContext &context = module.getContext();
  for (const auto &[name, value] :
       {std::pair{LOCUS_ABI_CPU_FEATURES_SYMBOL, features},
        std::pair{LOCUS_ABI_CPU_SYMBOL, cpu}}) {
    // The module owns its globals.
    auto *text = llvm::ConstantDataArray::getString(context, value);
    auto *storage = llvm::cast<llvm::GlobalVariable>(
        module.getOrInsertGlobal(std::string(name) + ".text", text->getType()));
    storage->setInitializer(text);
    storage->setConstant(true);
    storage->setLinkage(llvm::GlobalValue::PrivateLinkage);
    auto *pointer = llvm::cast<llvm::GlobalVariable>(
        module.getOrInsertGlobal(name, llvm::PointerType::get(context, 0)));
    pointer->setInitializer(storage);
    pointer->setConstant(true);
  }
}

/// A target machine for `cpu` ("native": this host's CPU and features) on
/// `triple`, into `machine`. Returns what is wrong, or "".
std::string makeTargetMachine(const std::string &triple, const std::string &cpu,
                              std::unique_ptr<llvm::TargetMachine> &machine) {
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return "no LLVM target for " + triple + ": " + error;
  std::string cpuName =
      cpu == "native" ? llvm::sys::getHostCPUName().str() : cpu;
  std::string featureString;
  if (cpu == "native")
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      featureString += (featureString.empty() ? "" : ",") +
                       std::string(f.getValue() ? "+" : "-") + f.getKey().str();
  llvm::TargetOptions targetOptions;
  machine.reset(target->createTargetMachine(
      triple, cpuName, featureString, targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return "LLVM cannot compile for CPU '" + cpu + "'";
  if (!machine->getMCSubtargetInfo()->isCPUStringValid(cpuName))
    return locus::checkCpuName(cpu);
  return "";
}

} // namespace

std::string locus::checkCpuName(const std::string &cpu) {
  if (cpu == "native")
    return "";
  llvm::InitializeNativeTarget();
  std::string triple = llvm::sys::getDefaultTargetTriple(), error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return "no LLVM target for " + triple + ": " + error;
  // A subtarget of the generic CPU knows every CPU name of the target.
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (info && info->isCPUStringValid(cpu))
    return "";
  return "unknown CPU '" + cpu +
         "' (try x86-64, x86-64-v2, x86-64-v3, x86-64-v4, native, or an "
         "LLVM CPU name such as skylake-avx512)";
}

namespace {

/// The scratch directories' prefix: locus-aot-<pid>-<random>.
constexpr llvm::StringLiteral kScratchPrefix = "locus-aot-";
/// The files a scratch directory holds: the shared object, the linker's
/// log, and an object per part of the kernels, kernels.<part>.o.
constexpr const char *kScratchFiles[] = {"kernels.so", "lld.log"};
/// The most parts the kernels are compiled in, side by side.
constexpr unsigned kMaxParts = 8;

std::string partObjectName(unsigned part) {
  return "kernels." + std::to_string(part) + ".o";
}

/// Removes the scratch directories of this user's compiles whose process
/// is gone (killed with SIGKILL, which no handler sees): only the files a
/// compile writes, then the directory if that emptied it.
void sweepScratch() {
  llvm::SmallString<128> tmp;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(tmp, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int pid = 0;
    if (!name.consume_front(kScratchPrefix) ||
        name.split('-').first.getAsInteger(10, pid) || pid <= 0 ||
        ::kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    struct stat st{};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::getuid())
      continue;
    std::vector<std::string> files(std::begin(kScratchFiles),
                                   std::end(kScratchFiles));
    for (unsigned part = 0; part < kMaxParts; ++part)
      files.push_back(partObjectName(part));
    for (const std::string &f : files)
      if (std::error_code ignored = llvm::sys::fs::remove(it->path() + "/" + f))
        continue;
    if (std::error_code ignored = llvm::sys::fs::remove(it->path()))
      continue;
  }
}

/// The temporary files of the host code: an object per part of the
/// kernels, the shared object and the linker's log, in a fresh directory.
struct Scratch {
  llvm::SmallString<128> dir;
  std::vector<std::string> objects;
  std::string shared, log;

  /// Makes the directory for `parts` objects. Returns what is wrong, or "".
  std::string create(unsigned parts) {
    sweepScratch();
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
            kScratchPrefix + llvm::Twine(::getpid()), dir))
      return "cannot make a temporary directory: " + ec.message();
    for (unsigned part = 0; part < parts; ++part)
      objects.push_back((dir + "/" + partObjectName(part)).str());
    shared = (dir + "/" + kScratchFiles[0]).str();
    log = (dir + "/" + kScratchFiles[1]).str();
    // An interrupted compile (Ctrl-C, SIGTERM) removes the files too
    // (LLVM's signal handlers remove only files: the empty directory
    // stays, and a SIGKILL leaves all: the next compile sweeps them).
    for (const std::string &f : files())
      llvm::sys::RemoveFileOnSignal(f);
    return "";
  }
  std::vector<std::string> files() const {
    std::vector<std::string> all = objects;
    all.push_back(shared);
    all.push_back(log);
    return all;
  }
  /// Removes the files and the directory.
  void cleanup() const {
    // Best effort: a temporary file left behind is no error.
    for (const std::string &f : files()) {
      llvm::sys::DontRemoveFileOnSignal(f);
      if (std::error_code ignored = llvm::sys::fs::remove(f))
        continue;
    }
    if (std::error_code ignored = llvm::sys::fs::remove(dir))
      return;
  }
};

/// Compiles `module` by `machine` into the object file `object`. Returns
/// what is wrong, or "".
std::string emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                       const std::string &object, const std::string &triple) {
  std::error_code ec;
  llvm::raw_fd_ostream os(object, ec);
  if (ec)
    return "cannot write " + object + ": " + ec.message();
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return "LLVM cannot emit an object file for " + triple;
  pm.run(module);
  // A full disk: an error here, not LLVM's fatal error when `os` closes.
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error();
    return "cannot write " + object + ": " + why;
  }
  return "";
}

/// Links the scratch object into its shared object with lld and reads it
/// into `so`. Returns what is wrong (the linker's log when it fails), or "".
std::string linkSharedObject(const Scratch &scratch,
                             std::unique_ptr<llvm::MemoryBuffer> &so) {
  std::string lld = findLinker();
  if (lld.empty())
    return "no linker: install lld-19 (ld.lld links the host code)";
  llvm::SmallVector<llvm::StringRef> args{
      lld,   "-shared", "--build-id=none",     "-z", "noexecstack", "-z",
      "now", "-soname", LOCUS_ABI_HOST_SONAME, "-o", scratch.shared};
  args.append(scratch.objects.begin(), scratch.objects.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, scratch.log,
                                                scratch.log};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(lld, args, std::nullopt, redirects, 0, 0,
                                     &message);
  auto file = llvm::MemoryBuffer::getFile(scratch.shared);
  if (rc != 0 || !file) {
    auto text = llvm::MemoryBuffer::getFile(scratch.log);
    std::string why = text ? (*text)->getBuffer().str() : message;
    return "linking the host code failed: " + why;
  }
  so = std::move(*file);
  return "";
}

/// The kernels in parts of about 16 functions, at most kMaxParts, each
/// as bitcode to be parsed again in a context of its own (one per thread).
/// The count depends on the module alone, so an artifact is the same bytes
/// on any machine.
std::vector<std::string> splitIntoParts(llvm::Module &module) {
  size_t functions = llvm::count_if(
      module, [](const llvm::Function &f) { return !f.isDeclaration(); });
  unsigned parts =
      static_cast<unsigned>(std::clamp<size_t>(functions / 16, 1, kMaxParts));
  std::vector<std::string> out;
  auto keep = [&](const llvm::Module &part) {
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    llvm::WriteBitcodeToFile(part, os);
    os.flush();
    out.push_back(std::move(bytes));
  };
  if (parts == 1)
    keep(module);
  else
    llvm::SplitModule(module, parts,
                      [&](std::unique_ptr<llvm::Module> part) { keep(*part); });
  return out;
}

/// Optimises one part for `cpu` and compiles it into the object file
/// `object`. Returns what is wrong, or "".
std::string compilePart(llvm::StringRef bitcode, const std::string &cpu,
                        const std::string &triple, const std::string &object) {
  llvm::LLVMContext context;
  auto parsed =
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "part"), context);
  if (!parsed)
    return "a part of the kernels does not parse: " +
           llvm::toString(parsed.takeError());
  llvm::Module &module = **parsed;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::string error = makeTargetMachine(triple, cpu, machine);
  if (!error.empty())
    return error;
  module.setDataLayout(machine->createDataLayout());
  module.setTargetTriple(triple);
  if (llvm::Error e =
          mlir::makeOptimizingTransformer(3, 0, machine.get())(&module))
    return "LLVM's optimiser failed: " + llvm::toString(std::move(e));
  return emitObject(module, *machine, object, triple);
}

/// Compiles parts[i] into objects[i], side by side on up to one thread
/// per core. Returns the first part's error, or "".
std::string compileParts(const std::vector<std::string> &parts,
                         const std::string &cpu, const std::string &triple,
                         const std::vector<std::string> &objects) {
  std::vector<std::string> errors(parts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < parts.size(); i = next++)
      errors[i] = compilePart(parts[i], cpu, triple, objects[i]);
  };
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  size_t helpers = std::min<size_t>(parts.size(), cores) - 1;
  std::vector<std::thread> threads;
  threads.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t)
    threads.emplace_back(work);
  work();
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty())
      return e;
  return "";
}

/// The artifact's sections (placed graph, plan, host code `so`, metadata,
/// any PTX and any state values); they point into `result`, `so`, `state`
/// and `metadata`, which must outlive them.
std::vector<locus_section_t> sectionsOf(const PipelineResult &result,
                                        const HostCode &code,
                                        const std::string &state,
                                        std::string &metadata) {
  metadata =
      "locus-artifact/1\ngraph=" + result.graphName + "\ncpu=" + code.cpu +
      "\ncpu_features=" + code.features +
      "\nkernels=" + std::to_string(result.summary.kernelFunctions.size()) +
      "\ncuda_kernels=" + std::to_string(result.cudaFunctions.size()) + "\n";
  std::vector<locus_section_t> sections = {
      {LOCUS_SECTION_GRAPH, result.placedGraph.data(),
       result.placedGraph.size()},
      {LOCUS_SECTION_PLAN, result.plan.data(), result.plan.size()},
      {LOCUS_SECTION_HOST_CODE, code.object.data(), code.object.size()},
      {LOCUS_SECTION_METADATA, metadata.data(), metadata.size()},
  };
  if (!result.cudaKernels.empty())
    sections.push_back({LOCUS_SECTION_PTX, result.cudaKernels.data(),
                        result.cudaKernels.size()});
  if (!state.empty())
    sections.push_back({LOCUS_SECTION_STATE, state.data(), state.size()});
  return sections;
}

/// The runtime's message of `status` (freed), or "" for none.
std::string messageOf(locus_status_t status) {
  if (!status)
    return "";
  std::string why = locus_status_message(status);
  locus_status_free(status);
  return why;
}

} // namespace

std::string locus::compileHostCode(const PipelineResult &result,
                                   const std::string &cpu, HostCode &code) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = loadKernels(result, context);
  code.cpu = cpu;
  code.features = requiredFeatures(cpu);
  addCpuGlobals(*module, cpu, code.features);
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::unique_ptr<llvm::TargetMachine> machine;
  std::string error = makeTargetMachine(triple, cpu, machine);
  if (!error.empty())
    return error;
  std::vector<std::string> parts = splitIntoParts(*module);
  Scratch scratch;
  error = scratch.create(static_cast<unsigned>(parts.size()));
  if (!error.empty())
    return error;
  error = compileParts(parts, cpu, triple, scratch.objects);
  std::unique_ptr<llvm::MemoryBuffer> so;
  if (error.empty())
    error = linkSharedObject(scratch, so);
  if (error.empty())
    code.object = so->getBuffer().str();
  scratch.cleanup();
  return error;
}

std::string locus::writeArtifact(const PipelineResult &result,
                                 const HostCode &code, const std::string &path,
                                 const std::string &state,
                                 const std::string &signKey) {
  std::string metadata;
  std::vector<locus_section_t> sections =
      sectionsOf(result, code, state, metadata);
  return messageOf(signKey.empty()
                       ? locus_artifact_write(path.c_str(), locus_host_arch(),
                                              sections.data(), sections.size())
                       : locus_artifact_write_signed(
                             path.c_str(), locus_host_arch(), sections.data(),
                             sections.size(), signKey.c_str()));
}

std::string locus::artifactBytes(const PipelineResult &result,
                                 const HostCode &code, std::string &bytes) {
  std::string metadata;
  std::vector<locus_section_t> sections =
      sectionsOf(result, code, "", metadata);
  void *data = nullptr;
  size_t size = 0;
  std::string error = messageOf(locus_artifact_write_memory(
      locus_host_arch(), sections.data(), sections.size(), &data, &size));
  if (error.empty())
    bytes.assign(static_cast<const char *>(data), size);
  locus_free(data);
  return error;
}

bool locus::writePtxFiles(const std::string &section, const std::string &dir,
                          std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  size_t at = 0;
  auto u32 = [&](uint32_t &v) {
    if (section.size() - at < 4)
      return false;
    v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<uint32_t>(static_cast<uint8_t>(section[at + i]))
           << (8 * i);
    at += 4;
    return true;
  };
  auto str = [&](std::string &s) {
    uint32_t n;
    if (!u32(n) || section.size() - at < n)
      return false;
    s = section.substr(at, n);
    at += n;
    return true;
  };
  uint32_t magic = 0, version = 0, count = 0;
  if (section.empty())
    return true;
  if (!u32(magic) || !u32(version) || !u32(count) || magic != LOCUS_PTX_MAGIC ||
      version != LOCUS_PTX_VERSION) {
    error = "not a PTX section";
    return false;
  }
  for (uint32_t i = 0; i < count; ++i) {
    std::string name, ptx;
    if (!str(name) || !str(ptx)) {
      error = "truncated PTX section";
      return false;
    }
    if (!ptx.empty() && ptx.back() == '\0')
      ptx.pop_back();
    // Kernels of one function share its name (one module each).
    std::string path = dir;
    path += "/" + name;
    path += "." + std::to_string(i) + ".ptx";
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      error = "cannot write " + path + ": " + ec.message();
      return false;
    }
    os << ptx;
    os.close();
    if (os.has_error()) {
      error = "cannot write " + path + ": " + os.error().message();
      os.clear_error();
      return false;
    }
  }
  return true;
}
