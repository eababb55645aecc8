// locus-run.cpp - runs an artifact with the runtime alone.
//
//   locus-run model.locus [--input name=file.npy | name=file.f32 ...]
//             [--random-inputs] [--device-map cuda:0=sim] [--runs N]
//             [--save-outputs DIR] [--quiet]
//             [--weights state.safetensors [--weights-partial]]
//             [--save-state state.safetensors]
//             [--trusted-key builder.pub ...] [--trace trace.json]
//             [--host-io [--views | --register]] [--max-bytes N]
//             [--distributed]
//
// Inputs are .npy files (little-endian f32, i64, i32 or bool, C order) or raw
// little-endian bytes of the input's dtype. --random-inputs fills the inputs
// not given with U[-1, 1) from the runtime's seeded generator (labels: 0).
// Prints the runtime's report, then each output (shape and first values);
// --save-outputs writes them as .npy files (creating the directory). --weights
// loads state (weights, buffers) from a safetensors file before the runs: all
// of the model's, or with --weights-partial the names both have. --save-state
// writes the state after the runs (a training artifact's trained weights).
// --trace writes every launch, copy and step of the runs as Chrome trace
// JSON (chrome://tracing, ui.perfetto.dev; docs/runtime.md). --host-io
// sets the inputs and reads the outputs at every run, and times them with
// the step (a serving loop's time), each part's median said apart; with
// --views it does so through the context's views (locus_context_input_view
// and _output_view): the inputs are written into their views once, as a
// producer writing in place would, and every run asks for the views again;
// with --register the inputs' and outputs' memory is registered with the
// model (locus_model_register_host: page-locked for its GPU copies).
// --max-bytes refuses a model whose load would allocate more than N bytes.
// --distributed joins the data-parallel job mpirun or srun launched this
// process in (an artifact compiled with --data-parallel): rank 0's state,
// after --weights, goes to every rank, and each step averages the
// gradients over the ranks (docs/distributed.md).

#include "locus/half.hpp"
#include "locus/runtime.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char *descrOf(locus_dtype_t dtype) {
  switch (dtype) {
  case LOCUS_DTYPE_F32:
    return "<f4";
  case LOCUS_DTYPE_I64:
    return "<i8";
  case LOCUS_DTYPE_I32:
    return "<i4";
  case LOCUS_DTYPE_F16:
    return "<f2";
  case LOCUS_DTYPE_BF16: // its bits: NumPy has no bfloat16
    return "<u2";
  default:
    return "|b1";
  }
}

const char *dtypeText(locus_dtype_t dtype) {
  switch (dtype) {
  case LOCUS_DTYPE_F32:
    return "f32";
  case LOCUS_DTYPE_I64:
    return "i64";
  case LOCUS_DTYPE_I32:
    return "i32";
  case LOCUS_DTYPE_BF16:
    return "bf16";
  case LOCUS_DTYPE_F16:
    return "f16";
  default:
    return "i1";
  }
}

