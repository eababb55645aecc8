"""tools/gpu-check run: every check and benchmark on the GPU machine, each
step with its own time limit, none able to stop the others; one table at
the end, and gpu-check.md / gpu-check.json written to $OUT (or the
bundle).

Each step prints PASS, FAIL or SKIP with its reason. Without a CUDA device
every GPU step is SKIP "no CUDA device (why)" and the table still prints.
"""
import ctypes
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from . import graphs, kinds, workloads

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class Runner:
    """Runs steps against one deadline and keeps their results."""

    def __init__(self, bundle, out_dir, budget, only, sim=False):
        self.bundle, self.out_dir, self.only, self.sim = bundle, out_dir, only, sim
        self.deadline = time.monotonic() + budget
        self.results, self.rows, self.profiles = [], {}, {}
        self.log = open(os.path.join(out_dir, "gpu-check.log"), "w")
        # Outputs the checks compare, kept out of out_dir (the device tool
        # brings back 8 files; the report is what matters).
        self.scratch = tempfile.mkdtemp(prefix="gpu-check-")
        self.env = dict(os.environ)
        lib = os.path.join(bundle, "bin")
        self.env["LD_LIBRARY_PATH"] = lib + (":" + self.env["LD_LIBRARY_PATH"]
                                             if self.env.get("LD_LIBRARY_PATH") else "")
        # --sim: a dry run of every step here, cuda:0 mapped to the sim
        # device (no PyTorch peer, no sanitizer): it checks the instrument.
        self.gpu_why = "" if sim else cuda_device()
        self.device_map = ["--device-map", "cuda:0=sim"] if sim else []

    def say(self, text):
        print(text, flush=True)
        self.log.write(text + "\n")
        self.log.flush()

    def left(self):
        return self.deadline - time.monotonic()

    def wanted(self, name):
        return not self.only or any(o in name for o in self.only)

    def record(self, name, status, reason="", seconds=0.0, details=""):
        self.results.append(dict(step=name, status=status, reason=reason,
                                 seconds=round(seconds, 1)))
        self.say("%-4s %-44s %s%s" % (status, name, reason,
                                      " (%.1f s)" % seconds if seconds else ""))
        if details:
            self.log.write(details + "\n")

    def command(self, cmd, limit, env=None):
        """(exit status or "timeout", output, seconds) of `cmd`, killed with
        its children after `limit` seconds (capped by the deadline)."""
        limit = max(1.0, min(limit, self.left()))
        start = time.monotonic()
        e = dict(self.env)
        e.update(env or {})
        self.log.write("$ %s\n" % " ".join(cmd))
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 env=e, text=True, errors="replace",
                                 start_new_session=True)
        except OSError as err:
            return 127, str(err), 0.0
        try:
            out, _ = p.communicate(timeout=limit)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            rc = "timeout"
        self.log.write(out[-20000:] + "\n")
        return rc, out, time.monotonic() - start

    def gpu_step(self, name, budget_needed=5):
        """Whether a GPU step named `name` runs; records SKIP otherwise."""
        if not self.wanted(name):
            return False
        if self.gpu_why:
            self.record(name, "SKIP", "no CUDA device (%s)" % self.gpu_why)
            return False
        if self.left() < budget_needed:
            self.record(name, "SKIP", "no time left in the run's budget")
            return False
        return True


