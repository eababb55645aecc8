//===- Onnx.cpp - ONNX models recorded as Locus graphs --------------------===//
//
// The model is parsed with ONNX's protobuf classes and checked with ONNX's
// checker (libonnx-dev), then recorded node by node through the frontend's
// public calls, each under an OriginScope naming the node. Values whose
// data is known while importing (initializers, Constant nodes and what is
// computed from them and from static shapes) are kept on the host as Const
// and folded; they become graph values only where a recorded op needs
// them.
//
//===----------------------------------------------------------------------===//

#include "locus/Import/Onnx.h"

#include "locus/locus_runtime.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

namespace locus {

namespace {

using onnx::NodeProto;
using onnx::TensorProto;

/// A fault of the model, in the importer's words; becomes a locus::Error
/// naming the file (and the node).
struct ImportError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) {
  throw ImportError{message};
}

int64_t product(const Shape &shape, size_t from = 0,
                size_t to = std::string::npos) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    n *= shape[i];
  return n;
}

std::string shapeText(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A value known while importing: f32 values in `f`, integers (i64, i32,
/// i1) in `i`.
struct Const {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  int64_t numel() const { return product(shape); }
  bool isFloat() const { return dtype == DType::f32; }
  double at(size_t k) const {
    return isFloat() ? f[k] : static_cast<double>(i[k]);
  }
  /// The values as integers (an f32 constant's truncated).
  std::vector<int64_t> ints() const {
    if (!isFloat())
      return i;
    std::vector<int64_t> out(f.size());
    std::transform(f.begin(), f.end(), out.begin(),
                   [](double v) { return static_cast<int64_t>(v); });
    return out;
  }
  static Const ofInts(DType dtype, Shape shape, std::vector<int64_t> values) {
    Const c;
    c.dtype = dtype;
    c.shape = std::move(shape);
    c.i = std::move(values);
    return c;
  }
  static Const ofFloats(Shape shape, std::vector<double> values) {
    Const c;
    c.shape = std::move(shape);
    c.f = std::move(values);
    return c;
  }
  /// Appends element `at` of `src` (of this one's dtype).
  void append(const Const &src, size_t at) {
    if (src.isFloat())
      f.push_back(src.f[at]);
    else
      i.push_back(src.i[at]);
  }
  /// Element k of a tensor of `shape`, broadcast from this one.
  size_t broadcastIndex(const Shape &to, size_t k) const {
    size_t index = 0, stride = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      size_t axis = shape.size() - 1 - d;
      size_t toAxis = to.size() - 1 - d;
      size_t toStride = static_cast<size_t>(product(to, toAxis + 1));
      size_t coord = (k / toStride) % static_cast<size_t>(to[toAxis]);
      if (shape[axis] != 1)
        index += coord * stride;
      stride *= static_cast<size_t>(shape[axis]);
    }
    return index;
  }
};

Shape broadcastShapes(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1;
    int64_t y = d < b.size() ? b[b.size() - 1 - d] : 1;
    if (x != y && x != 1 && y != 1)
      fail("shapes " + shapeText(a) + " and " + shapeText(b) +
           " do not broadcast");
    out[out.size() - 1 - d] = x == 1 ? y : x;
  }
  return out;
}

/// A named value of the ONNX graph.
struct Value {
  Tensor tensor;
  std::optional<Const> constant;
  bool initializer = false; // an f32 initializer becomes state
};

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  // A scalar has no axis: callers index the shape with the result.
  if (axis < -rank || axis >= rank)
    fail("axis " + std::to_string(axis) + " is out of range for rank " +
         std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// Little-endian element `k` of `bytes` as T.
template <typename T> T rawAt(const std::string &bytes, size_t k) {
  T v;
  std::memcpy(&v, bytes.data() + k * sizeof(T), sizeof(T));
  return v;
}

class Importer {
public:
  Importer(std::string path, const OnnxImportOptions &options)
      : path_(std::move(path)), options_(options) {}

  Graph run();
  /// The op_types the importer reads, sorted.
  static std::vector<std::string> supported() {
    std::vector<std::string> ops;
    for (const auto &entry : handlers())
      ops.push_back(entry.first);
    return ops;
  }

private:
  // ---- reading the model ------------------------------------------------
  void load();
  Const tensorConst(const TensorProto &t) const;
  /// The raw bytes of an initializer whose data lies in a file beside the
  /// model: `want` bytes, read from a regular file that resolves (symbolic
  /// links followed) inside the model's folder; everything else fails with
  /// the initializer's and the file's names.
  std::string externalBytes(const TensorProto &t, size_t want) const;
  /// An external_data offset or length: a decimal byte count, or a failure.
  int64_t byteCount(const TensorProto &t, const std::string &key,
                    const std::string &value) const;
  void checkSupported() const;
  void addInputs(Graph &g);
  void importNode(Graph &g, const NodeProto &node, size_t index);

  // ---- values -------------------------------------------------------------
  Value &value(const std::string &name);
  bool has(const NodeProto &n, int k) const {
    return k < n.input_size() && !n.input(k).empty();
  }
  const Const *constOf(const NodeProto &n, int k) {
    if (!has(n, k))
      return nullptr;
    std::optional<Const> &c = value(n.input(k)).constant;
    return c.has_value() ? &c.value() : nullptr;
  }
  const Const &needConst(const NodeProto &n, int k, const char *what);
  /// Input k as a graph value; `buffer`: an f32 initializer becomes a
  /// buffer rather than a parameter.
  Tensor in(const NodeProto &n, int k, bool buffer = false);
  Shape shapeOf(const NodeProto &n, int k);
  void out(const NodeProto &n, int k, Tensor t);
  void outConst(const NodeProto &n, int k, Const c);
  Tensor materialize(const std::string &name, Value &v, bool buffer);

  // ---- attributes ---------------------------------------------------------
  static const onnx::AttributeProto *attr(const NodeProto &n, const char *name);
  static int64_t attrInt(const NodeProto &n, const char *name, int64_t def);
  static double attrFloat(const NodeProto &n, const char *name, double def);
  static std::string attrString(const NodeProto &n, const char *name,
                                const std::string &def);
  static std::optional<std::vector<int64_t>> attrInts(const NodeProto &n,
                                                      const char *name);
  /// Integers from input k (when given) or else attribute `name`.
  std::optional<std::vector<int64_t>>
  intsFromInputOrAttr(const NodeProto &n, int k, const char *name);

  // ---- ops ----------------------------------------------------------------
  using Handler = std::function<void(Importer &, Graph &, const NodeProto &)>;
  static const std::map<std::string, Handler> &handlers();
  /// The activations beyond the unary ops, and Clip.
  static void addActivations(std::map<std::string, Handler> &t);

  void binary(const NodeProto &n, const std::string &op);
  void compare(const NodeProto &n, const std::string &op);
  void conv(const NodeProto &n);
  void pool(const NodeProto &n, bool max);
  void reshape(const NodeProto &n);
  void slice(const NodeProto &n);
  void gather(Graph &g, const NodeProto &n);
  void split(const NodeProto &n);
  void squeezeOrUnsqueeze(const NodeProto &n, bool squeeze);
  void reduce(const NodeProto &n, const std::string &op);
  void softmax(const NodeProto &n, bool log);
  void gemm(const NodeProto &n);
  void pad(const NodeProto &n);
  void concat(const NodeProto &n);
  void batchNorm(const NodeProto &n);
  void constantNode(const NodeProto &n);

  std::string path_;
  OnnxImportOptions options_;
  onnx::ModelProto model_;
  int opset_ = 0;
  std::map<std::string, Value> values_;
  Graph *graph_ = nullptr; // the graph run() records into
};

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

void Importer::load() {
  std::ifstream file(path_, std::ios::binary);
  if (!file)
    fail("cannot open the file: " + std::string(std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(file)), {});
  if (!model_.ParseFromString(bytes))
    fail("not an ONNX model (the protobuf does not parse)");
  try {
    onnx::checker::check_model(path_);
  } catch (const std::exception &e) {
    std::string why = e.what();
    while (!why.empty() && why.back() == '\n')
      why.pop_back();
    fail("ONNX's checker rejects the model: " + why);
  }
  for (const auto &opset : model_.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      opset_ = static_cast<int>(opset.version());
  if (opset_ < kOnnxMinOpset || opset_ > kOnnxMaxOpset)
    fail("the model uses opset " + std::to_string(opset_) +
         " of the default ONNX domain; Locus reads opsets " +
         std::to_string(kOnnxMinOpset) + " to " +
         std::to_string(kOnnxMaxOpset) +
         " (re-export with torch.onnx.export(..., opset_version=17))");
}

namespace {

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
    need(2, t.int32_data_size());
    for (size_t k = 0; k < size; ++k)
      c.f.push_back(locus_f16_to_f32(
          useRaw ? rawAt<uint16_t>(raw, k)
                 : static_cast<uint16_t>(t.int32_data(int(k)))));
    break;
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
         ", which Locus does not read (float, double, float16, int64, int32, "
         "int16, int8, uint8 and bool)");
  }
  return c;
}