/// Bytes of one element.
size_t elementBytes(locus_dtype_t dtype) {
  return dtype == LOCUS_DTYPE_I64                                ? 8
         : dtype == LOCUS_DTYPE_F32 || dtype == LOCUS_DTYPE_I32  ? 4
         : dtype == LOCUS_DTYPE_BF16 || dtype == LOCUS_DTYPE_F16 ? 2
                                                                 : 1;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The data of an .npy file, after checking dtype and shape against `info`;
/// or the bytes of a raw file. Throws std::runtime_error.
std::vector<char> readInput(const std::string &path,
                            const locus::rt::TensorInfo &info,
                            std::vector<int64_t> &dims) {
  dims = info.shape;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  // No more than the input's bytes and an .npy header can hold: a device
  // or a huge file is refused, not read until memory runs out.
  const size_t kMaxHeader = 65536;
  size_t limit = info.byteSize + kMaxHeader;
  std::vector<char> bytes(limit + 1);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (bytes.size() > limit)
    throw std::runtime_error(
        path + " holds more than " + std::to_string(limit) + " bytes; input '" +
        info.name + "' " + shapeText(info.shape) + " takes " +
        std::to_string(info.byteSize) + " (and an .npy header)");
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
    if (bytes.size() != info.byteSize)
      throw std::runtime_error(
          path + " has " + std::to_string(bytes.size()) + " bytes; input '" +
          info.name + "' " + shapeText(info.shape) + " takes " +
          std::to_string(info.byteSize) + " (raw little-endian " +
          descrOf(info.dtype) + ")");
    return bytes;
  }
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength, start;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(bytes[8]) |
                   static_cast<unsigned char>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw std::runtime_error(path + ": truncated .npy header");
    headerLength = 0;
    for (int i = 0; i < 4; ++i)
      headerLength |= size_t(static_cast<unsigned char>(bytes[8 + i]))
                      << (8 * i);
    start = 12;
  } else {
    throw std::runtime_error(path + ": .npy version " + std::to_string(major) +
                             " is not supported");
  }
  if (start + headerLength > bytes.size())
    throw std::runtime_error(path + ": truncated .npy header");
  std::string header(bytes.data() + start, headerLength);
  auto field = [&](const std::string &key) {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos)
      throw std::runtime_error(path + ": .npy header has no " + key);
    return header.substr(header.find(':', at) + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  if (descr != descrOf(info.dtype) &&
      !(info.dtype == LOCUS_DTYPE_I1 && descr == "|u1"))
    throw std::runtime_error(path + " holds " + descr + "; input '" +
                             info.name + "' takes " + descrOf(info.dtype));
  if (field("fortran_order").find("True") <
      field("fortran_order").find_first_of(",}"))
    throw std::runtime_error(path + " is in Fortran order; save it in C order");
  std::string shapeField = field("shape");
  shapeField = shapeField.substr(shapeField.find('(') + 1);
  shapeField = shapeField.substr(0, shapeField.find(')'));
  std::vector<int64_t> shape;
  std::stringstream ss(shapeField);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t first = item.find_first_not_of(" \t"),
           last = item.find_last_not_of(" \t");
    if (first == std::string::npos)
      continue; // the empty item after a trailing comma: (8,)
    std::string digits = item.substr(first, last - first + 1);
    int64_t d = -1;
    auto [end, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), d);
    if (ec != std::errc() || end != digits.data() + digits.size() || d < 0) {
      std::string message = path;
      message += ": .npy dimension '" + digits + "' is not a size";
      throw std::runtime_error(message);
    }
    shape.push_back(d);
  }
  // Of the input's rank; the runtime checks the dims against the graph's
  // (and a dynamic size against its bound, naming it).
  if (shape.size() != info.shape.size())
    throw std::runtime_error(path + " has shape " + shapeText(shape) +
                             "; input '" + info.name + "' takes " +
                             shapeText(info.shape));
  size_t expected = info.byteSize;
  for (size_t d = 0; d < shape.size(); ++d)
    expected = expected /
               static_cast<size_t>(info.shape[d] ? info.shape[d] : 1) *
               static_cast<size_t>(shape[d]);
  size_t data = start + headerLength;
  if (bytes.size() - data != expected)
    throw std::runtime_error(path + ": the data has " +
                             std::to_string(bytes.size() - data) +
                             " bytes, expected " + std::to_string(expected));
  dims = shape;
  return std::vector<char>(bytes.begin() + static_cast<long>(data),
                           bytes.end());
}

