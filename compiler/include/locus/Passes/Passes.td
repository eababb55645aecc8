//===- Passes.td - the passes of Locus ------------------------------------===//
//
// Every pass of the project, declared once. docs/passes.md is generated from
// this file (-gen-pass-doc) and a test checks that it is current.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_TD
#define LOCUS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LocusAutodiff : Pass<"locus-autodiff", "::locus::GraphOp"> {
  let summary = "Reverse-mode autodiff: gradients, or a whole training step.";
  let description = [{
    Differentiates the graph's output named `loss` (a scalar f32) with
    respect to every `parameter` state (or the f32 inputs and state named by
    `wrt`), appending the backward ops at the end
    of the graph (each carries the location of the forward op it
    differentiates, so placement and errors name the user's line). Every
    forward op of the dialect has a gradient: elementwise ops, broadcasting,
    matmul and linear, layout ops, reductions (max shares ties equally, as
    PyTorch's amax), softmax and log_softmax, conv2d
    (`locus.conv2d_input_grad`, `locus.conv2d_weight_grad`), pooling
    (`locus.max_pool2d_grad` routes to the window's first maximum, as
    PyTorch), mse_loss and cross_entropy (through `locus.one_hot`). Only
    values that depend on a parameter get gradients. A value read by
    several slices gets the sum of their `locus.slice_grad`s, except that
    blocks side by side along one axis (unit strides, the same window on
    the others) join as the slice gradient of their `locus.concat`, or as
    the concat alone when they fill the value: a packed weight read as q,
    k and v gets one concat, not three zero fills summed.

    In a graph with dynamic sizes (`locus.symbols`) each gradient has its
    value's dims: a broadcast made like a forward value (a reduction's
    gradient spread over its input, zeros of its shape) carries that
    value's `locus.dims`, one made like a backward value takes the dims of
    the op that reads it (each reader its own copy), and a gather's
    gradient gives its reshapes theirs.

    With `optimizer=none` (the default) each gradient becomes an output
    `<parameter>.grad`. With `optimizer=sgd` or `optimizer=adam` the pass
    records one optimizer step instead (`locus.sgd` / `locus.adam`, with
    PyTorch's formulas) and `locus.assign` ops that write the parameters and
    the optimizer's state (new `buffer` states, zeros at first) back in place:
    the graph becomes a training step that returns the loss.

    ```
    locus-opt --locus-autodiff='optimizer=adam lr=0.001' model.mlir
    ```

    Errors: no output named `loss`, a loss that is not a float scalar, no
    parameters, a `wrt` name that is no float input or state, `wrt` with an
    optimizer, an op on the path with no gradient (a gradient or optimizer
    op), an unknown optimizer or a bad setting.
  }];
  let options = [
    Option<"lossName", "loss", "std::string", /*default=*/"\"loss\"",
           "the output to differentiate">,
    ListOption<"wrt", "wrt", "std::string",
               "the inputs or state to differentiate with respect to, by "
               "name (default: every parameter)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"none\"",
           "none (outputs <param>.grad), sgd or adam">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 penalty added to the gradient">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam epsilon">,
  ];
}

def LocusAutocast : Pass<"locus-autocast", "::locus::GraphOp"> {
  let summary = "Mixed precision: products and convolutions in bf16 or f16.";
  let description = [{
    PyTorch's `torch.autocast` contract, applied to a recorded graph after
    its backward pass: every `locus.matmul`, `locus.linear` and
    convolution gradient whose operands are f32 takes them cast to
    `precision` (bf16 or f16) and gives a 16-bit result, cast back to f32
    for its readers; products accumulate in f32 and round their result
    once (see `--locus-widen-16bit`). A forward `locus.conv2d` reads its
    operands rounded (cast down and up again) and keeps its f32 result, so
    the residual add and ReLU after it stay fused into its call (one
    rounding fewer than PyTorch). Everything
    else stays f32: reductions, softmax, normalization statistics, losses,
    the optimizer's update, the weights (f32 master weights) and the
    gradients that reach them. Each value is cast once per device, right
    after it is made, however many products read it, and a 16-bit result
    read by another product is not cast up and down again. A product that
    reads a view (a reshape, transpose, slice or broadcast) of an f32
    value reads the same view of that value cast, so the view moves 16-bit
    elements and a 16-bit result cast up is read as it was: attention's
    heads, split from a bf16 projection, reach their products as views of
    it, where a cast after each split was a kernel of its own (the tiny
    Transformer's bf16 step: 212 launches besides its 41 products, 150
    with this). The f32 view stays for readers that want it. A rewritten
    op carries `locus.autocast = <type>` (the dump shows it).

    A product against a weight (state, or state transposed) that uses each
    weight element fewer than 8 times (a linear layer of 1 to 7 rows, the
    input gradient of one) stays f32, marked `locus.autocast = f32`, when
    a step writes the weight (training): casting the weight every step
    reads 4 and writes 2 bytes per element, more than 16-bit arithmetic
    saves on so few multiply-adds. (An MLP at batch 1 took 3.45x its f32
    time in bf16 so, on a 2-core AVX512-BF16 CPU; at batch 64, 0.66x.) A
    weight no step writes (inference) is cast once, at load, and its
    products of few rows read half its bytes in 16 bits: they go 16-bit
    when the weight has 2^17 elements or more, and stay f32 below, where
    a 16-bit call's fixed cost outweighs the bytes saved (at one row,
    bf16 took 2.2x the f32 time against a 128 x 128 weight, 0.98x against
    256 x 256 and 0.57-0.68x against 1024 x 1024; the ONNX MLP at batch 1,
    0.61-0.68x).

    The compiler runs it after `--locus-select-mode` and before placement
    (`CompileOptions::precision`, `locus-compile --precision`, Python's
    `precision=`); `fp32` and `tf32` leave the graph alone (`tf32` lets the
    GPU libraries round f32 products to TF32 instead).

    Before (`precision=bf16`):

    ```mlir
    %y = locus.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
    ```

    After:

    ```mlir
    %xb = locus.cast %x to bf16 : tensor<8x4xf32> -> tensor<8x4xbf16>
    %wb = locus.cast %w to bf16 : tensor<3x4xf32> -> tensor<3x4xbf16>
    %yb = locus.linear %xb, %wb {locus.autocast = bf16} : tensor<8x4xbf16>, tensor<3x4xbf16> -> tensor<8x3xbf16>
    %y = locus.cast %yb to f32 : tensor<8x3xbf16> -> tensor<8x3xf32>
    ```

    Errors: a precision other than fp32, tf32, bf16 or f16.
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "fp32, tf32, bf16 or f16">,
  ];
}

def LocusWiden16Bit : Pass<"locus-widen-16bit", "::locus::GraphOp"> {
  let summary = "Ops that compute in f32 only get their 16-bit operands cast up.";
  let description = [{
    bf16 and f16 values are stored in 16 bits, but most ops compute in f32:
    every op with a bf16 or f16 operand or result, except casts, layout and
    selection ops (`reshape`, `transpose`, `concat`, `slice`, `gather`,
    `broadcast`, `select`), matrix products and linear layers, takes its
    16-bit operands cast to f32 (exact) and gives f32 results, cast back to
    the 16-bit type for its readers: one rounding per op, as PyTorch's CPU
    and CUDA kernels for 16-bit tensors round each result. Products and
    linear layers of 16-bit operands keep them and accumulate in f32
    (`--locus-lower-to-linalg`). Convolutions, reductions, softmax,
    normalizations and losses of 16-bit operands compute in f32 here.
    Each value is cast once per device.

    The compiler runs it after `--locus-autocast`; on an f32 graph it
    changes nothing.

    ```mlir
    %r = locus.exp %x : tensor<4xbf16>
    ```

    becomes

    ```mlir
    %xf = locus.cast %x to f32 : tensor<4xbf16> -> tensor<4xf32>
    %rf = locus.exp %xf : tensor<4xf32>
    %r = locus.cast %rf to bf16 : tensor<4xf32> -> tensor<4xbf16>
    ```
  }];
}

def LocusGpu16BitConvs : Pass<"locus-gpu-16bit-convs", "::locus::GraphOp"> {
  let summary = "CUDA convolutions of 16-bit values take them as they are.";
  let description = [{
    After placement, a convolution or convolution gradient on a CUDA device
    whose two tensor operands are both cast up from one 16-bit type (bf16 or
    f16), and whose result is rounded to that type anyway (a forward
    convolution `--locus-autocast` marked, or one every reader of which
    casts it down), reads those 16-bit values and gives a result of that
    type, cast up for readers that want f32 (a cast for each): cuDNN then runs it in 16 bits on tensor
    cores, accumulating in f32, as PyTorch's autocast does
    (`--locus-conv-to-cudnn`). A reader that cast the f32 result down to
    the same type reads the 16-bit result itself. A forward convolution
    with a bias keeps its f32 operands (TF32 tensor cores): cuDNN's
    16-bit result, rounded, and the bias added after it would round
    twice.

    The operands come that way from `--locus-autocast` (a forward
    convolution's operands rounded to the 16-bit type; the gradients' cast
    up by `--locus-widen-16bit`) and from 16-bit ONNX models. The forward
    result is then rounded to the 16-bit type, as PyTorch's is. On the
    CPU, and for any convolution that does not match, nothing changes:
    a weight gradient that an all-reduce reads first (data-parallel
    training) stays f32, summed before its one rounding.

    ```mlir
    %x = locus.cast %xb to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16> -> tensor<2x3x8x8xf32>
    %w = locus.cast %wb to f32 {locus.device = #locus.device<cuda:0>} : tensor<4x3x3x3xbf16> -> tensor<4x3x3x3xf32>
    %y = locus.conv2d %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
    ```

    becomes

    ```mlir
    %yb = locus.conv2d %xb, %wb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {locus.device = #locus.device<cuda:0>} : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<2x4x8x8xbf16>
    %y = locus.cast %yb to f32 {locus.device = #locus.device<cuda:0>} : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
    ```
  }];
}

def LocusPlaceDevices : Pass<"locus-place-devices", "::locus::GraphOp"> {
  let summary = "Decides the device of every op: by policy, pins and cost.";
  let description = [{
    Gives every op of a `locus.graph` a `locus.device` attribute (where it
    runs) and a `locus.placement` attribute (why), and records the policy and
    the target devices on the graph (`locus.policy`, `locus.targets`).

    Pins are hard constraints under every policy but `cpu`: a `locus.to`,
    and an input, state or constant created `on` a device. A pin to a device
    that is not a target is an error at the pin, with the fix. Only with
    `allow-soft-placement` and no CUDA target at all is placement *soft*:
    ops pinned to CUDA run on the CPU with `kind = soft`, the graph gets a
    `locus.soft_placement` note, and the pass warns at the first pin.
    Nothing moves to the CPU without a diagnostic.

    Policies:

    - `strict`: PyTorch's semantics. A value lives where it was created (the
      CPU unless created `on` a device) or moved with `.to()`, and an op runs
      where its operands are. Operands on different devices are an error at
      the op, with a note at each operand's creation and a fix-it that
      changes that read only; a reported op is then placed as its fix places
      it, so every mismatch the fixes leave is reported in the same run.
      Unpinned constants act like Python scalars: they follow their
      consumers. Ops autodiff or an optimizer recorded (a `locus.backward`
      location) are never reported: after a forward error their mismatches
      are its consequences; otherwise the pass moves their operands with a
      `locus.to` and a note. A `locus.to_device_of` (the gradient of a
      `.to()`) becomes a `locus.to` to the device its `ref` got; under the
      other policies it becomes its input.
    - `prefer-gpu`: every op with a CUDA kernel runs on a CUDA target: the
      one its operands are on (so a layer pinned to `cuda:1` stays there),
      else the first; ops without one stay on the CPU (`kind = no_kernel`).
      Inputs are fed and outputs read on the host unless pinned. Without a
      CUDA target the policy cannot be honoured: every op runs on the CPU
      and the pass warns.
    - `auto`: the placement of least estimated step time under the cost model.
      For the CPU and one CUDA target it is exact, by Stone's min-cut
      (Boost's Boykov-Kolmogorov max-flow on integer nanoseconds): an op's
      edge to the CPU terminal carries its CUDA cost and to the CUDA terminal
      its CPU cost; moving a value costs one copy per destination however
      many consumers it has there (an auxiliary node per direction keeps that
      exact); copies of state and constants are divided by
      `load_amortization_steps`, since they run once at load. The value a
      `locus.assign` writes is read where its state lives. Unless
      `fuse=false`, an elementwise op that `--locus-fuse-kernels` will fuse
      into its producer's kernel costs no launch when both run on one device
      (a pairwise term of the cut), so small chains such as batch-norm
      statistics stay with their op instead of moving for cheap CPU
      launches. With several CUDA targets it is alpha-expansion: a sequence
      of exact min-cuts, each letting every op keep its device or move to
      one device, until no move lowers the estimate; copies between GPUs
      cost the profile's peer link. A step whose kernels all run on one GPU
      replays as one CUDA graph, where a launch costs the profile's
      `graph_launch_ns`: when the split leaves a kernel off that GPU, the
      pass also prices the whole step there (every computing op on the GPU
      pins name, else the first, when none must run on the CPU) and takes
      it when it is cheaper than the split; its ops then say
      `kind = whole_step` with both steps' estimates.
    - `cpu`: everything on the CPU. Pins do not hold: a `.to()` becomes a
      no-op and values created `on` a GPU are made on the CPU; the graph
      gets one note (`locus.placement_notes`) and the pass a remark at the
      first such pin.

    Which ops have a CUDA kernel comes from the kernel registry, which the
    compiler fills with what its CUDA code generator lowers (every computing
    op; every op where nothing filled it, as in locus-opt); `no-cuda-kernel`
    removes ops from it, to see the fallback.

    Before, with `policy=prefer-gpu devices=cpu,cuda:0`:

    ```mlir
    locus.graph @g {
      %x = locus.input "x" : tensor<100x10xf32>
      %w = locus.state "w" parameter : tensor<2x10xf32> init <full(0.0)>
      %0 = locus.linear %x, %w : tensor<100x10xf32>, tensor<2x10xf32> -> tensor<100x2xf32>
      locus.output "y" = %0 : tensor<100x2xf32>
    }
    ```

    After:

    ```mlir
    locus.graph @g attributes {locus.policy = "prefer-gpu", locus.targets = [#locus.device<cpu>, #locus.device<cuda:0>]} {
      %x = locus.input "x" {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = host_io>} : tensor<100x10xf32>
      %w = locus.state "w" parameter {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = colocated>} : ...
      %0 = locus.linear %x, %w {locus.device = #locus.device<cuda:0>, locus.placement = #locus.placement<kind = policy>} : ...
      locus.output "y" = %0 {locus.device = #locus.device<cpu>, locus.placement = #locus.placement<kind = host_io>} : tensor<100x2xf32>
    }
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"auto\"",
           "strict, prefer-gpu, auto or cpu">,
    ListOption<"devices", "devices", "std::string",
               "Target devices, e.g. cpu,cuda:0 (default: cpu,cuda:0)">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "A JSON cost profile (docs/cost-model.md); built-in defaults "
           "otherwise">,
    ListOption<"noCudaKernel", "no-cuda-kernel", "std::string",
               "Ops to treat as having no CUDA kernel, e.g. locus.conv2d">,
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "Cost ops as --locus-fuse-kernels will fuse them (auto); false "
           "costs one launch per op">,
    Option<"allowSoftPlacement", "allow-soft-placement", "bool",
           /*default=*/"false",
           "With no CUDA target, run ops pinned to CUDA on the CPU (with a "
           "warning) instead of failing at the pin">,
  ];
  let statistics = [
    Statistic<"numCpuOps", "cpu-ops", "Ops placed on the CPU">,
    Statistic<"numCudaOps", "cuda-ops", "Ops placed on a CUDA device">,
    Statistic<"numPinned", "pinned-ops", "Ops placed by a pin">,
    Statistic<"numMismatches", "strict-mismatches",
              "Ops with operands on different devices (strict)">,
  ];
}

def LocusInsertTransfers : Pass<"locus-insert-transfers", "::locus::GraphOp"> {
  let summary = "Inserts the copies placement implies, or rejects them.";
  let description = [{
    After `--locus-place-devices`: wherever an op's operand lives on another
    device, inserts a `locus.copy`, one per (value, destination device) and
    shared by every consumer there. A `locus.to` becomes a `locus.copy` (or
    disappears when its operand is already on its device).

    Copies of state and of constants are marked `load_time`: they run once
    when the model is loaded. Per-step copies remain only for inputs and
    outputs that cross devices, and for values the cost model chose to move.

    Under the `strict` policy, no copy the user did not write is inserted:
    an operand on another device is an error (placement reports those first).

    The graph gets `locus.transfers = {bytes_at_load, bytes_per_step, copies,
    load_time_copies}`. (The pass statistics below say the same, but LLVM
    builds without assertions, Debian's among them, compile statistics to
    no-ops.)

    Before (placed; `%x` on the CPU, the linear op and `w` on cuda:0):

    ```mlir
    %0 = locus.linear %x, %w {locus.device = #locus.device<cuda:0>, ...}
    %1 = locus.relu %x {locus.device = #locus.device<cuda:0>, ...}
    ```

    After: one copy of `%x`, shared.

    ```mlir
    %c = locus.copy <cpu> to <cuda:0>, %x {locus.device = #locus.device<cuda:0>, ...}
    %0 = locus.linear %c, %w ...
    %1 = locus.relu %c ...
    ```
  }];
  let statistics = [
    Statistic<"numCopies", "copies", "Copies inserted">,
    Statistic<"numLoadTimeCopies", "load-time-copies",
              "Copies of state and constants, run once at load">,
    Statistic<"bytesPerStep", "bytes-per-step",
              "Bytes copied at every step">,
    Statistic<"bytesAtLoad", "bytes-at-load", "Bytes copied once, at load">,
  ];
}

def LocusSelectMode : Pass<"locus-select-mode", "::locus::GraphOp"> {
  let summary = "Compiles one recording for training or for evaluation.";
  let description = [{
    A graph recorded in training mode holds what evaluation needs too:
    the frontend marks a dropout's product (`locus.eval_operand = k`: in
    evaluation it is its operand `k`), and records BatchNorm's evaluation
    form beside `locus.batch_norm_train`, on the running statistics, with
    its ops marked `locus.eval_only` and its result paired with the
    training result (`locus.eval_of = N` on the evaluation op,
    `locus.eval_value = N` on the training one).

    In `mode=train` (the default) the evaluation ops nothing else reads are
    erased, so a training step computes what it did before. In
    `mode=eval`, PyTorch's `model.eval()` and `torch.no_grad()` at once:
    every marked value is replaced by its evaluation value, every
    `locus.assign` is erased (no state is written: no optimizer update, no
    running-statistics update, no random-number counter), and then every op
    whose results nothing reads, so the backward pass and the optimizer go
    too. Inputs, state and outputs stay: an output computed from gradients
    is still computed. Either way the marks are removed. A graph without
    marks compiles as recorded in training mode and loses only its state
    writes and dead ops in evaluation.

    Errors: a `locus.eval_value` with no `locus.eval_of` of its number, or a
    `locus.eval_operand` past the op's operands (a hand-written graph).

    The compiler runs it first, before placement (`CompileOptions::eval`,
    `locus-compile --eval`).

    Before (`mode=eval`):

    ```mlir
    %d = locus.mul %x, %noise {locus.eval_operand = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    locus.assign %step = %next : tensor<i64>, tensor<i64>
    ```

    After: `%d`'s uses read `%x`, and the assign and the ops only it read
    are gone.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"train\"",
           "train: as recorded; eval: dropout off, BatchNorm on running "
           "statistics, no state writes">,
  ];
}

def LocusDataParallel : Pass<"locus-data-parallel", "::locus::GraphOp"> {
  let summary = "Averages parameter gradients over the ranks of a job, in "
                "buckets.";
  let description = [{
    Data-parallel training, as PyTorch's DistributedDataParallel does it:
    every rank runs the same step on its own shard of the batch, and each
    parameter's gradient is averaged over the ranks before anything reads
    it, so every rank's optimizer makes the same update. The gradients are
    those autodiff marked (`locus.gradient`: the gradient of a
    `locus.state` it differentiated with respect to; on an op of several
    results, such as `locus.batch_norm_train_grad`, the array of those that
    are); gradients with respect to computed values are left alone.

    The pass walks the placed graph in order and gathers the gradients of
    each device into buckets of about `bucket-bytes` (25 MiB, DDP's
    default). A bucket's `locus.all_reduce mean` is put right after the op
    that computes its last gradient (as early as its gradients allow), or
    before the first op that reads one of its gradients if that comes
    first; every use of a gradient reads the averaged value (a gradient
    nothing reads is left alone). A gradient larger than a bucket is a
    bucket of its own. Each `locus.all_reduce` is placed on its
    gradients' device.

    It runs after `--locus-insert-transfers` (the compiler runs it last in
    the placement stage when data-parallel training is asked for), and it
    refuses a graph that is not placed.

    Before:

    ```mlir
    %gw = locus.matmul %gt, %x {locus.device = #locus.device<cpu>, locus.gradient} : ...
    %w2 = locus.sgd %w, %gw, %lr ...
    ```

    After:

    ```mlir
    %gw = locus.matmul %gt, %x {locus.device = #locus.device<cpu>, locus.gradient} : ...
    %r = locus.all_reduce mean bucket 0, %gw {locus.device = #locus.device<cpu>} : tensor<2x10xf32>
    %w2 = locus.sgd %w, %r, %lr ...
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"26214400",
           "Bytes of gradients per all-reduce (at least 1)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "All-reduce buckets">,
    Statistic<"numGradients", "gradients", "Gradients averaged">,
  ];
}

def LocusCheckIndices : Pass<"locus-check-indices", "::locus::GraphOp"> {
  let summary = "Counts out-of-range indices, for the run to report.";
  let description = [{
    An index outside its tensor (a class label of `locus.cross_entropy` or
    `locus.one_hot`, an index of `locus.gather`) is the user's mistake. The
    kernels never read out of bounds (they read a safe element and give 0 or
    NaN), and this pass makes the mistake an error: for each tensor of
    indices and its extent `n`, it adds the number of indices outside
    `[0, n)` as an output named
    `__locus_check:<k>:<op> at <user line>|<what> outside [0, n)`
    (`LOCUS_ABI_CHECK_PREFIX`), placed with the op that reads the indices.
    The runtime does not list these outputs; it reads them before the first
    command after them that writes state (or joins the other ranks of a
    data-parallel job), else at the end of the step, and a count above zero
    stops the run with INVALID_ARGUMENT, such as
    `locus.cross_entropy at model.cpp:14: labels outside [0, 10) (3 found)`.
    The check depends on the indices alone, so it is computed before any
    state update of a training step reads them, and read before that update
    runs. Indices that are constants in range (a `locus.constant`, or a
    reshape, broadcast, transpose or slice of one: a positional
    embedding's arange) get no check: on a GPU each check is a launch and
    a read back that splits the step's graph replay.

    In a graph with dynamic sizes it also checks each `locus.batch_norm_train`
    whose input can have fewer than two values per channel in a run (a
    `[batch, C]` input; not `[batch, C, H, W]` with `H * W >= 2`): PyTorch
    refuses one value per channel in training, whose unbiased variance
    divides by zero. The output is the run's count of values per channel
    when it is under 2, else 0, and the run stops with
    `locus.batch_norm_train at model.cpp:9: batch_norm in training needs
    more than one value per channel (as in PyTorch); values per channel in
    this run (1 found)` before the running statistics are written.

    And each `locus.slice` that takes a window of fixed size in a dynamic
    dimension needing more than one element there (`offsets [0, 2] sizes
    [4, 2]` needs 4, `offsets [0, -3] sizes [4, 3]` needs 3): the run's
    size when it is smaller, else 0, so a run too short for the window
    stops with `locus.slice at model.py:7: the window takes elements of
    dimension 1, which is dynamic, that a run of fewer than 3 does not
    have; its size in this run (2 found)`.

    The compiler runs it first in the kernel stage, after placement.

    Before:

    ```mlir
    %0 = locus.cross_entropy %logits, %labels mean : tensor<16x10xf32>, tensor<16xi64> -> tensor<f32>
    ```

    After:

    ```mlir
    %c0 = locus.constant dense<0> : tensor<i64>
    %b0 = locus.broadcast %c0 [16] : tensor<i64> -> tensor<16xi64>
    %lo = locus.cmp lt, %labels, %b0 : tensor<16xi64>
    ...
    %n = locus.sum %bad axes [0] : tensor<16xf32> -> tensor<f32>
    locus.output "__locus_check:0:locus.cross_entropy at m.cpp:3|labels outside [0, 10)" = %n : tensor<f32>
    %0 = locus.cross_entropy %logits, %labels mean ...
    ```
  }];
  let statistics = [
    Statistic<"numChecks", "checks", "Tensors of indices checked">,
  ];
}

def LocusExtractKernels : Pass<"locus-extract-kernels", "::mlir::ModuleOp"> {
  let summary = "Keeps the kernel functions a code generator compiles.";
  let description = [{
    After `--locus-outline-kernels`, and after the plan has been made from
    the graph: every `locus.graph` leaves the module, and what remains is
    the kernel functions one code generator compiles.

    With `target=host` (the default) every function stays: kernels placed
    on a CUDA device keep their host version, which runs where there is no
    GPU (the `sim` device, or a machine without one).

    With `target=cuda` only the kernels placed on a CUDA device stay
    (declarations and kernels of other devices leave), each renamed
    `<name>__cuda`: the launcher the CUDA pipeline makes of it.

    ```mlir
    locus.graph @g { ... func.call @g_k0_relu(...) {locus.device = #locus.device<cuda:0>} ... }
    func.func @g_k0_relu(...) attributes {locus.device = #locus.device<cuda:0>}
    func.func @g_k1_add(...) attributes {locus.device = #locus.device<cpu>}
    // --locus-extract-kernels=target=cuda
    func.func @g_k0_relu__cuda(...) attributes {locus.device = #locus.device<cuda:0>}
    ```

    An unknown target is an error.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "host (every kernel) or cuda (the kernels placed on CUDA devices)">,
  ];
}

def LocusMergeKernels : Pass<"locus-merge-kernels", "::mlir::ModuleOp"> {
  let summary = "Compiles identical kernel functions once.";
  let description = [{
    After `--locus-extract-kernels`: kernel functions with the same
    signature, the same attributes (device, argument and result
    attributes, what may alias) and the same body, source locations aside,
    merge into the first of them. Repeated layers make many such kernels
    (the blocks of a Transformer, the steps of an unrolled LSTM, ResNet's
    blocks of one shape), and compiling each once divides the time LLVM
    takes for them.

    The merged functions leave; the module's `locus.kernel_aliases`
    dictionary maps each of their names to the function that stayed. The
    plan still launches every kernel by its own name, and the host code
    gives each name its own signature and source record (the user lines a
    profile or a trace shows) and an entry point that is an alias of the
    shared code's.

    ```mlir
    func.func @g_k0_add(...) attributes {locus.device = #locus.device<cpu>} { ... }
    func.func @g_k5_add(...) attributes {locus.device = #locus.device<cpu>} { ... }  // the same, other lines
    // --locus-merge-kernels
    module attributes {locus.kernel_aliases = {g_k5_add = "g_k0_add"}} {
      func.func @g_k0_add(...) ...
    }
    ```

    Declarations and functions another op refers to stay as they are. A
    module that still holds a `locus.graph` (whose calls would lose their
    callee) is an error: run `--locus-extract-kernels` first.
  }];
}

def LocusLowerToLinalg : Pass<"locus-lower-to-linalg"> {
  let summary = "Rewrites computing locus ops into linalg on tensors.";
  let description = [{
    Every computing locus op becomes linalg, tensor, arith and math ops on
    tensors: the form both code generators start from. Sources
    (`locus.input`, `locus.state`), outputs, state writes and moves
    (`locus.to`, `locus.copy`) stay where they are directly in a
    `locus.graph`; they are the plan's, not a kernel's. Graphs, kernels and
    their `locus.yield` stay too. A `locus.constant` becomes an
    `arith.constant`.

    The pass is a dialect conversion (the patterns:
    `locus::populateLocusToLinalgPatterns`, in
    `locus/Passes/LowerToLinalg.h`) in which every other locus op is
    illegal. An op without a lowering therefore fails the pass with an error
    at the op's location that names it (`failed to legalize operation
    'locus.to' that was explicitly marked illegal`), instead of being left
    for bufferization or LLVM to trip over: a move or a source in an
    outlined kernel function (the compiler's input to this pass), or inside
    a `locus.kernel`, is such an op.

    - elementwise ops, `broadcast`, `cmp`, `select`: `linalg.generic`;
    - `matmul`: `linalg.matmul`, or `linalg.batch_matmul` over the leading
      dimensions folded into one; `linear`: `linalg.matmul_transpose_b`
      accumulating onto the broadcast bias, or, when one elementwise op
      alone reads the layer (a ReLU, a GELU, a residual add), from zeros,
      the bias added after it in a loop that `--locus-fuse-elementwise`
      fuses into the reader's (one pass over the output fewer; on a GPU a
      launch); so is a 16-bit layer's bias, added where the f32 sum is
      rounded;
    - `conv2d` (those the host pipeline leaves: it sends convolutions to
      the runtime first, `--locus-conv-to-runtime`) on a `tensor.pad`ded
      input: im2col (a gathering
      `linalg.generic` laid out [C, KH, KW, N, OH, OW], so it runs along
      rows) and one `linalg.matmul` of the weight as [O, C*KH*KW] with it,
      into zeros, then back to NCHW by a `linalg.generic` that moves whole
      rows and adds the bias; with groups, a `linalg.generic` over
      (n, o, oh, ow, c, kh, kw) whose maps carry stride, dilation and groups;
    - pooling: a `linalg.generic` over (n, c, kh, kw, oh, ow), the window
      loops outside the row loop (an empty window tensor bounds them), then
      / window for the average;
    - reductions: `linalg.generic` with reduction iterators; `softmax`,
      `log_softmax` and the losses are composed from those, stably (the
      maximum is subtracted first); `cross_entropy` gathers with
      `tensor.extract`;
    - layout: `linalg.transpose`; reshapes as `tensor.collapse_shape` to one
      dimension then `tensor.expand_shape` (views, no copies; scalars through
      `tensor.reshape`); `tensor.insert_slice` (concat),
      `tensor.extract_slice` (slice);
    - `gather_elements` (torch.gather): a parallel `linalg.generic` over
      the indices, each reading the input with `tensor.extract` at its own
      position, its index along the axis (zero for one out of range);
    - `gather_grad` and `gather_elements_grad`: an `scf.for` over the
      gradient's elements, marked `locus.scatter_add`, that adds each into
      zeros at its index (`tensor.extract`, `arith.addf`, `tensor.insert`
      under an `scf.if` for an index in range): where an element goes
      depends on the indices, which no linalg op expresses. With one index
      nothing adds up, and a parallel `linalg.generic` selects the
      gradient where the index points instead (a loop of one iteration
      would fold away with its mark).

    Before:

    ```mlir
    %0 = locus.relu %x : tensor<4x8xf32>
    ```

    After:

    ```mlir
    %cst = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.maximumf %in, %cst : f32
      linalg.yield %m : f32
    } -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

def LocusFuseKernels : Pass<"locus-fuse-kernels", "::locus::GraphOp"> {
  let summary = "Groups the computing ops of a placed graph into kernels.";
  let description = [{
    After `--locus-insert-transfers`: every computing op (one without the
    dialect's `Locus_Structural` trait) moves into a `locus.kernel` that
    runs as one launch on the op's device. An elementwise op (one with the
    `Locus_Elementwise` trait: unary and binary arithmetic, `gelu`, `pow`,
    `cmp`, `select`, `cast`, `broadcast`) joins the kernel of an operand's producer when that producer
    is on the same device, is the kernel's last op, and is read by nothing
    else. Or, when the producer has several results, when every other
    reader of them stands after the op (a batch norm's input gradient,
    rounded to 16 bits for the convolutions' gradients, beside its weight
    and bias gradients): the producer's results that others read stay
    results of the kernel, one that only the kernel reads does not, and
    no later op joins the kernel past a reader of them. Or, for a cast of an f32 value down to bf16 or f16,
    when every other reader of the producer stands after the cast: the
    value stays a result of the kernel beside its rounding (a softmax's
    probabilities, which a product reads in bf16 and the backward in
    f32). And an elementwise op may join a kernel through any of its
    roots, not only its last op, when every reader of the kernel's roots
    outside it stands after the op or is a `locus.assign` (which moves
    after the kernel): a batch norm in training, the updates of its
    running mean and variance, each assigned before the next, and the
    ReLU after it are one kernel (ResNet-18's training step: 333 launches
    and library calls on a GPU, 370 before; 2 launches fewer per batch
    norm). A kernel therefore holds a chain or tree of elementwise ops,
    optionally after one anchor: a matrix product, `linear`, convolution,
    reduction, pooling, softmax or loss, whose output then never goes to
    memory between the anchor and its epilogue. A 2-D matrix product also
    takes in a lone matrix transpose of one operand that nothing else reads
    (a backward pass's `g^T x`): the lowering reads the operand transposed
    (`linalg.matmul_transpose_a`/`_b`, sgemm's transA/transB), so the
    transpose is never written. A `max_pool2d` or `avg_pool2d` joins the
    kernel of the convolution it pools (with the convolution's elementwise
    epilogue between them), when nothing else reads what it pools: on the
    host the runtime's convolution then pools too (`--locus-conv-to-runtime`).
    A `reshape` (a flatten) that nothing else reads joins the kernel of the
    op that reads it, whatever that op is, and is then a view of its input
    (a kernel of its own would copy it); it never joins its producer's
    kernel, which would have to copy its result out through the view. A
    chain of reshapes joins as one. A product's transpose of the last two
    axes of a batch of matrices (attention's `q k^T`, `[0, 1, 3, 2]`) joins
    like a matrix transpose (`linalg.batch_matmul_transpose_a`/`_b`, one
    strided-batched sgemm), also when it reads through reshapes. A
    matrix product or `linear` takes in a lone `slice` whose last axis has
    stride 1 (a row block of a packed weight: attention's q, k and v of
    `in_proj_weight`, and their biases), which sgemm then reads where it
    lies.

    Before grouping, three rewrites; the first two make views of what
    were copies. A
    transpose of a transpose on the same device reads the first one's
    input with the permutations composed, or is that input when they
    cancel (a backward pass transposes back what the forward pass
    transposed). And a view (a reshape, a transpose a product reads
    transposed, a slice a product reads where it lies, or a broadcast an
    elementwise op reads) that several ops read is copied once per reader
    that can take it in, placed before that reader; readers that cannot
    (an output, a copy, an op on another device, a product reading a
    broadcast) share the original. The tiny Transformer step had 22
    kernels that only copied a reshape, 10 transposes that only fed a
    product, and 12 broadcasts (a layer norm's statistics and affine
    weights, read forward and backward) that only materialised a
    broadcast. Third, on a CUDA device, the cast up to f32 of a 16-bit
    product's (without a bias) or convolution's result goes below the
    reshapes that read it (`reshape(cast(x))` becomes `cast(reshape(x))`,
    so that linalg fuses it into the reader at the reader's shape), and
    when several ops read it, none of them a product or convolution, each
    gets a cast of its own, placed before it: each reader's kernel then
    converts as it reads, and cuBLAS or cuDNN write the 16-bit result
    (`--locus-linalg-to-blas`), where a launch wrote an f32 copy for them.
    A layer norm's backward reads its gradient three times; the tiny
    Transformer's bf16 training step has 158 launches and library calls
    with these rules against 191 without.
    Every other op is a kernel of its own. Then an elementwise kernel (no
    anchor) whose result only reductions (`sum`, `mean`, `max`, `min`) of
    one other kernel read joins that kernel as their prologue, on any
    device: the reduction computes each value as it reads it instead of
    a kernel writing them out for it. GradScaler's inf check, `sum(g * 0)`
    over each gradient that the update reads too, wrote and read back a
    tensor of each gradient's size; the tiny Transformer step has 7 CUDA
    kernels fewer with it (178) and 26 fewer on the CPU (207), where a
    layer norm's square joins its variance. So does a kernel that only
    casts a bf16 or f16 value up to f32, when every op that reads it
    stands in one other kernel on its device (but a product or
    convolution, which reads a buffer): a batch norm reads a GPU
    convolution's 16-bit output (`--locus-gpu-16bit-convs`) as it goes,
    forward and backward, each with a cast of its own. And a kernel of a
    convolution and, alone after it, the cast up of its 16-bit result
    gives the cast to the one other kernel that reads it (after a cuDNN
    call the cast would be a launch writing f32 for that kernel to read);
    so does a CUDA kernel of a 16-bit matrix product without a bias (with
    views of its operands), after which cuBLAS writes the 16-bit result.
    On the CPU, the cast up of a 16-bit value that convolutions or their
    gradients read as one of their two tensor operands (an autocast
    convolution's rounded operands, the rounded gradient flowing into it)
    joins each such reader's kernel, one cast per read (a cast stays for
    any other reader), and never its producer's: the runtime's call
    then reads the 16-bit value as it is (`--locus-conv-to-runtime`), and
    the kernel before it writes the 16-bit value only. Its weights' casts
    down are load-time kernels of an inference model, so the weights stay
    in bf16 too. Optimizer steps take their gradients' casts up with them when they
    join one kernel (below). Then, on a CUDA device, kernels
    that go row by row (elementwise ops, reductions over the last axis
    alone, `softmax` and `log_softmax` along it, reshapes that keep the
    last axis or only add or drop axes of 1) merge: a kernel joins the
    first such kernel that reads its result, when every other reader
    (another kernel, an output) stands after that one and none is a
    `locus.assign`. The joined kernel still gives the results that ops
    outside it read. A layer norm, whose centred input its variance and
    its output both read, is one kernel there instead of three; its
    input gradient, where a row sum and the op after it both read each
    value, one instead of five (the tiny Transformer's training step
    went from 135 kernels to 105); `--locus-map-to-gpu` runs each one's
    rows in one launch. A merge makes no cycle: every reader of the
    joined kernel's results outside the kernel it joins stands after
    that kernel. On the CPU kernels stay as the tree rule makes them.
    Last, on a CUDA device, the optimizer's steps (an `sgd` or `adam` per
    parameter, each a kernel of its own, perhaps with its gradient's cast
    up from 16 bits) join one kernel, as PyTorch's
    multi-tensor ("foreach") optimizers do; `--locus-map-to-gpu` runs
    them side by side in one launch. A step joins the kernel of the steps
    before it when every reader of their results that stands before it is
    a `locus.assign`; those assigns move right after the kernel (a state
    takes its new value after the run, wherever its assign stands). A
    kernel of steps stops at 256 buffers: a CUDA kernel's parameters (one
    8-byte pointer a buffer) were limited to 4 KiB before CUDA 12.1. The
    tiny Transformer step's 30 Adam steps are one launch instead of 60.
    Then, on a CUDA device, kernels that only move data, compute
    elementwise or reduce (elementwise ops, reshapes, transposes, slices,
    broadcasts, sums, means, maxima and minima of at most 65536 elements;
    static shapes; no row sums over several rows, which run as row
    groups) join one kernel when
    neither depends on the
    other, which `--locus-map-to-gpu` also runs side by side in one launch:
    attention's q, k and v split into heads were three launches of a few
    hundred elements, and a layer's bias gradients a launch each (the
    tiny Transformer's step: 105 kernel calls to 81, 122 launches to 99). A
    kernel joins an earlier such kernel (one of the last 8) when every
    reader of the earlier one's results stands after it, or stands in a
    kernel whose last op does (a reshape that joined its reader's kernel
    reads there), or in that earlier kernel itself, or is an output with
    no other output between it and the later kernel (an index check's
    count, an output right after its kernel: it moves after the joined
    kernel, and outputs keep their order), so no path leads from one to
    the other and the joined kernel, where the later one stood, comes
    before every reader. It may read the earlier one's results itself: the kernel gives
    both (a layer norm's normalized input, which the backward pass reads
    too, and its affine output) unless only its own ops read them, and
    `--locus-fuse-elementwise{results-into-readers}` then has the reader
    recompute them, so the two still share a launch. A kernel whose
    result a `locus.assign` writes joins none that reads that state: the
    plan may write a state's update into the state's own buffer when its
    kernel reads the state only elementwise, which holds for one loop
    nest, not for another op of the same kernel that reads the state
    after it (an Adam step counter's `+ 1` joins an independent kernel).
    Copies, sources, outputs and state updates stay in the graph; an op with
    several results (an optimizer step) gives its kernel several results.
    The graph's `locus.kernels` attribute says how many kernels there are.

    With `fuse=false` every computing op is its own kernel (for comparing).
    A kernel stops growing at `max-ops` ops (1,024 by default): the code of
    one kernel is one function, and LLVM's and NVVM's code generation take
    more than linear time in a function's size, so a 100,000-op elementwise
    chain compiles as 98 kernels instead of one (under `auto` on the
    2-core build machine: 75 s as one kernel of 781 loop nests, 55 s as 98
    kernels; 66 s with kernels of 4,096 ops).

    ```mlir
    %1 = locus.linear %x, %w, %b : ...
    %2 = locus.relu %1 : tensor<64x1024xf32>
    ```

    becomes

    ```mlir
    %0 = locus.kernel on <cpu> -> tensor<64x1024xf32> {
      %1 = locus.linear %x, %w, %b : ...
      %2 = locus.relu %1 : tensor<64x1024xf32>
      locus.yield %2 : tensor<64x1024xf32>
    }
    ```

    A `locus.to` left in the graph (transfers not inserted) or a graph that
    is fused already is an error.
  }];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "Fuse elementwise chains and epilogues (false: one op per kernel)">,
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"1024",
           "The most ops one kernel holds (at least 1)">
  ];
}

def LocusConvLayouts : Pass<"locus-conv-layouts", "::locus::GraphOp"> {
  let summary = "Keeps values that host convolution calls alone write and "
                "read in NHWC.";
  let description = [{
    After `--locus-fuse-kernels`. oneDNN's convolutions run on NHWC (or
    blocked) data; a tensor handed over in NCHW is reordered on the way in
    and out of every call: 14 reorders, 24% of the step, for three ResNet
    blocks at batch 8 on the build machine.

    A CPU kernel that is one `locus_conv2d` call and nothing else (a
    `locus.conv2d` with the residual add, ReLU and pooling
    `--locus-conv-to-runtime` fuses into its call, and with the casts up
    of its 16-bit input and weight and the rounding of its result that
    the call takes in) writes its result NHWC
    when every read of that result is another such kernel's convolution
    input or residual. Such a kernel may also give a cast of the call's
    result beside it (an autocast ResNet block's output: the next block
    adds it in f32 and its convolution reads it rounded); the cast is an
    elementwise pass that keeps the call's layout, so both results are
    NHWC when every read of either is such a call's. The producing
    convolution gets `locus.nhwc_result`, each reader `locus.nhwc_input`
    or `locus.nhwc_residual`;
    `--locus-conv-to-runtime` turns them into the call's
    `LOCUS_CONV_*_NHWC` flags. A value of fewer than 16 channels stays
    NCHW: the runtime reads such an input as NCHW with oneDNN's direct
    kernel, faster there (LeNet's 6-channel value NHWC made its step 20%
    slower). Types do not change (the tensor is still
    [N, C, H, W]); only these calls see the memory. A value read by
    anything else (a graph output, a copy to another device, a generated
    kernel, a gradient) stays NCHW, as do convolutions on other devices.

    ```mlir
    %0 = locus.kernel on <cpu> -> tensor<8x64x56x56xf32> {
      %c = locus.conv2d %x, %w1 ... {locus.nhwc_result}
      %r = locus.relu %c : tensor<8x64x56x56xf32>
      locus.yield %r : tensor<8x64x56x56xf32>
    }
    %1 = locus.kernel on <cpu> -> tensor<8x64x56x56xf32> {
      %c = locus.conv2d %0, %w2 ... {locus.nhwc_input}
      ...
    ```
  }];
  let statistics = [
    Statistic<"numValues", "nhwc-values", "Values kept NHWC">
  ];
}

def LocusOutlineKernels : Pass<"locus-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Turns each kernel into a function and a call.";
  let description = [{
    Each `locus.kernel` of graph `@g` becomes `func.func @g_k<N>_<op>` (N
    counts the graph's kernels in order, `<op>` names its first op, as a
    profile shows it) taking the values the kernel reads, in the
    order it first reads them, and returning its results; the kernel becomes
    a `func.call` in the graph, with the kernel's device as `locus.device` on
    both. Constants the kernel reads (directly or through a load-time copy)
    are cloned into the function instead of passed. Arguments are marked
    `bufferization.writable = false`: a kernel never writes the buffers it
    reads, which the plan shares between kernels.

    The graph with its calls is what the plan is made from; the functions are
    what the host (and later the CUDA) code generator compiles.

    In a graph with dynamic sizes (`locus.symbols`), a kernel that reads or
    makes a dynamic value also takes the run's sizes: the graph gains the
    input `locus.sizes` (i64, one per size, on the CPU), passed as the
    function's last argument (marked `locus.sizes`), and the function
    carries `locus.symbols` and the `locus.dims` of its dynamic arguments
    and results, for `--locus-dynamic-kernels`.

    A computing op outside any kernel is an error: run `--locus-fuse-kernels`
    first.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def LocusDynamicKernels
    : Pass<"locus-dynamic-kernels", "::mlir::func::FuncOp"> {
  let summary = "A kernel of a graph with dynamic sizes computes at the "
                "run's sizes.";
  let description = [{
    Runs right after `--locus-lower-to-linalg`, on each kernel function that
    `--locus-outline-kernels` gave the run's sizes (its last argument, an
    i64 tensor marked `locus.sizes`, with `locus.dims` on its dynamic
    arguments and results and `locus.symbols` on the function). The kernel
    was lowered at the bounds; now:

    - each dynamic argument keeps its bound type (kernels are called with
      bare pointers) and is viewed at the run's dims on entry: its first
      elements, packed (`collapse_shape`, a prefix `extract_slice`,
      `expand_shape` with the sizes read from the sizes argument);
    - every value inside takes its dims: from the lowering's `locus.dims`
      on what replaced a dynamic locus result, and through each linalg op
      by its indexing maps (a loop's extent is the dim of any operand or
      result that walks it, so a broadcast's output takes the dims of the
      product it initialises), reshapes and the returned values; empty
      tensors and reshapes are rebuilt with sizes computed from the sizes
      argument, and linalg ops and collapses take the dynamic types;
    - each dynamic result is packed back into a tensor of its bound type
      (`insert_slice` at offset 0), which the plan's buffer holds.

    Means and losses divided by a count read it with `tensor.dim` (the
    lowering does so in such kernels), which becomes the run's count here.

    ```mlir
    // before (lowered at the bound, batch = 256)
    func.func @k(%x: tensor<256x10xf32> {locus.dims = affine_map<()[s0] -> (s0, 10)>},
                 %sizes: tensor<1xi64> {locus.sizes}) -> tensor<10xf32>
        attributes {locus.symbols = [["batch", 256]]} {
      %r = linalg.generic ... ins(%x : tensor<256x10xf32>) ...
    // after
      %n = tensor.extract %sizes[%c0] ... ; arith.index_cast
      %v = expand_shape(extract_slice(collapse_shape %x)[0][%n * 10])
             : tensor<?x10xf32>
      %r = linalg.generic ... ins(%v : tensor<?x10xf32>) ...
    ```

    A runtime call's result (a convolution's, which `--locus-conv-to-runtime`
    marks with `locus.dims`) is viewed at the run's dims the same way; where
    the kernel returns it, the bound-sized tensor the call wrote packed is
    returned as it is. A `tensor.pad` (a padded pooling's) passes a dynamic
    batch through when it pads other dimensions only. An `extract_slice` or
    `insert_slice` (slices, their gradients, concatenations, a pooling
    gradient's padding removed) takes its dynamic dimensions whole: window
    and whole share their dims, and the sizes become the run's. Or, a
    slice's or its gradient's, a window of static size in a dynamic
    dimension: it stays static, at its offset from the start or, for a
    `locus.slice` offset below zero, at the one the lowering computed from
    `tensor.dim` of the whole, which is now the run's size. A window of
    dynamic size that does not fill its dimension is an error (the graph
    verifier refuses such a slice or concat first). A value of dynamic
    shape made by any other op is an error.

    With `keep-bounds=true` (the CUDA lowering), the function keeps what
    `--locus-map-to-gpu` needs to size launches by the bounds: the index of
    its sizes argument (`locus.sizes_arg`) and each size's bound
    (`locus.size_bounds`, by symbol).
  }];
  let options = [
    Option<"keepBounds", "keep-bounds", "bool", /*default=*/"false",
           "keep the sizes argument's index and the bounds on the function "
           "(for --locus-map-to-gpu)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LocusFuseElementwise : Pass<"locus-fuse-elementwise"> {
  let summary = "Fuses elementwise linalg.generic ops into one loop nest.";
  let description = [{
    After `--locus-lower-to-linalg`, inside each kernel: a `linalg.generic`
    whose result only one other elementwise `linalg.generic` reads fuses into
    that reader (MLIR's elementwise fusion patterns, producer with one use),
    so a fused kernel's chain of elementwise ops is one loop nest, and
    `linalg.fill` initial values fold into their readers. With
    `scalars-into-readers` (the CUDA lowering sets it), a scalar producer
    (no loops: an optimizer's bias corrections) also fuses into the one op
    that reads its results, however many it reads: each GPU thread
    recomputes those few scalar operations instead of the kernel paying a
    one-thread launch and a temporary for them (the Transformer step's
    Adam took two launches per parameter). The host lowering, which also
    compiles the host versions of CUDA kernels, leaves them apart: its
    loop would recompute them for every element (the host version of the
    Transformer step's merged Adam kernel took 392 us a step that way,
    against about 95 with them apart, as its 30 separate kernels took
    before). A producer that only widens 16-bit values to f32 (`arith.extf`
    of its one input) fuses into each of its readers, on any device: a
    conversion per element read instead of a pass writing the f32 values
    out for each reader to read back twice the bytes (a batch norm's three
    passes over a bf16 convolution output). With `results-into-readers` (the CUDA lowering sets it too),
    once the chains are fused: a producer that the kernel returns and one
    other op reads fuses into that reader when both have parallel loops
    alone. The reader recomputes the producer's values and the producer
    stays to write the kernel's result, so the two read only the kernel's
    inputs and `--locus-map-to-gpu` runs them side by side in one launch
    instead of one after the other (`--locus-fuse-kernels` joins such
    kernels on a GPU). It runs after the chains are whole so that no op of
    a chain is left with two readers. A fused body
    stops growing at 128 ops: each fusion builds a new op holding both
    bodies, so fusing a chain of n ops one by one would copy O(n^2) ops
    (compile time would grow with the square of a long chain). Unlike MLIR's
    `linalg-fuse-elementwise-ops` it does not move reshapes through other
    ops: that would turn a `linalg.matmul` behind a reshape into a generic
    loop nest and take it away from BLAS.

    ```mlir
    %1 = linalg.generic {...} ins(%x) outs(%e0) { exp }
    %2 = linalg.generic {...} ins(%1) outs(%e1) { neg }
    ```

    becomes one `linalg.generic` computing `neg(exp(x))`.
  }];
  let options = [
    Option<"scalarsIntoReaders", "scalars-into-readers", "bool",
           /*default=*/"false",
           "Fuse scalar producers into the one op that reads their "
           "results (for GPU threads)">,
    Option<"resultsIntoReaders", "results-into-readers", "bool",
           /*default=*/"false",
           "Fuse a producer the kernel returns into its one reader, which "
           "recomputes its values (for GPU launches)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def LocusCopyForwardedResults
    : Pass<"locus-copy-forwarded-results", "::mlir::func::FuncOp"> {
  let summary = "A kernel returns copies of arguments and repeated values.";
  let description = [{
    After folding, a kernel can come down to one of its arguments (`x * 1.0`,
    the seed of a backward pass times a gradient), and two results to one
    value (kernels joined side by side on a GPU: `x * 0.5` and
    `x * 0.5 * 1.0`). Each `func.return` operand that is an argument of the
    function, or a value an earlier operand returns already, becomes a
    `linalg.copy` of it into a new tensor: every kernel result gets a buffer of its own, as the plan
    expects, and MLIR 19's `buffer-results-to-out-params{hoist-static-allocs}`
    (which crashes on a returned argument) sees an allocation. Runs right
    before bufferization, after `canonicalize`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LocusWriteResultsInPlace
    : Pass<"locus-write-results-in-place", "::mlir::func::FuncOp"> {
  let summary = "A kernel computes each result in its out-parameter, not in "
                "a temporary it then copies.";
  let description = [{
    After bufferization, `buffer-results-to-out-params` and the deallocation
    pipeline, in a kernel function that `--locus-outline-kernels` made: a
    result that is not a plain allocation (a reshape of one: a linear's
    `[rows, features]` product seen as `[batch, seq, features]`) is
    computed into a temporary and copied into its out-parameter at the end,
    a launch of its own on a GPU (the Transformer step had 43). When the
    out-parameter is written by that copy alone, the temporary is a
    row-major static allocation (or reshapes of one, which keep the order of
    the elements) with the out-parameter's element type and count, and
    nothing uses the temporary after the copy but its deallocation, the
    temporary becomes the out-parameter itself (seen with the temporary's
    shape through `memref.reinterpret_cast` when the shapes differ), and
    the copy, the allocation and its deallocation go.

    Writing the out-parameter early is safe only if it is no argument's
    buffer. The plan gives a result an argument's buffer in one case: a
    state update in place, where the graph assigns the result to a state
    the kernel reads. `--locus-outline-kernels` marks those results in the
    function's `locus.results_may_alias` (per result, the argument it may
    share a buffer with, or -1), and this pass leaves them; a function
    without the attribute is left whole.

    ```mlir
    func.func @k(%x: memref<4x16x32xf32>, %w: memref<32x32xf32>,
                 %out: memref<4x16x32xf32>)
        attributes {locus.results_may_alias = array<i64: -1>} {
      %t = memref.alloc() : memref<64x32xf32>
      ... %t = x W^T ...
      %v = memref.expand_shape %t [[0, 1], [2]] ... into memref<4x16x32xf32>
      memref.copy %v, %out : memref<4x16x32xf32> to memref<4x16x32xf32>
      memref.dealloc %t : memref<64x32xf32>
    ```

    becomes a product written into `%out` seen as `memref<64x32xf32>`.

    A kernel with dynamic sizes (`--locus-dynamic-kernels`) computes a
    result at the run's sizes and packs it into the first elements of its
    out-parameter, which the plan sizes at the bounds: a copy into a
    subview of offset 0 and stride 1 of the parameter seen flat
    (`memref.reinterpret_cast`). Under the same conditions, with sizes that
    may be dynamic, the temporary becomes that prefix, seen with the
    temporary's own shape (a `memref.reinterpret_cast` of the parameter
    with the temporary's sizes and row-major strides).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numWritten", "written", "Results written in place">,
  ];
}

def LocusFlattenLoops : Pass<"locus-flatten-loops", "::mlir::ModuleOp"> {
  let summary = "Host loops that every operand walks contiguously become one.";
  let description = [{
    On buffers, before `--locus-lower-reductions`: a `linalg.generic` keeps
    the rank of its tensors, so linalg's lowering gives it one loop per
    dimension. Where the innermost extent is small (the 14 columns of a
    14x14 image, the 3x3 of a convolution's weights) LLVM unrolls that loop
    whole and vectorizes nothing: rounding a 64x3x14x14 input to bf16 took
    30-32 us, one element at a time, on a Xeon whose vector units do the same
    in a few.

    This pass first drops the op's unit dimensions (linalg's own
    `dropUnitDims`: a broadcast operand indexed `(0, d1, 0, 0)` becomes a
    `memref<4xf32>` indexed `(d1)`), then merges each run of adjacent loops
    of one iterator type that every operand indexes in order and
    contiguously (`linalg::collapseOpIterationDims`): the operands become
    `memref.collapse_shape` views, and the op one loop per run. An
    elementwise op over identity maps becomes one loop over all its
    elements, which LLVM vectorizes and `--locus-parallelize` splits;
    BatchNorm's statistics over N, H and W keep N and C and run H*W
    innermost.

    ```mlir
    linalg.generic {indexing_maps = [#id4, #id4],
                    iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%x : memref<64x3x14x14xf32>) outs(%y : memref<64x3x14x14xbf16>)
    ```

    becomes

    ```mlir
    %cx = memref.collapse_shape %x [[0, 1, 2, 3]] : memref<64x3x14x14xf32> into memref<37632xf32>
    %cy = memref.collapse_shape %y [[0, 1, 2, 3]] : ...
    linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
        ins(%cx : memref<37632xf32>) outs(%cy : memref<37632xbf16>)
    ```

    Left as they are: a loop whose index the body reads (`linalg.index`:
    the merged index would cost a division per element), operands whose
    layout does not allow the view (a strided window), indexing maps that
    are not projected permutations after unit dimensions are dropped, and
    two cases MLIR 19's transforms mishandle: an op with a strided buffer
    that is not indexed by every loop in order keeps all its loops (the
    collapse checks such a buffer against the loops' groups, not its own),
    and a strided buffer keeps its unit dimensions (dropUnitDims would
    index it by constants, which blocks every merge). A dynamic dimension (a kernel's dynamic batch) stays a loop of its own;
    the static ones after it merge.
  }];
  let statistics = [
    Statistic<"numFlattened", "flattened", "Ops whose loops were merged">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def LocusLowerReductions
    : Pass<"locus-lower-reductions", "::mlir::ModuleOp"> {
  let summary = "Host reductions as loops that keep their accumulator in a "
                "register.";
  let description = [{
    On buffers, before `convert-linalg-to-parallel-loops`: a `linalg.generic`
    with one output whose last loop reduces (a sum over the last axis, or
    BatchNorm's statistics over N, H and W of an NCHW tensor) would become,
    through linalg's own lowering, loops that load and store the output
    element in every iteration, with the reduction loops outermost where
    they come first. That is a chain of dependent additions through memory,
    on one core: 1.36 ms for a sum of 32x64x32x32 floats over [0, 2, 3] on
    the build machine, four times PyTorch's time.

    This pass writes such a reduction as its parallel loops outside (one
    `scf.parallel`, which `--locus-parallelize` splits over the cores), its
    reduction loops inside in their order (`scf.for` carrying the
    accumulator), the output element loaded before them and stored after
    them. The op that folds the body into the accumulator (`arith.addf`,
    `mulf`, `maximumf`, `minimumf`, `maxnumf`, `minnumf` or an integer
    combiner) is its only use and what the body yields, and a float one
    gains the `reassoc` fast-math flag: LLVM then vectorizes the innermost
    loop with several partial sums. The order of additions changes as in
    any vectorized reduction (PyTorch's and oneDNN's included); a compiled
    artifact gives the same bits on every run.

    ```mlir
    linalg.generic {indexing_maps = [#id, #channel],
                    iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%x : memref<32x64x32x32xf32>) outs(%acc : memref<64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %in, %out : f32
      linalg.yield %0 : f32
    }
    ```

    becomes

    ```mlir
    scf.parallel (%c) = (%c0) to (%c64) step (%c1) {
      %init = memref.load %acc[%c] : memref<64xf32>
      %s = scf.for %n = %c0 to %c32 step %c1 iter_args(%a0 = %init) -> (f32) {
        %s1 = scf.for %h = ... iter_args(%a1 = %a0) -> (f32) {
          %s2 = scf.for %w = ... iter_args(%a2 = %a1) -> (f32) {
            %v = memref.load %x[%n, %c, %h, %w] : memref<32x64x32x32xf32>
            %r = arith.addf %v, %a2 fastmath<reassoc> : f32
            scf.yield %r : f32
          } ...
      memref.store %s, %acc[%c] : memref<64xf32>
    }
    ```

    A loop over a dynamic dimension (a kernel with a dynamic batch) takes
    its extent from a buffer's `memref.dim`. Other generics stay for
    linalg's lowering: several outputs, a last loop that is parallel (its
    loads and stores vectorize across the output already), an output
    indexed by a reduction loop, or a body that does anything else with the
    accumulator.
  }];
  let statistics = [
    Statistic<"numLowered", "lowered", "Reductions written as loops">
  ];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def LocusVectorMath : Pass<"locus-vector-math", "::mlir::ModuleOp"> {
  let summary = "exp, tanh and erf of f32 as polynomials LLVM vectorizes.";
  let description = [{
    Host code only. LLVM lowers `math.exp`, `math.tanh` and `math.erf` to
    calls of libm's `expf`, `tanhf` and `erff`, one element at a time: a
    loop that calls them is never vectorized. On the 2-core build machine
    (2026-11-29, artifacts for x86-64-v3) exp over 256x1024 floats took
    476-525 us, tanh 1616-1630 us, GELU 394 us and a softmax over rows of
    1024 551-555 us; PyTorch (SLEEF's vectorized functions) takes about
    60, 265, 75 and 105 us. With this pass: 45, 34, 137 and 126 us
    (`locus-run`, medians of 300 runs).

    This pass rewrites each of these ops on f32 (or on vectors of f32) with
    MLIR's own polynomial approximations
    (`populateMathPolynomialApproximationPatterns`: Cephes' exp, Eigen's
    rational tanh, a piecewise polynomial erf), which are arithmetic and
    selects only; `--locus-flatten-loops` has made the loops around them
    long, and LLVM vectorizes them. Their fused multiply-adds become
    `arith.mulf` and `arith.addf` marked `contract`: LLVM fuses them into
    one instruction where the CPU the code is compiled for has FMA, and
    keeps them apart (no call of `fmaf`) where it does not.

    Accuracy, against the exact values (`VectorMath.*` unit tests, over
    about a million points each): exp within 2 ulp of the f32 result below
    x = 87.6 and within 16 in its last unit below overflow (where its 2^n
    stops at 2^127; 4.7 seen); its results below 2^-126 (x below about
    -87.3) are flushed to zero, where libm returns subnormals. tanh and
    erf within 3e-7 in absolute terms and 5 ulp (2.7e-7 and 4.6 seen);
    erf(-0) is +0. NaN stays NaN; exp gives +inf above about 88.7, tanh
    and erf give +-1 beyond about 8 and 3.75. Other math ops (log, sin,
    cos, pow, sqrt) keep libm's or LLVM's lowering; ops on f64, f16 or
    bf16 are left as they are.

    ```mlir
    %y = math.exp %x : f32
    ```

    becomes some thirty `arith` ops: a range reduction by ln 2, a degree-6
    polynomial, and the exponent built in the integer bits.
  }];
  let statistics = [
    Statistic<"numRewritten", "rewritten", "Math ops written as polynomials">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def LocusParallelize : Pass<"locus-parallelize", "::mlir::ModuleOp"> {
  let summary = "Runs the outermost parallel loop of a kernel on all cores.";
  let description = [{
    On buffers, after `convert-linalg-to-parallel-loops`: an `scf.parallel`
    directly in a function body, whose first dimension runs from 0 with step
    1 over at least two iterations and whose loop nest does at least
    `min-work` iterations, becomes a call. Its body moves to
    `func.func private @<kernel>_par<N>(captured..., %lo, %hi)`, the same loop
    over [lo, hi) of its first dimension; the call goes to
    `@<kernel>_par<N>__dispatch(captured..., %n)`, which the code generator
    defines in LLVM IR: it packs the arguments and calls the runtime's
    `locus_parallel_for`, which splits [0, n) over the cores. The module's
    `locus.parallel_bodies` lists the bodies.

    A loop that reads a buffer with a non-identity layout or dynamic shape
    (bare-pointer calls cannot pass it) stays where it is, and so does every
    loop that is not outermost: one level of parallelism, no nesting.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"262144",
           "Fewest iterations of a loop nest worth splitting">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
}

def LocusGraphToFunc : Pass<"locus-graph-to-func", "::mlir::ModuleOp"> {
  let summary = "Turns a graph that runs on one device into a function.";
  let description = [{
    Each `locus.graph` whose ops all run on the CPU (or are not placed)
    becomes `func.func @<name>(inputs..., state...) -> (outputs...)`, in the
    order the graph declares them; the names go to the function's
    `locus.inputs`, `locus.states` and `locus.outputs` attributes. Moves
    (`locus.to`, `locus.copy`) between the CPU and itself disappear. One
    function for a whole CPU graph, for tools and tests; `locus::compile()`
    uses per-kernel functions instead (`--locus-fuse-kernels`,
    `--locus-outline-kernels`) and a plan.

    A graph with an op placed on a CUDA device is an error at that op: a
    multi-device graph runs through the plan, not as one function.

    ```mlir
    locus.graph @g {
      %x = locus.input "x" : tensor<4xf32>
      %w = locus.state "w" parameter : tensor<4xf32> init <full(1.0)>
      %0 = locus.mul %x, %w : tensor<4xf32>
      locus.output "y" = %0 : tensor<4xf32>
    }
    ```

    becomes

    ```mlir
    func.func @g(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32>
        attributes {locus.inputs = ["x"], locus.states = ["w"], locus.outputs = ["y"]} {
      %0 = locus.mul %x, %w : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def LocusConvToRuntime : Pass<"locus-conv-to-runtime", "::mlir::ModuleOp"> {
  let summary =
      "Calls the runtime's locus_conv2d and locus_conv2d_grad for host "
      "convolutions and their gradients.";
  let description = [{
    In the host pipeline, before `--locus-lower-to-linalg`: each
    `locus.conv2d` in a kernel function becomes a call to the runtime's
    `locus_conv2d` (oneDNN's convolutions when the runtime can load oneDNN,
    per-image im2col and sgemm otherwise), and each
    `locus.conv2d_input_grad` and `locus.conv2d_weight_grad` a call to
    `locus_conv2d_grad` (oneDNN's backward-data and backward-weights
    primitives, or im2col, col2im and sgemm). What follows a convolution
    joins the call as its epilogue, so that the result is written once:

    - `locus.add` of the convolution (its only use) and a tensor of the
      same type: the residual, added after the bias;
    - then `locus.relu` of that (its only use);
    - then `locus.max_pool2d` or `locus.avg_pool2d` of that (its only
      use): the call returns the pooled tensor, and the convolution's own
      output never leaves the runtime's workspace (with oneDNN, the pooling
      reads it in oneDNN's blocked layout, where a window's maximum is one
      vector operation over 16 channels).

    The call reads the operands through `bufferization.to_memref` and
    writes a fresh `memref.alloc`, which `bufferization.to_tensor
    restrict` hands back to the tensor world; the shape, stride, padding,
    dilation, groups and epilogue flags are a private constant global
    (`locus_conv_param_e` in `locus/abi.h` orders them). Buffers are passed
    as their aligned addresses, as `locus_sgemm`'s are (the buffer
    deallocation pipeline frees a kernel's temporaries at the end of its
    block, after the call). Convolutions outside kernel functions (in a
    `locus.graph`) are left alone, and so are those of the CUDA pipeline,
    which does not run this pass.

    16-bit operands: a convolution whose input and weight are `locus.cast`s
    up to f32 of bf16 (or f16) values, both of one type, reads those 16-bit
    values (`LOCUS_CONV_BF16`, `LOCUS_CONV_F16`), and a cast of its
    (epilogue's, pooling's) f32 result down to that type, the result's only
    reader, joins the call too (`LOCUS_CONV_Y_16BIT`: the call rounds its
    f32 result once); casts up that nothing else reads go. The values are
    those of an f32 convolution of the cast operands: the cast up is
    exact, and the runtime sums in f32 (oneDNN's bf16 kernels where the
    CPU has AMX, the f32 call on widened copies otherwise, which may take
    Winograd as any f32 call of its shape does). `--locus-fuse-kernels` puts those casts in
    the convolution's kernel. Gradients likewise: a
    `locus.conv2d_input_grad` or `locus.conv2d_weight_grad` whose two
    tensor operands are such casts reads the 16-bit values, and takes in
    the rounding of its result. A convolution or gradient of bf16 or f16
    tensors (the host version of a CUDA kernel, `--locus-gpu-16bit-convs`)
    becomes that: the same op on its operands cast up, its result cast
    down.

    A gradient's call takes the kind (`locus_conv_kind_e`: 1 input
    gradient, 2 weight gradient), the forward convolution's shapes in the
    same parameter order (a convolution and its gradients share one
    global), its two operands (input gradient: the output's gradient and
    the weight; weight gradient: the input and the output's gradient) and a
    fresh buffer for the result, which the call overwrites:

    ```mlir
    %k = arith.constant 1 : i64
    func.call @locus_conv2d_grad(%k, %pp, %gp, %wp, %yp) : (i64, i64, i64, i64, i64) -> ()
    ```

    ```mlir
    %0 = locus.conv2d %x, %w, %b {stride = array<i64: 1, 1>, ...}
    %1 = locus.relu %0
    ```

    becomes

    ```mlir
    %p = memref.get_global @__locus_conv2d_params_0 : memref<25xi64>
    %xm = bufferization.to_memref %x read_only : memref<1x3x14x14xf32>
    %xi = memref.extract_aligned_pointer_as_index %xm : memref<1x3x14x14xf32> -> index
    %xp = arith.index_cast %xi : index to i64
    ...
    %y = memref.alloc() {alignment = 64 : i64} : memref<1x16x14x14xf32>
    func.call @locus_conv2d(%pp, %xp, %wp, %bp, %xp, %yp) : (i64, i64, i64, i64, i64, i64) -> ()
    %1 = bufferization.to_tensor %y restrict writable : memref<1x16x14x14xf32>
    ```

    In a kernel function with dynamic sizes (`locus.symbols`, arguments
    with `locus.dims` and `locus.sizes`), a convolution whose input (dy for
    an input gradient) has a dynamic batch reads its parameters from a copy
    on the stack (`memref.alloca`, `memref.copy` of the global) whose
    `LOCUS_CONV_N` is the run's batch, computed from `locus.sizes`; its
    result buffer stays bound-sized (the run's values packed from its
    start) and its `bufferization.to_tensor` carries the result's
    `locus.dims` for `--locus-dynamic-kernels`. Any other dynamic
    dimension of a convolution is an error.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect"];
  let statistics = [
    Statistic<"numCalls", "conv-calls", "Convolutions turned into calls">,
    Statistic<"numGradCalls", "conv-grad-calls",
              "Convolution gradients turned into calls">,
    Statistic<"numEpilogues", "fused-epilogue-ops",
              "Residual adds, ReLUs and poolings joined to a call">,
  ];
}

def LocusConvToCudnn : Pass<"locus-conv-to-cudnn", "::mlir::ModuleOp"> {
  let summary = "Calls cuDNN for CUDA convolutions and their gradients.";
  let description = [{
    In the CUDA pipeline, before `--locus-lower-to-linalg`: each
    `locus.conv2d`, `locus.conv2d_input_grad` and `locus.conv2d_weight_grad`
    in a kernel function becomes an `scf.if` on whether the device has
    cuDNN (`locus_cuda_dnn_ready`, asked once at the function's start). The
    `then` branch calls the runtime's `locus_cuda_conv2d`, which runs
    cuDNN's convolution, backward-data or backward-filter on the device's
    compute stream (the forward adds its bias with `cudnnAddTensor`); the
    `else` branch keeps the op, which lowers to the generated kernels as
    before, so an artifact runs on a machine without cuDNN too; its result
    is materialized in a fresh `tensor.empty`, so that both branches yield
    buffers of the identity layout (CUDA kernels need static layouts).

    The call takes the kind (`locus_conv_kind_e`: 0 forward, 1 input
    gradient, 2 weight gradient), the convolution's shapes as a private
    constant global in `locus_conv2d`'s parameter order (`locus_conv_param_e`
    in `locus/abi.h`: the input's, the weight's and the output's shapes,
    strides, padding, dilation, groups, flags), the two operands (forward:
    input and weight; input gradient: the output's gradient and the weight;
    weight gradient: the input and the output's gradient), the bias (the
    first operand again when there is none, unread) and a fresh buffer for
    the result, all as addresses. With `allow-tf32`, the flags let cuDNN
    round operands to TF32; by default every algorithm computes in fp32.
    A convolution `--locus-autocast` marked (`locus.autocast`: its
    operands are bf16 or f16 values held in f32) gets TF32's flag without
    the option: TF32's 10-bit mantissa and 8-bit exponent hold every bf16
    and f16 value exactly, so the tensor cores multiply the very values an
    f32 algorithm would. A convolution of bf16 or f16 operands and result
    (`--locus-gpu-16bit-convs`) gets its type's flag instead
    (`LOCUS_CONV_BF16`, `LOCUS_CONV_F16`): cuDNN reads and writes 16-bit
    values and accumulates in f32 on tensor cores, as PyTorch's autocast
    convolutions do; its `else` branch computes on the operands cast up
    (exactly) and rounds the result. cuDNN adds no 16-bit bias here, so
    such a convolution with a bias is an error (the pass that makes them
    leaves convolutions with a bias in f32).

    ```mlir
    %dx = locus.conv2d_input_grad %g, %w input_shape [2, 3, 8, 8] stride [1, 1]
        padding [1, 1] dilation [1, 1] groups 1
        : tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
    ```

    becomes

    ```mlir
    %r = call @locus_cuda_dnn_ready() : () -> i32
    %yes = arith.cmpi ne, %r, %c0_i32 : i32
    %dx = scf.if %yes -> (tensor<2x3x8x8xf32>) {
      %p = memref.get_global @__locus_conv2d_params_0 : memref<25xi64>
      ...
      %y = memref.alloc() : memref<2x3x8x8xf32>
      call @locus_cuda_conv2d(%c1_i64, %pp, %gp, %wp, %gp, %yp) : (i64, i64, i64, i64, i64, i64) -> ()
      %t = bufferization.to_tensor %y restrict writable : memref<2x3x8x8xf32>
      scf.yield %t : tensor<2x3x8x8xf32>
    } else {
      %0 = locus.conv2d_input_grad %g, %w ...
      %e = tensor.empty() : tensor<2x3x8x8xf32>
      %m = bufferization.materialize_in_destination %0 in %e : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
      scf.yield %m : tensor<2x3x8x8xf32>
    }
    ```

    In a kernel function with dynamic sizes (`locus.symbols`), a
    convolution whose batch operand (the input; the output's gradient for
    the input gradient) is dynamic is the call alone: its parameters are a
    copy of the global on the stack whose `LOCUS_CONV_N` is the run's
    batch, computed from `locus.sizes` (the copy and store are marked
    `locus.host`: the runtime reads them on the host), and its bound-sized
    result carries the result's `locus.dims` for `--locus-dynamic-kernels`.
    The generated kernels would compute at the bound's batch, so there is
    no `else` branch: on a device without cuDNN the call fails the run,
    saying why.
  }];
  let options = [
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "Let cuDNN round convolution operands to TF32 (tensor cores); "
           "fp32 otherwise">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
  let statistics = [
    Statistic<"numCalls", "cudnn-calls",
              "Convolutions and gradients given a cuDNN call">,
  ];
}

def LocusUseRuntimeAllocator
    : Pass<"locus-use-runtime-allocator", "::mlir::ModuleOp"> {
  let summary = "Binds MLIR's generic allocation functions to the runtime's.";
  let description = [{
    Last in the host and CUDA lowering pipelines, on the LLVM dialect:
    `--finalize-memref-to-llvm{use-generic-functions}` allocates through
    `_mlir_memref_to_llvm_alloc` and `_mlir_memref_to_llvm_free`; this pass
    renames those declarations, and every call of them, to the runtime's
    allocator. On the host (the default) that is `locus_host_alloc` and
    `locus_host_free`, which keep freed blocks of 64 KiB and more for the
    next step's kernels to take again, so that a step maps no fresh memory
    after the first, and smaller ones in the freeing thread's own cache
    (no lock, no malloc); for CUDA launchers it is `locus_cuda_alloc` and
    `locus_cuda_free` (device memory). Both functions take and return what
    the generic ones do (`i64` bytes to `!llvm.ptr`, `!llvm.ptr` to nothing).
    A module that declares the runtime's name already is an error, as is
    one option without the other.

    ```mlir
    llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
    %p = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
    ```

    becomes

    ```mlir
    llvm.func @locus_host_alloc(i64) -> !llvm.ptr
    %p = llvm.call @locus_host_alloc(%n) : (i64) -> !llvm.ptr
    ```
  }];
  let options = [
    Option<"alloc", "alloc", "std::string",
           /*default=*/"LOCUS_ABI_HOST_ALLOC",
           "The allocation function: `locus_host_alloc`, or "
           "`locus_cuda_alloc` for CUDA launchers">,
    Option<"free", "free", "std::string", /*default=*/"LOCUS_ABI_HOST_FREE",
           "The matching free function">,
  ];
  let statistics = [
    Statistic<"numRenamed", "renamed-functions",
              "Generic allocation functions bound to the runtime's">,
  ];
}

def LocusLinalgToBlas : Pass<"locus-linalg-to-blas", "::mlir::ModuleOp"> {
  let summary = "Calls the runtime's sgemm for matrix products on buffers.";
  let description = [{
    After bufferization (and after the buffer-deallocation pipeline, so no
    buffer is freed between taking its address and the call):
    `linalg.matmul`, `linalg.matmul_transpose_a`/`_b`,
    `linalg.batch_matmul` and `linalg.batch_matmul_transpose_a`/`_b` on
    f32 buffers (any dimension may be dynamic: m, n and k are then read
    from the buffers) become calls to the runtime's
    `locus_sgemm` (oneDNN's matmul or OpenBLAS's `cblas_sgemm` when they
    load, a blocked loop otherwise), with beta = 1: linalg's products
    accumulate into their output. When the output was just filled with
    zeros (nothing with memory effects in between), the fill goes and beta
    is 0. The output must have the identity layout; an operand may be a
    view whose rows' elements lie next to each other (innermost stride 1,
    rows not overlapping where that is static: a slice of a packed weight,
    a column block, a kernel's view at the run's sizes), passed as its
    base's aligned pointer plus its offset, its rows' stride as leading
    dimension and its first stride as batch stride; a dynamic stride or
    offset is read from the view's descriptor
    (`memref.extract_strided_metadata`) at the call. A product of bf16 or
    f16 operands into an f32 output (what `locus.matmul` and `locus.linear`
    of 16-bit values lower to) calls `locus_gemm_16` instead on the host,
    and `locus_cuda_gemm_16` (cuBLAS's `cublasGemmEx` on tensor cores,
    f32 accumulation) in CUDA kernels: the same arguments after the
    operands' element type (4 bf16, 5 f16), offsets in their 2-byte
    elements. When such a product's output is a fresh buffer, just filled
    with zeros, whose only reader (through `memref.expand_shape` and
    `collapse_shape` views) is a `linalg.generic` that rounds all of it
    (`arith.truncf`, identity maps) to the operands' type into a buffer of
    contiguous rows, with nothing with memory effects in between, the call
    writes that buffer itself: `LOCUS_GEMM_C_16BIT` (256) added to the
    element type, each f32 sum rounded once to nearest even, as the
    generic did; the generic, the views and the f32 buffer go. That is a
    launch and an f32 round trip less for each such product on a GPU (an
    autocast product whose readers take its 16-bit result). Other products
    (mixed operands, a 16-bit output) stay, for the loops.

    ```mlir
    linalg.matmul ins(%a, %b : memref<64x784xf32>, memref<784x1024xf32>)
                  outs(%c : memref<64x1024xf32>)
    ```

    becomes

    ```mlir
    %pa = memref.extract_aligned_pointer_as_index %a : memref<64x784xf32> -> index
    ...
    func.call @locus_sgemm(%batch, %m, %n, %k, %a_i64, %lda, %stride_a, %trans_a,
                           %b_i64, %ldb, %stride_b, %trans_b, %beta, %c_i64, %ldc, %stride_c)
    ```
  }];
  let options = [
    Option<"callee", "callee", "std::string", /*default=*/"LOCUS_ABI_SGEMM",
           "The function called: `locus_sgemm` on the host, "
           "`locus_cuda_sgemm` (cuBLAS, device pointers) in CUDA kernels">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numCalls", "blas-calls", "Products turned into sgemm calls">,
    Statistic<"numRounded", "rounded-results",
              "16-bit products that write their result in 16 bits">,
  ];
}

def LocusMapToGpu : Pass<"locus-map-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Turns the linalg ops of CUDA kernels into gpu.launch ops.";
  let description = [{
    In every function whose `locus.device` is a CUDA device (what
    `--locus-outline-kernels` makes), after bufferization and
    `--locus-linalg-to-blas{callee=locus_cuda_sgemm}`, named ops are
    generalized and `memref.copy` becomes a copy op. Then, first, row
    groups: a run of linalg ops (with only buffers, views, constants and
    frees between them) that all go row by row over the same `[rows,
    cols]` space, with a reduction among them, becomes one launch. Its ops
    are `[rows, cols]` ops with every loop parallel, `[rows, cols]` to
    `[rows]` reductions with one f32 combiner (as below), and `[rows]` ops
    (fills, the scale of a sum); each reads and writes buffers of static
    shape and identity layout whole (`[row, col]`), by row (`[row]`,
    `[row, 0]`), or by column (`[col]`, a weight every row reads, which no
    op of the group may write). Where a block shares a row, no `[rows]` op
    may write a row buffer that an op before it read from memory (its lane
    0 stores with no barrier between). Where a run's longest group breaks
    a rule, the longest that keeps them (from its first op, else from its
    reduction) is taken and the ops after it may form the next: a kernel
    of merged row-by-row kernels may hold several groups. A softmax, a log-softmax or the end of a
    layer norm is such a run. Rows of at most 512 elements go to the
    fewest lanes (a power of two, 4 to 32) that leave each lane at most 4
    elements, or to a warp (up to 16 elements a lane): 8 lanes for rows of
    32, 4 for rows of 10, so that each lane has several loads in flight;
    longer rows, up to 4096, to a block each. Rows longer still, when
    there are 128 or more of them and an elementwise op among the run, go
    to a block each that loops over its columns: once per reduction and
    once per op whose result is read after the run, computing an
    elementwise op's values again wherever they are read (its inputs come
    back from the caches), so that still only the output is written. That
    needs nothing an elementwise op reads to change after it (a whole
    buffer written once and not read before, no row buffer it reads
    written later); otherwise the ops keep their own launches. Each lane holds the elements `lane + k *
    lanes` of its row in registers from op to op: an input is read from
    memory once, a reduction combines its lanes with butterfly `gpu.shuffle
    xor` (or `gpu.all_reduce` for a block), and only buffers read after
    the run are written, each once; temporaries that nothing else reads
    are removed with their frees. Lanes past a row's end read its last
    column and add the identity; rows past the last read the last row; all
    lanes take part in every shuffle, and neither writes. A softmax was six
    launches and three times the bytes of one pass.

    A loop marked `locus.scatter_add` (`--locus-lower-to-linalg`'s
    `gather_grad` and `gather_elements_grad`: from 0 by 1 to a constant
    count, no results) becomes a launch of a thread per iteration, 256 a
    block, the thread's iteration its global id; the constants, constant
    buffers (`memref.get_global`: constant indices, a positional
    embedding's) and views of them it reads are made inside the launch,
    so the kernel module holds its own copy of each global; each `store
    (addf (load m[i]), x), m[i]` in it becomes `memref.atomic_rmw addf x,
    m[i]` (PTX `atom.global.add.f32`), since two elements may add into one
    place. Repeated indices therefore add in any order, as PyTorch's
    `index_add_` on CUDA. A marked loop of no static count, one that still
    carries values, or one whose body does anything but loads, arithmetic,
    `scf.if` and such adds (another store, a copy) is an error, before the
    loop is changed.

    Every other linalg op becomes one `gpu.launch` of 256-thread blocks:

    - all loops parallel, every buffer read and written whole and in order
      (identity maps and layouts, no constant global) by a body that does
      not ask for its indices: the buffers as flat 1-D views, assumed
      16-byte aligned (plan buffers are 64-byte aligned, temporaries come
      from the driver's allocator); each thread takes 4 consecutive
      elements, loading them all, then computing, then storing, which the
      NVPTX backend turns into 16-byte vector accesses; the last thread's
      elements one by one with a bounds check. No division per element;
    - other parallel ops: one thread per point of the iteration space, the
      point's index split from the thread's global id with the last loop
      dimension fastest, so neighbouring threads read and write
      neighbouring elements of row-major buffers (coalesced);
    - a reduction with one output whose body ends in one combiner
      (`addf`, `mulf`, `maximumf`, `maxnumf`, `minimumf`, `minnumf`, `addi`
      on i64) whose innermost loop is parallel (the outputs lie next to
      each other: a bias gradient, a sum over the rows of a matrix): one
      thread per output, neighbouring threads on neighbouring outputs
      (coalesced), each folding its column. With too few outputs to fill
      the GPU (fewer than 1056 x 256 threads) and 32 or more elements each,
      the reduced elements split into shares of at least 16. When that
      makes 8 shares or fewer and the combiner is f32's (a bias gradient
      of 64 rows: 4 shares of 16), the shares are lanes of one warp, in one
      launch: a warp holds 32 / lanes neighbouring outputs (lanes rounded
      up to a power of two), lane `l` folding output `l % (32 / lanes)`'s
      elements `l / (32 / lanes)`, plus every lanes-th after it (a warp
      reads neighbouring outputs of neighbouring rows), butterfly
      `gpu.shuffle xor` combine the shares, and the lanes of share 0
      store; lanes past the last output fold the last one and do not
      store. The tiny Transformer step's 23 bias gradients took two
      launches each before. With more shares they go over
      `grid.y`; each thread folds its share into a temporary of partials
      `[shares][outputs]`, and a second launch, a thread per output, folds
      its partials in order into the output;
    - the same reduction with its reduced elements innermost, over 32 or
      more elements: one block per output element; each thread folds every
      256th element into a partial result, the block combines them with
      `gpu.all_reduce` (warp shuffles through shared memory), and thread 0
      combines that with the output's initial value;
    - the same with f32 and rows of at most 256 elements, when they are not
      split (below): a warp per output, 8 per block; each lane folds every
      32nd element, five butterfly `gpu.shuffle xor` (16 to 1) combine the
      lanes, and lane 0 combines the result with the output's initial
      value. No barrier, and no idle lanes on short rows;
    - the same reduction with fewer than 1056 outputs (too few blocks to
      fill a large GPU) and at least 8192 elements each: split. Each output
      gets up to 1056 / outputs blocks (and at least 4096 elements per
      block), each folding a contiguous share into a temporary of partial
      results; a second launch, one block per output, folds its partials in
      order and combines them with the output's initial value. No atomics:
      the result is the same on every run (a full sum of 64 Mi floats ran on
      one block before);
    - other reductions: one thread per output element, looping over the
      reduced elements.

    In a kernel function that carries `--locus-outline-kernels`'
    `locus.results_may_alias`, a run of linalg ops with static extents,
    each with parallel loops only or a reduction whose strategy above is
    one launch of 256-thread blocks that each serve their own outputs (a
    thread per output, lanes of a warp per column, a warp per output:
    bias gradients, an index check's count), next to each other (nothing
    between them touches memory), none
    of which reads or writes an element another writes (buffers compared
    by the elements their static views reach, so copies into separate
    windows of a concatenation share a launch; a buffer that an op's body
    loads from without it being an operand, a gather's table, counts as
    read), is one launch where
    the last of them stood: each op takes its own range of blocks (its
    flat, thread-per-element or reduction form, as above) and the block's
    index chooses the op, the same for every thread of a block (a warp's
    shuffles have all its lanes). An out-parameter that the plan may put in an
    argument's buffer (an update in place) counts as that argument too.
    That is a kernel of optimizer steps, one per parameter.

    A fill followed by a copy into a static window of the same buffer (a
    slice's gradient: zeros and the gradient's block; a pad), with only
    memory-effect-free ops between and a source that is no view of that
    buffer, is one launch: each element takes the source's value inside
    the window and the filled value outside.

    A fill followed by a one-output reduction into the same buffer (with
    only memory-effect-free ops between them, and the reduction not
    reading that buffer) is one launch: the reduction starts from the
    filled value where it would load the output's initial value. A sum's
    zero fill was a launch of its own before each of the Transformer
    step's 59 reductions outside row groups.

    A kernel of a graph with dynamic sizes (its function marked by
    `--locus-dynamic-kernels{keep-bounds=true}` with its sizes argument and
    their bounds) has loops and buffers of dynamic extent, computed on the
    host from the run's sizes, which the launcher reads from that argument
    (host memory; the only buffer the host may read). Each op is mapped as
    at its bounds (the upper bound of each extent, through the arithmetic,
    views and allocations that compute it): the strategy, block size,
    splits and shares, and the static types of the views a kernel takes.
    The grid, every bounds check, loop end and index split take the run's
    extents, passed to the kernel as scalars: a run below the bounds
    launches the blocks it needs, and a split's shares past the run's
    elements fold nothing. A buffer of dynamic shape is indexed as a flat
    view of the buffer it views, at its bound, with the run's offset and
    strides (a plain elementwise op's stay flat and contiguous); one the
    body reads from above (a gather's table) is viewed at its bounds.
    Row groups and side-by-side launches take static ops only. A reshape
    into several dynamic dims from a shape buffer the host fills becomes a
    cast with row-major strides (dims read back from that buffer are the
    values stored), and a scalar the host stores (a count of the run's
    batch) is stored by a launch of one thread: on a GPU both buffers are
    device memory. Memref ops marked `locus.host` (a convolution's
    parameters copied with the run's batch, which the runtime reads on the
    host) stay host code. An extent with no bound is an error at its op.

    The strategy chosen for each op is logged under `-debug-only=
    locus-map-to-gpu` in an LLVM built with assertions, and given as a
    remark at the op (a row group's at its first op) with `explain=true`,
    in any build: `locus-opt --locus-map-to-gpu=explain=true`.

    Buffers with a strided layout (slices) are indexed through a flat view
    of their base pointer; constant globals are read from the kernel
    module's own copy. What stays on the host only computes addresses,
    allocates, frees and calls the runtime; an op that would read or write
    a buffer there is an error, as is a dynamic shape.

    ```mlir
    func.func @g_k0_exp(%x: memref<1000xf32>, %y: memref<1000xf32>)
        attributes {locus.device = #locus.device<cuda:0>} {
      linalg.generic ... ins(%x) outs(%y) { math.exp ... }
    ```

    becomes

    ```mlir
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, ...)
                 threads(%tx, %ty, %tz) in (%sx = %c256, ...) {
        %id = arith.addi (%bx * 256), %tx
        scf.if %id < 1000 { %v = memref.load %x[%id] ... memref.store }
        gpu.terminator
      }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "A remark at each linalg op, or row group, with the strategy it "
           "gets and why">,
  ];
  let statistics = [
    Statistic<"numLaunches", "launches", "Linalg ops turned into launches">,
  ];
}

def LocusGpuModulesToPtx : Pass<"locus-gpu-modules-to-ptx", "::mlir::ModuleOp"> {
  let summary = "Compiles every gpu.module to PTX, the modules in parallel.";
  let description = [{
    What `gpu-module-to-binary{format=isa}` does, on the context's threads:
    every `gpu.module` with one target attribute (from `nvvm-attach-target`,
    which also names libdevice to link) becomes a `gpu.binary` of the same
    name holding one PTX object:

    ```mlir
    gpu.binary @k0 [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "...">]
    ```

    Each module is translated to LLVM IR, linked and optimized in its own
    LLVM context, so the modules compile side by side; upstream's pass
    compiles them one after another, which was nearly half of a large
    graph's compile time (100,000 elementwise ops in 98 kernels: 29 s of 64 on two
    cores). The binaries keep the modules' order, and errors come out in
    it. A module without exactly one target, or one its target cannot
    compile, is an error.
  }];
  let statistics = [
    Statistic<"numModules", "modules", "GPU modules compiled to PTX">,
  ];
}

def LocusGpuToRuntime : Pass<"locus-gpu-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Launches through the runtime; PTX out of the module.";
  let description = [{
    After `locus-gpu-modules-to-ptx` (or upstream's
    `gpu-module-to-binary{format=isa}`): every `gpu.binary` leaves the
    module, its PTX kept in the module's `locus.cuda_kernels` attribute (one
    entry per kernel: `{name, ptx}`, in the order of the kernel numbers),
    and every `gpu.launch_func` becomes a call to the runtime:

    ```mlir
    func.call @locus_cuda_launch(%kernel, %gx, %gy, %gz, %bx, %by, %bz,
                                 %shared, %args, %nargs)
    ```

    where `%kernel` is the kernel's number and `%args` the address of an
    array of 8-byte slots, one per kernel argument: a buffer's aligned
    pointer, an index or integer widened to i64, a float's bits (f32, bf16
    or f16) in the low bytes. The runtime's `cuda` device loads each PTX
    module once and passes the slots to `cuLaunchKernel` on its compute
    stream. A launch of a
    kernel with no binary, a binary with no PTX object, or an argument of
    another type is an error.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numKernels", "kernels", "PTX kernels taken out">,
  ];
}

#endif // LOCUS_PASSES_TD
