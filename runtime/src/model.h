// model.h - the model and context objects, shared by the files that make
// and run them:
//   loader.cpp        locus_model_load*: plan, kernels, devices, state
//   model.cpp         the model's interface (tensors by role) and its state
//   context.cpp       contexts: arenas, inputs, runs, outputs
//   views.cpp         zero-copy inputs and outputs (context memory)
//   host_memory.cpp   host memory the user registers (page-locked)
//   executor.cpp      interpreting a command list on the devices
//   batch_runner.cpp  locus_context_run_batches
//   profiler.cpp      LOCUS_PROFILE=1
//   trace.cpp         LOCUS_TRACE=trace.json
//   api.cpp           the C API's entry points for models and contexts
#ifndef LOCUS_RUNTIME_MODEL_H
#define LOCUS_RUNTIME_MODEL_H

#include "constants.h"
#include "devices/cpu/host_device.h"
#include "devices/device.h"
#include "host_code.h"
#include "plan.h"
#include "profiler.h"
#include "trace.h"

#include "locus/locus_runtime.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace locus::rt {
class Comm;
struct ReduceJob;
} // namespace locus::rt

struct locus_model_s {
  locus::rt::Plan plan;
  std::unique_ptr<locus::rt::HostCode> code; // null for a JIT model
  std::vector<locus::rt::KernelFn> kernels;  // by plan kernel, as run
  // By plan kernel; launchers only for kernels with CUDA code.
  std::vector<locus::rt::KernelFn> hostKernels, launchers;
  std::vector<std::unique_ptr<locus::rt::Device>> devices; // used, one each
  std::vector<locus::rt::Device *> deviceOf;               // by plan device
  std::vector<void *> persistent; // by buffer; null if per-run
  // By buffer: state no command uses, made only when written (a read
  // gives its initialiser's values without making it); and the bound on
  // what persistent buffers may take (0: none) with what they take now.
  std::vector<bool> lazyState;
  uint64_t maxBytes = 0, persistentBytes = 0;
  // The persistent buffers no step writes, and the copies library calls
  // keep of them in their own layouts (constants.h).
  locus::rt::Constants constants;
  std::vector<locus_tensor_info_t> inputs, outputs, states;
  std::vector<uint32_t> inputBuffers, outputBuffers, stateBuffers;
  // Index checks (LOCUS_ABI_CHECK_PREFIX outputs): each one's buffer and
  // message parts, and by step command the checks it computes.
  struct Check {
    uint32_t buffer;
    std::string op, what;
  };
  std::vector<Check> checks;
  std::vector<std::vector<uint32_t>> checksAfter;
  std::string report;
  locus_run_stats_t loadStats{};
  // CUDA graphs: the device a step runs on when it runs on one CUDA device
  // alone (null otherwise, or when graphs are off); what a step counts.
  locus::rt::Device *graphDevice = nullptr;
  bool graphHostCopies = false; // a step copies to or from host memory
  // Where the graphs of a step end (by step command, one past the last):
  // after each command whose index checks are read back before the rest
  // runs, and at the end.
  std::vector<size_t> segmentEnds;
  // The device that pins the host arenas of contexts (Device::pinHost), or
  // null: copies between them and it run at link speed.
  locus::rt::Device *pinner = nullptr;
  // Host memory the user registered (locus_model_register_host), by its
  // first byte: one past its last, and whether the pinner page-locked it.
  struct Registered {
    const char *end;
    bool pinned;
  };
  std::map<const char *, Registered> registered;
  std::mutex registeredMutex;
  locus_run_stats_t stepCounts{};
  std::shared_mutex stateMutex; // runs share, state writes exclude
  bool writesState = false;     // a training step: its runs exclude too
  locus::rt::Profiler profiler;
  locus::rt::Trace trace;
  bool loaded =
      false; // set when a load succeeded: only then is a trace written
  // By plan kernel: its ops, the user's lines and layers
  // (LOCUS_ABI_SOURCE_PREFIX), none when the code has none.
  std::vector<locus::rt::KernelSource> kernelSources;
  std::atomic<uint64_t> contextsMade{0}; // numbers contexts in traces
  // The data-parallel job the model joined (locus_model_join), or null: its
  // all-reduces then average over one rank.
  locus::rt::Comm *comm = nullptr;
  // By step command: the all-reduces (their command numbers) whose results
  // it is the first to read, finished before it runs.
  std::vector<std::vector<uint32_t>> reduceWaits;

