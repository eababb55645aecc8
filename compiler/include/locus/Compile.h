//===- Compile.h - compiling a recorded graph and running it ----*- C++ -*-===//
//
//   locus::CompiledModel model = locus::compile(g);
//   auto out = model.run({{"x", locus::HostTensor::fromF32({100, 10}, xs)}});
//   float loss = out.at("loss").scalar();
//
// The pipeline: place, insert transfers, fuse kernels, outline them, plan
// (commands over buffers in per-device arenas), lower the kernels to LLVM;
// compile them for this CPU (kept in the compile cache) and run the plan
// with the runtime's executor, or save() an artifact that runs with the
// runtime alone.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_COMPILE_H
#define LOCUS_COMPILE_H

#include "locus/Frontend/Graph.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct locus_comm_s;

namespace locus {

/// A tensor in host memory: f32 data or i64 labels, row-major.
struct HostTensor {
  Shape shape;
  DType dtype = DType::f32;
  /// The values of a float tensor: f32, or bf16 and f16 as f32 values
  /// (rounded to the type when a run reads them, exact when it writes
  /// them).
  std::vector<float> f32;
  /// The values of an integer tensor, whatever its width: i64, i32 (each
  /// in range) and i1 (0 or 1).
  std::vector<int64_t> i64;

