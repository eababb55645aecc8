#!/usr/bin/env python3
"""Every op and gradient case of check_gradients.py with a dynamic
dimension, at three sizes of it: 1, a prime, and the bound.

Each case's graph names one dynamic size `n` (`locus.symbols`) with a
bound B, and its leading input dimension (the batch, or the rows) is `n`
(`locus.dims`); types are sized at B. The graph returns the forward
result r and loss = sum(r * R) for a random R of r's shape at the run's
size, and `locus-opt --locus-autodiff` adds the gradients of the loss
with respect to the f32 inputs. The case is compiled once per variant
(every op on the CPU; prefer-gpu on cpu + cuda:0, cuda:0 on the sim
device, with every PTX module checked by `ptxas -arch=sm_90`), and the one
artifact runs at each size on the first rows of the inputs. Each run's r
and gradients must come back at the run's shape and match the references
of check_gradients.py computed in double at that size: r within
|got - want| <= 1e-5 + 2e-5 |want| (check_lowering's compiled tolerance),
the gradients within 1e-4 + 1e-3 |want| of central finite differences.

Forward-only cases beside them cover casts, integer compares and selects,
normal draws and a constant broadcast to the dynamic shape.

  check_dynamic.py <build dir> [case-name-substring]
"""
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_lowering as cl  # noqa: E402

BUILD = sys.argv[1]
ONLY = sys.argv[2] if len(sys.argv) > 2 else ""
cl.BUILD = BUILD
import check_gradients as cg  # noqa: E402

rng = random.Random(39)

# The bound of each case's dynamic size; 8 unless the reference is costly.
BOUNDS = {"matmul_batched": 3, "conv2d_pad1": 3, "conv2d_stride2_pad1": 3,
          "conv2d_groups_stride_dilation": 3, "max_pool2d": 3,
          "max_pool2d_overlap_pad": 3, "avg_pool2d_pad": 3,
          "batch_norm_train": 5, "batch_norm_train_3d": 5}
# Cases whose dynamic inputs are not those with the first input's leading
# dimension.
DYNAMIC = {"gather_embedding": ["ids"]}
# Cases whose ops compile with static shapes only: with dynamic sizes the
# compile must refuse them at the op, naming it (the frontend records
# torch.gather as a one-hot product there).
STATIC_ONLY = {"gather_elements": "'locus.gather_elements' op"}


def sizes(bound):
    """1, the largest prime below the bound (or the bound itself), the bound."""
    prime = max([p for p in range(2, bound) if all(p % q for q in range(2, p))] or [bound])
    return sorted({1, prime, bound})


def affine(dims):
    """An affine map over s0 of dims: ints, or ("n", k) for k * n."""
    return "affine_map<()[s0] -> (%s)>" % ", ".join(
        str(d) if isinstance(d, int) else ("s0" if d[1] == 1 else "s0 * %d" % d[1])
        for d in dims)


def at_size(dims, size):
    return [d if isinstance(d, int) else d[1] * size for d in dims]


