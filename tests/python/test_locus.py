"""The `locus` Python module: recording at the caller's lines, compiling,
running with NumPy, training, saving, the runtime alone, ONNX import, and
the PyTorch flow (torch.onnx.export -> import_onnx -> run -> save -> load)
where Debian's python3-torch is installed."""
import os
import subprocess

import numpy as np
import pytest

import locus
import locus.runtime

HERE = os.path.basename(__file__)
ONNX_DATA = "/usr/share/libonnx-testdata/data/node"


def line_of(marker):
    """The line of this file that holds `marker` (after the def line)."""
    with open(__file__, encoding="utf-8") as f:
        lines = f.read().splitlines()
    hits = [i + 1 for i, text in enumerate(lines)
            if marker in text and "line_of(" not in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def mlp_graph():
    g = locus.Graph("mlp")
    g.manual_seed(5)
    x = g.input("x", [8, 16])
    fc1 = locus.nn.Linear(g, 16, 32, name="fc1")
    fc2 = locus.nn.Linear(g, 32, 4, name="fc2")
    h = locus.relu(fc1(x))  # @relu
    g.output("y", locus.softmax(fc2(h), -1))
    return g


def reference(model, x):
    w1, b1 = model.state("fc1.weight"), model.state("fc1.bias")
    w2, b2 = model.state("fc2.weight"), model.state("fc2.bias")
    h = np.maximum(x.astype(np.float64) @ w1.T + b1, 0)
    z = h @ w2.T + b2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_record_compile_run_matches_numpy():
    model = locus.compile(mlp_graph(), policy="cpu", devices=["cpu"])
    x = np.random.default_rng(1).uniform(-1, 1, (8, 16)).astype(np.float32)
    out = model.run(x=x)
    assert set(out) == {"y"}
    assert out["y"].dtype == np.float32 and out["y"].shape == (8, 4)
    np.testing.assert_allclose(out["y"], reference(model, x), rtol=1e-5,
                               atol=1e-6)
    assert model.input_names == ["x"]
    assert "fc1.weight" in model.state_names


def test_ops_are_located_at_the_python_lines():
    g = mlp_graph()
    text = g.str(locations=True)
    assert '%s":%d:' % (HERE, line_of("# @relu")) in text
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    assert "cpu" in model.placement_summary()


def test_a_mistake_is_an_error_at_the_users_line():
    g = locus.Graph("bad")
    g.input("x", [2, 3])
    with pytest.raises(locus.Error) as info:
        g.input("x", [2, 3])  # @twice
    assert info.value.file.endswith(HERE)
    assert info.value.line == line_of("# @twice")
    assert "already used" in str(info.value)
    a = g.input("a", [2, 3])
    b = g.input("b", [4, 5])
    with pytest.raises(locus.Error) as info:
        locus.matmul(a, b)  # @matmul
    assert info.value.line == line_of("# @matmul")
    assert "%s:%d: error:" % (HERE, line_of("# @matmul")) in str(info.value)


def test_dynamic_sizes_are_recorded_and_checked_at_the_users_line():
    g = locus.Graph("dyn")
    x = g.input("x", [locus.dyn("batch", 32), 16])
    y = g.input("y", [locus.dyn("seq", 32), 16])
    assert x.shape == [32, 16]  # sized at the bound
    g.output("h", locus.relu(x) * 2.0)
    assert 'locus.symbols = [["batch", 32], ["seq", 32]]' in g.str()
    with pytest.raises(locus.Error) as info:
        x + y  # @mismatch
    assert info.value.line == line_of("# @mismatch")
    assert "[batch, 16], [seq, 16] agree at the bounds" in str(info.value)
    assert repr(locus.dyn("batch", 32)) == "locus.dyn('batch', 32)"
    # One compiled model for every batch up to the bound.
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    for n in (1, 7, 32):
        xs = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        out = model.run(x=xs, y=np.zeros((5, 16), np.float32))
        assert out["h"].shape == (n, 16)
        np.testing.assert_allclose(out["h"], np.maximum(xs, 0) * 2, rtol=1e-6)
    with pytest.raises(Exception) as info:
        model.run(x=np.zeros((33, 16), np.float32), y=np.zeros((5, 16), np.float32))
    assert "[batch<=32, 16]" in str(info.value)
    # An ONNX model's symbolic batch kept dynamic.
    onnx_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lit",
                             "Tools", "Inputs", "mlp.onnx")
    imported = locus.compile(locus.import_onnx(onnx_path, dynamic={"batch": 8}),
                             policy="cpu", devices=["cpu"])
    for n in (3, 8):
        assert imported.run(x=np.ones((n, 4), np.float32))["y"].shape == (n, 3)


@pytest.mark.parametrize("policy,devices", [("cpu", ["cpu"]),
                                            ("prefer-gpu", ["cpu", "cuda:0"])])
def test_a_causal_mask_and_positions_follow_a_dynamic_sequence_length(policy, devices):
    # Built at the bound, narrowed to the run's length: one model for every
    # length, against NumPy at 1, 5 and the bound; on the CPU, and on
    # cuda:0 (sim without a GPU), where each length replays its own graph.
    g = locus.Graph("causal")
    seq = locus.dyn("seq", 16)
    x = g.input("x", [2, seq, 4])
    pos = locus.narrow_to(g.arange(16, dtype="f32").reshape([16, 1]), [seq, 1])
    h = x + pos
    mask = locus.narrow_to(locus.triu(g.full([16, 16], float("-inf")), 1), [seq, seq])
    scores = locus.matmul(h, locus.transpose(h, 1, 2)) / 2.0 + mask
    g.output("y", locus.matmul(locus.softmax(scores, -1), h))
    assert [repr(d) for d in locus.dynamic_shape(mask)] == [repr(seq)] * 2
    model = locus.compile(g, policy=policy, devices=devices)
    if policy != "cpu":
        assert "steps replay as a CUDA graph" in model.runtime_report()
    for n in (1, 5, 16, 5, 5, 1):
        xs = np.random.default_rng(n).standard_normal((2, n, 4)).astype(np.float32)
        hs = xs + np.arange(n, dtype=np.float32).reshape(n, 1)
        s = hs @ hs.transpose(0, 2, 1) / 2.0 + np.triu(np.full((n, n), -np.inf), 1)
        p = np.exp(s - s.max(-1, keepdims=True))
        want = (p / p.sum(-1, keepdims=True)) @ hs
        np.testing.assert_allclose(model.run(x=xs)["y"], want, rtol=1e-4, atol=1e-4)


def test_indexing_a_dynamic_dimension_counts_from_the_runs_ends():
    # x[:, 0], x[:, -1], x[:, -3:] and x[:, 1:3] along a dynamic length
    # take the same elements as NumPy at every length; a window whose size
    # would follow the length is an Error at the user's line, and a run
    # too short for a window a RunError naming it.
    g = locus.Graph("windows")
    x = g.input("x", [2, locus.dyn("seq", 16), 4])
    g.output("first", x[:, 0])
    g.output("last", x[:, -1] * 2.0)
    g.output("tail", x[..., -3:, :].sum(1))  # @tail
    g.output("mid", x[:, 1:3])
    with pytest.raises(locus.Error) as info:
        x[:, 1:]  # @grows
    assert info.value.line == line_of("# @grows")
    assert "the window [1:] of dimension 1 of [2, seq, 4]" in str(info.value)
    with pytest.raises(locus.Error):
        x[:, :-1]
    with pytest.raises(IndexError):
        x[:, 16]
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    for n in (3, 5, 16):
        xs = np.random.default_rng(n).standard_normal((2, n, 4)).astype(np.float32)
        out = model.run(x=xs)
        np.testing.assert_allclose(out["first"], xs[:, 0], rtol=1e-6)
        np.testing.assert_allclose(out["last"], xs[:, -1] * 2.0, rtol=1e-6)
        np.testing.assert_allclose(out["tail"], xs[:, -3:].sum(1), rtol=1e-5)
        np.testing.assert_allclose(out["mid"], xs[:, 1:3], rtol=1e-6)
    with pytest.raises(Exception) as info:
        model.run(x=np.ones((2, 2, 4), np.float32))
    assert "line %d" % line_of("# @tail") in str(info.value) or \
        ":%d" % line_of("# @tail") in str(info.value)
    assert "(2 found)" in str(info.value)
    # The bound's last index is that index, which only a run at the bound
    # has.
    h = locus.Graph("last_index")
    y = h.input("x", [2, locus.dyn("seq", 16), 4])
    h.output("at15", y[:, 15])
    at15 = locus.compile(h, policy="cpu", devices=["cpu"])
    xs = np.random.default_rng(16).standard_normal((2, 16, 4)).astype(np.float32)
    np.testing.assert_allclose(at15.run(x=xs)["at15"], xs[:, 15], rtol=1e-6)
    with pytest.raises(Exception, match="fewer than 16"):
        at15.run(x=xs[:, :5])


def test_bad_inputs_are_clear_errors():
    model = locus.compile(mlp_graph(), policy="cpu", devices=["cpu"])
    with pytest.raises(Exception) as info:
        model.run(x=np.zeros((3, 16), np.float32))
    assert "x" in str(info.value) and "[8, 16]" in str(info.value)
    with pytest.raises(TypeError):
        model.run(x=np.zeros((8, 16), np.complex64))
    with pytest.raises(ValueError):
        locus.Graph("g").input("x", [1], dtype="f64")


def test_operators_and_training_reduce_the_loss():
    g = locus.Graph("train")
    g.manual_seed(0)
    x = g.input("x", [64, 3])
    y = g.input("y", [64, 1])
    fc = locus.nn.Linear(g, 3, 1, name="fc")
    pred = fc(x) * 1.0 + 0.0
    loss = locus.mse_loss(pred, y)
    g.output("loss", loss)
    locus.optim.SGD(fc.parameters(), lr=0.1).step(loss)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    rng = np.random.default_rng(2)
    xs = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    ys = (xs @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25)
    losses = [float(model.run(x=xs, y=ys)["loss"]) for _ in range(60)]
    assert losses[-1] < 0.05 * losses[0], losses


