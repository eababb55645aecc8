#!/usr/bin/env python3
"""Every gradient of --locus-autodiff against central finite differences of a
double-precision reference, on random inputs.

Each case is one forward op f of random inputs. The graph computes
loss = sum(f(inputs) * R) for a random R (so every output element weighs in
differently), `locus-opt --locus-autodiff='wrt=...'` adds the gradients of
the loss with respect to the f32 inputs, and locus-compile + locus-run (the
runtime alone) compute them in float32: once with every op on the CPU and
once under prefer-gpu with cuda:0 on the sim device, whose kernels are also
compiled to PTX and checked with `ptxas -arch=sm_90`. The reference is
(L(x + h e_i) - L(x - h e_i)) / 2h with h = 1e-6, every L in Python floats
(double precision) by the reference ops of check_lowering.py, so its error
(about 1e-9) is far below float32's.

Tolerance: |got - want| <= 1e-4 + 1e-3 * |want|, float32 accumulation over
at most a few hundred terms of order 1.

With --export DIR, each case's artifact with its kernels on cuda:0
(compiled for x86-64-v3), its inputs and the finite-difference gradients
(<input>.grad.expected.npy) go to DIR/<case>/: what tools/gpu-check runs
on a real GPU (runtime_tests' Cuda.EveryGradientMatchesOnTheGpu).

With --precision=bf16|f16, every float tensor is of that type and the
tolerance is the rounding bound of check_lowering.py's PRECISION_NOTE
(see tolerance() below).

  check_gradients.py <build dir> [--precision=bf16|f16] [--export DIR]
                     [case-name-substring]
"""
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_lowering as cl  # noqa: E402

# Also a module: check_dynamic.py runs these cases at dynamic sizes.
MAIN = __name__ == "__main__"
BUILD = sys.argv[1] if MAIN else cl.BUILD
ARGS = sys.argv[2:] if MAIN else []
EXPORT = None
if "--export" in ARGS:
    EXPORT = ARGS[ARGS.index("--export") + 1]
    del ARGS[ARGS.index("--export"):ARGS.index("--export") + 2]
for _arg in list(ARGS):
    if _arg.startswith("--precision="):
        cl.PRECISION = _arg.split("=", 1)[1]
        ARGS.remove(_arg)
ONLY = ARGS[0] if ARGS else ""
cl.BUILD = BUILD
rng = random.Random(611)
H = 1e-6


def rand(shape, low=-2.0, high=2.0):
    return (list(shape), [cl.representable(rng.uniform(low, high))
                          for _ in range(cl.numel(shape))])


