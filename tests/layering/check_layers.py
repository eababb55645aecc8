#!/usr/bin/env python3
"""Fails when a lower layer of Locus includes a header of a higher one.

The layers (docs/architecture.md), each with the layers it may include:

  abi        runtime/include/locus/abi.h, locus_runtime.h, runtime.hpp
  runtime    runtime/                                   abi
  support    compiler/*/Support                         (nothing)
  dialect    compiler/*/Dialect                         support abi
  passes     compiler/*/Passes                          dialect support abi
  frontend   compiler/*/Frontend, locus/locus.h         dialect support abi
  import     compiler/*/Import                          frontend support abi
  pipelines  compiler/*/Pipelines                       passes dialect ...
  plan       compiler/*/Plan                            passes dialect ...
  dump       compiler/*/Dump                            passes dialect ...
  compile    compiler/*/Compile*                        all of the above
  tools      tools/, bench/, examples/, tests/          anything

Libraries link the same way (the frontend and the compile layer also link
the runtime library, whose initialisers and executor they call); the
CMake target_link_libraries of each library are checked against the table.

A file's layer comes from its path; an included header's from its path
under include/ (locus/Passes/... is the passes layer) or, for a quoted
relative include, from the file it names.

A header under a lib/ folder is private to its part: only files of that
part (compiler/lib/<Part>/..., runtime/src/...) may include it. Another
layer reaches what a part shares through its include/ folder. System and LLVM/MLIR headers are
not Locus's and are not checked here (the runtime's link check is
tests/check_runtime_deps.cmake).

  check_layers.py <source root>
"""
import os
import re
import sys

BELOW = {
    "abi": set(),
    "runtime": {"abi"},
    "support": set(),
    "dialect": {"support", "abi"},
    "passes": {"dialect", "support", "abi"},
    "frontend": {"dialect", "support", "abi"},
    "import": {"frontend", "support", "abi"},
    "pipelines": {"passes", "dialect", "support", "abi"},
    "plan": {"passes", "dialect", "support", "abi"},
    "dump": {"passes", "dialect", "support", "abi"},
    "compile": {"frontend", "pipelines", "plan", "dump", "passes", "dialect",
                "support", "abi"},
}
ABI_HEADERS = {"locus/abi.h", "locus/locus_runtime.h", "locus/runtime.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def header_layer(name):
    """The layer of an include path under an include/ folder, or None."""
    if name in ABI_HEADERS:
        return "abi"
    parts = name.split("/")
    if parts[0] != "locus":
        return None
    if name == "locus/locus.h":
        return "frontend"
    if name == "locus/Compile.h":
        return "compile"
    sub = parts[1] if len(parts) > 2 else None
    return {"Support": "support", "Dialect": "dialect", "Passes": "passes",
            "Frontend": "frontend", "Pipelines": "pipelines", "Plan": "plan",
            "Dump": "dump", "Compile": "compile", "Import": "import"}.get(sub)


def file_layer(rel):
    """The layer of a source file, by its path in the repository."""
    parts = rel.split("/")
    top = parts[0]
    if top == "runtime":
        return "abi" if "/".join(parts[-2:]) in ABI_HEADERS else "runtime"
    if top == "compiler":
        # compiler/include/locus/<Part>/..., compiler/lib/<Part>/...
        if parts[1] == "include":
            return header_layer("/".join(parts[2:])) or "compile"
        part = parts[2] if len(parts) > 3 else ""
        return {"Support": "support", "Dialect": "dialect",
                "Passes": "passes", "Frontend": "frontend", "Pipelines": "pipelines",
                "Plan": "plan", "Dump": "dump", "Import": "import",
                "Compile": "compile"}.get(part, "compile")
    return "tools"


TARGETS = {"locus_abi": "abi", "locus_runtime": "runtime",
           "LocusDialect": "dialect", "LocusPasses": "passes",
           "LocusMinCut": "passes", "LocusFrontend": "frontend",
           "LocusPipelines": "pipelines", "LocusMemoryPlan": "plan",
           "LocusDump": "dump", "LocusCompile": "compile",
           "LocusImport": "import"}
LINK = re.compile(r"target_link_libraries\(\s*(\w+)([^)]*)\)", re.S)


def private_part(rel):
    """The part a private header belongs to ("compiler/lib/Frontend"), or
    None for a public one."""
    parts = rel.split("/")
    if len(parts) > 3 and parts[0] == "compiler" and parts[1] == "lib":
        return "/".join(parts[:3])
    if len(parts) > 2 and parts[0] == "runtime" and parts[1] == "src":
        return "runtime/src"
    return None


def check_links(root, problems):
    """Each library links only the layers below its own."""
    for folder in ("runtime", "compiler"):
        with open(os.path.join(root, folder, "CMakeLists.txt")) as f:
            text = f.read()
        for target, deps in LINK.findall(text):
            layer = TARGETS.get(target)
            if layer is None:
                continue
            allowed = set(BELOW[layer]) | {layer}
            if layer in ("frontend", "compile"):
                allowed.add("runtime")
            for dep in deps.split():
                used = TARGETS.get(dep)
                if used is not None and used not in allowed:
                    problems.append("%s/CMakeLists.txt: %s (%s) links %s (%s)"
                                    % (folder, target, layer, dep, used))


def main():
    root = os.path.abspath(sys.argv[1])
    problems, checked = [], 0
    check_links(root, problems)
    for top in ("runtime", "compiler"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".hpp", ".cpp", ".c", ".td")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                layer = file_layer(rel)
                checked += 1
                with open(path, encoding="utf-8") as src:
                    text = src.read()
                for name in INCLUDE.findall(text):
                    if name.endswith(".inc"):
                        continue
                    if name.startswith("."):
                        target = os.path.relpath(
                            os.path.normpath(os.path.join(dirpath, name)), root)
                        used = file_layer(target)
                        part = private_part(target)
                        if part and not rel.startswith(part + "/"):
                            problems.append(
                                "%s reaches into %s, private to %s"
                                % (rel, name, part))
                            continue
                    else:
                        used = header_layer(name)
                    if used is None or used == layer:
                        continue
                    if used not in BELOW.get(layer, set()):
                        problems.append("%s (%s) includes %s (%s)" %
                                        (rel, layer, name, used))
    for p in problems:
        print("layering: " + p)
    if problems:
        print("layering: %d includes or links go up a layer or reach "
              "into another part's private headers (docs/architecture.md)"
              % len(problems))
        return 1
    print("layering ok: %d files" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
