#!/usr/bin/env python3
"""check_layers.py on planted trees: a clean one passes, a reach-in into
another part's private header and an include of a higher layer fail.

  test_check_layers.py <check_layers.py>
"""
import os
import subprocess
import sys
import tempfile

FILES = {
    "runtime/CMakeLists.txt": "",
    "runtime/src/plan.h": "",
    "runtime/src/devices/cpu/cpu_device.cpp": '#include "../../plan.h"\n',
    "compiler/CMakeLists.txt":
        "target_link_libraries(LocusCompile PUBLIC LocusFrontend)\n",
    "compiler/include/locus/Frontend/Recorded.h": "",
    "compiler/lib/Frontend/GraphImpl.h": '#include "locus/Frontend/Recorded.h"\n',
    "compiler/lib/Frontend/Graph.cpp": '#include "GraphImpl.h"\n',
    "compiler/lib/Passes/ConvCalls.h": "",
    "compiler/lib/Passes/Cuda/ConvToCudnn.cpp": '#include "../ConvCalls.h"\n',
    "compiler/lib/Compile/Compile.cpp": '#include "locus/Frontend/Recorded.h"\n',
}


def run(check, planted):
    with tempfile.TemporaryDirectory() as root:
        for rel, text in {**FILES, **planted}.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        done = subprocess.run([sys.executable, check, root],
                              capture_output=True, text=True)
        return done.returncode, done.stdout


def main():
    check = sys.argv[1]
    failures = []
    code, out = run(check, {})
    if code != 0:
        failures.append("the clean tree failed:\n" + out)
    cases = [
        ({"compiler/lib/Compile/Compile.cpp":
          '#include "../Frontend/GraphImpl.h"\n'},
         "compiler/lib/Compile/Compile.cpp reaches into ../Frontend/GraphImpl.h,"
         " private to compiler/lib/Frontend"),
        ({"compiler/lib/Dialect/Ops.cpp": '#include "locus/Compile.h"\n'},
         "compiler/lib/Dialect/Ops.cpp (dialect) includes locus/Compile.h"
         " (compile)"),
        ({"compiler/lib/Passes/Fuse.cpp": '#include "../Frontend/GraphImpl.h"\n'},
         "reaches into ../Frontend/GraphImpl.h"),
        ({"compiler/CMakeLists.txt":
          "target_link_libraries(LocusDialect PUBLIC LocusPasses)\n"},
         "LocusDialect (dialect) links LocusPasses (passes)"),
    ]
    for planted, expected in cases:
        code, out = run(check, planted)
        if code != 1 or expected not in out:
            failures.append("planted %s: exit %d, output:\n%s"
                            % (list(planted), code, out))
    for f in failures:
        print("FAIL: " + f)
    print("%d of %d cases as expected" % (len(cases) + 1 - len(failures),
                                          len(cases) + 1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
