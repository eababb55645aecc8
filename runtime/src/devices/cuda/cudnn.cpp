// cudnn.cpp - convolutions through cuDNN 9's convolution API (cudnn_cnn),
// found with dlopen. cudnn.h is not needed to build the runtime: the types
// and entry points used are declared below, as cuDNN 9 defines them.
//
// Numerics: every f32 descriptor asks for CUDNN_FMA_MATH, so no algorithm
// rounds operands to TF32 (fp32 is Locus's contract; cuDNN's default math
// would use TF32 on Ampere and later) unless the op's flags carry
// LOCUS_CONV_TF32. With LOCUS_CONV_BF16 or _F16 the tensors are 16-bit,
// the arithmetic f32 on tensor cores (PyTorch's autocast convolutions:
// CUDNN_TENSOR_OP_MATH, compute type float). The candidates are timed once per
// shape, at the first step (cudnnFind*, as torch.backends.cudnn.benchmark), and
// the fastest deterministic one is taken, so every later step gives the same
// result (with TF32 allowed, the fastest of all: see anyAlgorithm);
// LOCUS_CUDNN_BENCHMARK=0 takes the first deterministic one that cuDNN's
// heuristics rank instead (no timing; the same algorithm in every
// process). On an H100 timing made the ResNet-18 step 1.24x -> 0.87x
// PyTorch's (2026-11-27).

#include "devices/cuda/cudnn.h"
#include "dl.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace locus::rt::cudnn {

namespace {

using Status = int;
using Handle = struct cudnnContext *;
using TensorDesc = struct cudnnTensorStruct *;
using FilterDesc = struct cudnnFilterStruct *;
using ConvDesc = struct cudnnConvolutionStruct *;

constexpr int kNchw = 0, kFloat = 0, kHalf = 2, kBfloat16 = 9;
constexpr int kCrossCorrelation = 1;
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kAllowConversion = 2,
              kFmaMath = 3;

/// The cudnnDataType_t of a convolution's tensors by its flags: bf16 or
/// f16 with LOCUS_CONV_BF16 or _F16, else f32. Its arithmetic is f32
/// always (the convolution descriptor's compute type).
int dataTypeOf(int64_t flags) {
  if (flags & LOCUS_CONV_BF16)
    return kBfloat16;
  return (flags & LOCUS_CONV_F16) ? kHalf : kFloat;
}

/// The math type a convolution starts with: FMA for f32 (no TF32 unless
/// LOCUS_CONV_TF32), tensor cores for 16-bit operands and with TF32
/// allowed.
int mathTypeOf(int64_t flags) {
  if (flags & (LOCUS_CONV_BF16 | LOCUS_CONV_F16))
    return kTensorOpMath;
  return (flags & LOCUS_CONV_TF32) ? kDefaultMath : kFmaMath;
}
constexpr int kDeterministic = 1;
constexpr size_t kMaxWorkspace = size_t(1) << 31;

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the same layout.
struct Perf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};
static_assert(sizeof(Perf) == 48, "cuDNN 9's algorithm perf struct");

using AlgoFn = Status (*)(Handle, void *, void *, ConvDesc, void *, int, int *,
                          Perf *);
using WsFn = Status (*)(Handle, void *, void *, ConvDesc, void *, int,
                        size_t *);

} // namespace

