//===- CostModel.cpp - estimated time of ops and copies -------------------===//

#include "locus/Passes/CostModel.h"
#include "locus/Dialect/LocusDialect.h"

#include "locus/Support/Errors.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace locus;

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

namespace {

/// Reads `object[key]` as a positive number scaled by `scale` into `out`.
bool readNumber(const llvm::json::Object &object, llvm::StringRef where,
                llvm::StringRef key, double scale, double &out,
                std::string &error) {
  const llvm::json::Value *value = object.get(key);
  if (!value)
    return true;
  std::optional<double> number = value->getAsNumber();
  if (!number || !(*number > 0) || !std::isfinite(*number)) {
    error = (where + "." + key + " must be a positive number").str();
    return false;
  }
  out = *number * scale;
  return true;
}

bool onlyKeys(const llvm::json::Object &object, llvm::StringRef where,
              std::initializer_list<llvm::StringRef> keys, std::string &error) {
  for (const auto &entry : object) {
    llvm::StringRef key = entry.first;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (llvm::StringRef k : keys)
        known += (known.empty() ? "" : ", ") + k.str();
      error = ("unknown field " + where + "." + key + " (known: " + known + ")")
                  .str();
      return false;
    }
  }
  return true;
}

/// `object.curves`: {"matmul": [[work, rate], ...], ...}, rates in G/s.
bool readCurves(const llvm::json::Object &object, llvm::StringRef where,
                DeviceProfile &device, std::string &error) {
  const llvm::json::Value *value = object.get("curves");
  if (!value)
    return true;
  std::string at = (where + ".curves").str();
  const llvm::json::Object *curves = value->getAsObject();
  if (!curves) {
    error = at + " must be an object";
    return false;
  }
  if (!onlyKeys(*curves, at, {"matmul", "conv", "elementwise", "reduction"},
                error))
    return false;
  for (int c = 1; c < kOpClasses; ++c) {
    llvm::StringRef name = opClassName(static_cast<OpClass>(c));
    const llvm::json::Value *points = curves->get(name);
    if (!points)
      continue;
    std::string field = at + "." + name.str();
    const llvm::json::Array *array = points->getAsArray();
    if (!array || array->empty()) {
      error = field + " must be a non-empty array of [work, rate] pairs";
      return false;
    }
    RateCurve curve;
    for (const llvm::json::Value &point : *array) {
      const llvm::json::Array *pair = point.getAsArray();
      std::optional<double> work, rate;
      if (pair && pair->size() == 2) {
        work = (*pair)[0].getAsNumber();
        rate = (*pair)[1].getAsNumber();
      }
      if (!work || !rate || !(*work > 0) || !(*rate > 0) ||
          !std::isfinite(*work) || !std::isfinite(*rate)) {
        error = field + " must be a non-empty array of [work, rate] pairs " +
                "of positive numbers";
        return false;
      }
      if (!curve.empty() && *work <= curve.back().first) {
        error = field + " must list its points in increasing work";
        return false;
      }
      curve.emplace_back(*work, *rate * 1e9);
    }
    device.curves[c] = std::move(curve);
  }
  return true;
}

bool readDevice(const llvm::json::Object &root, llvm::StringRef name,
                DeviceProfile &device, std::string &error) {
  const llvm::json::Value *value = root.get(name);
  if (!value)
    return true;
  const llvm::json::Object *object = value->getAsObject();
  if (!object) {
    error = (name + " must be an object").str();
    return false;
  }
  return onlyKeys(*object, name,
                  {"peak_gflops", "bandwidth_gbps", "launch_ns",
                   "graph_launch_ns", "conv_gflops", "half_gflops",
                   "half_conv_gflops", "curves"},
                  error) &&
         readNumber(*object, name, "peak_gflops", 1e9, device.peakFlops,
                    error) &&
         readNumber(*object, name, "bandwidth_gbps", 1e9, device.bandwidth,
                    error) &&
         readNumber(*object, name, "launch_ns", 1, device.launchNs, error) &&
         readNumber(*object, name, "graph_launch_ns", 1, device.graphLaunchNs,
                    error) &&
         readNumber(*object, name, "conv_gflops", 1e9, device.convFlops,
                    error) &&
         readNumber(*object, name, "half_gflops", 1e9, device.halfFlops,
                    error) &&
         readNumber(*object, name, "half_conv_gflops", 1e9,
                    device.halfConvFlops, error) &&
         readCurves(*object, name, device, error);
}

} // namespace