def cases():
    """(name, inputs, ir producing %r, reference f(*input tensors), wrt)."""
    a, b = rand([3, 5]), rand([3, 5])
    pos = rand([3, 5], 0.5, 3.0)
    ew = cl.ew
    yield "add", [("a", a), ("b", b)], "%r = locus.add %a, %b : tensor<3x5xf32>", lambda a, b: ew(lambda x, y: x + y, a, b)
    yield "sub", [("a", a), ("b", b)], "%r = locus.sub %a, %b : tensor<3x5xf32>", lambda a, b: ew(lambda x, y: x - y, a, b)
    yield "mul", [("a", a), ("b", b)], "%r = locus.mul %a, %b : tensor<3x5xf32>", lambda a, b: ew(lambda x, y: x * y, a, b)
    yield "div", [("a", a), ("p", pos)], "%r = locus.div %a, %p : tensor<3x5xf32>", lambda a, p: ew(lambda x, y: x / y, a, p)
    yield "maximum", [("a", a), ("b", b)], "%r = locus.maximum %a, %b : tensor<3x5xf32>", lambda a, b: ew(max, a, b)
    yield "minimum", [("a", a), ("b", b)], "%r = locus.minimum %a, %b : tensor<3x5xf32>", lambda a, b: ew(min, a, b)
    # Divisors away from 0, where fmod is smooth in both operands.
    d = ([3, 5], [v if v > 0.4 or v < -0.4 else v + 1.0 for v in b[1]])
    yield "fmod", [("a", a), ("d", d)], "%r = locus.fmod %a, %d : tensor<3x5xf32>", lambda a, d: ew(math.fmod, a, d)
    # Steps: a zero gradient, as PyTorch's (the finite differences are 0
    # away from the steps; the inputs avoid them).
    for step, fn in [("floor", math.floor), ("ceil", math.ceil), ("round", round)]:
        yield step, [("a", a)], "%%r = locus.%s %%a : tensor<3x5xf32>" % step, lambda a, fn=fn: ew(fn, a)
    yield "neg", [("a", a)], "%r = locus.neg %a : tensor<3x5xf32>", lambda a: ew(lambda x: -x, a)
    yield "exp", [("a", a)], "%r = locus.exp %a : tensor<3x5xf32>", lambda a: ew(math.exp, a)
    yield "log", [("p", pos)], "%r = locus.log %p : tensor<3x5xf32>", lambda p: ew(math.log, p)
    yield "sqrt", [("p", pos)], "%r = locus.sqrt %p : tensor<3x5xf32>", lambda p: ew(math.sqrt, p)
    yield "relu", [("a", a)], "%r = locus.relu %a : tensor<3x5xf32>", lambda a: ew(lambda x: max(x, 0.0), a)
    yield "sigmoid", [("a", a)], "%r = locus.sigmoid %a : tensor<3x5xf32>", lambda a: ew(cl.sigmoid, a)
    yield "tanh", [("a", a)], "%r = locus.tanh %a : tensor<3x5xf32>", lambda a: ew(math.tanh, a)
    yield "erf", [("a", a)], "%r = locus.erf %a : tensor<3x5xf32>", lambda a: ew(math.erf, a)
    yield "sin", [("a", a)], "%r = locus.sin %a : tensor<3x5xf32>", lambda a: ew(math.sin, a)
    yield "cos", [("a", a)], "%r = locus.cos %a : tensor<3x5xf32>", lambda a: ew(math.cos, a)
    yield "abs", [("a", a)], "%r = locus.abs %a : tensor<3x5xf32>", lambda a: ew(abs, a)
    yield "rsqrt", [("p", pos)], "%r = locus.rsqrt %p : tensor<3x5xf32>", lambda p: ew(lambda x: 1 / math.sqrt(x), p)
    yield "reciprocal", [("p", pos)], "%r = locus.reciprocal %p : tensor<3x5xf32>", lambda p: ew(lambda x: 1 / x, p)
    yield "silu", [("a", a)], "%r = locus.silu %a : tensor<3x5xf32>", lambda a: ew(lambda x: x * cl.sigmoid(x), a)
    yield "gelu", [("a", a)], "%r = locus.gelu %a : tensor<3x5xf32>", lambda a: ew(cl.gelu, a)
    yield "gelu_tanh", [("a", a)], "%r = locus.gelu %a {tanh} : tensor<3x5xf32>", lambda a: ew(cl.gelu_tanh, a)
    yield "pow2", [("a", a)], "%r = locus.pow %a, 2.0 : tensor<3x5xf32>", lambda a: ew(lambda x: x * x, a)
    yield "pow1.5", [("p", pos)], "%r = locus.pow %p, 1.5 : tensor<3x5xf32>", lambda p: ew(lambda x: x ** 1.5, p)
    yield "cmp_select", [("a", a), ("b", b)], (
        "%m = locus.cmp gt, %a, %b : tensor<3x5xf32>\n"
        "%r = locus.select %m, %a, %b : tensor<3x5xi1>, tensor<3x5xf32>"), \
        lambda a, b: ew(lambda x, y: x if x > y else y, a, b)
    bias = rand([5])
    yield "broadcast", [("v", bias)], "%r = locus.broadcast %v [2, 3, 5] : tensor<5xf32> -> tensor<2x3x5xf32>", lambda v: cl.broadcast(v, [2, 3, 5])
    col = rand([3, 1])
    yield "broadcast_ones", [("c", col)], "%r = locus.broadcast %c [2, 3, 4] : tensor<3x1xf32> -> tensor<2x3x4xf32>", lambda c: cl.broadcast(c, [2, c[0][0], 4])
    m1, m2 = rand([4, 6]), rand([6, 3])
    yield "matmul", [("m1", m1), ("m2", m2)], "%r = locus.matmul %m1, %m2 : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>", cl.matmul
    b1, b2 = rand([2, 3, 4, 5]), rand([2, 3, 5, 2])
    yield "matmul_batched", [("b1", b1), ("b2", b2)], "%r = locus.matmul %b1, %b2 : tensor<2x3x4x5xf32>, tensor<2x3x5x2xf32> -> tensor<2x3x4x2xf32>", cl.matmul
    x, w, bb = rand([4, 7]), rand([3, 7]), rand([3])

    def linear(x, w, bb=None):
        shape = x[0][:-1] + [w[0][0]]
        return cl.make(shape, lambda i: (bb[1][i[-1]] if bb else 0.0) + sum(
            cl.at(x, list(i[:-1]) + [k]) * cl.at(w, [i[-1], k]) for k in range(w[0][1])))
    yield "linear", [("x", x), ("w", w), ("bb", bb)], "%r = locus.linear %x, %w, %bb : tensor<4x7xf32>, tensor<3x7xf32>, tensor<3xf32> -> tensor<4x3xf32>", linear
    x3 = rand([2, 2, 7])
    yield "linear_3d_nobias", [("x3", x3), ("w", w)], "%r = locus.linear %x3, %w : tensor<2x2x7xf32>, tensor<3x7xf32> -> tensor<2x2x3xf32>", linear
    t = rand([2, 3, 4])
    yield "transpose", [("t", t)], "%r = locus.transpose %t [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>", lambda t: cl.make([t[0][2], t[0][0], t[0][1]], lambda i: cl.at(t, [i[1], i[2], i[0]]))
    yield "reshape", [("t", t)], "%r = locus.reshape %t [6, 4] : tensor<2x3x4xf32> -> tensor<6x4xf32>", lambda t: ([t[0][0] * 3, 4], t[1])
    c1, c2 = rand([2, 3]), rand([2, 2])
    yield "concat", [("c1", c1), ("c2", c2)], "%r = locus.concat %c1, %c2 axis 1 : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>", lambda c1, c2: cl.make([c1[0][0], 5], lambda i: cl.at(c1, i) if i[1] < 3 else cl.at(c2, [i[0], i[1] - 3]))
    s = rand([4, 10])
    yield "slice", [("s", s)], "%r = locus.slice %s offsets [1, 2] sizes [3, 3] strides [1, 3] : tensor<4x10xf32> -> tensor<3x3xf32>", lambda s: cl.make([3, 3], lambda i: cl.at(s, [1 + i[0], 2 + 3 * i[1]]))
    add = lambda p, q: p + q
    yield "sum", [("t", t)], "%r = locus.sum %t axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>", lambda t: cl.reduce(t, [1], add, 0.0)
    yield "sum_keepdim", [("t", t)], "%r = locus.sum %t axes [0, 2] keepdim : tensor<2x3x4xf32> -> tensor<1x3x1xf32>", lambda t: cl.reduce(t, [0, 2], add, 0.0, keep=True)
    yield "mean", [("t", t)], "%r = locus.mean %t axes [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>", lambda t: ew(lambda v: v / 4, cl.reduce(t, [2], add, 0.0))
    yield "max", [("t", t)], "%r = locus.max %t axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>", lambda t: cl.reduce(t, [1], max, -math.inf)
    yield "max_all", [("t", t)], "%r = locus.max %t axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>", lambda t: cl.reduce(t, [0, 1, 2], max, -math.inf)
    yield "min", [("t", t)], "%r = locus.min %t axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>", lambda t: cl.reduce(t, [0, 2], min, math.inf)
    table = rand([5, 3])
    # In range: an index outside is an error of the run (locus-check-indices).
    ids = ([2, 3], [0, 4, 2, 2, 1, 4])
    yield "gather_embedding", [("w", table), ("ids", ids, "i64")], \
        "%r = locus.gather %w, %ids axis 0 : tensor<5x3xf32>, tensor<2x3xi64> -> tensor<2x3x3xf32>", \
        lambda w, i: cl.make(i[0] + [3], lambda idx: cl.at(w, [cl.at(i, idx[:2]), idx[2]]))
    cube = rand([2, 4, 3])
    sel = ([5], [3, 0, 3, 1, 3])
    yield "gather_axis1", [("c", cube), ("ix", sel, "i64")], \
        "%r = locus.gather %c, %ix axis 1 : tensor<2x4x3xf32>, tensor<5xi64> -> tensor<2x5x3xf32>", \
        lambda c, i: cl.make([c[0][0], 5, 3], lambda idx: cl.at(c, [idx[0], i[1][idx[1]], idx[2]]))
    # torch.gather: an index per element, repeats adding up in the gradient.
    picks = ([2, 5, 3], [(7 * k + k // 3) % 4 for k in range(30)])
    yield "gather_elements", [("c", cube), ("ix", picks, "i64")], \
        "%r = locus.gather_elements %c, %ix axis 1 : tensor<2x4x3xf32>, tensor<2x5x3xi64> -> tensor<2x5x3xf32>", \
        lambda c, i: cl.make(i[0], lambda idx: cl.at(c, [idx[0], cl.at(i, idx), idx[2]]))
    # One index: the gradient is a select, not a scatter (nothing adds up).
    yield "gather_one", [("c", cube), ("ix", ([1], [2]), "i64")], \
        "%r = locus.gather %c, %ix axis 1 : tensor<2x4x3xf32>, tensor<1xi64> -> tensor<2x1x3xf32>", \
        lambda c, i: cl.make([c[0][0], 1, 3], lambda idx: cl.at(c, [idx[0], i[1][idx[1]], idx[2]]))
    yield "softmax", [("t", t)], "%r = locus.softmax %t axis 2 : tensor<2x3x4xf32>", lambda t: cl.softmax(t, 2)
    yield "softmax_axis0", [("t", t)], "%r = locus.softmax %t axis 0 : tensor<2x3x4xf32>", lambda t: cl.softmax(t, 0)
    yield "log_softmax", [("t", t)], "%r = locus.log_softmax %t axis 1 : tensor<2x3x4xf32>", lambda t: cl.softmax(t, 1, log=True)
    p, q = rand([10, 3]), rand([10, 3])
    yield "mse_mean", [("p", p), ("q", q)], "%r = locus.mse_loss %p, %q mean : tensor<10x3xf32> -> tensor<f32>", lambda p, q: ([], [sum((u - v) ** 2 for u, v in zip(p[1], q[1])) / len(p[1])])
    yield "mse_sum", [("p", p), ("q", q)], "%r = locus.mse_loss %p, %q sum : tensor<10x3xf32> -> tensor<f32>", lambda p, q: ([], [sum((u - v) ** 2 for u, v in zip(p[1], q[1]))])
    logits = rand([6, 4], -3, 3)
    labels = ([6], [rng.randrange(4) for _ in range(6)])

    def cross_entropy(lg, lb, mean):
        lsm = cl.softmax(lg, 1, log=True)
        total = -sum(cl.at(lsm, [n, lb[1][n]]) for n in range(lg[0][0]))
        return ([], [total / lg[0][0] if mean else total])
    yield "cross_entropy", [("lg", logits), ("lb", labels, "i64")], "%r = locus.cross_entropy %lg, %lb mean : tensor<6x4xf32>, tensor<6xi64> -> tensor<f32>", lambda lg, lb: cross_entropy(lg, lb, True)
    yield "cross_entropy_sum", [("lg", logits), ("lb", labels, "i64")], "%r = locus.cross_entropy %lg, %lb sum : tensor<6x4xf32>, tensor<6xi64> -> tensor<f32>", lambda lg, lb: cross_entropy(lg, lb, False)
    cx, cw, cb = rand([2, 3, 6, 6]), rand([4, 3, 3, 3]), rand([4])
    yield "conv2d_pad1", [("cx", cx), ("cw", cw), ("cb", cb)], "%r = locus.conv2d %cx, %cw, %cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x6x6xf32>", lambda cx, cw, cb: cl.conv2d(cx, cw, cb, [1, 1], [1, 1], [1, 1], 1)
    ix, iw = rand([1, 2, 7, 5]), rand([3, 2, 3, 2])
    yield "conv2d_stride2_pad1", [("ix", ix), ("iw", iw)], "%r = locus.conv2d %ix, %iw stride [2, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x2x7x5xf32>, tensor<3x2x3x2xf32> -> tensor<1x3x4x6xf32>", lambda ix, iw: cl.conv2d(ix, iw, None, [2, 1], [1, 1], [1, 1], 1)
    gx, gw = rand([1, 4, 9, 8]), rand([6, 2, 3, 2])
    yield "conv2d_groups_stride_dilation", [("gx", gx), ("gw", gw)], "%r = locus.conv2d %gx, %gw stride [2, 1] padding [1, 0] dilation [1, 2] groups 2 : tensor<1x4x9x8xf32>, tensor<6x2x3x2xf32> -> tensor<1x6x5x6xf32>", lambda gx, gw: cl.conv2d(gx, gw, None, [2, 1], [1, 0], [1, 2], 2)
    px = rand([2, 3, 6, 6])
    yield "max_pool2d", [("px", px)], "%r = locus.max_pool2d %px kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>", lambda px: cl.pool(px, [2, 2], [2, 2], [0, 0], True)
    yield "max_pool2d_overlap_pad", [("px", px)], "%r = locus.max_pool2d %px kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>", lambda px: cl.pool(px, [3, 3], [2, 2], [1, 1], True)
    yield "avg_pool2d_pad", [("px", px)], "%r = locus.avg_pool2d %px kernel [3, 3] stride [2, 2] padding [1, 1] : tensor<2x3x6x6xf32> -> tensor<2x3x3x3xf32>", lambda px: cl.pool(px, [3, 3], [2, 2], [1, 1], False)
    # BatchNorm in training: the input's gradient counts the batch
    # statistics' dependence on it (locus.batch_norm_train_grad).
    def batch_norm(x, wt, bt, eps=1e-5):
        shape = x[0]
        axes = [d for d in range(len(shape)) if d != 1]
        count = cl.numel(shape) // shape[1]
        mean = cl.reduce(x, axes, lambda p, q: p + q, 0.0)
        mean = ew(lambda v: v / count, mean)
        sq = cl.make(shape, lambda i: (cl.at(x, i) - cl.at(mean, [i[1]])) ** 2)
        var = ew(lambda v: v / count, cl.reduce(sq, axes, lambda p, q: p + q, 0.0))
        return cl.make(shape, lambda i: (cl.at(x, i) - cl.at(mean, [i[1]])) /
                       math.sqrt(cl.at(var, [i[1]]) + eps) * cl.at(wt, [i[1]]) + cl.at(bt, [i[1]]))
    bnx, bnw, bnb = rand([3, 2, 2, 3]), rand([2], 0.5, 2.0), rand([2])
    yield "batch_norm_train", [("bnx", bnx), ("bnw", bnw), ("bnb", bnb)], (
        "%r, %mean, %var = locus.batch_norm_train %bnx, %bnw, %bnb eps 1.0e-05 : tensor<3x2x2x3xf32>, tensor<2xf32>"), \
        batch_norm
    bnl = rand([4, 3, 5])
    bnw3, bnb3 = rand([3], 0.5, 2.0), rand([3])
    yield "batch_norm_train_3d", [("bnl", bnl), ("bnw3", bnw3), ("bnb3", bnb3)], (
        "%r, %mean, %var = locus.batch_norm_train %bnl, %bnw3, %bnb3 eps 1.0e-05 : tensor<4x3x5xf32>, tensor<3xf32>"), \
        batch_norm
    # A chain through several ops: contributions to one value are summed.
    yield "chain_shared", [("a", a), ("b", b)], (
        "%0 = locus.mul %a, %b : tensor<3x5xf32>\n"
        "%1 = locus.tanh %0 : tensor<3x5xf32>\n"
        "%r = locus.add %1, %a : tensor<3x5xf32>"), \
        lambda a, b: ew(lambda x, y: math.tanh(x * y) + x, a, b)
    # A layer norm as the frontend composes it over the last axis: on a GPU
    # its input gradient is one row group and the weight's and bias's
    # gradients, column sums, run side by side in one launch.
    lnx, lnw, lnb = rand([2, 3, 8]), rand([8], 0.5, 2.0), rand([8])

    def layer_norm(x, w, b):
        n, out = x[0][-1], []
        for start in range(0, len(x[1]), n):
            row = x[1][start:start + n]
            m = sum(row) / n
            s = 1.0 / math.sqrt(sum((v - m) ** 2 for v in row) / n + 1e-5)
            out += [(v - m) * s * w[1][k] + b[1][k] for k, v in enumerate(row)]
        return x[0], out
    yield "layer_norm", [("lnx", lnx), ("lnw", lnw), ("lnb", lnb)], (
        "%m = locus.mean %lnx axes [2] keepdim : tensor<2x3x8xf32> -> tensor<2x3x1xf32>\n"
        "%mb = locus.broadcast %m [2, 3, 8] : tensor<2x3x1xf32> -> tensor<2x3x8xf32>\n"
        "%c = locus.sub %lnx, %mb : tensor<2x3x8xf32>\n"
        "%c2 = locus.mul %c, %c : tensor<2x3x8xf32>\n"
        "%v = locus.mean %c2 axes [2] keepdim : tensor<2x3x8xf32> -> tensor<2x3x1xf32>\n"
        "%eps = locus.constant dense<1.0e-05> : tensor<f32>\n"
        "%epsb = locus.broadcast %eps [2, 3, 1] : tensor<f32> -> tensor<2x3x1xf32>\n"
        "%ve = locus.add %v, %epsb : tensor<2x3x1xf32>\n"
        "%rs = locus.rsqrt %ve : tensor<2x3x1xf32>\n"
        "%rb = locus.broadcast %rs [2, 3, 8] : tensor<2x3x1xf32> -> tensor<2x3x8xf32>\n"
        "%nx = locus.mul %c, %rb : tensor<2x3x8xf32>\n"
        "%wb = locus.broadcast %lnw [2, 3, 8] : tensor<8xf32> -> tensor<2x3x8xf32>\n"
        "%nw = locus.mul %nx, %wb : tensor<2x3x8xf32>\n"
        "%bb2 = locus.broadcast %lnb [2, 3, 8] : tensor<8xf32> -> tensor<2x3x8xf32>\n"
        "%r = locus.add %nw, %bb2 : tensor<2x3x8xf32>"), layer_norm
    # A small network: linear, relu, log_softmax, NLL by one_hot weights.
    yield "mlp_cross_entropy", [("x", x), ("w", w), ("bb", bb), ("lb4", ([4], [2, 0, 1, 2]), "i64")], (
        "%h = locus.linear %x, %w, %bb : tensor<4x7xf32>, tensor<3x7xf32>, tensor<3xf32> -> tensor<4x3xf32>\n"
        "%t = locus.tanh %h : tensor<4x3xf32>\n"
        "%r = locus.cross_entropy %t, %lb4 mean : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>"), \
        lambda x, w, bb, lb: ([], [-sum(cl.at(cl.softmax(ew(math.tanh, linear(x, w, bb)), 1, log=True), [n, lb[1][n]]) for n in range(x[0][0])) / x[0][0]])
    # Dropout's pattern: the mask's locus.random has no gradient (the run
    # counter t gets zeros); x gets the mask times 1 / (1 - p).
    dx = rand([4, 6])

    def dropout(x, t):
        u = cl.random_ref(x[0], 77, round(t[1][0]), False)
        return ew(lambda v, r: v * 2.0 if r >= 0.5 else 0.0, x, u)
    yield "dropout", [("dx", dx), ("t", ([], [9.0]))], (
        "%u = locus.random uniform [4, 6] seed 77 step %t : tensor<f32> -> tensor<4x6xf32>\n"
        "%h = locus.constant dense<0.5> : tensor<f32>\n"
        "%hb = locus.broadcast %h [4, 6] : tensor<f32> -> tensor<4x6xf32>\n"
        "%k = locus.cmp ge, %u, %hb : tensor<4x6xf32>\n"
        "%s = locus.constant dense<2.0> : tensor<f32>\n"
        "%sb = locus.broadcast %s [4, 6] : tensor<f32> -> tensor<4x6xf32>\n"
        "%z = locus.constant dense<0.0> : tensor<f32>\n"
        "%zb = locus.broadcast %z [4, 6] : tensor<f32> -> tensor<4x6xf32>\n"
        "%n = locus.select %k, %sb, %zb : tensor<4x6xi1>, tensor<4x6xf32>\n"
        "%r = locus.mul %dx, %n : tensor<4x6xf32>"), dropout


def loss_of(fn, tensors, weights):
    out = fn(*tensors)
    return sum(o * r for o, r in zip(out[1], weights[1]))


def numeric_grad(fn, tensors, index, weights):
    shape, data = tensors[index]
    grad = []
    for i in range(len(data)):
        values = []
        for sign in (1, -1):
            moved = list(data)
            moved[i] = data[i] + sign * H
            args = list(tensors)
            args[index] = (shape, moved)
            values.append(loss_of(fn, args, weights))
        grad.append((values[0] - values[1]) / (2 * H))
    return grad


def check(name, inputs, ir, fn):
    tensors = [entry[1] for entry in inputs]
    out_shape = fn(*tensors)[0]
    weights = rand(out_shape)
    wrt = [entry[0] for entry in inputs if (entry[2] if len(entry) > 2 else "f32") == "f32"]
    lines = ["locus.graph @grad_%s {" % name.replace(".", "_")]
    for entry in inputs:
        lines.append('  %%%s = locus.input "%s" : %s' % (
            entry[0], entry[0], cl.ttype(entry[1][0], cl.elem_of(entry))))
    body = ["  " + line for line in ir.split("\n")]
    if cl.PRECISION:
        body = [cl.in_precision(line) for line in body]
    lines += body
    # The loss's type: the forward result's (f32 for a loss op).
    out_type = cl.result_type(body, (out_shape, [])) if cl.PRECISION else cl.ttype(out_shape)
    elem = out_type[out_type.rindex("x") + 1 if "x" in out_type else 7:-1]
    lines.insert(len(inputs) + 1, '  %%R = locus.input "R" : %s' % out_type)
    rank = len(out_shape)
    lines.append("  %%weighted = locus.mul %%r, %%R : %s" % out_type)
    if rank:
        lines.append("  %%loss = locus.sum %%weighted axes [%s] : %s -> tensor<%s>" % (
            ", ".join(str(d) for d in range(rank)), out_type, elem))
        lines.append('  locus.output "loss" = %%loss : tensor<%s>' % elem)
    else:
        lines.append('  locus.output "loss" = %%weighted : tensor<%s>' % elem)
    lines.append("}")
    want = {v: numeric_grad(fn, tensors, i, weights)
            for i, v in enumerate(entry[0] for entry in inputs) if v in wrt}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "forward.mlir")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        graph = os.path.join(tmp, "train.mlir")
        opt = subprocess.run([os.path.join(BUILD, "tools", "locus-opt"), src,
                              "--locus-autodiff=wrt=" + ",".join(wrt), "-o", graph],
                             capture_output=True, text=True)
        if opt.returncode:
            return "locus-opt --locus-autodiff failed:\n" + opt.stderr
        args = []
        for entry in list(inputs) + [("R", weights, elem)]:
            path = os.path.join(tmp, entry[0] + ".npy")
            cl.write_npy(path, entry[1], elem if entry[0] == "R" else cl.elem_of(entry))
            args += ["--input", "%s=%s" % (entry[0], path)]
        for variant, flags in cl.VARIANTS:
            artifact = os.path.join(tmp, variant + ".locus")
            ptxdir = os.path.join(tmp, "ptx")
            extra = ["--emit-ptx=" + ptxdir] if variant == "sim" else []
            cpu = "--cpu=x86-64-v3" if EXPORT else "--cpu=native"
            comp = subprocess.run([os.path.join(BUILD, "tools", "locus-compile"), graph,
                                   "-o", artifact, cpu] + flags + extra,
                                  capture_output=True, text=True)
            if comp.returncode:
                return "locus-compile (%s) failed:\n%s" % (variant, comp.stderr)
            if variant == "sim" and cl.PTXAS and os.path.isdir(ptxdir):
                for module in sorted(os.listdir(ptxdir)):
                    ptx = subprocess.run([cl.PTXAS, "-arch=sm_90", os.path.join(ptxdir, module),
                                          "-o", os.devnull], capture_output=True, text=True)
                    if ptx.returncode:
                        return "ptxas rejects %s:\n%s" % (module, ptx.stderr)
                    cl.PTX_MODULES[0] += 1
            if EXPORT and variant == "sim":
                case = os.path.join(EXPORT, name)
                os.makedirs(case, exist_ok=True)
                shutil.copy(artifact, os.path.join(case, "model.locus"))
                for entry in list(inputs) + [("R", weights)]:
                    shutil.copy(os.path.join(tmp, entry[0] + ".npy"), case)
                for i, entry in enumerate(inputs):
                    if entry[0] in want:
                        cl.write_npy(os.path.join(case, entry[0] + ".grad.expected.npy"),
                                     (entry[1][0], want[entry[0]]), "f32")
            outdir = os.path.join(tmp, variant)
            os.mkdir(outdir)
            run = subprocess.run([os.path.join(BUILD, "tools", "locus-run"), artifact, "--quiet",
                                  "--save-outputs", outdir] + args, capture_output=True, text=True)
            if run.returncode:
                return "locus-run (%s) failed:\n%s" % (variant, run.stderr)
            for v in wrt:
                got = cl.read_npy_f32(os.path.join(outdir, v + ".grad.npy"))
                ref = want[v]
                if len(got) != len(ref):
                    return "%s d/d%s: got %d values, want %d" % (variant, v, len(got), len(ref))
                tol = tolerance(ir, ref)
                # A NaN is infinitely wrong (max() would pass it).
                worst = max(0.0 if g == r else abs(g - r) / tol(r) if g == g else math.inf
                            for g, r in zip(got, ref))
                cl.WORST[name] = max(cl.WORST.get(name, 0.0), worst)
                if worst > 1.0:
                    return "%s d/d%s: mismatch (worst %.2f of tolerance):\ngot  %s\nwant %s" % (
                        variant, v, worst, [round(g, 6) for g in got[:12]],
                        [round(r, 6) for r in ref[:12]])
    return None


def tolerance(ir, want):
    """f32's tolerance, or in a 16-bit run the rounding bound of
    check_lowering's PRECISION_NOTE for the backward graph: two roundings
    per forward op (its result, which the backward op reads, and the
    gradient the backward op gives) and one for the weighting."""
    if not cl.PRECISION:
        return lambda r: 1e-4 + 1e-3 * abs(r)
    return cl.rounding_bound(2 * cl.float_ops(ir) + 1, want)


def main():
    if cl.PRECISION not in (None, "bf16", "f16"):
        print("--precision takes bf16 or f16")
        return 2
    passed = failed = skipped = 0
    for name, inputs, ir, fn in cases():
        if ONLY not in name:
            continue
        if cl.PRECISION and any(op in ir for op in cl.F32_ONLY):
            skipped += 1
            print("skip %s: an op of it is defined on f32 only" % name)
            continue
        problem = check(name, inputs, ir, fn)
        if problem:
            failed += 1
            print("FAIL %s: %s" % (name, problem))
        else:
            passed += 1
            print("ok   %s%s" % (name, (" (worst %.2f of tolerance)" % cl.WORST[name])
                                    if cl.PRECISION else ""))
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed) + (
        ", %d left out (f32 only) in %s" % (skipped, cl.PRECISION) if cl.PRECISION else ""))
    print("ptxas -arch=sm_90: %s" % (
        "%d PTX modules accepted (%s)" % (cl.PTX_MODULES[0], cl.PTXAS) if cl.PTXAS
        else "not run: no CUDA toolkit (ptxas) found"))
    return 1 if failed else 0


if MAIN:
    sys.exit(main())