def cuda_device():
    """'' when the CUDA driver reports a device; else why not."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return "no CUDA driver: %s" % e
    if cuda.cuInit(0) != 0:
        return "cuInit failed"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "the CUDA driver reports no device"
    return ""


def gtest_summary(out):
    failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+)", out, re.M)))
    count = re.search(r"^\[  SKIPPED \] (\d+) tests?[,.]", out, re.M)
    skipped = int(count.group(1)) if count else 0
    passed = re.search(r"\[  PASSED  \] (\d+) test", out)
    return failed, skipped, passed.group(1) if passed else "0"


def step_gtest(r, name, binary, args=(), limit=90, env=None):
    if not r.gpu_step(name):
        return
    rc, out, secs = r.command([os.path.join(r.bundle, "bin", binary)] + list(args),
                              limit, env)
    failed, skipped, passed = gtest_summary(out)
    if rc == "timeout":
        r.record(name, "FAIL", "timed out after %.0f s" % secs, secs, out[-4000:])
    elif rc == 0:
        r.record(name, "PASS", "%s passed, %d skipped" % (passed, skipped), secs)
    else:
        r.record(name, "FAIL", "%d failed: %s" % (len(failed), ", ".join(failed)[:300])
                 or "exit %s" % rc, secs, out[-6000:])


def environment(r):
    r.say("== gpu-check %s" % time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()))
    rc, out, _ = r.command(["nvidia-smi", "--query-gpu=name,driver_version,"
                            "memory.total,clocks.max.sm", "--format=csv,noheader"], 10)
    r.gpu_name = out.strip().splitlines()[0] if rc == 0 and out.strip() else "no GPU"
    r.say("GPU: %s" % r.gpu_name)
    r.say("CUDA device: %s" % ("sim (--sim: a dry run of the instrument)" if r.sim else
                               "yes" if not r.gpu_why else "none (%s)" % r.gpu_why))
    found = {}
    for lib in ("libcuda.so.1", "libcublas.so.13", "libcublas.so.12", "libcudnn.so.9",
                "libnccl.so.2", "libsodium.so.23"):
        try:
            ctypes.CDLL(lib)
            found[lib] = "found"
        except OSError:
            found[lib] = "absent"
    r.libraries = found
    r.say("libraries: " + ", ".join("%s %s" % kv for kv in found.items()))
    # What the runtime itself found (its report's line for cuda:0): the
    # driver, cuBLAS and whether convolutions go through cuDNN.
    rc, out, _ = r.command([os.path.join(r.bundle, "bin", "locus-run"),
                            os.path.join(r.bundle, "bench", "conv_dgrad.locus"),
                            "--random-inputs"] + r.device_map, 60)
    r.runtime_report = next((line for line in out.splitlines()
                             if line.startswith("cuda:0 ->")), "exit %s" % rc)
    r.say("runtime: " + r.runtime_report)
    r.sanitizer = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",
                     "/usr/local/cuda/compute-sanitizer/compute-sanitizer")
         if os.path.exists(p)), "")
    r.say("compute-sanitizer: %s" % (r.sanitizer or "absent"))


# --- benchmarks -----------------------------------------------------------

def parse_time(out, metric):
    """The median (us) that `metric` names in locus-run's output."""
    if metric == "step":
        m = re.search(r"^step time: median ([0-9.e+]+) us", out, re.M)
    else:
        part = {"in": "inputs in", "step_io": "step", "out": "outputs out"}[metric]
        m = re.search(r"^host I/O:.*?%s median ([0-9.e+]+) us" % part, out, re.M)
    return float(m.group(1)) if m else None


def row_args(r, w):
    """A row's locus-run arguments, `{bundle}` made the bundle's path."""
    return [a.replace("{bundle}", r.bundle) for a in w["args"]]


def locus_round(r):
    """One run of every Locus workload; row name -> us (or an error)."""
    run = os.path.join(r.bundle, "bin", "locus-run")
    times = {}
    for w in workloads.ALL:
        if not w["artifact"] or not r.wanted(w["name"]) or r.left() < 20:
            continue
        art = os.path.join(r.bundle, "bench", w["artifact"])
        if not os.path.exists(art):
            times[w["name"]] = "no artifact (prepare could not make it)"
            continue
        runs = 3 if r.sim else w["runs"]
        rc, out, _ = r.command([run, art, "--random-inputs", "--runs", str(runs),
                                "--quiet"] + row_args(r, w) + r.device_map, 60,
                               w["env"])
        t = parse_time(out, w["metric"]) if rc == 0 else None
        # A GPU row that ran on sim timed the host (the copy rows once did,
        # for want of PTX in an artifact with no kernels): an error.
        on_sim = next((line for line in out.splitlines()
                       if line.startswith("cuda:0 -> sim")), None)
        if on_sim and not r.sim:
            t, out = None, "ran on sim, not the GPU: " + on_sim
        times[w["name"]] = t / w["per"] if t is not None else (
            "locus-run: %s" % (out.strip().splitlines() or ["exit %s" % rc])[-1][:200])
        if "steps replay as a CUDA graph" in out:
            r.graph_rows.add(w["name"])
    return times


def peer_round(r):
    """One run of PyTorch over every peer key; key -> result, or a reason."""
    if r.sim:
        return None, "--sim: no PyTorch peer"
    keys = sorted({w["peer"] for w in workloads.ALL if w["peer"] and r.wanted(w["name"])})
    rc, out, secs = r.command([sys.executable, os.path.join(HERE, "peer.py"),
                               "--only", ",".join(keys)], min(150, r.left() - 10))
    line = out.strip().splitlines()[-1] if out.strip() else ""
    if rc != 0 or not line.startswith("{"):
        return None, "PyTorch with CUDA did not run (%s): %s" % (
            rc, (out.strip().splitlines() or [""])[-1][:200])
    return json.loads(line), "%.0f s" % secs


