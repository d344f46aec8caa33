#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/setup_ab.sh [case] [backends]
# Needs carry/knudsen and carry/knudsen-old (two builds with `--features cuda`) and .gl/*.deb.
# One warm-up run of each binary (the driver's first compiles), then passes 1 to $REPS of
# tests/device/coarse.sh alternating the binaries (old first in odd passes), then one
# debug run of each on wgpu for its set-up lines. Writes $OUT/old, $OUT/new, $OUT/log.txt.
set -u
export OUT=${OUT:-/tmp/knudsen-device}
case=${1:-cavity-kn1}
backends=${2:-wgpu,cuda}
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
mkdir -p "$OUT/old" "$OUT/new"
for v in old new; do
  bin=carry/knudsen; [ $v = old ] && bin=carry/knudsen-old
  for b in ${backends//,/ }; do $bin run configs/$case.json --backend $b --out "$OUT/warm-$v-$b" > /dev/null 2>&1; done
done
for rep in $(seq ${REPS:-2}); do
  order="old new"; [ $((rep % 2)) = 0 ] && order="new old"
  for v in $order; do
    bin=carry/knudsen; [ $v = old ] && bin=carry/knudsen-old
    K=$bin OUT=$OUT/$v FIRST_REP=$rep REPS=$rep bash tests/device/coarse.sh $case $backends 2>&1 | grep -v "g0 vs g1" | sed "s/^/[$v] /"
  done
done
for v in old new; do
  bin=carry/knudsen; [ $v = old ] && bin=carry/knudsen-old
  echo "== debug run, $v binary"
  RUST_LOG=knudsen=debug $bin run configs/$case.json --backend wgpu --out "$OUT/dbg-$v" 2>&1 |
    grep -E "wgpu:|kernel|coarse start:|converged|gsis: the synthetic|interpolated" | cut -c1-240
done
