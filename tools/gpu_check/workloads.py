"""What tools/gpu-check measures: one row per workload, shared by
prepare.py (which compiles the artifacts), run.py (which runs them with
locus-run) and peer.py (which runs the same work in PyTorch).

A row: `name`; `title`; `artifact` (in bundle/bench); `args` (`{bundle}`
in one is the bundle's directory) and `env` for locus-run; `metric`, which part of locus-run's timing it reads ("step": the
step's median; "in"/"step_io"/"out": the parts of a --host-io run); `per`,
a divisor (a chain of launches: time per launch); `runs`; `peer`, the key
of its PyTorch side in peer.py (None: no peer); `profile`: whether its
per-kernel GPU profile is shown.
"""

LAUNCHES = 64


def row(name, title, artifact, peer, runs=52, args=(), env=None,
        metric="step", per=1, profile=False):
    return dict(name=name, title=title, artifact=artifact, peer=peer,
                runs=runs, args=list(args), env=env or {}, metric=metric,
                per=per, profile=profile)


BENCHES = [
    row("launch_graph", "launch: chain of %d small kernels, CUDA graph (per launch)"
        % LAUNCHES, "launch_chain.locus", "launch_chain", runs=202, per=LAUNCHES),
    row("launch_plain", "launch: chain of %d small kernels, plain (per launch)"
        % LAUNCHES, "launch_chain.locus", "launch_chain", runs=202,
        env={"LOCUS_CUDA_GRAPHS": "0"}, per=LAUNCHES),
    row("relu", "elementwise: relu over 64 Mi f32", "relu.locus", "relu"),
    row("copy_d2d", "device-to-device copy of 256 MiB (reference)", None, "copy_d2d"),
    row("sum", "reduction: full sum of 64 Mi f32", "sum.locus", "sum"),
    row("softmax1024", "reduction: softmax, 16384 rows of 1024", "softmax1024.locus",
        "softmax1024"),
    row("softmax32", "reduction: softmax, 524288 rows of 32", "softmax32.locus",
        "softmax32"),
    row("softmax32768", "reduction: softmax, 512 rows of 32768", "softmax32768.locus",
        "softmax32768"),
    row("colsum", "reduction: column sum 4096x1000 (a bias gradient)", "colsum.locus",
        "colsum"),
    row("bnstats", "reduction: per-channel sum of 128x64x32x32 (BatchNorm statistics)",
        "bnstats.locus", "bnstats"),
    row("layernorm", "reduction: layer norm, 8192 rows of 1024", "layernorm.locus",
        "layernorm"),
    row("h2d", "copy: host to device, 64 MiB (runtime; torch pinned)", "copies.locus",
        "h2d_pinned", runs=22, args=["--host-io"], metric="step_io"),
    row("h2d_pageable", "copy: host to device, 64 MiB (torch pageable)", None,
        "h2d_pageable"),
    # Where the h2d row's time goes: the step's copy replayed without a
    # CUDA graph (cuMemcpyHtoDAsync from the registered arena), and
    # set_input's host copy of the user's data into that arena.
    row("h2d_plain", "copy: host to device, 64 MiB (runtime, no CUDA graph; torch pinned)",
        "copies.locus", "h2d_pinned", runs=22, args=["--host-io"], metric="step_io",
        env={"LOCUS_CUDA_GRAPHS": "0"}),
    row("h2d_set_input", "copy: a 64 MiB input into the runtime's pinned arena (set_input)",
        "copies.locus", None, runs=22, args=["--host-io"], metric="in"),
    # set_input of an input that lives on the GPU: staged from the user's
    # memory, and one DMA from memory registered with the model.
    row("h2d_gpu_input", "copy: a 64 MiB input set on the GPU (set_input; torch pinned)",
        "gpu_input.locus", "h2d_pinned", runs=22, args=["--host-io"], metric="in"),
    row("h2d_registered",
        "copy: a 64 MiB input set on the GPU from registered user memory (torch pinned)",
        "gpu_input.locus", "h2d_pinned", runs=22, args=["--register"], metric="in"),
    row("d2h", "copy: device to host, 64 MiB (runtime; torch pinned)", "copies.locus",
        "d2h_pinned", runs=22, args=["--host-io"], metric="out"),
    # The same output read through the context's view: one DMA into
    # pinned memory the context owns, no host memcpy (what torch pinned is).
    row("d2h_view", "copy: device to host, 64 MiB (runtime output view; torch pinned)",
        "copies.locus", "d2h_pinned", runs=22, args=["--views"], metric="out"),
    # The same output read into the user's own memory, registered with the
    # model (locus_model_register_host): one DMA, no staging.
    row("d2h_registered",
        "copy: device to host, 64 MiB into registered user memory (runtime; torch pinned)",
        "copies.locus", "d2h_pinned", runs=22, args=["--register"], metric="out"),
    row("d2h_pageable", "copy: device to host, 64 MiB (torch pageable)", None,
        "d2h_pageable"),
    row("conv_fwd", "conv 3x3 64ch 56x56 b32: forward", "conv_fwd.locus", "conv_fwd",
        runs=22),
    row("conv_dgrad", "conv 3x3 64ch 56x56 b32: input gradient", "conv_dgrad.locus",
        "conv_dgrad", runs=12),
    row("conv_wgrad", "conv 3x3 64ch 56x56 b32: weight gradient", "conv_wgrad.locus",
        "conv_wgrad", runs=12),
]

