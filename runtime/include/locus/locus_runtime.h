/* locus_runtime.h - the Locus runtime's C API.
 *
 * Conventions (IREE's): every call that can fail returns a locus_status_t,
 * which is NULL on success and otherwise an object the caller frees with
 * locus_status_free(); outputs come last as out_*; objects made by *_create
 * or *_probe are released by the matching *_release. No exception crosses
 * this API. The runtime links libc, libstdc++ and libdl only; CUDA is loaded
 * with dlopen when it is there. Every enum ends in a *_MAX_ENUM of 0x7FFFFFFF
 * so that any 32-bit value a C caller passes is a valid value of the type
 * (and is then rejected by the call, not undefined behaviour).
 */
#ifndef LOCUS_RUNTIME_H
#define LOCUS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LOCUS_API __attribute__((visibility("default")))
#else
#define LOCUS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===------------------------------------------------------------------===*
 * Status
 *===------------------------------------------------------------------===*/

typedef enum locus_status_code_e {
  LOCUS_STATUS_OK = 0,
  LOCUS_STATUS_INVALID_ARGUMENT = 1,
  LOCUS_STATUS_NOT_FOUND = 2,
  LOCUS_STATUS_UNAVAILABLE = 3,
  LOCUS_STATUS_DATA_LOSS = 4,
  LOCUS_STATUS_OUT_OF_MEMORY = 5,
  LOCUS_STATUS_INTERNAL = 6,
  LOCUS_STATUS_CANCELLED = 7,         /* a caller's callback stopped the work */
  LOCUS_STATUS_PERMISSION_DENIED = 8, /* an artifact no trusted key signed */
  LOCUS_STATUS_CODE_MAX_ENUM = 0x7FFFFFFF,
} locus_status_code_t;

/* NULL means success. */
typedef struct locus_status_s *locus_status_t;

/* The code of a status; LOCUS_STATUS_OK for NULL. */
LOCUS_API locus_status_code_t locus_status_code(locus_status_t status);
/* The message of a status ("" for NULL); valid until the status is freed. */
LOCUS_API const char *locus_status_message(locus_status_t status);
/* A status with `code` and a copy of `message` (NULL gives ""): what a
 * callback returns to stop the runtime's loop. LOCUS_STATUS_OK gives NULL. */
LOCUS_API locus_status_t locus_status_create(locus_status_code_t code,
                                             const char *message);
/* Frees a status; NULL is allowed. */
LOCUS_API void locus_status_free(locus_status_t status);
/* "ok", "invalid argument", ...: the name of a code. */
LOCUS_API const char *locus_status_code_name(locus_status_code_t code);

/* The runtime's version, "MAJOR.MINOR.PATCH". */
LOCUS_API const char *locus_runtime_version(void);

/*===------------------------------------------------------------------===*
 * Deterministic initialisers (what #locus.init<...> means)
 *===------------------------------------------------------------------===*/

typedef enum locus_init_kind_e {
  /* Every element is `a`. */
  LOCUS_INIT_FULL = 0,
  /* Element i is drawn from U[a, b) by a counter-based generator: the
   * splitmix64 finaliser of seed + (i + 1) * 0x9E3779B97F4A7C15, whose top 24
   * bits give u in [0, 1); the value is a + (b - a) * u rounded to f32, kept
   * below b. Any prefix, device or thread count gives the same values. */
  LOCUS_INIT_UNIFORM = 1,
  /* Element i is drawn from N(a, b^2) (b >= 0) by Box-Muller over two
   * draws of the same generator: u1 from counter 2i + 1 (top 53 bits, then
   * 1 - u1, in (0, 1]) and u2 from counter 2i + 2; the value is
   * a + b * sqrt(-2 ln u1) * cos(2 pi u2) in double, rounded to f32. */
  LOCUS_INIT_NORMAL = 2,
  LOCUS_INIT_KIND_MAX_ENUM = 0x7FFFFFFF,
} locus_init_kind_t;