def test_save_then_the_runtime_alone(tmp_path):
    model = locus.compile(mlp_graph(), policy="cpu", devices=["cpu"])
    x = np.random.default_rng(3).uniform(-1, 1, (8, 16)).astype(np.float32)
    want = model.run(x=x)["y"]
    path = str(tmp_path / "mlp.locus")
    model.save(path, cpu="x86-64")
    loaded = locus.runtime.load(path)
    assert loaded.input_names == ["x"] and loaded.output_names == ["y"]
    assert "cpu" in loaded.report
    np.testing.assert_allclose(loaded.run(x=x)["y"], want, rtol=1e-6,
                               atol=1e-7)
    with pytest.raises(ValueError):
        loaded.run(x=np.zeros((2, 2), np.float32))
    # Shapes, dtypes and names are checked as PyTorch checks a tensor's,
    # not only the byte count; a path with a NUL byte is refused.
    with pytest.raises(ValueError) as info:
        loaded.run(x=np.zeros((16, 8), np.float32))
    assert "input 'x' has shape (16, 8); the model takes (8, 16)" in str(info.value)
    with pytest.raises(TypeError) as info:
        loaded.run(x=np.zeros((8, 16), np.int64))
    assert "input 'x' has dtype int64; the model takes float32" in str(info.value)
    with pytest.raises(TypeError) as info:
        loaded.run(x=x, z=x)
    assert "unexpected input 'z'; the model's inputs: x" in str(info.value)
    np.testing.assert_allclose(loaded.run(x=x.astype(np.float64))["y"], want,
                               rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError) as info:
        locus.runtime.load(path + "\0.txt")
    assert "NUL" in str(info.value)
    with pytest.raises(locus.Error) as info:
        locus.runtime.load(path, max_bytes=16)
    assert "more than max_bytes 16" in str(info.value)
    with pytest.raises(locus.Error) as info:
        locus.runtime.load(str(tmp_path / "missing.locus"))
    assert "not found" in str(info.value)
    with pytest.raises((TypeError, ValueError)):
        loaded.run(x=[[1.0, 2.0], [3.0]])  # ragged: not an array
    # Threads share the loaded model; each run sees its own inputs.
    import threading
    xs = [np.full((8, 16), k / 10, np.float32) for k in range(4)]
    wants = [model.run(x=x)["y"] for x in xs]
    failures = []

    def worker(k):
        for _ in range(25):
            got = loaded.run(x=xs[k])["y"]
            if not np.allclose(got, wants[k], rtol=1e-6, atol=1e-7):
                failures.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_allow_tf32_compiles_for_a_gpu_and_keeps_the_host_numerics():
    # With TF32 allowed the CUDA code may round products' operands; the
    # host versions (here, sim stands in for cuda:0) stay fp32, so the
    # result is the fp32 one.
    x = np.random.default_rng(3).uniform(-1, 1, (8, 16)).astype(np.float32)
    runs = []
    for tf32 in (False, True):
        model = locus.compile(mlp_graph(), policy="prefer-gpu",
                              devices=["cpu", "cuda:0"],
                              device_map="cuda:0=sim", allow_tf32=tf32)
        runs.append(model.run(x=x)["y"])
        np.testing.assert_allclose(runs[-1], reference(model, x), rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_bf16_autocast_on_the_cpu_and_a_gpu_follows_fp32():
    # precision="bf16": the two linear layers read bf16 operands and round
    # their results; the softmax stays f32. Within bf16's spacing of the
    # fp32 result, the same on the CPU and on a GPU (sim runs the CUDA
    # kernels' host versions), and not bit-equal to fp32.
    x = np.random.default_rng(4).uniform(-1, 1, (8, 16)).astype(np.float32)
    full = locus.compile(mlp_graph(), policy="cpu", devices=["cpu"])
    want = reference(full, x)
    runs = []
    for devices in (["cpu"], ["cpu", "cuda:0"]):
        model = locus.compile(mlp_graph(), policy="prefer-gpu",
                              devices=devices,
                              device_map="cuda:0=sim" if len(devices) > 1
                              else "", precision="bf16")
        runs.append(model.run(x=x)["y"])
        assert runs[-1].dtype == np.float32
        np.testing.assert_allclose(runs[-1], want, rtol=3e-2, atol=3e-3)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-2, atol=1e-3)
    assert not np.array_equal(runs[0], full.run(x=x)["y"])
    with pytest.raises(locus.Error, match="precision must be fp32, tf32"):
        locus.compile(mlp_graph(), precision="fp8")


def _scaled_f16_step(scaler, loss_scale):
    g = locus.Graph("f16_step")
    x, y = g.input("x", [32, 16]), g.input("y", [32, 1])
    fc = locus.nn.Linear(g, 16, 1, name="fc")
    loss = locus.mse_loss(fc(x), y) * loss_scale
    g.output("loss", loss)
    opt = locus.optim.SGD(fc.parameters(), lr=1e5)
    if scaler is None:
        opt.step(loss)
    else:
        grads = locus.grad(scaler.scale(loss), fc.parameters())
        scaler.unscale_(grads)
        norm = locus.nn.utils.clip_grad_norm_(grads, 1e9)
        g.output("norm", norm)
        scaler.step(opt, grads)
        scaler.update()
        g.output("found_inf", scaler.found_inf())
    return g


def test_grad_scaler_trains_f16_where_gradients_underflow():
    # A loss scaled by 1e-8 gives gradients at the f16 layer output below
    # f16's smallest subnormal: unscaled, the weights never move; through
    # locus.amp.GradScaler they follow f32 training. An inf in the input
    # skips the step and halves the scale, with no value read by the host.
    rng = np.random.default_rng(8)
    batches = [(rng.uniform(-1, 1, (32, 16)).astype(np.float32),
                rng.uniform(-1, 1, (32, 1)).astype(np.float32))
               for _ in range(3)]
    plain = locus.compile(_scaled_f16_step(None, 1e-8), policy="cpu",
                          devices=["cpu"], precision="f16")
    scaled = locus.compile(_scaled_f16_step(locus.amp.GradScaler(), 1e-8),
                           policy="cpu", devices=["cpu"], precision="f16")
    f32 = locus.compile(_scaled_f16_step(None, 1e-8), policy="cpu",
                        devices=["cpu"])
    w0 = f32.state("fc.weight").copy()
    for x, y in batches:
        plain.run(x=x, y=y)
        assert scaled.run(x=x, y=y)["found_inf"] == 0
        f32.run(x=x, y=y)
    np.testing.assert_array_equal(plain.state("fc.weight"), w0)
    moved = f32.state("fc.weight") - w0
    assert np.all(np.abs(moved) > 1e-5)
    np.testing.assert_allclose(scaled.state("fc.weight") - w0, moved,
                               rtol=1e-2, atol=1e-7)
    name = locus.amp.GradScaler.scale_state_name
    assert scaled.state(name) == 65536
    w = scaled.state("fc.weight").copy()
    x, y = batches[0]
    x = x.copy()
    x[3, 5] = np.inf
    assert scaled.run(x=x, y=y)["found_inf"] == 1
    np.testing.assert_array_equal(scaled.state("fc.weight"), w)
    assert scaled.state(name) == 32768
    with pytest.raises(locus.Error) as info:
        locus.amp.GradScaler().update()  # @update
    assert info.value.line == line_of("# @update")
    assert "update() follows step()" in str(info.value)


def test_f16_and_bf16_values_cross_the_boundary():
    # An f16 input takes NumPy's float16 (or float32, rounded); an f16
    # output comes back as float16, a bf16 one as float32 holding bf16
    # values.
    g = locus.Graph("halves")
    x = g.input("x", [5], dtype="f16")
    g.output("h", x * 2.0)
    g.output("b", x.float().bfloat16() + 0.0)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    xs = np.array([1.0, -0.333, 3.14159, 1e-5, 70000.0], np.float32)
    with np.errstate(over="ignore"):  # 70000 is past f16, as NumPy warns
        out = model.run(x=xs.astype(np.float16))
        assert out["h"].dtype == np.float16 and out["b"].dtype == np.float32
        np.testing.assert_array_equal(out["h"],
                                      (xs.astype(np.float16) * np.float16(2)))
        # float32 in: rounded to f16 first (70000 overflows to inf, as NumPy).
        np.testing.assert_array_equal(model.run(x=xs)["h"], out["h"])
        b = out["b"]
        as_bits = b.view(np.uint32)
        assert np.all(as_bits & 0xFFFF == 0)  # bf16 values: 16 low bits zero
        np.testing.assert_allclose(b[:4], xs.astype(np.float16)[:4], rtol=1e-2)


