//===- Tensors.cpp - ONNX tensors as constants of the importer ------------===//
//
// TensorProto data (initializers, Constant nodes' values) read into Consts:
// inline data of any of the types Locus reads, or external data from a
// regular file in the model's folder, checked against the tensor's size.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "locus/half.hpp"

#include "locus/locus_runtime.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace locus::onnx_import {

namespace {

/// Little-endian element `k` of `bytes` as T.
template <typename T> T rawAt(const std::string &bytes, size_t k) {
  T v;
  std::memcpy(&v, bytes.data() + k * sizeof(T), sizeof(T));
  return v;
}

/// Bytes of one element of an ONNX data type as raw data; 0 for types
/// Locus does not read.
size_t rawWidth(int dataType) {
  switch (dataType) {
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
    return 8;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

/// A path that realpath() resolved (empty when it cannot be), freed here.
std::string resolvedPath(const std::string &path) {
  std::unique_ptr<char, decltype(&std::free)> r(realpath(path.c_str(), nullptr),
                                                &std::free);
  return r ? std::string(r.get()) : std::string();
}

/// Closes a file descriptor when it goes out of scope.
struct FileCloser {
  int fd;
  ~FileCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

int64_t Importer::byteCount(const TensorProto &t, const std::string &key,
                            const std::string &value) const {
  int64_t v = -1;
  auto [end, ec] =
      std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() ||
      end != value.data() + value.size() || v < 0)
    fail("initializer '" + t.name() + "': its external data " + key + " '" +
         value + "' is not a byte count");
  return v;
}

std::string Importer::externalBytes(const TensorProto &t, size_t want) const {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : t.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = byteCount(t, "offset", entry.value());
    else if (entry.key() == "length")
      length = byteCount(t, "length", entry.value());
  }
  const std::string what = "initializer '" + t.name() + "': its external data";
  if (location.empty() || location[0] == '/' ||
      location.find("..") != std::string::npos ||
      location.find('\0') != std::string::npos)
    fail("initializer '" + t.name() + "' has external data at '" + location +
         "': it must be a file beside the model");
  size_t slash = path_.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash);
  std::string file = dir + "/" + location;
  // Symbolic links resolved: the file must still lie in the model's folder.
  std::string folder = resolvedPath(dir), real = resolvedPath(file);
  if (folder.empty() || real.empty())
    fail(what + " " + file + " cannot be opened: " + std::strerror(errno));
  if (real.compare(0, folder.size() + 1, folder + "/") != 0)
    fail(what + " " + file + " is " + real + ", outside the model's folder " +
         folder +
         " (through a symbolic link); Locus reads only files in that folder");
  // Non-blocking: a FIFO must not hang the import; then a regular file only.
  FileCloser f{
      ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)};
  struct stat st{};
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0)
    fail(what + " " + file + " cannot be opened: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(what + " " + file +
         " is not a regular file (a folder, a FIFO or a device)");
  const int64_t size = st.st_size;
  if (offset > size || (length >= 0 && length > size - offset))
    fail(what + " lies outside " + file + " (" + std::to_string(size) +
         " bytes; offset " + std::to_string(offset) + ", length " +
         std::to_string(length) + ")");
  if (length < 0)
    length = size - offset;
  if (static_cast<uint64_t>(length) != want)
    fail(what + " in " + file + " has " + std::to_string(length) +
         " bytes from offset " + std::to_string(offset) +
         "; the tensor takes " + std::to_string(want));
  std::string bytes(want, '\0');
  for (size_t done = 0; done < want;) {
    ssize_t n = ::pread(f.fd, bytes.data() + done, want - done,
                        static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string message = what;
      message += " " + file + " could not be read: ";
      message += n < 0 ? std::strerror(errno) : "it ended early";
      fail(message);
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

Const Importer::tensorConst(const TensorProto &t) const {
  Const c;
  for (int64_t d : t.dims()) {
    if (d < 0)
      fail("tensor '" + t.name() + "' has a negative dimension");
    c.shape.push_back(d);
  }
  int64_t n = 1;
  for (int64_t d : c.shape)
    n = d && n > std::numeric_limits<int32_t>::max() / d ? -1 : n * d;
  if (n < 0)
    fail("tensor '" + t.name() + "' is too large");
  if (t.data_location() == TensorProto::EXTERNAL && !rawWidth(t.data_type()))
    fail("initializer '" + t.name() + "' has external data of ONNX data type " +
         std::to_string(t.data_type()) + ", which Locus does not read");
  std::string raw =
      t.data_location() == TensorProto::EXTERNAL
          ? externalBytes(t, static_cast<size_t>(n) * rawWidth(t.data_type()))
          : t.raw_data();
  bool useRaw = t.has_raw_data() || t.data_location() == TensorProto::EXTERNAL;
  auto size = static_cast<size_t>(n);
  auto need = [&](size_t bytes, int given) {
    if (useRaw ? raw.size() != size * bytes : given != n)
      fail("tensor '" + t.name() + "' of shape " + shapeText(c.shape) +
           " holds the wrong amount of data");
  };
  switch (t.data_type()) {
  case TensorProto::FLOAT:
    need(4, t.float_data_size());
    for (size_t k = 0; k < size; ++k)
      c.f.push_back(useRaw ? rawAt<float>(raw, k) : t.float_data(int(k)));
    break;
  case TensorProto::DOUBLE:
    need(8, t.double_data_size());
    for (size_t k = 0; k < size; ++k)
      c.f.push_back(static_cast<float>(useRaw ? rawAt<double>(raw, k)
                                              : t.double_data(int(k))));
    break;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16: {
    // The values as f32 (exact); the dtype says to cast them back when
    // they are used (an initializer stays f32 state: master weights).
    bool brain = t.data_type() == TensorProto::BFLOAT16;
    c.dtype = brain ? DType::bf16 : DType::f16;
    need(2, t.int32_data_size());
    for (size_t k = 0; k < size; ++k) {
      auto bits = useRaw ? rawAt<uint16_t>(raw, k)
                         : static_cast<uint16_t>(t.int32_data(int(k)));
      c.f.push_back(brain ? half::fromBf16Bits(bits) : half::fromF16Bits(bits));
    }
    break;
  }
  case TensorProto::INT64:
    c.dtype = DType::i64;
    need(8, t.int64_data_size());
    for (size_t k = 0; k < size; ++k)
      c.i.push_back(useRaw ? rawAt<int64_t>(raw, k) : t.int64_data(int(k)));
    break;
  case TensorProto::INT32:
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::INT16:
  case TensorProto::BOOL: {
    bool boolean = t.data_type() == TensorProto::BOOL;
    c.dtype = boolean                               ? DType::i1
              : t.data_type() == TensorProto::INT32 ? DType::i32
                                                    : DType::i64;
    size_t width = t.data_type() == TensorProto::INT32   ? 4
                   : t.data_type() == TensorProto::INT16 ? 2
                                                         : 1;
    need(width, t.int32_data_size());
    for (size_t k = 0; k < size; ++k) {
      int64_t v = 0;
      if (!useRaw)
        v = t.int32_data(int(k));
      else if (width == 4)
        v = rawAt<int32_t>(raw, k);
      else if (width == 2)
        v = rawAt<int16_t>(raw, k);
      else if (t.data_type() == TensorProto::INT8)
        v = int64_t(rawAt<uint8_t>(raw, k)) -
            (rawAt<uint8_t>(raw, k) >= 128 ? 256 : 0); // two's complement
      else
        v = rawAt<uint8_t>(raw, k);
      c.i.push_back(boolean ? v != 0 : v);
    }
    break;
  }
  default:
    fail("tensor '" + t.name() + "' has ONNX data type " +
         std::to_string(t.data_type()) +
         ", which Locus does not read (float, double, float16, bfloat16, "
         "int64, int32, int16, int8, uint8 and bool)");
  }
  return c;
}

} // namespace locus::onnx_import