void writeNpy(const std::string &path, const locus::rt::TensorInfo &info,
              const std::vector<char> &data) {
  std::string shape = "(";
  for (int64_t d : info.shape)
    shape += std::to_string(d) + ",";
  if (info.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = "{'descr': '" + std::string(descrOf(info.dtype)) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(data.data(), data.size());
  locus::rt::check(
      locus_file_write_atomic(path.c_str(), bytes.data(), bytes.size()));
}

int usage() {
  std::cerr << "usage: locus-run model.locus [--input name=file ...] "
               "[--random-inputs] [--device-map MAP] [--runs N] "
               "[--save-outputs DIR] [--quiet] [--weights FILE "
               "[--weights-partial]] [--save-state FILE] "
               "[--trusted-key FILE.pub ...] [--trace FILE.json] "
               "[--host-io [--views | --register]] [--max-bytes N] "
               "[--distributed]\n";
  return 2;
}

/// The command line.
struct Options {
  std::string path, deviceMap, saveDir, weights, saveState, trace;
  bool weightsPartial = false;
  std::map<std::string, std::string> inputFiles;
  std::vector<std::string> trustedKeys;
  bool random = false, quiet = false, hostIo = false, views = false,
       registered = false, distributed = false;
  uint64_t maxBytes = 0;
  int runs = 1;
};

/// Reads the command line into `o`. Returns 0, or the exit status after a
/// message (2: a bad command line).
int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw std::runtime_error(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--input") {
        std::string v = value();
        size_t eq = v.find('=');
        if (eq == std::string::npos)
          throw std::runtime_error("--input takes name=file, not '" + v + "'");
        o.inputFiles[v.substr(0, eq)] = v.substr(eq + 1);
      } else if (arg == "--device-map") {
        o.deviceMap = value();
      } else if (arg == "--runs") {
        std::string v = value();
        char *end = nullptr;
        errno = 0;
        long runs = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || errno || runs < 1 || runs > 1'000'000'000)
          throw std::runtime_error("--runs takes a count from 1 to 10^9, "
                                   "not '" +
                                   v + "'");
        o.runs = static_cast<int>(runs);
      } else if (arg == "--save-outputs") {
        o.saveDir = value();
      } else if (arg == "--weights") {
        o.weights = value();
      } else if (arg == "--weights-partial") {
        o.weightsPartial = true;
      } else if (arg == "--save-state") {
        o.saveState = value();
      } else if (arg == "--trusted-key") {
        o.trustedKeys.push_back(value());
      } else if (arg == "--trace") {
        o.trace = value();
      } else if (arg == "--random-inputs") {
        o.random = true;
      } else if (arg == "--quiet") {
        o.quiet = true;
      } else if (arg == "--host-io") {
        o.hostIo = true;
      } else if (arg == "--views") {
        o.hostIo = o.views = true;
      } else if (arg == "--register") {
        o.hostIo = o.registered = true;
      } else if (arg == "--distributed") {
        o.distributed = true;
      } else if (arg == "--max-bytes") {
        std::string v = value();
        auto [end, ec] =
            std::from_chars(v.data(), v.data() + v.size(), o.maxBytes);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size())
          throw std::runtime_error("--max-bytes takes a byte count, not '" + v +
                                   "'");
      } else if (arg.rfind("--", 0) == 0 || !o.path.empty()) {
        return usage();
      } else {
        o.path = arg;
      }
    } catch (const std::exception &e) {
      std::cerr << "locus-run: " << e.what() << "\n";
      return 2;
    }
  }
  if (o.path.empty())
    return usage();
  if (o.views && o.registered) {
    std::cerr << "locus-run: --views and --register are two ways to feed "
                 "the same run: pick one\n";
    return 2;
  }
  return 0;
}

/// An input's name, bytes and dims.
struct Input {
  std::string name;
  std::vector<char> bytes;
  std::vector<int64_t> dims;
};
using Inputs = std::vector<Input>;

