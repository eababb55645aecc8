// dnnl.cpp - loads oneDNN for the runtime (dnnl.h).

#include "dnnl.h"

#if LOCUS_HAVE_DNNL_H

#include "dl.h"
#include "openmp.h"

#include <cstdlib>
#include <mutex>
#include <string>

using locus::rt::Dnnl;

namespace {

const char *isaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41:
    return "SSE4.1";
  case dnnl_cpu_isa_avx:
    return "AVX";
  case dnnl_cpu_isa_avx2:
    return "AVX2";
  case dnnl_cpu_isa_avx512_core:
    return "AVX-512";
  case dnnl_cpu_isa_avx512_core_vnni:
    return "AVX-512 VNNI";
  case dnnl_cpu_isa_avx512_core_bf16:
    return "AVX-512 BF16";
  case dnnl_cpu_isa_avx512_core_amx:
    return "AVX-512 AMX";
  default:
    return "its ISA";
  }
}

} // namespace

const Dnnl &locus::rt::dnnl() {
  static Dnnl loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    // oneDNN's OpenMP team, like OpenBLAS's, must not spin long beside the
    // runtime's workers.
    locus::rt::settleOpenMpTeams();
    const char *chosen = std::getenv("LOCUS_DNNL");
    std::string library = chosen && *chosen ? chosen : "libdnnl.so.2";
    Library opened = openFirst({library.c_str()});
    void *handle = opened.handle;
    if (!handle) {
      loaded.name = opened.why;
      return;
    }
    Dnnl d;
    bool complete = true;
#define LOCUS_DNNL_LOOKUP(f) complete = bindSymbol(handle, d.f, #f) && complete;
    LOCUS_DNNL_FUNCTIONS(LOCUS_DNNL_LOOKUP)
#undef LOCUS_DNNL_LOOKUP
    const dnnl_version_t *version = complete ? d.dnnl_version() : nullptr;
    // The C API used here is oneDNN 2.x's (operation descriptors).
    if (!version || version->major != 2) {
      loaded.name = library + " is not oneDNN 2.x";
      return;
    }
    if (d.dnnl_engine_create(&d.engine, dnnl_cpu, 0) != dnnl_success) {
      loaded.name = library + " has no CPU engine";
      return;
    }
    d.name =
        "oneDNN " + std::to_string(version->major) + "." +
        std::to_string(version->minor) + "." + std::to_string(version->patch) +
        ", " + isaName(d.dnnl_get_effective_cpu_isa()) +
        (version->cpu_runtime == DNNL_RUNTIME_OMP ? ", OpenMP threads" : "") +
        " (" + library + ")";
    loaded = d;
    // The runtime's parallel loops join oneDNN's OpenMP team.
    locus::rt::adoptOpenMpTeam();
  });
  return loaded;
}

dnnl_primitive_desc_t
locus::rt::describePrimitive(const Dnnl &d, const void *opDesc, float sum,
                             bool relu, const_dnnl_primitive_desc_t hint) {
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t ops = nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  bool built =
      ok(d.dnnl_primitive_attr_create(&attr)) &&
      ok(d.dnnl_primitive_attr_set_scratchpad_mode(
          attr, dnnl_scratchpad_mode_user)) &&
      ok(d.dnnl_post_ops_create(&ops)) &&
      (sum == 0.0f || ok(d.dnnl_post_ops_append_sum(ops, sum))) &&
      (!relu || ok(d.dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu,
                                                  0.0f, 0.0f))) &&
      ok(d.dnnl_primitive_attr_set_post_ops(attr, ops)) &&
      ok(d.dnnl_primitive_desc_create(&pd, opDesc, attr, d.engine, hint));
  if (ops)
    d.dnnl_post_ops_destroy(ops);
  if (attr)
    d.dnnl_primitive_attr_destroy(attr);
  if (!built && pd) {
    d.dnnl_primitive_desc_destroy(pd);
    pd = nullptr;
  }
  return pd;
}

dnnl_primitive_t locus::rt::makeReorder(const Dnnl &d,
                                        const dnnl_memory_desc_t &from,
                                        const dnnl_memory_desc_t &to) {
  dnnl_primitive_desc_t pd = nullptr;
  if (!ok(d.dnnl_reorder_primitive_desc_create(&pd, &from, d.engine, &to,
                                               d.engine, nullptr)))
    return nullptr;
  dnnl_primitive_t reorder = nullptr;
  if (!ok(d.dnnl_primitive_create(&reorder, pd)))
    reorder = nullptr;
  d.dnnl_primitive_desc_destroy(pd);
  return reorder;
}

bool locus::rt::reorderNow(const Dnnl &d, dnnl_primitive_t reorder,
                           const dnnl_memory_desc_t &from, const void *src,
                           const dnnl_memory_desc_t &to, void *dst) {
  dnnl_stream_t stream = dnnlStream(d);
  dnnl_memory_t in = nullptr, out = nullptr;
  bool ran =
      stream &&
      ok(d.dnnl_memory_create(&in, &from, d.engine, const_cast<void *>(src))) &&
      ok(d.dnnl_memory_create(&out, &to, d.engine, dst));
  if (ran) {
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, out}};
    ran = ok(d.dnnl_primitive_execute(reorder, stream, 2, args)) &&
          ok(d.dnnl_stream_wait(stream));
  }
  for (dnnl_memory_t mem : {in, out})
    if (mem)
      d.dnnl_memory_destroy(mem);
  return ran;
}

dnnl_stream_t locus::rt::dnnlStream(const Dnnl &d) {
  struct Stream {
    const Dnnl *d = nullptr;
    dnnl_stream_t s = nullptr;
    ~Stream() {
      if (s)
        d->dnnl_stream_destroy(s);
    }
  };
  thread_local Stream stream;
  if (!stream.s &&
      ok(d.dnnl_stream_create(&stream.s, d.engine, dnnl_stream_default_flags)))
    stream.d = &d;
  return stream.s;
}

#endif // LOCUS_HAVE_DNNL_H
