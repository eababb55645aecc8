// model.cpp - a loaded model's interface: its tensors by role, and its
// state, read and written wherever it lives.

#include "model.h"

#include "status_impl.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

using namespace locus::rt;

namespace {

/// Where the trace of a released model goes: its path, or for the n-th
/// model of the process tracing to the same LOCUS_TRACE file, the path with
/// ".n" before its extension, so models do not overwrite each other. (The
/// table outlives static destruction: a model in a global may be released
/// at exit.)
std::string releasePath(const locus::rt::Trace &trace) {
  const std::string &path = trace.path();
  if (!trace.fromEnvironment())
    return path;
  static auto *mutex = new std::mutex;
  static auto *written = new std::map<std::string, unsigned>;
  std::lock_guard lock(*mutex);
  unsigned n = ++(*written)[path];
  if (n == 1)
    return path;
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    dot = path.size();
  return path.substr(0, dot) + "." + std::to_string(n) + path.substr(dot);
}

} // namespace

locus_model_s::~locus_model_s() {
  profiler.print(plan, deviceOf, kernelSources);
  if (trace.on() && loaded) {
    try {
      std::string path = releasePath(trace);
      if (locus_status_t s =
              trace.write(path.c_str(), {plan, deviceOf, kernelSources})) {
        std::fprintf(stderr, "locus: the trace was not written: %s\n",
                     locus_status_message(s));
        locus_status_free(s);
      }
    } catch (...) { // NOLINT(bugprone-empty-catch): said below
      // Out of memory for the JSON: the trace is lost, the release goes on.
    }
  }
  locus::rt::unregisterAllHost(*this);
  for (size_t i = 0; i < persistent.size(); ++i)
    if (persistent[i])
      deviceOf[plan.buffers[i].device]->release(persistent[i]);
}

namespace locus::rt {

namespace {

const char *roleName(locus_tensor_role_t role) {
  return role == LOCUS_TENSOR_INPUT    ? "input"
         : role == LOCUS_TENSOR_OUTPUT ? "output"
                                       : "state";
}

/// INVALID_ARGUMENT unless the tensor is `bytes` long.
locus_status_t checkSize(const locus_tensor_info_t &info, size_t bytes,
                         const char *what) {
  if (bytes == info.byte_size)
    return nullptr;
  return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                    "%s '%s' is %s %s (%zu bytes); %zu bytes were given", what,
                    info.name, shapeString(info).c_str(), dtypeName(info.dtype),
                    info.byte_size, bytes);
}

} // namespace

const char *dtypeName(locus_dtype_t dtype) {
  switch (dtype) {
  case LOCUS_DTYPE_F32:
    return "f32";
  case LOCUS_DTYPE_I64:
    return "i64";
  case LOCUS_DTYPE_I32:
    return "i32";
  case LOCUS_DTYPE_I1:
    return "i1";
  case LOCUS_DTYPE_BF16:
    return "bf16";
  case LOCUS_DTYPE_F16:
    return "f16";
  default:
    return "?";
  }
}

std::string shapeString(const locus_tensor_info_t &info) {
  std::string s = "[";
  for (int32_t i = 0; i < info.rank; ++i)
    s += (i ? ", " : "") + std::to_string(info.dims[i]);
  return s + "]";
}

locus_tensor_info_t infoOf(const Plan &plan, uint32_t index,
                           const std::string &name) {
  const PlanBuffer &b = plan.buffers[index];
  locus_tensor_info_t info{};
  info.name = name.c_str();
  info.dtype = static_cast<locus_dtype_t>(b.dtype);
  info.rank = static_cast<int32_t>(b.dims.size());
  info.dims = b.dims.data();
  info.byte_size = b.bytes;
  info.device = plan.devices[b.device].name.c_str();
  return info;
}

const std::vector<locus_tensor_info_t> &infos(const locus_model_t &m,
                                              locus_tensor_role_t role) {
  return role == LOCUS_TENSOR_INPUT    ? m.inputs
         : role == LOCUS_TENSOR_OUTPUT ? m.outputs
                                       : m.states;
}

locus_status_t find(const locus_model_t &m, locus_tensor_role_t role,
                    const char *name, size_t &out) {
  const auto &list = infos(m, role);
  for (size_t i = 0; i < list.size(); ++i)
    if (name && std::strcmp(list[i].name, name) == 0) {
      out = i;
      return nullptr;
    }
  std::string names;
  for (const auto &info : list)
    names += (names.empty() ? "" : ", ") + std::string(info.name);
  const char *what = roleName(role);
  return makeStatus(LOCUS_STATUS_NOT_FOUND, "no %s named '%s' (%ss: %s)", what,
                    name ? name : "(null)", what,
                    names.empty() ? "none" : names.c_str());
}

locus_status_t lookup(const locus_model_t &m, locus_tensor_role_t role,
                      const char *name, size_t bytes, size_t &index) {
  if (locus_status_t s = find(m, role, name, index))
    return s;
  return checkSize(infos(m, role)[index], bytes, roleName(role));
}

locus_status_t readState(const locus_model_t &model, const char *name,
                         void *out, size_t bytes) {
  size_t i = 0;
  if (locus_status_t s = lookup(model, LOCUS_TENSOR_STATE, name, bytes, i))
    return s;
  auto &m = const_cast<locus_model_t &>(model);
  std::shared_lock lock(m.stateMutex);
  uint32_t buffer = m.stateBuffers[i];
  const PlanBuffer &b = m.plan.buffers[buffer];
  // State never made holds its initialiser's values: made into `out`.
  if (!m.persistent[buffer])
    return initChunk(b, 0, bytes / 4, static_cast<float *>(out));
  return m.deviceOf[b.device]->download(m.persistent[buffer], out, bytes);
}

namespace {

/// State no command uses is made when it is first written, within the
/// load's max_bytes.
locus_status_t makeLazyState(locus_model_t &m, uint32_t buffer) {
  uint64_t bytes = m.plan.buffers[buffer].bytes;
  if (m.maxBytes && m.persistentBytes + bytes > m.maxBytes)
    return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY,
                      "writing state '%s' needs %llu more bytes, beyond the "
                      "load's max_bytes %llu",
                      m.plan.buffers[buffer].name.c_str(),
                      static_cast<unsigned long long>(bytes),
                      static_cast<unsigned long long>(m.maxBytes));
  return makeBuffer(m, buffer);
}

} // namespace

locus_status_t writeState(locus_model_t &m, const char *name, const void *data,
                          size_t bytes) {
  size_t i = 0;
  if (locus_status_t s = lookup(m, LOCUS_TENSOR_STATE, name, bytes, i))
    return s;
  std::unique_lock lock(m.stateMutex);
  uint32_t buffer = m.stateBuffers[i];
  const Plan &plan = m.plan;
  if (!m.persistent[buffer])
    if (locus_status_t s = makeLazyState(m, buffer))
      return s;
  // Copies derived from the old values (weights in a library's layout)
  // are made again from the new ones; those of other state stay.
  m.constants.drop(m.persistent[buffer], bytes);
  if (locus_status_t s = m.deviceOf[plan.buffers[buffer].device]->upload(
          data, m.persistent[buffer], bytes))
    return s;
  return rerunLoadCommands(m, buffer);
}

} // namespace locus::rt
