#!/usr/bin/env bash
# Runs on the NVIDIA device machine: `knudsen bench` of each carried binary in $BINS on
# CUDA at each `__launch_bounds__` block count in $MINB (KNUDSEN_FUSED_MIN_BLOCKS), then on
# wgpu, all in one call so the figures compare. Writes $OUT/minb.txt and the bench CSVs.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/minb.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for rep in ${REPS:-1}; do
for b in ${BINS:-knudsen-old knudsen}; do
  for n in ${MINB:-3}; do
    echo "== $b cuda, KNUDSEN_FUSED_MIN_BLOCKS=$n (pass $rep)"
    KNUDSEN_FUSED_MIN_BLOCKS=$n carry/$b bench --backend cuda --rows ${ROWS:-32x32,64x64} --out $OUT/bench-$b-$n-$rep 2>&1 | grep -E '^cuda [0-9]'
  done
  if [ -n "${WGPU_ROWS:-}" ]; then
    echo "== $b wgpu (pass $rep)"
    carry/$b bench --backend wgpu --rows $WGPU_ROWS --out $OUT/bench-$b-wgpu-$rep 2>&1 | grep -E '^wgpu [0-9]'
  fi
done
done
