// api.cpp - the C API's entry points for models and contexts: argument
// checks, then the work in loader.cpp, model.cpp, context.cpp and
// batch_runner.cpp, each through an exception guard (guard.h).

#include "comm.h"
#include "guard.h"
#include "model.h"
#include "status_impl.h"

using namespace locus::rt;

namespace {

/// Loads an artifact and a model from it; the artifact goes either way.
template <typename LoadArtifact>
locus_status_t loadWith(LoadArtifact loadArtifact,
                        const locus_model_options_t *options,
                        locus_model_t **out_model) {
  locus_artifact_t *artifact = nullptr;
  if (locus_status_t s = loadArtifact(&artifact))
    return s;
  struct Release {
    locus_artifact_t *a;
    ~Release() { locus_artifact_release(a); }
  } release{artifact};
  // With trusted keys, the signature first: nothing of an artifact that no
  // trusted key signed is parsed beyond its container, mapped or run.
  if (options && (options->trusted_key_count || options->trusted_keys)) {
    if (!options->trusted_keys || !options->trusted_key_count)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "trusted_keys and trusted_key_count must be given "
                        "together");
    if (locus_status_t s = locus_artifact_verify(
            artifact, options->trusted_keys, options->trusted_key_count))
      return s;
  }
  return loadModel(artifact, options, out_model);
}

bool badRole(locus_tensor_role_t role) { return role > LOCUS_TENSOR_STATE; }

} // namespace

extern "C" {

locus_status_t locus_model_load_memory(const void *data, size_t size,
                                       const locus_model_options_t *options,
                                       locus_model_t **out_model) {
  LOCUS_GUARD({
    if (!out_model)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "out_model is NULL");
    *out_model = nullptr;
    return loadWith(
        [&](locus_artifact_t **a) {
          return locus_artifact_load_memory(data, size, a);
        },
        options, out_model);
  });
}

locus_status_t locus_model_load(const char *path,
                                const locus_model_options_t *options,
                                locus_model_t **out_model) {
  LOCUS_GUARD({
    if (!out_model)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "out_model is NULL");
    *out_model = nullptr;
    return loadWith(
        [&](locus_artifact_t **a) { return locus_artifact_load(path, a); },
        options, out_model);
  });
}

locus_status_t locus_model_create_from_plan(
    const void *plan, size_t plan_size, const void *cuda_kernels,
    size_t cuda_kernels_size, locus_symbol_resolver_t resolve, void *user_data,
    const locus_model_options_t *options, locus_model_t **out_model) {
  LOCUS_GUARD({
    if (!out_model || !resolve || (!plan && plan_size))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "plan, resolve and out_model must not be NULL");
    *out_model = nullptr;
    return createModelFromPlan(plan, plan_size, cuda_kernels, cuda_kernels_size,
                               resolve, user_data, options, out_model);
  });
}

/// Never throws: the profile, if any, is lost on an exception.
void locus_model_release(locus_model_t *model) {
  guardVoid([&] { delete model; });
}

size_t locus_model_tensor_count(const locus_model_t *model,
                                locus_tensor_role_t role) {
  if (!model || badRole(role))
    return 0;
  return infos(*model, role).size();
}

locus_status_t locus_model_tensor_info(const locus_model_t *model,
                                       locus_tensor_role_t role, size_t index,
                                       locus_tensor_info_t *out_info) {
  LOCUS_GUARD({
    if (!model || !out_info || badRole(role) ||
        index >= infos(*model, role).size())
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "no tensor %zu of that role", index);
    *out_info = infos(*model, role)[index];
    return nullptr;
  });
}

locus_status_t locus_model_find_tensor(const locus_model_t *model,
                                       locus_tensor_role_t role,
                                       const char *name, size_t *out_index) {
  LOCUS_GUARD({
    if (!model || !out_index || badRole(role))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return find(*model, role, name, *out_index);
  });
}

locus_status_t locus_model_read_state(const locus_model_t *model,
                                      const char *name, void *out_data,
                                      size_t byte_size) {
  LOCUS_GUARD({
    if (!model || (!out_data && byte_size))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return readState(*model, name, out_data, byte_size);
  });
}

locus_status_t locus_model_write_state(locus_model_t *model, const char *name,
                                       const void *data, size_t byte_size) {
  LOCUS_GUARD({
    if (!model || (!data && byte_size))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return writeState(*model, name, data, byte_size);
  });
}

locus_status_t locus_model_register_host(locus_model_t *model, void *data,
                                         size_t byte_size, int *out_pinned) {
  LOCUS_GUARD({
    if (out_pinned)
      *out_pinned = 0;
    if (!model || !data || !byte_size)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "bad argument: register_host needs a model and a "
                        "non-empty range");
    bool pinned = false;
    if (locus_status_t s = registerHost(*model, data, byte_size, pinned))
      return s;
    if (out_pinned)
      *out_pinned = pinned ? 1 : 0;
    return nullptr;
  });
}

locus_status_t locus_model_unregister_host(locus_model_t *model, void *data) {
  LOCUS_GUARD({
    if (!model || !data)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return unregisterHost(*model, data);
  });
}

const char *locus_model_report(const locus_model_t *model) {
  return model ? model->report.c_str() : "";
}