def benchmarks(r, rounds):
    name = "benchmarks beside PyTorch"
    if not r.gpu_step(name, 30):
        return
    r.graph_rows = set()
    locus, peer, start = {}, {}, time.monotonic()
    for k in range(rounds):
        if r.left() < 60:
            break
        for row, t in locus_round(r).items():
            locus.setdefault(row, []).append(t)
        got, why = peer_round(r)
        if got is None:
            r.peer_why = why
        for key, v in (got or {}).items():
            peer.setdefault(key, []).append(v)
    r.rows = summarize(locus, peer)
    bad = [row for row, v in r.rows.items() if isinstance(v["locus"], str)
           and not v["locus"].startswith("no artifact")]
    missing = [row for row, v in r.rows.items() if isinstance(v["locus"], str)
               and v["locus"].startswith("no artifact")]
    r.record(name, "FAIL" if bad else "PASS",
             "%d rounds; %s%s" % (len(peer.get("torch", [])) or rounds,
                                  "failed: " + ", ".join(bad) if bad else "no row failed",
                                  "; not in the bundle: " + ", ".join(missing)
                                  if missing else ""),
             time.monotonic() - start)


def med(values):
    nums = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(nums) if nums else (values[-1] if values else None)


def summarize(locus, peer):
    rows = {}
    for w in workloads.ALL:
        p = {}
        for mode in ("fp32", "tf32", "graph"):
            p[mode] = med([(v.get(mode) if isinstance(v, dict) else None)
                           for v in peer.get(w["peer"], [])]) if w["peer"] else None
            if isinstance(p[mode], (int, float)):
                p[mode] /= w["per"]
        errors = [v.get("error") for v in peer.get(w["peer"], [])
                  if isinstance(v, dict) and v.get("error")]
        rows[w["name"]] = dict(title=w["title"], locus=med(locus.get(w["name"], [])),
                               peer=p, peer_error=errors[-1] if errors else "")
    return rows


# --- correctness beyond the unit tests -----------------------------------