/// The inputs given as files, then (with --random-inputs) the others.
/// Throws on a name the model has no input of.
Inputs readInputs(const locus::rt::Model &model, const Options &o) {
  Inputs inputs;
  for (const auto &[name, file] : o.inputFiles) {
    bool known = false;
    for (const auto &info : model.inputs())
      if (info.name == name) {
        known = true;
        std::vector<int64_t> dims;
        std::vector<char> bytes = readInput(file, info, dims);
        inputs.push_back({name, std::move(bytes), std::move(dims)});
      }
    if (!known) {
      std::string names;
      for (const auto &info : model.inputs())
        names += (names.empty() ? "" : ", ") + info.name;
      std::string message = "the model has no input '" + name;
      message += "' (inputs: " + names + ")";
      throw std::runtime_error(message);
    }
  }
  if (!o.random)
    return inputs;
  uint64_t seed = 1;
  for (const auto &info : model.inputs()) {
    if (o.inputFiles.count(info.name))
      continue;
    std::vector<char> bytes(info.byteSize, 0);
    if (info.dtype == LOCUS_DTYPE_F32)
      locus::rt::check(locus_init_fill(
          LOCUS_INIT_UNIFORM, -1.0, 1.0, seed++, info.byteSize / 4,
          reinterpret_cast<float *>(bytes.data())));
    inputs.push_back({info.name, std::move(bytes), info.shape});
  }
  return inputs;
}

/// The bytes of `info`'s tensor at `dims`.
size_t bytesAt(const locus::rt::TensorInfo &info,
               const std::vector<int64_t> &dims) {
  size_t elements = 1, bound = 1;
  for (int64_t d : info.shape)
    bound *= static_cast<size_t>(d);
  for (int64_t d : dims)
    elements *= static_cast<size_t>(d);
  return bound ? info.byteSize / bound * elements : 0;
}

void setInputs(locus::rt::Context &context, const Inputs &inputs) {
  for (const Input &input : inputs)
    context.setInput(input.name, input.bytes.data(), input.bytes.size(),
                     input.dims);
}

/// Asks for every input's view, writing the inputs there when `write`.
void viewInputs(locus::rt::Context &context, const Inputs &inputs, bool write) {
  for (const Input &input : inputs) {
    size_t room = 0;
    void *view = context.inputView(input.name, &room);
    if (write)
      std::memcpy(view, input.bytes.data(), std::min(room, input.bytes.size()));
  }
}

/// Asks for every output's view, reading its first byte (the time to have
/// it in host memory).
unsigned viewOutputs(const locus::rt::Model &model,
                     locus::rt::Context &context) {
  unsigned seen = 0;
  for (const auto &output : model.outputs()) {
    size_t bytes = 0;
    const void *view = context.outputView(output.name, &bytes);
    if (bytes)
      seen += *static_cast<const unsigned char *>(view);
  }
  return seen;
}

/// Reads every output into `into` (one buffer per output, reused).
void readOutputs(const locus::rt::Model &model, locus::rt::Context &context,
                 std::vector<std::vector<char>> &into) {
  into.resize(model.outputs().size());
  for (size_t i = 0; i < into.size(); ++i) {
    into[i].resize(bytesAt(model.outputs()[i],
                           context.outputShape(model.outputs()[i].name)));
    context.readOutput(model.outputs()[i].name, into[i].data(), into[i].size());
  }
}

/// --register: the inputs' memory and the outputs' (made at their bounds,
/// so that no later resize moves them) registered with the model, which
/// unregisters them when it is released.
void registerBuffers(const locus::rt::Model &model, const Inputs &inputs,
                     std::vector<std::vector<char>> &outputs) {
  size_t pinned = 0, count = 0;
  auto add = [&](const void *data, size_t bytes) {
    if (!bytes)
      return;
    // Registering reads and writes nothing: the inputs stay as they are.
    int isPinned = 0;
    locus::rt::check(locus_model_register_host(
        model.get(), const_cast<void *>(data), bytes, &isPinned));
    pinned += static_cast<size_t>(isPinned);
    ++count;
  };
  for (const Input &input : inputs)
    add(input.bytes.data(), input.bytes.size());
  outputs.resize(model.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].resize(model.outputs()[i].byteSize);
    add(outputs[i].data(), outputs[i].size());
  }
  std::cout << "registered " << count << " host buffer"
            << (count == 1 ? "" : "s") << ", " << pinned
            << " page-locked for the GPU\n";
}