bool CostProfile::parse(llvm::StringRef json, CostProfile &profile,
                        std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed) {
    error = "not JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = "a profile is a JSON object";
    return false;
  }
  CostProfile result = profile;
  if (!onlyKeys(*root, "profile",
                {"version", "description", "cpu", "cuda", "link", "peer_link",
                 "run_ns", "load_amortization_steps"},
                error))
    return false;
  if (const llvm::json::Value *version = root->get("version")) {
    if (version->getAsInteger() != std::optional<int64_t>(1)) {
      error = "profile.version must be 1";
      return false;
    }
  }
  if (const llvm::json::Value *description = root->get("description")) {
    if (!description->getAsString()) {
      error = "profile.description must be a string";
      return false;
    }
  }
  if (!readDevice(*root, "cpu", result.cpu, error) ||
      !readDevice(*root, "cuda", result.cuda, error))
    return false;
  if (const llvm::json::Value *link = root->get("link")) {
    const llvm::json::Object *object = link->getAsObject();
    if (!object) {
      error = "link must be an object";
      return false;
    }
    if (!onlyKeys(*object, "link", {"latency_ns", "bandwidth_gbps"}, error) ||
        !readNumber(*object, "link", "latency_ns", 1, result.linkLatencyNs,
                    error) ||
        !readNumber(*object, "link", "bandwidth_gbps", 1e9,
                    result.linkBandwidth, error))
      return false;
  }
  if (const llvm::json::Value *peer = root->get("peer_link")) {
    const llvm::json::Object *object = peer->getAsObject();
    if (!object) {
      error = "peer_link must be an object";
      return false;
    }
    if (!onlyKeys(*object, "peer_link", {"latency_ns", "bandwidth_gbps"},
                  error) ||
        !readNumber(*object, "peer_link", "latency_ns", 1, result.peerLatencyNs,
                    error) ||
        !readNumber(*object, "peer_link", "bandwidth_gbps", 1e9,
                    result.peerBandwidth, error))
      return false;
  }
  if (!readNumber(*root, "profile", "load_amortization_steps", 1,
                  result.loadAmortizationSteps, error) ||
      !readNumber(*root, "profile", "run_ns", 1, result.runNs, error))
    return false;
  profile = result;
  return true;
}

bool CostProfile::load(llvm::StringRef path, CostProfile &profile,
                       std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read cost profile '" + path.str() +
            "': " + buffer.getError().message();
    return false;
  }
  if (!parse((*buffer)->getBuffer(), profile, error)) {
    error = "cost profile '" + path.str() + "': " + error;
    return false;
  }
  profile.origin = path.str();
  // parse() succeeded: the JSON and its description are well formed.
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (json)
    if (const llvm::json::Object *root = json->getAsObject())
      if (std::optional<llvm::StringRef> text = root->getString("description"))
        profile.origin += " (" + text->str() + ")";
  return true;
}

llvm::StringRef locus::opClassName(OpClass opClass) {
  switch (opClass) {
  case OpClass::matmul:
    return "matmul";
  case OpClass::conv:
    return "conv";
  case OpClass::elementwise:
    return "elementwise";
  case OpClass::reduction:
    return "reduction";
  case OpClass::other:
    break;
  }
  return "other";
}

