//===- Calibrate.cpp - measuring this machine for the cost model ----------===//

#include "locus/Compile/Calibrate.h"
#include "locus/Compile.h"
#include "locus/locus.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace locus;

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind { tiny, stream, matmul, conv, softmax, roundTrip };

/// One measured op: the chains repeat it; `size` is its elements (tiny,
/// stream, round trips), its square matrices' side (matmul) or its
/// channels (conv, over a square image of side `side`).
struct Problem {
  Kind kind;
  int64_t size = 0;
  int64_t side = 0;
  int shortChain = 1, longChain = 2;
  /// Whether the runs may replay as a CUDA graph (the launch measured
  /// inside one), or launch each kernel themselves.
  bool cudaGraphs = false;
  /// Whether the chain is compiled with precision="bf16" (matmul, conv):
  /// its products and convolutions read bf16 operands, as autocast's do.
  bool half = false;
};

/// The shape of the chain's input, `h`.
Shape inputShape(const Problem &problem) {
  switch (problem.kind) {
  case Kind::matmul:
    return {problem.size, problem.size};
  case Kind::conv:
    return {1, problem.size, problem.side, problem.side};
  case Kind::softmax:
    return {problem.size / problem.side, problem.side};
  default:
    return {problem.size};
  }
}

/// What every run of a chain of `problem` is fed: `h`, values in
/// [-0.05, 0.05).
std::map<std::string, HostTensor> inputOf(const Problem &problem) {
  Shape shape = inputShape(problem);
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::vector<float> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = 0.1f * static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.05f;
  return {{"h", HostTensor::fromF32(shape, std::move(values))}};
}

/// The chain of `length` ops of `problem` on `device`, compiled. Its input
/// (inputOf) and state are created on `device` (a pin), so every op runs
/// there; the one output is the same in every chain of a problem. The
/// chain starts from an input, fed each run: a chain of state alone would
/// run once, at load (the kernels of state no step writes).
CompiledModel compileChain(const Problem &problem, const Device &device,
                           int length, const CalibrateOptions &options) {
  Graph g("calibrate");
  g.manual_seed(7);
  StateOptions on{.device = device};
  Init init = Init::uniform(-0.05, 0.05, 11);
  Tensor h =
      g.input("h", inputShape(problem),
              {.device = problem.kind == Kind::roundTrip ? cpu() : device});
  switch (problem.kind) {
  case Kind::tiny:
  case Kind::stream: {
    Tensor c = g.parameter("c", {problem.size}, init, on);
    for (int i = 0; i < length; ++i)
      h = add(h, c);
    break;
  }
  case Kind::matmul: {
    int64_t n = problem.size;
    Tensor b = g.parameter("b", {n, n}, init, on);
    for (int i = 0; i < length; ++i)
      h = matmul(h, b);
    break;
  }
  case Kind::conv: {
    int64_t c = problem.size;
    Tensor w = g.parameter("w", {c, c, 3, 3}, init, on);
    for (int i = 0; i < length; ++i)
      h = conv2d(h, w, {}, {.padding = {1, 1}});
    break;
  }
  case Kind::softmax: {
    for (int i = 0; i < length; ++i)
      h = softmax(h, 1);
    break;
  }
  case Kind::roundTrip: {
    for (int i = 0; i < length; ++i)
      h = neg(neg(h.to(device)).to(cpu()));
    break;
  }
  }
  g.output("y", h);
  CompileOptions compile;
  // One kernel per op: launches are what is measured. A bf16 chain is
  // fused as a model is, so that each op's kernel takes in the casts
  // around it (on the CPU the call then reads and writes bf16).
  compile.fuse = problem.half;
  if (problem.half)
    compile.precision = "bf16";
  compile.cudaGraphs = problem.cudaGraphs;
  compile.diagnostics = [](const Diagnostic &) {};
  if (device.isCuda()) {
    compile.deviceMap = options.deviceMap; // CPU chains use no CUDA device
    compile.policy = "strict";
    compile.devices = {"cpu", device.str()};
  } else {
    compile.policy = "cpu";
    compile.devices = {"cpu"};
  }
  return locus::compile(g, compile);
}