/* Fills out_values[0..count) by the initialiser. Fails with INVALID_ARGUMENT
 * (and writes nothing) for a NULL buffer with count > 0, an unknown kind,
 * non-finite bounds, or a > b. */
LOCUS_API locus_status_t locus_init_fill(locus_init_kind_t kind, double a,
                                         double b, uint64_t seed, size_t count,
                                         float *out_values);

/*===------------------------------------------------------------------===*
 * Devices of this machine
 *===------------------------------------------------------------------===*/

typedef enum locus_device_kind_e {
  LOCUS_DEVICE_CPU = 0,
  LOCUS_DEVICE_CUDA = 1,
  LOCUS_DEVICE_KIND_MAX_ENUM = 0x7FFFFFFF,
} locus_device_kind_t;

typedef struct locus_device_info_s {
  locus_device_kind_t kind;
  int32_t index;  /* N of cuda:N; 0 for the CPU */
  char name[128]; /* "cpu (2 threads)", or the GPU's name */
} locus_device_info_t;

typedef struct locus_device_report_s locus_device_report_t;

/* Looks at this machine: the CPU is always device 0; CUDA devices follow
 * when libcuda.so.1 loads and cuInit succeeds. A machine with no driver or
 * no GPU is not an error: the report says why CUDA is absent. */
LOCUS_API locus_status_t locus_device_probe(locus_device_report_t **out_report);
LOCUS_API void locus_device_report_release(locus_device_report_t *report);
LOCUS_API size_t locus_device_report_count(const locus_device_report_t *report);
/* Copies device i of the report; INVALID_ARGUMENT when i is out of range. */
LOCUS_API locus_status_t
locus_device_report_get(const locus_device_report_t *report, size_t i,
                        locus_device_info_t *out_info);
/* Why no CUDA device is listed ("" when some are), e.g. "no CUDA driver
 * (libcuda.so.1: cannot open shared object file: ...)". */
LOCUS_API const char *
locus_device_report_cuda_note(const locus_device_report_t *report);

/*===------------------------------------------------------------------===*
 * Artifacts: one file, a versioned and checksummed container of sections
 *===------------------------------------------------------------------===*/

/* Layout (little-endian): a 64-byte header (magic "LOCUSART", format version,
 * header size, file size, section count, host architecture, checksum), a
 * table of sections {kind, flags, offset, size}, then the sections, 16-byte
 * aligned. The checksum (64-bit FNV-1a) covers every byte of the file but its
 * own eight: it detects accidents, not attackers (see "Trust" below for
 * signatures; a signed artifact's signature section is its last). A loader
 * accepts exactly what a writer of its version wrote. */

#define LOCUS_ARTIFACT_FORMAT_VERSION 1u

typedef enum locus_section_kind_e {
  LOCUS_SECTION_GRAPH = 1,     /* the placed graph, for locus-dump */
  LOCUS_SECTION_PLAN = 2,      /* commands over numbered buffers */
  LOCUS_SECTION_HOST_CODE = 3, /* an object file for the host */
  LOCUS_SECTION_PTX = 4,       /* CUDA kernels */
  LOCUS_SECTION_METADATA = 5,  /* inputs, outputs, state */
  LOCUS_SECTION_STATE = 6,     /* state values (safetensors), see below */
  LOCUS_SECTION_SIGNATURE = 7, /* written by locus_artifact_write_signed */
  LOCUS_SECTION_KIND_MAX_ENUM = 0x7FFFFFFF,
} locus_section_kind_t;

typedef enum locus_arch_e {
  LOCUS_ARCH_ANY = 0, /* no host code inside */
  LOCUS_ARCH_X86_64 = 1,
  LOCUS_ARCH_AARCH64 = 2,
  LOCUS_ARCH_MAX_ENUM = 0x7FFFFFFF,
} locus_arch_t;

typedef struct locus_section_s {
  locus_section_kind_t kind;
  const void *data;
  size_t size;
} locus_section_t;

typedef struct locus_artifact_s locus_artifact_t;