locus_status_t locus_model_write_trace(const locus_model_t *model,
                                       const char *path) {
  LOCUS_GUARD({
    if (!model || !path || !*path)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    if (!model->trace.on())
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "the model was loaded without a trace: set "
                        "trace_path in its options or LOCUS_TRACE");
    return model->trace.write(
        path, {model->plan, model->deviceOf, model->kernelSources});
  });
}

void locus_model_load_stats(const locus_model_t *model,
                            locus_run_stats_t *out_stats) {
  if (model && out_stats)
    *out_stats = model->loadStats;
}

locus_status_t locus_context_create(locus_model_t *model,
                                    locus_context_t **out_context) {
  LOCUS_GUARD({
    if (!model || !out_context)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    *out_context = nullptr;
    return createContext(*model, out_context);
  });
}

void locus_context_release(locus_context_t *context) {
  releaseContext(context);
}

const locus_model_t *locus_context_model(const locus_context_t *context) {
  return context ? context->model : nullptr;
}

locus_status_t locus_context_set_input(locus_context_t *context,
                                       const char *name, const void *data,
                                       size_t byte_size) {
  LOCUS_GUARD({
    if (!context || (!data && byte_size))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return setInput(*context, name, data, byte_size);
  });
}

locus_status_t locus_context_set_input_shaped(locus_context_t *context,
                                              const char *name,
                                              const void *data,
                                              size_t byte_size, size_t rank,
                                              const int64_t *dims) {
  LOCUS_GUARD({
    if (!context || (!data && byte_size) || rank > 64)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return setInputShaped(*context, name, data, byte_size, rank, dims);
  });
}

locus_status_t locus_context_output_shape(const locus_context_t *context,
                                          const char *name, size_t capacity,
                                          int64_t *out_dims, size_t *out_rank) {
  LOCUS_GUARD({
    if (!context || !out_rank || (!out_dims && capacity))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    size_t i = 0;
    if (locus_status_t s = find(*context->model, LOCUS_TENSOR_OUTPUT, name, i))
      return s;
    const locus_model_t &m = *context->model;
    uint32_t buffer = m.outputBuffers[i];
    size_t rank = m.plan.buffers[buffer].dims.size();
    if (rank > capacity)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "output '%s' has rank %zu; out_dims holds %zu", name,
                        rank, capacity);
    if (m.plan.dims[buffer].empty()) { // static: no allocation per run
      std::copy(m.plan.buffers[buffer].dims.begin(),
                m.plan.buffers[buffer].dims.end(), out_dims);
      *out_rank = rank;
      return nullptr;
    }
    std::vector<int64_t> dims;
    if (locus_status_t s = outputDims(*context, i, dims))
      return s;
    std::copy(dims.begin(), dims.end(), out_dims);
    *out_rank = rank;
    return nullptr;
  });
}

locus_status_t locus_context_run(locus_context_t *context) {
  LOCUS_GUARD({
    if (!context)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "context is NULL");
    return runContext(*context);
  });
}

locus_status_t locus_context_read_output(locus_context_t *context,
                                         const char *name, void *out_data,
                                         size_t byte_size) {
  LOCUS_GUARD({
    if (!context || (!out_data && byte_size))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return readOutput(*context, name, out_data, byte_size);
  });
}

locus_status_t locus_context_input_view(locus_context_t *context,
                                        const char *name, void **out_data,
                                        size_t *out_byte_size) {
  LOCUS_GUARD({
    if (!context || !out_data || !out_byte_size)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return inputView(*context, name, *out_data, *out_byte_size);
  });
}

locus_status_t locus_context_output_view(locus_context_t *context,
                                         const char *name,
                                         const void **out_data,
                                         size_t *out_byte_size) {
  LOCUS_GUARD({
    if (!context || !out_data || !out_byte_size)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return outputView(*context, name, *out_data, *out_byte_size);
  });
}

void locus_context_stats(const locus_context_t *context,
                         locus_run_stats_t *out_stats) {
  if (context && out_stats)
    *out_stats = context->stats;
}

locus_status_t locus_context_run_batches(locus_context_t *context,
                                         uint64_t steps,
                                         locus_next_batch_fn next,
                                         locus_step_done_fn done, void *user) {
  LOCUS_GUARD({
    if (!context || !next)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_context_run_batches: context or next is NULL");
    return runBatches(*context, steps, next, done, user);
  });
}

} // extern "C"

locus_status_t locus_comm_create(locus_comm_t **out_comm) {
  LOCUS_GUARD({
    if (!out_comm)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    *out_comm = nullptr;
    Comm *comm = nullptr;
    if (locus_status_t s = createComm(comm))
      return s;
    *out_comm = static_cast<locus_comm_t *>(comm);
    return nullptr;
  });
}

void locus_comm_release(locus_comm_t *comm) { delete comm; }

int locus_comm_rank(const locus_comm_t *comm) { return comm ? comm->rank : 0; }

int locus_comm_size(const locus_comm_t *comm) { return comm ? comm->size : 1; }

int locus_comm_local_rank(const locus_comm_t *comm) {
  return comm ? comm->localRank : 0;
}

const char *locus_comm_backend(const locus_comm_t *comm) {
  return comm ? comm->backend.c_str() : "none";
}

const char *locus_comm_device_map(const locus_comm_t *comm) {
  return comm ? comm->deviceMap.c_str() : "";
}

locus_status_t locus_model_join(locus_model_t *model, locus_comm_t *comm) {
  LOCUS_GUARD({
    if (!model || !comm)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT, "bad argument");
    return joinJob(*model, *comm);
  });
}
