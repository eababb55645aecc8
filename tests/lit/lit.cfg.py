# lit configuration for the Locus FileCheck tests.
import os

import lit.formats

config.name = "Locus"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.locus_obj_root, "tests", "lit")

# Our tools first, then FileCheck, not, count and split-file from LLVM.
config.environment["PATH"] = os.pathsep.join(
    [config.locus_tools_dir, config.locus_examples_dir, config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%locus_src", config.locus_src_root))
config.substitutions.append(("%{python}", config.python_executable))

import shutil

# ptxas from the CUDA toolkit: every PTX module the compiler makes must pass
# it (sm_90). No toolkit: those checks are unsupported, not skipped silently.
for ptxas in [os.environ.get("LOCUS_PTXAS"), "/usr/local/cuda/bin/ptxas",
              shutil.which("ptxas")]:
    if ptxas and os.access(ptxas, os.X_OK):
        config.available_features.add("ptxas")
        config.substitutions.append(("%ptxas", ptxas))
        break

# Headless Chromium (Debian's package) for the HTML page of locus-dump.
chromium = shutil.which("chromium")
if chromium:
    config.available_features.add("chromium")
    config.substitutions.append(
        ("%chromium", chromium + " --headless --no-sandbox --disable-gpu"
         " --disable-quic --no-first-run --disable-background-networking"
         " --disable-component-update --disable-sync"))
