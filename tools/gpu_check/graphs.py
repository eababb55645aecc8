"""The benchmark graphs of tools/gpu-check, as locus IR text.

Each function returns the text of one `locus.graph`; prepare.py compiles
them for cuda:0. Inputs marked `on <cuda:0>` are made on the GPU, so a
step runs there alone (what `--policy=strict` keeps).
"""

GPU = " on <cuda:0>"


def _t(shape):
    return "tensor<%sxf32>" % "x".join(str(d) for d in shape) if shape else "tensor<f32>"


def launch_chain(n=64, size=1024):
    """n small elementwise kernels in a row (compiled with --no-fuse)."""
    t = _t([size])
    lines = ["locus.graph @launch_chain {",
             '  %%v0 = locus.input "x" : %s%s' % (t, GPU)]
    for i in range(n):
        op = "relu" if i % 2 == 0 else "neg"
        lines.append("  %%v%d = locus.%s %%v%d : %s" % (i + 1, op, i, t))
    lines += ['  locus.output "y" = %%v%d : %s' % (n, t), "}"]
    return "\n".join(lines) + "\n"


def elementwise(n=64 << 20):
    t = _t([n])
    return ("locus.graph @relu {\n"
            '  %%x = locus.input "x" : %s%s\n'
            "  %%r = locus.relu %%x : %s\n"
            '  locus.output "r" = %%r : %s\n}\n' % (t, GPU, t, t))


def reduce_sum(shape, axes, out_shape, name):
    t, o = _t(shape), _t(out_shape)
    return ("locus.graph @%s {\n"
            '  %%x = locus.input "x" : %s%s\n'
            "  %%s = locus.sum %%x axes [%s] : %s -> %s\n"
            '  locus.output "s" = %%s : %s\n}\n'
            % (name, t, GPU, ", ".join(map(str, axes)), t, o, o))


def softmax(rows, cols):
    t = _t([rows, cols])
    return ("locus.graph @softmax_%d {\n"
            '  %%x = locus.input "x" : %s%s\n'
            "  %%y = locus.softmax %%x axis 1 : %s\n"
            '  locus.output "y" = %%y : %s\n}\n' % (cols, t, GPU, t, t))


