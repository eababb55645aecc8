#!/usr/bin/env python3
"""Data-parallel scaling on this machine, beside PyTorch DDP: step time for
1, 2 and 4 ranks at a fixed batch per rank (bench/dp_bench under mpirun;
bench/torch_ddp.py with gloo when /usr/bin/python3 has torch), in
interleaved rounds, each rank given cores // ranks threads (at least 1);
and the share of a Locus step each rank spends on the all-reduces the
backward pass did not hide (from the runtime's traces: the "all-reduce
start" and "all-reduce wait" spans over the step spans).

  bench/dp_scaling.py [build] [--batch=64] [--steps=30] [--ranks=1,2,4]
                      [--rounds=3]
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def share(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if e.get("cat") == "step"][3:]
    if not steps:
        return 0.0
    first = min(e["ts"] for e in steps)
    reduce = sum(e["dur"] for e in events
                 if e.get("cat") == "all_reduce" and e["ts"] >= first)
    return reduce / sum(e["dur"] for e in steps)


def median_ms(text):
    return float(re.search(r"median step ([0-9.]+) ms", text).group(1))


def locus(build, n, threads, opts):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none",
               LOCUS_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "t")
        cmd = [shutil.which("mpirun"), "-np", str(n),
               os.path.join(build, "bench", "dp_bench"),
               "--batch=" + opts.get("batch", "64"),
               "--steps=" + opts.get("steps", "30"), "--trace=" + prefix]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             check=True).stdout
        return median_ms(out), [share(f"{prefix}.{r}.json") for r in range(n)]


def torch(n, threads, opts):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "torch_ddp.py"), str(n),
           "--batch=" + opts.get("batch", "64"),
           "--steps=" + opts.get("steps", "30"), f"--threads={threads}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return median_ms(p.stdout) if p.returncode == 0 else None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = args[0] if args else "build"
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    ranks = [int(r) for r in opts.get("ranks", "1,2,4").split(",")]
    cores = os.cpu_count()
    has_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                               capture_output=True).returncode == 0
    print(f"{cores} cores, load {os.getloadavg()[0]:.2f}; batch "
          f"{opts.get('batch', '64')} per rank; MLP 784-1024-1024-10, SGD "
          f"momentum; peer: {'torch DDP (gloo)' if has_torch else 'none'}")
    times = {n: [] for n in ranks}
    peer = {n: [] for n in ranks}
    shares = {n: [] for n in ranks}
    for _ in range(int(opts.get("rounds", "3"))):
        for n in ranks:
            threads = max(1, cores // n)
            ms, s = locus(build, n, threads, opts)
            times[n].append(ms)
            shares[n].extend(s)
            if has_torch:
                t = torch(n, threads, opts)
                if t:
                    peer[n].append(t)
    base = statistics.median(times[ranks[0]])
    print("ranks | threads/rank | Locus ms | samples/s vs 1 rank | "
          "all-reduce share | torch DDP ms | Locus / torch")
    for n in ranks:
        ms = statistics.median(times[n])
        row = (f"{n} | {max(1, cores // n)} | {ms:.2f} | "
               f"{base * n / (ms * ranks[0]):.2f}x | "
               f"{statistics.median(shares[n]):.0%}")
        if peer[n]:
            t = statistics.median(peer[n])
            row += f" | {t:.2f} | {ms / t:.2f}"
        print(row)


if __name__ == "__main__":
    main()
