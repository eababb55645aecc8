#!/usr/bin/env python3
"""Data-parallel training on the CPU under Open MPI's mpirun.

  check_data_parallel.py <dp_train binary>

Each case launches ranks of dp_train (tests/distributed/dp_train.cpp), which
checks its weights against one process at the whole batch. Then rank 0's
checkpoint resumes at another world size, and a rank killed mid-training
must end the job with an error naming it, within a bound, not hang it.
Prints what each case did; exits 1 on the first failure.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time


def mpi_env():
    env = dict(os.environ)
    # CI runs as root; the ranks share two cores (oversubscribed); a
    # container may forbid the cross-memory attach of the shared-memory
    # transport.
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        "OMPI_MCA_btl": "self,vader,tcp",
        "LOCUS_THREADS": "1",
        "LOCUS_COMM_TIMEOUT": "60",
    })
    return env


def run(cmd, timeout=300, **extra_env):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, env=dict(mpi_env(), **extra_env),
                           capture_output=True, text=True, timeout=timeout)
        code, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        code = None
        out = (e.stdout or b"").decode() + (e.stderr or b"").decode()
    return code, out, time.monotonic() - start


def fail(what, out):
    print(f"FAIL: {what}\n{out}")
    sys.exit(1)


def main():
    binary = sys.argv[1]
    mpirun = shutil.which("mpirun")
    if not mpirun:
        fail("mpirun not found (Debian: apt install openmpi-bin)", "")
    cases = [
        (1, ["--model=mlp"]),
        (2, ["--model=mlp"]),
        (4, ["--model=mlp", "--optimizer=adam"]),
        (2, ["--model=cnn"]),
        (4, ["--model=cnn", "--optimizer=adam", "--steps=3"]),
        # Gradients on cuda:0 (the sim device without a GPU): buckets go
        # through host memory.
        (2, ["--model=mlp", "--devices=gpu"]),
        (2, ["--model=cnn", "--devices=gpu", "--optimizer=adam"]),
    ]
    for ranks, args in cases:
        code, out, seconds = run([mpirun, "-np", str(ranks), binary] + args)
        if code != 0 or out.count("worst relative difference") != ranks:
            fail(f"{ranks} ranks {' '.join(args)} (exit {code})", out)
        print(f"ok: {ranks} ranks {' '.join(args)} in {seconds:.1f} s")
        print("   " + out.strip().splitlines()[0])

    # The same from Python, as a DDP user launches it.
    module = os.path.join(os.path.dirname(os.path.abspath(binary)), "..",
                          "python")
    if os.path.isdir(module) and any(f.startswith("locus")
                                     for f in os.listdir(module)):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "dp_train.py")
        code, out, seconds = run([mpirun, "-np", "2", "/usr/bin/python3",
                                  script], PYTHONPATH=module)
        if code != 0 or out.count("worst relative difference") != 2:
            fail("2 ranks from Python", out)
        print(f"ok: 2 ranks from Python in {seconds:.1f} s")
        print("   " + out.strip().splitlines()[0])
    else:
        print("skipped: Python, no locus module in " + module)

    # One process without a launcher is world size 1.
    code, out, _ = run([binary, "--model=mlp", "--steps=2"])
    if code != 0 or "rank 0 of 1 (none)" not in out:
        fail("world size 1 without mpirun", out)
    print("ok: world size 1 without mpirun")

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "rank0.safetensors")
        code, out, _ = run([mpirun, "-np", "2", binary, "--model=mlp",
                            "--save=" + ckpt])
        if code != 0 or not os.path.exists(ckpt):
            fail("saving rank 0's checkpoint at 2 ranks", out)
        code, out, _ = run([mpirun, "-np", "4", binary, "--model=mlp",
                            "--resume=" + ckpt])
        if code != 0:
            fail("resuming rank 0's checkpoint at 4 ranks", out)
        print("ok: rank 0's checkpoint of 2 ranks resumes at 4")

    code, out, seconds = run([mpirun, "-np", "2", binary, "--model=mlp",
                              "--steps=50", "--die-at=2"], timeout=120)
    if code in (0, None) or "rank 1" not in out:
        fail(f"a killed rank must end the job naming it (exit {code}, "
             f"{seconds:.0f} s)", out)
    print(f"ok: a killed rank ended the job in {seconds:.1f} s (exit {code})")
    print("data-parallel checks passed")


if __name__ == "__main__":
    main()