/* The architecture this runtime runs on. */
LOCUS_API locus_arch_t locus_host_arch(void);

/* Writes an artifact of `count` sections (each kind at most once) to `path`.
 * `arch` is the architecture of its host code, LOCUS_ARCH_ANY without. */
LOCUS_API locus_status_t locus_artifact_write(const char *path,
                                              locus_arch_t arch,
                                              const locus_section_t *sections,
                                              size_t count);

/* As locus_artifact_write, into memory: *out_data (free it with locus_free)
 * holds the *out_size bytes locus_artifact_write would write. */
LOCUS_API locus_status_t
locus_artifact_write_memory(locus_arch_t arch, const locus_section_t *sections,
                            size_t count, void **out_data, size_t *out_size);

/*===------------------------------------------------------------------===*
 * Trust: an artifact is code
 *
 * Loading an artifact maps its host code into the process and runs its
 * kernels there, as loading a shared library does. Treat an artifact as a
 * program: load only artifacts you made or got from someone you trust,
 * exactly as PyTorch says of torch.load and pickled models, and as ONNX
 * Runtime says of custom-op libraries. The runtime checks every byte it
 * reads (the container, the plan, the host code's ELF headers, each
 * kernel's signature against its launches), so a damaged or malformed file
 * is an error and not a crash; but those checks cannot make hostile code
 * safe. The checksum detects accidents, not attackers.
 *
 * To load only artifacts from known builders, sign them (Ed25519, through
 * libsodium, which the runtime loads with dlopen when it is needed):
 * locus-compile --sign-key builder.key, or locus_artifact_write_signed().
 * Then give the builders' public keys to the load (trusted_keys in
 * locus_model_options_t, locus-run --trusted-key): an unsigned artifact, one
 * signed by another key, or one changed after signing is refused before any
 * of it is parsed further, mapped or run.
 *===------------------------------------------------------------------===*/

#define LOCUS_PUBLIC_KEY_BYTES 32
#define LOCUS_SECRET_KEY_BYTES 64

typedef struct locus_public_key_s {
  uint8_t bytes[LOCUS_PUBLIC_KEY_BYTES];
} locus_public_key_t;

/* Makes a new Ed25519 key pair: the secret key in `secret_key_path` (mode
 * 0600), the public key in `public_key_path`, one line of text each.
 * INVALID_ARGUMENT when either file exists (a key is never replaced);
 * UNAVAILABLE without libsodium. */
LOCUS_API locus_status_t locus_key_generate(const char *secret_key_path,
                                            const char *public_key_path);
/* Reads a public key file that locus_key_generate wrote. */
LOCUS_API locus_status_t locus_key_read_public(const char *path,
                                               locus_public_key_t *out_key);

/* As locus_artifact_write, signed with the secret key in `secret_key_path`:
 * the signature section comes last and covers every byte before it.
 * PERMISSION_DENIED when others may read the key file (mode & 077). */
LOCUS_API locus_status_t locus_artifact_write_signed(
    const char *path, locus_arch_t arch, const locus_section_t *sections,
    size_t count, const char *secret_key_path);

/* The key an artifact says it is signed by (not yet checked: see
 * locus_artifact_verify); NOT_FOUND for an unsigned artifact. */
LOCUS_API locus_status_t locus_artifact_signer(const locus_artifact_t *artifact,
                                               locus_public_key_t *out_key);

/* NULL when the artifact is signed by one of `count` trusted keys and
 * unchanged since; otherwise PERMISSION_DENIED with a message that says
 * which it is: unsigned, signed by another key, or changed after signing.
 * UNAVAILABLE without libsodium, INVALID_ARGUMENT for no keys. */
LOCUS_API locus_status_t
locus_artifact_verify(const locus_artifact_t *artifact,
                      const locus_public_key_t *trusted_keys, size_t count);

/* Reads and checks an artifact: DATA_LOSS for a corrupt or truncated file,
 * UNAVAILABLE for another format version or architecture, NOT_FOUND for a
 * missing file. The artifact owns a copy of the bytes. */
