#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/knudsen_bench.sh [extra knudsen bench options]
# Needs carry/knudsen built with `--features cuda` and .gl/*.deb (tests/device/setup.sh).
# `knudsen bench` on the CPU, CUDA and wgpu with its default rows (32x32, 64x64, 128x64,
# the paper cube); writes $OUT/bench/bench.csv and $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "cores $(nproc)"
$K bench --backend cpu,cuda,wgpu --out "$OUT/bench" "$@" 2>&1 | grep -v -e XDG_RUNTIME -e "stopping at 1.0e-5"
