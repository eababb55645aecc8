// dl.h - the runtime's optional libraries (the CUDA driver, cuBLAS, cuDNN,
// libsodium, OpenBLAS, oneDNN) are found with dlopen, never linked, so a
// binary starts where they are absent; this binds their entry points.
#ifndef LOCUS_RUNTIME_DL_H
#define LOCUS_RUNTIME_DL_H

#include <dlfcn.h>

namespace locus::rt {

/// Sets `fn` to the entry point `name` of the library `handle` (dlopen's);
/// false, and `fn` null, when the library has none.
template <typename F> bool bindSymbol(void *handle, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

} // namespace locus::rt

#endif