LOCUS_API locus_status_t locus_artifact_load(const char *path,
                                             locus_artifact_t **out_artifact);
/* The same from memory (copied). */
LOCUS_API locus_status_t locus_artifact_load_memory(
    const void *data, size_t size, locus_artifact_t **out_artifact);
LOCUS_API void locus_artifact_release(locus_artifact_t *artifact);
LOCUS_API locus_arch_t locus_artifact_arch(const locus_artifact_t *artifact);
/* A section's bytes, valid while the artifact lives; NOT_FOUND if absent. */
LOCUS_API locus_status_t locus_artifact_section(
    const locus_artifact_t *artifact, locus_section_kind_t kind,
    const void **out_data, size_t *out_size);

/*===------------------------------------------------------------------===*
 * Models: a loaded artifact, ready to run
 *===------------------------------------------------------------------===*/

typedef struct locus_model_s locus_model_t;
typedef struct locus_context_s locus_context_t;

typedef struct locus_model_options_s {
  /* Where the artifact's devices run, e.g. "cuda:0=cuda:1", "cuda:0=sim" or
   * "cuda:0=cpu,cuda:1=sim"; NULL or "" for the default: cpu on the CPU, and
   * each cuda:N on GPU N when this machine has it (a driver and a device N)
   * and the artifact has CUDA code for it, on the sim device otherwise (the
   * report says why). Targets: cpu, sim, cuda:N. */
  const char *device_map;
  /* Nonzero: never capture CUDA graphs (as LOCUS_CUDA_GRAPHS=0 does). By
   * default a step that runs on one CUDA device alone is captured on a
   * context's second run and replayed after. */
  int disable_cuda_graphs;
  /* With trusted_key_count > 0, the artifact must be signed by one of these
   * keys (locus_artifact_verify), checked before anything of it is mapped
   * or run; with none, any artifact loads (see "Trust" above). Ignored by
   * locus_model_create_from_plan, whose code is the caller's own. */
  const locus_public_key_t *trusted_keys;
  size_t trusted_key_count;
  /* A file for a trace of every kernel launch, copy and step this model
   * runs (Chrome trace JSON: chrome://tracing or ui.perfetto.dev), written
   * when the model is released; NULL or "" for LOCUS_TRACE's value, or no
   * trace. Tracing times each command, and steps no longer replay as CUDA
   * graphs. See locus_model_write_trace. */
  const char *trace_path;
  /* The most bytes loading may allocate: state, constants and other
   * persistent buffers on every device, plus one context's arenas; 0 for no
   * bound. A plan that needs more is refused with OUT_OF_MEMORY before
   * anything is allocated, so a small hostile file cannot make a service
   * that loads models allocate gigabytes. State that no command of the
   * plan reads or writes is not made at load (reading it gives its
   * initialiser's values); writing it makes it, within the same bound. */
  uint64_t max_bytes;
} locus_model_options_t;

typedef enum locus_dtype_e {
  LOCUS_DTYPE_F32 = 0,
  LOCUS_DTYPE_I64 = 1,
  LOCUS_DTYPE_I1 = 2, /* one byte per element */
  LOCUS_DTYPE_I32 = 3,
  LOCUS_DTYPE_BF16 = 4, /* bfloat16 bits (the high half of an f32), 2 bytes */
  LOCUS_DTYPE_F16 = 5,  /* IEEE binary16 bits, 2 bytes */
  LOCUS_DTYPE_MAX_ENUM = 0x7FFFFFFF,
} locus_dtype_t;

typedef enum locus_tensor_role_e {
  LOCUS_TENSOR_INPUT = 0,
  LOCUS_TENSOR_OUTPUT = 1,
  LOCUS_TENSOR_STATE = 2,
  LOCUS_TENSOR_ROLE_MAX_ENUM = 0x7FFFFFFF,
} locus_tensor_role_t;

