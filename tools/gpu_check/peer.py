#!/usr/bin/env python3
"""PyTorch's side of tools/gpu-check: the same work as each Locus row, on
the same GPU, in one process. Prints one JSON object: for each peer key,
{"fp32": us, "tf32": us or null, "graph": us or null, "note": text}.

  fp32   eager, TF32 off for matrix products and convolutions;
  tf32   eager in PyTorch's default mode (convolutions in TF32), where the
         work has a convolution or a matrix product;
  graph  the step captured as one CUDA graph and replayed, for steps under
         a millisecond in fp32.

Times are medians of wall-clock steps with a synchronize after each, after
warm-up, as locus-run measures Locus.

  peer.py [--only key,key] [--reps N]
  peer.py --profile key [--steps N]   the step's CUDA kernels, for kinds.py
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEV = torch.device("cuda:0")
MIB64 = 16 << 20  # floats


def median_us(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def set_tf32(on):
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default


def graphed(make_body, warm=3):
    """A replay of `make_body()`'s function captured as a CUDA graph, after
    warm-up on a side stream (PyTorch's whole-network capture recipe)."""
    body = make_body()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warm):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph.replay


# --- the work: each maker returns (step function, uses matmul/conv, can be
# captured as a graph) ---------------------------------------------------------

def launch_chain():
    x = torch.rand(1024, device=DEV)

    def step():
        y = x
        for i in range(64):
            y = torch.relu(y) if i % 2 == 0 else torch.neg(y)
        return y
    return step, False, True


def unary(fn, shape):
    def make():
        x = torch.rand(*shape, device=DEV) - 0.5
        return lambda: fn(x), False, True
    return make


def copy_d2d():
    x = torch.rand(64 << 20, device=DEV)
    y = torch.empty_like(x)
    return lambda: y.copy_(x), False, False


def layernorm():
    x = torch.rand(8192, 1024, device=DEV)
    g = torch.ones(1024, device=DEV)
    b = torch.zeros(1024, device=DEV)
    return lambda: F.layer_norm(x, (1024,), g, b, 1e-5), False, True


def host_to_device(pinned):
    def make():
        h = torch.rand(MIB64)
        h = h.pin_memory() if pinned else h
        return lambda: h.to(DEV, non_blocking=pinned), False, False
    return make


def device_to_host(pinned):
    def make():
        d = torch.rand(MIB64, device=DEV)
        h = torch.empty(MIB64, pin_memory=pinned)
        return lambda: h.copy_(d, non_blocking=pinned), False, False
    return make


def conv(which):
    def make():
        x = torch.rand(32, 64, 56, 56, device=DEV)
        g = torch.rand(32, 64, 56, 56, device=DEV)
        w = torch.rand(64, 64, 3, 3, device=DEV) * 0.04
        b = torch.rand(64, device=DEV)
        fns = {
            "fwd": lambda: F.conv2d(x, w, b, padding=1),
            "dgrad": lambda: torch.nn.grad.conv2d_input(x.shape, w, g, padding=1),
            "wgrad": lambda: torch.nn.grad.conv2d_weight(x, w.shape, g, padding=1),
        }
        return fns[which], True, False
    return make


def train_step(model, opt, inputs, labels, loss_fn=F.cross_entropy, host=None):
    """zero_grad, forward, loss, backward, step; `host` (optional): host
    tensors copied to `inputs` first (data from the host)."""
    def step():
        if host is not None:
            for dst, src in zip(inputs, host):
                dst.copy_(src)
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(*inputs), labels)
        loss.backward()
        opt.step()
        return loss
    return step


def mlp_model():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                         nn.ReLU(), nn.Linear(1024, 10)).to(DEV)


def mlp_fwd():
    model = mlp_model()
    x = torch.rand(256, 784, device=DEV)

    def step():
        with torch.no_grad():
            return model(x)
    return step, True, True


def mlp_train():
    model = mlp_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(256, 784, device=DEV)
    y = torch.randint(0, 10, (256,), device=DEV)
    return train_step(model, opt, [x], y), True, True


def mlp_train_bf16():
    """mlp_train under torch.autocast(bfloat16): what precision="bf16" is
    measured against."""
    model = mlp_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(256, 784, device=DEV)
    y = torch.randint(0, 10, (256,), device=DEV)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step, False, True