MODELS = [
    row("resnet18_train", "ResNet-18 training step, SGD, b128, data from host",
        "resnet18_train.locus", "resnet18_train", runs=7, profile=True),
    row("resnet18_train_heuristic",
        "ResNet-18 training step, SGD, b128, data from host, cuDNN heuristics' choice",
        "resnet18_train.locus", "resnet18_train", runs=7,
        env={"LOCUS_CUDNN_BENCHMARK": "0"}),
    # With TF32 allowed, any cuDNN algorithm is taken, deterministic or not.
    row("resnet18_train_tf32",
        "ResNet-18 training step, SGD, b128, data from host, TF32 allowed",
        "resnet18_train_tf32.locus", "resnet18_train", runs=7),
    # PyTorch's default: the fastest algorithm, deterministic or not.
    row("resnet18_train_any",
        "ResNet-18 training step, SGD, b128, data from host, any cuDNN algorithm",
        "resnet18_train.locus", "resnet18_train", runs=7,
        env={"LOCUS_CUDNN_DETERMINISTIC": "0"}),
    row("resnet18_train_tf32_det",
        "ResNet-18 training step, SGD, b128, data from host, TF32, deterministic cuDNN",
        "resnet18_train_tf32.locus", "resnet18_train", runs=7,
        env={"LOCUS_CUDNN_DETERMINISTIC": "1"}),
    # precision="bf16": convolutions through cuDNN in bf16 (f32
    # accumulation, tensor cores), products through cublasGemmEx; the peer
    # is the same step under torch.autocast(bfloat16).
    row("resnet18_train_bf16",
        "ResNet-18 training step, SGD, b128, data from host, bf16 autocast",
        "resnet18_train_bf16.locus", "resnet18_train_bf16", runs=7),
    row("transformer_gpu", "tiny Transformer training step, AdamW, prefer-gpu",
        "transformer_gpu.locus", "transformer_train", runs=22, profile=True),
    row("transformer_auto", "tiny Transformer training step, AdamW, auto",
        "transformer_auto.locus", "transformer_train", runs=22),
    # precision="bf16" beside torch.autocast(bfloat16): issue 40's 1.0x.
    row("transformer_gpu_bf16",
        "tiny Transformer training step, AdamW, prefer-gpu, bf16 autocast",
        "transformer_gpu_bf16.locus", "transformer_train_bf16", runs=22),
    row("mlp_fwd", "MLP 784-1024-1024-10 forward b256, data on GPU", "mlp.locus",
        "mlp_fwd", runs=202),
    row("mlp_train", "MLP training step, SGD momentum, b256, data on GPU",
        "mlp_train.locus", "mlp_train", runs=102, profile=True),
    # precision="bf16": products through cublasGemmEx; the peer is the same
    # step under torch.autocast(bfloat16).
    row("mlp_train_bf16", "MLP training step, SGD momentum, b256, bf16 autocast",
        "mlp_train_bf16.locus", "mlp_train_bf16", runs=102, profile=True),
    row("cnn_train", "seed CNN training step, Adam, b16, data on GPU",
        "cnn_train.locus", "cnn_train", runs=102, profile=True),
    # The weight's gradient a scatter-add of 4096 rows into 32000
    # (locus.gather_grad: atomic adds), the ids read from the bundle.
    row("embedding_train",
        "embedding bag training step, 32000 x 256, ids 32x128, SGD, data on GPU",
        "embedding_train.locus", "embedding_train", runs=52, profile=True,
        args=["--input", "ids={bundle}/bench/embedding_ids.npy"]),
] + [
    row("resnet_blocks_b%d" % b,
        "3 ResNet-34 blocks from ONNX, b%d, host input and output" % b,
        "resnet_blocks_b%d.locus" % b, "resnet_blocks_b%d" % b,
        runs=22 if b == 64 else 52, args=["--host-io"], profile=b == 8)
    for b in (1, 8, 64)
] + [
    # Small-model inference as a server runs it: input from the host, the
    # output back (issue 36's goal: the seed CNN at b1 in half PyTorch
    # eager's time).
    row("seed_cnn_b%d" % b,
        "seed CNN from ONNX, b%d, host input and output" % b,
        "seed_cnn_b%d.locus" % b, "seed_cnn_b%d" % b, runs=202, args=["--host-io"])
    for b in (1, 16, 64)
]

ALL = BENCHES + MODELS
