// checkpoint.cpp - a model's state as safetensors: saved whole or only
// where it differs from its initialiser (what an artifact carries), loaded
// whole, partly or by name, with every name, shape and dtype checked before
// anything is written.

#include "file_io.h"
#include "guard.h"
#include "model.h"
#include "safetensors.h"
#include "status_impl.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace locus::rt {

namespace {

/// "a, b, c" of at most 8 names, then how many more.
std::string listNames(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > 8)
    out += " and " + std::to_string(names.size() - 8) + " more";
  return out.empty() ? "none" : out;
}

std::string shapeOf(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// Whether state buffer `buffer` holding `value` is what its initialiser
/// makes.
locus_status_t isInitial(const PlanBuffer &b, const std::vector<float> &value,
                         bool &out) {
  constexpr size_t kChunk = 1 << 16;
  std::vector<float> made(std::min(kChunk, value.size()));
  out = true;
  for (size_t k = 0; k < value.size() && out; k += kChunk) {
    size_t n = std::min(kChunk, value.size() - k);
    if (locus_status_t s = initChunk(b, k, n, made.data()))
      return s;
    out = std::memcmp(made.data(), value.data() + k, n * 4) == 0;
  }
  return nullptr;
}

} // namespace

locus_status_t saveState(const locus_model_t &m, locus_state_select_t which,
                         std::string &out) {
  std::vector<SafeTensorOut> tensors;
  for (size_t i = 0; i < m.states.size(); ++i) {
    const locus_tensor_info_t &info = m.states[i];
    SafeTensorOut t;
    t.name = info.name;
    t.shape.assign(info.dims, info.dims + info.rank);
    t.data.resize(info.byte_size / 4);
    if (locus_status_t s =
            readState(m, info.name, t.data.data(), info.byte_size))
      return s;
    if (which == LOCUS_STATE_CHANGED) {
      bool initial = false;
      if (locus_status_t s =
              isInitial(m.plan.buffers[m.stateBuffers[i]], t.data, initial))
        return s;
      if (initial)
        continue;
    }
    tensors.push_back(std::move(t));
  }
  out = which == LOCUS_STATE_CHANGED && tensors.empty()
            ? ""
            : writeSafetensors(tensors);
  return nullptr;
}

locus_status_t loadState(locus_model_t &m, const void *data, size_t size,
                         const char *what, const StateLoadRules &rules,
                         size_t &loaded) {
  loaded = 0;
  std::vector<SafeTensor> file;
  if (locus_status_t s = parseSafetensors(data, size, what, file))
    return s;
  std::unordered_map<std::string, const SafeTensor *> byName;
  for (const SafeTensor &t : file)
    byName.emplace(t.name, &t);
  std::unordered_map<std::string, size_t> stateIndex;
  for (size_t i = 0; i < m.states.size(); ++i)
    stateIndex.emplace(m.states[i].name, i);

  // What to load: pairs of (state index, tensor).
  std::vector<std::pair<size_t, const SafeTensor *>> pairs;
  if (rules.names) {
    for (const std::string &name : *rules.names) {
      auto state = stateIndex.find(name);
      auto tensor = byName.find(name);
      if (state == stateIndex.end() || tensor == byName.end())
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "cannot load '%s' from %s: %s", name.c_str(), what,
                          state == stateIndex.end()
                              ? "the model has no state of that name"
                              : "the file has no tensor of that name");
      pairs.emplace_back(state->second, tensor->second);
    }
  } else {
    std::vector<std::string> missing, unexpected;
    for (const locus_tensor_info_t &info : m.states)
      if (!byName.count(info.name))
        missing.emplace_back(info.name);
    for (const SafeTensor &t : file) {
      auto state = stateIndex.find(t.name);
      if (state == stateIndex.end())
        unexpected.push_back(t.name);
      else
        pairs.emplace_back(state->second, &t);
    }
    if ((!missing.empty() && !rules.allowMissing) ||
        (!unexpected.empty() && !rules.allowUnexpected))
      return makeStatus(
          LOCUS_STATUS_INVALID_ARGUMENT,
          "%s does not hold this model's state: missing (the model's, not "
          "in the file): %s; unexpected (in the file, not the model's): %s",
          what, listNames(missing).c_str(), listNames(unexpected).c_str());
  }

  // Every tensor checked and converted before the first is written.
  std::vector<std::vector<float>> values(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    const locus_tensor_info_t &info = m.states[pairs[k].first];
    const SafeTensor &t = *pairs[k].second;
    std::vector<int64_t> dims(info.dims, info.dims + info.rank);
    if (t.shape != dims)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "tensor '%s' of %s is %s %s; the model's state is %s "
                        "f32",
                        t.name.c_str(), what, t.dtype.c_str(),
                        shapeOf(t.shape).c_str(), shapeOf(dims).c_str());
    values[k].resize(info.byte_size / 4);
    if (!toF32(t, values[k].data(), values[k].size()))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "tensor '%s' of %s is %s; the model's state is f32 "
                        "(F32, F64, F16 and BF16 load)",
                        t.name.c_str(), what, t.dtype.c_str());
    // A weight that is NaN or infinite trains and predicts nothing: a
    // checkpoint saved after a divergence is refused, not loaded silently.
    for (size_t e = 0; e < values[k].size(); ++e)
      if (!std::isfinite(values[k][e]))
        return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                          "tensor '%s' of %s holds %s at element %zu (of "
                          "%zu): the state would be lost, not loaded",
                          t.name.c_str(), what,
                          std::isnan(values[k][e]) ? "NaN" : "an infinity", e,
                          values[k].size());
  }
  for (size_t k = 0; k < pairs.size(); ++k) {
    const locus_tensor_info_t &info = m.states[pairs[k].first];
    if (locus_status_t s =
            writeState(m, info.name, values[k].data(), info.byte_size))
      return s;
  }
  loaded = pairs.size();
  return nullptr;
}

} // namespace locus::rt

