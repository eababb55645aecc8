//===- ConvLayouts.cpp - --locus-conv-layouts -----------------------------===//
//
// A value that host convolution calls alone produce and read stays NHWC in
// memory between them: no reorders to NCHW and back around each call. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ConvCalls.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#include <optional>

#define DEBUG_TYPE "locus-conv-layouts"

namespace locus {
#define GEN_PASS_DEF_LOCUSCONVLAYOUTS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;
using namespace locus::conv;

namespace {

/// Values of fewer channels stay NCHW: the runtime reads an input of fewer
/// channels than an AVX-512 vector has floats as NCHW (oneDNN's direct
/// kernel, faster there than brgconv on NHWC), and LeNet at batch 64 took
/// 437 us a step with its 6-channel value NHWC against 362 with it NCHW.
constexpr int64_t kMinChannels = 16;

/// Whether `copy` casts `value` (in `body`) to another element type: an
/// elementwise pass that keeps whatever layout `value` has in memory.
bool castOf(Value copy, Value value, Block &body) {
  auto cast = copy.getDefiningOp<CastOp>();
  return cast && cast.getInput() == value && cast->getBlock() == &body;
}

/// The call a CPU kernel is when it is one locus_conv2d call and nothing
/// else (--locus-conv-to-runtime will make exactly that call), or none.
/// The kernel may also give a cast of the call's result beside it (a
/// ResNet block's output under autocast: the next block adds it in f32
/// and its convolution reads it rounded to bf16).
std::optional<Fused> callOf(KernelOp kernel) {
  DeviceAttr device = kernel.getDevice();
  unsigned results = kernel->getNumResults();
  if (!device || device.getKind() != DeviceKind::cpu ||
      (results != 1 && results != 2))
    return std::nullopt;
  Block &body = kernel.getBody().front();
  auto convs = body.getOps<Conv2dOp>();
  if (std::distance(convs.begin(), convs.end()) != 1)
    return std::nullopt;
  Fused f = matchFused(*convs.begin());
  // (With the casts up of 16-bit x and w in the kernel, and the rounding.)
  llvm::SmallPtrSet<Operation *, 2> castsUp;
  for (Value v : {f.sixteen.a ? f.conv.getInput() : Value(),
                  f.sixteen.b ? f.conv.getWeight() : Value()})
    if (Operation *up = v ? v.getDefiningOp() : nullptr;
        up && up->getBlock() == &body)
      castsUp.insert(up);
  size_t fused = 1 + (f.add ? 1 : 0) + (f.relu ? 1 : 0) + (f.pool ? 1 : 0) +
                 (f.sixteen.round ? 1 : 0) + castsUp.size();
  auto yield = cast<YieldOp>(body.getTerminator());
  Value out = f.output()->getResult(0);
  if (results == 2) {
    Value a = yield->getOperand(0), b = yield->getOperand(1);
    if (!(a == out && castOf(b, out, body)) &&
        !(b == out && castOf(a, out, body)))
      return std::nullopt;
    ++fused;
  } else if (yield->getOperand(0) != out) {
    return std::nullopt;
  }
  if (body.getOperations().size() != fused + 1)
    return std::nullopt;
  return f;
}

/// Whether `use` reads the input of `f`'s call: the convolution's input,
/// or the cast up of the 16-bit value the call reads.
bool readsInput(OpOperand &use, Fused &f) {
  if (use.getOwner() == f.conv)
    return use.getOperandNumber() == 0;
  return f.sixteen.a && use.get() == f.sixteen.a &&
         use.getOwner() == f.conv.getInput().getDefiningOp();
}

class ConvLayoutsPass
    : public locus::impl::LocusConvLayoutsBase<ConvLayoutsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    DenseMap<Operation *, Fused> calls; // kernel -> its call
    for (auto kernel : graph.getBodyBlock().getOps<KernelOp>())
      if (std::optional<Fused> call = callOf(kernel))
        calls[kernel] = *call;
    for (auto &[kernel, call] : calls)
      relayout(kernel, call.conv, calls);
  }

private:
  /// Marks the results of `producer`'s kernel (its call's result, and a
  /// cast of it beside) NHWC when every read of them is a call's input or
  /// residual.
  void relayout(Operation *kernel, Conv2dOp producer,
                const DenseMap<Operation *, Fused> &calls) {
    SmallVector<std::pair<Conv2dOp, StringRef>> reads;
    for (Value value : kernel->getResults()) {
      if (cast<RankedTensorType>(value.getType()).getDimSize(1) < kMinChannels)
        return;
      for (OpOperand &use : value.getUses()) {
        auto reader = use.getOwner()->getParentOfType<KernelOp>();
        auto it = reader ? calls.find(reader) : calls.end();
        if (it == calls.end())
          return;
        Fused f = it->second;
        if (readsInput(use, f))
          reads.emplace_back(f.conv, kNhwcInputAttr);
        else if (use.getOwner() == f.add && value == f.residual)
          reads.emplace_back(f.conv, kNhwcResidualAttr);
        else
          return;
      }
    }
    if (reads.empty())
      return;
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] the call at " << producer.getLoc()
               << " writes NHWC for " << reads.size() << " read(s)\n");
    UnitAttr unit = UnitAttr::get(&getContext());
    producer->setAttr(kNhwcResultAttr, unit);
    for (auto [conv, attr] : reads)
      conv->setAttr(attr, unit);
    ++numValues;
  }
};

} // namespace