double locus::rateAt(const RateCurve &curve, double work) {
  if (work <= curve.front().first)
    return curve.front().second;
  if (work >= curve.back().first)
    return curve.back().second;
  auto above = std::upper_bound(
      curve.begin(), curve.end(), work,
      [](double w, const std::pair<double, double> &p) { return w < p.first; });
  auto below = std::prev(above);
  double t =
      std::log(work / below->first) / std::log(above->first / below->first);
  return std::exp(std::log(below->second) +
                  t * std::log(above->second / below->second));
}

//===----------------------------------------------------------------------===//
// Work of each op
//===----------------------------------------------------------------------===//

int64_t locus::bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bits = tensor.getElementType().getIntOrFloatBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(1, bits / 8);
}

static double numel(Value value) {
  return static_cast<double>(
      cast<RankedTensorType>(value.getType()).getNumElements());
}

/// Bytes read and written: every operand and every result.
static double trafficOf(Operation *op) {
  double bytes = 0;
  for (Value operand : op->getOperands())
    bytes += bytesOf(operand.getType());
  for (Value result : op->getResults())
    bytes += bytesOf(result.getType());
  return bytes;
}

namespace {

/// A kernel's work: `flops`, and every operand and result moved once.
OpWork kernelWork(Operation *op, double flops,
                  OpClass opClass = OpClass::other) {
  return OpWork{flops, trafficOf(op), true, opClass};
}
OpWork elementwiseWork(Operation *op, double flops) {
  return kernelWork(op, flops, OpClass::elementwise);
}
OpWork reductionWork(Operation *op, double flops) {
  return kernelWork(op, flops, OpClass::reduction);
}
/// A matrix product's work; `operand`'s element type says whether it runs
/// at the 16-bit rate.
OpWork productWork(Operation *op, double flops, Value operand) {
  OpWork work = kernelWork(op, flops, OpClass::matmul);
  Type element = cast<ShapedType>(operand.getType()).getElementType();
  work.half = element.isBF16() || element.isF16();
  return work;
}
/// A convolution's work; autocast's mark (or 16-bit operands) says whether
/// it may run at a GPU's 16-bit rate.
OpWork convolutionWork(Operation *op, double flops) {
  OpWork work = kernelWork(op, flops, OpClass::conv);
  auto sixteen = [](Type t) { return t && (t.isBF16() || t.isF16()); };
  auto mark = op->getAttrOfType<TypeAttr>(kAutocastAttrName);
  work.halfConv = (mark && sixteen(mark.getValue())) ||
                  sixteen(getElementTypeOrSelf(op->getOperand(0).getType()));
  return work;
}

/// The work of one op kind, from an op of that kind.
using CostRule = OpWork (*)(Operation *);

/// The cost rule of each locus op that computes, by its TypeID. Structural
/// ops (locus::OpTrait::Structural) need none: they are no kernel.
class CostRules {
public:
  CostRules();
  CostRule find(TypeID id) const { return rules.lookup(id); }

private:
  void addTrainingRules();
  /// `rule` for each of Ops.
  template <typename... Ops> void add(CostRule rule) {
    (rules.try_emplace(TypeID::get<Ops>(), rule), ...);
  }
  llvm::DenseMap<TypeID, CostRule> rules;
};

CostRules::CostRules() {
  add<ReshapeOp>([](Operation *) { return OpWork{}; }); // a view
  add<NegOp, ReluOp, AbsOp, FloorOp, CeilOp, RoundOp, ReciprocalOp, AddOp,
      SubOp, MulOp, DivOp, MaximumOp, MinimumOp, FmodOp, CmpOp, SelectOp,
      CastOp>(
      [](Operation *o) { return elementwiseWork(o, numel(o->getResult(0))); });
  add<ExpOp, LogOp, SqrtOp, SigmoidOp, TanhOp, PowOp, ErfOp, SinOp, CosOp,
      RsqrtOp, SiluOp, GeluOp>([](Operation *o) {
    return elementwiseWork(o, 4 * numel(o->getResult(0)));
  });
  add<BroadcastOp, TransposeOp, ConcatOp, SliceOp, GatherOp, GatherElementsOp>(
      [](Operation *o) { return kernelWork(o, 0); });
  add<SumOp, MeanOp, MaxOp, MinOp>(
      [](Operation *o) { return reductionWork(o, numel(o->getOperand(0))); });
  add<SoftmaxOp, LogSoftmaxOp>([](Operation *o) {
    return reductionWork(o, 5 * numel(o->getOperand(0)));
  });
  add<MatmulOp>([](Operation *o) {
    auto m = cast<MatmulOp>(o);
    int64_t k = m.getLhs().getType().getShape().back();
    return productWork(o, 2.0 * numel(m.getResult()) * k, m.getLhs());
  });
  add<LinearOp>([](Operation *o) {
    auto l = cast<LinearOp>(o);
    int64_t in = l.getWeight().getType().getDimSize(1);
    return productWork(o,
                       2.0 * numel(l.getResult()) * in +
                           (l.getBias() ? numel(l.getResult()) : 0),
                       l.getInput());
  });
  add<Conv2dOp>([](Operation *o) {
    auto c = cast<Conv2dOp>(o);
    auto w = c.getWeight().getType();
    double perOutput =
        2.0 * w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
    return convolutionWork(o, numel(c.getResult()) * perOutput);
  });
  addTrainingRules();
}

} // namespace

