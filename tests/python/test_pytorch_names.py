"""PyTorch's layers and functions Locus added for ported code (Conv1d,
AvgPool2d, PReLU, NLLLoss, Softmax/LogSoftmax/Identity layers, one_hot,
cat, rand), checked against PyTorch, and the names Locus lacks, which say
what to write instead."""
import os

import numpy as np
import pytest

import locus

HERE = os.path.basename(__file__)
DEVICES = ({"policy": "cpu", "devices": ["cpu"]},
           {"policy": "prefer-gpu", "devices": ["cpu", "cuda:0"],
            "device_map": "cuda:0=sim"})


def line_of(marker):
    """The line of this file that holds `marker`."""
    with open(__file__, encoding="utf-8") as f:
        lines = f.read().splitlines()
    hits = [i + 1 for i, text in enumerate(lines)
            if marker in text and "line_of(" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def _check(name, x0, ours, theirs, weights=(), rtol=2e-5):
    """Records ours(g, x, *weights) on parameters holding x0 and the weights,
    outputs y and the gradients of sum(y * r) for a random r, and compares
    them on cpu and sim with PyTorch's in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(name))
    g = locus.Graph(name)
    values = [x0] + list(weights)
    params = [g.parameter(f"p{i}", list(v.shape), v.flatten().tolist())
              for i, v in enumerate(values)]
    y = ours(g, *params)
    r0 = rng.uniform(-1, 1, y.shape).astype(np.float32)
    loss = (y * g.input("r", list(r0.shape))).sum()
    g.output("y", y)
    for i, grad in enumerate(locus.grad(loss, params)):
        g.output(f"d{i}", grad)
    tensors = [torch.tensor(v, dtype=torch.float64, requires_grad=True)
               for v in values]
    want = theirs(*tensors)
    (want * torch.tensor(r0, dtype=torch.float64)).sum().backward()
    for options in DEVICES:
        got = locus.compile(g, **options).run(r=r0)
        scale = max(1.0, float(np.abs(want.detach().numpy()).max()))
        np.testing.assert_allclose(got["y"], want.detach().numpy(), rtol=rtol,
                                   atol=rtol * scale, err_msg=name)
        for i, t in enumerate(tensors):
            np.testing.assert_allclose(got[f"d{i}"], t.grad.numpy(),
                                       rtol=10 * rtol, atol=1e-5,
                                       err_msg=f"{name} d{i}")


def test_conv1d_avg_pool2d_and_prelu_match_pytorch():
    """F.conv1d (stride, padding, dilation, groups), F.avg_pool2d
    (count_include_pad, as PyTorch's default) and F.prelu (one slope, one
    per channel): outputs and gradients for the input and the weights."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(3)
    x1 = rng.normal(size=(2, 4, 11)).astype(np.float32)
    w1 = rng.normal(size=(6, 2, 3)).astype(np.float32)
    b1 = rng.normal(size=(6,)).astype(np.float32)
    _check("conv1d", x1,
           lambda g, x, w, b: locus.conv1d(x, w, b, stride=2, padding=2,
                                        dilation=2, groups=2),
           lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2,
                                    groups=2), (w1, b1))
    x2 = rng.normal(size=(2, 3, 9, 8)).astype(np.float32)
    _check("avg_pool2d", x2,
           lambda g, x: locus.avg_pool2d(x, 3, stride=2, padding=1),
           lambda x: F.avg_pool2d(x, 3, stride=2, padding=1))
    _check("avg_pool2d_rect", x2,
           lambda g, x: locus.avg_pool2d(x, (2, 3)),
           lambda x: F.avg_pool2d(x, (2, 3)))
    _check("prelu_one", x2, lambda g, x, w: locus.prelu(x, w), F.prelu,
           (np.array([0.2], np.float32),))
    _check("prelu_channels", x2, lambda g, x, w: locus.prelu(x, w), F.prelu,
           (np.array([0.1, -0.3, 0.7], np.float32),))