typedef struct locus_tensor_info_s {
  const char *name; /* valid while the model lives */
  locus_dtype_t dtype;
  int32_t rank;
  const int64_t *dims; /* rank entries, valid while the model lives */
  size_t byte_size;
  const char *device; /* the artifact's device: "cpu", "cuda:0" */
} locus_tensor_info_t;

/* Loads a model from an artifact file (or from memory, copied): checks the
 * container, the plan and the host code, maps its devices, makes its state
 * and runs its load-time copies. DATA_LOSS for a damaged artifact,
 * UNAVAILABLE for one this machine cannot run (another architecture, a CPU
 * without the instructions it was compiled for), INVALID_ARGUMENT for a bad
 * device map. */
LOCUS_API locus_status_t locus_model_load(const char *path,
                                          const locus_model_options_t *options,
                                          locus_model_t **out_model);
LOCUS_API locus_status_t locus_model_load_memory(
    const void *data, size_t size, const locus_model_options_t *options,
    locus_model_t **out_model);

/* For the compiler's in-process (JIT) path: a model from a plan whose kernel
 * entry points (and CUDA launchers) `resolve` returns by symbol (NULL when
 * unknown), with the kernels of a PTX section (NULL and 0 for none). */
typedef void *(*locus_symbol_resolver_t)(void *user_data, const char *symbol);
LOCUS_API locus_status_t locus_model_create_from_plan(
    const void *plan, size_t plan_size, const void *cuda_kernels,
    size_t cuda_kernels_size, locus_symbol_resolver_t resolve, void *user_data,
    const locus_model_options_t *options, locus_model_t **out_model);

/* Releases a model; its contexts must be released first. NULL is allowed. */
LOCUS_API void locus_model_release(locus_model_t *model);

LOCUS_API size_t locus_model_tensor_count(const locus_model_t *model,
                                          locus_tensor_role_t role);
/* INVALID_ARGUMENT when index is out of range. */
LOCUS_API locus_status_t locus_model_tensor_info(const locus_model_t *model,
                                                 locus_tensor_role_t role,
                                                 size_t index,
                                                 locus_tensor_info_t *out_info);
/* The index of a named tensor; NOT_FOUND names the ones there are. */
LOCUS_API locus_status_t locus_model_find_tensor(const locus_model_t *model,
                                                 locus_tensor_role_t role,
                                                 const char *name,
                                                 size_t *out_index);

/* Reads or writes a state tensor (weights, optimizer buffers) wherever it
 * lives. byte_size must be the tensor's. A write waits for runs in flight
 * and is seen by every later run. */
LOCUS_API locus_status_t locus_model_read_state(const locus_model_t *model,
                                                const char *name,
                                                void *out_data,
                                                size_t byte_size);
LOCUS_API locus_status_t locus_model_write_state(locus_model_t *model,
                                                 const char *name,
                                                 const void *data,
                                                 size_t byte_size);

/* An IEEE half-precision number (its bits) as a float, exactly: what
 * checkpoints and importers convert F16 data with. */
LOCUS_API float locus_f16_to_f32(uint16_t bits);

/* Writes `size` bytes to `path` as the runtime writes artifacts and
 * checkpoints: to a temporary file beside it, flushed to disk and renamed
 * over it, so that a failure (a full disk, a crash) leaves what was there and
 * no temporary file. UNAVAILABLE with errno's text on failure. */
LOCUS_API locus_status_t locus_file_write_atomic(const char *path,
                                                 const void *data, size_t size);

/* Checkpoints: the state as a safetensors file (the format of Hugging Face
 * and of PyTorch users' weights: a JSON header naming each tensor's dtype,
 * shape and byte range, then the bytes). Saving writes every state tensor as
 * F32, atomically: a temporary file beside `path`, flushed and renamed over
 * it, so a failed save leaves what was there. */
LOCUS_API locus_status_t locus_model_save_state(const locus_model_t *model,
                                                const char *path);