void Importer::checkSupported() const {
  const auto &known = handlers();
  std::map<std::string, std::pair<int, std::vector<std::string>>> missing;
  const auto &nodes = model_.graph().node();
  for (int k = 0; k < nodes.size(); ++k) {
    const NodeProto &n = nodes[k];
    bool standard = n.domain().empty() || n.domain() == "ai.onnx";
    std::string type = standard ? n.op_type() : n.domain() + "::" + n.op_type();
    if (standard && known.count(n.op_type()))
      continue;
    auto &entry = missing[type];
    if (++entry.first <= 3)
      entry.second.push_back(n.name().empty() ? "#" + std::to_string(k)
                                              : "'" + n.name() + "'");
  }
  if (missing.empty())
    return;
  std::string message = "the model uses ops Locus does not support:";
  for (const auto &[type, entry] : missing) {
    message += "\n  " + type + " x" + std::to_string(entry.first) + " (";
    for (size_t k = 0; k < entry.second.size(); ++k)
      message += (k ? ", " : "") + entry.second[k];
    message += entry.first > 3 ? ", ...)" : ")";
  }
  message += "\n(docs/onnx.md lists the supported ops)";
  fail(message);
}

void Importer::addInputs(Graph &g) {
  std::set<std::string> initializers;
  for (const TensorProto &t : model_.graph().initializer()) {
    Value v;
    v.constant = tensorConst(t);
    v.initializer = true;
    values_[t.name()] = std::move(v);
    initializers.insert(t.name());
  }
  for (const auto &input : model_.graph().input()) {
    if (initializers.count(input.name()))
      continue; // an initializer listed as an input: its value is known
    const auto &type = input.type();
    if (!type.has_tensor_type())
      fail("input '" + input.name() + "' is not a tensor");
    DType dtype;
    switch (type.tensor_type().elem_type()) {
    case TensorProto::FLOAT:
      dtype = DType::f32;
      break;
    case TensorProto::INT64:
      dtype = DType::i64;
      break;
    case TensorProto::INT32:
      dtype = DType::i32;
      break;
    case TensorProto::BOOL:
      dtype = DType::i1;
      break;
    default:
      fail("input '" + input.name() + "' has ONNX element type " +
           std::to_string(type.tensor_type().elem_type()) +
           "; Locus inputs are float, int64, int32 or bool");
    }
    Shape shape;
    std::vector<std::string> symbolic;
    for (const auto &dim : type.tensor_type().shape().dim()) {
      if (dim.has_dim_value()) {
        shape.push_back(dim.dim_value());
      } else {
        symbolic.push_back(dim.has_dim_param() ? "'" + dim.dim_param() + "'"
                                               : "?");
        shape.push_back(-1);
      }
    }
    if (auto given = options_.shapes.find(input.name());
        given != options_.shapes.end()) {
      if (given->second.size() != shape.size())
        fail("--shape gives input '" + input.name() + "' rank " +
             std::to_string(given->second.size()) + "; the model's is " +
             std::to_string(shape.size()));
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] >= 0 && shape[d] != given->second[d])
          fail("--shape gives input '" + input.name() + "' dimension " +
               std::to_string(d) + " = " + std::to_string(given->second[d]) +
               "; the model fixes it at " + std::to_string(shape[d]));
      shape = given->second;
    } else if (!symbolic.empty()) {
      std::string dims;
      for (size_t k = 0; k < symbolic.size(); ++k)
        dims += (k ? ", " : "") + symbolic[k];
      fail("input '" + input.name() + "' has symbolic dimensions (" + dims +
           "): give its shape, e.g. --shape " + input.name() + "=" + [&] {
             std::string s;
             for (size_t d = 0; d < shape.size(); ++d)
               s += (d ? "x" : "") + (shape[d] < 0 ? std::string("1")
                                                   : std::to_string(shape[d]));
             return s;
           }());
    }
    Value v;
    detail::OriginScope origin(g, path_, "input '" + input.name() + "'");
    v.tensor = g.input(input.name(), shape, {.dtype = dtype});
    values_[input.name()] = std::move(v);
  }
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Value &Importer::value(const std::string &name) {
  auto it = values_.find(name);
  if (it == values_.end())
    fail("uses '" + name +
         "', which no input, initializer or earlier node "
         "makes");
  return it->second;
}

const Const &Importer::needConst(const NodeProto &n, int k, const char *what) {
  const Const *c = constOf(n, k);
  if (!c)
    fail(std::string(what) + " (input " + std::to_string(k) +
         ") must be known while importing (a constant, an initializer or "
         "computed from shapes); it is computed at run time here");
  return *c;
}

Tensor Importer::materialize(const std::string &name, Value &v, bool buffer) {
  if (!v.constant || !graph_)
    fail("'" + name + "' has no value"); // not reached: callers check
  const Const &c = *v.constant;
  Graph &g = *graph_;
  if (c.isFloat()) {
    std::vector<float> values(c.f.begin(), c.f.end());
    if (v.initializer)
      return buffer ? g.buffer(name, c.shape, std::move(values))
                    : g.parameter(name, c.shape, std::move(values));
    bool uniform = std::all_of(values.begin(), values.end(),
                               [&](float x) { return x == values.front(); });
    if (uniform && !values.empty())
      return g.full(c.shape, values.front());
    return g.constant(c.shape, values);
  }
  bool uniform =
      !c.i.empty() && std::all_of(c.i.begin(), c.i.end(),
                                  [&](int64_t x) { return x == c.i.front(); });
  if (uniform)
    return g.full(c.shape, static_cast<double>(c.i.front()), c.dtype);
  Tensor t = g.constantI64(c.shape, c.i);
  return c.dtype == DType::i64 ? t : cast(t, c.dtype);
}