double secondsOfRun(const CompiledModel &model,
                    const std::map<std::string, HostTensor> &inputs) {
  Clock::time_point start = Clock::now();
  model.run(inputs);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Timing {
  double perOp;    ///< seconds of one op
  double shortRun; ///< seconds of a run of the short chain
};

/// Seconds of one op of `problem`: the median over interleaved rounds of
/// the difference between the long and the short chain, per extra op.
Timing secondsPerOp(const Problem &problem, const Device &device,
                    const CalibrateOptions &options, int rounds) {
  CompiledModel shortChain =
      compileChain(problem, device, problem.shortChain, options);
  CompiledModel longChain =
      compileChain(problem, device, problem.longChain, options);
  std::map<std::string, HostTensor> inputs = inputOf(problem);
  auto secondsOf = [&](const CompiledModel &model) {
    return secondsOfRun(model, inputs);
  };
  for (int warm = 0; warm < 2; ++warm) {
    secondsOf(shortChain);
    secondsOf(longChain);
  }
  std::vector<double> perOp, longTimes, shortTimes;
  int extra = problem.longChain - problem.shortChain;
  for (int round = 0; round < rounds; ++round) {
    // Alternate which runs first, so that neither always runs warm.
    double first = secondsOf(round % 2 ? longChain : shortChain);
    double second = secondsOf(round % 2 ? shortChain : longChain);
    double shortTime = round % 2 ? second : first;
    double longTime = round % 2 ? first : second;
    perOp.push_back((longTime - shortTime) / extra);
    longTimes.push_back(longTime / problem.longChain);
    shortTimes.push_back(shortTime);
  }
  double result = median(perOp);
  // Noise larger than the op itself (a tiny op on a busy machine): the long
  // chain's time per op bounds it from above.
  if (!(result > 0))
    result = median(longTimes);
  return {result, median(shortTimes)};
}

/// The time left for the op's own work once its launch is paid.
double workSeconds(double perOp, double launchSeconds) {
  return std::max(perOp - launchSeconds, perOp / 2);
}

std::string timeText(double seconds) {
  if (seconds < 1e-6)
    return llvm::formatv("{0:F0} ns", seconds * 1e9).str();
  if (seconds < 1e-3)
    return llvm::formatv("{0:F1} us", seconds * 1e6).str();
  return llvm::formatv("{0:F2} ms", seconds * 1e3).str();
}

/// The problems measured on the CPU or a GPU, full or quick: per class a
/// few sizes, small to large (the curves of the profile).
struct Sizes {
  Problem tiny;
  std::vector<Problem> matmul, conv, elementwise, reduction;
  Problem bigTrip, smallTrip;
};

Sizes sizesFor(bool gpu, bool quick) {
  if (quick)
    return {
        {Kind::tiny, 16, 0, 1, 33},
        {{Kind::matmul, 32, 0, 1, 9}, {Kind::matmul, 128, 0, 1, 3}},
        {{Kind::conv, 16, 14, 1, 3}},
        {{Kind::stream, 1 << 10, 0, 1, 9}, {Kind::stream, 1 << 18, 0, 1, 3}},
        {{Kind::softmax, 1 << 14, 256, 1, 3}},
        {Kind::roundTrip, 1 << 16, 0, 1, 3},
        {Kind::roundTrip, 16, 0, 1, 9}};
  if (gpu)
    return {{Kind::tiny, 16, 0, 1, 129},
            {{Kind::matmul, 128, 0, 1, 33},
             {Kind::matmul, 512, 0, 1, 9},
             {Kind::matmul, 2048, 0, 1, 3}},
            {{Kind::conv, 16, 28, 1, 17}, {Kind::conv, 64, 112, 1, 3}},
            {{Kind::stream, 1 << 16, 0, 1, 33},
             {Kind::stream, 1 << 20, 0, 1, 9},
             {Kind::stream, 1 << 25, 0, 1, 5}},
            {{Kind::softmax, 1 << 16, 256, 1, 33},
             {Kind::softmax, 1 << 24, 256, 1, 5}},
            {Kind::roundTrip, 1 << 22, 0, 1, 5},
            {Kind::roundTrip, 16, 0, 1, 33}};
  return {{Kind::tiny, 16, 0, 1, 129},
          {{Kind::matmul, 32, 0, 1, 33},
           {Kind::matmul, 64, 0, 1, 17},
           {Kind::matmul, 128, 0, 1, 9},
           {Kind::matmul, 256, 0, 1, 5},
           {Kind::matmul, 512, 0, 1, 5}},
          {{Kind::conv, 8, 14, 1, 17},
           {Kind::conv, 16, 28, 1, 9},
           {Kind::conv, 32, 28, 1, 5},
           {Kind::conv, 64, 56, 1, 5}},
          {{Kind::stream, 1 << 10, 0, 1, 65},
           {Kind::stream, 1 << 14, 0, 1, 33},
           {Kind::stream, 1 << 18, 0, 1, 9},
           {Kind::stream, 1 << 23, 0, 1, 5}},
          {{Kind::softmax, 1 << 12, 256, 1, 33},
           {Kind::softmax, 1 << 16, 256, 1, 17},
           {Kind::softmax, 1 << 20, 256, 1, 5},
           {Kind::softmax, 1 << 23, 256, 1, 5}},
          {},
          {}};
}

/// The op's work as the cost model counts it: flops for matmul and conv,
/// bytes (operands and result) for elementwise adds and softmax.
double workOf(const Problem &p) {
  double size = static_cast<double>(p.size);
  switch (p.kind) {
  case Kind::matmul:
    return 2 * size * size * size;
  case Kind::conv: {
    double side = static_cast<double>(p.side);
    return 2 * side * side * size * size * 9;
  }
  case Kind::tiny:
  case Kind::stream:
    return 3 * 4 * size;
  case Kind::softmax:
    return 2 * 4 * size;
  case Kind::roundTrip:
    break;
  }
  return 4 * size;
}

std::string describe(const Problem &p) {
  const char *half = p.half ? ", bf16" : "";
  switch (p.kind) {
  case Kind::matmul:
    return llvm::formatv("matmul {0}x{0}x{0}{1}", p.size, half).str();
  case Kind::conv:
    return llvm::formatv("conv2d 3x3, {0} channels, {1}x{1}{2}", p.size, p.side,
                         half)
        .str();
  case Kind::tiny:
  case Kind::stream:
    return llvm::formatv("add of {0} floats", p.size).str();
  case Kind::softmax:
    return llvm::formatv("softmax of {0}x{1}", p.size / p.side, p.side).str();
  case Kind::roundTrip:
    break;
  }
  return llvm::formatv("round trip of {0} floats", p.size).str();
}

std::string cpuName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return llvm::StringRef(line).substr(colon + 1).trim().str();
    }
  return "an unknown CPU";
}