typedef enum locus_state_select_e {
  LOCUS_STATE_ALL = 0,
  /* Only the tensors whose value differs from what their initialiser
   * makes: what an artifact must carry to run a trained model. */
  LOCUS_STATE_CHANGED = 1,
  LOCUS_STATE_SELECT_MAX_ENUM = 0x7FFFFFFF,
} locus_state_select_t;

/* The same into memory: *out_data (free it with locus_free) holds
 * *out_size bytes of safetensors; 0 bytes for LOCUS_STATE_CHANGED when every
 * tensor is still at its initialiser. */
LOCUS_API locus_status_t locus_model_save_state_memory(
    const locus_model_t *model, locus_state_select_t which, void **out_data,
    size_t *out_size);
LOCUS_API void locus_free(void *data);

typedef struct locus_state_load_options_s {
  /* Zero (strict, the default): the file must hold exactly the model's
   * state. Nonzero: the names both have are loaded, the model's others keep
   * their values and the file's others are skipped (PyTorch's
   * load_state_dict(strict=False)). */
  int partial;
  /* Non-NULL: load only these `name_count` tensors, each of which must be
   * in the file and in the model; `partial` is then ignored. */
  const char *const *names;
  size_t name_count;
} locus_state_load_options_t;

/* Loads state from a safetensors file (F32, or F64, F16, BF16 converted to
 * F32). Every tensor's name, shape and dtype is checked before the first is
 * written: on any failure nothing changes. NOT_FOUND for a missing file,
 * DATA_LOSS for a malformed one, INVALID_ARGUMENT naming the tensor for a
 * missing, unexpected or mismatched one. `options` NULL: strict. The number
 * of tensors loaded goes to *out_loaded (may be NULL). */
LOCUS_API locus_status_t locus_model_load_state(
    locus_model_t *model, const char *path,
    const locus_state_load_options_t *options, size_t *out_loaded);
LOCUS_API locus_status_t locus_model_load_state_memory(
    locus_model_t *model, const void *data, size_t size,
    const locus_state_load_options_t *options, size_t *out_loaded);

/* What runs where on this machine: one line per device of the artifact
 * (where it runs, and why there), kernel and copy counts. Valid while the
 * model lives. */
LOCUS_API const char *locus_model_report(const locus_model_t *model);

/* Writes the trace of the model's runs so far to `path` (atomically), as
 * the release will: INVALID_ARGUMENT when the model was loaded without a
 * trace (trace_path or LOCUS_TRACE). Each event has its step ("load" for
 * load-time copies), context, device and bytes; a kernel also has its
 * source, the ops in it at the user's lines. */
LOCUS_API locus_status_t locus_model_write_trace(const locus_model_t *model,
                                                 const char *path);

typedef struct locus_run_stats_s {
  uint64_t launches; /* kernel launches */
  uint64_t copies;   /* copies between devices the plan made */
  uint64_t copy_bytes;
  uint64_t sim_launches; /* launches on the sim device */
  uint64_t input_bytes;  /* written by locus_context_set_input */
  uint64_t output_bytes; /* read by locus_context_read_output */
} locus_run_stats_t;

/* What loading did: load-time copies (state and constants moved to their
 * device once) and their bytes. */
LOCUS_API void locus_model_load_stats(const locus_model_t *model,
                                      locus_run_stats_t *out_stats);

/* Host memory the caller keeps, page-locked for the model's GPU copies
 * (cuMemHostRegister, for every GPU of the process). Copies between it
 * and a GPU then go straight, one DMA at link speed, without the runtime's
 * staging buffers and their host memcpy: set_input of an input that lives
 * on a GPU, read_output of an output that does, and read_state and
 * write_state of state there. An input the plan keeps in host memory (and
 * copies to a GPU itself) is set by a host memcpy whatever its source;
 * write it through locus_context_input_view instead (docs/runtime.md).
 * set_input from registered memory returns when the copy is done, so the
 * memory may be reused at once.
 *
 * The memory must stay allocated at that address until
 * locus_model_unregister_host or the model's release, which unlock it
 * (freeing it first would leave the DMA writing to freed pages). Memory
 * page-locked before (cudaHostRegister, cudaMallocHost, a pinned PyTorch
 * tensor) counts as page-locked and stays so. *out_pinned (optional) is 1
 * when the memory is page-locked for the model's GPUs, 0 when the model has
 * none (cpu, sim: copies are host memcpys either way; the range is still
 * recorded). INVALID_ARGUMENT for a null or empty range, or one overlapping
 * a range registered before; UNAVAILABLE when the driver refuses (nothing
 * is registered then, and copies of it stage as before). */