Tensor Importer::in(const NodeProto &n, int k, bool buffer) {
  if (!has(n, k))
    fail("input " + std::to_string(k) + " is missing");
  const std::string &name = n.input(k);
  Value &v = value(name);
  if (!v.tensor)
    v.tensor = materialize(name, v, buffer);
  return v.tensor;
}

Shape Importer::shapeOf(const NodeProto &n, int k) {
  if (!has(n, k))
    fail("input " + std::to_string(k) + " is missing");
  Value &v = value(n.input(k));
  return v.constant ? v.constant->shape : v.tensor.shape();
}

void Importer::out(const NodeProto &n, int k, Tensor t) {
  if (k >= n.output_size() || n.output(k).empty())
    return;
  Value v;
  v.tensor = std::move(t);
  values_[n.output(k)] = std::move(v);
}

void Importer::outConst(const NodeProto &n, int k, Const c) {
  if (k >= n.output_size() || n.output(k).empty())
    return;
  Value v;
  v.constant = std::move(c);
  values_[n.output(k)] = std::move(v);
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *Importer::attr(const NodeProto &n,
                                           const char *name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t Importer::attrInt(const NodeProto &n, const char *name, int64_t def) {
  const auto *a = attr(n, name);
  return a ? a->i() : def;
}

double Importer::attrFloat(const NodeProto &n, const char *name, double def) {
  const auto *a = attr(n, name);
  return a ? a->f() : def;
}

std::string Importer::attrString(const NodeProto &n, const char *name,
                                 const std::string &def) {
  const auto *a = attr(n, name);
  return a ? a->s() : def;
}

std::optional<std::vector<int64_t>> Importer::attrInts(const NodeProto &n,
                                                       const char *name) {
  const auto *a = attr(n, name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<int64_t>>
Importer::intsFromInputOrAttr(const NodeProto &n, int k, const char *name) {
  if (has(n, k))
    return needConst(n, k, name).ints();
  return attrInts(n, name);
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

void Importer::binary(const NodeProto &n, const std::string &op) {
  const Const *a = constOf(n, 0), *b = constOf(n, 1);
  if (a && b && a->dtype == b->dtype) {
    Shape shape = broadcastShapes(a->shape, b->shape);
    Const c;
    c.dtype = a->dtype;
    c.shape = shape;
    for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k) {
      size_t ia = a->broadcastIndex(shape, k), ib = b->broadcastIndex(shape, k);
      if (a->isFloat()) {
        double x = a->f[ia], y = b->f[ib];
        c.f.push_back(static_cast<float>(op == "Add"   ? x + y
                                         : op == "Sub" ? x - y
                                         : op == "Mul" ? x * y
                                                       : x / y));
      } else {
        int64_t x = a->i[ia], y = b->i[ib];
        if (op == "Div" && y == 0)
          fail("divides by zero");
        c.i.push_back(op == "Add"   ? x + y
                      : op == "Sub" ? x - y
                      : op == "Mul" ? x * y
                                    : x / y);
      }
    }
    outConst(n, 0, std::move(c));
    return;
  }
  Tensor x = in(n, 0), y = in(n, 1);
  out(n, 0,
      op == "Add"   ? add(x, y)
      : op == "Sub" ? sub(x, y)
      : op == "Mul" ? mul(x, y)
                    : div(x, y));
}

void Importer::compare(const NodeProto &n, const std::string &op) {
  const Const *a = constOf(n, 0), *b = constOf(n, 1);
  auto test = [&](double x, double y) {
    return op == "Equal"         ? x == y
           : op == "Less"        ? x < y
           : op == "Greater"     ? x > y
           : op == "LessOrEqual" ? x <= y
                                 : x >= y;
  };
  if (a && b) {
    Shape shape = broadcastShapes(a->shape, b->shape);
    Const c = Const::ofInts(DType::i1, shape, {});
    for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k)
      c.i.push_back(test(a->at(a->broadcastIndex(shape, k)),
                         b->at(b->broadcastIndex(shape, k))));
    outConst(n, 0, std::move(c));
    return;
  }
  Tensor x = in(n, 0), y = in(n, 1);
  out(n, 0,
      op == "Equal"         ? eq(x, y)
      : op == "Less"        ? lt(x, y)
      : op == "Greater"     ? gt(x, y)
      : op == "LessOrEqual" ? le(x, y)
                            : ge(x, y));
}

/// The begin and end padding of one spatial dimension under `autoPad`.
std::pair<int64_t, int64_t> autoPadding(const std::string &autoPad,
                                        int64_t size, int64_t kernel,
                                        int64_t stride, int64_t dilation) {
  if (autoPad == "VALID")
    return {0, 0};
  int64_t out = (size + stride - 1) / stride;
  int64_t total = std::max<int64_t>(
      (out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0);
  int64_t small = total / 2;
  return autoPad == "SAME_LOWER" ? std::pair{total - small, small}
                                 : std::pair{small, total - small};
}

/// Spatial pads [top, left, bottom, right] of a 2-D conv or pool node.
std::vector<int64_t> spatialPads(const NodeProto &n, const Shape &input,
                                 const std::vector<int64_t> &kernel,
                                 const std::vector<int64_t> &strides,
                                 const std::vector<int64_t> &dilations) {
  std::string autoPad;
  for (const auto &a : n.attribute())
    if (a.name() == "auto_pad")
      autoPad = a.s();
  std::vector<int64_t> pads(4, 0);
  if (autoPad == "NOTSET" || autoPad.empty()) {
    for (const auto &a : n.attribute())
      if (a.name() == "pads") {
        if (a.ints_size() != 4)
          fail("has " + std::to_string(a.ints_size()) +
               " pads; a 2-D op takes 4");
        pads.assign(a.ints().begin(), a.ints().end());
      }
  } else {
    for (int d = 0; d < 2; ++d) {
      auto [begin, end] = autoPadding(autoPad, input[2 + d], kernel[d],
                                      strides[d], dilations[d]);
      pads[d] = begin;
      pads[2 + d] = end;
    }
  }
  for (int64_t p : pads)
    if (p < 0)
      fail("has negative pads");
  return pads;
}

void Importer::conv(const NodeProto &n) {
  Shape xs = shapeOf(n, 0), ws = shapeOf(n, 1);
  if (xs.size() != 4 || ws.size() != 4)
    fail("Locus imports 2-D convolutions (input rank 4); this one has input " +
         shapeText(xs) + " and weight " + shapeText(ws));
  std::vector<int64_t> kernel =
      attrInts(n, "kernel_shape").value_or(std::vector<int64_t>{ws[2], ws[3]});
  std::vector<int64_t> strides =
      attrInts(n, "strides").value_or(std::vector<int64_t>{1, 1});
  std::vector<int64_t> dilations =
      attrInts(n, "dilations").value_or(std::vector<int64_t>{1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2)
    fail("kernel_shape, strides and dilations must have 2 entries");
  std::vector<int64_t> pads = spatialPads(n, xs, kernel, strides, dilations);
  Tensor x = in(n, 0);
  Conv2dParams params;
  params.stride = strides;
  params.dilation = dilations;
  params.groups = attrInt(n, "group", 1);
  if (pads[0] == pads[2] && pads[1] == pads[3]) {
    params.padding = {pads[0], pads[1]};
  } else {
    x = locus::pad(x, {pads[1], pads[3], pads[0], pads[2]});
    params.padding = {0, 0};
  }
  out(n, 0, conv2d(x, in(n, 1), has(n, 2) ? in(n, 2) : Tensor(), params));
}

void Importer::pool(const NodeProto &n, bool max) {
  Shape xs = shapeOf(n, 0);
  if (xs.size() != 4)
    fail("Locus imports 2-D pooling (input rank 4); the input is " +
         shapeText(xs));
  if (n.output_size() > 1 && !n.output(1).empty())
    fail("the Indices output is not supported");
  auto kernel = attrInts(n, "kernel_shape");
  if (!kernel || kernel->size() != 2)
    fail("needs a kernel_shape of 2 entries");
  std::vector<int64_t> strides =
      attrInts(n, "strides").value_or(std::vector<int64_t>{1, 1});
  std::vector<int64_t> dilations =
      attrInts(n, "dilations").value_or(std::vector<int64_t>{1, 1});
  if (dilations != std::vector<int64_t>{1, 1})
    fail("dilations other than 1 are not supported");
  if (attrInt(n, "ceil_mode", 0))
    fail("ceil_mode = 1 is not supported");
  std::vector<int64_t> pads = spatialPads(n, xs, *kernel, strides, dilations);
  bool padded =
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  if (!max && padded && !attrInt(n, "count_include_pad", 0))
    fail("padding with count_include_pad = 0 is not supported (PyTorch "
         "exports count_include_pad = 1)");
  Tensor x = in(n, 0);
  Pool2dParams params;
  params.kernelSize = *kernel;
  params.stride = strides;
  // Locus's pools take PyTorch's padding (at most half the kernel, the
  // same on both sides); other padding is made explicit.
  if (pads[0] == pads[2] && pads[1] == pads[3] && 2 * pads[0] <= (*kernel)[0] &&
      2 * pads[1] <= (*kernel)[1]) {
    params.padding = {pads[0], pads[1]};
  } else {
    x = locus::pad(x, {pads[1], pads[3], pads[0], pads[2]},
                   max ? -std::numeric_limits<float>::infinity() : 0.0);
    params.padding = {0, 0};
  }
  out(n, 0, max ? maxPool2d(x, params) : avgPool2d(x, params));
}

/// ONNX's Reshape target: 0 copies the input's dimension (unless
/// allowzero), -1 is inferred.
Shape reshapeTarget(const Shape &input, std::vector<int64_t> target,
                    bool allowZero) {
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allowZero) {
      if (d >= input.size())
        fail("shape entry 0 at " + std::to_string(d) +
             " copies a dimension the input does not have");
      target[d] = input[d];
    }
    if (target[d] == -1) {
      if (infer >= 0)
        fail("the shape has two -1 entries");
      infer = static_cast<int64_t>(d);
    } else if (target[d] < 0) {
      fail("the shape has the entry " + std::to_string(target[d]));
    } else {
      known *= target[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || product(input) % known)
      fail("cannot reshape " + shapeText(input) + " to " + shapeText(target));
    target[static_cast<size_t>(infer)] = product(input) / known;
  }
  if (product(target) != product(input))
    fail("cannot reshape " + shapeText(input) + " to " + shapeText(target));
  return target;
}

void Importer::reshape(const NodeProto &n) {
  Shape input = shapeOf(n, 0);
  Shape target;
  if (n.op_type() == "Flatten") {
    auto rank = static_cast<int64_t>(input.size());
    int64_t axis = attrInt(n, "axis", 1);
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis > rank)
      fail("axis out of range");
    target = {product(input, 0, size_t(axis)), product(input, size_t(axis))};
  } else {
    target = reshapeTarget(input, needConst(n, 1, "the shape").ints(),
                           attrInt(n, "allowzero", 0) != 0);
  }
  if (const Const *c = constOf(n, 0)) {
    Const r = *c;
    r.shape = target;
    outConst(n, 0, std::move(r));
    return;
  }
  out(n, 0, locus::reshape(in(n, 0), target));
}

/// ONNX's clamping of one Slice range to a dimension of `size`, for a
/// positive step.
std::pair<int64_t, int64_t> sliceRange(int64_t start, int64_t end,
                                       int64_t size) {
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += size;
    return std::clamp<int64_t>(i, 0, size);
  };
  return {clampIndex(start), clampIndex(end)};
}

void Importer::slice(const NodeProto &n) {
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ >= 10) {
    starts = needConst(n, 1, "starts").ints();
    ends = needConst(n, 2, "ends").ints();
    if (has(n, 3))
      axes = needConst(n, 3, "axes").ints();
    if (has(n, 4))
      steps = needConst(n, 4, "steps").ints();
  } else {
    starts = attrInts(n, "starts").value_or(std::vector<int64_t>{});
    ends = attrInts(n, "ends").value_or(std::vector<int64_t>{});
    axes = attrInts(n, "axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back(static_cast<int64_t>(k));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    fail("starts, ends, axes and steps differ in length");
  struct Range {
    int64_t axis, start, end, step;
  };
  std::vector<Range> ranges;
  Shape outShape = shape;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = normalizeAxis(axes[k], rank);
    if (steps[k] <= 0)
      fail("steps other than positive ones are not supported");
    auto [start, end] = sliceRange(starts[k], ends[k], shape[size_t(axis)]);
    end = std::max(end, start);
    ranges.push_back({axis, start, end, steps[k]});
    outShape[size_t(axis)] = (end - start + steps[k] - 1) / steps[k];
  }
  if (const Const *c = constOf(n, 0)) {
    Const r;
    r.dtype = c->dtype;
    r.shape = outShape;
    for (size_t k = 0; k < static_cast<size_t>(product(outShape)); ++k) {
      // Output coordinates back to input ones.
      size_t index = 0, rem = k;
      std::vector<int64_t> coord(shape.size());
      for (size_t d = shape.size(); d-- > 0;) {
        coord[d] = static_cast<int64_t>(rem % size_t(outShape[d]));
        rem /= size_t(outShape[d]);
      }
      for (const Range &range : ranges)
        coord[size_t(range.axis)] =
            range.start + coord[size_t(range.axis)] * range.step;
      for (size_t d = 0; d < shape.size(); ++d)
        index = index * size_t(shape[d]) + size_t(coord[d]);
      r.append(*c, index);
    }
    outConst(n, 0, std::move(r));
    return;
  }
  Tensor x = in(n, 0);
  for (const Range &range : ranges)
    if (range.start != 0 || range.end != shape[size_t(range.axis)] ||
        range.step != 1)
      x = locus::slice(x, range.axis, range.start, range.end, range.step);
  out(n, 0, x);
}

void Importer::gather(Graph &g, const NodeProto &n) {
  Shape shape = shapeOf(n, 0), indexShape = shapeOf(n, 1);
  int64_t axis =
      normalizeAxis(attrInt(n, "axis", 0), static_cast<int64_t>(shape.size()));
  int64_t size = shape[size_t(axis)];
  Shape outShape(shape.begin(), shape.begin() + axis);
  outShape.insert(outShape.end(), indexShape.begin(), indexShape.end());
  outShape.insert(outShape.end(), shape.begin() + axis + 1, shape.end());
  const Const *data = constOf(n, 0), *index = constOf(n, 1);
  std::vector<int64_t> indices;
  if (index) {
    indices = index->ints();
    for (int64_t &i : indices) {
      if (i < -size || i >= size)
        fail("index " + std::to_string(i) +
             " is out of range for a dimension "
             "of " +
             std::to_string(size));
      i = i < 0 ? i + size : i;
    }
  }
  if (data && index) {
    Const r;
    r.dtype = data->dtype;
    r.shape = outShape;
    int64_t outer = product(shape, 0, size_t(axis)),
            inner = product(shape, size_t(axis) + 1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : indices)
        for (int64_t k = 0; k < inner; ++k) {
          size_t at = size_t((o * size + i) * inner + k);
          r.append(*data, at);
        }
    outConst(n, 0, std::move(r));
    return;
  }
  Tensor x = in(n, 0);
  if (index && indexShape.empty()) { // one index: a slice without the axis
    out(n, 0, squeeze(locus::slice(x, axis, indices[0], indices[0] + 1), axis));
    return;
  }
  Tensor idx;
  if (index) {
    idx = g.constantI64({static_cast<int64_t>(indices.size())}, indices);
  } else {
    idx = in(n, 1);
    if (idx.dtype() != DType::i64 && idx.dtype() != DType::i32)
      fail("indices must be int64 or int32");
    // Negative indices count from the end, as ONNX says (exact in f32 for
    // any dimension below 2^24).
    Tensor f = cast(idx, DType::f32);
    idx = cast(where(lt(f, g.constant(0.0f)), f + static_cast<float>(size), f),
               idx.dtype());
    if (axis == 0 && shape.size() == 2) { // an embedding lookup
      out(n, 0, embedding(idx, x));
      return;
    }
    idx = locus::reshape(idx, {product(indexShape)});
  }
  Tensor picked = indexSelect(x, axis, idx);
  out(n, 0,
      picked.shape() == outShape ? picked : locus::reshape(picked, outShape));
}

void Importer::split(const NodeProto &n) {
  Shape shape = shapeOf(n, 0);
  int64_t axis =
      normalizeAxis(attrInt(n, "axis", 0), static_cast<int64_t>(shape.size()));
  auto sizes = intsFromInputOrAttr(n, 1, "split");
  int outputs = n.output_size();
  if (outputs < 1)
    fail("Split has no outputs");
  int64_t dim = shape[size_t(axis)];
  if (!sizes) {
    if (dim % outputs)
      fail("cannot split " + std::to_string(dim) + " into " +
           std::to_string(outputs) + " equal parts");
    sizes = std::vector<int64_t>(size_t(outputs), dim / outputs);
  }
  if (static_cast<int>(sizes->size()) != outputs ||
      std::accumulate(sizes->begin(), sizes->end(), int64_t(0)) != dim)
    fail("split sizes do not match the outputs or the dimension");
  Tensor x = in(n, 0);
  int64_t start = 0;
  for (int k = 0; k < outputs; ++k) {
    int64_t end = start + (*sizes)[size_t(k)];
    out(n, k, locus::slice(x, axis, start, end));
    start = end;
  }
}

void Importer::squeezeOrUnsqueeze(const NodeProto &n, bool isSqueeze) {
  Shape shape = shapeOf(n, 0);
  auto axes = intsFromInputOrAttr(n, 1, "axes");
  Shape result;
  if (isSqueeze) {
    std::vector<bool> drop(shape.size(), false);
    if (!axes) {
      for (size_t d = 0; d < shape.size(); ++d)
        drop[d] = shape[d] == 1;
    } else {
      for (int64_t a : *axes) {
        int64_t axis = normalizeAxis(a, static_cast<int64_t>(shape.size()));
        if (shape[size_t(axis)] != 1)
          fail("squeezes axis " + std::to_string(a) + " of size " +
               std::to_string(shape[size_t(axis)]));
        drop[size_t(axis)] = true;
      }
    }
    for (size_t d = 0; d < shape.size(); ++d)
      if (!drop[d])
        result.push_back(shape[d]);
  } else {
    if (!axes)
      fail("needs axes");
    auto rank = static_cast<int64_t>(shape.size() + axes->size());
    std::vector<bool> added(size_t(rank), false);
    for (int64_t a : *axes)
      added[size_t(normalizeAxis(a, rank))] = true;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      result.push_back(added[size_t(d)] ? 1 : shape[next++]);
  }
  if (const Const *c = constOf(n, 0)) {
    Const r = *c;
    r.shape = result;
    outConst(n, 0, std::move(r));
    return;
  }
  out(n, 0, locus::reshape(in(n, 0), result));
}

void Importer::reduce(const NodeProto &n, const std::string &op) {
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  std::optional<std::vector<int64_t>> axes;
  if (op == "ReduceSum" && opset_ >= 13)
    axes = has(n, 1) ? std::optional(needConst(n, 1, "axes").ints())
                     : std::nullopt;
  else
    axes = attrInts(n, "axes");
  bool keep = attrInt(n, "keepdims", 1) != 0;
  if (!axes || axes->empty()) {
    if (attrInt(n, "noop_with_empty_axes", 0)) {
      out(n, 0, in(n, 0));
      return;
    }
    axes = std::vector<int64_t>();
    for (int64_t d = 0; d < rank; ++d)
      axes->push_back(d);
  }
  for (int64_t &a : *axes)
    a = normalizeAxis(a, rank);
  Tensor x = in(n, 0);
  out(n, 0,
      op == "ReduceSum"    ? sum(x, *axes, keep)
      : op == "ReduceMean" ? mean(x, *axes, keep)
      : op == "ReduceMax"  ? max(x, *axes, keep)
                           : min(x, *axes, keep));
}

void Importer::softmax(const NodeProto &n, bool log) {
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = normalizeAxis(attrInt(n, "axis", opset_ >= 13 ? -1 : 1), rank);
  Tensor x = in(n, 0);
  if (opset_ >= 13 || axis == rank - 1) {
    out(n, 0, log ? logSoftmax(x, axis) : locus::softmax(x, axis));
    return;
  }
  // Before opset 13: over all dimensions from `axis` on, as one.
  Tensor flat = locus::reshape(
      x, {product(shape, 0, size_t(axis)), product(shape, size_t(axis))});
  Tensor y = log ? logSoftmax(flat, 1) : locus::softmax(flat, 1);
  out(n, 0, locus::reshape(y, shape));
}

void Importer::gemm(const NodeProto &n) {
  double alpha = attrFloat(n, "alpha", 1.0), beta = attrFloat(n, "beta", 1.0);
  bool transA = attrInt(n, "transA", 0) != 0,
       transB = attrInt(n, "transB", 0) != 0;
  Tensor a = in(n, 0), b = in(n, 1);
  if (!transA && transB && alpha == 1.0 && (!has(n, 2) || beta == 1.0) &&
      (!has(n, 2) || shapeOf(n, 2).size() <= 1)) {
    out(n, 0, linear(a, b, has(n, 2) ? in(n, 2) : Tensor())); // nn.Linear
    return;
  }
  Tensor y =
      matmul(transA ? transpose(a, 0, 1) : a, transB ? transpose(b, 0, 1) : b);
  if (alpha != 1.0)
    y = y * static_cast<float>(alpha);
  if (has(n, 2) && beta != 0.0) {
    Tensor c = in(n, 2);
    y = add(y, beta == 1.0 ? c : c * static_cast<float>(beta));
  }
  out(n, 0, y);
}

void Importer::pad(const NodeProto &n) {
  std::string mode = attrString(n, "mode", "constant");
  if (mode != "constant")
    fail("mode '" + mode + "' is not supported (only constant)");
  Shape shape = shapeOf(n, 0);
  std::vector<int64_t> pads =
      opset_ >= 11 ? needConst(n, 1, "pads").ints()
                   : attrInts(n, "pads").value_or(std::vector<int64_t>{});
  double value =
      opset_ >= 11 ? (has(n, 2) ? needConst(n, 2, "constant_value").at(0) : 0.0)
                   : attrFloat(n, "value", 0.0);
  if (pads.size() != 2 * shape.size())
    fail("has " + std::to_string(pads.size()) + " pads for rank " +
         std::to_string(shape.size()));
  std::vector<int64_t> pairs; // from the last dimension, as torch's pad
  for (size_t d = shape.size(); d-- > 0;) {
    if (pads[d] < 0 || pads[d + shape.size()] < 0)
      fail("negative pads are not supported");
    pairs.push_back(pads[d]);
    pairs.push_back(pads[d + shape.size()]);
  }
  out(n, 0, locus::pad(in(n, 0), pairs, value));
}

void Importer::concat(const NodeProto &n) {
  Shape first = shapeOf(n, 0);
  int64_t axis =
      normalizeAxis(attrInt(n, "axis", 0), static_cast<int64_t>(first.size()));
  // One rank, and the same size in every dimension but the axis.
  for (int k = 1; k < n.input_size(); ++k) {
    Shape shape = shapeOf(n, k);
    bool same = shape.size() == first.size();
    for (size_t d = 0; same && d < shape.size(); ++d)
      same = int64_t(d) == axis || shape[d] == first[d];
    if (!same)
      fail("concatenates " + shapeText(first) + " and " + shapeText(shape) +
           " on axis " + std::to_string(axis) +
           ": the other dimensions must match");
  }
  bool known = true;
  for (int k = 0; k < n.input_size(); ++k)
    known &= constOf(n, k) != nullptr;
  if (known) {
    Const r;
    r.dtype = constOf(n, 0)->dtype;
    r.shape = first;
    r.shape[size_t(axis)] = 0;
    int64_t outer = product(first, 0, size_t(axis));
    for (int k = 0; k < n.input_size(); ++k) {
      const Const &c = *constOf(n, k);
      if (c.shape.size() != first.size() || c.dtype != r.dtype)
        fail("concatenates values of different ranks or types");
      r.shape[size_t(axis)] += c.shape[size_t(axis)];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int k = 0; k < n.input_size(); ++k) {
        const Const &c = *constOf(n, k);
        int64_t chunk = product(c.shape, size_t(axis));
        for (int64_t e = 0; e < chunk; ++e) {
          size_t at = size_t(o * chunk + e);
          r.append(c, at);
        }
      }
    outConst(n, 0, std::move(r));
    return;
  }
  std::vector<Tensor> parts;
  for (int k = 0; k < n.input_size(); ++k)
    if (shapeOf(n, k)[size_t(axis)] != 0)
      parts.push_back(in(n, k));
  out(n, 0, parts.size() == 1 ? parts[0] : locus::concat(parts, axis));
}

void Importer::batchNorm(const NodeProto &n) {
  double eps = attrFloat(n, "epsilon", 1e-5);
  double momentum = attrFloat(n, "momentum", 0.9);
  bool training = attrInt(n, "training_mode", 0) != 0;
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty() && !training)
      fail("outputs beyond Y exist only in training mode");
  if (training) {
    if (!constOf(n, 3) || !constOf(n, 4) || !value(n.input(3)).initializer ||
        !value(n.input(4)).initializer)
      fail("training mode updates the running mean and variance, which must "
           "then be initializers (state), not computed values");
    for (int k = 1; k < n.output_size(); ++k)
      if (!n.output(k).empty())
        fail("the running_mean and running_var outputs are not supported; "
             "Locus updates the state in place");
  }
  // ONNX keeps momentum of the old value; PyTorch the new one's weight.
  out(n, 0,
      ::locus::batchNorm(in(n, 0), in(n, 3, true), in(n, 4, true), in(n, 1),
                         in(n, 2), training, 1.0 - momentum, eps));
}

void Importer::constantNode(const NodeProto &n) {
  const auto &a = n.attribute();
  if (a.size() != 1)
    fail("needs exactly one value attribute");
  const auto &v = a[0];
  if (v.name() == "value")
    outConst(n, 0, tensorConst(v.t()));
  else if (v.name() == "value_float")
    outConst(n, 0, Const::ofFloats({}, {v.f()}));
  else if (v.name() == "value_floats")
    outConst(n, 0,
             Const::ofFloats(
                 {v.floats_size()},
                 std::vector<double>(v.floats().begin(), v.floats().end())));
  else if (v.name() == "value_int")
    outConst(n, 0, Const::ofInts(DType::i64, {}, {v.i()}));
  else if (v.name() == "value_ints")
    outConst(
        n, 0,
        Const::ofInts(DType::i64, {v.ints_size()},
                      std::vector<int64_t>(v.ints().begin(), v.ints().end())));
  else
    fail("the value attribute '" + v.name() + "' is not supported");
}

/// ONNX's TensorProto data type as a Locus dtype.
DType dtypeOfOnnx(int64_t type) {
  switch (type) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
  case TensorProto::FLOAT16:
    return DType::f32;
  case TensorProto::INT64:
    return DType::i64;
  case TensorProto::INT32:
    return DType::i32;
  case TensorProto::BOOL:
    return DType::i1;
  default:
    fail("casts to ONNX data type " + std::to_string(type) +
         ", which Locus does not have (float, int64, int32, bool)");
  }
}