def cnn_train():
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(784, 10)).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    x = torch.rand(16, 3, 14, 14, device=DEV)
    y = torch.randint(0, 10, (16,), device=DEV)
    return train_step(model, opt, [x], y), True, True


def embedding_train():
    """The embedding row: graphs.EMBEDDING's bag of words on the same ids
    (graphs.embedding_ids), SGD; PyTorch's dense embedding gradient."""
    sys.path.insert(0, HERE)
    import graphs  # noqa: E402 (a script run by path: its directory)
    e = graphs.EMBEDDING
    emb = nn.Embedding(e["vocab"], e["dim"]).to(DEV)
    fc = nn.Linear(e["dim"], e["classes"]).to(DEV)
    opt = torch.optim.SGD(list(emb.parameters()) + list(fc.parameters()), lr=0.1)
    ids = torch.tensor(graphs.embedding_ids(e["vocab"], e["batch"] * e["seq"]),
                       dtype=torch.int64, device=DEV).reshape(e["batch"], e["seq"])
    y = torch.zeros(e["batch"], dtype=torch.int64, device=DEV)
    # Not captured: above 3072 ids PyTorch's embedding backward sorts them
    # and reads the count of distinct ones back to the host.
    return train_step(lambda i: fc(emb(i).mean(1)), opt, [ids], y), True, False


def example_models():
    sys.path.insert(0, os.path.join(ROOT, "examples", "models"))
    import torch_models  # noqa: E402  (sets float64 as the default)
    torch.set_default_dtype(torch.float32)
    return torch_models


def resnet18_train():
    tm = example_models()
    model = tm.ResNet18().to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, weight_decay=5e-4)
    hx = torch.rand(128, 3, 32, 32)
    hy = torch.randint(0, 10, (128,))
    x, y = hx.to(DEV), hy.to(DEV)
    return train_step(model, opt, [x], y, host=[hx, hy]), True, False


def resnet18_train_bf16():
    """resnet18_train under torch.autocast(bfloat16): what
    precision="bf16" is measured against."""
    tm = example_models()
    model = tm.ResNet18().to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, weight_decay=5e-4)
    hx = torch.rand(128, 3, 32, 32)
    hy = torch.randint(0, 10, (128,))
    x, y = hx.to(DEV), hy.to(DEV)

    def step():
        x.copy_(hx)
        y.copy_(hy)
        opt.zero_grad(set_to_none=False)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step, False, False


def transformer_train(bf16=False):
    """The tiny Transformer's training step; with `bf16`, under
    torch.autocast(bfloat16), the loss in f32 as autocast computes it (what
    precision="bf16" is measured against), the autocast cache off, as CUDA
    graph capture needs."""
    tm = example_models()
    model = tm.TinyLM().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01,
                            capturable=True)
    seq = torch.randint(0, tm.VOCAB, (tm.BATCH, tm.SEQ + 1), device=DEV)
    ids, target = seq[:, :tm.SEQ].contiguous(), seq[:, 1:].reshape(-1).contiguous()
    causal = torch.triu(torch.ones(tm.SEQ, tm.SEQ, dtype=torch.bool, device=DEV), 1)
    pos = torch.arange(tm.SEQ, device=DEV)

    def forward(i):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16,
                            enabled=bf16, cache_enabled=False):
            h = model.tok(i) + model.pos(pos)
            for layer in model.layers:
                h = layer(h, src_mask=causal)
            return model.head(model.norm(h)).reshape(-1, tm.VOCAB).float()
    return train_step(forward, opt, [ids], target), True, True


def transformer_train_bf16():
    return transformer_train(bf16=True)


class Block(nn.Module):
    """bench/models.py's BasicBlock: ResNet-34's layer-1 block, batch norm
    folded."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv1(x))) + x)


def host_io_inference(make_model, shape):
    """Inference of `make_model()` on the GPU with its input from the host
    and its output back, as a server runs it; `shape` the input's."""
    def make():
        model = make_model().to(DEV).eval()
        hx = torch.rand(*shape)

        def step():
            with torch.no_grad():
                return model(hx.to(DEV)).cpu()
        return step, True, False
    return make


def resnet_blocks(batch):
    return host_io_inference(lambda: nn.Sequential(Block(64), Block(64), Block(64)),
                             (batch, 64, 56, 56))


