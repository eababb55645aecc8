#!/usr/bin/env python3
"""Data-parallel scaling on this machine: step time for 1, 2 and 4 ranks
at a fixed batch per rank, and the share of a step each rank spends on its
all-reduces that the backward pass did not hide (from the runtime's
traces: the "all-reduce start" and "all-reduce wait" spans over the step
spans).

  bench/dp_scaling.py [build] [--batch=64] [--steps=30] [--ranks=1,2,4]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


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


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = args[0] if args else "build"
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    ranks = [int(r) for r in opts.get("ranks", "1,2,4").split(",")]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    cores = os.cpu_count()
    print(f"{cores} cores; LOCUS_THREADS per rank: "
          f"{env.get('LOCUS_THREADS', 'all cores')}")
    for n in ranks:
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "t")
            cmd = [shutil.which("mpirun"), "-np", str(n),
                   os.path.join(build, "bench", "dp_bench"),
                   "--batch=" + opts.get("batch", "64"),
                   "--steps=" + opts.get("steps", "30"),
                   "--trace=" + prefix]
            out = subprocess.run(cmd, env=env, capture_output=True,
                                 text=True, check=True).stdout.strip()
            shares = [share(f"{prefix}.{r}.json") for r in range(n)]
            print(f"{out}; all-reduce share of a step per rank: "
                  + ", ".join(f"{s:.1%}" for s in shares))


if __name__ == "__main__":
    main()
