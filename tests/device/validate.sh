#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/validate.sh [checks] [suite names...]
# Needs carry/knudsen (built with --features cuda) and, for `checks`, the test binaries in
# carry/tests/.
# checks: the specular/periodic face tests (they loop over cpu, wgpu and cuda there) and the
#   quarter/full cube agreement on CUDA and wgpu.
# suites: each named suite of configs/validation on the machine's CPU cores (the CPU backend
#   is the f64 reference), one process per suite: $OUT/validation/<name>/results-full.json,
#   the input of docs/validation/report.py.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "cores: $(nproc)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${1:-}" = checks ]; then
  shift
  for t in carry/tests/*; do
    echo "== $t"
    timeout 300 "$t" --test-threads 1 2>&1 | grep -v XDG | tail -25
  done
  for be in cuda wgpu; do
    echo "== cube-quarter on $be"
    timeout 300 $K validate configs/validation/cube-quarter.json --backend $be --out "$OUT/$be" 2>&1 | grep -v XDG | tail -6
  done
fi
for name in "$@"; do
  echo "== $name"
  start=$(date +%s)
  RUST_LOG=warn $K validate "configs/validation/$name.json" --out "$OUT/validation/$name" 2>&1 | grep -v XDG
  echo "   $(( $(date +%s) - start )) s"
done
