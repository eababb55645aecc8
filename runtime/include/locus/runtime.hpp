// runtime.hpp - a C++ wrapper over the runtime's C API (header-only).
//
//   locus::rt::Model model = locus::rt::Model::load("seed.locus");
//   locus::rt::Context ctx(model);
//   ctx.setInput("x", xs);            // std::vector<float> or raw bytes
//   ctx.run();
//   std::vector<float> loss = ctx.output<float>("loss");
//
// Objects own their C handles and release them; failures throw
// locus::rt::Error with the status code and message. The C API underneath
// never throws.
#ifndef LOCUS_RUNTIME_HPP
#define LOCUS_RUNTIME_HPP

#include "locus/locus_runtime.h"

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace locus::rt {

class Error : public std::runtime_error {
public:
  Error(locus_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  locus_status_code_t code() const { return code_; }

private:
  locus_status_code_t code_;
};

/// Throws for a failed status (and frees it).
inline void check(locus_status_t status) {
  if (!status)
    return;
  locus_status_code_t code = locus_status_code(status);
  std::string message = locus_status_message(status);
  locus_status_free(status);
  throw Error(code, message);
}

struct TensorInfo {
  std::string name;
  locus_dtype_t dtype;
  std::vector<int64_t> shape;
  size_t byteSize;
  std::string device;
};

class Model {
public:
  /// Loads an artifact; `deviceMap` as in locus_model_options_t. With
  /// `trustedKeys` (public key files, locus_key_read_public), only an
  /// artifact one of them signed loads.
  /// locus_model_options_t, with key files for the trusted keys.
  struct LoadOptions {
    std::string deviceMap;
    std::vector<std::string> trustedKeys; ///< public key files
    std::string tracePath;                ///< Chrome trace JSON, at release
    bool disableCudaGraphs = false;
    uint64_t maxBytes = 0; ///< locus_model_options_t::max_bytes (0: none)
  };

  static Model load(const std::string &path, const LoadOptions &opts) {
    std::vector<locus_public_key_t> keys(opts.trustedKeys.size());
    for (size_t i = 0; i < keys.size(); ++i)
      check(locus_key_read_public(opts.trustedKeys[i].c_str(), &keys[i]));
    locus_model_options_t options{};
    options.device_map = opts.deviceMap.c_str();
    options.disable_cuda_graphs = opts.disableCudaGraphs ? 1 : 0;
    options.trusted_keys = keys.data();
    options.trusted_key_count = keys.size();
    options.trace_path = opts.tracePath.c_str();
    options.max_bytes = opts.maxBytes;
    locus_model_t *model = nullptr;
    check(locus_model_load(path.c_str(), &options, &model));
    return Model(model);
  }
  static Model load(const std::string &path, const std::string &deviceMap = "",
                    const std::vector<std::string> &trustedKeys = {}) {
    LoadOptions options;
    options.deviceMap = deviceMap;
    options.trustedKeys = trustedKeys;
    return load(path, options);
  }

  /// Writes the trace of the runs so far (the model was loaded with a
  /// trace path or LOCUS_TRACE).
  void writeTrace(const std::string &path) const {
    check(locus_model_write_trace(model_, path.c_str()));
  }

  Model(Model &&other) noexcept
      : model_(std::exchange(other.model_, nullptr)) {}
  Model &operator=(Model &&other) noexcept {
    std::swap(model_, other.model_);
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { locus_model_release(model_); }

  std::vector<TensorInfo> tensors(locus_tensor_role_t role) const {
    std::vector<TensorInfo> out;
    for (size_t i = 0, n = locus_model_tensor_count(model_, role); i < n; ++i) {
      locus_tensor_info_t info;
      check(locus_model_tensor_info(model_, role, i, &info));
      out.push_back({info.name, info.dtype,
                     std::vector<int64_t>(info.dims, info.dims + info.rank),
                     info.byte_size, info.device});
    }
    return out;
  }
  std::vector<TensorInfo> inputs() const { return tensors(LOCUS_TENSOR_INPUT); }
  std::vector<TensorInfo> outputs() const {
    return tensors(LOCUS_TENSOR_OUTPUT);
  }
  std::vector<TensorInfo> states() const { return tensors(LOCUS_TENSOR_STATE); }

  std::vector<float> readState(const std::string &name) const {
    size_t index;
    check(locus_model_find_tensor(model_, LOCUS_TENSOR_STATE, name.c_str(),
                                  &index));
    locus_tensor_info_t info;
    check(locus_model_tensor_info(model_, LOCUS_TENSOR_STATE, index, &info));
    std::vector<float> values(info.byte_size / sizeof(float));
    check(locus_model_read_state(model_, name.c_str(), values.data(),
                                 info.byte_size));
    return values;
  }
  void writeState(const std::string &name, const std::vector<float> &values) {
    check(locus_model_write_state(model_, name.c_str(), values.data(),
                                  values.size() * sizeof(float)));
  }
  /// Every state tensor to a safetensors file, atomically.
  void saveState(const std::string &path) const {
    check(locus_model_save_state(model_, path.c_str()));
  }
  /// State from a safetensors file: all of this model's (strict), or the
  /// names both have (`partial`). Returns how many were loaded.
  size_t loadState(const std::string &path, bool partial = false) {
    locus_state_load_options_t options{};
    options.partial = partial ? 1 : 0;
    size_t loaded = 0;
    check(locus_model_load_state(model_, path.c_str(), &options, &loaded));
    return loaded;
  }
  /// Page-locks host memory the caller keeps for the model's GPU copies
  /// (locus_model_register_host): inputs and state that live on a GPU are
  /// set, and outputs and state there read, by one DMA at link speed.
  /// Returns whether it was page-locked (false without a GPU). Keep the
  /// memory allocated until unregisterHost or the model's release.
  bool registerHost(void *data, size_t bytes) {
    int pinned = 0;
    check(locus_model_register_host(model_, data, bytes, &pinned));
    return pinned != 0;
  }
  void unregisterHost(void *data) {
    check(locus_model_unregister_host(model_, data));
  }
  std::string report() const { return locus_model_report(model_); }
  locus_run_stats_t loadStats() const {
    locus_run_stats_t stats;
    locus_model_load_stats(model_, &stats);
    return stats;
  }
  locus_model_t *get() const { return model_; }

private:
  explicit Model(locus_model_t *model) : model_(model) {}
  locus_model_t *model_;
};

/// This process's place in a data-parallel job (locus_comm_t): mpirun's or
/// srun's ranks, or world size 1 without a launcher.
class Comm {
public:
  Comm() {
    locus_comm_t *comm = nullptr;
    check(locus_comm_create(&comm));
    comm_ = comm;
  }
  ~Comm() { locus_comm_release(comm_); }
  Comm(const Comm &) = delete;
  Comm &operator=(const Comm &) = delete;
  int rank() const { return locus_comm_rank(comm_); }
  int size() const { return locus_comm_size(comm_); }
  int localRank() const { return locus_comm_local_rank(comm_); }
  std::string backend() const { return locus_comm_backend(comm_); }
  /// The device map that gives this rank its own GPU (or "").
  std::string deviceMap() const { return locus_comm_device_map(comm_); }
  /// Joins `model` (loaded with this Comm outliving it) to the job.
  void join(Model &model) { check(locus_model_join(model.get(), comm_)); }

private:
  locus_comm_t *comm_ = nullptr;
};

/// One run's activations; use one per thread.
class Context {
public:
  explicit Context(Model &model) {
    check(locus_context_create(model.get(), &context_));
  }
  Context(Context &&other) noexcept
      : context_(std::exchange(other.context_, nullptr)) {}
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ~Context() { locus_context_release(context_); }

  void setInput(const std::string &name, const void *data, size_t bytes) {
    check(locus_context_set_input(context_, name.c_str(), data, bytes));
  }
  template <typename T>
  void setInput(const std::string &name, const std::vector<T> &values) {
    setInput(name, values.data(), values.size() * sizeof(T));
  }
  /// An input with its dims (a graph with dynamic sizes: below the bounds
  /// of its dynamic dimensions).
  void setInput(const std::string &name, const void *data, size_t bytes,
                const std::vector<int64_t> &dims) {
    check(locus_context_set_input_shaped(context_, name.c_str(), data, bytes,
                                         dims.size(), dims.data()));
  }
  void run() { check(locus_context_run(context_)); }
  void readOutput(const std::string &name, void *data, size_t bytes) {
    check(locus_context_read_output(context_, name.c_str(), data, bytes));
  }
  /// The dims of an output in the last run.
  std::vector<int64_t> outputShape(const std::string &name) const {
    int64_t dims[64];
    size_t rank = 0;
    check(locus_context_output_shape(context_, name.c_str(), 64, dims, &rank));
    return std::vector<int64_t>(dims, dims + rank);
  }
  /// An output as a vector of T (float for f32, int64_t for i64), at its
  /// dims in the last run.
  template <typename T> std::vector<T> output(const std::string &name) {
    size_t count = 1;
    for (int64_t d : outputShape(name))
      count *= static_cast<size_t>(d);
    std::vector<T> values(count);
    readOutput(name, values.data(), values.size() * sizeof(T));
    return values;
  }
  /// Input `name`'s bytes (`*bytes` of them) in memory the context owns:
  /// write it there instead of setInput (locus_context_input_view).
  void *inputView(const std::string &name, size_t *bytes = nullptr) {
    void *data = nullptr;
    size_t size = 0;
    check(locus_context_input_view(context_, name.c_str(), &data, &size));
    if (bytes)
      *bytes = size;
    return data;
  }
  /// Output `name` of the last run without a copy into the caller's memory,
  /// valid until the next run (locus_context_output_view).
  const void *outputView(const std::string &name, size_t *bytes = nullptr) {
    const void *data = nullptr;
    size_t size = 0;
    check(locus_context_output_view(context_, name.c_str(), &data, &size));
    if (bytes)
      *bytes = size;
    return data;
  }
  locus_run_stats_t stats() const {
    locus_run_stats_t stats;
    locus_context_stats(context_, &stats);
    return stats;
  }

  /// A DataLoader loop (locus_context_run_batches): `next(step, inputs)`
  /// fills one pointer per input in the model's input order (the runtime
  /// copies the bytes before it asks again); `done(step, context)` sees each
  /// finished step. The next batch is copied to its device while a step
  /// runs. An exception from a callback stops the loop and is rethrown.
  using NextFn = std::function<void(uint64_t step, const void **inputs)>;
  using DoneFn = std::function<void(uint64_t step, Context &context)>;
  void runBatches(uint64_t steps, const NextFn &next, const DoneFn &done = {}) {
    struct Loop {
      Context &self;
      const NextFn &next;
      const DoneFn &done;
      std::exception_ptr error;
    } loop{*this, next, done, nullptr};
    auto onNext = [](void *user, uint64_t step,
                     const void **inputs) -> locus_status_t {
      auto &l = *static_cast<Loop *>(user);
      try {
        l.next(step, inputs);
        return nullptr;
      } catch (...) {
        l.error = std::current_exception();
        return locus_status_create(LOCUS_STATUS_CANCELLED, "stopped");
      }
    };
    auto onDone = [](void *user, uint64_t step,
                     locus_context_t *) -> locus_status_t {
      auto &l = *static_cast<Loop *>(user);
      try {
        if (l.done)
          l.done(step, l.self);
        return nullptr;
      } catch (...) {
        l.error = std::current_exception();
        return locus_status_create(LOCUS_STATUS_CANCELLED, "stopped");
      }
    };
    locus_status_t s =
        locus_context_run_batches(context_, steps, onNext, onDone, &loop);
    if (loop.error) {
      locus_status_free(s);
      std::rethrow_exception(loop.error);
    }
    check(s);
  }

private:
  const locus_model_t *model_() const { return locus_context_model(context_); }
  locus_context_t *context_ = nullptr;
};

} // namespace locus::rt

#endif // LOCUS_RUNTIME_HPP
