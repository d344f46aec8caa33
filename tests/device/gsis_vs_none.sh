#!/usr/bin/env bash
# Runs on the NVIDIA device machine, from the repository root: tests/device/gsis_vs_none.sh
# The shipped GPU cases (the paper cavity twice, the paper cube once) to convergence with GSIS
# and with source iteration, on CUDA and wgpu, one binary (carry/knudsen, built with
# `--features cuda`): iterations, seconds and C_D from each summary.json. Logs in $OUT.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
$K --version
one() {  # config backend acceleration rep [args]
  local cfg=$1 b=$2 acc=$3 rep=$4; shift 4
  local name; name=$(basename "$cfg" .json)
  local out=/tmp/g-$name-$b-$acc-$rep
  timeout 200 $K run "$cfg" --backend "$b" --acceleration "$acc" "$@" --out "$out" > "$OUT/$name-$b-$acc-$rep.log" 2>&1
  python3 tests/device/summary_line.py "$out/summary.json" "$name $b $acc $rep"
}
for rep in 1 2; do
  for b in cuda wgpu; do
    for acc in gsis none; do one configs/cavity-kn1.json $b $acc $rep; done
  done
done
for b in cuda wgpu; do
  for acc in gsis none; do one configs/cube-ma2-kn1.json $b $acc 1 --memory-budget-mib 16384; done
done
