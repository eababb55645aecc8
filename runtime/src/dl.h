// dl.h - the runtime's optional libraries (the CUDA driver, cuBLAS, cuDNN,
// libsodium, OpenBLAS, oneDNN, libgomp) are found with dlopen, never linked,
// so a binary starts where they are absent; this opens them and binds their
// entry points, the one way every library is loaded.
#ifndef LOCUS_RUNTIME_DL_H
#define LOCUS_RUNTIME_DL_H

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace locus::rt {

/// A library dlopen opened (`handle` non-null, `name` the candidate that
/// opened), or why none did (`why`: the loader's reason for the last
/// candidate, or its name when the loader gives none).
struct Library {
  void *handle = nullptr;
  std::string name;
  std::string why;
};

/// The first of `candidates` (names the loader searches for, or paths)
/// that opens with `flags`.
inline Library openFirst(std::initializer_list<const char *> candidates,
                         int flags = RTLD_NOW | RTLD_LOCAL) {
  Library library;
  for (const char *candidate : candidates) {
    if (void *handle = dlopen(candidate, flags)) {
      library.handle = handle;
      library.name = candidate;
      library.why.clear();
      return library;
    }
    const char *error = dlerror();
    library.why = error ? error : candidate;
  }
  return library;
}

/// Sets `fn` to the entry point `name` of the library `handle` (dlopen's);
/// false, and `fn` null, when the library has none.
template <typename F> bool bindSymbol(void *handle, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

} // namespace locus::rt

#endif