def test_trace_of_a_run(tmp_path):
    trace = str(tmp_path / "trace.json")
    model = locus.compile(mlp_graph(), policy="cpu", devices=["cpu"],
                          trace=trace)
    x = np.ones((8, 16), np.float32)
    model.run(x=x)
    model.write_trace(trace)
    import json
    with open(trace, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    sources = [e["args"]["source"] for e in events if e.get("cat") == "kernel"]
    assert any("%s:%d" % (HERE, line_of("# @relu")) in s for s in sources)


@pytest.mark.skipif(not os.path.exists(ONNX_DATA),
                    reason="libonnx-testdata is not installed")
def test_import_onnx_runs_a_model():
    g = locus.import_onnx(os.path.join(ONNX_DATA, "test_matmul_2d",
                                       "model.onnx"))
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    rng = np.random.default_rng(4)
    names = model.input_names
    shapes = {"a": (3, 4), "b": (4, 3)}
    inputs = {n: rng.uniform(-1, 1, shapes[n]).astype(np.float32)
              for n in names}
    out = model.run(**inputs)
    (name,) = model.output_names
    np.testing.assert_allclose(out[name], inputs["a"] @ inputs["b"],
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(locus.Error) as info:
        locus.import_onnx("/nonexistent/model.onnx")
    assert "model.onnx" in str(info.value)


def test_the_pytorch_flow(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.ReLU(),
                              torch.nn.Linear(20, 3))
    x = torch.randn(4, 10)
    onnx_path = str(tmp_path / "net.onnx")
    torch.onnx.export(net, (x,), onnx_path, input_names=["x"],
                      output_names=["y"], opset_version=17)
    g = locus.import_onnx(onnx_path, shapes={"x": [4, 10]})
    model = locus.compile(g, policy="auto")
    assert "ops per device: cpu" in model.placement_summary()
    got = model.run(x=x.numpy())["y"]
    np.testing.assert_allclose(got, net(x).detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    artifact = str(tmp_path / "net.locus")
    model.save(artifact, cpu="x86-64")
    np.testing.assert_allclose(locus.runtime.load(artifact).run(
        x=x.numpy())["y"], got, rtol=1e-6, atol=1e-7)
    # ... and C++ embeds the same artifact: the runtime's own tool runs it.
    tools = os.environ.get("LOCUS_TOOLS_DIR")
    if tools:
        run = subprocess.run([os.path.join(tools, "locus-run"), artifact,
                              "--random-inputs", "--quiet"],
                             capture_output=True, text=True, check=True)
        assert "y [4, 3] f32" in run.stdout


def test_mobile_activations_functions_and_layers():
    """ReLU6, Hardsigmoid, Hardswish, Softplus, Mish, ELU and Hardtanh, as
    functions and as torch.nn-style layers, against their definitions."""
    g = locus.Graph("act")
    x = g.input("x", [4, 16])
    nn = locus.nn
    outs = {
        "relu6": locus.relu6(x), "relu6_layer": nn.ReLU6()(x),
        "hardsigmoid": nn.Hardsigmoid()(x), "hardswish": locus.hardswish(x),
        "hardswish_layer": nn.Hardswish()(x),
        "softplus": locus.softplus(x, beta=2.0, threshold=3.0),
        "softplus_layer": nn.Softplus()(x), "mish": nn.Mish()(x),
        "elu": locus.elu(x, alpha=0.5), "elu_layer": nn.ELU()(x),
        "hardtanh": nn.Hardtanh(-2.0, 3.0)(x),
        "leaky": nn.LeakyReLU(0.1)(x), "gelu": nn.GELU("tanh")(x),
    }
    for name, t in outs.items():
        g.output(name, t)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    v = np.linspace(-8, 8, 64, dtype=np.float32).reshape(4, 16) + 0.013
    got = model.run(x=v)
    d = v.astype(np.float64)
    sp = lambda z: np.log1p(np.exp(z))  # noqa: E731
    want = {
        "relu6": np.clip(d, 0, 6), "relu6_layer": np.clip(d, 0, 6),
        "hardsigmoid": np.clip(d + 3, 0, 6) / 6,
        "hardswish": d * np.clip(d + 3, 0, 6) / 6,
        "hardswish_layer": d * np.clip(d + 3, 0, 6) / 6,
        "softplus": np.where(2 * d > 3, d, sp(2 * d) / 2),
        "softplus_layer": sp(d), "mish": d * np.tanh(sp(d)),
        "elu": np.where(d > 0, d, 0.5 * np.expm1(d)),
        "elu_layer": np.where(d > 0, d, np.expm1(d)),
        "hardtanh": np.clip(d, -2, 3), "leaky": np.where(d > 0, d, 0.1 * d),
        "gelu": 0.5 * d * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                       (d + 0.044715 * d ** 3))),
    }
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=2e-6,
                                   err_msg=name)


def test_activation_arguments_are_checked_at_the_python_line():
    g = locus.Graph("bad")
    x = g.input("x", [3])
    with pytest.raises(locus.Error) as info:
        locus.softplus(x, beta=0.0)  # @softplus-beta
    assert "beta 0" in str(info.value)
    assert "%s:%d" % (HERE, line_of("# @softplus-beta")) in str(info.value)
    with pytest.raises(locus.Error) as info:
        locus.nn.Hardtanh(2.0, 1.0)(x)
    assert "min_val 2 is above max_val 1" in str(info.value)


def test_clipping_between_grad_and_step_matches_pytorch():
    """locus.grad, nn.utils.clip_grad_norm_ (in place on the list, the
    norm returned) and Optimizer.step(grads), three steps, against
    PyTorch's clip_grad_norm_ and SGD where torch is installed (against
    the formula otherwise)."""
    rng = np.random.default_rng(3)
    w0 = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    xs = [rng.uniform(-2, 2, (5, 6)).astype(np.float32) for _ in range(3)]
    g = locus.Graph("clip")
    x = g.input("x", [5, 6])
    w = g.parameter("w", [4, 6], w0.flatten().tolist())
    loss = locus.sum(locus.mul(locus.matmul(x, locus.transpose(w, 0, 1)),
                               locus.matmul(x, locus.transpose(w, 0, 1))),
                     [0, 1])
    grads = locus.grad(loss, [w])
    first = grads[0]
    norm = locus.nn.utils.clip_grad_norm_(grads, 1.5)
    assert grads[0] is not first  # the list now holds the clipped gradient
    g.output("norm", norm)
    locus.optim.SGD([w], lr=0.05, momentum=0.9).step(grads)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    norms = [float(model.run(x=xb)["norm"]) for xb in xs]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None:
        return
    tw = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    opt = torch.optim.SGD([tw], lr=0.05, momentum=0.9)
    for xb, got in zip(xs, norms):
        opt.zero_grad()
        xt = torch.tensor(xb, dtype=torch.float64)
        ((xt @ tw.T) ** 2).sum().backward()
        want = torch.nn.utils.clip_grad_norm_([tw], 1.5)
        assert abs(got - float(want)) <= 1e-4 * float(want)
        opt.step()
    np.testing.assert_allclose(model.state("w"), tw.detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def _two_layer_step(name):
    """A graph whose loss is sum(((x w1^T) w2^T)^2) over two parameters."""
    rng = np.random.default_rng(11)
    w1 = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    g = locus.Graph(name)
    x = g.input("x", [5, 6])
    p1 = g.parameter("w1", [3, 6], w1.flatten().tolist())
    p2 = g.parameter("w2", [3, 3], w2.flatten().tolist())
    h = locus.matmul(locus.matmul(x, locus.transpose(p1, 0, 1)),
                     locus.transpose(p2, 0, 1))
    loss = locus.sum(locus.mul(h, h), [0, 1])
    g.output("loss", loss)
    return g, p1, p2, loss, (w1, w2)


def test_adamw_groups_clipping_and_a_warmup_cosine_schedule_match_pytorch():
    """The GPT recipe: AdamW with a decayed and an undecayed group (the
    second at twice the rate), clip_grad_norm_(1.0), LinearLR warm-up then
    CosineAnnealingLR through SequentialLR, stepped once per batch; losses
    and weights against PyTorch in float64 over 12 steps."""
    torch = pytest.importorskip("torch")
    g, p1, p2, loss, (w1, w2) = _two_layer_step("gpt_recipe")
    grads = locus.grad(loss, [p1, p2])
    locus.nn.utils.clip_grad_norm_(grads, 1.0)
    opt = locus.optim.AdamW([{"params": [p1], "weight_decay": 0.1},
                             {"params": [p2], "weight_decay": 0.0,
                              "lr": 0.02}], lr=0.01, betas=(0.9, 0.95))
    opt.step(grads)
    assert opt.group_count == 2
    assert opt.lr_state_name(1) == "optimizer.param_groups.1.lr"
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    S = locus.optim.lr_scheduler
    sched = S.SequentialLR(opt, model, [
        S.LinearLR(opt, model, start_factor=0.1, total_iters=3),
        S.CosineAnnealingLR(opt, model, T_max=9)], milestones=[3])

    t1 = torch.nn.Parameter(torch.tensor(w1, dtype=torch.float64))
    t2 = torch.nn.Parameter(torch.tensor(w2, dtype=torch.float64))
    topt = torch.optim.AdamW([{"params": [t1], "weight_decay": 0.1},
                              {"params": [t2], "weight_decay": 0.0,
                               "lr": 0.02}], lr=0.01, betas=(0.9, 0.95))
    TS = torch.optim.lr_scheduler
    tsched = TS.SequentialLR(topt, [
        TS.LinearLR(topt, start_factor=0.1, total_iters=3),
        TS.CosineAnnealingLR(topt, T_max=9)], milestones=[3])
    rng = np.random.default_rng(12)
    for step in range(12):
        xb = rng.uniform(-1, 1, (5, 6)).astype(np.float32)
        got = float(model.run(x=xb)["loss"])
        topt.zero_grad()
        xt = torch.tensor(xb, dtype=torch.float64)
        want = ((xt @ t1.T @ t2.T) ** 2).sum()
        want.backward()
        torch.nn.utils.clip_grad_norm_([t1, t2], 1.0)
        topt.step()
        assert abs(got - float(want)) <= 1e-4 * abs(float(want)) + 1e-5, step
        sched.step()
        tsched.step()
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(),
                                   rtol=1e-12)
        assert abs(locus.optim.get_lr(model, opt, 1) -
                   tsched.get_last_lr()[1]) <= 1e-7 * tsched.get_last_lr()[1]
    np.testing.assert_allclose(model.state("w1"), t1.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.state("w2"), t2.detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_every_scheduler_follows_pytorch():
    """Each scheduler's rates over 10 steps against torch.optim's."""
    torch = pytest.importorskip("torch")
    S, TS = locus.optim.lr_scheduler, torch.optim.lr_scheduler
    cases = [
        (lambda o, m: S.StepLR(o, m, step_size=3, gamma=0.5),
         lambda o: TS.StepLR(o, step_size=3, gamma=0.5)),
        (lambda o, m: S.MultiStepLR(o, m, milestones=[2, 6], gamma=0.2),
         lambda o: TS.MultiStepLR(o, milestones=[2, 6], gamma=0.2)),
        (lambda o, m: S.ExponentialLR(o, m, gamma=0.8),
         lambda o: TS.ExponentialLR(o, gamma=0.8)),
        (lambda o, m: S.CosineAnnealingLR(o, m, T_max=4, eta_min=0.001),
         lambda o: TS.CosineAnnealingLR(o, T_max=4, eta_min=0.001)),
        (lambda o, m: S.LinearLR(o, m),
         lambda o: TS.LinearLR(o)),
        (lambda o, m: S.LambdaLR(o, m, lambda e: 1.0 / (1 + e)),
         lambda o: TS.LambdaLR(o, lambda e: 1.0 / (1 + e))),
        (lambda o, m: S.OneCycleLR(o, m, max_lr=0.5, total_steps=10,
                                   cycle_momentum=False),
         lambda o: TS.OneCycleLR(o, max_lr=0.5, total_steps=10,
                                 cycle_momentum=False)),
        (lambda o, m: S.OneCycleLR(o, m, max_lr=[0.5, 0.1], epochs=2,
                                   steps_per_epoch=5, cycle_momentum=False,
                                   anneal_strategy="linear",
                                   three_phase=True),
         lambda o: TS.OneCycleLR(o, max_lr=[0.5, 0.1], epochs=2,
                                 steps_per_epoch=5, cycle_momentum=False,
                                 anneal_strategy="linear", three_phase=True)),
    ]
    for ours, theirs in cases:
        g, p1, p2, loss, _ = _two_layer_step("sched")
        opt = locus.optim.SGD([{"params": [p1]}, {"params": p2, "lr": 0.05}],
                              lr=0.1, momentum=0.9)
        opt.step(loss)
        model = locus.compile(g, policy="cpu", devices=["cpu"])
        s = ours(opt, model)
        tp = [torch.nn.Parameter(torch.zeros(1)) for _ in range(2)]
        topt = torch.optim.SGD([{"params": [tp[0]]},
                                {"params": [tp[1]], "lr": 0.05}],
                               lr=0.1, momentum=0.9)
        ts = theirs(topt)
        for epoch in range(10):
            if epoch:
                s.step()
                topt.step()
                ts.step()
            assert s.last_epoch == epoch
            np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(),
                                       rtol=1e-12, atol=1e-15)
            assert locus.optim.get_lr(model, opt, 0) == \
                np.float32(ts.get_last_lr()[0])


