// libFuzzer over the ONNX importer (models users download): each input is
// written as model.onnx into a folder of this process's own that also holds
// what external-data locations may name (a data file, a symbolic link out
// of the folder, a FIFO, a subfolder), then imported. Any crash, hang,
// sanitizer report or exception other than locus::Error is a finding; a
// refusal with a message is fine. The importer (compiler/lib/Import) is
// compiled into this fuzzer with coverage; the frontend it records through
// is not.

#include "locus/Import/Onnx.h"
#include "locus/locus.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

/// The folder, made once: w.bin (256 bytes of floats 0..63), link.bin ->
/// /etc/passwd, fifo (a FIFO), dir/ (a folder), deep/w.bin.
const fs::path &folder() {
  static const fs::path made = [] {
    fs::path root = fs::temp_directory_path() /
                    ("locus_onnx_fuzz_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "dir");
    fs::create_directories(root / "deep");
    for (const char *name : {"w.bin", "deep/w.bin"}) {
      std::ofstream data(root / name, std::ios::binary);
      for (int i = 0; i < 64; ++i) {
        float v = static_cast<float>(i);
        data.write(reinterpret_cast<const char *>(&v), sizeof v);
      }
    }
    fs::create_symlink("/etc/passwd", root / "link.bin");
    ::mkfifo((root / "fifo").c_str(), 0600);
    std::atexit([] { fs::remove_all(folder()); });
    return root;
  }();
  return made;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fs::path model = folder() / "model.onnx";
  {
    std::ofstream out(model, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data),
              static_cast<std::streamsize>(size));
  }
  try {
    locus::Graph g = locus::importOnnx(model.string());
    (void)g.numOps();
    // NOLINTNEXTLINE(bugprone-empty-catch): a refusal is a fine outcome
  } catch (const locus::Error &) {
  }
  return 0;
}
