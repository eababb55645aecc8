#!/usr/bin/env python3
"""PyTorch weights into a Locus artifact, through a safetensors file.

    torch_weights.py BUILD_DIR [--no-torch]

Compiles the seed's model (torch.nn.Linear(10, 2) + MSELoss, names
"model.weight" and "model.bias") ahead of time with examples/save_seed,
makes a torch.nn.Linear(10, 2) of its own (torch.manual_seed(0)) and writes
its state_dict as safetensors, writes a batch as .npy files, and runs the
artifact with `locus-run --weights`: the loss must equal PyTorch's to float32
rounding (1e-6 relative).

safetensors needs nothing but json and struct to write, so this is all a
user needs to move weights in. With --no-torch (or where /usr/bin/python3
has no torch) the weights are random and the reference is computed here in
double precision, so the check runs on a machine without PyTorch too.
"""
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile


def write_safetensors(path, tensors):
    """tensors: {name: (shape, flat list of floats)} written as F32."""
    header, data, offset = {"__metadata__": {"format": "pt"}}, b"", 0
    for name, (shape, values) in tensors.items():
        chunk = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": list(shape),
                        "data_offsets": [offset, offset + len(chunk)]}
        data += chunk
        offset += len(chunk)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * (-(len(header) + 11) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + struct.pack("<%df" % len(values), *values))


def read_npy_f32(path):
    with open(path, "rb") as f:
        raw = f.read()
    length = struct.unpack("<H", raw[8:10])[0]
    body = raw[10 + length:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


def torch_model(xs, ys):
    """The weights and loss of torch.nn.Linear(10, 2), seed 0."""
    import torch
    torch.manual_seed(0)
    model = torch.nn.Linear(10, 2)
    x = torch.tensor(xs, dtype=torch.float32).reshape(100, 10)
    y = torch.tensor(ys, dtype=torch.float32).reshape(100, 2)
    loss = torch.nn.MSELoss()(model(x), y).item()
    state = {"model." + k: (list(v.shape), v.flatten().tolist())
             for k, v in model.state_dict().items()}
    return state, loss, "PyTorch %s" % torch.__version__


def plain_model(xs, ys):
    """Random weights, and the loss in double precision."""
    rng = random.Random(0)
    w = [rng.uniform(-0.3, 0.3) for _ in range(20)]
    b = [rng.uniform(-0.3, 0.3) for _ in range(2)]
    w = list(struct.unpack("<20f", struct.pack("<20f", *w)))  # as f32
    b = list(struct.unpack("<2f", struct.pack("<2f", *b)))
    total = 0.0
    for n in range(100):
        for o in range(2):
            p = b[o] + sum(xs[n * 10 + i] * w[o * 10 + i] for i in range(10))
            total += (p - ys[n * 2 + o]) ** 2
    state = {"model.weight": ([2, 10], w), "model.bias": ([2], b)}
    return state, total / 200, "a double-precision reference"


def main():
    build = sys.argv[1]
    use_torch = "--no-torch" not in sys.argv
    if use_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            use_torch = False
    rng = random.Random(1)
    xs = [rng.uniform(-1, 1) for _ in range(1000)]
    ys = [rng.uniform(-1, 1) for _ in range(200)]
    xs = list(struct.unpack("<1000f", struct.pack("<1000f", *xs)))
    ys = list(struct.unpack("<200f", struct.pack("<200f", *ys)))
    state, expected, source = (torch_model if use_torch else plain_model)(
        xs, ys)
    with tempfile.TemporaryDirectory() as tmp:
        artifact = os.path.join(tmp, "seed.locus")
        subprocess.run([os.path.join(build, "examples", "save_seed"), artifact,
                        "--devices", "cpu"], check=True,
                       stdout=subprocess.DEVNULL)
        weights = os.path.join(tmp, "model.safetensors")
        write_safetensors(weights, state)
        write_npy(os.path.join(tmp, "x.npy"), [100, 10], xs)
        write_npy(os.path.join(tmp, "y.npy"), [100, 2], ys)
        out = os.path.join(tmp, "out")
        run = subprocess.run(
            [os.path.join(build, "tools", "locus-run"), artifact,
             "--weights", weights, "--input", "x=" + os.path.join(tmp, "x.npy"),
             "--input", "y=" + os.path.join(tmp, "y.npy"),
             "--save-outputs", out, "--quiet"],
            capture_output=True, text=True)
        print(run.stdout, end="")
        if run.returncode != 0:
            print(run.stderr, end="")
            return 1
        got = read_npy_f32(os.path.join(out, "loss.npy"))[0]
    error = abs(got - expected) / abs(expected)
    print("loss with the weights from %s: locus %.9g, reference %.9g, "
          "relative error %.2g" % (source, got, expected, error))
    return 0 if error <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
