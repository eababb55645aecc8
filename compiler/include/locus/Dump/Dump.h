//===- Dump.h - what runs where, and why -------------------------*- C++
//-*-===//
//
// The analysis behind locus-dump: a Report of a placed graph (after
// --locus-place-devices and --locus-insert-transfers), and its renderings as a
// table, a summary with warnings, Graphviz DOT, JSON (schema locus-dump/1,
// docs/locus-dump.md), a self-contained HTML page, and --explain.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DUMP_DUMP_H
#define LOCUS_DUMP_DUMP_H

#include "locus/Dialect/LocusDialect.h"
#include "locus/Dialect/UserSource.h"
#include "locus/Passes/CostModel.h"

#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace locus::dump {

/// Where the user wrote an op (locus/Dialect/UserSource.h).
using Source = UserSource;

struct Row {
  int id = 0;
  mlir::Operation *op = nullptr;
  std::string opName; ///< "locus.linear"
  std::string label;  ///< `input "x"`, `copy cpu -> cuda:0`, `linear`
  std::string shape;  ///< "100x10xf32"; "{batch}x10xf32" with dynamic sizes
  std::string device; ///< "cpu", "cuda:0"
  std::string reasonKind;
  std::string reasonText; ///< "cost: cpu 444 ns, cuda:0 4002 ns"
  /// What a product or convolution computes in and why, when
  /// --locus-autocast chose it ("bf16 (autocast: ...)"); empty otherwise.
  std::string precision;
  Source source;
  /// The layer it belongs to, a dotted path: an imported op's ONNX scope
  /// ("/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1"), a parameter's or
  /// buffer's name without its last part ("layer1.0.conv1"), for an op a
  /// named C++ layer recorded, the layer's name ("layer1.0.conv1"), or for
  /// an op an unnamed layer recorded, the line that called the layer
  /// ("model.cpp:24").
  /// Empty for a copy and for what belongs to no layer.
  std::string layer;
  int64_t cpuNs = 0, cudaNs = 0; ///< estimates on each kind of device
  int64_t bytes = 0;             ///< of the result
  bool isCopy = false, loadTime = false;
  /// For a copy: its estimated time (the cost profile's bandwidth), and
  /// the devices it moves between ("cpu", "cuda:0").
  int64_t copyNs = 0;
  std::string copyFrom, copyTo;
  std::vector<int> operands; ///< ids of the rows it reads
};

/// Something the user should look at: a warning (the GPU idle, copies every
/// step, soft placement, an op without a CUDA kernel) or a note (policy cpu
/// ignoring pins), at the user's line when one op is concerned.
struct Warning {
  std::string text;
  Source source;
  bool note = false;
};

struct Report {
  std::string graph, policy;
  std::vector<std::string> targets;
  std::string softNote; ///< empty unless placement was soft
  /// "batch up to 256, seq up to 64" for a graph with dynamic sizes (its
  /// estimates are at the bounds), else empty.
  std::string dynamicSizes;
  std::vector<Row> rows;
  std::map<std::string, int> opsPerDevice; ///< copies not counted
  int copiesPerStep = 0, copiesAtLoad = 0;
  int64_t bytesPerStep = 0, bytesAtLoad = 0;
  std::map<std::string, int64_t> stepNsPerDevice; ///< estimated, kernels only
  int64_t copyNsPerStep = 0;
  /// The fixed cost of a run (CostProfile::runNs).
  int64_t runNs = 0;
  /// The estimate's source: CostProfile::origin.
  std::string costProfile;
  /// The GPU that runs every kernel of the step, which then replays as one
  /// CUDA graph (its launches estimated at CUDA-graph cost); else empty.
  std::string graphDevice;
  /// The estimated step: the run's fixed cost, then every device's kernels
  /// and the copies, one after another.
  int64_t stepNs() const;
  std::vector<std::string> crossingValues; ///< labels of per-step copies
  /// Data-parallel training: the gradient buckets averaged over the ranks
  /// every step (locus.all_reduce), in order, and their bytes.
  struct Bucket {
    int64_t number = 0;
    std::string device;
    int gradients = 0;
    int64_t bytes = 0;
  };
  std::vector<Bucket> buckets;
  int64_t bucketBytes() const;
  /// What the summary lists under "warnings", and compile() gives its
  /// diagnostics handler: one list.
  std::vector<Warning> warnings;
};

