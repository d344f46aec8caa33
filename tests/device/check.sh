#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/check.sh
# A short regression check of the wgpu path against the recorded figures of
# docs/benchmarks.md: the 64^3 x 64^3 cavity (4 iterations), the paper's cube (2
# iterations), and cube-quick converged on wgpu and on the CPU backend, compared.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
R=/tmp/knudsen-check
$K run configs/bench/row-64x64.json --backend wgpu --max-iterations 4 --tolerance 1e-30 \
    --memory-budget-mib 8192 --out $R/row64 2>&1 | grep -E "iteration|backend"
$K run configs/cube-ma2-kn1.json --backend wgpu --max-iterations 2 --memory-budget-mib 20000 \
    --out $R/cube 2>&1 | grep -E "iteration|backend"
$K run configs/cube-quick.json --backend wgpu --out $R/cq-gpu 2>&1 | grep -E "converged|backend"
$K run configs/cube-quick.json --backend cpu --out $R/cq-cpu 2>&1 | grep -E "converged|backend"
$K compare $R/cq-gpu $R/cq-cpu
for r in row64 cube cq-gpu cq-cpu; do cp $R/$r/summary.json $OUT/$r-summary.json; cp $R/$r/residuals.csv $OUT/$r-residuals.csv; done
