"""Runs ptxas -arch=sm_90 on every .ptx file of a directory; fails on the
first it rejects, and on a directory with none. Prints how many passed."""
import os
import subprocess
import sys

ptxas, directory = sys.argv[1], sys.argv[2]
files = sorted(f for f in os.listdir(directory) if f.endswith(".ptx"))
if not files:
    sys.exit("no PTX modules in " + directory)
for name in files:
    result = subprocess.run([ptxas, "-arch=sm_90", os.path.join(directory, name),
                             "-o", os.devnull], capture_output=True, text=True)
    if result.returncode:
        sys.exit("ptxas rejects %s:\n%s" % (name, result.stderr))
print("ptxas: %d modules accepted" % len(files))