def special(name, bound):
    """The cases whose dynamic form is not a rename of the leading size:
    (inputs, input dims, ir) or None."""
    b = bound
    f = lambda shape: cl.ttype(shape)  # noqa: E731
    if name == "broadcast":
        v = cg.rand([b, 5])
        ir = ("%%r = locus.broadcast %%v [2, %d, 5] {locus.dims = %s} : %s -> %s"
              % (b, affine([2, ("n", 1), 5]), f([b, 5]), f([2, b, 5])))
        return [("v", v)], {"v": [("n", 1), 5]}, ir, lambda v: cl.broadcast(v, [2, v[0][0], 5])
    if name == "broadcast_ones":
        c = cg.rand([b, 1])
        ir = ("%%r = locus.broadcast %%c [2, %d, 4] {locus.dims = %s} : %s -> %s"
              % (b, affine([2, ("n", 1), 4]), f([b, 1]), f([2, b, 4])))
        return [("c", c)], {"c": [("n", 1), 1]}, ir, None
    if name == "linear_3d_nobias":
        # Rows of 8 at the bound 8: a reshape's own rule could put n in
        # either leading dimension of the input's gradient.
        x3, w = cg.rand([b, 8, 7]), cg.rand([3, 7])
        ir = "%%r = locus.linear %%x3, %%w : %s, %s -> %s" % (
            f([b, 8, 7]), f([3, 7]), f([b, 8, 3]))
        return [("x3", x3), ("w", w)], {"x3": [("n", 1), 8, 7]}, ir, None
    if name == "transpose":
        t = cg.rand([b, 3, 4])
        ir = "%%r = locus.transpose %%t [2, 0, 1] : %s -> %s" % (f([b, 3, 4]), f([4, b, 3]))
        return [("t", t)], {"t": [("n", 1), 3, 4]}, ir, None
    if name == "reshape":
        t = cg.rand([b, 3, 4])
        ir = ("%%r = locus.reshape %%t [%d, 4] {locus.dims = %s} : %s -> %s"
              % (3 * b, affine([("n", 3), 4]), f([b, 3, 4]), f([3 * b, 4])))
        return [("t", t)], {"t": [("n", 1), 3, 4]}, ir, None
    if name == "slice":
        s = cg.rand([b, 10])
        ir = ("%%r = locus.slice %%s offsets [0, 2] sizes [%d, 3] strides [1, 3] : %s -> %s"
              % (b, f([b, 10]), f([b, 3])))
        return [("s", s)], {"s": [("n", 1), 10]}, ir, \
            lambda s: cl.make([s[0][0], 3], lambda i: cl.at(s, [i[0], 2 + 3 * i[1]]))
    if name == "layer_norm":
        # Its broadcasts go to the dynamic shape.
        x, w, bb = cg.rand([b, 3, 8]), cg.rand([8], 0.5, 2.0), cg.rand([8])
        full, row = f([b, 3, 8]), f([b, 3, 1])
        to_full = "[%d, 3, 8] {locus.dims = %s}" % (b, affine([("n", 1), 3, 8]))
        to_row = "[%d, 3, 1] {locus.dims = %s}" % (b, affine([("n", 1), 3, 1]))
        ir = "\n".join([
            "%%m = locus.mean %%lnx axes [2] keepdim : %s -> %s" % (full, row),
            "%%mb = locus.broadcast %%m %s : %s -> %s" % (to_full, row, full),
            "%%c = locus.sub %%lnx, %%mb : %s" % full,
            "%%c2 = locus.mul %%c, %%c : %s" % full,
            "%%v = locus.mean %%c2 axes [2] keepdim : %s -> %s" % (full, row),
            "%eps = locus.constant dense<1.0e-05> : tensor<f32>",
            "%%epsb = locus.broadcast %%eps %s : tensor<f32> -> %s" % (to_row, row),
            "%%ve = locus.add %%v, %%epsb : %s" % row,
            "%%rs = locus.rsqrt %%ve : %s" % row,
            "%%rb = locus.broadcast %%rs %s : %s -> %s" % (to_full, row, full),
            "%%nx = locus.mul %%c, %%rb : %s" % full,
            "%%wb = locus.broadcast %%lnw %s : %s -> %s" % (to_full, f([8]), full),
            "%%nw = locus.mul %%nx, %%wb : %s" % full,
            "%%bb2 = locus.broadcast %%lnb %s : %s -> %s" % (to_full, f([8]), full),
            "%%r = locus.add %%nw, %%bb2 : %s" % full])
        return [("lnx", x), ("lnw", w), ("lnb", bb)], {"lnx": [("n", 1), 3, 8]}, ir, None
    if name == "dropout":
        x = cg.rand([b, 6])
        dims = affine([("n", 1), 6])
        shape = "[%d, 6] {locus.dims = %s} : tensor<f32> -> %s" % (b, dims, f([b, 6]))
        ir = "\n".join([
            "%%u = locus.random uniform [%d, 6] seed 77 step %%t {locus.dims = %s}"
            " : tensor<f32> -> %s" % (b, dims, f([b, 6])),
            "%h = locus.constant dense<0.5> : tensor<f32>",
            "%%hb = locus.broadcast %%h %s" % shape,
            "%%k = locus.cmp ge, %%u, %%hb : %s" % f([b, 6]),
            "%s = locus.constant dense<2.0> : tensor<f32>",
            "%%sb = locus.broadcast %%s %s" % shape,
            "%z = locus.constant dense<0.0> : tensor<f32>",
            "%%zb = locus.broadcast %%z %s" % shape,
            "%%n = locus.select %%k, %%sb, %%zb : %s, %s" % (cl.ttype([b, 6], "i1"), f([b, 6])),
            "%%r = locus.mul %%dx, %%n : %s" % f([b, 6])])
        return [("dx", x), ("t", ([], [9.0]))], {"dx": [("n", 1), 6]}, ir, None
    return None