def seed_cnn(batch):
    """bench/models.py's seed CNN."""
    return host_io_inference(
        lambda: nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(16 * 7 * 7, 10)),
        (batch, 3, 14, 14))


MAKERS = {
    "launch_chain": launch_chain,
    "relu": unary(torch.relu, (64 << 20,)),
    "copy_d2d": copy_d2d,
    "sum": unary(torch.sum, (64 << 20,)),
    "softmax1024": unary(lambda x: torch.softmax(x, 1), (16384, 1024)),
    "softmax32": unary(lambda x: torch.softmax(x, 1), (524288, 32)),
    "softmax32768": unary(lambda x: torch.softmax(x, 1), (512, 32768)),
    "colsum": unary(lambda x: x.sum(0), (4096, 1000)),
    "bnstats": unary(lambda x: x.sum((0, 2, 3)), (128, 64, 32, 32)),
    "layernorm": layernorm,
    "h2d_pinned": host_to_device(True),
    "h2d_pageable": host_to_device(False),
    "d2h_pinned": device_to_host(True),
    "d2h_pageable": device_to_host(False),
    "conv_fwd": conv("fwd"),
    "conv_dgrad": conv("dgrad"),
    "conv_wgrad": conv("wgrad"),
    "mlp_fwd": mlp_fwd,
    "mlp_train": mlp_train,
    "mlp_train_bf16": mlp_train_bf16,
    "cnn_train": cnn_train,
    "embedding_train": embedding_train,
    "resnet18_train": resnet18_train,
    "resnet18_train_bf16": resnet18_train_bf16,
    "transformer_train": transformer_train,
    "transformer_train_bf16": transformer_train_bf16,
    "resnet_blocks_b1": resnet_blocks(1),
    "resnet_blocks_b8": resnet_blocks(8),
    "resnet_blocks_b64": resnet_blocks(64),
    "seed_cnn_b1": seed_cnn(1),
    "seed_cnn_b16": seed_cnn(16),
    "seed_cnn_b64": seed_cnn(64),
}


def measure(key, reps):
    set_tf32(False)
    torch.manual_seed(0)
    step, matmul, capturable = MAKERS[key]()
    out = {"fp32": median_us(step, reps), "tf32": None, "graph": None, "note": ""}
    if matmul:
        set_tf32(True)
        out["tf32"] = median_us(step, reps)
        set_tf32(False)
    if capturable and out["fp32"] < 1000:
        try:
            out["graph"] = median_us(graphed(lambda: step), reps)
        except Exception as e:  # a capture PyTorch refuses: said, not fatal
            out["note"] = "graph capture failed: %s" % str(e).splitlines()[0][:120]
    return out


def profile(key, steps, device="cuda"):
    """Every kernel `steps` steps of `key` ran on `device` (fp32 eager,
    under torch.profiler after warm-up): {"steps", "kernels": [[name,
    calls, total us], ...]}, which kinds.py sorts by kind of work."""
    from torch.profiler import ProfilerActivity
    set_tf32(False)
    torch.manual_seed(0)
    step, _, _ = MAKERS[key]()
    for _ in range(3):
        step()
    gpu = device == "cuda"
    if gpu:
        torch.cuda.synchronize()
    activity = ProfilerActivity.CUDA if gpu else ProfilerActivity.CPU
    kind = torch.autograd.DeviceType.CUDA if gpu else torch.autograd.DeviceType.CPU
    with torch.profiler.profile(activities=[activity]) as prof:
        for _ in range(steps):
            step()
        if gpu:
            torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type != kind:
            continue
        calls, us = kernels.get(e.name, (0, 0.0))
        kernels[e.name] = (calls + 1, us + e.time_range.elapsed_us())
    return {"steps": steps, "kernels": [[k, c, t] for k, (c, t) in kernels.items()]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--profile", default="",
                    help="a key: its step's CUDA kernels under torch.profiler")
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    if args.profile:
        print(json.dumps(profile(args.profile, args.steps)))
        return
    keys = [k for k in args.only.split(",") if k] or list(MAKERS)
    result = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
              "cudnn": torch.backends.cudnn.version()}
    for key in keys:
        try:
            result[key] = measure(key, args.reps)
        except Exception as e:
            result[key] = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])}
        torch.cuda.empty_cache()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