void CostRules::addTrainingRules() {
  add<MaxPool2dOp, AvgPool2dOp>([](Operation *o) {
    auto k = o->getAttrOfType<DenseI64ArrayAttr>("kernel_size");
    double window = k ? k[0] * k[1] : 1;
    return kernelWork(o, numel(o->getResult(0)) * window);
  });
  add<MseLossOp>([](Operation *o) {
    return kernelWork(o, 3 * numel(cast<MseLossOp>(o).getInput()));
  });
  add<OneHotOp, SliceGradOp, CountOp>(
      [](Operation *o) { return kernelWork(o, numel(o->getResult(0))); });
  // Zeros written, then one read of the gradient and one add per element.
  add<GatherGradOp, GatherElementsGradOp>([](Operation *o) {
    return kernelWork(o, numel(o->getResult(0)) + 2 * numel(o->getOperand(0)));
  });
  add<Conv2dInputGradOp, Conv2dWeightGradOp>([](Operation *o) {
    // The forward convolution's products, once more.
    Value grad =
        isa<Conv2dInputGradOp>(o) ? o->getOperand(0) : o->getOperand(1);
    auto w = isa<Conv2dInputGradOp>(o)
                 ? cast<RankedTensorType>(o->getOperand(1).getType())
                 : cast<RankedTensorType>(o->getResult(0).getType());
    return convolutionWork(o, 2.0 * numel(grad) * w.getDimSize(1) *
                                  w.getDimSize(2) * w.getDimSize(3));
  });
  add<MaxPool2dGradOp>([](Operation *o) {
    auto m = cast<MaxPool2dGradOp>(o);
    ArrayRef<int64_t> k = m.getKernelSize();
    return kernelWork(o, 3.0 * numel(m.getGrad()) * k[0] * k[1]);
  });
  // Two reading passes and one writing pass over the activations.
  add<BatchNormTrainOp, BatchNormTrainGradOp>([](Operation *o) {
    Value input =
        isa<BatchNormTrainOp>(o) ? o->getOperand(0) : o->getOperand(1);
    return reductionWork(o, 8 * numel(input));
  });
  add<SgdOp>([](Operation *o) {
    return elementwiseWork(o, 5 * numel(cast<SgdOp>(o).getParam()));
  });
  add<AdamOp>([](Operation *o) {
    return elementwiseWork(o, 14 * numel(cast<AdamOp>(o).getParam()));
  });
  add<CrossEntropyOp>([](Operation *o) {
    return kernelWork(o, 5 * numel(cast<CrossEntropyOp>(o).getLogits()));
  });
  add<RandomOp>([](Operation *o) {
    // Ten Philox rounds of 32-bit products (integer work, counted as
    // flops), and Box-Muller's log, sqrt and cos for normal.
    auto r = cast<RandomOp>(o);
    bool normal = r.getDistribution() == Distribution::normal;
    return kernelWork(o, (normal ? 60 : 40) * numel(r.getResult()));
  });
}