def dynamic_case(name, inputs, ir, fn):
    """The case at its bound with its leading input dimension dynamic:
    (bound, inputs at the bound, {input: dims}, ir, fn)."""
    bound = BOUNDS.get(name, 8)
    made = special(name, bound)
    if made:
        new_inputs, dims, new_ir, new_fn = made
        return bound, new_inputs, dims, new_ir, new_fn or fn
    lead = inputs[[e[0] for e in inputs].index(DYNAMIC[name][0])][1][0][0] \
        if name in DYNAMIC else inputs[0][1][0][0]
    names = DYNAMIC.get(name) or [e[0] for e in inputs if e[1][0][:1] == [lead]]
    grown, dims = [], {}
    for entry in inputs:
        if entry[0] not in names:
            grown.append(entry)
            continue
        shape, data = entry[1]
        row = cl.numel(shape[1:])
        extra = (bound - shape[0]) * row
        if len(entry) > 2:  # integers: values the case already takes
            more = [rng.choice(data) for _ in range(extra)]
        else:
            more = [cl.representable(rng.uniform(min(data), max(data))) for _ in range(extra)]
        data = (data + more)[:bound * row]
        grown.append((entry[0], ([bound] + shape[1:], data)) + tuple(entry[2:]))
        dims[entry[0]] = [("n", 1)] + shape[1:]
    return bound, grown, dims, ir.replace("tensor<%dx" % lead, "tensor<%dx" % bound), fn


def first_rows(tensor, dims, size):
    shape, data = tensor
    if dims is None:
        return tensor
    shape = at_size(dims, size)
    return (shape, data[:cl.numel(shape)])


def result_dims(fn, tensors, dims_of, bound):
    """r's dims: each dimension a constant or a multiple of n, from r's shape
    at two sizes."""
    shapes = [fn(*[first_rows(t, d, s) for t, d in zip(tensors, dims_of)])[0]
              for s in (1, 2)]
    at_bound = fn(*[first_rows(t, d, bound) for t, d in zip(tensors, dims_of)])[0]
    dims = []
    for one, two, full in zip(shapes[0], shapes[1], at_bound):
        dims.append(one if one == two else ("n", two - one))
        assert at_size([dims[-1]], bound) == [full], "r's dims are not linear in n"
    return dims


def weight_dims(out_dims):
    """The dims of the input R: r's, with a dimension k * n split into n, k
    (an input's dimension is a size or n itself)."""
    split = []
    for d in out_dims:
        split += [("n", 1), d[1]] if not isinstance(d, int) and d[1] > 1 else [d]
    return split


def graph(name, inputs, dims, ir, bound, out_dims):
    out_type = cl.ttype(at_size(out_dims, bound))
    lines = ['locus.graph @dyn_%s attributes {locus.symbols = [["n", %d]]} {'
             % (name.replace(".", "_"), bound)]
    for entry in inputs + [("R", (at_size(weight_dims(out_dims), bound), []))]:
        d = dims.get(entry[0]) if entry[0] != "R" else weight_dims(out_dims)
        attr = " {locus.dims = %s}" % affine(d) if d and any(
            not isinstance(x, int) for x in d) else ""
        lines.append('  %%%s = locus.input "%s"%s : %s' % (
            entry[0], entry[0], attr, cl.ttype(entry[1][0], cl.elem_of(entry))))
    lines += ["  " + line for line in ir.split("\n")]
    weights = "%R"
    if weight_dims(out_dims) != out_dims:
        weights = "%Rr"
        lines.append("  %%Rr = locus.reshape %%R [%s] {locus.dims = %s} : %s -> %s" % (
            ", ".join(str(d) for d in at_size(out_dims, bound)), affine(out_dims),
            cl.ttype(at_size(weight_dims(out_dims), bound)), out_type))
    lines.append("  %%weighted = locus.mul %%r, %s : %s" % (weights, out_type))
    if out_dims:
        lines.append("  %%loss = locus.sum %%weighted axes [%s] : %s -> tensor<f32>" % (
            ", ".join(str(d) for d in range(len(out_dims))), out_type))
    else:
        lines.append("  %loss = locus.mul %r, %R : tensor<f32>")
    lines.append('  locus.output "r" = %%r : %s' % out_type)
    lines.append('  locus.output "loss" = %loss : tensor<f32>')
    lines.append("}")
    return "\n".join(lines) + "\n"


def npy_shape(path):
    raw = open(path, "rb").read(256)
    length = struct.unpack("<H", raw[8:10])[0]
    header = raw[10:10 + length].decode()
    inner = header[header.index("(") + 1:header.index(")")]
    return [int(x) for x in inner.split(",") if x.strip()]