def test_learning_rate_mistakes_are_errors_at_the_python_line():
    g, p1, p2, loss, _ = _two_layer_step("lr_errors")
    opt = locus.optim.SGD([p1, p2], lr=0.1)
    opt.step(loss)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    with pytest.raises(locus.Error) as info:
        locus.optim.set_lr(model, opt, -0.5)  # @negative-lr
    assert "%s:%d" % (HERE, line_of("# @negative-lr")) in str(info.value)
    assert "non-negative number, got -0.5" in str(info.value)
    assert locus.optim.get_lr(model, opt) == np.float32(0.1)
    with pytest.raises(locus.Error) as info:
        locus.optim.lr_scheduler.OneCycleLR(opt, model, max_lr=1.0,
                                            total_steps=5)
    assert "cycle_momentum=False" in str(info.value)
    with pytest.raises(locus.Error) as info:
        opt.lr_state_name(3)
    assert "parameter group 3 of an optimizer with 1 group" in str(info.value)
    with pytest.raises(ValueError) as info:
        locus.optim.SGD([{"params": [p1], "momentun": 0.9}], lr=0.1)
    assert "'momentun' is not one of this optimizer's" in str(info.value)
    # A rate set between runs changes the next step.
    locus.optim.set_lr(model, opt, 0.0)
    before = model.state("w1").copy()
    model.run(x=np.ones((5, 6), np.float32))
    np.testing.assert_array_equal(model.state("w1"), before)


def test_a_gpt_block_and_a_mobile_cnn_written_as_in_pytorch():
    """Layers, functions and Tensor methods with PyTorch's names: an
    embedding, a causal pre-LN attention block and a head; a depthwise
    conv, BatchNorm, ReLU6 and pooling through nn.Sequential. Outputs
    against torch with the same weights."""
    torch = pytest.importorskip("torch")
    g = locus.Graph("gpt_block")
    ids = g.input("ids", [2, 5], dtype="i64")
    emb = locus.nn.Embedding(g, 11, 8, name="wte")
    ln = locus.nn.LayerNorm(g, 8, name="ln")
    attn = locus.nn.MultiheadAttention(g, 8, 2, batch_first=True, name="attn")
    head = locus.nn.Linear(g, 8, 11, bias=False, name="head")
    x = emb(ids)
    h = ln(x)
    mask = locus.triu(g.ones([5, 5], dtype="bool"), 1)
    x = x + attn(h, h, h, attn_mask=mask)[0]
    logits = head(locus.nn.GELU()(x))
    g.output("last", logits[:, -1])
    g.output("first_two", logits[..., 0:2].sum(-1))
    g.output("scaled", locus.maximum(logits.reshape(2, -1), 0.0) * 0.5)
    model = locus.compile(g, policy="cpu", devices=["cpu"])

    tg = torch.nn.ModuleDict({
        "wte": torch.nn.Embedding(11, 8), "ln": torch.nn.LayerNorm(8),
        "attn": torch.nn.MultiheadAttention(8, 2, batch_first=True),
        "head": torch.nn.Linear(8, 11, bias=False)})
    for name, value in tg.state_dict().items():
        model.set_state(name, value.numpy())
    idv = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], np.int64)
    out = model.run(ids=idv)
    with torch.no_grad():
        tx = tg["wte"](torch.tensor(idv))
        th = tg["ln"](tx)
        tmask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
        tx = tx + tg["attn"](th, th, th, attn_mask=tmask)[0]
        tl = tg["head"](torch.nn.functional.gelu(tx))
    np.testing.assert_allclose(out["last"], tl[:, -1].numpy(), atol=1e-5)
    np.testing.assert_allclose(out["first_two"], tl[..., 0:2].sum(-1).numpy(),
                               atol=1e-5)
    np.testing.assert_allclose(out["scaled"],
                               tl.reshape(2, -1).clamp(min=0).numpy() * 0.5,
                               atol=1e-5)

    g = locus.Graph("mobile")
    img = g.input("x", [2, 4, 8, 8])
    net = locus.nn.Sequential(
        locus.nn.Conv2d(g, 4, 4, 3, padding=1, groups=4, bias=False,
                        name="dw"),
        locus.nn.BatchNorm2d(g, 4, name="bn"),
        locus.nn.ReLU6(),
        locus.nn.Conv2d(g, 4, 6, 1, name="pw"),
        locus.nn.Hardswish(),
        locus.nn.AdaptiveAvgPool2d(1),
        locus.nn.Flatten())
    assert len(net) == 7
    net.eval()
    g.output("y", net(img))
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    tnet = torch.nn.Sequential(
        torch.nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False),
        torch.nn.BatchNorm2d(4), torch.nn.ReLU6(), torch.nn.Conv2d(4, 6, 1),
        torch.nn.Hardswish(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten()).eval()
    names = {"0": "dw", "1": "bn", "3": "pw"}
    for name, value in tnet.state_dict().items():
        layer, field = name.split(".", 1)
        if field != "num_batches_tracked":
            model.set_state(names[layer] + "." + field,
                            value.numpy().astype(np.float32))
    xs = np.random.default_rng(5).uniform(-1, 1, (2, 4, 8, 8))
    with torch.no_grad():
        want = tnet(torch.tensor(xs, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(model.run(x=xs.astype(np.float32))["y"], want,
                               atol=1e-5)


def test_shape_functions_and_indexing_mistakes():
    g = locus.Graph("shapes")
    x = g.input("x", [4, 6])
    a, b = locus.chunk(x, 2, dim=1)
    parts = locus.split(x, 4, dim=1)
    assert [p.shape for p in parts] == [[4, 4], [4, 2]]
    s = locus.stack([a, b], dim=0)
    assert s.shape == [2, 4, 3]
    assert x[1].shape == [6] and x[:, ::2].shape == [4, 3]
    assert x.size(-1) == 6 and x.dim() == 2
    with pytest.raises(IndexError):
        x[4]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[..., ..., 0]
    with pytest.raises(TypeError):
        x[True]
    before = g.num_ops()
    with pytest.raises(IndexError):
        x[0, 99]
    assert g.num_ops() == before  # nothing recorded by a failed index
    assert x[np.int64(1)].shape == [6]
    other = locus.Graph("ints")
    ids = other.input("ids", [3], dtype="i64")
    assert (ids < 2).dtype == "i1"
    with pytest.raises(TypeError) as info:
        ids < 2.5
    assert "i64 tensor takes an integral number" in str(info.value)
    with pytest.raises(locus.Error) as info:
        x.reshape(5, -1)  # @bad-reshape
    assert "%s:%d" % (HERE, line_of("# @bad-reshape")) in str(info.value)
    g.output("y", locus.masked_fill(s, s > 0.5, 0.0).sum())
    ones = g.arange(4).float()
    g.output("z", ones)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    xv = np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 6)
    out = model.run(x=xv)
    assert abs(float(out["y"]) - xv[xv <= 0.5].sum()) < 1e-5
    np.testing.assert_array_equal(out["z"], [0, 1, 2, 3])


def test_lstm_and_gru_load_a_pytorch_state_dict():
    """nn.LSTM (two layers, bidirectional, batch_first) and nn.GRU with
    PyTorch's parameter names: a torch state_dict loads as it is and the
    outputs and final states match torch's."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for kind in ("LSTM", "GRU"):
        g = locus.Graph(kind.lower())
        x = g.input("x", [2, 5, 3])
        layer = getattr(locus.nn, kind)(g, 3, 4, num_layers=2,
                                        batch_first=True, bidirectional=True,
                                        name="rnn")
        y, state = layer(x)
        g.output("y", y)
        g.output("h", state[0] if kind == "LSTM" else state)
        model = locus.compile(g, policy="cpu", devices=["cpu"])
        ref = getattr(torch.nn, kind)(3, 4, num_layers=2, batch_first=True,
                                      bidirectional=True)
        for name, value in ref.state_dict().items():
            model.set_state("rnn." + name, value.numpy())
        xs = np.random.default_rng(7).uniform(-1, 1, (2, 5, 3))
        out = model.run(x=xs.astype(np.float32))
        with torch.no_grad():
            ty, th = ref(torch.tensor(xs, dtype=torch.float32))
        th = th[0] if kind == "LSTM" else th
        np.testing.assert_allclose(out["y"], ty.numpy(), atol=1e-5)
        np.testing.assert_allclose(out["h"], th.numpy(), atol=1e-5)


def _tiny_gpt(torch, vocab=13, dim=16, heads=2, blocks=2, seq=8):
    """The same pre-LN decoder in torch (float64) and recorded in Locus
    with torch's state_dict names."""

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = torch.nn.LayerNorm(dim)
            self.attn = torch.nn.MultiheadAttention(dim, heads,
                                                    batch_first=True)
            self.ln2 = torch.nn.LayerNorm(dim)
            self.fc = torch.nn.Linear(dim, 4 * dim)
            self.proj = torch.nn.Linear(4 * dim, dim)

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask)[0]
            return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln2(x))))

    class Gpt(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(vocab, dim)
            self.wpe = torch.nn.Embedding(seq, dim)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(blocks))
            self.ln_f = torch.nn.LayerNorm(dim)
            self.head = torch.nn.Linear(dim, vocab, bias=False)

        def forward(self, ids):
            mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1)
            x = self.wte(ids) + self.wpe(torch.arange(seq))
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln_f(x))

    torch.manual_seed(3)
    ref = Gpt().double()

    g = locus.Graph("gpt")
    ids = g.input("ids", [4, seq], dtype="i64")
    targets = g.input("targets", [4 * seq], dtype="i64")
    nn = locus.nn
    wte = nn.Embedding(g, vocab, dim, name="wte")
    wpe = nn.Embedding(g, seq, dim, name="wpe")
    mask = locus.triu(g.ones([seq, seq], dtype="bool"), 1)
    x = wte(ids) + wpe(g.arange(seq))
    for i in range(blocks):
        p = "blocks.%d." % i
        ln1 = nn.LayerNorm(g, dim, name=p + "ln1")
        attn = nn.MultiheadAttention(g, dim, heads, batch_first=True,
                                     name=p + "attn")
        ln2 = nn.LayerNorm(g, dim, name=p + "ln2")
        fc = nn.Linear(g, dim, 4 * dim, name=p + "fc")
        proj = nn.Linear(g, 4 * dim, dim, name=p + "proj")
        h = ln1(x)
        x = x + attn(h, h, h, attn_mask=mask)[0]
        x = x + proj(nn.GELU()(fc(ln2(x))))
    logits = nn.Linear(g, dim, vocab, bias=False, name="head")(
        nn.LayerNorm(g, dim, name="ln_f")(x))
    loss = locus.cross_entropy(logits.reshape(-1, vocab), targets)
    return ref, g, loss


