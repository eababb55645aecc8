// artifact_fuzzer.cpp - libFuzzer over the runtime's loader and executor.
//
// Each fuzz input is an artifact. Its checksum is made good before it is
// loaded, as an attacker holding the file can, so that every mutation
// reaches the checks behind the checksum: the container, the plan, the
// state section, each kernel's signature and the host code's ELF checks.
//
// What runs depends on the host code, because an artifact is code:
// - host code byte for byte that of a genuine artifact (one of the seed
//   corpus, named by LOCUS_FUZZ_GENUINE, a directory): the model is loaded
//   and run once, its inputs filled from the fuzz bytes (labels and indices
//   included). The claim under test: no plan, state or input makes the
//   runtime or genuine kernels touch memory out of bounds (ASan and UBSan
//   watch).
// - other host code: its ELF checks and dlopen only (the system loader must
//   never crash on what the checks let through); it is never run.

#include "host_code.h"
#include "locus/abi.h"
#include "locus/locus_runtime.h"
#include "plan.h"

#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

/// FNV-1a over the artifact with its checksum field as zeros, written in.
void fixChecksum(std::vector<uint8_t> &bytes) {
  if (bytes.size() < 64)
    return;
  std::memset(bytes.data() + 32, 0, 8);
  uint64_t h = 0xCBF29CE484222325ULL;
  for (uint8_t c : bytes)
    h = (h ^ c) * 0x100000001B3ULL;
  for (int i = 0; i < 8; ++i)
    bytes[32 + i] = static_cast<uint8_t>(h >> (8 * i));
}

std::string section(const locus_artifact_t *artifact,
                    locus_section_kind_t kind) {
  const void *data = nullptr;
  size_t size = 0;
  if (locus_status_t s = locus_artifact_section(artifact, kind, &data, &size)) {
    locus_status_free(s);
    return "";
  }
  return std::string(static_cast<const char *>(data), size);
}

/// The host code of every artifact in LOCUS_FUZZ_GENUINE.
const std::set<std::string> &genuineCode() {
  static const std::set<std::string> codes = [] {
    std::set<std::string> out;
    const char *dir = std::getenv("LOCUS_FUZZ_GENUINE");
    DIR *d = dir ? opendir(dir) : nullptr;
    if (!d)
      return out;
    while (dirent *e = readdir(d)) {
      if (e->d_type != DT_REG)
        continue;
      std::ifstream in(std::string(dir) + "/" + e->d_name, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), {});
      locus_artifact_t *artifact = nullptr;
      if (locus_status_t s = locus_artifact_load_memory(
              bytes.data(), bytes.size(), &artifact)) {
        locus_status_free(s);
        continue;
      }
      std::string code = section(artifact, LOCUS_SECTION_HOST_CODE);
      if (!code.empty())
        out.insert(code);
      locus_artifact_release(artifact);
    }
    closedir(d);
    return out;
  }();
  return codes;
}

/// Loads and runs a model whose host code is genuine; inputs from `fill`.
void loadAndRun(const std::vector<uint8_t> &bytes, const uint8_t *fill,
                size_t fillSize) {
  // A service loading untrusted files bounds what a load may allocate.
  locus_model_options_t options{};
  options.max_bytes = uint64_t{1} << 28;
  locus_model_t *model = nullptr;
  if (locus_status_t s = locus_model_load_memory(bytes.data(), bytes.size(),
                                                 &options, &model)) {
    locus_status_free(s);
    return;
  }
  locus_context_t *context = nullptr;
  if (locus_status_t s = locus_context_create(model, &context)) {
    locus_status_free(s);
    locus_model_release(model);
    return;
  }
  size_t inputs = locus_model_tensor_count(model, LOCUS_TENSOR_INPUT);
  bool ready = true;
  for (size_t i = 0; i < inputs && ready; ++i) {
    locus_tensor_info_t info{};
    if (locus_status_t s =
            locus_model_tensor_info(model, LOCUS_TENSOR_INPUT, i, &info)) {
      locus_status_free(s);
      ready = false;
      break;
    }
    if (info.byte_size > (64u << 20)) {
      ready = false;
      break;
    }
    std::vector<uint8_t> data(info.byte_size);
    for (size_t b = 0; b < data.size(); ++b)
      data[b] = fillSize ? fill[b % fillSize] : 0;
    if (locus_status_t s = locus_context_set_input(context, info.name,
                                                   data.data(), data.size())) {
      locus_status_free(s);
      ready = false;
    }
  }
  if (ready)
    locus_status_free(locus_context_run(context));
  locus_context_release(context);
  locus_model_release(model);
}

/// The ELF checks and dlopen of host code that is not genuine; never run.
void loadCodeOnly(const locus_artifact_t *artifact) {
  std::string plan = section(artifact, LOCUS_SECTION_PLAN);
  std::string code = section(artifact, LOCUS_SECTION_HOST_CODE);
  locus::rt::Plan parsed;
  std::vector<std::string> imports{LOCUS_ABI_SGEMM, LOCUS_ABI_MEMREF_COPY,
                                   LOCUS_ABI_PARALLEL_FOR};
  if (locus_status_t s = locus::rt::readPlan(plan.data(), plan.size(), parsed))
    locus_status_free(s);
  else
    imports = parsed.imports;
  std::unique_ptr<locus::rt::HostCode> loaded;
  std::string note;
  if (locus_status_t s = locus::rt::HostCode::load(code.data(), code.size(),
                                                   imports, loaded, note))
    locus_status_free(s);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  fixChecksum(bytes);
  locus_artifact_t *artifact = nullptr;
  if (locus_status_t s =
          locus_artifact_load_memory(bytes.data(), bytes.size(), &artifact)) {
    locus_status_free(s);
    return 0;
  }
  bool genuine =
      genuineCode().count(section(artifact, LOCUS_SECTION_HOST_CODE)) != 0;
  if (!genuine)
    loadCodeOnly(artifact);
  locus_artifact_release(artifact);
  if (genuine) {
    // Input values from the artifact's own bytes: varied, and the same
    // for the same input, as libFuzzer wants.
    size_t skip = size > 4096 ? size - 4096 : 0;
    loadAndRun(bytes, data + skip, size - skip);
  }
  return 0;
}
