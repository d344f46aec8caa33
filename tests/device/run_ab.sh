#!/usr/bin/env bash
# Runs on the NVIDIA device machine, from the repository root:
#   tests/device/run_ab.sh CONFIG [BACKENDS] [REPS]
# A converged run of CONFIG with the build before a change (carry/knudsen-old) and with the
# change (carry/knudsen), alternating, $REPS times per backend in $BACKENDS (default
# cuda,wgpu): iterations, solver seconds and C_D where there is a body, from summary.json.
# Each run's debug log goes to $OUT/NAME-BACKEND-BINARY-REP.log; extra `knudsen run`
# arguments in $ARGS.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/ab.txt") 2>&1
cfg=$1; backends=${2:-cuda,wgpu}; reps=${3:-2}
name=$(basename "$cfg" .json)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for rep in $(seq "$reps"); do
  for b in ${backends//,/ }; do
    for bin in knudsen-old knudsen; do
      out=/tmp/ab-$name-$b-$bin-$rep
      RUST_LOG=knudsen=debug carry/$bin run "$cfg" --backend "$b" ${ARGS:-} --out "$out" \
        > "$OUT/$name-$b-$bin-$rep.log" 2>&1
      python3 tests/device/summary_line.py "$out/summary.json" "$name $b $bin $rep"
    done
  done
done
