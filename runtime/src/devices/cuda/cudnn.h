// cudnn.h - convolutions on a CUDA device through cuDNN 9, loaded with
// dlopen: a runtime without cuDNN still starts, and the launchers run the
// generated kernels instead (locus_cuda_dnn_ready says which).
#ifndef LOCUS_RUNTIME_CUDNN_H
#define LOCUS_RUNTIME_CUDNN_H

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "locus/abi.h"

namespace locus::rt::cudnn {

struct Library;
struct LibraryDeleter {
  void operator()(Library *library) const;
};
using LibraryPtr = std::unique_ptr<Library, LibraryDeleter>;

/// Where cuDNN is looked for, in order: `env` (LOCUS_CUDNN, a library
/// file) alone when set; else a libcudnn.so.9 already in the process, the
/// loader's search path, the CUDA toolkit's lib64, and the `nvidia/cudnn/lib`
/// folder of a pip-installed PyTorch under the usual Python prefixes.
/// Loads the first that opens and has every entry point used here (the
/// library stays loaded); null, with `why`, when none does.
LibraryPtr load(const char *env, std::string &why);

/// cuDNN as this process found it (load(getenv("LOCUS_CUDNN")), once);
/// null when absent, and `why` says why.
const Library *library(std::string *why = nullptr);

/// "cuDNN 9.19.0 (<path>)", or "no cuDNN (<why>)".
std::string describe(const Library *library, const std::string &why);
/// describe() of library(): for the model report.
std::string describe();

/// The key of a convolution's plan: its kind and its parameters.
using Key = std::array<int64_t, LOCUS_CONV_PARAM_COUNT + 1>;

/// Memory for cuDNN's workspace, stream-ordered on the compute stream.
struct Workspace {
  std::function<void *(size_t)> alloc;
  std::function<void(void *)> free;
};

/// The convolutions of one device: a cuDNN handle (made on first use) and
/// a plan per shape (descriptors and the algorithm, chosen once).
class Convolutions {
public:
  Convolutions() = default;
  Convolutions(const Convolutions &) = delete;
  Convolutions &operator=(const Convolutions &) = delete;
  ~Convolutions();

  /// Whether convolutions can run through cuDNN on the current context;
  /// makes the handle on first call. `why` says why not.
  bool ready(std::string &why);

  /// Runs convolution `kind` (locus_conv_kind_e) with `params`
  /// (locus_conv_param_e) on `stream`; "" on success, else what failed.
  std::string run(void *stream, int64_t kind, const int64_t *params,
                  uintptr_t a, uintptr_t b, uintptr_t bias, uintptr_t y,
                  const Workspace &workspace);

  struct Plan;

private:
  std::string plan(const Key &key, Plan *&out);
  /// Ranks or times the algorithms of the convolution `key` names and
  /// takes one (with LOCUS_CONV_TF32 in its flags, the math cuDNN reports
  /// may be kept).
  std::string chooseAlgorithm(const Key &key, Plan &plan);

  void *handle_ = nullptr;
  bool tried_ = false;
  std::string why_;
  std::map<Key, Plan *> plans_;
};

} // namespace locus::rt::cudnn

#endif