Const castConst(const Const &c, DType to) {
  Const r;
  r.dtype = to;
  r.shape = c.shape;
  for (size_t k = 0; k < static_cast<size_t>(c.numel()); ++k) {
    double v = c.at(k);
    if (to == DType::f32)
      r.f.push_back(static_cast<float>(v));
    else if (to == DType::i1)
      r.i.push_back(v != 0);
    else
      r.i.push_back(static_cast<int64_t>(v));
  }
  return r;
}

using UnaryFn = Tensor (*)(const Tensor &, Here);

void Importer::addActivations(std::map<std::string, Handler> &t) {
  t["LeakyRelu"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, leakyRelu(im.in(n, 0), attrFloat(n, "alpha", 0.01)));
  };
  t["Elu"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, elu(im.in(n, 0), attrFloat(n, "alpha", 1.0)));
  };
  t["HardSigmoid"] = [](Importer &im, Graph &, const NodeProto &n) {
    // max(0, min(1, alpha x + beta)).
    auto alpha = static_cast<float>(attrFloat(n, "alpha", 0.2));
    auto beta = static_cast<float>(attrFloat(n, "beta", 0.5));
    im.out(n, 0, hardtanh(im.in(n, 0) * alpha + beta, 0.0, 1.0));
  };
  t["HardSwish"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, hardswish(im.in(n, 0)));
  };
  t["Softplus"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, softplus(im.in(n, 0)));
  };
  t["Clip"] = [](Importer &im, Graph &, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    if (im.opset_ < 11) {
      std::optional<double> lo, hi;
      if (attr(n, "min"))
        lo = attrFloat(n, "min", 0);
      if (attr(n, "max"))
        hi = attrFloat(n, "max", 0);
      im.out(n, 0, lo || hi ? clamp(x, lo, hi) : x);
      return;
    }
    // min(max(x, min), max), each bound a constant or a computed scalar.
    for (int k : {1, 2}) {
      if (!im.has(n, k))
        continue;
      if (const Const *c = im.constOf(n, k)) {
        if (c->numel() != 1)
          fail("Clip's bounds must be single numbers");
        x = k == 1 ? clamp(x, c->at(0), std::nullopt)
                   : clamp(x, std::nullopt, c->at(0));
        continue;
      }
      Tensor bound = im.in(n, k);
      if (bound.numel() != 1)
        fail("Clip's bounds must be single numbers");
      bound = locus::reshape(bound, {});
      x = k == 1 ? where(lt(x, bound), bound, x)
                 : where(gt(x, bound), bound, x);
    }
    im.out(n, 0, x);
  };
}