  ~locus_model_s();
};

struct locus_context_s {
  locus_model_t *model = nullptr;
  uint64_t id = 0;            // the model's n-th context (traces)
  uint64_t step = 0;          // what traces call the commands running now
  std::vector<void *> arenas; // by plan device
  std::vector<bool> inputSet;
  locus_run_stats_t stats{};
  std::vector<void *> pointers; // scratch: a launch's buffers
  // By step command: whether its launch's buffers were found on its device
  // (executeRange), so that later runs need not look again.
  std::vector<bool> launchChecked;
  std::vector<bool> recorded; // events of this step
  uint64_t runs = 0;
  // The captured step on the model's graphDevice: one graph per segment
  // (locus_model_t::segmentEnds), empty before the capture.
  std::vector<void *> graphs;
  // By plan device: whether its arena is host memory the model's pinner
  // pinned; and whether every host arena is (a graph may copy from them).
  std::vector<bool> pinned;
  bool hostPinned = true;
  // The launches' buffer arrays of the captured step (they live as long as
  // its graph: a device may keep them).
  std::vector<std::vector<void *>> graphArgs;
  // With dynamic sizes a launch's grid and arguments follow the run's
  // sizes, so a graph serves the sizes it was captured at: `graphs` those
  // of `graphSizes`, run `runsAtSizes` times; the graphs of other sizes
  // wait in `otherGraphs` (at most kSizedGraphs in all) for a run that has
  // them again.
  struct SizedGraphs {
    std::vector<void *> graphs;
    std::vector<std::vector<void *>> args;
    uint64_t runs = 0;
    uint64_t lastRun = 0; // the context's run that last had these sizes
  };
  static constexpr size_t kSizedGraphs = 8;
  std::vector<int64_t> graphSizes;
  uint64_t runsAtSizes = 0;
  std::map<std::vector<int64_t>, SizedGraphs> otherGraphs;
  bool capturing = false;
  // Batch mode (locus_context_run_batches): the memory standing for a
  // buffer this step (by buffer; empty or null: the plan's), and the step's
  // commands the runner did ahead (by command).
  std::vector<void *> override;
  std::vector<bool> skip;
  // By step command: the bucket of an all-reduce started and not yet
  // finished (data_parallel.cpp), else null.
  std::vector<std::shared_ptr<locus::rt::ReduceJob>> reduces;
  // Views (views.cpp): by input and by output, the host memory standing
  // for a tensor that lives on another device (null until asked for), and
  // whether each input's view is what the next run copies in.
  struct HostView {
    void *data = nullptr;
    bool pinned = false; // by the model's pinner
  };
  std::vector<HostView> inputViews, outputViews;
  std::vector<bool> inputFromView;
  std::unique_ptr<locus::rt::HostDevice> viewMemory; // where views live
  // Dynamic sizes (context.cpp): by input, the dims it was last set with
  // (empty: its bounds), and the sizes of the last run.
  std::vector<std::vector<int64_t>> inputDims;
  std::vector<int64_t> runSizes;
};