LOCUS_API locus_status_t locus_model_register_host(locus_model_t *model,
                                                   void *data, size_t byte_size,
                                                   int *out_pinned);
/* Undoes locus_model_register_host; `data` is the address it was given.
 * INVALID_ARGUMENT when no range starts there. */
LOCUS_API locus_status_t locus_model_unregister_host(locus_model_t *model,
                                                     void *data);

/* A context holds one run's activations (an arena per device). Each thread
 * runs its own context; any number of contexts of one model run at once. */
LOCUS_API locus_status_t locus_context_create(locus_model_t *model,
                                              locus_context_t **out_context);
LOCUS_API void locus_context_release(locus_context_t *context);
/* The model a context runs. */
LOCUS_API const locus_model_t *
locus_context_model(const locus_context_t *context);
/* Copies an input in; byte_size must be the input's. */
LOCUS_API locus_status_t locus_context_set_input(locus_context_t *context,
                                                 const char *name,
                                                 const void *data,
                                                 size_t byte_size);
/* set_input for a graph with dynamic sizes: the input's dims, which may
 * be below the bounds of its dynamic dimensions (1 to the bound); its data
 * is packed, byte_size its bytes at those dims. Inputs that share a size
 * must agree by the run. A dynamic input set by set_input alone is at its
 * bounds, or, with one dynamic dimension, at the size its bytes give. */
LOCUS_API locus_status_t locus_context_set_input_shaped(
    locus_context_t *context, const char *name, const void *data,
    size_t byte_size, size_t rank, const int64_t *dims);
/* The dims of output `name` in the last run (*out_rank of them into
 * out_dims, which holds `capacity`): below its bounds where its dynamic
 * sizes were; read_output then takes its packed bytes at those dims. */
LOCUS_API locus_status_t locus_context_output_shape(
    const locus_context_t *context, const char *name, size_t capacity,
    int64_t *out_dims, size_t *out_rank);
/* Runs one step. INVALID_ARGUMENT when an input
 * was never set; INTERNAL when a kernel touches a buffer of another device
 * (the sim device checks every launch). */
LOCUS_API locus_status_t locus_context_run(locus_context_t *context);
/* Copies an output of the last run out. */
LOCUS_API locus_status_t locus_context_read_output(locus_context_t *context,
                                                   const char *name,
                                                   void *out_data,
                                                   size_t byte_size);
/* Zero-copy inputs and outputs: memory the context owns, written or read
 * in place of set_input's and read_output's copies.
 *
 * locus_context_input_view points *out_data at input `name` (*out_byte_size
 * its size): write the input there, any time before a run, and it counts
 * as set. Where the input lives in host memory that is its own buffer;
 * where it lives on a GPU (or sim), host memory the run copies in first,
 * pinned where a GPU is loaded (one DMA at link speed, no host memcpy).
 * A later set_input takes over until the view is asked for again. The
 * pointer stays valid until the context is released.
 *
 * locus_context_output_view points *out_data at output `name` of the last
 * run: its own buffer where it lives in host memory, else host memory it
 * is copied into (pinned where a GPU is loaded). Valid, and unchanged,
 * until the context's next run or its release. */
LOCUS_API locus_status_t locus_context_input_view(locus_context_t *context,
                                                  const char *name,
                                                  void **out_data,
                                                  size_t *out_byte_size);
LOCUS_API locus_status_t locus_context_output_view(locus_context_t *context,
                                                   const char *name,
                                                   const void **out_data,
                                                   size_t *out_byte_size);