def test_nll_loss_matches_pytorch_and_checks_its_targets():
    """F.nll_loss over [N, C] and [N, C, d] log-probabilities, mean and sum,
    and nn.NLLLoss; a target outside [0, C) stops the run at the user's
    line, as PyTorch raises."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(5)
    for shape, tshape in (((6, 5), (6,)), ((3, 5, 4), (3, 4))):
        x0 = rng.normal(size=shape).astype(np.float32)
        t0 = rng.integers(0, 5, tshape)
        for reduction in ("mean", "sum"):
            torch_t = torch.tensor(t0)
            _check(f"nll_{len(shape)}_{reduction}", x0,
                   lambda g, x, _r=reduction, _t=t0: locus.nll_loss(
                       x.log_softmax(1), _labels(g, _t), _r),
                   lambda x, _r=reduction, torch_t=torch_t: F.nll_loss(
                       F.log_softmax(x, 1), torch_t, reduction=_r))
    x0 = rng.normal(size=(6, 5)).astype(np.float32)
    t0 = rng.integers(0, 5, (6,))
    _check("nll_layer", x0,
           lambda g, x: locus.nn.NLLLoss()(locus.nn.LogSoftmax(1)(x),
                                           _labels(g, t0)),
           lambda x: torch.nn.NLLLoss()(torch.nn.LogSoftmax(1)(x),
                                        torch.tensor(t0)))

    g = locus.Graph("nll_bad")
    x = g.input("x", [4, 3])
    t = g.input("t", [4], dtype="i64")
    g.output("loss", locus.nll_loss(x, t))  # @nll-line
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    assert np.isfinite(model.run(x=xs, t=np.array([0, 2, 1, 0]))["loss"])
    with pytest.raises(locus.RunError) as info:
        model.run(x=xs, t=np.array([0, 3, 1, -1]))
    assert f"{HERE}:{line_of('# @nll-line')}: labels outside [0, 3) " \
        "(2 found)" in str(info.value)
    with pytest.raises(locus.Error) as info:
        locus.nll_loss(x, g.input("u", [4, 3], dtype="i64"))  # @nll-shape
    assert info.value.line == line_of("# @nll-shape")
    assert "nll_loss takes f32 log-probabilities [N, C, ...] and i64 " \
        "targets [N, ...], not f32 [4, 3] and i64 [4, 3]" in str(info.value)


def _labels(g, values):
    """values as an i64 constant of g."""
    return g.constant(list(values.shape),
                      [float(v) for v in values.flatten()]).long()


def test_new_layers_match_pytorchs_with_their_state_dict():
    """nn.Conv1d, nn.PReLU, nn.AvgPool2d, nn.Softmax, nn.LogSoftmax,
    nn.Identity and nn.TransformerEncoderLayer: PyTorch's state_dict names
    and shapes; loaded into PyTorch's own layers, the same outputs."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    g = locus.Graph("layers")
    x = g.input("x", [2, 4, 10])
    conv = locus.nn.Conv1d(g, 4, 6, 3, stride=2, padding=1, name="conv")
    prelu = locus.nn.PReLU(g, 6, name="act")
    y = locus.nn.Softmax(1)(prelu(conv(x)))
    g.output("y", locus.nn.Identity()(y))
    img = g.input("img", [2, 3, 8, 8])
    g.output("pool", locus.nn.LogSoftmax(-1)(
        locus.nn.AvgPool2d(3, stride=2, padding=1)(img)))
    src = g.input("src", [2, 5, 8])
    enc = locus.nn.TransformerEncoderLayer(g, 8, 2, dim_feedforward=16,
                                           dropout=0.0, batch_first=True,
                                           norm_first=True, name="enc")
    g.output("enc", enc(src, is_causal=False))
    model = locus.compile(g, policy="cpu", devices=["cpu"], eval=True)
    state = model.state_dict()
    assert state["conv.weight"].shape == (6, 4, 3)
    assert state["conv.bias"].shape == (6,)
    np.testing.assert_array_equal(state["act.weight"], np.full(6, 0.25))
    feeds = {"x": rng.normal(size=(2, 4, 10)).astype(np.float32),
             "img": rng.normal(size=(2, 3, 8, 8)).astype(np.float32),
             "src": rng.normal(size=(2, 5, 8)).astype(np.float32)}
    got = model.run(**feeds)

    def load(layer, prefix):
        layer.load_state_dict({k[len(prefix):]: torch.tensor(v)
                               for k, v in state.items()
                               if k.startswith(prefix)})
        return layer.double().eval()

    t_conv = load(torch.nn.Conv1d(4, 6, 3, stride=2, padding=1), "conv.")
    t_prelu = load(torch.nn.PReLU(6), "act.")
    t_enc = load(torch.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
        norm_first=True), "enc.")
    with torch.no_grad():
        dbl = {k: torch.tensor(v, dtype=torch.float64) for k, v in feeds.items()}
        want = {
            "y": torch.softmax(t_prelu(t_conv(dbl["x"])), 1),
            "pool": torch.log_softmax(torch.nn.AvgPool2d(3, 2, 1)(dbl["img"]),
                                      -1),
            "enc": t_enc(dbl["src"]),
        }
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_pytorch_names_locus_lacks_say_what_to_write_instead():
    """locus, locus.nn, locus.optim and locus.optim.lr_scheduler answer a
    PyTorch name they do not have with an AttributeError that says what to
    write; other names get Python's usual one, and hasattr stays False."""
    cases = [
        (lambda: locus.nn.Conv3d, "locus.nn has no Conv3d (torch.nn.Conv3d): "
         "Locus has nn.Conv2d and nn.Conv1d"),
        (lambda: locus.nn.ModuleList, "keep the layers in a Python list"),
        (lambda: locus.zeros, "tensors belong to a graph: g.zeros(shape)"),
        (lambda: locus.float16, "Locus computes in float32"),
        (lambda: locus.optim.RMSprop, "locus.optim has no RMSprop "
         "(torch.optim.RMSprop): Locus has optim.SGD, optim.Adam"),
        (lambda: locus.optim.lr_scheduler.ReduceLROnPlateau,
         "call locus.optim.set_lr(model, opt, lr)"),
    ]
    for get, says in cases:
        with pytest.raises(AttributeError) as info:
            get()
        assert says in str(info.value)
    with pytest.raises(AttributeError) as info:
        locus.nn.NoSuchLayer
    assert str(info.value) == "module 'locus.nn' has no attribute 'NoSuchLayer'"
    assert not hasattr(locus.nn, "Conv3d")
    assert hasattr(locus.nn, "Conv1d") and hasattr(locus, "cat")