def layer_norm(rows, cols, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * gamma + beta over rows, as the
    frontend's layer_norm records it."""
    t, r = _t([rows, cols]), _t([rows, 1])
    v = _t([cols])
    b = "locus.broadcast %%%s [%d, %d] : %s -> %s"
    return "\n".join([
        "locus.graph @layer_norm {",
        '  %%x = locus.input "x" : %s%s' % (t, GPU),
        '  %%g = locus.state "gamma" parameter : %s init <full(1.0)>%s' % (v, GPU),
        '  %%be = locus.state "beta" parameter : %s init <full(0.0)>%s' % (v, GPU),
        '  %%e = locus.state "eps" parameter : %s init <full(%.6e)>%s' % (r, eps, GPU),
        "  %%m = locus.mean %%x axes [1] keepdim : %s -> %s" % (t, r),
        "  %mb = " + b % ("m", rows, cols, r, t),
        "  %%c = locus.sub %%x, %%mb : %s" % t,
        "  %%c2 = locus.mul %%c, %%c : %s" % t,
        "  %%var = locus.mean %%c2 axes [1] keepdim : %s -> %s" % (t, r),
        "  %%ve = locus.add %%var, %%e : %s" % r,
        "  %%rs = locus.rsqrt %%ve : %s" % r,
        "  %rb = " + b % ("rs", rows, cols, r, t),
        "  %%n = locus.mul %%c, %%rb : %s" % t,
        "  %gb = " + b % ("g", rows, cols, v, t),
        "  %bb = " + b % ("be", rows, cols, v, t),
        "  %%s = locus.mul %%n, %%gb : %s" % t,
        "  %%y = locus.add %%s, %%bb : %s" % t,
        '  locus.output "y" = %%y : %s' % t, "}"]) + "\n"


def to_gpu(n=16 << 20):
    """A host input moved to cuda:0 and read back: the step is one copy in,
    reading the output one copy out, with no kernel."""
    t = _t([n])
    return ("locus.graph @copies {\n"
            '  %%x = locus.input "x" : %s\n'
            "  %%g = locus.to <cuda:0>, %%x : %s\n"
            '  locus.output "y" = %%g : %s\n}\n' % (t, t, t))


def gpu_input(n=16 << 20):
    """An input that lives on cuda:0, summed: set_input copies it to the
    GPU itself (staged, or one DMA from registered memory)."""
    t = _t([n])
    return ("locus.graph @gpu_input {\n"
            '  %%x = locus.input "x" : %s%s\n'
            "  %%s = locus.sum %%x axes [0] : %s -> tensor<f32>\n"
            '  locus.output "s" = %%s : tensor<f32>\n}\n' % (t, GPU, t))


CONV = dict(n=32, c=64, hw=56, k=3)


def _conv_types():
    n, c, hw, k = CONV["n"], CONV["c"], CONV["hw"], CONV["k"]
    return _t([n, c, hw, hw]), _t([c, c, k, k]), _t([c]), [n, c, hw, hw], [c, c, k, k]


def _conv_attrs():
    return "stride [1, 1] padding [1, 1] dilation [1, 1] groups 1"


def conv(which):
    """The convolution alone, 3x3 with 64 channels on 56x56 at batch 32:
    forward, input gradient or weight gradient."""
    act, wt, bt, act_shape, w_shape = _conv_types()
    bound = (CONV["c"] * 9) ** -0.5
    w = ('  %%w = locus.state "w" parameter : %s init <uniform(%r, %r), seed = 1>%s'
         % (wt, -bound, bound, GPU))
    if which == "fwd":
        body = [
            '  %%x = locus.input "x" : %s%s' % (act, GPU), w,
            '  %%b = locus.state "b" parameter : %s init <uniform(%r, %r), seed = 2>%s'
            % (bt, -bound, bound, GPU),
            "  %%y = locus.conv2d %%x, %%w, %%b %s : %s, %s, %s -> %s"
            % (_conv_attrs(), act, wt, bt, act)]
    elif which == "dgrad":
        body = [
            '  %%g = locus.input "g" : %s%s' % (act, GPU), w,
            "  %%y = locus.conv2d_input_grad %%g, %%w input_shape [%s] %s : %s, %s -> %s"
            % (", ".join(map(str, act_shape)), _conv_attrs(), act, wt, act)]
    else:
        body = [
            '  %%x = locus.input "x" : %s%s' % (act, GPU),
            '  %%g = locus.input "g" : %s%s' % (act, GPU),
            "  %%y = locus.conv2d_weight_grad %%x, %%g weight_shape [%s] %s : %s, %s -> %s"
            % (", ".join(map(str, w_shape)), _conv_attrs(), act, act, wt)]
    out = wt if which == "wgrad" else act
    return "\n".join(["locus.graph @conv_%s {" % which] + body +
                     ['  locus.output "y" = %%y : %s' % out, "}"]) + "\n"


# The MLP's layer widths (its step's gradients: run.py's all-reduce bytes).
MLP_DIMS = [784, 1024, 1024, 10]


def mlp(batch=256, train=False):
    """784-1024-1024-10; with `train`, its cross-entropy loss (autodiff and
    the optimizer are added by locus-opt)."""
    dims = MLP_DIMS
    lines = ["locus.graph @mlp {",
             '  %%x = locus.input "x" : %s%s' % (_t([batch, 784]), GPU)]
    if train:
        lines.append('  %%labels = locus.input "labels" : tensor<%dxi64>%s'
                     % (batch, GPU))
    h = "%x"
    for i, (n_in, n_out) in enumerate(zip(dims, dims[1:])):
        bound = n_in ** -0.5
        for name, shape in (("w%d" % i, [n_out, n_in]), ("b%d" % i, [n_out])):
            lines.append('  %%%s = locus.state "%s" parameter : %s init '
                         "<uniform(%r, %r), seed = %d>%s"
                         % (name, name, _t(shape), -bound, bound, 11 + len(lines), GPU))
        lines.append("  %%l%d = locus.linear %s, %%w%d, %%b%d : %s, %s, %s -> %s"
                     % (i, h, i, i, _t([batch, n_in]), _t([n_out, n_in]),
                        _t([n_out]), _t([batch, n_out])))
        h = "%%l%d" % i
        if i < 2:
            lines.append("  %%r%d = locus.relu %%l%d : %s" % (i, i, _t([batch, n_out])))
            h = "%%r%d" % i
    if train:
        lines.append("  %%loss = locus.cross_entropy %s, %%labels mean : %s, "
                     "tensor<%dxi64> -> tensor<f32>" % (h, _t([batch, 10]), batch))
        lines.append('  locus.output "loss" = %loss : tensor<f32>')
    else:
        lines.append('  locus.output "y" = %s : %s' % (h, _t([batch, 10])))
    return "\n".join(lines + ["}"]) + "\n"


# The embedding row's model: a bag of words over a vocabulary of GPT-2's
# size, as bench/embedding_train.py times it on the CPU.
EMBEDDING = dict(vocab=32000, dim=256, batch=32, seq=128, classes=10)


def embedding_bag(vocab, dim, batch, seq, classes):
    """nn.Embedding(vocab, dim) over ids [batch, seq], the mean over the
    sequence, a linear layer and cross-entropy: the weight's gradient is a
    scatter-add of batch * seq rows (locus.gather_grad)."""
    bound = dim ** -0.5
    return """locus.graph @embedding_train {
  %%ids = locus.input "ids" : tensor<%(b)dx%(s)dxi64> on <cuda:0>
  %%labels = locus.input "labels" : tensor<%(b)dxi64> on <cuda:0>
  %%w = locus.state "emb.weight" parameter : tensor<%(v)dx%(d)dxf32> init <normal(0.0, 1.0), seed = 1> on <cuda:0>
  %%fw = locus.state "fc.weight" parameter : tensor<%(c)dx%(d)dxf32> init <uniform(%(nb)r, %(pb)r), seed = 2> on <cuda:0>
  %%fb = locus.state "fc.bias" parameter : tensor<%(c)dxf32> init <uniform(%(nb)r, %(pb)r), seed = 3> on <cuda:0>
  %%e = locus.gather %%w, %%ids axis 0 : tensor<%(v)dx%(d)dxf32>, tensor<%(b)dx%(s)dxi64> -> tensor<%(b)dx%(s)dx%(d)dxf32>
  %%h = locus.mean %%e axes [1] : tensor<%(b)dx%(s)dx%(d)dxf32> -> tensor<%(b)dx%(d)dxf32>
  %%o = locus.linear %%h, %%fw, %%fb : tensor<%(b)dx%(d)dxf32>, tensor<%(c)dx%(d)dxf32>, tensor<%(c)dxf32> -> tensor<%(b)dx%(c)dxf32>
  %%l = locus.cross_entropy %%o, %%labels mean : tensor<%(b)dx%(c)dxf32>, tensor<%(b)dxi64> -> tensor<f32>
  locus.output "loss" = %%l : tensor<f32>
}
""" % {"v": vocab, "d": dim, "b": batch, "s": seq, "c": classes, "nb": -bound,
       "pb": bound}


def embedding_ids(vocab, count, seed=12345):
    """`count` ids in [0, vocab) from a 64-bit linear congruential
    generator (Knuth's MMIX constants): the same on both sides of the row,
    with no NumPy on the GPU machine."""
    ids, x = [], seed
    for _ in range(count):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        ids.append((x >> 33) % vocab)
    return ids


def seed_cnn_loss(batch=16):
    """The seed CNN (conv 3->16, relu, pool, linear 784->10) with its
    cross-entropy loss."""
    return """locus.graph @cnn_train {
  %%x = locus.input "x" : tensor<%(b)dx3x14x14xf32> on <cuda:0>
  %%labels = locus.input "labels" : tensor<%(b)dxi64> on <cuda:0>
  %%cw = locus.state "conv1.weight" parameter : tensor<16x3x3x3xf32> init <uniform(-0.19245, 0.19245), seed = 1> on <cuda:0>
  %%cb = locus.state "conv1.bias" parameter : tensor<16xf32> init <uniform(-0.19245, 0.19245), seed = 2> on <cuda:0>
  %%fw = locus.state "fc.weight" parameter : tensor<10x784xf32> init <uniform(-0.0357, 0.0357), seed = 3> on <cuda:0>
  %%fb = locus.state "fc.bias" parameter : tensor<10xf32> init <uniform(-0.0357, 0.0357), seed = 4> on <cuda:0>
  %%c = locus.conv2d %%x, %%cw, %%cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<%(b)dx3x14x14xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<%(b)dx16x14x14xf32>
  %%r = locus.relu %%c : tensor<%(b)dx16x14x14xf32>
  %%p = locus.max_pool2d %%r kernel [2, 2] stride [2, 2] padding [0, 0] : tensor<%(b)dx16x14x14xf32> -> tensor<%(b)dx16x7x7xf32>
  %%f = locus.reshape %%p [%(b)d, 784] : tensor<%(b)dx16x7x7xf32> -> tensor<%(b)dx784xf32>
  %%o = locus.linear %%f, %%fw, %%fb : tensor<%(b)dx784xf32>, tensor<10x784xf32>, tensor<10xf32> -> tensor<%(b)dx10xf32>
  %%l = locus.cross_entropy %%o, %%labels mean : tensor<%(b)dx10xf32>, tensor<%(b)dxi64> -> tensor<f32>
  locus.output "loss" = %%l : tensor<f32>
}
""" % {"b": batch}