const std::map<std::string, Importer::Handler> &Importer::handlers() {
  static const std::map<std::string, Handler> table = [] {
    std::map<std::string, Handler> t;
    auto unary = [&](const char *name, UnaryFn fn) {
      t[name] = [fn](Importer &im, Graph &, const NodeProto &n) {
        im.out(n, 0, fn(im.in(n, 0), Here::current()));
      };
    };
    unary("Relu", &relu);
    unary("Sigmoid", &sigmoid);
    unary("Tanh", &locus::tanh);
    unary("Exp", &locus::exp);
    unary("Log", &locus::log);
    unary("Sqrt", &locus::sqrt);
    unary("Neg", &neg);
    unary("Abs", &locus::abs);
    unary("Erf", &locus::erf);
    unary("Sin", &locus::sin);
    unary("Cos", &locus::cos);
    unary("Reciprocal", &reciprocal);
    for (const char *op : {"Add", "Sub", "Mul", "Div"})
      t[op] = [op = std::string(op)](Importer &im, Graph &,
                                     const NodeProto &n) { im.binary(n, op); };
    for (const char *op :
         {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
      t[op] = [op = std::string(op)](Importer &im, Graph &,
                                     const NodeProto &n) { im.compare(n, op); };
    for (const char *op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
      t[op] = [op = std::string(op)](Importer &im, Graph &,
                                     const NodeProto &n) { im.reduce(n, op); };
    t["Not"] = [](Importer &im, Graph &g, const NodeProto &n) {
      if (const Const *c = im.constOf(n, 0)) {
        Const r = castConst(*c, DType::i1);
        for (int64_t &v : r.i)
          v = !v;
        im.outConst(n, 0, std::move(r));
        return;
      }
      Tensor x = im.in(n, 0);
      im.out(n, 0, eq(x, g.full(x.shape(), 0.0, DType::i1)));
    };
    t["Pow"] = [](Importer &im, Graph &, const NodeProto &n) {
      const Const &e = im.needConst(n, 1, "the exponent");
      if (e.numel() != 1)
        fail("exponents other than one number are not supported");
      im.out(n, 0, locus::pow(im.in(n, 0), e.at(0)));
    };
    addActivations(t);
    auto variadic = [&](const char *name, int kind) {
      t[name] = [kind](Importer &im, Graph &, const NodeProto &n) {
        Tensor acc = im.in(n, 0);
        for (int k = 1; k < n.input_size(); ++k)
          acc = kind == 0   ? minimum(acc, im.in(n, k))
                : kind == 1 ? maximum(acc, im.in(n, k))
                            : add(acc, im.in(n, k));
        if (kind == 3)
          acc = acc * (1.0f / static_cast<float>(n.input_size()));
        im.out(n, 0, acc);
      };
    };
    variadic("Min", 0);
    variadic("Max", 1);
    variadic("Sum", 2);
    variadic("Mean", 3);
    auto identity = [](Importer &im, Graph &g, const NodeProto &n) {
      Value v = im.value(n.input(0));
      im.values_[n.output(0)] = v;
      if (n.op_type() == "Dropout" && n.output_size() > 1 &&
          !n.output(1).empty())
        im.out(n, 1, g.full(im.shapeOf(n, 0), 1.0, DType::i1));
    };
    t["Identity"] = identity;
    t["Dropout"] = [identity](Importer &im, Graph &g, const NodeProto &n) {
      // Opset 12 on: ratio and training_mode inputs. Training draws a new
      // mask each run from Locus's generator (not the exporter's).
      bool training =
          im.has(n, 2) && im.needConst(n, 2, "training_mode").at(0) != 0;
      if (!training) {
        identity(im, g, n);
        return;
      }
      double ratio = im.has(n, 1) ? im.needConst(n, 1, "ratio").at(0) : 0.5;
      if (n.output_size() > 1 && !n.output(1).empty())
        fail("the mask output of a training-mode Dropout is not supported");
      im.out(n, 0, dropout(im.in(n, 0), ratio, true));
    };
    t["Where"] = [](Importer &im, Graph &, const NodeProto &n) {
      const Const *c = im.constOf(n, 0), *a = im.constOf(n, 1),
                  *b = im.constOf(n, 2);
      if (c && a && b && a->dtype == b->dtype) {
        Shape shape =
            broadcastShapes(c->shape, broadcastShapes(a->shape, b->shape));
        Const r;
        r.dtype = a->dtype;
        r.shape = shape;
        for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k) {
          bool pick = c->at(c->broadcastIndex(shape, k)) != 0;
          const Const &src = pick ? *a : *b;
          size_t at = src.broadcastIndex(shape, k);
          r.append(src, at);
        }
        im.outConst(n, 0, std::move(r));
        return;
      }
      im.out(n, 0, where(im.in(n, 0), im.in(n, 1), im.in(n, 2)));
    };
    t["Cast"] = [](Importer &im, Graph &, const NodeProto &n) {
      DType to = dtypeOfOnnx(attrInt(n, "to", TensorProto::FLOAT));
      if (const Const *c = im.constOf(n, 0)) {
        im.outConst(n, 0, castConst(*c, to));
        return;
      }
      Tensor x = im.in(n, 0);
      im.out(n, 0, x.dtype() == to ? x : cast(x, to));
    };
    t["Softmax"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.softmax(n, false);
    };
    t["LogSoftmax"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.softmax(n, true);
    };
    t["MatMul"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.out(n, 0, matmul(im.in(n, 0), im.in(n, 1)));
    };
    t["Gemm"] = [](Importer &im, Graph &, const NodeProto &n) { im.gemm(n); };
    t["Conv"] = [](Importer &im, Graph &, const NodeProto &n) { im.conv(n); };
    t["MaxPool"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.pool(n, true);
    };
    t["AveragePool"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.pool(n, false);
    };
    t["GlobalAveragePool"] = [](Importer &im, Graph &, const NodeProto &n) {
      Shape shape = im.shapeOf(n, 0);
      std::vector<int64_t> axes;
      for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
        axes.push_back(d);
      im.out(n, 0,
             shape.size() == 4 ? adaptiveAvgPool2d(im.in(n, 0), {1, 1})
                               : mean(im.in(n, 0), axes, true));
    };
    t["GlobalMaxPool"] = [](Importer &im, Graph &, const NodeProto &n) {
      Shape shape = im.shapeOf(n, 0);
      std::vector<int64_t> axes;
      for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
        axes.push_back(d);
      im.out(n, 0, max(im.in(n, 0), axes, true));
    };
    t["BatchNormalization"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.batchNorm(n);
    };
    t["LayerNormalization"] = [](Importer &im, Graph &, const NodeProto &n) {
      Shape shape = im.shapeOf(n, 0);
      int64_t axis = normalizeAxis(attrInt(n, "axis", -1),
                                   static_cast<int64_t>(shape.size()));
      double eps = attrFloat(n, "epsilon", 1e-5);
      Tensor x = im.in(n, 0);
      im.out(n, 0,
             layerNorm(x, Shape(shape.begin() + axis, shape.end()),
                       im.has(n, 1) ? im.in(n, 1) : Tensor(),
                       im.has(n, 2) ? im.in(n, 2) : Tensor(), eps));
      // The statistics, when asked for, kept over the normalised axes.
      std::vector<int64_t> axes;
      for (auto d = axis; d < static_cast<int64_t>(shape.size()); ++d)
        axes.push_back(d);
      if (n.output_size() > 1 && !n.output(1).empty())
        im.out(n, 1, mean(x, axes, true));
      if (n.output_size() > 2 && !n.output(2).empty())
        im.out(n, 2,
               rsqrt(var(x, axes, /*unbiased=*/false, true) +
                     static_cast<float>(eps)));
    };
    t["Flatten"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.reshape(n);
    };
    t["Reshape"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.reshape(n);
    };
    t["Transpose"] = [](Importer &im, Graph &, const NodeProto &n) {
      auto rank = static_cast<int64_t>(im.shapeOf(n, 0).size());
      std::vector<int64_t> perm;
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
      im.out(n, 0, permute(im.in(n, 0), attrInts(n, "perm").value_or(perm)));
    };
    t["Concat"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.concat(n);
    };
    t["Split"] = [](Importer &im, Graph &, const NodeProto &n) { im.split(n); };
    t["Slice"] = [](Importer &im, Graph &, const NodeProto &n) { im.slice(n); };
    t["Gather"] = [](Importer &im, Graph &g, const NodeProto &n) {
      im.gather(g, n);
    };
    t["Squeeze"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.squeezeOrUnsqueeze(n, true);
    };
    t["Unsqueeze"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.squeezeOrUnsqueeze(n, false);
    };
    t["Expand"] = [](Importer &im, Graph &, const NodeProto &n) {
      Shape target = broadcastShapes(im.shapeOf(n, 0),
                                     im.needConst(n, 1, "the shape").ints());
      if (const Const *c = im.constOf(n, 0)) {
        Const r;
        r.dtype = c->dtype;
        r.shape = target;
        for (size_t k = 0; k < static_cast<size_t>(product(target)); ++k) {
          size_t at = c->broadcastIndex(target, k);
          r.append(*c, at);
        }
        im.outConst(n, 0, std::move(r));
        return;
      }
      im.out(n, 0, expand(im.in(n, 0), target));
    };
    t["Shape"] = [](Importer &im, Graph &, const NodeProto &n) {
      Shape shape = im.shapeOf(n, 0);
      auto rank = static_cast<int64_t>(shape.size());
      auto clampAxis = [&](int64_t a) {
        return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank);
      };
      int64_t start = clampAxis(attrInt(n, "start", 0));
      int64_t end = clampAxis(attrInt(n, "end", rank));
      std::vector<int64_t> dims(shape.begin() + start,
                                shape.begin() + std::max(start, end));
      im.outConst(n, 0,
                  Const::ofInts(DType::i64, {int64_t(dims.size())}, dims));
    };
    t["Constant"] = [](Importer &im, Graph &, const NodeProto &n) {
      im.constantNode(n);
    };
    t["ConstantOfShape"] = [](Importer &im, Graph &, const NodeProto &n) {
      Shape shape = im.needConst(n, 0, "the shape").ints();
      Const fill = Const::ofFloats({}, {0.0});
      if (const auto *v = attr(n, "value"))
        fill = im.tensorConst(v->t());
      if (fill.numel() != 1)
        fail("value must hold one element");
      Const r;
      r.dtype = fill.dtype;
      r.shape = shape;
      auto count = static_cast<size_t>(product(shape));
      if (r.isFloat())
        r.f.assign(count, fill.f[0]);
      else
        r.i.assign(count, fill.i[0]);
      im.outConst(n, 0, std::move(r));
    };
    t["Range"] = [](Importer &im, Graph &, const NodeProto &n) {
      const Const &start = im.needConst(n, 0, "start"),
                  &limit = im.needConst(n, 1, "limit"),
                  &delta = im.needConst(n, 2, "delta");
      double s = start.at(0), l = limit.at(0), d = delta.at(0);
      if (d == 0)
        fail("delta is 0");
      auto count = static_cast<int64_t>(std::max(std::ceil((l - s) / d), 0.0));
      Const r;
      r.dtype = start.dtype;
      r.shape = {count};
      for (int64_t k = 0; k < count; ++k) {
        double v = s + static_cast<double>(k) * d;
        if (r.isFloat())
          r.f.push_back(static_cast<float>(v));
        else
          r.i.push_back(static_cast<int64_t>(v));
      }
      im.outConst(n, 0, std::move(r));
    };
    t["Trilu"] = [](Importer &im, Graph &, const NodeProto &n) {
      int64_t k = im.has(n, 1) ? im.needConst(n, 1, "k").ints()[0] : 0;
      Tensor x = im.in(n, 0);
      im.out(n, 0, attrInt(n, "upper", 1) ? triu(x, k) : tril(x, k));
    };
    t["ArgMax"] = [](Importer &im, Graph &, const NodeProto &n) {
      if (attrInt(n, "select_last_index", 0))
        fail("select_last_index = 1 is not supported");
      im.out(n, 0,
             argmax(im.in(n, 0), attrInt(n, "axis", 0),
                    attrInt(n, "keepdims", 1) != 0));
    };
    t["Pad"] = [](Importer &im, Graph &, const NodeProto &n) { im.pad(n); };
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

void Importer::importNode(Graph &g, const NodeProto &node, size_t index) {
  std::string name =
      node.name().empty() ? "#" + std::to_string(index) : node.name();
  std::string what = "node '" + name + "' (" + node.op_type() + ")";
  detail::OriginScope origin(g, path_, what);
  try {
    handlers().at(node.op_type())(*this, g, node);
  } catch (const ImportError &e) {
    throw Error(path_, 0, 0, what + ": " + e.message);
  } catch (const Error &e) {
    throw Error(path_, 0, 0, what + ": " + e.message());
  }
}

Graph Importer::run() {
  try {
    load();
    checkSupported();
  } catch (const ImportError &e) {
    throw Error(path_, 0, 0, e.message);
  }
  std::string name =
      options_.graphName.empty() ? model_.graph().name() : options_.graphName;
  Graph g(name.empty() ? "onnx" : name);
  graph_ = &g;
  try {
    addInputs(g);
  } catch (const ImportError &e) {
    throw Error(path_, 0, 0, e.message);
  }
  for (const auto &[input, shape] : options_.shapes)
    if (!values_.count(input))
      throw Error(path_, 0, 0,
                  "--shape names '" + input +
                      "', which is not an input of "
                      "the model");
  const auto &nodes = model_.graph().node();
  for (int k = 0; k < nodes.size(); ++k)
    importNode(g, nodes[k], static_cast<size_t>(k));
  for (const auto &output : model_.graph().output()) {
    try {
      auto it = values_.find(output.name());
      if (it == values_.end())
        fail("output '" + output.name() + "' is made by no node");
      Value &v = it->second;
      detail::OriginScope origin(g, path_, "output '" + output.name() + "'");
      if (!v.tensor)
        v.tensor = materialize(output.name(), v, false);
      g.output(output.name(), v.tensor);
    } catch (const ImportError &e) {
      throw Error(path_, 0, 0, e.message);
    }
  }
  return g;
}

} // namespace

Graph importOnnx(const std::string &path, const OnnxImportOptions &options) {
  return Importer(path, options).run();
}

std::vector<std::string> onnxSupportedOps() { return Importer::supported(); }

} // namespace locus