def compile_variants(tmp, src, wrt):
    """{variant: artifact} or an error."""
    train = os.path.join(tmp, "train.mlir")
    if wrt:
        opt = subprocess.run([os.path.join(BUILD, "tools", "locus-opt"), src,
                              "--locus-autodiff=wrt=" + ",".join(wrt), "-o", train],
                             capture_output=True, text=True)
        if opt.returncode:
            return "locus-opt --locus-autodiff failed:\n" + opt.stderr
    else:
        train = src
    artifacts = {}
    for variant, flags in cl.VARIANTS:
        artifact = os.path.join(tmp, variant + ".locus")
        ptxdir = os.path.join(tmp, "ptx")
        extra = ["--emit-ptx=" + ptxdir] if variant == "sim" else []
        comp = subprocess.run([os.path.join(BUILD, "tools", "locus-compile"), train, "-o",
                               artifact, "--cpu=native"] + flags + extra,
                              capture_output=True, text=True)
        if comp.returncode:
            return "locus-compile (%s) failed:\n%s" % (variant, comp.stderr)
        if variant == "sim":
            if "kernels with launchers" not in comp.stdout:
                return "no kernel was compiled for cuda:0"
            for module in sorted(os.listdir(ptxdir)) if cl.PTXAS and os.path.isdir(ptxdir) else []:
                ptx = subprocess.run([cl.PTXAS, "-arch=sm_90", os.path.join(ptxdir, module),
                                      "-o", os.devnull], capture_output=True, text=True)
                if ptx.returncode:
                    return "ptxas rejects %s:\n%s" % (module, ptx.stderr)
                cl.PTX_MODULES[0] += 1
        artifacts[variant] = artifact
    return artifacts


def compare(what, got, want, tol):
    if len(got) != len(want):
        return "%s: got %d values, want %d" % (what, len(got), len(want))
    # A NaN is infinitely wrong (max() would pass it).
    worst = max([0.0 if g == w else abs(g - w) / tol(w) if g == g else math.inf
                 for g, w in zip(got, want)] or [0.0])
    if worst > 1.0:
        return "%s: mismatch (worst %.2f of tolerance):\ngot  %s\nwant %s" % (
            what, worst, [round(g, 6) for g in got[:12]], [round(w, 6) for w in want[:12]])
    return None


def run_size(tmp, artifacts, inputs, dims, fn, out_dims, size, wrt):
    """Runs every variant at one size against the references."""
    tensors = [first_rows(e[1], dims.get(e[0]), size) for e in inputs]
    want = fn(*tensors)
    shape = at_size(out_dims, size)
    if want[0] != shape:
        return "the reference's shape %s is not r's dims at %d (%s)" % (want[0], size, shape)
    weights = cg.rand(shape)
    grads = {e[0]: cg.numeric_grad(fn, tensors, i, weights)
             for i, e in enumerate(inputs) if e[0] in wrt}
    args = []
    split = (at_size(weight_dims(out_dims), size), weights[1])
    for e, t in list(zip(inputs, tensors)) + [(("R",), split)]:
        path = os.path.join(tmp, "%s_%d.npy" % (e[0], size))
        cl.write_npy(path, t, cl.elem_of(e) if e[0] != "R" else "f32")
        args += ["--input", "%s=%s" % (e[0], path)]
    for variant, artifact in artifacts.items():
        outdir = os.path.join(tmp, "%s_%d" % (variant, size))
        os.mkdir(outdir)
        run = subprocess.run([os.path.join(BUILD, "tools", "locus-run"), artifact, "--quiet",
                              "--save-outputs", outdir] + args, capture_output=True, text=True)
        if run.returncode:
            return "locus-run (%s, n = %d) failed:\n%s" % (variant, size, run.stderr)
        if variant == "sim" and "on sim" not in run.stdout:
            return "the sim variant did not run on sim:\n" + run.stdout
        where = "%s, n = %d" % (variant, size)
        r = os.path.join(outdir, "r.npy")
        if npy_shape(r) != shape:
            return "%s: r has shape %s, want %s" % (where, npy_shape(r), shape)
        problem = compare("%s: r" % where, cl.read_npy_f32(r), want[1],
                          lambda w: 1e-5 + 2e-5 * abs(w))
        for e, t in zip(inputs, tensors):
            if problem or e[0] not in wrt:
                continue
            path = os.path.join(outdir, e[0] + ".grad.npy")
            if npy_shape(path) != t[0]:
                return "%s: d/d%s has shape %s, want %s" % (where, e[0], npy_shape(path), t[0])
            problem = compare("%s: d/d%s" % (where, e[0]), cl.read_npy_f32(path), grads[e[0]],
                              cg.tolerance("", grads[e[0]]))
        if problem:
            return problem
    return None