/// The median and the minimum of `micros` after the first two (load, warm
/// caches, capture), as "median X us, min Y us".
std::string steadyTimes(const std::vector<double> &micros) {
  std::vector<double> steady(micros.begin() + 2, micros.end());
  std::sort(steady.begin(), steady.end());
  std::ostringstream text;
  text << "median " << steady[steady.size() / 2] << " us, min "
       << steady.front() << " us";
  return text.str();
}

double microsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// Runs the step `runs` times and prints what a step did and, after more
/// than two runs, its time. With --host-io every run also sets the inputs
/// and reads the outputs, as a serving loop does, and the time is theirs
/// and the step's together, with each part's median.
void runSteps(const locus::rt::Model &model, locus::rt::Context &context,
              const Inputs &inputs, const Options &o) {
  const int runs = o.runs;
  std::vector<double> micros, in, step, out;
  std::vector<std::vector<char>> outputs;
  if (o.registered)
    registerBuffers(model, inputs, outputs);
  volatile unsigned seen = 0; // what the output views gave (kept, not used)
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (o.views)
      viewInputs(context, inputs, r == 0);
    else if (o.hostIo)
      setInputs(context, inputs);
    if (o.hostIo)
      in.push_back(microsSince(start));
    auto stepStart = std::chrono::steady_clock::now();
    context.run();
    step.push_back(microsSince(stepStart));
    if (o.hostIo) {
      auto outStart = std::chrono::steady_clock::now();
      if (o.views)
        seen = seen + viewOutputs(model, context);
      else
        readOutputs(model, context, outputs);
      out.push_back(microsSince(outStart));
    }
    micros.push_back(microsSince(start));
  }
  locus_run_stats_t stats = context.stats();
  std::cout << "ran " << runs << " step" << (runs == 1 ? "" : "s") << ": "
            << stats.launches << " launches (" << stats.sim_launches
            << " on sim), " << stats.copies << " copies (" << stats.copy_bytes
            << " B) per step\n";
  if (runs <= 2)
    return;
  // The first two runs load, warm caches and (on a GPU) capture: the time
  // of a step is the median of the others.
  std::cout << "step time: " << steadyTimes(micros) << " over " << runs - 2
            << " runs (after 2 warm-up runs)"
            << (o.views        ? ", host I/O through views"
                : o.registered ? ", host I/O through registered memory"
                : o.hostIo     ? ", host I/O"
                               : "")
            << "\n";
  if (o.hostIo)
    std::cout << "host I/O: inputs in " << steadyTimes(in) << "; step "
              << steadyTimes(step) << "; outputs out " << steadyTimes(out)
              << "\n";
}

/// Prints the first (up to 8) values of an output's `data`, and how many
/// there are when there are more.
void printValues(const locus::rt::TensorInfo &info,
                 const std::vector<char> &data) {
  size_t count = data.size() / elementBytes(info.dtype);
  for (size_t k = 0; k < count && k < 8; ++k) {
    char text[32];
    if (info.dtype == LOCUS_DTYPE_F32) {
      float v;
      std::memcpy(&v, data.data() + 4 * k, 4);
      std::snprintf(text, sizeof text, " %.6g", v);
    } else if (info.dtype == LOCUS_DTYPE_I64) {
      int64_t v;
      std::memcpy(&v, data.data() + 8 * k, 8);
      std::snprintf(text, sizeof text, " %lld", static_cast<long long>(v));
    } else if (info.dtype == LOCUS_DTYPE_I32) {
      int32_t v;
      std::memcpy(&v, data.data() + 4 * k, 4);
      std::snprintf(text, sizeof text, " %d", v);
    } else if (info.dtype == LOCUS_DTYPE_BF16 ||
               info.dtype == LOCUS_DTYPE_F16) {
      uint16_t bits;
      std::memcpy(&bits, data.data() + 2 * k, 2);
      std::snprintf(text, sizeof text, " %.4g",
                    info.dtype == LOCUS_DTYPE_BF16
                        ? locus::half::fromBf16Bits(bits)
                        : locus::half::fromF16Bits(bits));
    } else {
      std::snprintf(text, sizeof text, " %d", data[k] ? 1 : 0);
    }
    std::cout << text;
  }
  if (count > 8)
    std::cout << " ... (" << count << " values)";
}