std::string today() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

/// A JSON number with `digits` decimals, never below the smallest such
/// positive number (a profile's values are positive).
std::string number(double value, int digits) {
  double least = std::pow(10.0, -digits);
  return llvm::formatv("{0}",
                       llvm::format("%.*f", digits, std::max(least, value)))
      .str();
}

std::string curveJson(const RateCurve &curve) {
  std::string text = "[";
  for (const auto &[work, rate] : curve)
    text += (text.size() > 1 ? ", [" : "[") +
            llvm::formatv("{0:e3}", work).str() + ", " + number(rate / 1e9, 2) +
            "]";
  return text + "]";
}

std::string deviceJson(const DeviceProfile &device) {
  std::string curves;
  for (int c = 1; c < kOpClasses; ++c)
    if (!device.curves[c].empty())
      curves += (curves.empty() ? "" : ",\n      ") +
                ("\"" + opClassName(static_cast<OpClass>(c)).str() + "\": ") +
                curveJson(device.curves[c]);
  std::string extras =
      device.graphLaunchNs > 0
          ? ", \"graph_launch_ns\": " + number(device.graphLaunchNs, 0)
          : "";
  if (device.halfFlops > 0)
    extras += ", \"half_gflops\": " + number(device.halfFlops / 1e9, 1);
  if (device.halfConvFlops > 0)
    extras +=
        ", \"half_conv_gflops\": " + number(device.halfConvFlops / 1e9, 1);
  return llvm::formatv("{{\"peak_gflops\": {0}, \"conv_gflops\": {1}, "
                       "\"bandwidth_gbps\": {2}, \"launch_ns\": {3}{5},\n"
                       "    \"curves\": {{{4}}}",
                       number(device.peakFlops / 1e9, 1),
                       number(device.convFlops / 1e9, 1),
                       number(device.bandwidth / 1e9, 2),
                       number(device.launchNs, 0), curves, extras)
      .str();
}