def read_npy(path):
    """(dtype char, values) of a little-endian .npy file of f4, i8, i4 or b1
    (no NumPy on purpose: the GPU machine's Python may lack it)."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s is not .npy" % path)
    n = int.from_bytes(data[8:10], "little") if data[6] == 1 else \
        int.from_bytes(data[8:12], "little")
    start = (10 if data[6] == 1 else 12) + n
    header = data[start - n:start].decode("latin1")
    descr = re.search(r"'descr': '([^']+)'", header).group(1)
    fmt = {"<f4": "f", "<i8": "q", "<i4": "i", "|b1": "?", "|u1": "B",
           "<f8": "d"}[descr]
    size = struct.calcsize(fmt)
    body = data[start:]
    return fmt, struct.unpack("<%d%s" % (len(body) // size, fmt), body)


def worst_error(got, want, atol, rtol):
    """max |got - want| / (atol + rtol |want|); inf on a size mismatch."""
    if len(got) != len(want):
        return float("inf")
    w = 0.0
    for g, e in zip(got, want):
        if g != g or e != e:
            if not (g != g and e != e):
                return float("inf")
            continue
        w = max(w, abs(float(g) - float(e)) / (atol + rtol * abs(float(e))))
    return w


def whole_models(r):
    """The example models' training steps on the GPU against the same
    artifact on host kernels (--device-map cuda:0=cpu), a few steps each."""
    run = os.path.join(r.bundle, "bin", "locus-run")
    # TF32 rounds convolution and product operands (about 1e-3 relative):
    # its loss is held to a looser tolerance than fp32's. bf16's products
    # (cublasGemmEx against oneDNN or widened sgemm on the host) round their
    # results to 8 bits, in another order: 2e-2.
    for model, runs, rtol, folder in (("transformer", 4, 1e-4, "numerics"),
                                      ("transformer_bf16", 4, 2e-2, "numerics"),
                                      ("resnet18", 2, 1e-4, "numerics"),
                                      ("resnet18_tf32", 2, 1e-2, "numerics"),
                                      ("resnet18_bf16", 2, 2e-2, "numerics"),
                                      ("mlp_train_bf16", 4, 2e-2, "bench")):
        name = "numerics: %s steps, GPU vs host kernels" % model
        art = os.path.join(r.bundle, folder, model + ".locus")
        if not r.gpu_step(name, 20):
            continue
        if not os.path.exists(art):
            r.record(name, "SKIP", "not in the bundle (prepare could not make it)")
            continue
        losses, start = {}, time.monotonic()
        for where, extra in (("gpu", r.device_map),
                             ("host", ["--device-map", "cuda:0=cpu"])):
            out_dir = os.path.join(r.scratch, "numerics", model, where)
            os.makedirs(out_dir, exist_ok=True)
            rc, out, _ = r.command([run, art, "--random-inputs", "--runs", str(runs),
                                    "--quiet", "--save-outputs", out_dir] + extra, 120)
            if rc != 0:
                break
            losses[where] = read_npy(os.path.join(out_dir, "loss.npy"))[1]
        secs = time.monotonic() - start
        if len(losses) < 2:
            r.record(name, "FAIL", "the %s run failed: %s" % (
                where, (out.strip().splitlines() or ["exit %s" % rc])[-1][:200]), secs)
            continue
        err = worst_error(losses["gpu"], losses["host"], 1e-6, rtol)
        r.record(name, "PASS" if err <= 1 else "FAIL",
                 "loss after %d steps: GPU %.6g, host %.6g" % (
                     runs, losses["gpu"][0], losses["host"][0]), secs)


def dynamic_sizes(r):
    """Graphs with dynamic sizes (prepare.py's DYNAMIC): one artifact run on
    the GPU at each size against itself on host kernels (--device-map
    cuda:0=cpu), every output, 3 steps each (the second captures a CUDA
    graph at that size, the third replays it)."""
    from .prepare import DYNAMIC
    run = os.path.join(r.bundle, "bin", "locus-run")
    for model, _, _, sizes, tensors in DYNAMIC:
        name = "dynamic sizes: %s at sizes %s, GPU vs host kernels" % (
            model, ", ".join(map(str, sizes)))
        art = os.path.join(r.bundle, "dynamic", model + ".locus")
        if not r.gpu_step(name, 15):
            continue
        if not os.path.exists(art):
            r.record(name, "SKIP", "not in the bundle (prepare could not make it)")
            continue
        start, worst, why = time.monotonic(), 0.0, ""
        for n in sizes:
            inputs = []
            for tensor, _, _ in tensors:
                inputs += ["--input", "%s=%s" % (tensor, os.path.join(
                    r.bundle, "dynamic", "%s_%d_%s.npy" % (model, n, tensor)))]
            outs = {}
            for where, extra in (("gpu", r.device_map),
                                 ("host", ["--device-map", "cuda:0=cpu"])):
                out_dir = os.path.join(r.scratch, "dynamic", model, str(n), where)
                os.makedirs(out_dir, exist_ok=True)
                rc, out, _ = r.command([run, art, "--runs", "3", "--quiet",
                                        "--save-outputs", out_dir] + inputs + extra, 60)
                if rc != 0:
                    why = "the %s run at size %d failed: %s" % (
                        where, n, (out.strip().splitlines() or ["exit %s" % rc])[-1][:200])
                    break
                outs[where] = out_dir
            if why:
                break
            saved = sorted(os.listdir(outs["host"]))
            if not saved:
                why = "no outputs saved at size %d" % n
                break
            for f in saved:
                try:
                    err = worst_error(read_npy(os.path.join(outs["gpu"], f))[1],
                                      read_npy(os.path.join(outs["host"], f))[1],
                                      1e-6, 1e-4)
                except (OSError, ValueError, KeyError) as e:
                    err, why = float("inf"), "%s at size %d: %s" % (f, n, e)
                if err > 1 and not why:
                    why = "%s at size %d: %s" % (f, n, "%.3g of the tolerance" % err
                                                 if err != float("inf") else
                                                 "sizes differ")
                if err != float("inf"):
                    worst = max(worst, err)
        secs = time.monotonic() - start
        r.record(name, "PASS" if not why and worst <= 1 else "FAIL",
                 why or "worst error %.3g of the tolerance (rtol 1e-4)" % worst, secs)


def data_parallel(r):
    """The MLP step compiled for data-parallel training, run as a job of
    one rank (--distributed): its gradient buckets go through NCCL on the
    GPU, and its loss after 4 steps equals the same artifact's outside a
    job (where the average of one rank is a copy)."""
    name = "data-parallel step through NCCL, world size 1"
    art = os.path.join(r.bundle, "bench", "mlp_train_dp.locus")
    if not r.gpu_step(name, 15):
        return
    if r.sim:
        r.record(name, "SKIP", "--sim: NCCL needs a GPU")
        return
    if not os.path.exists(art):
        r.record(name, "SKIP", "not in the bundle (prepare could not make it)")
        return
    run = os.path.join(r.bundle, "bin", "locus-run")
    losses, reports, start = {}, {}, time.monotonic()
    for where, extra in (("job", ["--distributed"]), ("alone", [])):
        out_dir = os.path.join(r.scratch, "dp", where)
        os.makedirs(out_dir, exist_ok=True)
        rc, out, _ = r.command([run, art, "--random-inputs", "--runs", "4",
                                "--save-outputs", out_dir] + extra, 60)
        if rc != 0:
            r.record(name, "FAIL", "the %s run: %s" % (where, (
                out.strip().splitlines() or ["exit %s" % rc])[-1][:200]),
                time.monotonic() - start)
            return
        reports[where] = next((line for line in out.splitlines()
                               if line.startswith("cuda:0 ->")), "")
        losses[where] = read_npy(os.path.join(out_dir, "loss.npy"))[1]
    secs = time.monotonic() - start
    path = re.search(r"all-reduces through ([^;)]*\)?)", reports["job"])
    if not path or not path.group(1).startswith("NCCL"):
        r.record(name, "FAIL", "not through NCCL: " + reports["job"][-200:], secs)
        return
    err = worst_error(losses["job"], losses["alone"], 1e-6, 1e-6)
    r.record(name, "PASS" if err <= 1 else "FAIL",
             "%s; loss after 4 steps %.6g, alone %.6g%s" % (
                 path.group(1), losses["job"][0], losses["alone"][0],
                 all_reduce_cost(r, run, art)), time.monotonic() - start)


# The MLP step's gradients (weights and biases, f32): the bytes its one
# bucket all-reduces.
MLP_GRADIENT_BYTES = 4 * sum(i * o + o for i, o in zip(graphs.MLP_DIMS, graphs.MLP_DIMS[1:]))


def all_reduce_cost(r, run, art):
    """What the all-reduce adds to the step: the step's median in a job of
    one rank less its median alone (interleaved, 3 rounds of 22 runs), as
    "; all-reduce of N MiB: +X us a step (Y GB/s)", or "" when it cannot
    be timed."""
    medians = {"job": [], "alone": []}
    for _ in range(3):
        for where, extra in (("job", ["--distributed"]), ("alone", [])):
            if r.left() < 15:
                return ""
            rc, out, _ = r.command([run, art, "--random-inputs", "--runs", "22",
                                    "--quiet"] + extra, 30)
            t = parse_time(out, "step") if rc == 0 else None
            if t is None:
                return ""
            medians[where].append(t)
    extra_us = statistics.median(medians["job"]) - statistics.median(medians["alone"])
    mib = MLP_GRADIENT_BYTES / 2**20
    if extra_us <= 0:
        return "; all-reduce of %.1f MiB: within the step's noise" % mib
    return "; all-reduce of %.1f MiB: +%.1f us a step (%.0f GB/s)" % (
        mib, extra_us, MLP_GRADIENT_BYTES / extra_us / 1e3)


def onnx_models(r):
    """ONNX test models compiled for cuda:0, against their references at
    the backend tests' tolerances (rtol 1e-3, atol 1e-7)."""
    name = "ONNX test models on the GPU vs references"
    root = os.path.join(r.bundle, "onnx")
    if not r.gpu_step(name, 20):
        return
    if not os.path.isdir(root):
        r.record(name, "SKIP", "not in the bundle (prepare had no ONNX test data)")
        return
    run, start, failed, passed = os.path.join(r.bundle, "bin", "locus-run"), \
        time.monotonic(), [], 0
    for case in sorted(os.listdir(root)):
        if r.left() < 10:
            break
        d = os.path.join(root, case)
        with open(os.path.join(d, "inputs.json")) as f:
            inputs = json.load(f)
        out_dir = os.path.join(r.scratch, "onnx", case)
        os.makedirs(out_dir, exist_ok=True)
        args = sum((["--input", "%s=%s" % (n, os.path.join(d, fn))]
                    for n, fn in inputs.items()), [])
        # No device map: a model that prefer-gpu left on the CPU alone (an
        # Identity, a Shape) names no cuda:0 to map; without a GPU, cuda:0
        # runs on sim anyway.
        rc, out, _ = r.command([run, os.path.join(d, "model.locus"), "--quiet",
                                "--save-outputs", out_dir] + args, 30)
        bad = "exit %s" % rc if rc != 0 else ""
        for fn in [] if bad else sorted(os.listdir(os.path.join(d, "expected"))):
            want = read_npy(os.path.join(d, "expected", fn))
            got = read_npy(os.path.join(out_dir, fn))
            atol, rtol = (1e-7, 1e-3) if want[0] in "fd" else (0.0, 0.0)
            if worst_error(got[1], want[1], max(atol, 1e-30), rtol) > 1:
                bad = "%s differs" % fn
        if bad:
            failed.append("%s (%s)" % (case, bad))
        else:
            passed += 1
    r.record(name, "FAIL" if failed else "PASS", "%d passed%s" % (
        passed, "; failed: " + ", ".join(failed)[:300] if failed else ""),
        time.monotonic() - start)


# The reduction cases racecheck and synccheck read (about 2.4 s each under
# racecheck): one or two per strategy of --locus-map-to-gpu that shares
# memory or synchronises (warp rows, block rows, looped rows, past the
# longest group, split, columns, long rows) and the losses; all 32 took
# 78 s, a quarter of a run's budget (2026-11-27).
RACE_CASES = {  # one or two per strategy: 15 took 40 s of racecheck on an H100
    "sum_warp_rows", "softmax_block_rows", "softmax_looped_rows", "sum_split_full",
    "sum_columns_split", "mean_split_rows", "max_columns_3d", "log_softmax_long",
    "cross_entropy",
}


def sanitizers(r):
    """compute-sanitizer: memcheck over every op case, gradient case and
    training step; racecheck and synccheck over the reduction cases and
    the Transformer step."""
    cases = os.path.join(r.bundle, "cases")
    reductions = os.path.join(r.scratch, "reduction_cases")
    if os.path.isdir(cases) and not os.path.isdir(reductions):
        os.makedirs(reductions)
        for c in os.listdir(cases):
            if c in RACE_CASES:
                os.symlink(os.path.join(cases, c), os.path.join(reductions, c))
    tests = os.path.join(r.bundle, "bin", "runtime_tests")
    run = os.path.join(r.bundle, "bin", "locus-run")
    # The case tests skip without their folders: each check names its own.
    checks = [
        ("memcheck: every op case", "memcheck", [tests, "--gtest_filter=Cuda.EveryOp*"],
         {"LOCUS_GPU_CASES": cases}),
        ("memcheck: every gradient case", "memcheck",
         [tests, "--gtest_filter=Cuda.EveryGradient*"],
         {"LOCUS_GPU_GRAD_CASES": os.path.join(r.bundle, "grad_cases")}),
        ("racecheck: reduction cases", "racecheck", [tests, "--gtest_filter=Cuda.EveryOp*"],
         {"LOCUS_GPU_CASES": reductions}),
        ("synccheck: reduction cases", "synccheck", [tests, "--gtest_filter=Cuda.EveryOp*"],
         {"LOCUS_GPU_CASES": reductions}),
    ] + [("memcheck: %s step" % a, "memcheck",
          [run, os.path.join(r.bundle, "bench", a + ".locus"), "--random-inputs",
           "--runs", "2", "--quiet"], {})
         for a in ("mlp_train", "cnn_train", "transformer_gpu")] + [
        # The Transformer step's row groups of merged kernels (a layer
        # norm's backward) and its reductions side by side in one launch.
        ("%s: transformer_gpu step" % tool, tool,
         [run, os.path.join(r.bundle, "bench", "transformer_gpu.locus"),
          "--random-inputs", "--runs", "2", "--quiet"], {})
        for tool in ("racecheck", "synccheck")]
    for name, tool, cmd, env in checks:
        if not r.gpu_step(name, 15):
            continue
        if not r.sanitizer or r.sim:
            r.record(name, "SKIP", "compute-sanitizer is not on this machine"
                     if not r.sim else "--sim")
            continue
        rc, out, secs = r.command([r.sanitizer, "--tool", tool, "--error-exitcode", "86"]
                                  + cmd, 100 if cmd[0] == tests else 75, env)
        summary = re.findall(r"========= (?:ERROR SUMMARY|RACECHECK SUMMARY).*", out)
        reason = summary[-1].replace("========= ", "") if summary else "exit %s" % rc
        _, skipped, passed = gtest_summary(out)
        idle = cmd[0] == tests and (skipped or passed == "0")
        if idle:  # a sanitizer over tests that skipped has checked nothing
            reason = "no case ran (%s passed, %d skipped); %s" % (passed, skipped, reason)
        r.record(name, "PASS" if rc == 0 and not idle else "FAIL",
                 "timed out" if rc == "timeout" else reason, secs, out[-3000:])


def profiles(r):
    """Each profiled model step's top 20 kernels by GPU time, with their
    ops at the user's lines and layers."""
    run = os.path.join(r.bundle, "bin", "locus-run")
    for w in workloads.MODELS:
        name = "profile: " + w["name"]
        if not w["profile"] or not r.gpu_step(name, 15):
            continue
        rc, out, secs = r.command([run, os.path.join(r.bundle, "bench", w["artifact"]),
                                   "--random-inputs", "--runs", "3", "--quiet"]
                                  + row_args(r, w) + r.device_map, 60,
                                  {"LOCUS_PROFILE": "1"})
        rows = [line[len("locus profile: "):] for line in out.splitlines()
                if line.startswith("locus profile: ")]
        if rc != 0 or len(rows) < 2:
            r.record(name, "FAIL", "exit %s, %d rows" % (rc, len(rows)), secs)
            continue
        r.profiles[w["name"]] = rows[:22] + by_kind(rows[2:])
        r.profiles[w["name"]] += beside_pytorch(r, w, rows[2:])
        r.record(name, "PASS", "%d kernels" % (len(rows) - 3), secs)


# The steps whose kernels are set beside PyTorch's by kind (issue 35: no
# kernel of the ResNet-18 or Transformer step slower than PyTorch's); the
# others' profiles keep Locus's side alone, to stay within the budget.
BESIDE_PYTORCH = ("resnet18_train", "transformer_gpu")


def beside_pytorch(r, w, rows):
    """The step's GPU time by kind of work beside PyTorch's same step (its
    CUDA kernels under torch.profiler), or why not."""
    locus = kinds.locus_per_step(rows)
    if w["name"] not in BESIDE_PYTORCH:
        return kinds.side_by_side(locus, {})
    if r.sim or not w["peer"]:
        return kinds.side_by_side(locus, {}) + ["(PyTorch: %s)" % (
            "--sim" if r.sim else "no peer")]
    rc, out, _ = r.command([sys.executable, os.path.join(HERE, "peer.py"),
                            "--profile", w["peer"]], min(90, max(10, r.left() - 10)))
    line = out.strip().splitlines()[-1] if out.strip() else ""
    if rc != 0 or not line.startswith("{"):
        return kinds.side_by_side(locus, {}) + ["(PyTorch's profile did not run: %s)"
                                                % line[:160]]
    return kinds.side_by_side(locus, kinds.torch_per_step(json.loads(line)))


def cudnn_choices(r):
    """What cuDNN chose per convolution shape of the ResNet-18 step, in
    fp32 and with TF32 allowed (LOCUS_CUDNN_LOG=1): how many shapes took
    tensor-op math or a nondeterministic algorithm. The lines themselves
    go to the log."""
    run = os.path.join(r.bundle, "bin", "locus-run")
    for artifact in ("resnet18_train.locus", "resnet18_train_tf32.locus",
                     "resnet18_train_bf16.locus"):
        name = "cuDNN choices: " + artifact[:-len(".locus")]
        if not r.gpu_step(name, 15):
            continue
        if r.sim:
            r.record(name, "SKIP", "--sim: sim calls no cuDNN")
            continue
        rc, out, secs = r.command([run, os.path.join(r.bundle, "bench", artifact),
                                   "--random-inputs", "--runs", "1", "--quiet"]
                                  + r.device_map, 60, {"LOCUS_CUDNN_LOG": "1"})
        chosen = re.findall(r"^locus cudnn: .*? \*(\d+)/m(\d)(/nd)?", out, re.M)
        if rc != 0 or not chosen:
            r.record(name, "FAIL", "exit %s, %d shapes logged" % (rc, len(chosen)), secs)
            continue
        fma = sum(m == "3" for _, m, _ in chosen)
        tensor_ops = sum(m == "1" for _, m, _ in chosen)
        nd = sum(bool(n) for _, _, n in chosen)
        # bf16 steps: every convolution in 16 bits, tensor-op math (1).
        r.record(name, "PASS", "%d shapes: %d in FMA math (no TF32), %d in "
                 "tensor-op math, %d nondeterministic"
                 % (len(chosen), fma, tensor_ops, nd), secs)


def by_kind(rows):
    """Every kernel's time summed by its first op (the name's last part,
    e.g. conv2d_input_grad), largest first: where the rest of a step goes,
    beyond the top 20."""
    per_kind, total = {}, 0.0
    for row in rows:
        fields = row.split()
        if len(fields) < 4 or not fields[0].startswith("__locus_kernel_"):
            continue
        kind = kinds.first_op(fields[0])
        try:
            ms = float(fields[3])
        except ValueError:
            continue
        n, t = per_kind.get(kind, (0, 0.0))
        per_kind[kind] = (n + 1, t + ms)
        total += ms
    out = ["", "by first op: kernels, total ms, share"]
    for kind, (n, t) in sorted(per_kind.items(), key=lambda kv: -kv[1][1]):
        out.append("%-40s %5d %10.3f %5.1f%%" % (kind, n, t, 100 * t / total if total else 0))
    return out


# --- the report -------------------------------------------------------------

def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return "SKIP (no artifact)" if v.startswith("no artifact") else "error"
    return "%.1f" % v if v >= 10 else "%.2f" % v


def ratio(a, b):
    return "%.2fx" % (a / b) if isinstance(a, (int, float)) and \
        isinstance(b, (int, float)) and b > 0 else "-"


def table(r):
    head = ["workload", "Locus us", "PyTorch fp32", "PyTorch TF32", "PyTorch graph",
            "Locus/fp32", "Locus/best"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in workloads.ALL:
        row = r.rows.get(w["name"])
        if row is None:
            cells = [w["title"], "SKIP", "-", "-", "-", "-", "-"]
        else:
            p = row["peer"]
            best = min((v for v in p.values() if isinstance(v, (int, float))),
                       default=None)
            title = w["title"] + (" [graph]" if w["name"] in getattr(r, "graph_rows", ())
                                  else "")
            cells = [title, fmt(row["locus"]), fmt(p["fp32"]), fmt(p["tf32"]),
                     fmt(p["graph"]), ratio(row["locus"], p["fp32"]),
                     ratio(row["locus"], best)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_report(r, started):
    lines = ["# tools/gpu-check run, %s" % time.strftime("%Y-%m-%d %H:%M UTC",
                                                         time.gmtime(started)),
             "", "GPU: %s. Libraries: %s. compute-sanitizer: %s." % (
                 r.gpu_name, ", ".join("%s %s" % kv for kv in r.libraries.items()),
                 r.sanitizer or "absent"),
             "", "Runtime: " + getattr(r, "runtime_report", "not asked"),
             "", "| step | result | reason | s |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % (x["step"], x["status"], x["reason"].replace(
        "|", "/"), x["seconds"]) for x in r.results]
    lines += ["", "Times in microseconds (medians; a launch chain: per launch). "
              "[graph]: the Locus step replayed as a CUDA graph.", ""] + table(r)
    if getattr(r, "peer_why", ""):
        lines += ["", "PyTorch: " + r.peer_why]
    for model, rows in r.profiles.items():
        lines += ["", "## Profile: %s (top 20 kernels, GPU time)" % model, "", "```"]
        lines += rows + ["```"]
    with open(os.path.join(r.out_dir, "gpu-check.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(r.out_dir, "gpu-check.json"), "w") as f:
        json.dump(dict(started=started, gpu=r.gpu_name, libraries=r.libraries,
                       runtime=getattr(r, "runtime_report", ""),
                       sanitizer=r.sanitizer, steps=r.results, rows=r.rows,
                       profiles=r.profiles, seconds=round(time.time() - started, 1)),
                  f, indent=1)
    return lines


def main(bundle, out_dir, budget=285, rounds=2, only=(), sim=False):
    started = time.time()
    os.makedirs(out_dir, exist_ok=True)
    r = Runner(bundle, out_dir, budget, only, sim)
    if not os.path.isdir(os.path.join(bundle, "bin")):
        r.say("no bundle at %s: run tools/gpu-check prepare first, and carry it" % bundle)
        return 2
    environment(r)
    r.say("== correctness")
    step_gtest(r, "CUDA tests (every op and gradient case)", "runtime_tests",
               ["--gtest_brief=1"], 120,
               {"LOCUS_GPU_CASES": os.path.join(bundle, "cases"),
                "LOCUS_GPU_GRAD_CASES": os.path.join(bundle, "grad_cases")})
    step_gtest(r, "device conformance (cpu, sim, cuda)", "device_conformance_tests",
               ["--gtest_brief=1"], 60)
    r.say("== benchmarks (%d interleaved rounds)" % rounds)
    benchmarks(r, rounds)
    profiles(r)
    cudnn_choices(r)
    r.say("== whole models, ONNX models, sanitizers")
    whole_models(r)
    dynamic_sizes(r)
    data_parallel(r)
    onnx_models(r)
    sanitizers(r)
    write_report(r, started)
    r.say("")
    for line in table(r):
        r.say(line)
    r.say("\n%d PASS, %d FAIL, %d SKIP in %.0f s; report: %s" % (
        *(sum(x["status"] == s for x in r.results) for s in ("PASS", "FAIL", "SKIP")),
        time.time() - started, os.path.join(out_dir, "gpu-check.md")))
    return 0