/// Prints each output (its shape, dtype, device and, unless --quiet, its
/// first values) and saves it with --save-outputs.
void printOutputs(const locus::rt::Model &model, locus::rt::Context &context,
                  const Options &o) {
  for (locus::rt::TensorInfo info : model.outputs()) {
    std::vector<int64_t> dims = context.outputShape(info.name); // last run's
    std::vector<char> data(bytesAt(info, dims));
    info.shape = dims;
    info.byteSize = data.size();
    context.readOutput(info.name, data.data(), data.size());
    std::cout << info.name << " " << shapeText(info.shape) << " "
              << dtypeText(info.dtype) << " on " << info.device;
    if (!o.quiet) {
      std::cout << ":";
      printValues(info, data);
    }
    std::cout << "\n";
    if (!o.saveDir.empty())
      writeNpy(o.saveDir + "/" + info.name + ".npy", info, data);
  }
}

} // namespace

static int runMain(int argc, char **argv) {
  Options o;
  if (int status = parseArgs(argc, argv, o))
    return status;
  try {
    if (!o.saveDir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.saveDir, ec);
      if (ec)
        throw std::runtime_error("--save-outputs: cannot create " + o.saveDir +
                                 ": " + ec.message());
    }
    locus::rt::Model::LoadOptions load;
    load.deviceMap = o.deviceMap;
    load.trustedKeys = o.trustedKeys;
    load.tracePath = o.trace;
    load.maxBytes = o.maxBytes;
    std::optional<locus::rt::Comm> comm;
    if (o.distributed) {
      comm.emplace();
      // One GPU per rank, unless --device-map says otherwise.
      if (load.deviceMap.empty())
        load.deviceMap = comm->deviceMap();
    }
    locus::rt::Model model = locus::rt::Model::load(o.path, load);
    std::cout << model.report();
    if (!o.weights.empty()) {
      size_t loaded = model.loadState(o.weights, o.weightsPartial);
      std::cout << "loaded " << loaded << " of " << model.states().size()
                << " state tensors from " << o.weights << "\n";
    }
    if (comm) {
      comm->join(model);
      std::cout << "joined as rank " << comm->rank() << " of " << comm->size()
                << " (" << comm->backend() << ")\n";
    }
    locus::rt::Context context(model);
    Inputs inputs = readInputs(model, o);
    setInputs(context, inputs);
    runSteps(model, context, inputs, o);
    printOutputs(model, context, o);
    if (!o.saveState.empty()) {
      model.saveState(o.saveState);
      std::cout << "saved " << model.states().size() << " state tensors to "
                << o.saveState << "\n";
    }
    // After the state: a trace that cannot be written loses no weights.
    if (!o.trace.empty()) {
      model.writeTrace(o.trace);
      std::cout << "trace: " << o.trace << "\n";
    }
  } catch (const locus::rt::Error &e) {
    std::cerr << "locus-run: " << locus_status_code_name(e.code()) << ": "
              << e.what() << "\n";
    // A bug of Locus (sysexits.h's EX_SOFTWARE), as the compiler's tools.
    return e.code() == LOCUS_STATUS_INTERNAL ? 70 : 1;
  } catch (const std::exception &e) {
    std::cerr << "locus-run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  try {
    return runMain(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "locus-run: " << e.what() << "\n";
    return 1;
  }
}
