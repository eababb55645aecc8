// plan.cpp - reading a plan without trusting a byte of it.

#include "plan.h"

#include "status_impl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace locus::rt {

size_t dtypeSize(uint8_t dtype) {
  switch (dtype) {
  case LOCUS_PLAN_F32:
    return 4;
  case LOCUS_PLAN_I64:
    return 8;
  case LOCUS_PLAN_I1:
    return 1;
  case LOCUS_PLAN_I32:
    return 4;
  case LOCUS_PLAN_BF16:
  case LOCUS_PLAN_F16:
    return 2;
  default:
    return 0;
  }
}

namespace {

/// A cursor that fails (and stays failed) instead of reading past the end.
class Reader {
public:
  Reader(const unsigned char *data, size_t size) : p(data), end(data + size) {}

  bool ok() const { return good; }
  bool atEnd() const { return p == end; }
  size_t left() const { return static_cast<size_t>(end - p); }

  uint64_t u(unsigned bytes) {
    if (!good || left() < bytes) {
      good = false;
      return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; ++i)
      v |= static_cast<uint64_t>(p[i]) << (8 * i);
    p += bytes;
    return v;
  }
  uint8_t u8() { return static_cast<uint8_t>(u(1)); }
  uint32_t u32() { return static_cast<uint32_t>(u(4)); }
  uint64_t u64() { return u(8); }
  double f64() {
    uint64_t bits = u64();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  /// A count of items of at least `minBytes` each: no more than could fit.
  uint32_t count(size_t minBytes) {
    uint32_t n = u32();
    if (good && static_cast<uint64_t>(n) * minBytes > left())
      good = false;
    return good ? n : 0;
  }
  std::string str() {
    uint32_t n = count(1);
    if (!good)
      return {};
    std::string s(reinterpret_cast<const char *>(p), n);
    p += n;
    return s;
  }
  void bytes(std::vector<unsigned char> &out, uint64_t n) {
    if (!good || left() < n) {
      good = false;
      return;
    }
    out.assign(p, p + n);
    p += n;
  }

private:
  const unsigned char *p, *end;
  bool good = true;
};

bool readCommands(Reader &r, std::vector<PlanCommand> &out) {
  // A command is at least 9 bytes (an op and two numbers): a count cannot
  // ask for more commands than the bytes left could hold.
  uint32_t n = r.count(9);
  out.resize(n);
  for (PlanCommand &c : out) {
    c.op = r.u8();
    switch (c.op) {
    case LOCUS_PLAN_LAUNCH:
    case LOCUS_PLAN_ALL_REDUCE: {
      if (c.op == LOCUS_PLAN_LAUNCH) {
        c.kernel = r.u32();
        c.results = r.u32();
      } else {
        c.device = r.u32();
        c.reduction = r.u32();
      }
      uint32_t args = r.count(4);
      c.args.resize(args);
      for (uint32_t &a : c.args)
        a = r.u32();
      break;
    }
    case LOCUS_PLAN_COPY:
      c.src = r.u32();
      c.dst = r.u32();
      break;
    case LOCUS_PLAN_RECORD:
    case LOCUS_PLAN_WAIT:
      c.device = r.u32();
      c.event = r.u32();
      break;
    default:
      return false;
    }
  }
  return r.ok();
}

#define FAIL(...) return makeStatus(LOCUS_STATUS_DATA_LOSS, __VA_ARGS__)

/// The magic number and the format version.
locus_status_t readHeader(Reader &r) {
  if (r.u32() != LOCUS_PLAN_MAGIC)
    FAIL("the plan is damaged (bad magic)");
  uint32_t version = r.u32();
  if (r.ok() && version != LOCUS_PLAN_VERSION)
    return makeStatus(LOCUS_STATUS_UNAVAILABLE,
                      "the plan has format version %u; this runtime reads %u",
                      version, LOCUS_PLAN_VERSION);
  return nullptr;
}

/// The devices: at least one, each a known kind, no name twice.
locus_status_t readDevices(Reader &r, Plan &plan) {
  plan.devices.resize(r.count(5));
  for (PlanDevice &d : plan.devices) {
    uint8_t kind = r.u8();
    d.index = r.u32();
    if (kind > LOCUS_DEVICE_CUDA || (kind == LOCUS_DEVICE_CPU && d.index != 0))
      FAIL("the plan is damaged (device kind %u)", kind);
    d.kind = static_cast<locus_device_kind_t>(kind);
    d.name =
        d.kind == LOCUS_DEVICE_CPU ? "cpu" : "cuda:" + std::to_string(d.index);
  }
  if (!r.ok() || plan.devices.empty())
    FAIL("the plan is damaged (devices)");
  std::set<std::string> names;
  for (const PlanDevice &d : plan.devices)
    if (!names.insert(d.name).second)
      FAIL("the plan is damaged (device %s twice)", d.name.c_str());
  return nullptr;
}

/// A buffer's dimensions. Returns their product; sets `overflow` when one
/// is negative or over 2^40, or the product would pass 2^48.
uint64_t readDims(Reader &r, std::vector<int64_t> &dims, bool &overflow) {
  uint64_t elements = 1;
  overflow = false;
  for (int64_t &d : dims) {
    d = static_cast<int64_t>(r.u64());
    if (d < 0 || d > (int64_t(1) << 40) ||
        (d && elements > (uint64_t(1) << 48) / static_cast<uint64_t>(d)))
      overflow = true;
    else
      elements *= static_cast<uint64_t>(d);
  }
  return elements;
}

/// What follows a buffer's common fields: a state's initializer, a
/// constant's bytes; an input must have a name.
locus_status_t readBufferPayload(Reader &r, PlanBuffer &b) {
  if (b.kind == LOCUS_PLAN_STATE) {
    b.initKind = r.u8();
    b.initA = r.f64();
    b.initB = r.f64();
    b.seed = r.u64();
    if (b.dtype != LOCUS_PLAN_F32 || b.initKind > LOCUS_INIT_NORMAL ||
        !std::isfinite(b.initA) || !std::isfinite(b.initB) ||
        b.initA > b.initB || b.name.empty())
      FAIL("the plan is damaged (state %s)", b.name.c_str());
  } else if (b.kind == LOCUS_PLAN_CONSTANT) {
    r.bytes(b.data, b.bytes);
  } else if (b.kind == LOCUS_PLAN_INPUT && b.name.empty()) {
    FAIL("the plan is damaged (an input without a name)");
  }
  return nullptr;
}

/// One buffer, the `index`th: its kind, device, dtype and shape agree with
/// its size.
locus_status_t readBuffer(Reader &r, const Plan &plan, PlanBuffer &b,
                          size_t index) {
  b.kind = r.u8();
  b.device = r.u32();
  b.dtype = r.u8();
  uint32_t rank = r.count(8);
  b.dims.resize(rank);
  bool overflow = false;
  uint64_t elements = readDims(r, b.dims, overflow);
  b.bytes = r.u64();
  b.offset = r.u64();
  b.name = r.str();
  if (!r.ok())
    FAIL("the plan is damaged (buffers)");
  if (b.kind > LOCUS_PLAN_PERSISTENT || b.device >= plan.devices.size() ||
      !dtypeSize(b.dtype) || overflow ||
      b.bytes != elements * dtypeSize(b.dtype))
    FAIL("the plan is damaged (buffer %zu)", index);
  return readBufferPayload(r, b);
}

/// The buffers.
locus_status_t readBuffers(Reader &r, Plan &plan) {
  plan.buffers.resize(r.count(30));
  for (PlanBuffer &b : plan.buffers)
    if (locus_status_t s = readBuffer(
            r, plan, b, static_cast<size_t>(&b - plan.buffers.data())))
      return s;
  if (!r.ok())
    FAIL("the plan is damaged (buffers)");
  return nullptr;
}

/// Whether `b` lives in its device's arena (the others have memory of
/// their own).
bool inArena(const PlanBuffer &b) {
  return b.kind == LOCUS_PLAN_ACTIVATION || b.kind == LOCUS_PLAN_INPUT;
}

/// The size of each device's arena, and every buffer placed in one inside
/// it.
locus_status_t readArenas(Reader &r, Plan &plan) {
  plan.arenaBytes.resize(plan.devices.size());
  for (uint64_t &a : plan.arenaBytes) {
    a = r.u64();
    if (a > (uint64_t(1) << 46))
      FAIL("the plan is damaged (an arena of %llu bytes)",
           static_cast<unsigned long long>(a));
  }
  // What the buffers need: the end of the last one, aligned, as the memory
  // planner sizes an arena. A larger arena is memory the file cannot
  // justify.
  std::vector<uint64_t> needed(plan.devices.size(), 0);
  for (const PlanBuffer &b : plan.buffers) {
    if (!inArena(b))
      continue;
    if (b.offset % LOCUS_PLAN_ALIGNMENT ||
        b.offset > plan.arenaBytes[b.device] ||
        b.bytes > plan.arenaBytes[b.device] - b.offset)
      FAIL("the plan is damaged (a buffer outside its arena)");
    uint64_t end = b.offset + (b.bytes + LOCUS_PLAN_ALIGNMENT - 1) /
                                  LOCUS_PLAN_ALIGNMENT * LOCUS_PLAN_ALIGNMENT;
    needed[b.device] = std::max(needed[b.device], end);
  }
  for (size_t d = 0; d < plan.devices.size(); ++d)
    if (plan.arenaBytes[d] > needed[d])
      FAIL("the plan is damaged (an arena of %llu bytes on %s, whose buffers "
           "need %llu)",
           static_cast<unsigned long long>(plan.arenaBytes[d]),
           plan.devices[d].name.c_str(),
           static_cast<unsigned long long>(needed[d]));
  return nullptr;
}

/// The kernels (each a symbol on a device of the plan), the imports, and
/// the load and step commands.
locus_status_t readKernelsAndCommands(Reader &r, Plan &plan) {
  plan.kernels.resize(r.count(8));
  for (PlanKernel &k : plan.kernels) {
    k.symbol = r.str();
    k.device = r.u32();
    if (!r.ok() || k.symbol.empty() || k.device >= plan.devices.size())
      FAIL("the plan is damaged (kernels)");
  }
  plan.imports.resize(r.count(4));
  for (std::string &name : plan.imports)
    name = r.str();
  if (!readCommands(r, plan.load) || !readCommands(r, plan.step))
    FAIL("the plan is damaged (commands)");
  return nullptr;
}

/// The outputs, the number of events, and the end of the plan.
locus_status_t readOutputs(Reader &r, Plan &plan) {
  plan.outputs.resize(r.count(8));
  for (PlanOutput &o : plan.outputs) {
    o.name = r.str();
    o.buffer = r.u32();
    if (!r.ok() || o.buffer >= plan.buffers.size() || o.name.empty())
      FAIL("the plan is damaged (outputs)");
  }
  plan.events = r.u32();
  return r.ok() ? nullptr
                : makeStatus(LOCUS_STATUS_DATA_LOSS,
                             "the plan is damaged (truncated)");
}

/// The dynamic sizes and the dims of the buffers they size, checked: each
/// buffer's dims give its shape at the bounds; the sizes live in one i64
/// input of the sizes' count. Then the end of the plan.
locus_status_t readDynamicSizes(Reader &r, Plan &plan) {
  uint32_t count = r.u32();
  if (!r.ok() || count > LOCUS_PLAN_MAX_SIZES)
    FAIL("the plan is damaged (dynamic sizes)");
  std::set<std::string> names;
  std::vector<int64_t> bounds;
  for (uint32_t k = 0; k < count; ++k) {
    PlanSize size{r.str(), static_cast<int64_t>(r.u64())};
    if (!r.ok() || size.name.empty() || size.bound < 1 ||
        !names.insert(size.name).second)
      FAIL("the plan is damaged (dynamic sizes)");
    bounds.push_back(size.bound);
    plan.sizes.push_back(std::move(size));
  }
  plan.dims.resize(plan.buffers.size());
  uint32_t buffers = r.count(4);
  for (uint32_t j = 0; j < buffers && r.ok(); ++j) {
    uint32_t b = r.u32();
    if (!r.ok() || b >= plan.buffers.size() || !plan.dims[b].empty() ||
        count == 0)
      FAIL("the plan is damaged (dynamic dims)");
    for (int64_t bound : plan.buffers[b].dims) {
      PlanDim dim{static_cast<int64_t>(r.u64()), {}};
      for (uint32_t k = 0; k < count; ++k)
        dim.powers.push_back(r.u8());
      // Evaluated with overflow checks: the dims at the bounds must be the
      // buffer's shape.
      int64_t n = dim.factor;
      bool fits = r.ok() && n >= 0;
      for (uint32_t k = 0; k < count && fits; ++k)
        for (uint8_t i = 0; i < dim.powers[k] && fits; ++i)
          fits = dim.powers[k] <= LOCUS_PLAN_MAX_POWER &&
                 !__builtin_mul_overflow(n, bounds[k], &n);
      if (!fits || n != bound)
        FAIL("the plan is damaged (dynamic dims)");
      plan.dims[b].push_back(std::move(dim));
    }
  }
  for (uint32_t b = 0; b < plan.buffers.size(); ++b)
    if (plan.buffers[b].kind == LOCUS_PLAN_INPUT &&
        plan.buffers[b].name == LOCUS_PLAN_SIZES_INPUT) {
      const PlanBuffer &sizes = plan.buffers[b];
      if (count == 0 || sizes.dtype != LOCUS_PLAN_I64 ||
          sizes.dims != std::vector<int64_t>{count} ||
          plan.devices[sizes.device].kind != LOCUS_DEVICE_CPU)
        FAIL("the plan is damaged (its sizes input)");
      plan.sizesBuffer = b;
    }
  if (count != 0 && plan.sizesBuffer == UINT32_MAX)
    FAIL("the plan is damaged (dynamic sizes without their input)");
  if (!r.ok() || !r.atEnd())
    FAIL("the plan is damaged (%s)", r.ok() ? "trailing bytes" : "truncated");
  return nullptr;
}

/// Names are unique within each role.
locus_status_t checkNames(const Plan &plan) {
  std::set<std::string> inputs, states, outputs;
  for (const PlanBuffer &b : plan.buffers)
    if ((b.kind == LOCUS_PLAN_INPUT && !inputs.insert(b.name).second) ||
        (b.kind == LOCUS_PLAN_STATE && !states.insert(b.name).second))
      FAIL("the plan is damaged (%s twice)", b.name.c_str());
  for (const PlanOutput &o : plan.outputs)
    if (!outputs.insert(o.name).second)
      FAIL("the plan is damaged (output %s twice)", o.name.c_str());
  return nullptr;
}

/// The `i`th buffer of the plan, or null when there is none.
const PlanBuffer *bufferAt(const Plan &plan, uint32_t i) {
  return i < plan.buffers.size() ? &plan.buffers[i] : nullptr;
}

/// A launch of a kernel of the plan: per step, writing activations or state; at
/// load, reading constants, state and persistent buffers only, writing
/// persistent ones.
locus_status_t checkLaunch(const Plan &plan, const PlanCommand &c, bool step) {
  if (c.kernel >= plan.kernels.size() || c.results > c.args.size())
    FAIL("the plan is damaged (a launch)");
  for (size_t i = 0; i < c.args.size(); ++i) {
    const PlanBuffer *b = bufferAt(plan, c.args[i]);
    bool writes = i >= c.args.size() - c.results;
    bool fits = !b               ? false
                : step && writes ? b->kind == LOCUS_PLAN_ACTIVATION ||
                                       b->kind == LOCUS_PLAN_STATE
                : step   ? true
                : writes ? b->kind == LOCUS_PLAN_PERSISTENT
                         : b->kind == LOCUS_PLAN_CONSTANT ||
                               b->kind == LOCUS_PLAN_STATE ||
                               b->kind == LOCUS_PLAN_PERSISTENT;
    if (!fits)
      FAIL("the plan is damaged (a launch's buffers)");
  }
  return nullptr;
}

/// An all-reduce, per step: n f32 operands and n results of their sizes,
/// all on its device, the results activations.
locus_status_t checkAllReduce(const Plan &plan, const PlanCommand &c,
                              bool step) {
  size_t n = c.args.size() / 2;
  if (!step || c.device >= plan.devices.size() || n == 0 ||
      c.args.size() % 2 != 0 ||
      (c.reduction != LOCUS_PLAN_REDUCE_SUM &&
       c.reduction != LOCUS_PLAN_REDUCE_MEAN))
    FAIL("the plan is damaged (an all-reduce)");
  for (size_t i = 0; i < n; ++i) {
    const PlanBuffer *in = bufferAt(plan, c.args[i]);
    const PlanBuffer *out = bufferAt(plan, c.args[n + i]);
    if (!in || !out || in->dtype != LOCUS_PLAN_F32 ||
        out->dtype != LOCUS_PLAN_F32 || in->bytes != out->bytes ||
        in->device != c.device || out->device != c.device ||
        out->kind != LOCUS_PLAN_ACTIVATION)
      FAIL("the plan is damaged (an all-reduce's buffers)");
  }
  return nullptr;
}

/// A copy between buffers of one size: per step into activations or
/// state, at load time from constants or state into persistent buffers.
locus_status_t checkCopy(const Plan &plan, const PlanCommand &c, bool step) {
  const PlanBuffer *src = bufferAt(plan, c.src), *dst = bufferAt(plan, c.dst);
  bool writable = step ? dst && (dst->kind == LOCUS_PLAN_ACTIVATION ||
                                 dst->kind == LOCUS_PLAN_STATE)
                       : dst && dst->kind == LOCUS_PLAN_PERSISTENT;
  if (!src || !dst || src->bytes != dst->bytes || !writable ||
      (!step && src->kind == LOCUS_PLAN_ACTIVATION) ||
      (!step && src->kind == LOCUS_PLAN_INPUT))
    FAIL("the plan is damaged (a copy)");
  // memcpy's operands must not overlap: one buffer, or two whose ranges of
  // one arena meet.
  bool overlap = c.src == c.dst || (inArena(*src) && inArena(*dst) &&
                                    src->device == dst->device && src->bytes &&
                                    src->offset < dst->offset + dst->bytes &&
                                    dst->offset < src->offset + src->bytes);
  if (overlap)
    FAIL("the plan is damaged (a copy between overlapping buffers)");
  return nullptr;
}

/// Commands refer to what exists; launches and per-step copies write
/// activations or state (a training step's updates); load-time copies write
/// persistent buffers only.
locus_status_t checkCommands(const Plan &plan) {
  for (int phase = 0; phase < 2; ++phase)
    for (const PlanCommand &c : phase ? plan.step : plan.load) {
      locus_status_t s = nullptr;
      switch (c.op) {
      case LOCUS_PLAN_LAUNCH:
        s = checkLaunch(plan, c, phase != 0);
        break;
      case LOCUS_PLAN_COPY:
        s = checkCopy(plan, c, phase != 0);
        break;
      case LOCUS_PLAN_ALL_REDUCE:
        s = checkAllReduce(plan, c, phase != 0);
        break;
      default:
        if (c.device >= plan.devices.size() || c.event >= plan.events)
          FAIL("the plan is damaged (an event)");
      }
      if (s)
        return s;
    }
  // Each event is recorded by a command: a count beyond them is memory
  // (per context) for nothing.
  uint64_t records = 0;
  for (const auto *commands : {&plan.load, &plan.step})
    for (const PlanCommand &c : *commands)
      records += c.op == LOCUS_PLAN_RECORD;
  if (plan.events > records)
    FAIL("the plan is damaged (%u events, but it records %llu)", plan.events,
         static_cast<unsigned long long>(records));
  return nullptr;
}

} // namespace

bool PlanDim::isSize(size_t &k) const {
  size_t found = 0, which = 0;
  for (size_t i = 0; i < powers.size(); ++i)
    if (powers[i] != 0) {
      ++found;
      which = i;
    }
  k = which;
  return factor == 1 && found == 1 && powers[which] == 1;
}

locus_status_t readPlan(const void *data, size_t size, Plan &plan) {
  Reader r(static_cast<const unsigned char *>(data), size);
  if (locus_status_t s = readHeader(r))
    return s;
  if (locus_status_t s = readDevices(r, plan))
    return s;
  if (locus_status_t s = readBuffers(r, plan))
    return s;
  if (locus_status_t s = readArenas(r, plan))
    return s;
  if (locus_status_t s = readKernelsAndCommands(r, plan))
    return s;
  if (locus_status_t s = readOutputs(r, plan))
    return s;
  if (locus_status_t s = readDynamicSizes(r, plan))
    return s;
  if (locus_status_t s = checkNames(plan))
    return s;
  return checkCommands(plan);
}

} // namespace locus::rt