def test_cat_one_hot_random_and_conv2d_take_pytorchs_arguments():
    """torch.cat(tensors, dim=0), F.one_hot, torch.rand/randn in a graph,
    and F.conv2d / F.max_pool2d with int arguments."""
    g = locus.Graph("args")
    a = g.input("a", [2, 3])
    b = g.input("b", [1, 3])
    g.output("cat", locus.cat([a, b]))
    g.output("cat1", locus.cat([a, a], dim=1))
    labels = g.input("labels", [4], dtype="i64")
    g.output("hot", locus.one_hot(labels, 3))
    g.output("hotf", locus.one_hot(labels, 3, dtype="f32"))
    g.output("u", locus.rand(g, [1000]))
    g.output("n", locus.randn(g, [1000]))
    img = g.input("img", [1, 2, 6, 6])
    w = g.parameter("w", [4, 2, 3, 3], [0.1] * 72)
    g.output("conv", locus.max_pool2d(
        locus.conv2d(img, w, stride=2, padding=1), 2, stride=1))
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    av = np.arange(6, dtype=np.float32).reshape(2, 3)
    bv = np.full((1, 3), 9, np.float32)
    got = model.run(a=av, b=bv, labels=np.array([2, 0, 1, 2]),
                    img=np.ones((1, 2, 6, 6), np.float32))
    np.testing.assert_array_equal(got["cat"], np.concatenate([av, bv]))
    np.testing.assert_array_equal(got["cat1"], np.concatenate([av, av], 1))
    eye = np.eye(3)[[2, 0, 1, 2]]
    assert got["hot"].dtype == np.int64
    np.testing.assert_array_equal(got["hot"], eye)
    np.testing.assert_array_equal(got["hotf"], eye.astype(np.float32))
    assert 0 <= got["u"].min() and got["u"].max() < 1
    assert abs(got["u"].mean() - 0.5) < 0.05
    assert abs(got["n"].mean()) < 0.15 and abs(got["n"].std() - 1) < 0.1
    assert got["conv"].shape == (1, 4, 2, 2)
    # 3x3 windows of ones at stride 2, padding 1: 4 to 9 values, times 0.2.
    np.testing.assert_allclose(got["conv"].max(), 1.8, rtol=1e-6)


