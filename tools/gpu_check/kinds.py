"""Kinds of GPU work, shared by Locus's per-kernel profile and PyTorch's,
so that tools/gpu-check can set the two steps side by side: where each
spends its GPU time, by kind (issue 35: no kernel slower than PyTorch's
equivalent). A Locus kernel's kind is that of the heaviest op it holds (a
convolution with its ReLU is a convolution); a PyTorch kernel's comes
from its name (cuDNN's, cuBLAS's and ATen's kernels)."""
import re

ORDER = ["convolution", "matrix product", "norms and reductions",
         "softmax and losses", "pooling", "optimizer", "elementwise",
         "copies", "other"]

# Locus ops by kind, heaviest first: a kernel takes its first match.
LOCUS_OPS = [
    ("convolution", r"conv2d"),
    ("matrix product", r"matmul|linear"),
    ("softmax and losses", r"softmax|cross_entropy|nll|mse_loss|l1_loss"),
    ("pooling", r"pool"),
    ("norms and reductions", r"batch_norm|layer_norm|group_norm|^(sum|mean|max|min|argmax|argmin)$"),
    ("optimizer", r"^(sgd|adam)$"),
]

# PyTorch's CUDA kernels by name, first match wins.
TORCH_NAMES = [
    ("convolution", r"conv|fprop|dgrad|wgrad|winograd|implicit_gemm|nchwToNhwc|nhwcToNchw"),
    ("matrix product", r"gemm|gemv|cutlass|cublas"),
    ("optimizer", r"multi_tensor_apply|adam|sgd|foreach"),
    ("softmax and losses", r"softmax|nll_loss|cross_entropy|log_softmax"),
    ("norms and reductions", r"batch_norm|layer_norm|group_norm|reduce_kernel|welford|norm"),
    ("pooling", r"pool"),
    ("elementwise", r"elementwise|CatArray|index|gather|scatter|copy|fill"),
    ("copies", r"^Memcpy|^Memset"),
]


def first_op(kernel_name):
    """The first op a Locus kernel's name carries (`..._k12_conv2d` ->
    `conv2d`), or the name itself."""
    m = re.search(r"_k[0-9]+_([a-z0-9_]+)$", kernel_name)
    return m.group(1) if m else kernel_name


def locus_kind(ops, kernel_name=""):
    """The kind of a Locus kernel from its ops' names (`locus.conv2d`, or
    bare `conv2d`), or from its name's first op when it lists none."""
    names = [o.split(".", 1)[-1] for o in ops]
    if not names and first_op(kernel_name) != kernel_name:
        names = [first_op(kernel_name)]
    for kind, pattern in LOCUS_OPS:
        if any(re.search(pattern, n) for n in names):
            return kind
    return "elementwise" if names else "other"


def torch_kind(name):
    for kind, pattern in TORCH_NAMES:
        if re.search(pattern, name, re.I):
            return kind
    return "other"


def locus_per_step(rows):
    """kind -> (kernels, ms per step) from locus-run's LOCUS_PROFILE=1 rows
    (`name device calls total_ms mean_us share source...`)."""
    kinds = {}
    for row in rows:
        fields = row.split()
        if len(fields) < 5 or not fields[0].startswith("__locus_kernel_"):
            continue
        try:
            calls, mean_us = int(fields[2]), float(fields[4])
        except ValueError:
            continue
        kind = locus_kind(re.findall(r"locus\.([a-z0-9_]+) at ", row), fields[0])
        n, ms = kinds.get(kind, (0, 0.0))
        kinds[kind] = (n + 1, ms + mean_us / 1000.0 if calls else ms)
    return kinds


def torch_per_step(profile):
    """kind -> (kernel launches per step, ms per step) from peer.py
    --profile's {"steps": N, "kernels": [[name, calls, total_us], ...]}."""
    steps = max(1, profile.get("steps", 1))
    kinds = {}
    for name, calls, total_us in profile.get("kernels", []):
        kind = torch_kind(name)
        n, ms = kinds.get(kind, (0, 0.0))
        kinds[kind] = (n + calls / steps, ms + total_us / 1000.0 / steps)
    return kinds


def side_by_side(locus, torch_kinds, peer="PyTorch eager fp32"):
    """The two steps' GPU time by kind, as text lines (Locus's alone when
    `torch_kinds` is empty)."""
    if not torch_kinds:
        lines = ["", "GPU ms per step by kind: Locus (kernels)"]
        for kind in ORDER:
            if kind in locus:
                lines.append("%-22s %9.3f (%4d)" % (kind, locus[kind][1], locus[kind][0]))
        return lines
    lines = ["", "GPU ms per step by kind: Locus (kernels) | %s (kernel launches) "
             "| Locus/PyTorch" % peer]
    total = [0.0, 0.0]
    for kind in ORDER:
        a, b = locus.get(kind), torch_kinds.get(kind)
        if not a and not b:
            continue
        ms_a, ms_b = (a[1] if a else 0.0), (b[1] if b else 0.0)
        total[0] += ms_a
        total[1] += ms_b
        lines.append("%-22s %9.3f (%4d) | %9.3f (%6.1f) | %s" % (
            kind, ms_a, a[0] if a else 0, ms_b, b[0] if b else 0.0,
            "%.2fx" % (ms_a / ms_b) if ms_b > 0 and ms_a > 0 else "-"))
    lines.append("%-22s %9.3f        | %9.3f          | %s" % (
        "total", total[0], total[1],
        "%.2fx" % (total[0] / total[1]) if total[1] > 0 else "-"))
    return lines