/// Reads a placed graph. Fails (with a diagnostic) on an op without
/// locus.device.
mlir::FailureOr<Report> analyze(GraphOp graph, const CostProfile &profile);

void printTable(const Report &report, llvm::raw_ostream &os);
void printSummary(const Report &report, llvm::raw_ostream &os);
/// The table by layer: one row per layer (its path indented), its ops per
/// device, estimate and per-step copies in and out; with `maxRows` > 0,
/// deeper levels fold into their parents ("(+)") until the rows fit.
void printLayers(const Report &report, llvm::raw_ostream &os, int maxRows);
/// Graphviz DOT: one node per op, clustered by layer, copies as `cds`
/// nodes. With `maxNodes` > 0 and more rows than that, layers collapse into
/// one node each (ops, device mix, estimate; cut to shallower paths until
/// they fit, then merged in order), and copies become edges labelled with
/// their bytes: never more than `maxNodes` nodes.
void printDot(const Report &report, llvm::raw_ostream &os, int maxNodes = 0);
void printJson(const Report &report, llvm::raw_ostream &os);
void printHtml(const Report &report, llvm::raw_ostream &os);

/// Whether a layer is a module path ("layer1.0.conv1"), not the line that
/// called an unnamed layer ("model.cpp:24") or another name with ':', '/' or
/// ' ' in it, which is one name and never cut at its dots.
bool isModulePath(llvm::StringRef layer);
/// A module path cut to its first `depth` parts ("a.b.c", 2 -> "a.b"); any
/// other layer as it is.
std::string truncateLayer(llvm::StringRef layer, int depth);
/// The layers a layer is in, outermost first, and itself: "a.b.c" -> a,
/// a.b, a.b.c ("model.cpp:24" and "" -> themselves).
std::vector<std::string> layerChain(llvm::StringRef layer);

/// Measured next to predicted: the kernel and copy times of a trace
/// (LOCUS_TRACE's Chrome trace JSON, `traceText`, named `traceName`) per
/// layer, beside the cost model's estimates for the same ops. Steps after
/// the first are averaged (the first warms up). Fails, writing nothing and
/// saying why in `error`, when the text is not a Locus trace or has no step.
mlir::LogicalResult printMeasured(const Report &report,
                                  llvm::StringRef traceText,
                                  llvm::StringRef traceName,
                                  llvm::raw_ostream &os, std::string &error);

/// "seed_models.cpp:23 (called at :24)", "model.onnx: node 'fc1' (Gemm)",
/// "-": a source as the table shows it.
std::string formatSource(const Source &source);
/// "444 ns", "30.4 us", "2.1 ms".
std::string formatNanos(int64_t ns);
/// "4804 B", "12.5 KiB", "3.1 MiB".
std::string formatBytes(int64_t bytes);

/// How `b` places the graph (or a changed graph) that `a` places: the ops
/// that moved between devices, ops only one side has, the per-step copies
/// added and removed, and the change in estimated step time. `aName` and
/// `bName` say what each side is ("cnn.mlir, policy auto"). Ops are
/// matched by op, name, shape and source line (the n-th such op of `a` with
/// the n-th of `b`), so two compiles of one graph match op for op.
void printDiff(const Report &a, llvm::StringRef aName, const Report &b,
               llvm::StringRef bName, llvm::raw_ostream &os);
/// The same as JSON (schema locus-dump-diff/1, docs/locus-dump.md).
void printDiffJson(const Report &a, llvm::StringRef aName, const Report &b,
                   llvm::StringRef bName, llvm::raw_ostream &os);

/// Why the ops matching `query` are where they are, and what they would cost
/// elsewhere. `query`: a row id ("#7" or "7"), an op name ("locus.linear" or
/// "linear"), a source line ("model.cpp:23" or "23"), or a name ("x",
/// "fc.weight"). Fails when nothing matches.
mlir::LogicalResult explain(const Report &report, llvm::StringRef query,
                            const CostProfile &profile, llvm::raw_ostream &os);

} // namespace locus::dump

#endif // LOCUS_DUMP_DUMP_H