def test_a_pytorch_model_fine_tunes_through_onnx_in_python(tmp_path):
    """The PyTorch -> ONNX -> fine-tune flow in Python: a small CNN
    exported by torch.onnx.export, imported, its logits taken with
    g.output_value, a cross-entropy loss and SGD with momentum over
    g.parameters(); 8 steps' losses against PyTorch training the same
    model in float64."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(96, 4))
    path = str(tmp_path / "cnn.onnx")
    torch.onnx.export(net, (torch.randn(5, 3, 8, 8),), path,
                      input_names=["x"], output_names=["logits"],
                      opset_version=17)
    g = locus.import_onnx(path, shapes={"x": [5, 3, 8, 8]})
    labels = g.input("labels", [5], dtype="i64")
    loss = locus.nn.CrossEntropyLoss()(g.output_value("logits"), labels)
    g.output("loss", loss)
    locus.optim.SGD(g.parameters(), lr=0.1, momentum=0.9).step(loss)
    model = locus.compile(g, policy="cpu", devices=["cpu"])

    ref = net.double()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(6)
    xs = rng.uniform(-1, 1, (5, 3, 8, 8)).astype(np.float32)
    ys = rng.integers(0, 4, (5,))
    losses = []
    for _ in range(8):
        got = float(model.run(x=xs, labels=ys)["loss"])
        opt.zero_grad()
        want = torch.nn.functional.cross_entropy(
            ref(torch.tensor(xs, dtype=torch.float64)), torch.tensor(ys))
        want.backward()
        opt.step()
        assert abs(got - float(want)) <= 1e-4 * float(want), (got, want)
        losses.append(got)
    assert losses[-1] < losses[0]


def test_train_and_eval_switch_one_model_as_pytorchs_do():
    """locus.TrainEvalModel: model.train() / model.eval() between steps, as
    a PyTorch training loop evaluates every few steps; each evaluation
    gives PyTorch's eval() logits for the weights and running statistics
    both have trained so far."""
    torch = pytest.importorskip("torch")
    g = locus.Graph("switch")
    x = g.input("x", [6, 5])
    labels = g.input("labels", [6], dtype="i64")
    net = locus.nn.Sequential(
        locus.nn.Linear(g, 5, 8, name="fc1"),
        locus.nn.BatchNorm1d(g, 8, name="bn"),
        locus.nn.ReLU(),
        locus.nn.Dropout(0.0),
        locus.nn.Linear(g, 8, 3, name="fc2"))
    logits = net(x)
    loss = locus.nn.CrossEntropyLoss()(logits, labels)
    g.output("logits", logits)
    g.output("loss", loss)
    locus.optim.SGD(net.parameters(), lr=0.1, momentum=0.9).step(loss)
    model = locus.TrainEvalModel(locus.compile(g), locus.compile(g, eval=True))
    assert model.training

    ref = torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
        torch.nn.Dropout(0.0), torch.nn.Linear(8, 3)).double()
    names = {"0": "fc1", "1": "bn", "4": "fc2"}
    for name, value in ref.state_dict().items():
        layer, field = name.split(".", 1)
        if field != "num_batches_tracked":
            model.set_state(names[layer] + "." + field,
                            value.numpy().astype(np.float32))
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(12)
    xs = rng.normal(size=(6, 5)).astype(np.float32)
    ys = rng.integers(0, 3, (6,))
    tx = torch.tensor(xs, dtype=torch.float64)
    for _ in range(3):
        model.train()
        ref.train()
        for _ in range(2):
            model.run(x=xs, labels=ys)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(ref(tx), torch.tensor(ys)).backward()
            opt.step()
        assert model.eval() is model and not model.training
        ref.eval()
        with torch.no_grad():
            want = ref(tx).numpy()
        got = model.run(x=xs, labels=ys)["logits"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    for name in ("fc1.weight", "bn.running_var"):
        np.testing.assert_array_equal(model.eval_model.state(name),
                                      model.training_model.state(name))


def test_mistakes_with_the_new_calls_name_the_python_line():
    """conv1d, Conv1d, prelu and one_hot refuse what PyTorch refuses, at
    the caller's line, recording nothing."""
    g = locus.Graph("mistakes")
    x = g.input("x", [2, 4, 10])
    img = g.input("img", [2, 3, 8, 8])
    labels = g.input("labels", [4], dtype="i64")
    before = g.num_ops()
    cases = [
        (lambda: locus.conv1d(img, x),  # @conv1d-rank
         "conv1d-rank", "conv1d: input [2, 3, 8, 8] must have 3 dimensions"),
        (lambda: locus.nn.Conv1d(g, 4, 6, 3, groups=4),  # @conv1d-groups
         "conv1d-groups",
         "Conv1d: groups 4 must divide in_channels 4 and out_channels 6"),
        (lambda: locus.prelu(img, g.input("w", [2])),  # @prelu-weight
         "prelu-weight", "prelu: weight [2] must hold 1 slope or one per "
         "channel (3 for input [2, 3, 8, 8])"),
        (lambda: locus.one_hot(labels, 0),  # @one-hot
         "one-hot", "one_hot: num_classes 0 must be positive"),
    ]
    for call, marker, says in cases:
        with pytest.raises(locus.Error) as info:
            call()
        assert info.value.line == line_of("# @" + marker), marker
        assert says in str(info.value), str(info.value)
    assert g.num_ops() == before + 1  # the input "w" only