struct Library {
  void *handle = nullptr;
  std::string path;
  size_t version = 0;
#define LOCUS_DNN(name, ...) Status (*name)(__VA_ARGS__) = nullptr;
  LOCUS_DNN(cudnnCreate, Handle *)
  LOCUS_DNN(cudnnDestroy, Handle)
  LOCUS_DNN(cudnnSetStream, Handle, void *)
  LOCUS_DNN(cudnnCreateTensorDescriptor, TensorDesc *)
  LOCUS_DNN(cudnnSetTensor4dDescriptor, TensorDesc, int, int, int, int, int,
            int)
  LOCUS_DNN(cudnnDestroyTensorDescriptor, TensorDesc)
  LOCUS_DNN(cudnnCreateFilterDescriptor, FilterDesc *)
  LOCUS_DNN(cudnnSetFilter4dDescriptor, FilterDesc, int, int, int, int, int,
            int)
  LOCUS_DNN(cudnnDestroyFilterDescriptor, FilterDesc)
  LOCUS_DNN(cudnnCreateConvolutionDescriptor, ConvDesc *)
  LOCUS_DNN(cudnnSetConvolution2dDescriptor, ConvDesc, int, int, int, int, int,
            int, int, int)
  LOCUS_DNN(cudnnSetConvolutionGroupCount, ConvDesc, int)
  LOCUS_DNN(cudnnSetConvolutionMathType, ConvDesc, int)
  LOCUS_DNN(cudnnDestroyConvolutionDescriptor, ConvDesc)
  LOCUS_DNN(cudnnConvolutionForward, Handle, const void *, TensorDesc,
            const void *, FilterDesc, const void *, ConvDesc, int, void *,
            size_t, const void *, TensorDesc, void *)
  LOCUS_DNN(cudnnConvolutionBackwardData, Handle, const void *, FilterDesc,
            const void *, TensorDesc, const void *, ConvDesc, int, void *,
            size_t, const void *, TensorDesc, void *)
  LOCUS_DNN(cudnnConvolutionBackwardFilter, Handle, const void *, TensorDesc,
            const void *, TensorDesc, const void *, ConvDesc, int, void *,
            size_t, const void *, FilterDesc, void *)
  LOCUS_DNN(cudnnAddTensor, Handle, const void *, TensorDesc, const void *,
            const void *, TensorDesc, void *)
#undef LOCUS_DNN
  size_t (*cudnnGetVersion)() = nullptr;
  const char *(*cudnnGetErrorString)(Status) = nullptr;
  // Per kind (forward, input gradient, weight gradient): heuristics,
  // timing, workspace size. Descriptors in cuDNN's order for the kind.
  AlgoFn heuristic[3] = {}, find[3] = {};
  WsFn workspace[3] = {};

  std::string error(Status s) const {
    const char *text = cudnnGetErrorString ? cudnnGetErrorString(s) : nullptr;
    return text ? text : "cuDNN status " + std::to_string(s);
  }
};

namespace {

/// Binds every entry point; the first missing one's name, or "".
std::string bindAll(Library &l) {
  std::string missing;
  auto need = [&](auto &fn, const char *name) {
    if (!bindSymbol(l.handle, fn, name) && missing.empty())
      missing = name;
  };
#define LOCUS_NEED(name) need(l.name, #name);
  LOCUS_NEED(cudnnGetVersion)
  LOCUS_NEED(cudnnGetErrorString)
  LOCUS_NEED(cudnnCreate)
  LOCUS_NEED(cudnnDestroy)
  LOCUS_NEED(cudnnSetStream)
  LOCUS_NEED(cudnnCreateTensorDescriptor)
  LOCUS_NEED(cudnnSetTensor4dDescriptor)
  LOCUS_NEED(cudnnDestroyTensorDescriptor)
  LOCUS_NEED(cudnnCreateFilterDescriptor)
  LOCUS_NEED(cudnnSetFilter4dDescriptor)
  LOCUS_NEED(cudnnDestroyFilterDescriptor)
  LOCUS_NEED(cudnnCreateConvolutionDescriptor)
  LOCUS_NEED(cudnnSetConvolution2dDescriptor)
  LOCUS_NEED(cudnnSetConvolutionGroupCount)
  LOCUS_NEED(cudnnSetConvolutionMathType)
  LOCUS_NEED(cudnnDestroyConvolutionDescriptor)
  LOCUS_NEED(cudnnConvolutionForward)
  LOCUS_NEED(cudnnConvolutionBackwardData)
  LOCUS_NEED(cudnnConvolutionBackwardFilter)
  LOCUS_NEED(cudnnAddTensor)
#undef LOCUS_NEED
  // Per kind (locus_conv_kind_e): heuristics, timing, workspace size.
  static const char *const kPerKind[3][3] = {
      {"cudnnGetConvolutionForwardAlgorithm_v7",
       "cudnnFindConvolutionForwardAlgorithm",
       "cudnnGetConvolutionForwardWorkspaceSize"},
      {"cudnnGetConvolutionBackwardDataAlgorithm_v7",
       "cudnnFindConvolutionBackwardDataAlgorithm",
       "cudnnGetConvolutionBackwardDataWorkspaceSize"},
      {"cudnnGetConvolutionBackwardFilterAlgorithm_v7",
       "cudnnFindConvolutionBackwardFilterAlgorithm",
       "cudnnGetConvolutionBackwardFilterWorkspaceSize"}};
  for (int kind = 0; kind < 3; ++kind) {
    need(l.heuristic[kind], kPerKind[kind][0]);
    need(l.find[kind], kPerKind[kind][1]);
    need(l.workspace[kind], kPerKind[kind][2]);
  }
  return missing;
}

} // namespace