def check(name, inputs, ir, fn):
    bound, inputs, dims, ir, fn = dynamic_case(name, inputs, ir, fn)
    dims_of = [dims.get(e[0]) for e in inputs]
    try:
        out_dims = result_dims(fn, [e[1] for e in inputs], dims_of, bound)
    except AssertionError as e:
        return str(e)
    wrt = [e[0] for e in inputs if (e[2] if len(e) > 2 else "f32") == "f32"
           and not name.startswith("fwd_")]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "forward.mlir")
        with open(src, "w") as f:
            f.write(graph(name, inputs, dims, ir, bound, out_dims))
        artifacts = compile_variants(tmp, src, wrt)
        if isinstance(artifacts, str):
            return artifacts
        for size in sizes(bound):
            problem = run_size(tmp, artifacts, inputs, dims, fn, out_dims, size, wrt)
            if problem:
                return problem
    return None


def forward_cases():
    """Ops without a gradient, each as (name, inputs, ir at the bound 8, fn);
    the rows of every input are the dynamic size."""
    a, b = cg.rand([8, 5]), cg.rand([8, 5])
    ints = ([8, 5], [rng.randrange(-4, 5) for _ in range(40)])
    names = dict({e: cl.ttype([8, 5], e) for e in ("f32", "i64", "i32", "i1")},
                 dims=affine([("n", 1), 5]))

    def ir(*lines):  # {f32} is tensor<8x5xf32>, {dims} the map of [n, 5]
        return "\n".join(lines).format(**names)
    yield "fwd_cast_f32_i64_f32", [("a", a)], ir(
        "%i = locus.cast %a to i64 : {f32} -> {i64}",
        "%r = locus.cast %i to f32 : {i64} -> {f32}"), \
        lambda a: cl.ew(lambda x: float(int(x)), a)
    yield "fwd_cmp_cast_i1_i32", [("a", a), ("b", b)], ir(
        "%m = locus.cmp lt, %a, %b : {f32}",
        "%c = locus.cast %m to i32 : {i1} -> {i32}",
        "%r = locus.cast %c to f32 : {i32} -> {f32}"), \
        lambda a, b: cl.ew(lambda x, y: 1.0 if x < y else 0.0, a, b)
    yield "fwd_int_cmp_select", [("i", ints, "i64"), ("a", a), ("b", b)], ir(
        "%z = locus.constant dense<0> : tensor<i64>",
        "%zb = locus.broadcast %z [8, 5] {{locus.dims = {dims}}} : tensor<i64> -> {i64}",
        "%m = locus.cmp ge, %i, %zb : {i64}",
        "%r = locus.select %m, %a, %b : {i1}, {f32}"), \
        lambda i, a, b: cl.ew(lambda k, x, y: x if k >= 0 else y, i, a, b)
    yield "fwd_constant_broadcast", [("a", a)], ir(
        "%c = locus.constant dense<1.5> : tensor<5xf32>",
        "%cb = locus.broadcast %c [8, 5] {{locus.dims = {dims}}} : tensor<5xf32> -> {f32}",
        "%r = locus.mul %a, %cb : {f32}"), \
        lambda a: cl.ew(lambda x: 1.5 * x, a)
    yield "fwd_random_normal", [("a", a), ("t", ([], [4.0]))], ir(
        "%u = locus.random normal [8, 5] seed 5 step %t {{locus.dims = {dims}}}"
        " : tensor<f32> -> {f32}",
        "%r = locus.add %a, %u : {f32}"), \
        lambda a, s: cl.ew(lambda x, u: x + u, a, cl.random_ref(a[0], 5, round(s[1][0]), True))


def main():
    passed = failed = 0
    for name, inputs, ir, fn in list(cg.cases()) + list(forward_cases()):
        if ONLY not in name:
            continue
        problem = check(name, inputs, ir, fn)
        if name in STATIC_ONLY:
            refused = problem and STATIC_ONLY[name] in problem
            problem = None if refused else "not refused at the op: %s" % problem
            if refused:
                passed += 1
                print("ok   %s (refused with dynamic sizes, at the op)" % name)
                continue
        if problem:
            failed += 1
            print("FAIL %s: %s" % (name, problem))
        else:
            passed += 1
            print("ok   %s (n = %s)" % (name, ", ".join(
                str(s) for s in sizes(BOUNDS.get(name, 8)))))
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    print("ptxas -arch=sm_90: %s" % (
        "%d PTX modules accepted (%s)" % (cl.PTX_MODULES[0], cl.PTXAS) if cl.PTXAS
        else "not run: no CUDA toolkit (ptxas) found"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