def _pool_reference(x, k, s, p, ceil, is_max, include_pad):
    """PyTorch's pooling (aten's pooling_output_shape and avg_pool2d's
    divisor), in double precision."""
    n, c, h, w = x.shape

    def size(length):
        o = (length + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
        return o - 1 if ceil and (o - 1) * s >= length + p else o

    oh, ow = size(h), size(w)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            padded = (h1 - h0) * (w1 - w0)
            hs, ws, he, we = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            win = x[:, :, hs:he, ws:we].astype(np.float64)
            if is_max:
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                y[:, :, i, j] = win.sum(axis=(2, 3)) / (
                    padded if include_pad else (he - hs) * (we - ws))
    return y


def test_pools_take_ceil_mode_and_uncounted_padding():
    """MaxPool2d and AvgPool2d with ceil_mode=True and
    count_include_pad=False, on sizes that leave a remainder: a last window
    that starts in the padding is dropped, and what a window overhangs
    past the end never counts (torchvision's SqueezeNet and GoogLeNet
    pool so)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 9, 12)).astype(np.float32)
    g = locus.Graph("pools")
    xi = g.input("x", [2, 3, 9, 12])
    cases = {  # name: kernel, stride, padding, ceil, max, count_include_pad
        "max_ceil": (3, 2, 0, True, True, True),
        "max_ceil_pad": (3, 2, 1, True, True, True),
        "avg_ceil": (3, 2, 0, True, False, True),
        "avg_ceil_pad": (3, 2, 1, True, False, True),
        "avg_uncounted": (3, 2, 1, False, False, False),
        "avg_ceil_uncounted": (2, 2, 1, True, False, False),
        "avg_plain": (3, 3, 1, False, False, True),
    }
    for name, (k, s, p, ceil, is_max, include) in cases.items():
        if is_max:
            y = locus.nn.MaxPool2d(k, stride=s, padding=p, ceil_mode=ceil)(xi)
        else:
            y = locus.avg_pool2d(xi, k, s, p, ceil_mode=ceil,
                                 count_include_pad=include)
        g.output(name, y)
    # PyTorch's positional order: dilation (1 only) comes before ceil_mode.
    g.output("positional", locus.nn.MaxPool2d(3, 2, 1, 1)(xi))
    with pytest.raises(ValueError, match="dilation other than 1"):
        locus.nn.MaxPool2d(3, dilation=2)
    with pytest.raises(ValueError, match="return_indices"):
        locus.max_pool2d(xi, 3, return_indices=True)
    model = locus.compile(g, policy="cpu", devices=["cpu"], eval=True)
    got = model.run(x=x)
    np.testing.assert_allclose(
        got["positional"], _pool_reference(x, 3, 2, 1, False, True, True),
        rtol=1e-6, atol=1e-6)
    for name, (k, s, p, ceil, is_max, include) in cases.items():
        want = _pool_reference(x, k, s, p, ceil, is_max, include)
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6,
                                   err_msg=name)
    try:
        import torch
    except ImportError:
        return
    for name, (k, s, p, ceil, is_max, include) in cases.items():
        t = torch.tensor(x, dtype=torch.float64)
        want = (torch.nn.functional.max_pool2d(t, k, s, p, ceil_mode=ceil)
                if is_max else torch.nn.functional.avg_pool2d(
                    t, k, s, p, ceil_mode=ceil, count_include_pad=include))
        np.testing.assert_allclose(got[name], want.numpy(), rtol=1e-6,
                                   atol=1e-6, err_msg=name + " (torch)")


def _conv_transpose_reference(x, w, b, s, p, op, groups, d):
    """conv_transpose2d by its definition: each input element scatters
    its products with the kernel, in double precision."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    oh = (h - 1) * s - 2 * p + d * (kh - 1) + op + 1
    ow = (wd - 1) * s - 2 * p + d * (kw - 1) + op + 1
    y = np.zeros((n, og * groups, oh, ow))
    cg = c // groups
    for ci in range(c):
        grp = ci // cg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for e in range(kw):
                        r, q = i * s + a * d - p, j * s + e * d - p
                        if 0 <= r < oh and 0 <= q < ow:
                            y[:, grp * og:(grp + 1) * og, r, q] += (
                                x[:, ci, i, j][:, None] * w[ci, :, a, e])
    return y + (b[None, :, None, None] if b is not None else 0)


def test_conv_transpose2d_matches_its_definition_and_pytorchs_gradients():
    """locus.conv_transpose2d (strides, padding, output_padding, groups,
    dilation, bias) against the scatter that defines it, and its
    gradients (a convolution and a weight gradient) against PyTorch's
    autograd where torch is installed."""
    rng = np.random.default_rng(8)
    cases = {  # name: in, out, k, stride, padding, output_padding, groups, dilation
        "up2": (4, 6, 3, 2, 1, 1, 1, 1),
        "grouped": (4, 6, 2, 2, 0, 0, 2, 1),
        "dilated": (2, 3, 3, 1, 2, 0, 1, 2),
        "stride3": (3, 2, 4, 3, 1, 2, 1, 1),
    }
    for name, (cin, cout, k, s, p, op, groups, d) in cases.items():
        x0 = rng.normal(size=(2, cin, 5, 4)).astype(np.float32)
        w0 = rng.normal(size=(cin, cout // groups, k, k)).astype(np.float32)
        b0 = rng.normal(size=(cout,)).astype(np.float32)
        g = locus.Graph("convt_" + name)
        x = g.parameter("x", list(x0.shape), x0.flatten().tolist())
        w = g.parameter("w", list(w0.shape), w0.flatten().tolist())
        b = g.parameter("b", [cout], b0.tolist())
        y = locus.conv_transpose2d(x, w, b, stride=s, padding=p,
                                   output_padding=op, groups=groups,
                                   dilation=d)
        want = _conv_transpose_reference(x0, w0, b0, s, p, op, groups, d)
        r0 = rng.normal(size=want.shape).astype(np.float32)
        r = g.constant(list(r0.shape), r0.flatten().tolist())
        loss = locus.sum(locus.mul(y, r), [0, 1, 2, 3])
        dx, dw = locus.grad(loss, [x, w])
        g.output("y", y)
        g.output("dx", dx)
        g.output("dw", dw)
        got = locus.compile(g, policy="cpu", devices=["cpu"]).run()
        np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-5,
                                   err_msg=name)
        # cuda:0's backward-data convolution (sim without a GPU).
        on_gpu = locus.compile(g, policy="prefer-gpu",
                               devices=["cpu", "cuda:0"]).run()
        for out in ("y", "dx", "dw"):
            np.testing.assert_allclose(on_gpu[out], got[out], rtol=1e-5,
                                       atol=1e-5, err_msg=name + " " + out)
        try:
            import torch
        except ImportError:
            continue
        tx = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
        tw = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
        ty = torch.nn.functional.conv_transpose2d(
            tx, tw, torch.tensor(b0, dtype=torch.float64), stride=s,
            padding=p, output_padding=op, groups=groups, dilation=d)
        (ty * torch.tensor(r0, dtype=torch.float64)).sum().backward()
        np.testing.assert_allclose(got["y"], ty.detach().numpy(), rtol=1e-5,
                                   atol=1e-5, err_msg=name + " (torch)")
        np.testing.assert_allclose(got["dx"], tx.grad.numpy(), rtol=1e-4,
                                   atol=1e-4, err_msg=name + " dx")
        np.testing.assert_allclose(got["dw"], tw.grad.numpy(), rtol=1e-4,
                                   atol=1e-4, err_msg=name + " dw")


def test_conv_transpose2d_layer_has_pytorchs_names_layout_and_init():
    """nn.ConvTranspose2d: PyTorch's state_dict names, weight layout
    [in, out / groups, kh, kw] and initialization bound (1 / sqrt(out /
    groups * kh * kw)); loaded into PyTorch's layer, the same output."""
    rng = np.random.default_rng(9)
    g = locus.Graph("up")
    x = g.input("x", [2, 4, 5, 5])
    up = locus.nn.ConvTranspose2d(g, 4, 6, 3, stride=2, padding=1,
                                  output_padding=1, groups=2, name="up")
    g.output("y", up(x))
    model = locus.compile(g, policy="cpu", devices=["cpu"], eval=True)
    state = model.state_dict()
    assert state["up.weight"].shape == (4, 3, 3, 3)
    assert state["up.bias"].shape == (6,)
    bound = 1 / np.sqrt(3 * 3 * 3)
    assert np.abs(state["up.weight"]).max() <= bound
    assert np.abs(state["up.weight"]).max() > 0.5 * bound
    x0 = rng.normal(size=(2, 4, 5, 5)).astype(np.float32)
    got = model.run(x=x0)["y"]
    assert got.shape == (2, 6, 10, 10)
    want = _conv_transpose_reference(x0, state["up.weight"], state["up.bias"],
                                     2, 1, 1, 2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