  /// A float tensor; `dtype` f32, bf16 or f16.
  static HostTensor fromF32(Shape shape, std::vector<float> values,
                            DType dtype = DType::f32);
  static HostTensor fromI64(Shape shape, std::vector<int64_t> values);
  static HostTensor fromI32(Shape shape, const std::vector<int32_t> &values);
  /// An i1 tensor (a mask); nonzero values are true.
  static HostTensor fromBool(Shape shape, const std::vector<int64_t> &values);
  int64_t numel() const;
  bool isFloat() const {
    return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
  }
  /// The value of a one-element float tensor.
  float scalar() const;
  /// The same, as torch.Tensor.item() (f32).
  float item() const { return scalar(); }
};

/// A mistake found when running: a missing or unknown input, a wrong shape
/// or dtype. Nothing was computed.
class RunError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Receives the warnings and notes of a compilation (the same list the
/// placement summary shows), each at the user's line when one op is
/// concerned.
using DiagnosticHandler = std::function<void(const Diagnostic &)>;

struct CompileOptions {
  /// strict, prefer-gpu, auto or cpu (see docs/placement.md).
  std::string policy = "auto";
  /// The devices to place on, e.g. {"cpu", "cuda:0"}; empty for the devices
  /// this machine has: the CPU and every CUDA GPU the runtime's probe finds
  /// (machineTargets()). A pin to a device that is not a target is an
  /// error at the pin.
  std::vector<std::string> devices;
  /// With no CUDA target, run ops pinned to a CUDA device on the CPU, with
  /// a warning, instead of failing at the pin (TensorFlow's
  /// allow_soft_placement).
  bool allowSoftPlacement = false;
  /// Where warnings and notes go; empty: printed to stderr, once per
  /// compile. Errors are thrown: a locus::Error carrying every one.
  DiagnosticHandler diagnostics;
  /// A JSON cost profile (docs/cost-model.md), or empty for the defaults.
  std::string profile;
  /// Fuse elementwise chains and epilogues (false: one op per kernel).
  bool fuse = true;
  /// Let convolutions (cuDNN) and matrix products (cuBLAS) on a GPU round
  /// their operands to TF32, which Hopper's tensor cores run several times
  /// faster, with about 1e-3 relative error (PyTorch's
  /// torch.backends.cudnn.allow_tf32 and matmul.allow_tf32). Off: fp32, the
  /// contract every other result keeps.
  bool allowTf32 = false;
  /// Mixed precision, as torch.autocast (docs/precision.md): "fp32" (the
  /// default), "tf32" (allowTf32), "bf16" or "f16": matrix products and
  /// convolutions, forward and backward, take 16-bit operands and
  /// accumulate in f32; reductions, softmax, normalizations, losses, the
  /// weights and the optimizer stay f32.
  std::string precision = "fp32";
  /// Data-parallel training (PyTorch's DistributedDataParallel): every
  /// parameter's gradient is averaged over the ranks of the job before the
  /// optimizer reads it, in buckets of about `bucketBytes`. Each rank runs
  /// the same compiled step on its own shard of the batch, joined by a
  /// communicator (CompiledModel::joinDataParallel, docs/distributed.md);
  /// without one the step runs as world size 1.
  bool dataParallel = false;
  uint64_t bucketBytes = 25ull << 20;
  /// Compile the recording for evaluation, as PyTorch's model.eval() under
  /// torch.no_grad(): dropout off, BatchNorm on its running statistics, no
  /// state written (no optimizer step, no running-statistics update), and
  /// nothing computed that no output or state reads (the backward pass).
  /// A graph recorded once in training mode compiles both ways; the two
  /// models share state by name: eval.load_state_dict(train.state_dict(),
  /// false) before evaluating.
  bool eval = false;
  /// Where the devices run in-process, e.g. "cuda:0=sim" (the default for
  /// CUDA devices until the runtime has one); see locus_model_options_t.
  /// Data-parallel training under mpirun or srun, left empty: the rank's
  /// own GPU (Communicator::deviceMap), and with `devices` empty the
  /// targets are the CPU and cuda:0 alone.
  std::string deviceMap;
  /// A file for a Chrome trace JSON of every run (kernels with the user's
  /// lines, copies, steps), written when the model is destroyed; empty for
  /// LOCUS_TRACE's value, or none (docs/runtime.md, "Traces").
  std::string trace;
  /// Replay a step as a CUDA graph from its second run where it can
  /// (docs/runtime.md); false launches every kernel itself, as
  /// LOCUS_CUDA_GRAPHS=0 does.
  bool cudaGraphs = true;
  /// Keep the compiled graph in the compile cache, and take it from there
  /// when this graph was compiled before with the same options on this
  /// machine, by this or another process (docs/compile-cache.md): a hit
  /// skips placement and code generation. LOCUS_CACHE=0 turns it off too.
  bool cache = true;
  /// The cache's folder; empty for LOCUS_CACHE_DIR, $XDG_CACHE_HOME/locus
  /// or ~/.cache/locus.
  std::string cacheDir;
};

/// This process's place in a data-parallel job (docs/distributed.md): its
/// rank and the job's world size, from the launcher (Open MPI's mpirun or
/// srun), or world size 1 when none launched it. Copies share one.
class Communicator {
public:
  /// The job this process was launched in. Throws RunError (no Open MPI
  /// under mpirun, or torchrun's WORLD_SIZE without mpirun).
  static Communicator fromEnvironment();
  int rank() const;
  int size() const;
  /// The rank among those of this machine (the GPU it binds to).
  int localRank() const;
  /// "Open MPI v4.1.4 (libmpi.so.40)", or "none" at world size 1.
  std::string backend() const;
  /// The device map that gives this rank its own GPU: "cuda:0=cuda:K", K
  /// the local rank modulo this machine's GPUs, when it has two or more;
  /// "" otherwise (CompileOptions::deviceMap).
  std::string deviceMap() const;
  /// This rank's sample indices of a dataset of `count` samples, as
  /// PyTorch's DistributedSampler (shuffle off) gives them: every
  /// size()-th index from rank(), the dataset padded with its first
  /// samples to a multiple of size() (or, with `dropLast`, cut to one), so
  /// every rank gets the same number.
  std::vector<size_t> shard(size_t count, bool dropLast = false) const;
  /// The runtime's handle (locus_comm_t).
  locus_comm_s *handle() const { return comm_.get(); }

private:
  std::shared_ptr<locus_comm_s> comm_;
};

/// What one run did (the runtime's counters).
struct RunStats {
  uint64_t launches = 0, simLaunches = 0, copies = 0, copyBytes = 0;
};

class CompiledModel {
public:
  /// One step: every input by name; returns every output by name. Safe to
  /// call from several threads at once.
  std::map<std::string, HostTensor>
  run(const std::map<std::string, HostTensor> &inputs,
      RunStats *stats = nullptr) const;

  /// A DataLoader loop: `steps` runs; step i takes its inputs from next(i)
  /// (checked as run() checks them, and copied before next is called
  /// again), and done(i, outputs) sees every output after step i. While a
  /// step runs, the next batch is fetched and copied to its device into
  /// the second of two buffers per input (on cuda through pinned staging on
  /// the copy stream, alongside the step). An exception from a callback
  /// stops the loop and propagates.
  using BatchFn = std::function<std::map<std::string, HostTensor>(size_t step)>;
  using StepFn = std::function<void(
      size_t step, const std::map<std::string, HostTensor> &outputs)>;
  void runBatches(size_t steps, const BatchFn &next, const StepFn &done = {},
                  RunStats *stats = nullptr) const;

  const std::vector<std::string> &inputNames() const;
  const std::vector<std::string> &outputNames() const;
  const std::vector<std::string> &stateNames() const;
  /// The current value of a parameter or buffer (a snapshot, valid until
  /// the next state() call for that name).
  const HostTensor &state(const std::string &name) const;
  /// Replaces a parameter or buffer (e.g. with weights trained elsewhere);
  /// later runs see it.
  void setState(const std::string &name, const HostTensor &value);
  /// Every parameter and buffer by name (copies), as PyTorch's
  /// state_dict().
  std::map<std::string, HostTensor> state_dict() const;
  /// Sets the state from `dict`, as PyTorch's load_state_dict(): strict,
  /// `dict` must hold exactly this model's state names; otherwise the names
  /// both have are loaded and the rest left (an eval graph loading a
  /// training graph's state, which also holds optimizer moments). A missing
  /// or unexpected name (strict), or a shape or dtype that differs, is a
  /// RunError that names them, and then nothing is written. Returns the
  /// names left out either way (empty when strict).
  struct StateDictKeys {
    std::vector<std::string> missing;    ///< this model's, not in `dict`
    std::vector<std::string> unexpected; ///< in `dict`, not this model's
  };
  StateDictKeys load_state_dict(const std::map<std::string, HostTensor> &dict,
                                bool strict = true);
  [[deprecated("PyTorch's name is primary: state_dict()")]] std::map<
      std::string, HostTensor>
  stateDict() const {
    return state_dict();
  }
  [[deprecated("PyTorch's name is primary: load_state_dict()")]] StateDictKeys
  loadStateDict(const std::map<std::string, HostTensor> &dict,
                bool strict = true) {
    return load_state_dict(dict, strict);
  }
  /// Writes every parameter and buffer to a safetensors file (the format
  /// PyTorch users keep weights in), atomically: a failed save leaves what
  /// was at `path`. Throws RunError.
  void saveState(const std::string &path) const;
  /// Loads state from a safetensors file (F32, or F64, F16, BF16 converted).
  /// Strict: the file holds exactly this model's state; otherwise the names
  /// both have. Every name, shape and dtype is checked before anything is
  /// written; a RunError names the tensor. Returns how many were loaded.
  size_t loadState(const std::string &path, bool strict = true);
  /// Writes an artifact that runs with the runtime alone, compiled for `cpu`
  /// (x86-64, x86-64-v2, x86-64-v3, x86-64-v4 or native), holding the
  /// current value of every state tensor that is no longer what its
  /// initialiser makes (trained weights, setState() values), so the
  /// artifact computes what this model computes now. With `signKey` (a
  /// secret key file: locus-compile --generate-key), the artifact is
  /// signed, so that a runtime given the public key loads it and nothing
  /// changed or made by others (docs/runtime.md, "Trust"). Throws RunError.
  void save(const std::string &path, const std::string &cpu = "x86-64-v3",
            const std::string &signKey = "") const;
  /// Writes the trace of the runs so far (CompileOptions::trace or
  /// LOCUS_TRACE was set). Throws RunError.
  void writeTrace(const std::string &path) const;
  /// The runtime's report: where each device of the plan runs, kernels,
  /// copies per step and at load.
  std::string runtimeReport() const;
  size_t kernelCount() const;
  /// Whether compile() took this model from the compile cache.
  bool fromCache() const;
  /// Joins a data-parallel job (a model compiled with
  /// CompileOptions::dataParallel): every rank calls it once, before its
  /// first step. Checks that every rank runs the same step, then copies
  /// rank 0's state (its initial weights, or a checkpoint it loaded) to
  /// every rank. Later steps average the gradients over the job. Throws
  /// RunError (another rank runs another graph; a rank that never joins,
  /// after LOCUS_COMM_TIMEOUT seconds).
  void joinDataParallel(const Communicator &comm);
  /// Whether both are handles of one compiled model (copies share it).
  bool operator==(const CompiledModel &other) const {
    return impl_ == other.impl_;
  }
  /// What runs where and why, with copies and warnings (locus-dump's
  /// summary of the placed graph).
  const std::string &placementSummary() const;
  /// The cost model's estimate of one run in nanoseconds: every device's
  /// kernels and the copies, one after another (the summary's "estimated
  /// step time"), from CompileOptions::profile or the defaults.
  int64_t estimatedStepNs() const;

  struct Impl;

private:
  friend CompiledModel compile(const Graph &, const CompileOptions &, Here);
  std::shared_ptr<Impl> impl_;
};

/// One recording compiled for training and for evaluation, switched as a
/// PyTorch module is: train() and eval() choose the step run() runs,
/// with no recompile and no re-recording. The two keep one state:
/// evaluation reads the parameters and buffers that training last wrote
/// (copied by name, before the first evaluation run after a training run
/// or a change of state). Not for several threads at once.
class TrainEvalModel {
public:
  /// `training` and `evaluation`, compiled from one graph (compile(g) and
  /// compile(g, {.eval = true})). Every state of `evaluation` must be one
  /// of `training`'s, of the same shape and dtype: a RunError names the
  /// first that is not (two graphs mixed up).
  TrainEvalModel(CompiledModel training, CompiledModel evaluation);
  /// As model.train(on) / model.eval().
  void train(bool on = true) { training_ = on; }
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// One step of the current mode.
  std::map<std::string, HostTensor>
  run(const std::map<std::string, HostTensor> &inputs,
      RunStats *stats = nullptr);
  /// The state, the training model's (which holds the optimizer's too).
  std::map<std::string, HostTensor> state_dict() const {
    return trainingModel_.state_dict();
  }
  CompiledModel::StateDictKeys
  load_state_dict(const std::map<std::string, HostTensor> &dict,
                  bool strict = true);
  void setState(const std::string &name, const HostTensor &value);
  const CompiledModel &trainingModel() const { return trainingModel_; }
  const CompiledModel &evaluationModel() const { return evalModel_; }

private:
  CompiledModel trainingModel_, evalModel_;
  bool training_ = true;
  /// Whether the evaluation model's state may differ from training's.
  bool stale_ = true;
};

/// compile(graph, options) and the same for evaluation
/// (CompileOptions::eval), as one TrainEvalModel in training mode.
TrainEvalModel compileTrainEval(const Graph &graph,
                                const CompileOptions &options = {},
                                Here loc = Here::current());

/// The targets compile() uses when CompileOptions::devices is empty: "cpu"
/// and "cuda:N" for every GPU the runtime's device probe finds.
std::vector<std::string> machineTargets();

/// Compiles `graph` for `options.devices` and its kernels for this machine's
/// CPU, or takes both from the compile cache (CompileOptions::cache; CUDA
/// devices run on the runtime's sim device until it has a CUDA one).
/// Placement errors (strict mode)
/// and anything the compiler cannot do throw locus::Error at the user's
/// line; the graph itself is never changed.
CompiledModel compile(const Graph &graph, const CompileOptions &options = {},
                      Here loc = Here::current());

} // namespace locus

#endif // LOCUS_COMPILE_H