def test_a_gpt_trains_as_pytorch_with_adamw_clipping_and_a_schedule():
    """A 2-block GPT decoder: AdamW with decayed and undecayed groups,
    clip_grad_norm_(1.0), a LinearLR warm-up then cosine, 50 steps; every
    loss against PyTorch in float64 from the same weights."""
    torch = pytest.importorskip("torch")
    ref, g, loss = _tiny_gpt(torch)
    params = g.parameters()
    decayed = [p for p in params if len(p.shape) == 2]
    others = [p for p in params if len(p.shape) != 2]
    grads = locus.grad(loss, decayed + others)
    norm = locus.nn.utils.clip_grad_norm_(grads, 1.0)
    g.output("loss", loss)
    g.output("norm", norm)
    opt = locus.optim.AdamW([{"params": decayed, "weight_decay": 0.1},
                             {"params": others, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95))
    opt.step(grads)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    for name, value in ref.state_dict().items():
        model.set_state(name, value.numpy().astype(np.float32))
    S = locus.optim.lr_scheduler
    sched = S.SequentialLR(opt, model, [
        S.LinearLR(opt, model, start_factor=0.1, total_iters=5),
        S.CosineAnnealingLR(opt, model, T_max=45)], milestones=[5])

    tdec = [p for n, p in ref.named_parameters() if p.dim() == 2]
    tother = [p for n, p in ref.named_parameters() if p.dim() != 2]
    topt = torch.optim.AdamW([{"params": tdec, "weight_decay": 0.1},
                              {"params": tother, "weight_decay": 0.0}],
                             lr=3e-3, betas=(0.9, 0.95))
    TS = torch.optim.lr_scheduler
    tsched = TS.SequentialLR(topt, [
        TS.LinearLR(topt, start_factor=0.1, total_iters=5),
        TS.CosineAnnealingLR(topt, T_max=45)], milestones=[5])
    rng = np.random.default_rng(4)
    idv = rng.integers(0, 13, (4, 8))  # one batch, learned by heart
    tv = rng.integers(0, 13, (4 * 8,))
    worst = 0.0
    for step in range(50):
        out = model.run(ids=idv, targets=tv)
        topt.zero_grad()
        want = torch.nn.functional.cross_entropy(
            ref(torch.tensor(idv)).reshape(-1, 13), torch.tensor(tv))
        want.backward()
        wnorm = torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
        topt.step()
        sched.step()
        tsched.step()
        worst = max(worst, abs(float(out["loss"]) - float(want)) /
                    float(want))
        assert abs(float(out["norm"]) - float(wnorm)) <= 1e-3 * float(wnorm)
    print("gpt: 50 losses within %.1e relative of PyTorch float64" % worst)
    assert worst <= 1e-4, worst
    assert float(out["loss"]) < 2.0  # it learned (log(13) = 2.56 at start)


def test_a_failed_run_is_a_run_error():
    """A compiled model's RunError arrives as locus.RunError, a
    RuntimeError."""
    g = locus.Graph("run_error")
    x = g.input("x", [3])
    g.output("y", x * 2.0)
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    with pytest.raises(locus.RunError) as info:
        model.run(x=np.zeros(4, np.float32))
    assert isinstance(info.value, RuntimeError)
    assert "input 'x'" in str(info.value)
    with pytest.raises(locus.RunError):
        model.state("nothing")


def test_a_second_compile_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCUS_CACHE", raising=False)
    folder = str(tmp_path / "cache")
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    cold = locus.compile(mlp_graph(), policy="cpu", cache_dir=folder)
    warm = locus.compile(mlp_graph(), policy="cpu", cache_dir=folder)
    assert not cold.from_cache and warm.from_cache
    np.testing.assert_array_equal(cold.run(x=x)["y"], warm.run(x=x)["y"])
    assert cold.placement_summary() == warm.placement_summary()
    assert len(os.listdir(folder)) == 1
    # Off for one compile: nothing read, nothing written.
    off = locus.compile(mlp_graph(), policy="cpu", cache=False,
                        cache_dir=str(tmp_path / "unused"))
    assert not off.from_cache and not os.path.exists(tmp_path / "unused")


def test_data_parallel_at_world_size_one_is_the_plain_step():
    def record():
        g = locus.Graph("dp")
        x = g.input("x", [16, 3])
        y = g.input("y", [16, 1])
        fc = locus.nn.Linear(g, 3, 1, name="fc")
        loss = locus.mse_loss(fc(x), y)
        g.output("loss", loss)
        locus.optim.SGD(fc.parameters(), lr=0.1, momentum=0.9).step(loss)
        return g

    comm = locus.Communicator.from_environment()
    assert (comm.rank, comm.size, comm.backend) == (0, 1, "none")
    assert comm.shard(5) == [0, 1, 2, 3, 4]
    dp = locus.compile(record(), policy="cpu", devices=["cpu"],
                       data_parallel=True, bucket_mb=0.001, cache=False)
    dp.join_data_parallel(comm)
    plain = locus.compile(record(), policy="cpu", devices=["cpu"], cache=False)
    rng = np.random.default_rng(4)
    for _ in range(3):
        xs = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
        ys = rng.uniform(-1, 1, (16, 1)).astype(np.float32)
        assert dp.run(x=xs, y=ys)["loss"] == plain.run(x=xs, y=ys)["loss"]
    np.testing.assert_array_equal(dp.state("fc.weight"),
                                  plain.state("fc.weight"))
    with pytest.raises(ValueError, match="bucket_mb"):
        locus.compile(record(), data_parallel=True, bucket_mb=0)


def test_no_grad_makes_constants_autodiff_does_not_differentiate():
    g = locus.Graph("no_grad")
    x = g.input("x", [4])
    w = g.parameter("w", [4], [2.0, 2.0, 2.0, 2.0])
    assert locus.is_grad_enabled()
    with locus.no_grad():
        assert not locus.is_grad_enabled()
        frozen = locus.mul(w, x)
    assert locus.is_grad_enabled()
    (dw,) = locus.grad(locus.sum(locus.mul(w, frozen), [0]), [w])
    g.output("dw", dw)
    xs = np.array([1, -2, 3, 0.5], np.float32)
    out = locus.compile(g, policy="cpu", devices=["cpu"]).run(x=xs)
    np.testing.assert_array_equal(out["dw"], 2 * xs)


def test_transpose_pow_and_abs_as_torch_tensors_spell_them():
    g = locus.Graph("methods")
    x = g.input("x", [2, 3])
    cube = g.input("cube", [2, 3, 4])
    g.output("t", x.t())
    g.output("T", cube.T)
    g.output("pow", x.pow(3))
    g.output("abs", abs(x))
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        cube.t()
    xs = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    cs = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = locus.compile(g, policy="cpu", devices=["cpu"]).run(x=xs, cube=cs)
    np.testing.assert_array_equal(out["t"], xs.T)
    np.testing.assert_array_equal(out["T"], cs.transpose(2, 1, 0))
    np.testing.assert_allclose(out["pow"], xs ** 3, rtol=1e-6)
    np.testing.assert_array_equal(out["abs"], np.abs(xs))


def test_topk_matches_pytorch_with_its_gradient():
    """locus.topk and Tensor.topk (largest and smallest, any dim) against
    torch.topk: values, indices, and the gradient of a weighted sum of the
    values; k beyond the dimension is an error at the caller's line."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    v = rng.permutation(60).reshape(3, 4, 5).astype(np.float32) / 7 - 4
    r = rng.uniform(-1, 1, (3, 2, 5)).astype(np.float32)
    g = locus.Graph("topk")
    x = g.parameter("x", [3, 4, 5], v.flatten().tolist())
    weights = g.input("r", [3, 2, 5])
    top = locus.topk(x, 2, dim=1)
    low = x.topk(3, dim=-1, largest=False)
    loss = locus.sum(locus.mul(top.values, weights), [0, 1, 2])
    g.output("values", top.values)
    g.output("indices", top.indices)
    g.output("low_values", low.values)
    g.output("low_indices", low.indices)
    g.output("grad", locus.grad(loss, [x])[0])
    tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    want = torch.topk(tx, 2, dim=1)
    (want.values * torch.tensor(r, dtype=torch.float64)).sum().backward()
    want_low = torch.topk(tx.detach(), 3, dim=-1, largest=False)
    # On the CPU, and with every op on cuda:0, which sim stands in for.
    for options in ({"policy": "cpu", "devices": ["cpu"]},
                    {"policy": "prefer-gpu", "devices": ["cpu", "cuda:0"],
                     "device_map": "cuda:0=sim"}):
        got = locus.compile(g, **options).run(r=r)
        np.testing.assert_allclose(got["values"],
                                   want.values.detach().numpy(), rtol=1e-6)
        np.testing.assert_array_equal(got["indices"], want.indices.numpy())
        np.testing.assert_allclose(got["low_values"],
                                   want_low.values.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(got["low_indices"],
                                      want_low.indices.numpy())
        np.testing.assert_allclose(got["grad"], tx.grad.numpy(), rtol=1e-6)
    with pytest.raises(locus.Error) as info:
        locus.topk(x, 6, dim=1)  # @topk-too-many
    assert info.value.line == line_of("# @topk-too-many")
    assert "topk: k = 6 must be in [1, 4] for input [3, 4, 5] along axis 1" \
        in str(info.value)


def test_a_layer_error_names_the_python_lines_that_built_and_called_it():
    """A mistake inside a layer is at the caller's line and names the
    Python line that built the layer (not the binding's C++ line)."""
    g = locus.Graph("layer_lines")
    conv = locus.nn.Conv2d(g, 3, 4, 3)  # @built
    z = g.input("z", [1, 5, 8, 8])
    with pytest.raises(locus.Error) as info:
        conv(z)  # @called
    assert info.value.line == line_of("# @called")
    assert "(in layer 'conv0' built at %s:%d)" % (__file__, line_of("# @built")) \
        in str(info.value)
    assert "nn.cpp" not in str(info.value)
    # The op as a call names it, not the dialect's 'locus.conv2d' op.
    assert "error: conv2d: weight [4, 3, 3, 3] expects 3 input channels " \
        "but input [1, 5, 8, 8] has 5" in str(info.value)
    assert "'locus." not in str(info.value)


def test_an_error_names_the_users_call_not_the_ops_it_records():
    """masked_fill records a where, expand a broadcast, std a var: their
    errors name the call the user wrote, at the user's line, and give the
    cast advice in both languages."""
    g = locus.Graph("call_names")
    x = g.input("x", [4, 8])
    y = g.input("y", [3, 5])
    cases = [
        (lambda: locus.masked_fill(x, y, 0.0),  # @masked
         "# @" + "masked", "masked_fill expects i1 tensors, but the mask is f32 [3, 5]"),
        (lambda: locus.expand(x, [3, 8]),  # @expand
         "# @" + "expand", "expand: cannot broadcast [4, 8] to [3, 8]"),
        (lambda: locus.std(x, [7]),  # @std
         "# @" + "std", "std: axis 7 is out of range for [4, 8]"),
        (lambda: x + y,  # @add
         "# @" + "add", "add: operands of shapes [4, 8] and [3, 5] do not broadcast"),
    ]
    for call, mark, text in cases:
        with pytest.raises(locus.Error) as info:
            call()
        assert info.value.line == line_of(mark), str(info.value)
        assert text in str(info.value)
        assert "locus." not in str(info.value).split("error:")[1].replace(
            "locus.cast", "")


def test_l1_smooth_l1_and_binary_cross_entropy_losses_match_pytorch():
    """F.l1_loss, smooth_l1_loss (beta 1, 0.3 and 0), binary_cross_entropy
    and binary_cross_entropy_with_logits, and their nn layers, against
    PyTorch: the losses (mean and sum) and the input's gradient, on the
    CPU and on sim."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(17)
    v = rng.uniform(-3, 3, (6, 5)).astype(np.float32)
    t = rng.uniform(-3, 3, (6, 5)).astype(np.float32)
    p = rng.uniform(0.02, 0.98, (6, 5)).astype(np.float32)
    q = rng.uniform(0, 1, (6, 5)).astype(np.float32)
    cases = {
        "l1": (lambda x, y: locus.l1_loss(x, y), lambda x, y: F.l1_loss(x, y), v, t),
        "l1_sum": (lambda x, y: locus.nn.L1Loss(reduction="sum")(x, y),
                   lambda x, y: F.l1_loss(x, y, reduction="sum"), v, t),
        "smooth": (lambda x, y: locus.smooth_l1_loss(x, y),
                   lambda x, y: F.smooth_l1_loss(x, y), v, t),
        "smooth_beta": (lambda x, y: locus.nn.SmoothL1Loss(beta=0.3)(x, y),
                        lambda x, y: F.smooth_l1_loss(x, y, beta=0.3), v, t),
        "smooth_zero": (lambda x, y: locus.smooth_l1_loss(x, y, "sum", 0.0),
                        lambda x, y: F.smooth_l1_loss(x, y, reduction="sum",
                                                      beta=0.0), v, t),
        "bce": (lambda x, y: locus.binary_cross_entropy(x, y),
                lambda x, y: F.binary_cross_entropy(x, y), p, q),
        "bce_layer": (lambda x, y: locus.nn.BCELoss(reduction="sum")(x, y),
                      lambda x, y: F.binary_cross_entropy(x, y, reduction="sum"),
                      p, q),
        "logits": (lambda x, y: locus.binary_cross_entropy_with_logits(x, y),
                   lambda x, y: F.binary_cross_entropy_with_logits(x, y), v, q),
        "logits_layer": (lambda x, y: locus.nn.BCEWithLogitsLoss()(x, y),
                         lambda x, y: F.binary_cross_entropy_with_logits(x, y),
                         v, q),
    }
    for name, (ours, theirs, x0, y0) in cases.items():
        g = locus.Graph("loss_" + name)
        x = g.parameter("x", list(x0.shape), x0.flatten().tolist())
        y = g.input("y", list(y0.shape))
        loss = ours(x, y)
        g.output("loss", loss)
        g.output("grad", locus.grad(loss, [x])[0])
        tx = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
        want = theirs(tx, torch.tensor(y0, dtype=torch.float64))
        want.backward()
        for options in ({"policy": "cpu", "devices": ["cpu"]},
                        {"policy": "prefer-gpu", "devices": ["cpu", "cuda:0"],
                         "device_map": "cuda:0=sim"}):
            got = locus.compile(g, **options).run(y=y0)
            np.testing.assert_allclose(got["loss"], want.item(), rtol=2e-5,
                                       err_msg=name)
            np.testing.assert_allclose(got["grad"], tx.grad.numpy(), rtol=2e-4,
                                       atol=1e-6, err_msg=name)
    g = locus.Graph("loss_errors")
    x = g.input("x", [4, 3])
    with pytest.raises(locus.Error) as info:
        locus.l1_loss(x, g.input("z", [3, 4]))  # @l1-shapes
    assert info.value.line == line_of("# @l1-shapes")
    assert "l1_loss: input [4, 3] and target [3, 4] have different shapes" \
        in str(info.value)
    with pytest.raises(locus.Error) as info:
        locus.smooth_l1_loss(x, x, "mean", -1.0)
    assert "smooth_l1_loss: beta must be a finite number >= 0, got -1" \
        in str(info.value)


def test_one_recording_compiles_for_training_and_for_evaluation():
    """A model recorded once in training mode (BatchNorm, dropout, SGD)
    compiles with eval=True as PyTorch's model.eval() under no_grad: with
    the weights and running statistics PyTorch trained, its output is
    torch's eval output, it writes no state, and its runs agree (no mask)."""
    torch = pytest.importorskip("torch")
    g = locus.Graph("bn_dropout")
    x = g.input("x", [8, 3, 6, 6])
    conv = locus.nn.Conv2d(g, 3, 5, 3, padding=1, name="conv")
    bn = locus.nn.BatchNorm2d(g, 5, name="bn")
    fc = locus.nn.Linear(g, 5 * 6 * 6, 4, name="fc")
    h = locus.nn.Dropout(0.3)(locus.relu(bn(conv(x))))
    y = fc(h.reshape(8, -1))
    g.output("y", y)
    loss = (y * y).mean()
    g.output("loss", loss)
    locus.optim.SGD(conv.parameters() + bn.parameters() + fc.parameters(),
                    lr=0.05).step(loss)
    trainer = locus.compile(g, policy="cpu", devices=["cpu"])
    evaluator = locus.compile(g, policy="cpu", devices=["cpu"], eval=True)

    torch.manual_seed(3)
    tnet = torch.nn.ModuleDict({
        "conv": torch.nn.Conv2d(3, 5, 3, padding=1), "bn": torch.nn.BatchNorm2d(5),
        "fc": torch.nn.Linear(5 * 6 * 6, 4)})
    tdrop = torch.nn.Dropout(0.3)

    def forward(t):
        th = tdrop(torch.relu(tnet["bn"](tnet["conv"](t))))
        return tnet["fc"](th.reshape(8, -1))

    opt = torch.optim.SGD(tnet.parameters(), lr=0.05)
    rng = np.random.default_rng(4)
    for _ in range(3):
        xs = torch.tensor(rng.uniform(-1, 1, (8, 3, 6, 6)), dtype=torch.float32)
        opt.zero_grad()
        (forward(xs) ** 2).mean().backward()
        opt.step()
        trainer.run(x=xs.numpy())  # the training model still trains
    tnet.eval()
    tdrop.eval()
    for name, value in tnet.state_dict().items():
        if not name.endswith("num_batches_tracked"):
            evaluator.set_state(name, value.detach().numpy())
    before = {n: evaluator.state(n).copy() for n in evaluator.state_names}
    xs = rng.uniform(-1, 1, (8, 3, 6, 6)).astype(np.float32)
    with torch.no_grad():
        want = forward(torch.tensor(xs)).numpy()
    first = evaluator.run(x=xs)
    np.testing.assert_allclose(first["y"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(evaluator.run(x=xs)["y"], first["y"])
    for n in evaluator.state_names:
        np.testing.assert_array_equal(evaluator.state(n), before[n])


def test_a_mobile_cnn_trains_as_pytorch_then_evaluates_from_one_recording():
    """A MobileNet-style block (depthwise conv, BatchNorm in training,
    ReLU6, pointwise conv, Hardswish, pooling, a head), SGD with momentum:
    30 steps' losses against PyTorch in float64 from the same weights,
    then the same recording compiled with eval=True gives PyTorch's eval()
    logits with the state Locus trained."""
    torch = pytest.importorskip("torch")
    g = locus.Graph("mobile_train")
    x = g.input("x", [6, 4, 8, 8])
    labels = g.input("labels", [6], dtype="i64")
    net = locus.nn.Sequential(
        locus.nn.Conv2d(g, 4, 4, 3, padding=1, groups=4, bias=False,
                        name="dw"),
        locus.nn.BatchNorm2d(g, 4, name="bn"),
        locus.nn.ReLU6(),
        locus.nn.Conv2d(g, 4, 8, 1, name="pw"),
        locus.nn.Hardswish(),
        locus.nn.AdaptiveAvgPool2d(1),
        locus.nn.Flatten(),
        locus.nn.Linear(g, 8, 3, name="head"))
    logits = net(x)
    loss = locus.cross_entropy(logits, labels)
    g.output("logits", logits)
    g.output("loss", loss)
    locus.optim.SGD(net.parameters(), lr=0.2, momentum=0.9).step(loss)
    trainer = locus.compile(g, policy="cpu", devices=["cpu"])
    evaluator = locus.compile(g, policy="cpu", devices=["cpu"], eval=True)

    torch.manual_seed(7)
    tnet = torch.nn.Sequential(
        torch.nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False),
        torch.nn.BatchNorm2d(4), torch.nn.ReLU6(), torch.nn.Conv2d(4, 8, 1),
        torch.nn.Hardswish(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 3)).double()
    names = {"0": "dw", "1": "bn", "3": "pw", "7": "head"}

    def locus_name(name):
        layer, field = name.split(".", 1)
        return names[layer] + "." + field

    for name, value in tnet.state_dict().items():
        if not name.endswith("num_batches_tracked"):
            trainer.set_state(locus_name(name), value.numpy().astype(np.float32))
    topt = torch.optim.SGD(tnet.parameters(), lr=0.2, momentum=0.9)
    rng = np.random.default_rng(8)
    xs = rng.uniform(-1, 1, (6, 4, 8, 8)).astype(np.float32)
    ys = rng.integers(0, 3, (6,))
    worst, losses = 0.0, []
    for _ in range(30):
        got = float(trainer.run(x=xs, labels=ys)["loss"])
        losses.append(got)
        topt.zero_grad()
        want = torch.nn.functional.cross_entropy(tnet(torch.tensor(xs).double()),
                                                 torch.tensor(ys))
        want.backward()
        topt.step()
        worst = max(worst, abs(got - float(want)) / float(want))
    print("mobile: 30 losses within %.1e relative of PyTorch float64" % worst)
    assert worst <= 1e-4, worst
    assert losses[-1] < losses[0]  # it learned

    for name in evaluator.state_names:
        evaluator.set_state(name, trainer.state(name))
    tnet.eval()
    with torch.no_grad():
        want = tnet(torch.tensor(xs).double()).numpy()
    np.testing.assert_allclose(evaluator.run(x=xs, labels=ys)["logits"], want,
                               rtol=1e-4, atol=1e-4)


def test_the_seed_cnn_trains_over_a_short_last_batch_as_pytorch():
    """The seed CNN (Conv2d, ReLU, MaxPool2d, Linear, cross-entropy) with a
    dynamic batch, SGD with momentum over a dataset of 37 in batches of 16:
    two epochs (16, 16, 5 each, no drop_last) through one compiled step,
    each loss and the final weights against PyTorch in float64 from the
    same weights; the short batch's mean and its gradients divide by 5."""
    torch = pytest.importorskip("torch")
    g = locus.Graph("seed_cnn")
    batch = locus.dyn("batch", 16)
    x = g.input("x", [batch, 3, 14, 14])
    labels = g.input("labels", [batch], dtype="i64")
    net = locus.nn.Sequential(
        locus.nn.Conv2d(g, 3, 16, 3, padding=1, name="conv1"),
        locus.nn.ReLU(), locus.nn.MaxPool2d(2), locus.nn.Flatten(),
        locus.nn.Linear(g, 16 * 7 * 7, 10, name="fc"))
    loss = locus.cross_entropy(net(x), labels)
    g.output("loss", loss)
    locus.optim.SGD(net.parameters(), lr=0.05, momentum=0.9).step(loss)
    step = locus.compile(g, policy="cpu", devices=["cpu"])

    torch.manual_seed(3)
    tnet = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(16 * 7 * 7, 10)).double()
    names = {"0": "conv1", "4": "fc"}
    for name, value in tnet.state_dict().items():
        layer, field = name.split(".", 1)
        step.set_state(names[layer] + "." + field,
                       value.numpy().astype(np.float32))
    topt = torch.optim.SGD(tnet.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(9)
    data = rng.uniform(-1, 1, (37, 3, 14, 14)).astype(np.float32)
    targets = rng.integers(0, 10, (37,))
    worst, sizes = 0.0, []
    for _ in range(2):
        for start in range(0, 37, 16):
            xs, ys = data[start:start + 16], targets[start:start + 16]
            sizes.append(len(xs))
            got = float(step.run(x=xs, labels=ys)["loss"])
            topt.zero_grad()
            want = torch.nn.functional.cross_entropy(
                tnet(torch.tensor(xs).double()), torch.tensor(ys))
            want.backward()
            topt.step()
            worst = max(worst, abs(got - float(want)) / float(want))
    assert sizes == [16, 16, 5, 16, 16, 5]
    print("seed CNN: 6 losses within %.1e relative of PyTorch float64" % worst)
    assert worst <= 1e-4, worst
    for name, value in tnet.state_dict().items():
        layer, field = name.split(".", 1)
        np.testing.assert_allclose(step.state(names[layer] + "." + field),
                                   value.numpy(), rtol=1e-4, atol=1e-5)


def test_bf16_seed_cnn_training_stays_within_pytorch_autocasts_spread():
    """The seed CNN (Conv2d 3-16, ReLU, MaxPool2d, Linear 784-10,
    cross-entropy), 20 SGD steps with momentum from the same weights: with
    precision="bf16" Locus stays as close to float64 training as
    torch.autocast(device_type="cpu", dtype=torch.bfloat16) does, by the
    largest relative loss difference over the steps."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    batches = [(rng.uniform(-1, 1, (16, 3, 14, 14)).astype(np.float32),
                rng.integers(0, 10, (16,))) for _ in range(20)]
    torch.manual_seed(5)
    start = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(16 * 7 * 7, 10)).state_dict()

    def locus_losses(precision):
        g = locus.Graph("seed_cnn_" + precision)
        x = g.input("x", [16, 3, 14, 14])
        labels = g.input("labels", [16], dtype="i64")
        net = locus.nn.Sequential(
            locus.nn.Conv2d(g, 3, 16, 3, padding=1, name="conv1"),
            locus.nn.ReLU(), locus.nn.MaxPool2d(2), locus.nn.Flatten(),
            locus.nn.Linear(g, 16 * 7 * 7, 10, name="fc"))
        loss = locus.cross_entropy(net(x), labels)
        g.output("loss", loss)
        locus.optim.SGD(net.parameters(), lr=0.05, momentum=0.9).step(loss)
        step = locus.compile(g, policy="cpu", devices=["cpu"],
                             precision=precision, cache=False)
        names = {"0": "conv1", "4": "fc"}
        for name, value in start.items():
            layer, field = name.split(".", 1)
            step.set_state(names[layer] + "." + field, value.numpy())
        return np.array([float(step.run(x=xs, labels=ys)["loss"])
                         for xs, ys in batches])

    def torch_losses(dtype, autocast):
        net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Flatten(),
            torch.nn.Linear(16 * 7 * 7, 10))
        net.load_state_dict(start)
        net = net.to(dtype)
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        out = []
        for xs, ys in batches:
            opt.zero_grad()
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16,
                                enabled=autocast):
                logits = net(torch.from_numpy(xs).to(dtype))
            loss = torch.nn.functional.cross_entropy(logits.to(dtype),
                                                     torch.from_numpy(ys))
            loss.backward()
            opt.step()
            out.append(float(loss))
        return np.array(out)

    exact = torch_losses(torch.float64, False)
    spread = np.max(np.abs(torch_losses(torch.float32, True) - exact) / exact)
    ours_f32, ours_bf16 = locus_losses("fp32"), locus_losses("bf16")
    np.testing.assert_allclose(ours_f32, exact, rtol=1e-4)
    ours = np.max(np.abs(ours_bf16 - exact) / exact)
    print("seed CNN in bf16: losses within %.1e of float64 (autocast: %.1e)"
          % (ours, spread))
    assert spread > 1e-4  # autocast did round
    assert 1e-4 < ours <= 2 * spread


def test_runtime_views_feed_and_read_without_copies(tmp_path):
    """locus.runtime.Model.input_view / output_view: NumPy arrays over the
    runtime's own memory (in place on the CPU; pinned mirrors for a GPU's
    tensors, sim here). Written in place and run with run_in_place(), the
    step gives run()'s outputs; an output view is read-only and holds the
    last run; a view keeps its model alive."""
    x = np.random.default_rng(5).uniform(-1, 1, (8, 16)).astype(np.float32)
    g = locus.Graph("on_gpu")
    xg = g.input("x", [8, 16], device="cuda:0")
    g.output("y", locus.softmax(locus.relu(xg) * 2.0, -1))
    paths = []
    for name, graph, options in (
            ("cpu", mlp_graph(), dict(policy="cpu", devices=["cpu"])),
            ("gpu", g, dict(policy="strict", devices=["cpu", "cuda:0"]))):
        compiled = locus.compile(graph, **options)
        paths.append((str(tmp_path / (name + ".locus")), compiled.run(x=x)["y"]))
        compiled.save(paths[-1][0], cpu="x86-64")
    for path, want in paths:
        loaded = locus.runtime.load(path)
        if path.endswith("gpu.locus"):  # x and y live on the GPU (or sim)
            assert "cuda:0 -> " in loaded.report
        view = loaded.input_view("x")
        assert view.shape == (8, 16) and view.dtype == np.float32
        view[...] = x
        loaded.run_in_place()
        y = loaded.output_view("y")
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-7)
        with pytest.raises(ValueError):
            y[0, 0] = 1.0  # read-only
        view[...] = 2 * x
        loaded.run_in_place()
        y2 = loaded.output_view("y")
        np.testing.assert_allclose(y2, loaded.run(x=2 * x)["y"], rtol=1e-6,
                                   atol=1e-7)
        with pytest.raises(KeyError) as info:
            loaded.input_view("z")
        assert "input 'z' is not the model's; its inputs: x" in str(info.value)
        del loaded
        np.testing.assert_allclose(y2.sum(), y2.sum())  # still readable


def test_a_state_update_beside_a_reader_of_the_state():
    """On a GPU (sim here) a state's update and another op reading the
    state keep the order of values: the reader sees the state as the step
    began, though elementwise kernels that do not depend on each other
    otherwise share a launch and the update may be written in place."""
    g = locus.Graph("state_update")
    x = g.input("x", [64], device="cuda:0")
    s = g.buffer("s", [64], [float(i) for i in range(64)])
    g.output("y", s * 2.0)
    locus.assign(s, s * 0.9 + x)
    c = locus.compile(g, policy="prefer-gpu", devices=["cpu", "cuda:0"])
    state = np.arange(64, dtype=np.float32)
    for _ in range(3):
        y = c.run(x=np.ones(64, np.float32))["y"]
        np.testing.assert_allclose(y, 2 * state, rtol=1e-6)
        state = state * np.float32(0.9) + 1


def test_runtime_registered_arrays_feed_and_read(tmp_path):
    """locus.runtime.Model.register_host: a NumPy array's memory registered
    with the model (page-locked on a GPU; recorded only on cpu and sim, so
    False here), then set_input from it and read_output into it give run()'s
    results; the model keeps the array alive; unregistering twice, arrays
    that are not C-contiguous and outputs of the wrong dtype or shape are
    errors that say so."""
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    g = locus.Graph("on_gpu")
    xg = g.input("x", [8, 16], device="cuda:0")
    g.output("y", locus.softmax(locus.relu(xg) * 2.0, -1))
    path = str(tmp_path / "gpu.locus")
    locus.compile(g, policy="strict", devices=["cpu", "cuda:0"]).save(
        path, cpu="x86-64")
    loaded = locus.runtime.load(path)
    xs, ys = np.empty((8, 16), np.float32), np.zeros((8, 16), np.float32)
    assert loaded.register_host(xs) is False  # sim: nothing to lock
    assert loaded.register_host(ys) is False
    for k in range(3):
        xs[...] = x * (k + 1)
        loaded.set_input("x", xs)
        loaded.run_in_place()
        got = loaded.read_output("y", out=ys)
        assert got is ys
        np.testing.assert_allclose(ys, loaded.run(x=x * (k + 1))["y"],
                                   rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(loaded.read_output("y"), ys)  # a new array
    with pytest.raises(ValueError) as info:
        loaded.read_output("y", out=np.zeros((8, 16), np.float64))
    assert "output 'y' is float32 of shape (8, 16)" in str(info.value)
    with pytest.raises(ValueError) as info:
        loaded.register_host(np.zeros((16, 8), np.float32).T)
    assert "C-contiguous" in str(info.value)
    with pytest.raises(TypeError):
        loaded.register_host([1.0, 2.0])
    with pytest.raises(KeyError):
        loaded.set_input("z", xs)
    loaded.unregister_host(xs)
    with pytest.raises(locus.Error) as info:
        loaded.unregister_host(xs)
    assert ("invalid argument: no host memory was registered at" in
            str(info.value))
    assert "(1 range is registered)" in str(info.value)
    del xs  # the model still holds ys; dropping the model releases it
    del loaded
    assert ys.sum() > 0


def test_bf16_training_stays_within_pytorch_autocasts_spread():
    """An MLP (Linear 32-64, ReLU, Linear 64-8, MSE) trained 30 SGD steps
    from the same weights: Locus with precision="bf16" keeps as close to
    fp32 training as torch.autocast(device_type="cpu",
    dtype=torch.bfloat16) does, by the largest loss difference over the
    steps."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(21)
    w1 = rng.uniform(-0.3, 0.3, (64, 32)).astype(np.float32)
    w2 = rng.uniform(-0.3, 0.3, (8, 64)).astype(np.float32)
    batches = [(rng.uniform(-1, 1, (16, 32)).astype(np.float32),
                rng.uniform(-1, 1, (16, 8)).astype(np.float32))
               for _ in range(30)]

    def locus_losses(precision):
        g = locus.Graph("mlp_" + precision)
        x, y = g.input("x", [16, 32]), g.input("y", [16, 8])
        p1 = g.parameter("w1", [64, 32], w1.flatten().tolist())
        p2 = g.parameter("w2", [8, 64], w2.flatten().tolist())
        loss = locus.mse_loss(locus.linear(locus.relu(locus.linear(x, p1)),
                                           p2), y)
        g.output("loss", loss)
        locus.optim.SGD([p1, p2], lr=0.5).step(loss)
        model = locus.compile(g, policy="cpu", devices=["cpu"],
                              precision=precision, cache=False)
        return np.array([float(model.run(x=xb, y=yb)["loss"])
                         for xb, yb in batches])

    def torch_losses(autocast):
        net = torch.nn.Sequential(torch.nn.Linear(32, 64, bias=False),
                                  torch.nn.ReLU(),
                                  torch.nn.Linear(64, 8, bias=False))
        with torch.no_grad():
            net[0].weight.copy_(torch.from_numpy(w1))
            net[2].weight.copy_(torch.from_numpy(w2))
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        out = []
        for xb, yb in batches:
            opt.zero_grad()
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16,
                                enabled=autocast):
                pred = net(torch.from_numpy(xb))
            loss = torch.nn.functional.mse_loss(pred.float(),
                                                torch.from_numpy(yb))
            loss.backward()
            opt.step()
            out.append(float(loss))
        return np.array(out)

    torch_f32, torch_bf16 = torch_losses(False), torch_losses(True)
    ours_f32, ours_bf16 = locus_losses("fp32"), locus_losses("bf16")
    np.testing.assert_allclose(ours_f32, torch_f32, rtol=1e-4)
    spread = np.abs(torch_bf16 - torch_f32).max()
    assert spread > 0  # autocast did round
    assert np.abs(ours_bf16 - ours_f32).max() <= 2 * spread + 1e-4
    assert not np.array_equal(ours_bf16, ours_f32)
