#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/validate.sh
# Needs carry/knudsen (built with --features cuda) and the test binaries in carry/tests/.
# 1. The full validation suite on the machine's CPU cores (the CPU backend is the f64
#    reference): $OUT/validation/results-full.json, the input of docs/validation/report.py.
# 2. The quarter/full cube agreement on CUDA and wgpu.
# 3. The specular/periodic face tests, which loop over cpu, wgpu and cuda there.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "cores: $(nproc)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in carry/tests/*; do
  echo "== $t"
  timeout 300 "$t" --test-threads 1 2>&1 | grep -v XDG | tail -25
done
for be in cuda wgpu; do
  echo "== cube-quarter on $be"
  timeout 300 $K validate configs/validation/cube-quarter.json --backend $be --out "$OUT/$be" 2>&1 | grep -v XDG | tail -6
done
echo "== full suite, cpu"
time $K validate --out "$OUT/validation" 2>&1 | grep -v -E "XDG|WARN"