/* Counts of the last run (inputs and outputs since it started). */
LOCUS_API void locus_context_stats(const locus_context_t *context,
                                   locus_run_stats_t *out_stats);

/* Feeding a sequence of batches, as PyTorch's DataLoader loop does.
 * `next` gives step `step`'s inputs: one pointer per input, in the model's
 * input order (locus_model_tensor_info), each holding the input's bytes; the
 * runtime copies them before `next` returns to it, so the caller may reuse
 * its memory at once. `done` (optional) runs after step `step` finished and
 * may read outputs with locus_context_read_output; a status from either
 * callback stops the loop and is returned (when next(i + 1) fails, step i
 * still completes and done(i) still runs first).
 *
 * While step i runs, the runner calls next(i + 1) and copies that batch to
 * its device: inputs made on a GPU and inputs the plan copies to a GPU at
 * every step go into one of two buffers per input (double-buffered; on cuda
 * through pinned staging on the copy stream, so the copy overlaps the step),
 * and the step's own copies of them are skipped. Steps are not replayed as
 * CUDA graphs here (the buffers alternate). */
typedef locus_status_t (*locus_next_batch_fn)(void *user, uint64_t step,
                                              const void **inputs);
typedef locus_status_t (*locus_step_done_fn)(void *user, uint64_t step,
                                             locus_context_t *context);
LOCUS_API locus_status_t locus_context_run_batches(locus_context_t *context,
                                                   uint64_t steps,
                                                   locus_next_batch_fn next,
                                                   locus_step_done_fn done,
                                                   void *user);

/* ---- Data-parallel jobs (docs/distributed.md) ----------------------------
 * Every rank (process) of a job loads the same artifact, compiled with
 * data-parallel training on, joins the job and runs steps on its own shard
 * of the data: each step averages the parameters' gradients over the ranks
 * (its ALL_REDUCE commands), so every rank's weights stay the same. */
typedef struct locus_comm_s locus_comm_t;

/* The job this process was launched in: Open MPI's mpirun or srun (its
 * OMPI_COMM_WORLD_* variables; Open MPI's libmpi.so.40 is found with
 * dlopen), or world size 1 when no launcher set them. UNAVAILABLE without
 * Open MPI, or for torchrun's WORLD_SIZE above 1 without mpirun. A
 * collective that waits longer than LOCUS_COMM_TIMEOUT seconds (default
 * 600) for the other ranks fails with UNAVAILABLE, naming this rank. */
LOCUS_API locus_status_t locus_comm_create(locus_comm_t **out_comm);
/* Release it after every model that joined it. */
LOCUS_API void locus_comm_release(locus_comm_t *comm);
LOCUS_API int locus_comm_rank(const locus_comm_t *comm);
LOCUS_API int locus_comm_size(const locus_comm_t *comm);
/* The rank among those of this machine (the GPU a rank binds to). */
LOCUS_API int locus_comm_local_rank(const locus_comm_t *comm);
/* "Open MPI v4.1.4 (libmpi.so.40)", or "none" at world size 1. */
LOCUS_API const char *locus_comm_backend(const locus_comm_t *comm);
/* The device map (locus_model_options_t::device_map) that gives this rank
 * its own GPU, as DDP binds one GPU per rank: "cuda:0=cuda:K" with K the
 * local rank modulo this machine's GPUs when it has two or more; "" (the
 * default map) otherwise. */
LOCUS_API const char *locus_comm_device_map(const locus_comm_t *comm);
/* Joins the job: a collective call every rank makes once, before its first
 * step. INVALID_ARGUMENT when another rank loaded another step (its plan
 * differs). Then rank 0's state (its initial weights, or the checkpoint
 * it loaded) is copied to every rank. Run no context of the model while it
 * joins. A model that joined no job runs its all-reduces as world size 1. */
LOCUS_API locus_status_t locus_model_join(locus_model_t *model,
                                          locus_comm_t *comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOCUS_RUNTIME_H */