class Calibrator {
public:
  explicit Calibrator(const CalibrateOptions &options) : options_(options) {}

  /// Measures `device` into `profile`.
  void measureDevice(const Device &device, DeviceProfile &profile) {
    Sizes sizes = sizesFor(device.isCuda(), options_.quick);
    std::string name = device.str();
    Timing tiny = time(sizes.tiny, device, options_.rounds * 3 + 1,
                       name + " launch (adds of 16 floats)",
                       [](double) { return " per kernel"; });
    double launch = tiny.perOp;
    profile.launchNs = launch * 1e9;
    if (device.isCuda()) {
      Problem replayed = sizes.tiny;
      replayed.cudaGraphs = true;
      profile.graphLaunchNs = perOp(replayed, device, options_.rounds * 3 + 1,
                                    name + " launch in a replayed CUDA graph",
                                    [](double) { return " per kernel"; }) *
                              1e9;
    }
    // A run of one tiny kernel, less the kernel: what every run pays. The
    // CPU's is the profile's; a GPU's run also waits for the device.
    if (!device.isCuda()) {
      runSeconds = std::max(1e-7, tiny.shortRun - launch);
      report("run (an input and an output of 16 floats): " +
             timeText(runSeconds) + " besides its kernels");
    }
    auto curve = [&](const std::vector<Problem> &problems, OpClass opClass,
                     const char *unit) {
      RateCurve &points = profile.curves[static_cast<int>(opClass)];
      for (const Problem &problem : problems) {
        double work = workOf(problem);
        double rate = 0;
        perOp(problem, device, options_.rounds, name + " " + describe(problem),
              [&](double seconds) {
                rate = work / workSeconds(seconds, launch);
                return llvm::formatv(", {0:F1} {1}", rate / 1e9, unit).str();
              });
        points.emplace_back(work, rate);
      }
      return points.back().second; // the largest problem's rate
    };
    profile.peakFlops = curve(sizes.matmul, OpClass::matmul, "GFLOP/s");
    profile.convFlops = curve(sizes.conv, OpClass::conv, "GFLOP/s");
    profile.bandwidth = curve(sizes.elementwise, OpClass::elementwise, "GB/s");
    curve(sizes.reduction, OpClass::reduction, "GB/s");
    // precision="bf16": the largest product and convolution again, their
    // operands bf16 (each op with its roundings, as a model has them).
    auto half = [&](Problem problem, double &rate) {
      problem.half = true;
      double work = workOf(problem);
      perOp(problem, device, options_.rounds, name + " " + describe(problem),
            [&](double seconds) {
              rate = work / workSeconds(seconds, launch);
              return llvm::formatv(", {0:F1} GFLOP/s", rate / 1e9).str();
            });
    };
    // (Autocast keeps a product against a weight under 2^17 elements in
    // f32: --quick's largest one.)
    if (sizes.matmul.back().size * sizes.matmul.back().size >= (1 << 17))
      half(sizes.matmul.back(), profile.halfFlops);
    half(sizes.conv.back(), profile.halfConvFlops);
  }

