#!/usr/bin/env bash
# Time to a ready model: each example program from start to exit (its graphs
# compiled, one training step run), with the compile cache off (compiled
# but not stored), cold (an empty cache) and warm (the cache the cold run filled), in turn for
# `rounds` rounds; prints the median of each. Usage:
#   bench/ready_time.sh [build-dir] [rounds]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
programs=(
  "resnet18 --steps=1 --policy=cpu"
  "transformer --steps=1"
  "seed_cnn_adam"
  "seed_dataloader"
)
seconds() { # the wall time of a command, in seconds
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000))
  printf '%d.%03d\n' $((ms / 1000)) $((ms % 1000))
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-38s %10s %10s %10s\n' program "cache off" cold warm
for p in "${programs[@]}"; do
  read -r -a cmd <<< "$p"
  cmd[0]="$build/examples/${cmd[0]}"
  offs=() colds=() warms=()
  for ((r = 0; r < rounds; ++r)); do
    offs+=("$(LOCUS_CACHE=0 seconds "${cmd[@]}")")
    rm -rf "$cache/c"
    colds+=("$(LOCUS_CACHE_DIR=$cache/c seconds "${cmd[@]}")")
    warms+=("$(LOCUS_CACHE_DIR=$cache/c seconds "${cmd[@]}")")
  done
  printf '%-38s %9.2fs %9.2fs %9.2fs\n' "$p" "$(median "${offs[@]}")" \
    "$(median "${colds[@]}")" "$(median "${warms[@]}")"
done
