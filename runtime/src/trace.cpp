// trace.cpp - Chrome trace JSON of a model's runs (see trace.h). One lane
// (thread) for the steps, one per plan device for its kernels and one per
// plan device for the copies into it.

#include "trace.h"

#include "file_io.h"
#include "json.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace locus::rt {

namespace {

std::string micros(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e3);
  return text;
}

std::string stepName(uint64_t step) {
  return step == Trace::kLoad ? std::string("load")
                              : "step " + std::to_string(step);
}

/// A lane's name event.
std::string laneName(uint32_t tid, const std::string &name) {
  return R"({"ph":"M","name":"thread_name","pid":1,"tid":)" +
         std::to_string(tid) + R"(,"args":{"name":)" + jsonQuoted(name) +
         "}},\n" + R"({"ph":"M","name":"thread_sort_index","pid":1,"tid":)" +
         std::to_string(tid) + R"(,"args":{"sort_index":)" +
         std::to_string(tid) + "}},\n";
}

std::string plainKernelName(const std::string &symbol) {
  const std::string prefix = LOCUS_ABI_KERNEL_PREFIX;
  return symbol.compare(0, prefix.size(), prefix) == 0
             ? symbol.substr(prefix.size())
             : symbol;
}

/// A kernel's ops as JSON: [{"op":..,"count":..,"at":..,"layer":..,
/// "layer_kind":..}], the records of its source (an unreadable line with
/// its text as "op" and count 0).
std::string opsJson(const KernelSource &source) {
  std::string out = "[";
  for (const SourceOp &op : source.ops) {
    if (out.size() > 1)
      out += ",";
    out += "{\"op\":" + jsonQuoted(op.op) +
           ",\"count\":" + std::to_string(op.count) +
           ",\"at\":" + jsonQuoted(op.at) +
           ",\"layer\":" + jsonQuoted(op.layer) +
           ",\"layer_kind\":" + jsonQuoted(op.kind) + "}";
  }
  return out + "]";
}

} // namespace

void Trace::start(const char *path) {
  if (path && *path) {
    path_ = path;
  } else if (const char *env = std::getenv("LOCUS_TRACE"); env && *env) {
    path_ = env;
    fromEnvironment_ = true;
  }
  on_ = !path_.empty();
  origin_ = Clock::now();
}

void Trace::add(Event e, Clock::time_point begin) {
  Clock::time_point end = Clock::now();
  e.beginNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(begin - origin_)
          .count();
  e.durationNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin).count();
  std::lock_guard lock(mutex_);
  if (events_.size() >= kMaxEvents) {
    ++dropped_;
    return;
  }
  try {
    events_.push_back(e);
  } catch (...) { // out of memory: the event is lost, the run goes on
    ++dropped_;
  }
}

void Trace::kernel(uint32_t kernel, uint64_t bytes, uint64_t context,
                   uint64_t step, Clock::time_point begin) {
  if (on_)
    add({Kind::kernel, kernel, 0, bytes, context, step}, begin);
}

void Trace::copy(uint32_t from, uint32_t to, uint64_t bytes, uint64_t context,
                 uint64_t step, Clock::time_point begin) {
  if (on_)
    add({Kind::copy, from, to, bytes, context, step}, begin);
}

void Trace::step(uint64_t context, uint64_t step, Clock::time_point begin) {
  if (on_)
    add({Kind::step, 0, 0, 0, context, step}, begin);
}

void Trace::allReduce(uint32_t device, uint64_t bytes, bool wait,
                      uint64_t context, uint64_t step,
                      Clock::time_point begin) {
  if (on_)
    add({Kind::allReduce, device, wait ? 1u : 0u, bytes, context, step}, begin);
}

std::string Trace::json(const TraceNames &names) const {
  const Plan &plan = names.plan;
  const auto devices = static_cast<uint32_t>(plan.devices.size());
  auto where = [&](uint32_t d) {
    return d < names.deviceOf.size() && names.deviceOf[d]
               ? names.deviceOf[d]->name()
               : std::string("?");
  };
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out += R"({"ph":"M","name":"process_name","pid":1,"args":{"name":"locus"}},)"
         "\n";
  out += laneName(0, "steps");
  for (uint32_t d = 0; d < devices; ++d) {
    out += laneName(1 + d,
                    plan.devices[d].name + " kernels (on " + where(d) + ")");
    out += laneName(1 + devices + d, "copies to " + plan.devices[d].name);
  }
  out += laneName(1 + 2 * devices, "all-reduces");
  // A snapshot: runs go on adding while the text is made.
  std::vector<Event> events;
  uint64_t dropped = 0;
  {
    std::lock_guard lock(mutex_);
    events = events_;
    dropped = dropped_;
  }
  for (const Event &e : events) {
    std::string name, cat, args;
    uint32_t tid = 0;
    if (e.kind == Kind::kernel && e.a < plan.kernels.size()) {
      const PlanKernel &k = plan.kernels[e.a];
      name = plainKernelName(k.symbol);
      cat = "kernel";
      tid = 1 + k.device;
      static const KernelSource none;
      const KernelSource &source =
          e.a < names.kernelSources.size() ? names.kernelSources[e.a] : none;
      args = ",\"device\":" + jsonQuoted(plan.devices[k.device].name) +
             ",\"runs_on\":" + jsonQuoted(where(k.device)) +
             ",\"stream\":\"compute\",\"bytes\":" + std::to_string(e.bytes) +
             ",\"source\":" + jsonQuoted(source.text) +
             ",\"ops\":" + opsJson(source);
    } else if (e.kind == Kind::copy && e.a < devices && e.b < devices) {
      name = "copy " + plan.devices[e.a].name + " -> " + plan.devices[e.b].name;
      cat = "copy";
      tid = 1 + devices + e.b;
      args = ",\"from\":" + jsonQuoted(plan.devices[e.a].name) +
             ",\"to\":" + jsonQuoted(plan.devices[e.b].name) +
             ",\"stream\":\"copy\",\"bytes\":" + std::to_string(e.bytes);
    } else if (e.kind == Kind::allReduce && e.a < devices) {
      name = e.b ? "all-reduce wait" : "all-reduce start";
      cat = "all_reduce";
      tid = 1 + 2 * devices;
      args = ",\"device\":" + jsonQuoted(plan.devices[e.a].name) +
             ",\"bytes\":" + std::to_string(e.bytes);
    } else if (e.kind == Kind::step) {
      name = stepName(e.step);
      cat = "step";
    } else {
      continue; // not this plan's (cannot happen)
    }
    out += "{\"name\":";
    out += jsonQuoted(name);
    out += ",\"cat\":\"";
    out += cat;
    out += "\",\"ph\":\"X\",\"pid\":1,\"tid\":";
    out += std::to_string(tid);
    out += ",\"ts\":";
    out += micros(e.beginNs);
    out += ",\"dur\":";
    out += micros(e.durationNs);
    out += ",\"args\":{\"step\":";
    out += e.step == kLoad ? std::string("\"load\"") : std::to_string(e.step);
    out += ",\"context\":";
    out += std::to_string(e.context);
    out += args;
    out += "}},\n";
  }
  // The last event's comma: a final metadata event closes the list.
  out += R"({"ph":"M","name":"locus_dropped_events","pid":1,"args":{"count":)";
  out += std::to_string(dropped);
  out += "}}\n]}\n";
  return out;
}

locus_status_t Trace::write(const char *path, const TraceNames &names) const {
  std::string text = json(names);
  return writeFileAtomic(path, text.data(), text.size());
}

} // namespace locus::rt
