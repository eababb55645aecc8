// dl.h - the runtime's optional libraries (the CUDA driver, cuBLAS, cuDNN,
// NCCL, libsodium, OpenBLAS, oneDNN, libgomp) are found with dlopen, never
// linked, so a binary starts where they are absent; this opens them and binds
// their entry points, the one way every library is loaded.
#ifndef LOCUS_RUNTIME_DL_H
#define LOCUS_RUNTIME_DL_H

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace locus::rt {

/// A library dlopen opened (`handle` non-null, `name` the candidate that
/// opened), or why none did (`why`: the loader's reason for the first
/// candidate that exists but would not load, else for the first candidate,
/// the name a user installs; its name when the loader gives none).
struct Library {
  void *handle = nullptr;
  std::string name;
  std::string why;
};

inline const char *cName(const char *name) { return name; }
inline const char *cName(const std::string &name) { return name.c_str(); }

/// The first of `candidates` (names the loader searches for, or paths)
/// that opens with `flags`.
template <typename Names>
Library openFirstOf(const Names &candidates,
                    int flags = RTLD_NOW | RTLD_LOCAL) {
  Library library;
  bool missingOnly = true; // every reason so far: no such file
  for (const auto &candidate : candidates) {
    const char *name = cName(candidate);
    if (void *handle = dlopen(name, flags)) {
      library.handle = handle;
      library.name = name;
      library.why.clear();
      return library;
    }
    const char *error = dlerror();
    std::string why = error ? error : name;
    bool missing = why.find("No such file") != std::string::npos;
    if (library.why.empty() || (missingOnly && !missing))
      library.why = why;
    missingOnly = missingOnly && missing;
  }
  return library;
}

inline Library openFirst(std::initializer_list<const char *> candidates,
                         int flags = RTLD_NOW | RTLD_LOCAL) {
  return openFirstOf(candidates, flags);
}

inline Library openFirst(const std::vector<std::string> &candidates,
                         int flags = RTLD_NOW | RTLD_LOCAL) {
  return openFirstOf(candidates, flags);
}

/// The file the library holding `symbol` (an address dlsym gave) was
/// loaded from, or "" when the loader does not say.
inline std::string libraryFileOf(void *symbol) {
  Dl_info info{};
  if (symbol && dladdr(symbol, &info) && info.dli_fname)
    return info.dli_fname;
  return "";
}

/// Where pip's NVIDIA wheels (what PyTorch installs) put `file` of
/// `package` ("cudnn", "nccl"): nvidia/<package>/lib/<file> under the
/// site-packages and dist-packages of the active virtual environment or
/// Conda prefix, /usr/local/lib, /usr/lib, /opt/*/lib, /opt/*/.venv/lib and
/// ~/.local/lib, in that order; those that exist.
inline std::vector<std::string> pythonWheelFiles(const char *package,
                                                 const char *file) {
  std::vector<std::string> prefixes{"/usr/local/lib", "/usr/lib", "/opt/*/lib",
                                    "/opt/*/.venv/lib"};
  for (const char *var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *root = std::getenv(var); root && *root)
      prefixes.insert(prefixes.begin(), std::string(root) + "/lib");
  if (const char *home = std::getenv("HOME"); home && *home)
    prefixes.push_back(std::string(home) + "/.local/lib");
  std::vector<std::string> paths;
  for (const std::string &prefix : prefixes)
    for (const char *packages : {"site-packages", "dist-packages"}) {
      std::string pattern = prefix + "/python3*/" + packages + "/nvidia/" +
                            package + "/lib/" + file;
      glob_t found{};
      if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
        for (size_t i = 0; i < found.gl_pathc; ++i)
          paths.emplace_back(found.gl_pathv[i]);
      globfree(&found);
    }
  return paths;
}

/// An NVIDIA library PyTorch may also ship (cuDNN, NCCL): `env` alone when
/// set (the value of the variable `envName`, a file); else `soname` if the
/// process has it loaded already (two copies in one process would not
/// agree), the loader's search path, the CUDA toolkit's lib64, and pip's
/// nvidia/`package`/lib wheels. The library opened, or why none did.
inline Library openNvidiaLibrary(const char *env, const char *envName,
                                 const char *soname, const char *package,
                                 std::string &why) {
  if (env && *env) {
    Library named = openFirst({env});
    if (!named.handle)
      why = std::string(envName) + ": " + named.why;
    return named;
  }
  Library loaded = openFirst({soname}, RTLD_NOW | RTLD_NOLOAD);
  if (loaded.handle)
    return loaded;
  std::vector<std::string> paths{soname, std::string("/usr/local/cuda/lib64/") +
                                             soname};
  for (std::string &wheel : pythonWheelFiles(package, soname))
    paths.push_back(std::move(wheel));
  Library found = openFirst(paths);
  if (!found.handle)
    why = found.why +
          "; nor under /usr/local/cuda/lib64 or a Python's "
          "nvidia/" +
          package + "/lib";
  return found;
}

/// "9.14.0" of a version code major * 10000 + minor * 100 + patch (cuDNN's
/// and NCCL's).
inline std::string versionCodeText(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) +
         "." + std::to_string(v % 100);
}

/// Sets `fn` to the entry point `name` of the library `handle` (dlopen's);
/// false, and `fn` null, when the library has none.
template <typename F> bool bindSymbol(void *handle, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

} // namespace locus::rt

#endif
