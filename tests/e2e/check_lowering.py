#!/usr/bin/env python3
"""Every op lowered by --locus-lower-to-linalg, run on the CPU and compared
with a double-precision reference on random inputs.

Each case writes a function of random constant inputs, one locus op and a
print of its result; `locus-opt --locus-host-pipeline` lowers it to LLVM
(the compiler's own host pipeline, with buffers passed as memref descriptors
and no worker threads, which mlir-cpu-runner cannot provide; matrix products
call the runtime's sgemm), and Debian's `mlir-cpu-runner` runs it. The reference is computed here
in Python floats (double precision).

printMemrefF32 prints 6 significant digits, so the comparison is
|got - ref| <= 1e-5 + 1e-4 * |ref|: print rounding (5e-6 relative) plus float32
error. The --compiled runs below compare at full precision.

Cases named in EXACT (locus.random's uniform numbers, against a Python
Philox4x32-10, and dropout's pattern) must match bit for bit: the host run
prints their bits (printMemrefI32), the compiled runs compare the float32
values exactly, so cpu and sim give the same mask.

With --compiled, each case is a whole graph instead: locus-compile
(placement, fusion, planning, AOT host code) writes an artifact, locus-run
(the runtime alone) runs it on .npy inputs, once with every op on the CPU
and once with prefer-gpu on cpu + cuda:0, where cuda:0 runs on the sim
device. Outputs come back as .npy at full float32 precision, so the
tolerance is |got - ref| <= 1e-5 + 2e-5 * |ref|. These runs also cover fused
patterns (epilogues after products, convolutions and reductions; chains and
trees of elementwise ops).

With --compiled, the kernels placed on cuda:0 are also compiled to PTX
(locus-compile --emit-ptx) and every PTX module is checked with
`ptxas -arch=sm_90` when the CUDA toolkit is present ($LOCUS_PTXAS,
/usr/local/cuda/bin/ptxas or ptxas on the PATH). --export DIR keeps, for
each case, the cuda artifact, its inputs and the double reference as .npy
in DIR/<case>/: what tools/gpu-check runs on a real GPU.

With --compiled --precision=bf16|f16, the cases run in that type (see
PRECISION_NOTE below for what is compared and how closely).

  check_lowering.py <build dir> [--compiled [--precision=bf16|f16]]
                    [--export DIR] [case-name-substring]
"""
import itertools
import math
import os
import random
import re
import subprocess
import sys
import tempfile

import shutil

# Also a module: check_gradients.py imports the reference ops and the runner
# helpers, and sets BUILD.
MAIN = __name__ == "__main__"
BUILD = sys.argv[1] if MAIN else "build"
ARGS = sys.argv[2:] if MAIN else []
COMPILED = "--compiled" in ARGS
EXPORT = None
if "--export" in ARGS:
    EXPORT = ARGS[ARGS.index("--export") + 1]
    del ARGS[ARGS.index("--export"):ARGS.index("--export") + 2]
# --precision=bf16|f16 (with --compiled): every case's float tensors in that
# type instead of f32 (see PRECISION_NOTE).
PRECISION = None
for _arg in list(ARGS):
    if _arg.startswith("--precision="):
        PRECISION = _arg.split("=", 1)[1]
        ARGS.remove(_arg)
ONLY = ([a for a in ARGS if a != "--compiled"] or [""])[0]


def find_ptxas():
    for candidate in [os.environ.get("LOCUS_PTXAS"), "/usr/local/cuda/bin/ptxas",
                      shutil.which("ptxas")]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


PTXAS = find_ptxas()
PTX_MODULES = [0]
WORST = {}  # case -> its worst error as a share of the tolerance
LLVM = "/usr/lib/llvm-19"
OPT = os.path.join(BUILD, "tools", "locus-opt")
HOST_PIPELINE = "--locus-host-pipeline=parallelize=false bare-pointers=false"
RUNTIME_LIB = os.path.join(BUILD, "runtime", "liblocus_runtime.so")
rng = random.Random(20261121)


# --- tensors as (shape, flat list of floats), row-major ----------------------

def numel(shape):
    return math.prod(shape) if shape else 1


def strides(shape):
    s, acc = [], 1
    for d in reversed(shape):
        s.insert(0, acc)
        acc *= d
    return s


def indices(shape):
    return itertools.product(*[range(d) for d in shape])


def at(t, idx):
    shape, data = t
    return data[sum(i * s for i, s in zip(idx, strides(shape)))]


def make(shape, fn):
    return (list(shape), [fn(idx) for idx in indices(shape)])


def gelu(x):
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def rand(shape, low=-2.0, high=2.0):
    # Values exactly representable in float32 (or in the 16-bit type the
    # run checks), so both sides start equal.
    return (list(shape), [representable(rng.uniform(low, high))
                          for _ in range(numel(shape))])


def struct_f32(x):
    import struct
    return struct.unpack("f", struct.pack("f", x))[0]


def bf16_bits(x):
    """The bits of x rounded to bfloat16 (to nearest, ties to even)."""
    import struct
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def from_bf16_bits(bits):
    import struct
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def representable(x):
    """x rounded to the type of the run's float tensors."""
    import struct
    if PRECISION == "bf16":
        return from_bf16_bits(bf16_bits(x))
    if PRECISION == "f16":
        try:
            return struct.unpack("<e", struct.pack("<e", x))[0]
        except OverflowError:  # past 65504 (rounded): infinite in f16
            return math.copysign(math.inf, x)
    return struct_f32(x)


def ttype(shape, elem="f32"):
    return "tensor<" + "".join("%dx" % d for d in shape) + elem + ">"


def dense(t, elem="f32"):
    shape, data = t
    fmt = (lambda v: "%d" % v) if elem in ("i64", "i32") else \
        (lambda v: "true" if v else "false") if elem == "i1" else \
        (lambda v: "%.9e" % v)

    def nest(level, offset):
        if level == len(shape):
            return fmt(data[offset])
        step = numel(shape[level + 1:])
        return "[" + ", ".join(nest(level + 1, offset + i * step)
                               for i in range(shape[level])) + "]"
    return "dense<%s> : %s" % (nest(0, 0), ttype(shape, elem))


# --- references --------------------------------------------------------------

def ew(fn, *ts):
    return (ts[0][0], [fn(*vals) for vals in zip(*[t[1] for t in ts])])


def broadcast(t, shape):
    lead = len(shape) - len(t[0])
    return make(shape, lambda idx: at(t, [0 if t[0][i] == 1 else idx[lead + i]
                                          for i in range(len(t[0]))]))


def matmul(a, b):
    *batch, m, k = a[0]
    n = b[0][-1]
    return make(batch + [m, n], lambda idx: sum(
        at(a, list(idx[:-2]) + [idx[-2], p]) * at(b, list(idx[:-2]) + [p, idx[-1]])
        for p in range(k)))


def reduce(t, axes, fn, init, keep=False):
    shape = t[0]
    out = [1 if i in axes else d for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in axes]

    def value(idx):
        full_idx = list(idx) if keep else None
        acc = init
        ranges = [range(d) if i in axes else [None] for i, d in enumerate(shape)]
        for sel in itertools.product(*ranges):
            if keep:
                src = [s if s is not None else full_idx[i] for i, s in enumerate(sel)]
            else:
                it = iter(idx)
                src = [s if s is not None else next(it) for s in sel]
            acc = fn(acc, at(t, src))
        return acc
    return make(out, value)


def softmax(t, axis, log=False):
    mx = reduce(t, [axis], max, -math.inf, keep=True)
    sh = ew(lambda x, m: x - m, t, broadcast(mx, t[0]))
    ex = ew(math.exp, sh)
    sm = broadcast(reduce(ex, [axis], lambda a, b: a + b, 0.0, keep=True), t[0])
    if log:
        return ew(lambda s, z: s - math.log(z), sh, sm)
    return ew(lambda e, z: e / z, ex, sm)


def conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x[0]
    o, cg, kh, kw = w[0]
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups

    def value(idx):
        ni, oi, y, xx = idx
        acc = b[1][oi] if b else 0.0
        for ci in range(cg):
            for i in range(kh):
                for j in range(kw):
                    yy = y * stride[0] + i * dil[0] - pad[0]
                    xj = xx * stride[1] + j * dil[1] - pad[1]
                    if 0 <= yy < h and 0 <= xj < wd:
                        acc += at(x, [ni, (oi // og) * cg + ci, yy, xj]) * \
                            at(w, [oi, ci, i, j])
        return acc
    return make([n, o, oh, ow], value)


def pool(x, k, stride, pad, is_max):
    n, c, h, wd = x[0]
    oh = (h + 2 * pad[0] - k[0]) // stride[0] + 1
    ow = (wd + 2 * pad[1] - k[1]) // stride[1] + 1

    def value(idx):
        ni, ci, y, xx = idx
        vals = []
        for i in range(k[0]):
            for j in range(k[1]):
                yy, xj = y * stride[0] + i - pad[0], xx * stride[1] + j - pad[1]
                inside = 0 <= yy < h and 0 <= xj < wd
                vals.append(at(x, [ni, ci, yy, xj]) if inside else
                            (-math.inf if is_max else 0.0))
        return max(vals) if is_max else sum(vals) / (k[0] * k[1])
    return make([n, c, oh, ow], value)


def sigmoid(v):
    return 1 / (1 + math.exp(-v))


# --- locus.random: Philox4x32-10 ----------------------------------------------

M32 = 0xFFFFFFFF


def philox(ctr, key):
    """Philox4x32-10 (Salmon et al., SC'11; Random123, cuRAND): four 32-bit
    outputs of a counter of four words and a key of two."""
    c = list(ctr)
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M32, (p0 >> 32) ^ c[3] ^ k1, p0 & M32]
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c


# Random123's known answers (kat_vectors, philox4x32 10 rounds).
assert philox([0, 0, 0, 0], [0, 0]) == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
assert philox([M32] * 4, [M32, M32]) == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
assert philox([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
              [0xa4093822, 0x299f31d0]) == [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]


def random_ref(shape, seed, step, normal):
    """locus.random: element i from the counter (i, step) and key seed."""
    key = [seed & M32, (seed >> 32) & M32]
    out = []
    for i in range(numel(shape)):
        x = philox([i & M32, i >> 32, step & M32, (step >> 32) & M32], key)
        u0, u1 = (x[0] >> 8) * 2.0 ** -24, (x[1] >> 8) * 2.0 ** -24
        out.append(math.sqrt(-2 * math.log(1 - u0)) * math.cos(2 * math.pi * u1)
                   if normal else u0)
    return (list(shape), out)


# Cases whose result must come out bit for bit (Philox's uniform numbers).
EXACT = set()


def adam_ref(p, g, m, v, t, lr, b1, b2, eps, decay, decoupled):
    """torch.optim.Adam (AdamW when `decoupled`), one step at step count t:
    the new param, m and v stacked along axis 0."""
    out = ([], [], [])
    for pi, gi, mi, vi in zip(p[1], g[1], m[1], v[1]):
        if decoupled:
            pi = pi * (1 - lr * decay)
        else:
            gi = gi + decay * pi
        mi = b1 * mi + (1 - b1) * gi
        vi = b2 * vi + (1 - b2) * gi * gi
        step_size = lr / (1 - b1 ** t)
        denom = math.sqrt(vi) / math.sqrt(1 - b2 ** t) + eps
        for lst, val in zip(out, (pi - step_size * mi / denom, mi, vi)):
            lst.append(val)
    return ([3 * p[0][0]] + p[0][1:], out[0] + out[1] + out[2])


# --- cases -------------------------------------------------------------------
# (name, [(name, tensor, elem)], ir lines producing %r, reference)

def cases():
    a, b = rand([3, 5]), rand([3, 5])
    pos = rand([3, 5], 0.1, 3.0)
    yield "add", [("a", a), ("b", b)], "%r = locus.add %a, %b : tensor<3x5xf32>", ew(lambda x, y: x + y, a, b)
    yield "sub", [("a", a), ("b", b)], "%r = locus.sub %a, %b : tensor<3x5xf32>", ew(lambda x, y: x - y, a, b)
    yield "mul", [("a", a), ("b", b)], "%r = locus.mul %a, %b : tensor<3x5xf32>", ew(lambda x, y: x * y, a, b)
    yield "div", [("a", a), ("p", pos)], "%r = locus.div %a, %p : tensor<3x5xf32>", ew(lambda x, y: x / y, a, pos)
    yield "maximum", [("a", a), ("b", b)], "%r = locus.maximum %a, %b : tensor<3x5xf32>", ew(max, a, b)
    yield "neg", [("a", a)], "%r = locus.neg %a : tensor<3x5xf32>", ew(lambda x: -x, a)
    yield "exp", [("a", a)], "%r = locus.exp %a : tensor<3x5xf32>", ew(math.exp, a)
    yield "log", [("p", pos)], "%r = locus.log %p : tensor<3x5xf32>", ew(math.log, pos)
    yield "sqrt", [("p", pos)], "%r = locus.sqrt %p : tensor<3x5xf32>", ew(math.sqrt, pos)
    yield "relu", [("a", a)], "%r = locus.relu %a : tensor<3x5xf32>", ew(lambda x: max(x, 0.0), a)
    yield "sigmoid", [("a", a)], "%r = locus.sigmoid %a : tensor<3x5xf32>", ew(sigmoid, a)
    yield "tanh", [("a", a)], "%r = locus.tanh %a : tensor<3x5xf32>", ew(math.tanh, a)
    yield "erf", [("a", a)], "%r = locus.erf %a : tensor<3x5xf32>", ew(math.erf, a)
    yield "sin", [("a", a)], "%r = locus.sin %a : tensor<3x5xf32>", ew(math.sin, a)
    yield "cos", [("a", a)], "%r = locus.cos %a : tensor<3x5xf32>", ew(math.cos, a)
    yield "abs", [("a", a)], "%r = locus.abs %a : tensor<3x5xf32>", ew(abs, a)
    yield "rsqrt", [("p", pos)], "%r = locus.rsqrt %p : tensor<3x5xf32>", ew(lambda x: 1 / math.sqrt(x), pos)
    yield "reciprocal", [("p", pos)], "%r = locus.reciprocal %p : tensor<3x5xf32>", ew(lambda x: 1 / x, pos)
    yield "silu", [("a", a)], "%r = locus.silu %a : tensor<3x5xf32>", ew(lambda x: x * sigmoid(x), a)
    yield "gelu", [("a", a)], "%r = locus.gelu %a : tensor<3x5xf32>", ew(gelu, a)
    yield "gelu_tanh", [("a", a)], "%r = locus.gelu %a {tanh} : tensor<3x5xf32>", ew(gelu_tanh, a)
    yield "pow2", [("a", a)], "%r = locus.pow %a, 2.0 : tensor<3x5xf32>", ew(lambda x: x * x, a)
    yield "pow1.5", [("p", pos)], "%r = locus.pow %p, 1.5 : tensor<3x5xf32>", ew(lambda x: x ** 1.5, pos)
    for pred, fn in [("eq", lambda x, y: x == y), ("ne", lambda x, y: x != y),
                     ("lt", lambda x, y: x < y), ("le", lambda x, y: x <= y),
                     ("gt", lambda x, y: x > y), ("ge", lambda x, y: x >= y)]:
        same = (a[0], [x if i % 3 else y for i, (x, y) in enumerate(zip(a[1], b[1]))])
        yield "cmp_" + pred, [("a", a), ("s", same)], (
            "%m = locus.cmp {0}, %a, %s : tensor<3x5xf32>\n"
            "%r = locus.select %m, %a, %s : tensor<3x5xi1>, tensor<3x5xf32>".format(pred)), \
            ew(lambda x, y: x if fn(x, y) else y, a, same)
    yield "minimum", [("a", a), ("b", b)], "%r = locus.minimum %a, %b : tensor<3x5xf32>", ew(min, a, b)
    # Eighths in [-4, 4] (halves and integers among them), exact in every
    # float type, so the steps land where the reference's do.
    eighths = ([3, 5], [rng.randrange(-32, 33) / 8 for _ in range(15)])
    eighths[1][:4] = [2.5, -2.5, 0.5, -1.5]  # halves round to even
    yield "floor", [("e", eighths)], "%r = locus.floor %e : tensor<3x5xf32>", ew(math.floor, eighths)
    yield "ceil", [("e", eighths)], "%r = locus.ceil %e : tensor<3x5xf32>", ew(math.ceil, eighths)
    yield "round", [("e", eighths)], "%r = locus.round %e : tensor<3x5xf32>", ew(round, eighths)
    divisors = ([3, 5], [rng.choice([-1, 1]) * rng.randrange(2, 9) / 4 for _ in range(15)])
    yield "fmod", [("e", eighths), ("d", divisors)], "%r = locus.fmod %e, %d : tensor<3x5xf32>", ew(math.fmod, eighths, divisors)
    ia = ([3, 5], [rng.randrange(-4, 5) for _ in range(15)])
    ib = ([3, 5], [rng.randrange(-4, 5) for _ in range(15)])
    for pred, fn in [("eq", lambda x, y: x == y), ("lt", lambda x, y: x < y),
                     ("ge", lambda x, y: x >= y)]:
        yield "cmp_i64_" + pred, [("i", ia, "i64"), ("j", ib, "i64")], (
            "%m = locus.cmp {0}, %i, %j : tensor<3x5xi64>\n"
            "%s = locus.select %m, %i, %j : tensor<3x5xi1>, tensor<3x5xi64>\n"
            "%r = locus.cast %s to f32 : tensor<3x5xi64> -> tensor<3x5xf32>".format(pred)), \
            ew(lambda x, y: float(x if fn(x, y) else y), ia, ib)
    withzeros = (a[0], [0.0 if i % 4 == 0 else x for i, x in enumerate(a[1])])
    yield "cast_f32_i64", [("a", a)], (
        "%i = locus.cast %a to i64 : tensor<3x5xf32> -> tensor<3x5xi64>\n"
        "%r = locus.cast %i to f32 : tensor<3x5xi64> -> tensor<3x5xf32>"), \
        ew(lambda x: float(int(x)), a)
    yield "cast_f32_i1", [("z", withzeros)], (
        "%m = locus.cast %z to i1 : tensor<3x5xf32> -> tensor<3x5xi1>\n"
        "%r = locus.cast %m to f32 : tensor<3x5xi1> -> tensor<3x5xf32>"), \
        ew(lambda x: 1.0 if x != 0 else 0.0, withzeros)
    yield "cast_i64_i1_i64", [("i", ia, "i64")], (
        "%m = locus.cast %i to i1 : tensor<3x5xi64> -> tensor<3x5xi1>\n"
        "%k = locus.cast %m to i64 : tensor<3x5xi1> -> tensor<3x5xi64>\n"
        "%r = locus.cast %k to f32 : tensor<3x5xi64> -> tensor<3x5xf32>"), \
        ew(lambda x: 1.0 if x != 0 else 0.0, ia)
    # i32: from f32 (truncation), to and from i64 (sign kept; i64 -> i32
    # wraps to the low 32 bits), to i1, and compared signed.
    scaled = ew(lambda x: representable(x * 1000.0), a)
    big = ([3, 5], [rng.choice([-1, 1]) * rng.randrange(0, 1 << 40) for _ in range(15)])
    yield "cast_f32_i32", [("a", scaled)], (
        "%i = locus.cast %a to i32 : tensor<3x5xf32> -> tensor<3x5xi32>\n"
        "%r = locus.cast %i to f32 : tensor<3x5xi32> -> tensor<3x5xf32>"), \
        ew(lambda x: float(int(x)), scaled)
    yield "cast_i64_i32_wraps", [("i", big, "i64")], (
        "%n = locus.cast %i to i32 : tensor<3x5xi64> -> tensor<3x5xi32>\n"
        "%w = locus.cast %n to i64 : tensor<3x5xi32> -> tensor<3x5xi64>\n"
        "%r = locus.cast %w to f32 : tensor<3x5xi64> -> tensor<3x5xf32>"), \
        ew(lambda x: representable(float(((x + (1 << 31)) % (1 << 32)) - (1 << 31))), big)
    yield "cast_i32_i1_i32", [("i", ia, "i32")], (
        "%m = locus.cast %i to i1 : tensor<3x5xi32> -> tensor<3x5xi1>\n"
        "%k = locus.cast %m to i32 : tensor<3x5xi1> -> tensor<3x5xi32>\n"
        "%r = locus.cast %k to f32 : tensor<3x5xi32> -> tensor<3x5xf32>"), \
        ew(lambda x: 1.0 if x != 0 else 0.0, ia)
    yield "cmp_i32_lt", [("i", ia, "i32"), ("j", ib, "i32")], (
        "%m = locus.cmp lt, %i, %j : tensor<3x5xi32>\n"
        "%s = locus.select %m, %i, %j : tensor<3x5xi1>, tensor<3x5xi32>\n"
        "%r = locus.cast %s to f32 : tensor<3x5xi32> -> tensor<3x5xf32>"), \
        ew(lambda x, y: float(x if x < y else y), ia, ib)
    table = rand([6, 4])
    # In range: an index outside is an error of the run (locus-check-indices).
    ids = ([2, 3], [0, 5, 2, 1, 4, 3])
    yield "gather_embedding", [("w", table), ("ids", ids, "i64")], \
        "%r = locus.gather %w, %ids axis 0 : tensor<6x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>", \
        make([2, 3, 4], lambda idx: at(table, [ids[1][idx[0] * 3 + idx[1]], idx[2]])
             if 0 <= ids[1][idx[0] * 3 + idx[1]] < 6 else 0.0)
    cube = rand([3, 5, 2])
    sel = ([4], [4, 0, 0, 2])
    yield "gather_axis1", [("c", cube), ("ix", sel, "i64")], \
        "%r = locus.gather %c, %ix axis 1 : tensor<3x5x2xf32>, tensor<4xi64> -> tensor<3x4x2xf32>", \
        make([3, 4, 2], lambda idx: at(cube, [idx[0], sel[1][idx[1]], idx[2]]))
    # torch.gather: each element's own index (no index check: an index
    # outside the axis gives zero).
    picks = ([3, 2, 2], [4, 0, 1, 7, 2, 2, -1, 3, 0, 4, 1, 1])
    yield "gather_elements", [("c", cube), ("ix", picks, "i64")], \
        "%r = locus.gather_elements %c, %ix axis 1 : tensor<3x5x2xf32>, tensor<3x2x2xi64> -> tensor<3x2x2xf32>", \
        make([3, 2, 2], lambda idx: at(cube, [idx[0], at(picks, idx), idx[2]])
             if 0 <= at(picks, idx) < 5 else 0.0)
    bias = rand([5])
    yield "broadcast", [("b", bias)], "%r = locus.broadcast %b [2, 3, 5] : tensor<5xf32> -> tensor<2x3x5xf32>", broadcast(bias, [2, 3, 5])
    col = rand([3, 1])
    yield "broadcast_ones", [("c", col)], "%r = locus.broadcast %c [3, 4] : tensor<3x1xf32> -> tensor<3x4xf32>", broadcast(col, [3, 4])
    m1, m2 = rand([4, 6]), rand([6, 3])
    yield "matmul", [("m1", m1), ("m2", m2)], "%r = locus.matmul %m1, %m2 : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>", matmul(m1, m2)
    b1, b2 = rand([2, 3, 4, 5]), rand([2, 3, 5, 2])
    yield "matmul_batched", [("b1", b1), ("b2", b2)], "%r = locus.matmul %b1, %b2 : tensor<2x3x4x5xf32>, tensor<2x3x5x2xf32> -> tensor<2x3x4x2xf32>", matmul(b1, b2)
    x, w, bb = rand([4, 7]), rand([3, 7]), rand([3])
    lin = make([4, 3], lambda i: bb[1][i[1]] + sum(at(x, [i[0], k]) * at(w, [i[1], k]) for k in range(7)))
    yield "linear", [("x", x), ("w", w), ("bb", bb)], "%r = locus.linear %x, %w, %bb : tensor<4x7xf32>, tensor<3x7xf32>, tensor<3xf32> -> tensor<4x3xf32>", lin
    x3 = rand([2, 2, 7])
    lin3 = make([2, 2, 3], lambda i: sum(at(x3, [i[0], i[1], k]) * at(w, [i[2], k]) for k in range(7)))
    yield "linear_3d_nobias", [("x3", x3), ("w", w)], "%r = locus.linear %x3, %w : tensor<2x2x7xf32>, tensor<3x7xf32> -> tensor<2x2x3xf32>", lin3
    t = rand([2, 3, 4])
    yield "transpose", [("t", t)], "%r = locus.transpose %t [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>", make([4, 2, 3], lambda i: at(t, [i[1], i[2], i[0]]))
    yield "reshape", [("t", t)], "%r = locus.reshape %t [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>", ([6, 4], t[1])
    c1, c2 = rand([2, 3]), rand([2, 2])
    yield "concat", [("c1", c1), ("c2", c2)], "%r = locus.concat %c1, %c2 axis 1 : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>", make([2, 5], lambda i: at(c1, i) if i[1] < 3 else at(c2, [i[0], i[1] - 3]))
    s = rand([4, 10])
    yield "slice", [("s", s)], "%r = locus.slice %s offsets [1, 2] sizes [3, 3] strides [1, 3] : tensor<4x10xf32> -> tensor<3x3xf32>", make([3, 3], lambda i: at(s, [1 + i[0], 2 + 3 * i[1]]))
    yield "sum", [("t", t)], "%r = locus.sum %t axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>", reduce(t, [1], lambda p, q: p + q, 0.0)
    yield "sum_keepdim", [("t", t)], "%r = locus.sum %t axes [0, 2] keepdim : tensor<2x3x4xf32> -> tensor<1x3x1xf32>", reduce(t, [0, 2], lambda p, q: p + q, 0.0, keep=True)
    yield "mean", [("t", t)], "%r = locus.mean %t axes [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>", ew(lambda v: v / 4, reduce(t, [2], lambda p, q: p + q, 0.0))
    yield "max", [("t", t)], "%r = locus.max %t axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>", reduce(t, [0, 1, 2], max, -math.inf)
    yield "softmax", [("t", t)], "%r = locus.softmax %t axis 2 : tensor<2x3x4xf32>", softmax(t, 2)
    yield "softmax_axis0", [("t", t)], "%r = locus.softmax %t axis 0 : tensor<2x3x4xf32>", softmax(t, 0)
    yield "log_softmax", [("t", t)], "%r = locus.log_softmax %t axis 1 : tensor<2x3x4xf32>", softmax(t, 1, log=True)
    # A non-splat constant: on cuda, a global of the kernel's PTX module.
    k5 = ([5], [0.5, -1.25, 2.0, 3.5, -0.75])
    yield "constant_operand", [("a", a)], ("%k = locus.constant dense<[0.5, -1.25, 2.0, 3.5, -0.75]> : tensor<5xf32>\n"
        "%kb = locus.broadcast %k [3, 5] : tensor<5xf32> -> tensor<3x5xf32>\n"
        "%r = locus.mul %a, %kb : tensor<3x5xf32>"), ew(lambda x, y: x * y, a, broadcast(k5, [3, 5]))
    # Rows of 32 or more: on cuda, one block per row with gpu.all_reduce.
    lt = rand([3, 5, 70])
    yield "sum_long_rows", [("lt", lt)], "%r = locus.sum %lt axes [2] : tensor<3x5x70xf32> -> tensor<3x5xf32>", reduce(lt, [2], lambda p, q: p + q, 0.0)
    yield "max_long_middle", [("lt", lt)], "%r = locus.max %lt axes [0, 2] : tensor<3x5x70xf32> -> tensor<5xf32>", reduce(lt, [0, 2], max, -math.inf)
    # Few outputs, many elements: on cuda, several blocks per output and a
    # second launch over their partials (positive values, so that a sum's
    # relative tolerance is meaningful).
    st = rand([4, 9000], 0.0, 1.0)
    yield "sum_split_full", [("st", st)], "%r = locus.sum %st axes [0, 1] : tensor<4x9000xf32> -> tensor<f32>", reduce(st, [0, 1], lambda p, q: p + q, 0.0)
    mt = rand([2, 20000], 0.0, 1.0)
    yield "mean_split_rows", [("mt", mt)], "%r = locus.mean %mt axes [1] : tensor<2x20000xf32> -> tensor<2xf32>", ew(lambda v: v / 20000, reduce(mt, [1], lambda p, q: p + q, 0.0))
    bt = rand([6, 3, 40, 40])
    yield "max_split_columns", [("bt", bt)], "%r = locus.max %bt axes [0, 2, 3] : tensor<6x3x40x40xf32> -> tensor<3xf32>", reduce(bt, [0, 2, 3], max, -math.inf)
    # Outputs contiguous (a bias gradient, a sum over rows): on cuda, a
    # thread per output; with few outputs, the rows split over grid.y into
    # partials and a second launch (prime sizes: a short last share).
    ct = rand([1000, 37], 0.0, 1.0)
    yield "sum_columns_split", [("ct", ct)], "%r = locus.sum %ct axes [0] : tensor<1000x37xf32> -> tensor<37xf32>", reduce(ct, [0], lambda p, q: p + q, 0.0)
    c3 = rand([64, 3, 50])
    yield "max_columns_3d", [("c3", c3)], "%r = locus.max %c3 axes [0] : tensor<64x3x50xf32> -> tensor<3x50xf32>", reduce(c3, [0], max, -math.inf)
    # Many short rows: on cuda, a warp per row, 8 per block (1100 rows: the
    # last block half empty).
    wt = rand([1100, 45])
    yield "sum_warp_rows", [("wt", wt)], "%r = locus.sum %wt axes [1] : tensor<1100x45xf32> -> tensor<1100xf32>", reduce(wt, [1], lambda p, q: p + q, 0.0)
    yield "min_warp_rows", [("wt", wt)], "%r = locus.min %wt axes [1] keepdim : tensor<1100x45xf32> -> tensor<1100x1xf32>", reduce(wt, [1], min, math.inf, True)
    yield "min", [("t", t)], "%r = locus.min %t axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>", reduce(t, [1], min, math.inf)
    yield "min_keepdim", [("t", t)], "%r = locus.min %t axes [0, 2] keepdim : tensor<2x3x4xf32> -> tensor<1x3x1xf32>", reduce(t, [0, 2], min, math.inf, True)
    yield "softmax_long", [("lt", lt)], "%r = locus.softmax %lt axis 2 : tensor<3x5x70xf32>", softmax(lt, 2)
    yield "log_softmax_long", [("lt", lt)], "%r = locus.log_softmax %lt axis 2 : tensor<3x5x70xf32>", softmax(lt, 2, log=True)
    p, q = rand([10, 3]), rand([10, 3])
    yield "mse_mean", [("p", p), ("q", q)], "%r = locus.mse_loss %p, %q mean : tensor<10x3xf32> -> tensor<f32>", ([], [sum((u - v) ** 2 for u, v in zip(p[1], q[1])) / 30])
    yield "mse_sum", [("p", p), ("q", q)], "%r = locus.mse_loss %p, %q sum : tensor<10x3xf32> -> tensor<f32>", ([], [sum((u - v) ** 2 for u, v in zip(p[1], q[1]))])
    logits = rand([6, 4], -3, 3)
    labels = ([6], [rng.randrange(4) for _ in range(6)])
    lsm = softmax(logits, 1, log=True)
    yield "cross_entropy", [("lg", logits), ("lb", labels, "i64")], "%r = locus.cross_entropy %lg, %lb mean : tensor<6x4xf32>, tensor<6xi64> -> tensor<f32>", ([], [-sum(at(lsm, [n, labels[1][n]]) for n in range(6)) / 6])
    cx, cw, cb = rand([2, 3, 7, 7]), rand([4, 3, 3, 3]), rand([4])
    yield "conv2d_pad1", [("cx", cx), ("cw", cw), ("cb", cb)], "%r = locus.conv2d %cx, %cw, %cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x7x7xf32>", conv2d(cx, cw, cb, [1, 1], [1, 1], [1, 1], 1)
    ix, iw, ib = rand([2, 4, 6, 5]), rand([5, 4, 3, 3]), rand([5])
    yield "conv2d_stride2_pad1", [("ix", ix), ("iw", iw), ("ib", ib)], "%r = locus.conv2d %ix, %iw, %ib stride [2, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x4x6x5xf32>, tensor<5x4x3x3xf32>, tensor<5xf32> -> tensor<2x5x3x5xf32>", conv2d(ix, iw, ib, [2, 1], [1, 1], [1, 1], 1)
    gx, gw = rand([1, 4, 9, 8]), rand([6, 2, 3, 2])
    yield "conv2d_groups_stride_dilation", [("gx", gx), ("gw", gw)], "%r = locus.conv2d %gx, %gw stride [2, 1] padding [1, 0] dilation [1, 2] groups 2 : tensor<1x4x9x8xf32>, tensor<6x2x3x2xf32> -> tensor<1x6x5x6xf32>", conv2d(gx, gw, None, [2, 1], [1, 0], [1, 2], 2)
    px = rand([2, 3, 6, 6])
    bx, bw, bb2 = rand([3, 4, 2, 5]), rand([4], 0.5, 2.0), rand([4])

    def batch_norm(x, wt, bt, eps=1e-5):
        count = numel(x[0]) // x[0][1]
        mean = ew(lambda v: v / count, reduce(x, [0, 2, 3], lambda p, q: p + q, 0.0))
        sq = make(x[0], lambda i: (at(x, i) - at(mean, [i[1]])) ** 2)
        var = ew(lambda v: v / count, reduce(sq, [0, 2, 3], lambda p, q: p + q, 0.0))
        return make(x[0], lambda i: (at(x, i) - at(mean, [i[1]])) /
                    math.sqrt(at(var, [i[1]]) + eps) * at(wt, [i[1]]) + at(bt, [i[1]]))
    yield "batch_norm_train", [("bx", bx), ("bw", bw), ("bb2", bb2)], (
        "%r, %mean, %var = locus.batch_norm_train %bx, %bw, %bb2 eps 1.0e-05 : tensor<3x4x2x5xf32>, tensor<4xf32>"), \
        batch_norm(bx, bw, bb2)
    yield "max_pool2d", [("px", px)], "%r = locus.max_pool2d %px kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>", pool(px, [2, 2], [2, 2], [0, 0], True)
    yield "max_pool2d_pad", [("px", px)], "%r = locus.max_pool2d %px kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>", pool(px, [3, 3], [2, 2], [1, 1], True)
    yield "avg_pool2d_pad", [("px", px)], "%r = locus.avg_pool2d %px kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>", pool(px, [3, 3], [2, 2], [1, 1], False)
    # Fused patterns (one kernel each after --locus-fuse-kernels).
    relu = lambda v: max(v, 0.0)
    yield "fused_linear_relu", [("x", x), ("w", w), ("bb", bb)], (
        "%l = locus.linear %x, %w, %bb : tensor<4x7xf32>, tensor<3x7xf32>, tensor<3xf32> -> tensor<4x3xf32>\n"
        "%r = locus.relu %l : tensor<4x3xf32>"), ew(relu, lin)
    yield "fused_chain", [("a", a), ("b", b)], (
        "%0 = locus.mul %a, %b : tensor<3x5xf32>\n"
        "%1 = locus.tanh %0 : tensor<3x5xf32>\n"
        "%2 = locus.sub %1, %a : tensor<3x5xf32>\n"
        "%r = locus.exp %2 : tensor<3x5xf32>"), \
        ew(lambda x, y: math.exp(math.tanh(x * y) - x), a, b)
    yield "fused_tree", [("a", a)], (
        "%0 = locus.add %a, %a : tensor<3x5xf32>\n"
        "%1 = locus.sigmoid %0 : tensor<3x5xf32>\n"
        "%2 = locus.neg %0 : tensor<3x5xf32>\n"
        "%r = locus.maximum %1, %2 : tensor<3x5xf32>"), \
        ew(lambda x: max(sigmoid(2 * x), -2 * x), a)
    yield "fused_broadcast_bias", [("a", a), ("b5", bias)], (
        "%0 = locus.broadcast %b5 [3, 5] : tensor<5xf32> -> tensor<3x5xf32>\n"
        "%1 = locus.add %a, %0 : tensor<3x5xf32>\n"
        "%r = locus.relu %1 : tensor<3x5xf32>"), \
        ew(lambda x, y: relu(x + y), a, broadcast(bias, [3, 5]))
    yield "fused_matmul_epilogue", [("m1", m1), ("m2", m2)], (
        "%0 = locus.matmul %m1, %m2 : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>\n"
        "%r = locus.tanh %0 : tensor<4x3xf32>"), ew(math.tanh, matmul(m1, m2))
    yield "fused_conv_relu", [("cx", cx), ("cw", cw), ("cb", cb)], (
        "%0 = locus.conv2d %cx, %cw, %cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x7x7xf32>\n"
        "%r = locus.relu %0 : tensor<2x4x7x7xf32>"), \
        ew(relu, conv2d(cx, cw, cb, [1, 1], [1, 1], [1, 1], 1))
    # Convolutions that alone read each other's results: compiled, those
    # values stay NHWC between the calls (--locus-conv-layouts), the first
    # read as input and residual, the second pooled.
    w1, b1 = rand([16, 3, 3, 3], -0.5, 0.5), rand([16])
    w2, w3 = rand([16, 16, 3, 3], -0.2, 0.2), rand([5, 16, 3, 3], -0.2, 0.2)
    h1 = ew(relu, conv2d(cx, w1, b1, [1, 1], [1, 1], [1, 1], 1))
    h2 = pool(ew(lambda a, b: relu(a + b), conv2d(h1, w2, None, [1, 1], [1, 1], [1, 1], 1), h1),
              [2, 2], [2, 2], [0, 0], True)
    yield "fused_conv_chain", [("cx", cx), ("w1", w1), ("b1", b1), ("w2", w2), ("w3", w3)], (
        "%0 = locus.conv2d %cx, %w1, %b1 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x7x7xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<2x16x7x7xf32>\n"
        "%1 = locus.relu %0 : tensor<2x16x7x7xf32>\n"
        "%2 = locus.conv2d %1, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x16x7x7xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x7x7xf32>\n"
        "%3 = locus.add %2, %1 : tensor<2x16x7x7xf32>\n"
        "%4 = locus.relu %3 : tensor<2x16x7x7xf32>\n"
        "%5 = locus.max_pool2d %4 kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x16x7x7xf32> -> tensor<2x16x3x3xf32>\n"
        "%r = locus.conv2d %5, %w3 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x16x3x3xf32>, tensor<5x16x3x3xf32> -> tensor<2x5x3x3xf32>"), \
        conv2d(h2, w3, None, [1, 1], [1, 1], [1, 1], 1)
    # Two ResNet blocks of 16 channels: under bf16 each block's output is
    # its call's f32 result and that result's rounding side by side (the
    # next block's residual and its first convolution's input), NHWC
    # between the calls, the convolutions on oneDNN's bf16 kernels where
    # the CPU has them.
    rx = rand([2, 16, 6, 6])
    rw = [rand([16, 16, 3, 3], -0.2, 0.2) for _ in range(4)]
    rb = rand([16])

    def block(v, wa, wb):
        h = ew(relu, conv2d(v, wa, rb, [1, 1], [1, 1], [1, 1], 1))
        return ew(lambda a, b: relu(a + b), conv2d(h, wb, None, [1, 1], [1, 1], [1, 1], 1), v)
    t16 = "tensor<2x16x6x6xf32>"
    conv = ("locus.conv2d %%%s, %%%s%s stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : "
            + t16 + ", tensor<16x16x3x3xf32>%s -> " + t16)
    text = ""
    for k, (v, out) in enumerate([("rx", "y1"), ("y1", "r")]):
        wa, wb = "rw%d" % (2 * k), "rw%d" % (2 * k + 1)
        text += ("%%h%d = " % k + conv % (v, wa, ", %rb", ", tensor<16xf32>") + "\n"
                 "%%g%d = locus.relu %%h%d : %s\n" % (k, k, t16)
                 + "%%c%d = " % k + conv % ("g%d" % k, wb, "", "") + "\n"
                 "%%a%d = locus.add %%c%d, %%%s : %s\n" % (k, k, v, t16)
                 + "%%%s = locus.relu %%a%d : %s" % (out, k, t16)
                 + ("\n" if k == 0 else ""))
    yield "fused_conv_blocks", [("rx", rx), ("rb", rb)] + [("rw%d" % i, w) for i, w in enumerate(rw)], \
        text, block(block(rx, rw[0], rw[1]), rw[2], rw[3])
    yield "fused_reduce_epilogue", [("t", t)], (
        "%0 = locus.sum %t axes [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>\n"
        "%1 = locus.mul %0, %0 : tensor<2x3xf32>\n"
        "%r = locus.sqrt %1 : tensor<2x3xf32>"), \
        ew(abs, reduce(t, [2], lambda p, q: p + q, 0.0))
    # Counter-based random numbers: the same bits as the Python Philox.
    for name, dist, shape, seed, st in [
            ("random_uniform", "uniform", [4, 5], 42, 3.0),
            ("random_uniform_3d_big_seed", "uniform", [2, 3, 7], -6917529027641081857, 123456.0),
            ("random_uniform_scalar", "uniform", [], 7, 0.0),
            ("random_normal", "normal", [6, 7], 42, 3.0),
            ("random_normal_big_step", "normal", [3, 40], 1 << 40, 16777215.0)]:
        if dist == "uniform":
            EXACT.add(name)
        yield name, [("t", ([], [st]))], (
            "%%r = locus.random %s %s seed %d step %%t : tensor<f32> -> %s" % (
                dist, shape, seed, ttype(shape))), \
            random_ref(shape, seed & ((1 << 64) - 1), int(st), dist == "normal")
    # Dropout's pattern (p = 0.25): one kernel, the draw fused with its mask.
    EXACT.add("fused_dropout")
    dx = rand([8, 16])
    u = random_ref([8, 16], 99, 5, False)
    scale = struct_f32(1 / struct_f32(0.75))
    yield "fused_dropout", [("dx", dx), ("t", ([], [5.0]))], (
        "%u = locus.random uniform [8, 16] seed 99 step %t : tensor<f32> -> tensor<8x16xf32>\n"
        "%p = locus.constant dense<0.25> : tensor<f32>\n"
        "%pb = locus.broadcast %p [8, 16] : tensor<f32> -> tensor<8x16xf32>\n"
        "%k = locus.cmp ge, %u, %pb : tensor<8x16xf32>\n"
        "%s = locus.constant dense<SCALE> : tensor<f32>\n"
        "%sb = locus.broadcast %s [8, 16] : tensor<f32> -> tensor<8x16xf32>\n"
        "%z = locus.constant dense<0.0> : tensor<f32>\n"
        "%zb = locus.broadcast %z [8, 16] : tensor<f32> -> tensor<8x16xf32>\n"
        "%n = locus.select %k, %sb, %zb : tensor<8x16xi1>, tensor<8x16xf32>\n"
        "%r = locus.mul %dx, %n : tensor<8x16xf32>").replace("SCALE", "%.9e" % scale), \
        ew(lambda x, v: struct_f32(x * scale) if v >= 0.25 else 0.0, dx, u)
    # Adam's step (weight decay as L2 in the gradient) and AdamW's
    # (decoupled: the parameter scaled first); all three results, stacked.
    ap, ag, am = rand([3, 5]), rand([3, 5]), rand([3, 5])
    av = rand([3, 5], 0.0, 2.0)
    for name, decoupled in [("adam_l2", False), ("adam_decoupled", True)]:
        yield name, [("ap", ap), ("ag", ag), ("am", am), ("av", av), ("t", ([], [3.0])),
                     ("lr", ([], [0.05]))], (
            "%%o:3 = locus.adam %%ap, %%ag, %%am, %%av, %%t lr %%lr betas [0.8, 0.99] "
            "eps 1.0e-06 weight_decay 0.1%s : tensor<3x5xf32>, tensor<f32>\n"
            "%%r = locus.concat %%o#0, %%o#1, %%o#2 axis 0 : (tensor<3x5xf32>, "
            "tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<9x5xf32>" % (
                " decoupled" if decoupled else "")), \
            adam_ref(ap, ag, am, av, 3, 0.05, 0.8, 0.99, 1e-6, 0.1, decoupled)
    # Rows in one launch on cuda (--locus-map-to-gpu's row groups): rows
    # longer than a warp's 512 on a block (1500: the last of 6 elements a
    # thread past the end), exactly 16 a thread (4096), one past the
    # longest group (4097: the one-op strategies), rows of one; a layer
    # norm over the last axis of a 3-D tensor, one kernel on cuda.
    br = rand([5, 1500], -4, 4)
    yield "softmax_block_rows", [("br", br)], "%r = locus.softmax %br axis 1 : tensor<5x1500xf32>", softmax(br, 1)
    fr = rand([3, 4096], -4, 4)
    yield "log_softmax_rows_4096", [("fr", fr)], "%r = locus.log_softmax %fr axis 1 : tensor<3x4096xf32>", softmax(fr, 1, log=True)
    pr = rand([2, 4097], -4, 4)
    yield "softmax_rows_4097", [("pr", pr)], "%r = locus.softmax %pr axis 1 : tensor<2x4097xf32>", softmax(pr, 1)
    # Rows past 4096, and 128 of them: a block each, looping over the
    # columns and computing exp again where it is read.
    lr = rand([128, 4100], -4, 4)
    yield "softmax_looped_rows", [("lr", lr)], "%r = locus.softmax %lr axis 1 : tensor<128x4100xf32>", softmax(lr, 1)
    one = rand([7, 1])
    yield "softmax_rows_of_one", [("one", one)], "%r = locus.softmax %one axis 1 : tensor<7x1xf32>", softmax(one, 1)
    lx, le = rand([3, 13, 96]), rand([3, 13, 1], 1e-3, 1e-2)
    lg, lbe = rand([96], 0.5, 1.5), rand([96])
    mean = reduce(lx, [2], lambda p, q: p + q, 0.0, keep=True)
    mean = ([3, 13, 1], [v / 96 for v in mean[1]])
    cen = ew(lambda x, m: x - m, lx, broadcast(mean, [3, 13, 96]))
    var = reduce(ew(lambda c: c * c, cen), [2], lambda p, q: p + q, 0.0, keep=True)
    inv = ([3, 13, 1], [1 / math.sqrt(v / 96 + e) for v, e in zip(var[1], le[1])])
    norm = ew(lambda c, s: c * s, cen, broadcast(inv, [3, 13, 96]))
    t3, r3 = "tensor<3x13x96xf32>", "tensor<3x13x1xf32>"
    yield "layer_norm_rows", [("lx", lx), ("le", le), ("lg", lg), ("lbe", lbe)], "\n".join([
        "%m = locus.mean %lx axes [2] keepdim : {t} -> {r}",
        "%mb = locus.broadcast %m [3, 13, 96] : {r} -> {t}",
        "%c = locus.sub %lx, %mb : {t}",
        "%c2 = locus.mul %c, %c : {t}",
        "%v = locus.mean %c2 axes [2] keepdim : {t} -> {r}",
        "%ve = locus.add %v, %le : {r}",
        "%rs = locus.rsqrt %ve : {r}",
        "%rb = locus.broadcast %rs [3, 13, 96] : {r} -> {t}",
        "%n = locus.mul %c, %rb : {t}",
        "%gb = locus.broadcast %lg [3, 13, 96] : tensor<96xf32> -> {t}",
        "%bb = locus.broadcast %lbe [3, 13, 96] : tensor<96xf32> -> {t}",
        "%s = locus.mul %n, %gb : {t}",
        "%r = locus.add %s, %bb : {t}"]).format(t=t3, r=r3), \
        ew(lambda n, g, b: n * g + b, norm, broadcast(lg, [3, 13, 96]), broadcast(lbe, [3, 13, 96]))


def run(name, inputs, ir, ref):
    lines = ["func.func private @printMemrefF32(tensor<*xf32>)",
             "func.func @main() {"]
    for entry in inputs:
        var, tensor = entry[0], entry[1]
        elem = entry[2] if len(entry) > 2 else "f32"
        lines.append("  %%%s = arith.constant %s" % (var, dense(tensor, elem)))
    lines += ["  " + l for l in ir.split("\n")]
    if name in EXACT:
        return run_exact(name, lines, ref)
    lines.append("  %%u = tensor.cast %%r : %s to tensor<*xf32>" % ttype(ref[0]))
    lines.append("  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()")
    lines += ["  return", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, name + ".mlir")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        llvm = subprocess.run([OPT, src, HOST_PIPELINE],
                              capture_output=True, text=True)
        if llvm.returncode:
            return "locus-opt failed:\n" + llvm.stderr[-2000:]
        out = subprocess.run(
            [LLVM + "/bin/mlir-cpu-runner", "-e", "main",
             "-entry-point-result=void", "-shared-libs=%s/lib/libmlir_runner_utils.so,"
             "%s/lib/libmlir_c_runner_utils.so,%s" % (LLVM, LLVM, RUNTIME_LIB)],
            input=llvm.stdout, capture_output=True, text=True)
        if out.returncode:
            return "mlir-cpu-runner failed:\n" + out.stderr[-2000:]
    data = out.stdout.split("data =", 1)[1]
    got = [float(v) for v in re.findall(r"-?(?:inf|nan|[0-9.]+(?:e[-+]?[0-9]+)?)", data)]
    want = ref[1]
    if len(got) != len(want):
        return "got %d values, want %d:\n%s" % (len(got), len(want), out.stdout)
    worst = 0.0
    for g, w in zip(got, want):
        err = abs(g - w) / (1e-5 + 1e-4 * abs(w))
        worst = max(worst, err)
    if worst > 1.0:
        return "mismatch (worst error %.2f of tolerance):\ngot  %s\nwant %s" % (
            worst, got[:16], [round(v, 6) for v in want[:16]])
    return None


def lower_and_run(name, lines):
    """The output of `lines` (a module) through the host pipeline and
    mlir-cpu-runner, or (None, why it failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, name + ".mlir")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        llvm = subprocess.run([OPT, src, HOST_PIPELINE],
                              capture_output=True, text=True)
        if llvm.returncode:
            return None, "locus-opt failed:\n" + llvm.stderr[-2000:]
        out = subprocess.run(
            [LLVM + "/bin/mlir-cpu-runner", "-e", "main",
             "-entry-point-result=void", "-shared-libs=%s/lib/libmlir_runner_utils.so,"
             "%s/lib/libmlir_c_runner_utils.so,%s" % (LLVM, LLVM, RUNTIME_LIB)],
            input=llvm.stdout, capture_output=True, text=True)
        if out.returncode:
            return None, "mlir-cpu-runner failed:\n" + out.stderr[-2000:]
    return out.stdout, None


def f32_bits(v):
    import struct
    return struct.unpack("<i", struct.pack("<f", v))[0]


def run_exact(name, lines, ref):
    """A case that must match bit for bit: its result's bits, as i32 through
    printMemrefI32 (printMemrefF32 rounds to 6 digits)."""
    shape = ref[0]
    rank = len(shape)
    maps = "affine_map<(%s) -> (%s)>" % ((", ".join("d%d" % i for i in range(rank)),) * 2)
    lines = ["func.func private @printMemrefI32(tensor<*xi32>)"] + lines[1:]
    lines += ["  %%e = tensor.empty() : %s" % ttype(shape, "i32"),
              "  %%bits = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]}"
              " ins(%%r : %s) outs(%%e : %s) {" % (
                  maps, maps, ", ".join(['"parallel"'] * rank), ttype(shape),
                  ttype(shape, "i32")),
              "  ^bb0(%a: f32, %o: i32):",
              "    %b = arith.bitcast %a : f32 to i32",
              "    linalg.yield %b : i32",
              "  } -> %s" % ttype(shape, "i32"),
              "  %%u = tensor.cast %%bits : %s to tensor<*xi32>" % ttype(shape, "i32"),
              "  call @printMemrefI32(%u) : (tensor<*xi32>) -> ()",
              "  return", "}"]
    stdout, problem = lower_and_run(name, lines)
    if problem:
        return problem
    got = [int(v) for v in re.findall(r"-?[0-9]+", stdout.split("data =", 1)[1])]
    want = [f32_bits(v) for v in ref[1]]
    if got != want:
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        return "not bit-exact: %d of %d values differ (first at %s)" % (
            len(bad) + abs(len(got) - len(want)), len(want), bad[:1])
    return None


NPY = {"f32": ("<f4", "f"), "i64": ("<i8", "q"), "i32": ("<i4", "i"),
       "f16": ("<f2", "e"), "bf16": ("<u2", "H")}  # bf16: its bits


def write_npy(path, tensor, elem):
    import struct
    shape, data = tensor
    descr, fmt = NPY[elem]
    if elem == "bf16":
        data = [bf16_bits(v) for v in data]
    dims = "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(data), fmt), *data))


def read_npy_f32(path):
    """A float .npy's values: f32, f16, or bf16 bits (locus-run's <u2)."""
    import struct
    raw = open(path, "rb").read()
    length = struct.unpack("<H", raw[8:10])[0]
    header = raw[10:10 + length].decode()
    body = raw[10 + length:]
    if "<u2" in header:
        return [from_bf16_bits(b) for b in struct.unpack("<%dH" % (len(body) // 2), body)]
    if "<f2" in header:
        return list(struct.unpack("<%de" % (len(body) // 2), body))
    return list(struct.unpack("<%df" % (len(body) // 4), body))


# --- 16-bit runs --------------------------------------------------------------

PRECISION_NOTE = """With --compiled --precision=bf16 (or f16), every case's
float tensors are of that type: inputs, results and every value between
(`tensor<...xf32>` becomes `tensor<...xbf16>`), random inputs are values of
the type, and the reference is computed from them in double. Each op then
computes in f32 and rounds its result once (--locus-widen-16bit; products
accumulate in f32), so a case of n float ops is within n roundings of the
reference: |got - want| <= n * u * |want| + (n - 1) * u * scale, u the
type's unit roundoff (2^-8 for bf16, 2^-11 for f16) and scale the largest
|want| of the case (an op's rounding error is relative to its own result,
which a later op may cancel), plus f32's own error in sums. Cases with ops defined on f32 only (state, optimizers,
random numbers, one_hot, all_reduce) are left out, and said so."""

UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}
F32_ONLY = ("locus.random", "locus.adam", "locus.sgd", "locus.one_hot",
            "locus.all_reduce", "locus.state")


F32_RESULT = ("locus.mse_loss", "locus.cross_entropy", "locus.count")


def in_precision(text):
    """`text` (a line) with its f32 tensor types in the run's 16-bit type,
    and cast targets too. Losses keep their f32 results."""
    text = re.sub(r"\bto f32\b", "to " + PRECISION, text)
    head, arrow, result = text.partition("->")
    if any(op in text for op in F32_RESULT):
        return re.sub(r"(tensor<(?:[0-9?]+x)*)f32>", r"\g<1>%s>" % PRECISION,
                      head) + arrow + result
    return re.sub(r"(tensor<(?:[0-9?]+x)*)f32>", r"\g<1>%s>" % PRECISION, text)


def result_type(lines, ref):
    """The type of %r in the 16-bit run: f32 where a loss gives it."""
    made = [line for line in lines if line.lstrip().startswith("%r = ")]
    keeps = made and any(op in made[0] for op in F32_RESULT)
    return ttype(ref[0], "f32" if keeps else PRECISION)


def float_ops(ir):
    """How many ops of `ir` have a float result (the roundings on a path)."""
    return max(1, sum(1 for line in ir.split("\n")
                      if re.search(r"-> tensor<[^>]*f32>\s*$|: tensor<[^>]*f32>\s*$", line)
                      and "locus." in line and "locus.cmp" not in line))


def tolerance(ir, want):
    """The largest |got - want| a value may have: f32's for f32 runs, else
    PRECISION_NOTE's bound."""
    if not PRECISION:
        return lambda w: 1e-5 + 2e-5 * abs(w)
    return rounding_bound(float_ops(ir), want)


def rounding_bound(n, want):
    """PRECISION_NOTE's bound for n roundings, plus f32's own error in
    the ops' sums (2^-18 of the scale: 64 terms' worth)."""
    u = UNIT_ROUNDOFF[PRECISION]
    scale = max([abs(w) for w in want] or [0.0])
    return lambda w: 1e-6 + 2.0 ** -18 * scale + n * u * abs(w) + (n - 1) * u * scale


VARIANTS = [("cpu", ["--devices=cpu", "--policy=cpu"]),
            ("sim", ["--devices=cpu,cuda:0", "--policy=prefer-gpu"])]


def elem_of(entry):
    """An input's element type in this run."""
    elem = entry[2] if len(entry) > 2 else "f32"
    return PRECISION if PRECISION and elem == "f32" else elem


def run_compiled(name, inputs, ir, ref):
    lines = ["locus.graph @%s {" % re.sub(r"\W", "_", name)]
    for entry in inputs:
        lines.append('  %%%s = locus.input "%s" : %s' % (
            entry[0], entry[0], ttype(entry[1][0], elem_of(entry))))
    lines += ["  " + l for l in ir.split("\n")]
    lines.append('  locus.output "r" = %%r : %s' % ttype(ref[0]))
    lines.append("}")
    if PRECISION:
        lines = [in_precision(line) for line in lines[:-2]] + [
            '  locus.output "r" = %%r : %s' % result_type(lines, ref)] + lines[-1:]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "graph.mlir")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        args = []
        for entry in inputs:
            path = os.path.join(tmp, entry[0] + ".npy")
            write_npy(path, entry[1], elem_of(entry))
            args += ["--input", "%s=%s" % (entry[0], path)]
        for variant, flags in VARIANTS:
            artifact = os.path.join(tmp, variant + ".locus")
            ptxdir = os.path.join(tmp, "ptx")
            extra = ["--emit-ptx=" + ptxdir] if variant == "sim" else []
            # The exported artifact must run on other x86-64 machines.
            cpu = "--cpu=x86-64-v3" if EXPORT else "--cpu=native"
            comp = subprocess.run(
                [os.path.join(BUILD, "tools", "locus-compile"), src, "-o",
                 artifact, cpu] + flags + extra, capture_output=True, text=True)
            if comp.returncode:
                return "locus-compile (%s) failed:\n%s" % (variant, comp.stderr)
            if variant == "sim":
                modules = sorted(os.listdir(ptxdir)) if os.path.isdir(ptxdir) else []
                # (A product alone is a cuBLAS call: a launcher, no PTX.)
                if "kernels with launchers" not in comp.stdout:
                    return "no kernel was compiled for cuda:0"
                for module in modules if PTXAS else []:
                    check = subprocess.run(
                        [PTXAS, "-arch=sm_90", os.path.join(ptxdir, module),
                         "-o", os.devnull], capture_output=True, text=True)
                    if check.returncode:
                        return "ptxas rejects %s:\n%s" % (module, check.stderr)
                    PTX_MODULES[0] += 1
                if EXPORT:
                    case = os.path.join(EXPORT, name)
                    os.makedirs(case, exist_ok=True)
                    shutil.copy(artifact, os.path.join(case, "model.locus"))
                    for entry in inputs:
                        shutil.copy(os.path.join(tmp, entry[0] + ".npy"), case)
                    write_npy(os.path.join(case, "expected.npy"), ref, "f32")
                    # The same graph with its inputs made on cuda:0: a step
                    # on the GPU alone, which the runtime replays as a CUDA
                    # graph.
                    on_gpu = os.path.join(tmp, "graph_gpu.mlir")
                    with open(on_gpu, "w") as f:
                        f.write("\n".join(
                            l + " on <cuda:0>" if "locus.input" in l else l
                            for l in lines) + "\n")
                    comp = subprocess.run(
                        [os.path.join(BUILD, "tools", "locus-compile"), on_gpu,
                         "-o", os.path.join(case, "model_gpu_inputs.locus"), cpu,
                         "--devices=cpu,cuda:0", "--policy=strict"],
                        capture_output=True, text=True)
                    if comp.returncode:
                        return "locus-compile (inputs on cuda:0) failed:\n" + comp.stderr
            outdir = os.path.join(tmp, variant)
            os.mkdir(outdir)
            out = subprocess.run(
                [os.path.join(BUILD, "tools", "locus-run"), artifact, "--quiet",
                 "--save-outputs", outdir] + args, capture_output=True, text=True)
            if out.returncode:
                return "locus-run (%s) failed:\n%s" % (variant, out.stderr)
            if variant == "sim" and "on sim" not in out.stdout:
                return "the sim variant did not run on sim:\n" + out.stdout
            got = read_npy_f32(os.path.join(outdir, "r.npy"))
            want = ref[1]
            if len(got) != len(want):
                return "%s: got %d values, want %d" % (variant, len(got), len(want))
            if name in EXACT and got != want:
                bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
                return "%s: not bit-exact: %d of %d values differ (first: %s, want %s)" % (
                    variant, len(bad), len(want), got[bad[0]], want[bad[0]])
            tol = tolerance(ir, want)
            # A NaN (where the reference has none) is infinitely wrong: a
            # comparison with it is false, and max() would pass it.
            worst = max([0.0 if g == w else abs(g - w) / tol(w)
                         if g == g else math.inf
                         for g, w in zip(got, want)] or [0])
            WORST[name] = max(WORST.get(name, 0.0), worst)
            if worst > 1.0:
                return "%s: mismatch (worst error %.2f of tolerance):\ngot  %s\nwant %s" % (
                    variant, worst, got[:16], [round(v, 6) for v in want[:16]])
    return None