static const CostRules &costRules() {
  static const CostRules rules;
  return rules;
}

bool locus::hasCostRule(OperationName name) {
  if (name.hasTrait<locus::OpTrait::Structural>())
    return true;
  std::optional<RegisteredOperationName> registered = name.getRegisteredInfo();
  return registered && costRules().find(registered->getTypeID());
}

OpWork locus::estimateWork(Operation *op) {
  if (op->hasTrait<locus::OpTrait::Structural>())
    return OpWork{}; // sources, outputs, moves (their cost is the copy's)
  if (CostRule rule = costRules().find(op->getName().getTypeID()))
    return rule(op);
  // An op of the locus dialect without a rule is a bug (CostModelTest
  // checks that every one has one), never a silent guess.
  LOCUS_INTERNAL_ASSERT(!isa<LocusDialect>(op->getDialect()),
                        "the cost model has no rule for '" +
                            op->getName().getStringRef().str() + "'");
  // An op of another dialect: count its traffic, one flop per element.
  double elements = 0;
  for (Value result : op->getResults())
    if (isa<RankedTensorType>(result.getType()))
      elements += numel(result);
  return kernelWork(op, elements);
}

double locus::launchCostNs(const DeviceProfile &device, bool inGraph) {
  return inGraph && device.graphLaunchNs > 0 ? device.graphLaunchNs
                                             : device.launchNs;
}

int64_t locus::opCostNs(const OpWork &work, const DeviceProfile &device,
                        bool inGraph) {
  if (!work.kernel)
    return 0;
  const RateCurve &curve = device.curves[static_cast<int>(work.opClass)];
  const RateCurve &memory =
      device.curves[static_cast<int>(OpClass::elementwise)];
  // The memory side of the roofline: the measured streaming rate at this
  // many bytes when the profile has it (caches), else the bandwidth.
  double memorySeconds =
      work.bytes > 0
          ? work.bytes /
                (memory.empty() ? device.bandwidth : rateAt(memory, work.bytes))
          : 0;
  double seconds;
  if (work.half && device.halfFlops > 0) {
    seconds = std::max(work.flops / device.halfFlops, memorySeconds);
  } else if (work.halfConv && device.halfConvFlops > 0) {
    seconds = std::max(work.flops / device.halfConvFlops, memorySeconds);
  } else if (work.opClass == OpClass::matmul || work.opClass == OpClass::conv) {
    double rate = !curve.empty() ? rateAt(curve, work.flops)
                  : work.opClass == OpClass::conv && device.convFlops > 0
                      ? device.convFlops
                      : device.peakFlops;
    seconds = std::max(work.flops / rate, memorySeconds);
  } else if (!curve.empty()) {
    // Elementwise and reductions: their bytes at their measured rate.
    seconds = work.bytes > 0 ? work.bytes / rateAt(curve, work.bytes) : 0;
  } else {
    seconds = std::max(work.flops / device.peakFlops, memorySeconds);
  }
  return static_cast<int64_t>(
      std::llround(seconds * 1e9 + launchCostNs(device, inGraph)));
}

int64_t locus::copyCostNs(int64_t bytes, const CostProfile &profile) {
  return static_cast<int64_t>(std::llround(
      profile.linkLatencyNs + bytes / profile.linkBandwidth * 1e9));
}

int64_t locus::peerCopyCostNs(int64_t bytes, const CostProfile &profile) {
  if (profile.peerLatencyNs <= 0 || profile.peerBandwidth <= 0)
    return 2 * copyCostNs(bytes, profile);
  return static_cast<int64_t>(std::llround(
      profile.peerLatencyNs + bytes / profile.peerBandwidth * 1e9));
}
