#!/usr/bin/env bash
# clang-tidy-19 with the root .clang-tidy over the translation units the
# build compiles: the files of build/compile_commands.json (or
# $LOCUS_BUILD_DIR's), so no list is kept by hand. Any finding fails
# (WarningsAsErrors).
#
#   scripts/tidy.sh                  every translation unit
#   scripts/tidy.sh 'runtime/' ...   those whose path matches a regex
#   scripts/tidy.sh --since COMMIT   those that changed since COMMIT: the
#                                    source or any header it includes (from
#                                    ninja's dependency log), committed or
#                                    not. Everything when COMMIT is unknown
#                                    to git, or when .clang-tidy changed
#                                    since.
#
# CI (scripts/test.sh) runs `--since "$(cat .ci/tidy-baseline)"`: that file
# names a commit at which the whole run was clean. A whole run costs about
# 25 minutes on two cores (most translation units include MLIR), which is
# why CI checks only what changed since; after a clean whole run, record it
# with `git rev-parse HEAD > .ci/tidy-baseline` and commit that.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCUS_BUILD_DIR:-$root/build}
[ -f "$build/compile_commands.json" ] || {
  echo "tidy: no $build/compile_commands.json; build first (scripts/build.sh)" >&2
  exit 1
}
since=
if [ "${1:-}" = --since ]; then
  [ $# -eq 2 ] || { echo "usage: scripts/tidy.sh --since COMMIT" >&2; exit 2; }
  since=$2
  shift 2
fi
patterns=("$@")
if [ -n "$since" ]; then
  # One anchored regex per translation unit that needs checking.
  mapfile -t patterns < <(python3 - "$root" "$build" "$since" <<'PY'
import json, os, re, shlex, subprocess, sys
root, build, since = sys.argv[1:4]

def git(*args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True,
                          text=True)

units = json.load(open(os.path.join(build, "compile_commands.json")))
# Patterns match the paths as compile_commands.json has them (what
# run-clang-tidy matches); comparisons with git's files use real paths.
everything = [re.escape(e["file"]) + "$" for e in units]
if git("cat-file", "-e", since + "^{commit}").returncode != 0:
    print("tidy: %s is not a commit here; checking everything" % since,
          file=sys.stderr)
    print("\n".join(everything))
    sys.exit(0)
changed = set()
for args in (["diff", "--name-only", since],
             ["ls-files", "--others", "--exclude-standard"]):
    out = git(*args)
    if out.returncode != 0:
        print("\n".join(everything))
        sys.exit(0)
    changed |= {os.path.realpath(os.path.join(root, f))
                for f in out.stdout.split()}
if os.path.join(root, ".clang-tidy") in changed:
    print("tidy: the checks changed since %s; checking everything" % since,
          file=sys.stderr)
    print("\n".join(everything))
    sys.exit(0)

# ninja -t deps: "<object>: #deps N, ..." then one indented path per line.
deps, current = {}, None
out = subprocess.run(["ninja", "-C", build, "-t", "deps"],
                     capture_output=True, text=True).stdout
for line in out.splitlines():
    if line and not line[0].isspace():
        current = os.path.realpath(os.path.join(build, line.split(":")[0]))
        deps[current] = set()
    elif line.strip() and current:
        deps[current].add(os.path.realpath(os.path.join(build,
                                                        line.strip())))
for e in units:
    source = os.path.realpath(os.path.join(e["directory"], e["file"]))
    words = shlex.split(e["command"])
    obj = words[words.index("-o") + 1] if "-o" in words else None
    obj = os.path.realpath(os.path.join(e["directory"], obj)) if obj else None
    # No dependency record (never built): check it.
    if source in changed or obj not in deps or deps[obj] & changed:
        print(re.escape(e["file"]) + "$")
PY
  )
  if [ ${#patterns[@]} -eq 0 ]; then
    echo "clang-tidy ok (nothing it checks changed since $since)"
    exit 0
  fi
fi
[ ${#patterns[@]} -gt 0 ] || patterns=("$root/")
count=$(python3 - "$build/compile_commands.json" "${patterns[@]}" <<'PY'
import json, re, sys
files = {e["file"] for e in json.load(open(sys.argv[1]))}
print(sum(any(re.search(p, f) for p in sys.argv[2:]) for f in files))
PY
)
run-clang-tidy-19 -p "$build" -j "${LOCUS_JOBS:-2}" -quiet \
  -clang-tidy-binary "$(command -v clang-tidy-19)" "${patterns[@]}" \
  > "$build/clang-tidy.log" 2>&1 || {
  grep -E "warning:|error:" "$build/clang-tidy.log" | sort -u | head -50
  echo "clang-tidy: findings above (full log: $build/clang-tidy.log)" >&2
  exit 1
}
echo "clang-tidy ok ($count translation units of compile_commands.json${since:+, those changed since $since})"