def main():
    if PRECISION and (not COMPILED or PRECISION not in UNIT_ROUNDOFF):
        print("--precision takes bf16 or f16, with --compiled")
        return 2
    passed = failed = skipped = 0
    for name, inputs, ir, ref in cases():
        if ONLY not in name:
            continue
        if not COMPILED and name.startswith("fused_"):
            continue
        if PRECISION and any(op in ir for op in F32_ONLY):
            skipped += 1
            print("skip %s: an op of it is defined on f32 only" % name)
            continue
        problem = (run_compiled if COMPILED else run)(name, inputs, ir, ref)
        if problem:
            failed += 1
            print("FAIL %s: %s" % (name, problem))
        else:
            passed += 1
            print("ok   %s (%d values%s)" % (name, len(ref[1]), (
                ", worst %.2f of tolerance" % WORST[name]) if PRECISION else ""))
    print("%d passed, %d failed" % (passed, failed) +
          (", %d left out (f32 only) in %s" % (skipped, PRECISION) if PRECISION else ""))
    if COMPILED:
        print("ptxas -arch=sm_90: %s" % (
            "%d PTX modules accepted (%s)" % (PTX_MODULES[0], PTXAS) if PTXAS
            else "not run: no CUDA toolkit (ptxas) found"))
    return 1 if failed else 0


if MAIN:
    sys.exit(main())