namespace locus::rt {

// ---- loader.cpp ----------------------------------------------------------

/// A model from an artifact (its plan, host code and PTX sections).
locus_status_t loadModel(locus_artifact_t *artifact,
                         const locus_model_options_t *options,
                         locus_model_t **out_model);
/// A model from a plan whose kernels `resolve` finds (the JIT path).
locus_status_t createModelFromPlan(const void *plan, size_t planSize,
                                   const void *ptx, size_t ptxSize,
                                   locus_symbol_resolver_t resolve,
                                   void *userData,
                                   const locus_model_options_t *options,
                                   locus_model_t **out_model);

/// `count` elements of state buffer `b`'s initialiser from element `first`
/// on: the same values however a buffer is cut into chunks.
locus_status_t initChunk(const PlanBuffer &b, size_t first, size_t count,
                         float *out);
/// Allocates persistent buffer `i` on its device and fills it: state from
/// its initialiser, constants from the plan.
locus_status_t makeBuffer(locus_model_t &m, uint32_t i);
/// After state buffer `written` took new values: runs again, in order, the
/// load-time commands that read it or what those made (copies to other
/// devices, kernels of it), dropping library layouts of what they rewrite.
locus_status_t rerunLoadCommands(locus_model_t &m, uint32_t written);

// ---- data_parallel.cpp ---------------------------------------------------

/// Joins `comm`'s job: every rank must run the same plan, and rank 0's state
/// is copied to every rank.
locus_status_t joinJob(locus_model_t &m, Comm &comm);
/// Step command `index`, an ALL_REDUCE: its bucket copied to the host and
/// handed to the job's communicator, which sums it while the step goes on.
locus_status_t startAllReduce(locus_model_t &m, locus_context_t &ctx,
                              size_t index);
/// Waits for the all-reduce of step command `index`, then writes its
/// results (averaged for a mean).
locus_status_t finishAllReduce(locus_model_t &m, locus_context_t &ctx,
                               size_t index);
/// Finishes every all-reduce of the step still open (its end).
locus_status_t finishAllReduces(locus_model_t &m, locus_context_t &ctx);
/// Each step command's all-reduces to finish first (reduceWaits).
void findReduceWaits(locus_model_t &m);

// ---- model.cpp -----------------------------------------------------------

/// The tensors of `role`.
const std::vector<locus_tensor_info_t> &infos(const locus_model_t &m,
                                              locus_tensor_role_t role);
/// The tensor info of a buffer (pointers into the plan).
locus_tensor_info_t infoOf(const Plan &plan, uint32_t index,
                           const std::string &name);
/// The index of the tensor `name` of `role`; NOT_FOUND names those there are.
locus_status_t find(const locus_model_t &m, locus_tensor_role_t role,
                    const char *name, size_t &out);
/// The same, and the tensor's byte size must be `bytes`: INVALID_ARGUMENT
/// otherwise.
locus_status_t lookup(const locus_model_t &m, locus_tensor_role_t role,
                      const char *name, size_t bytes, size_t &index);
/// "[2, 3]", "f32": for messages.
std::string shapeString(const locus_tensor_info_t &info);
const char *dtypeName(locus_dtype_t dtype);
locus_status_t readState(const locus_model_t &m, const char *name, void *out,
                         size_t bytes);
locus_status_t writeState(locus_model_t &m, const char *name, const void *data,
                          size_t bytes);

// ---- checkpoint.cpp ------------------------------------------------------

/// Which tensors a state load takes.
struct StateLoadRules {
  const std::vector<std::string> *names = nullptr; // only these, when set
  bool allowMissing = false;    // model state the file lacks stays
  bool allowUnexpected = false; // file tensors the model lacks are skipped
};
/// The state (all, or only what differs from its initialiser) as
/// safetensors bytes.
locus_status_t saveState(const locus_model_t &m, locus_state_select_t which,
                         std::string &out);
/// Loads safetensors bytes into the state by `rules`; `what` names them in
/// messages. Nothing is written unless every tensor fits.
locus_status_t loadState(locus_model_t &m, const void *data, size_t size,
                         const char *what, const StateLoadRules &rules,
                         size_t &loaded);

// ---- context.cpp ---------------------------------------------------------

locus_status_t createContext(locus_model_t &m, locus_context_t **out);
/// Never throws: a device that fails to finish is ignored (the arenas go
/// either way).
void releaseContext(locus_context_t *ctx) noexcept;
locus_status_t setInput(locus_context_t &ctx, const char *name,
                        const void *data, size_t bytes);
locus_status_t runContext(locus_context_t &ctx);
locus_status_t readOutput(locus_context_t &ctx, const char *name, void *out,
                          size_t bytes);
/// set_input with the input's dims, which may be below the bounds of its
/// dynamic dimensions.
locus_status_t setInputShaped(locus_context_t &ctx, const char *name,
                              const void *data, size_t bytes, size_t rank,
                              const int64_t *dims);
/// The dims of output `name` in the last run (its shape, for a static one).
locus_status_t outputDims(const locus_context_t &ctx, size_t output,
                          std::vector<int64_t> &dims);

// ---- views.cpp -----------------------------------------------------------

/// locus_context_input_view: the input's bytes in host memory the context
/// owns; the input counts as set, and a mirror is copied in at each run.
locus_status_t inputView(locus_context_t &ctx, const char *name, void *&data,
                         size_t &bytes);
/// Copies the inputs whose views are in use to their buffers (before a run).
locus_status_t uploadInputViews(locus_model_t &m, locus_context_t &ctx,
                                locus_run_stats_t &stats);
/// locus_context_output_view: the output of the last run in host memory the
/// context owns (in place, or copied to a mirror).
locus_status_t outputView(locus_context_t &ctx, const char *name,
                          const void *&data, size_t &bytes);
/// Unpins and frees the views (the devices have finished).
void releaseViews(locus_context_t &ctx) noexcept;

// ---- host_memory.cpp -----------------------------------------------------

/// locus_model_register_host: records [data, data + bytes), page-locked by
/// the model's pinner where it has one (`pinned`).
locus_status_t registerHost(locus_model_t &m, void *data, size_t bytes,
                            bool &pinned);
locus_status_t unregisterHost(locus_model_t &m, void *data);
/// Unregisters what is left (the model's release).
void unregisterAllHost(locus_model_t &m) noexcept;

// ---- executor.cpp --------------------------------------------------------

/// Where buffer `index` is for this context.
void *bufferPointer(const locus_model_t &m, const locus_context_t &ctx,
                    uint32_t index);
/// Runs one command list. Launches check that every buffer belongs to the
/// device they run on.
locus_status_t execute(locus_model_t &m, locus_context_t &ctx,
                       const std::vector<PlanCommand> &commands,
                       locus_run_stats_t &stats);
/// Runs commands [begin, end) of a list (the events as they are).
locus_status_t executeRange(locus_model_t &m, locus_context_t &ctx,
                            const std::vector<PlanCommand> &commands,
                            size_t begin, size_t end, locus_run_stats_t &stats);
/// One step: issued command by command, or, on a step whose launches run
/// on one CUDA device, captured on the second run (a graph per segment
/// between index checks) and replayed after.
locus_status_t runStep(locus_model_t &m, locus_context_t &ctx,
                       locus_run_stats_t &stats);
/// Waits for every device of the model; the first failure.
locus_status_t finishDevices(locus_model_t &m);

/// Whether `ctx`'s next step captures a graph on the model's graph device.
bool capturesNextStep(const locus_model_t &m, const locus_context_t &ctx);

/// The model's state lock for one step of `ctx`: shared, or exclusive when
/// the model's steps write state (a training step) or this step captures a
/// graph. A capture records whatever is issued to its device while it is
/// open, whichever thread issues it: no other context's step, input, output
/// or state copy may run then.
class StepLock {
public:
  StepLock(locus_model_t &m, const locus_context_t &ctx)
      : shared_(m.stateMutex, std::defer_lock),
        exclusive_(m.stateMutex, std::defer_lock) {
    if (m.writesState || capturesNextStep(m, ctx))
      exclusive_.lock();
    else
      shared_.lock();
  }

private:
  std::shared_lock<std::shared_mutex> shared_;
  std::unique_lock<std::shared_mutex> exclusive_;
};

// ---- batch_runner.cpp ----------------------------------------------------

locus_status_t runBatches(locus_context_t &ctx, uint64_t steps,
                          locus_next_batch_fn next, locus_step_done_fn done,
                          void *user);

} // namespace locus::rt

#endif
