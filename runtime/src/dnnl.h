// dnnl.h - oneDNN for the runtime's convolutions and matrix products:
// found with dlopen (never linked, as OpenBLAS is), once per process.
#ifndef LOCUS_RUNTIME_DNNL_H
#define LOCUS_RUNTIME_DNNL_H

#if LOCUS_HAVE_DNNL_H
#include <oneapi/dnnl/dnnl.h>

#include <string>

namespace locus::rt {

/// The oneDNN functions used, found with dlsym.
struct Dnnl {
#define LOCUS_DNNL_FUNCTIONS(X)                                                \
  X(dnnl_engine_create)                                                        \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_wait)                                                          \
  X(dnnl_stream_destroy)                                                       \
  X(dnnl_memory_desc_init_by_tag)                                              \
  X(dnnl_memory_desc_init_by_strides)                                          \
  X(dnnl_memory_desc_equal)                                                    \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_dilated_convolution_forward_desc_init)                                \
  X(dnnl_dilated_convolution_backward_data_desc_init)                          \
  X(dnnl_dilated_convolution_backward_weights_desc_init)                       \
  X(dnnl_pooling_forward_desc_init)                                            \
  X(dnnl_matmul_desc_init)                                                     \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                   \
  X(dnnl_primitive_attr_set_post_ops)                                          \
  X(dnnl_post_ops_create)                                                      \
  X(dnnl_post_ops_destroy)                                                     \
  X(dnnl_post_ops_append_eltwise)                                              \
  X(dnnl_post_ops_append_sum)                                                  \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_reorder_primitive_desc_create)                                        \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_destroy)                                                    \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_destroy)                                                       \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_version)                                                              \
  X(dnnl_get_effective_cpu_isa)
// NOLINTNEXTLINE(bugprone-macro-parentheses): f names a member
#define LOCUS_DNNL_FIELD(f) decltype(&::f) f = nullptr;
  LOCUS_DNNL_FUNCTIONS(LOCUS_DNNL_FIELD)
#undef LOCUS_DNNL_FIELD
  dnnl_engine_t engine = nullptr;
  /// "oneDNN <version>, <ISA>, ..." when it loaded; why not otherwise.
  std::string name;
};

/// Loads oneDNN once ($LOCUS_DNNL when set, else libdnnl.so.2, Debian's
/// libdnnl2); engine stays null when it cannot, and name says why.
const Dnnl &dnnl();

/// The calling thread's stream on the engine (oneDNN streams are not
/// shared between threads); null when none can be made.
dnnl_stream_t dnnlStream(const Dnnl &d);

inline bool ok(dnnl_status_t status) { return status == dnnl_success; }

/// The primitive descriptor of `opDesc` (a dnnl_*_desc_t) with a user
/// scratchpad, which every caller takes from the calling thread's
/// workspace (oneDNN's own is shared between threads), and the post-ops
/// asked for: C += `sum` * old C when `sum` is not 0, then ReLU when `relu`.
/// A backward primitive names its forward one as `hint`. Null when oneDNN
/// refuses it; the caller destroys it.
dnnl_primitive_desc_t
describePrimitive(const Dnnl &d, const void *opDesc, float sum, bool relu,
                  const_dnnl_primitive_desc_t hint = nullptr);

/// The memory objects of one primitive call, each wrapping a buffer of
/// the call (making one allocates no data); destroyed with this.
class CallMemory {
public:
  explicit CallMemory(const Dnnl &d) : d_(d) {}
  CallMemory(const CallMemory &) = delete;
  CallMemory &operator=(const CallMemory &) = delete;
  ~CallMemory() {
    for (int i = 0; i < count_; ++i)
      d_.dnnl_memory_destroy(objects_[i]);
  }
  /// `data` described by `md`; null when oneDNN refuses it.
  dnnl_memory_t wrap(const dnnl_memory_desc_t &md, const void *data) {
    dnnl_memory_t m = nullptr;
    if (count_ == kMax || !ok(d_.dnnl_memory_create(&m, &md, d_.engine,
                                                    const_cast<void *>(data))))
      return nullptr;
    objects_[count_++] = m;
    return m;
  }

private:
  static constexpr int kMax = 16;
  const Dnnl &d_;
  dnnl_memory_t objects_[kMax] = {};
  int count_ = 0;
};

/// A reorder from layout `from` to `to`; null when oneDNN refuses it.
dnnl_primitive_t makeReorder(const Dnnl &d, const dnnl_memory_desc_t &from,
                             const dnnl_memory_desc_t &to);

/// Runs `reorder` (made by makeReorder for `from` and `to`) from `src` into
/// `dst` on the calling thread's stream and waits for it; false when it
/// fails.
bool reorderNow(const Dnnl &d, dnnl_primitive_t reorder,
                const dnnl_memory_desc_t &from, const void *src,
                const dnnl_memory_desc_t &to, void *dst);

} // namespace locus::rt

#endif // LOCUS_HAVE_DNNL_H
#endif