using namespace locus::rt;

namespace {

/// The rules of a user's load.
StateLoadRules rulesOf(const locus_state_load_options_t *options,
                       std::vector<std::string> &names) {
  StateLoadRules rules;
  if (options && options->names) {
    for (size_t i = 0; i < options->name_count; ++i)
      names.emplace_back(options->names[i] ? options->names[i] : "(null)");
    rules.names = &names;
  }
  rules.allowMissing = rules.allowUnexpected = options && options->partial;
  return rules;
}

} // namespace

extern "C" {

locus_status_t locus_model_save_state_memory(const locus_model_t *model,
                                             locus_state_select_t which,
                                             void **out_data,
                                             size_t *out_size) {
  LOCUS_GUARD({
    if (!model || !out_data || !out_size || which > LOCUS_STATE_CHANGED)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_model_save_state_memory: NULL argument or a "
                        "bad selection");
    *out_data = nullptr;
    *out_size = 0;
    std::string bytes;
    if (locus_status_t s = saveState(*model, which, bytes))
      return s;
    void *copy = std::malloc(bytes.size() ? bytes.size() : 1);
    if (!copy)
      return makeStatus(LOCUS_STATUS_OUT_OF_MEMORY, "%zu bytes of state",
                        bytes.size());
    std::memcpy(copy, bytes.data(), bytes.size());
    *out_data = copy;
    *out_size = bytes.size();
    return nullptr;
  });
}

void locus_free(void *data) { std::free(data); }

locus_status_t locus_model_save_state(const locus_model_t *model,
                                      const char *path) {
  LOCUS_GUARD({
    if (!model || !path)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_model_save_state: NULL argument");
    std::string bytes;
    if (locus_status_t s = saveState(*model, LOCUS_STATE_ALL, bytes))
      return s;
    return writeFileAtomic(path, bytes.data(), bytes.size());
  });
}

locus_status_t locus_model_load_state_memory(
    locus_model_t *model, const void *data, size_t size,
    const locus_state_load_options_t *options, size_t *out_loaded) {
  LOCUS_GUARD({
    if (!model || (!data && size))
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_model_load_state_memory: NULL argument");
    std::vector<std::string> names;
    size_t loaded = 0;
    locus_status_t s = loadState(*model, data, size, "the state given",
                                 rulesOf(options, names), loaded);
    if (out_loaded)
      *out_loaded = loaded;
    return s;
  });
}

locus_status_t locus_model_load_state(locus_model_t *model, const char *path,
                                      const locus_state_load_options_t *options,
                                      size_t *out_loaded) {
  LOCUS_GUARD({
    if (out_loaded)
      *out_loaded = 0;
    if (!model || !path)
      return makeStatus(LOCUS_STATUS_INVALID_ARGUMENT,
                        "locus_model_load_state: NULL argument");
    std::unique_ptr<unsigned char[]> bytes;
    size_t size = 0;
    if (locus_status_t s = readFile(path, SIZE_MAX, bytes, size))
      return s;
    std::vector<std::string> names;
    size_t loaded = 0;
    locus_status_t s = loadState(*model, bytes.get(), size, path,
                                 rulesOf(options, names), loaded);
    if (out_loaded)
      *out_loaded = loaded;
    return s;
  });
}

} // extern "C"