  /// Measures the link between the host and `device`, whose profile (and
  /// the CPU's) is measured already.
  void measureLink(const Device &device, CostProfile &profile) {
    Sizes sizes = sizesFor(true, options_.quick);
    // A round trip: a copy there, a neg there, a copy back, a neg here.
    auto kernels = [&](const Problem &p) {
      double bytes = 2.0 * 4 * static_cast<double>(p.size);
      return opCostNs({0, bytes, true}, profile.cpu) * 1e-9 +
             opCostNs({0, bytes, true}, profile.cuda) * 1e-9;
    };
    double small = perOp(sizes.smallTrip, device, options_.rounds * 3 + 1,
                         "link latency (round trips of 16 floats)",
                         [](double) { return " per round trip"; });
    double latency = std::max(1e-7, (small - kernels(sizes.smallTrip)) / 2);
    profile.linkLatencyNs = latency * 1e9;
    double bytes = 4.0 * static_cast<double>(sizes.bigTrip.size);
    double big = perOp(
        sizes.bigTrip, device, options_.rounds,
        "link bandwidth (round trips of " + std::to_string(sizes.bigTrip.size) +
            " floats)",
        [&](double s) {
          double copy = std::max(latency, (s - kernels(sizes.bigTrip)) / 2);
          return llvm::formatv(" per round trip, {0:F2} GB/s",
                               bytes / std::max(copy - latency, copy / 2) / 1e9)
              .str();
        });
    double copy = std::max(latency, (big - kernels(sizes.bigTrip)) / 2);
    profile.linkBandwidth = bytes / std::max(copy - latency, copy / 2);
  }

  std::vector<std::string> lines;
  double runSeconds = 0;

private:
  template <typename Rate>
  Timing time(const Problem &problem, const Device &device, int rounds,
              const std::string &what, Rate rate) {
    Timing timing = secondsPerOp(problem, device, options_, rounds);
    report(what + ": " + timeText(timing.perOp) + rate(timing.perOp));
    return timing;
  }

  template <typename Rate>
  double perOp(const Problem &problem, const Device &device, int rounds,
               const std::string &what, Rate rate) {
    return time(problem, device, rounds, what, rate).perOp;
  }

  void report(const std::string &line) {
    lines.push_back(line);
    if (options_.progress)
      options_.progress(line);
  }

  const CalibrateOptions &options_;
};

} // namespace

Calibration locus::calibrate(const CalibrateOptions &options) {
  if (options.rounds < 1)
    throw Error("", 0, 0, "calibration needs at least one round");
  std::optional<Device> gpu;
  if (!options.device.empty()) {
    gpu = Device::parse(options.device);
    if (!gpu->isCuda())
      throw Error("", 0, 0,
                  "the device to calibrate besides the CPU is a CUDA device "
                  "(cuda:N), not '" +
                      options.device + "'");
  }
  Calibration result;
  Calibrator calibrator(options);
  calibrator.measureDevice(cpu(), result.profile.cpu);
  std::string measured = "cpu";
  if (gpu) {
    calibrator.measureDevice(*gpu, result.profile.cuda);
    calibrator.measureLink(*gpu, result.profile);
    measured += ", " + gpu->str();
    if (!options.deviceMap.empty())
      measured += " (" + options.deviceMap + ")";
    measured += " and the link";
  }
  result.lines = std::move(calibrator.lines);

  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string description = "locus-calibrate " + today() + ": " + measured +
                            " on " + cpuName() + ", " + std::to_string(cores) +
                            " cores" + (options.quick ? ", quick" : "");
  std::string json =
      "{\n  \"version\": 1,\n  \"description\": " +
      llvm::formatv("{0}", llvm::json::Value(description)).str() +
      ",\n  \"run_ns\": " + number(calibrator.runSeconds * 1e9, 0) +
      ",\n  \"cpu\": " + deviceJson(result.profile.cpu);
  if (gpu) {
    json += ",\n  \"cuda\": " + deviceJson(result.profile.cuda);
    json += ",\n  \"link\": {\"latency_ns\": " +
            number(result.profile.linkLatencyNs, 0) + ", \"bandwidth_gbps\": " +
            number(result.profile.linkBandwidth / 1e9, 2) + "}";
  }
  result.json = json + "\n}\n";
  // What a file with this text gives, rounding included.
  CostProfile written;
  std::string error;
  if (!CostProfile::parse(result.json, written, error))
    throw Error("", 0, 0,
                "calibration wrote a profile it cannot read: " + error);
  written.origin = description;
  result.profile = written;
  return result;
}