void LibraryDeleter::operator()(Library *library) const { delete library; }

LibraryPtr load(const char *env, std::string &why) {
  const bool named = env && *env;
  rt::Library opened =
      openNvidiaLibrary(env, "LOCUS_CUDNN", "libcudnn.so.9", "cudnn", why);
  if (!opened.handle)
    return nullptr;
  LibraryPtr l(new Library);
  l->handle = opened.handle;
  l->path = libraryFileOf(dlsym(opened.handle, "cudnnGetVersion"));
  if (l->path.empty())
    l->path = named ? env : "libcudnn.so.9";
  if (std::string missing = bindAll(*l); !missing.empty()) {
    why = l->path + " lacks " + missing + ": not cuDNN 9";
    return nullptr;
  }
  l->version = l->cudnnGetVersion();
  if (l->version / 10000 != 9) {
    why = l->path + " is cuDNN " + versionCodeText(l->version) +
          "; Locus uses cuDNN 9";
    return nullptr;
  }
  return l;
}

const Library *library(std::string *why) {
  static std::once_flag once;
  static LibraryPtr loaded;
  static std::string failure;
  std::call_once(once,
                 [] { loaded = load(std::getenv("LOCUS_CUDNN"), failure); });
  if (why)
    *why = failure;
  return loaded.get();
}

std::string describe(const Library *library, const std::string &why) {
  if (!library)
    return "no cuDNN (" + why + ")";
  return "cuDNN " + versionCodeText(library->version) + " (" + library->path +
         ")";
}

std::string describe() {
  std::string why;
  const Library *l = library(&why);
  return describe(l, why);
}

struct Convolutions::Plan {
  TensorDesc x = nullptr, y = nullptr, bias = nullptr;
  FilterDesc w = nullptr;
  ConvDesc conv = nullptr;
  int algo = 0;
  size_t workspace = 0;

  void release(const Library &l) {
    if (x)
      l.cudnnDestroyTensorDescriptor(x);
    if (y)
      l.cudnnDestroyTensorDescriptor(y);
    if (bias)
      l.cudnnDestroyTensorDescriptor(bias);
    if (w)
      l.cudnnDestroyFilterDescriptor(w);
    if (conv)
      l.cudnnDestroyConvolutionDescriptor(conv);
  }
};

Convolutions::~Convolutions() {
  const Library *l = library();
  if (!l)
    return;
  for (auto &[key, plan] : plans_) {
    plan->release(*l);
    delete plan;
  }
  if (handle_)
    l->cudnnDestroy(static_cast<Handle>(handle_));
}

bool Convolutions::ready(std::string &why) {
  if (!tried_) {
    tried_ = true;
    const Library *l = library(&why_);
    Handle h = nullptr;
    if (l) {
      if (Status s = l->cudnnCreate(&h)) {
        why_ = "cudnnCreate failed: " + l->error(s);
        h = nullptr;
      }
    }
    handle_ = h;
  }
  why = why_;
  return handle_ != nullptr;
}

namespace {

/// The descriptors' operands in cuDNN's order for `kind`: (input-side
/// tensor or filter, other, result).
std::array<void *, 3> operandsOf(int64_t kind, const Convolutions::Plan &p) {
  if (kind == LOCUS_CONV_FORWARD)
    return {p.x, p.w, p.y};
  if (kind == LOCUS_CONV_INPUT_GRAD)
    return {p.w, p.y, p.x};
  return {p.x, p.y, p.w};
}

/// Whether any algorithm may be taken, deterministic or not: with TF32
/// allowed (whose rounding dwarfs a changed summation order), as PyTorch's
/// default, unless LOCUS_CUDNN_DETERMINISTIC says: 1 keeps deterministic
/// algorithms always, 0 takes any always. In fp32 on an H100, any
/// algorithm made the ResNet-18 step 11.4 ms against 13.7 (2026-11-27).
bool anyAlgorithm(bool tf32) {
  static const int env = [] {
    const char *v = std::getenv("LOCUS_CUDNN_DETERMINISTIC");
    return !v || !*v ? -1 : std::string(v) == "0" ? 0 : 1;
  }();
  return env < 0 ? tf32 : env == 0;
}

/// The first usable algorithm of `perf` (ranked or timed, best first): a
/// deterministic one if any, unless `anyOrder` (anyAlgorithm above). Never
/// one that converts fp32 operands to fp16.
const Perf *choose(const std::vector<Perf> &perf, int count, bool anyOrder) {
  const Perf *first = nullptr;
  for (int i = 0; i < count; ++i) {
    const Perf &p = perf[size_t(i)];
    if (p.status != 0 || p.memory > kMaxWorkspace ||
        p.mathType == kAllowConversion)
      continue;
    if (anyOrder || p.determinism == kDeterministic)
      return &p;
    if (!first)
      first = &p;
  }
  return first;
}

/// With LOCUS_CUDNN_LOG=1, one line on stderr per convolution shape: the
/// candidates as cuDNN ranked or timed them and the one taken, as
/// DNNL_VERBOSE does for oneDNN.
void logChoice(const Key &key, const std::vector<Perf> &perf, int count,
               const Perf *best) {
  static const bool on = [] {
    const char *env = std::getenv("LOCUS_CUDNN_LOG");
    return env && std::string(env) == "1";
  }();
  if (!on)
    return;
  static const char *const kinds[] = {"forward", "input-grad", "weight-grad"};
  const int64_t *p = key.data() + 1;
  std::string line =
      "locus cudnn: " + std::string(kinds[key[0]]) + " n" +
      std::to_string(p[LOCUS_CONV_N]) + " c" + std::to_string(p[LOCUS_CONV_C]) +
      " " + std::to_string(p[LOCUS_CONV_H]) + "x" +
      std::to_string(p[LOCUS_CONV_W]) + " o" + std::to_string(p[LOCUS_CONV_O]) +
      " k" + std::to_string(p[LOCUS_CONV_KH]) + " s" +
      std::to_string(p[LOCUS_CONV_STRIDE_H]) + " flags " +
      std::to_string(p[LOCUS_CONV_FLAGS]) + ":";
  for (int i = 0; i < count; ++i) {
    const Perf &c = perf[size_t(i)];
    if (c.status != 0)
      continue;
    char item[96];
    std::snprintf(item, sizeof item, " %s%d/m%d%s %.3fms",
                  &c == best ? "*" : "", c.algo, c.mathType,
                  c.determinism == kDeterministic ? "" : "/nd", double(c.time));
    line += item;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace

namespace {

/// Makes and sets `plan`'s descriptors for the convolution `key` names;
/// "" or what failed.
std::string describePlan(const Library &l, const Key &key,
                         Convolutions::Plan &plan) {
  const int64_t *p = key.data() + 1;
  auto i = [&](int which) { return static_cast<int>(p[which]); };
  const int groups = i(LOCUS_CONV_GROUPS);
  const int64_t flags = p[LOCUS_CONV_FLAGS];
  std::string e;
  auto step = [&](Status s, const char *what) {
    if (e.empty() && s)
      e = std::string(what) + ": " + l.error(s);
    return e.empty();
  };
  bool bias = key[0] == LOCUS_CONV_FORWARD && (flags & LOCUS_CONV_BIAS);
  if (!step(l.cudnnCreateTensorDescriptor(&plan.x), "a tensor descriptor") ||
      !step(l.cudnnCreateTensorDescriptor(&plan.y), "a tensor descriptor") ||
      !step(l.cudnnCreateFilterDescriptor(&plan.w), "a filter descriptor") ||
      !step(l.cudnnCreateConvolutionDescriptor(&plan.conv),
            "a convolution descriptor") ||
      (bias &&
       !step(l.cudnnCreateTensorDescriptor(&plan.bias), "a tensor descriptor")))
    return e;
  const int data = dataTypeOf(flags);
  step(l.cudnnSetTensor4dDescriptor(plan.x, kNchw, data, i(LOCUS_CONV_N),
                                    i(LOCUS_CONV_C), i(LOCUS_CONV_H),
                                    i(LOCUS_CONV_W)),
       "the input's descriptor");
  step(l.cudnnSetTensor4dDescriptor(plan.y, kNchw, data, i(LOCUS_CONV_N),
                                    i(LOCUS_CONV_O), i(LOCUS_CONV_OH),
                                    i(LOCUS_CONV_OW)),
       "the output's descriptor");
  step(l.cudnnSetFilter4dDescriptor(plan.w, data, kNchw, i(LOCUS_CONV_O),
                                    i(LOCUS_CONV_C) / std::max(groups, 1),
                                    i(LOCUS_CONV_KH), i(LOCUS_CONV_KW)),
       "the weight's descriptor");
  step(l.cudnnSetConvolution2dDescriptor(
           plan.conv, i(LOCUS_CONV_PAD_H), i(LOCUS_CONV_PAD_W),
           i(LOCUS_CONV_STRIDE_H), i(LOCUS_CONV_STRIDE_W),
           i(LOCUS_CONV_DILATION_H), i(LOCUS_CONV_DILATION_W),
           kCrossCorrelation, kFloat),
       "the convolution's descriptor");
  step(l.cudnnSetConvolutionGroupCount(plan.conv, groups),
       "cudnnSetConvolutionGroupCount");
  step(l.cudnnSetConvolutionMathType(plan.conv, mathTypeOf(flags)),
       "cudnnSetConvolutionMathType");
  if (bias)
    step(l.cudnnSetTensor4dDescriptor(plan.bias, kNchw, kFloat, 1,
                                      i(LOCUS_CONV_O), 1, 1),
         "the bias's descriptor");
  return e;
}

} // namespace

std::string Convolutions::plan(const Key &key, Plan *&out) {
  if (auto it = plans_.find(key); it != plans_.end()) {
    out = it->second;
    return "";
  }
  const Library &l = *library();
  auto *made = new Plan;
  std::string e = describePlan(l, key, *made);
  if (e.empty())
    e = chooseAlgorithm(key, *made);
  if (!e.empty()) {
    made->release(l);
    delete made;
    return e;
  }
  plans_.emplace(key, made);
  out = made;
  return "";
}

std::string Convolutions::chooseAlgorithm(const Key &key, Plan &plan) {
  const int64_t kind = key[0];
  // TF32 or 16-bit operands: rounding that dwarfs a changed summation
  // order, and math cuDNN may choose.
  const bool tf32 = (key[1 + LOCUS_CONV_FLAGS] &
                     (LOCUS_CONV_TF32 | LOCUS_CONV_BF16 | LOCUS_CONV_F16)) != 0;
  const Library &l = *library();
  auto h = static_cast<Handle>(handle_);
  std::array<void *, 3> ops = operandsOf(kind, plan);
  static const bool benchmark = [] {
    const char *env = std::getenv("LOCUS_CUDNN_BENCHMARK");
    return !(env && std::string(env) == "0");
  }();
  constexpr int kMaxAlgorithms = 16;
  std::vector<Perf> perf(kMaxAlgorithms);
  int count = 0;
  AlgoFn fn = benchmark ? l.find[kind] : l.heuristic[kind];
  if (Status s = fn(h, ops[0], ops[1], plan.conv, ops[2], kMaxAlgorithms,
                    &count, perf.data()))
    return std::string(benchmark ? "timing" : "ranking") +
           " the algorithms: " + l.error(s);
  const Perf *best = choose(perf, count, anyAlgorithm(tf32));
  logChoice(key, perf, count, best);
  if (!best)
    return "no cuDNN algorithm supports this convolution";
  plan.algo = best->algo;
  // With TF32 allowed or 16-bit operands, the math the algorithm was
  // ranked or timed with (the descriptor's may have run as another), as
  // cuDNN asks; otherwise the descriptor's FMA math stays, whatever is
  // reported.
  if (tf32 && best->mathType != mathTypeOf(key[1 + LOCUS_CONV_FLAGS]))
    if (Status s = l.cudnnSetConvolutionMathType(plan.conv, best->mathType))
      return "setting the math type: " + l.error(s);
  if (Status s = l.workspace[kind](h, ops[0], ops[1], plan.conv, ops[2],
                                   plan.algo, &plan.workspace))
    return "the workspace's size: " + l.error(s);
  return "";
}

namespace {

/// A device address passed as an integer (what generated code has).
void *addressOf(uintptr_t address) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  return reinterpret_cast<void *>(address);
}

/// The buffers of one call: `a` and `b` as locus_conv_kind_e says.
struct Operands {
  const void *a, *b, *bias;
  void *y, *workspace;
};

/// Issues convolution `kind` of `p` on the handle's stream; `what` names
/// the cuDNN call a failure came from.
Status execute(const Library &l, Handle h, int64_t kind,
               const Convolutions::Plan &p, const Operands &o,
               const char *&what) {
  const float one = 1.0f, zero = 0.0f;
  if (kind == LOCUS_CONV_INPUT_GRAD) {
    what = "cudnnConvolutionBackwardData";
    return l.cudnnConvolutionBackwardData(h, &one, p.w, o.b, p.y, o.a, p.conv,
                                          p.algo, o.workspace, p.workspace,
                                          &zero, p.x, o.y);
  }
  if (kind == LOCUS_CONV_WEIGHT_GRAD) {
    what = "cudnnConvolutionBackwardFilter";
    return l.cudnnConvolutionBackwardFilter(h, &one, p.x, o.a, p.y, o.b, p.conv,
                                            p.algo, o.workspace, p.workspace,
                                            &zero, p.w, o.y);
  }
  what = "cudnnConvolutionForward";
  Status s =
      l.cudnnConvolutionForward(h, &one, p.x, o.a, p.w, o.b, p.conv, p.algo,
                                o.workspace, p.workspace, &zero, p.y, o.y);
  if (s || !p.bias)
    return s;
  what = "cudnnAddTensor (the bias)";
  return l.cudnnAddTensor(h, &one, p.bias, o.bias, &one, p.y, o.y);
}

} // namespace

std::string Convolutions::run(void *stream, int64_t kind, const int64_t *params,
                              uintptr_t a, uintptr_t b, uintptr_t bias,
                              uintptr_t y, const Workspace &workspace) {
  if (kind < LOCUS_CONV_FORWARD || kind > LOCUS_CONV_WEIGHT_GRAD)
    return "convolution kind " + std::to_string(kind) + " is unknown";
  const int64_t flags = params[LOCUS_CONV_FLAGS];
  if ((flags & LOCUS_CONV_BF16) && (flags & LOCUS_CONV_F16))
    return "a convolution cannot be both bf16 and f16";
  if ((flags & (LOCUS_CONV_BF16 | LOCUS_CONV_F16)) &&
      kind == LOCUS_CONV_FORWARD && (flags & LOCUS_CONV_BIAS))
    return "a 16-bit convolution with a bias (add the bias after it)";
  const Library &l = *library();
  auto h = static_cast<Handle>(handle_);
  if (Status s = l.cudnnSetStream(h, stream))
    return "cudnnSetStream: " + l.error(s);
  Key key{};
  key[0] = kind;
  std::copy(params, params + LOCUS_CONV_PARAM_COUNT, key.begin() + 1);
  Plan *p = nullptr;
  if (std::string e = plan(key, p); !e.empty())
    return e;
  void *ws = nullptr;
  if (p->workspace) {
    ws = workspace.alloc(p->workspace);
    if (!ws)
      return "no device memory for cuDNN's workspace of " +
             std::to_string(p->workspace) + " bytes";
  }
  Operands operands{addressOf(a), addressOf(b), addressOf(bias), addressOf(y),
                    ws};
  const char *what = nullptr;
  Status s = execute(l, h, kind, *p, operands, what);
  if (ws)
    workspace.free(ws);
  return s ? std::string(what) + ": " + l.error(s) : std::string();
}

} // namespace locus::rt::cudnn
