#!/usr/bin/env bash
# Runs on the NVIDIA device machine: a change to both fused sweeps (carry/knudsen) against the
# build before it (carry/knudsen-old). First the new build's fused sweep against the slice
# kernels on both backends (tests/device/fused.sh check, tiles $TILES), unless CHECK=0; then
# `knudsen bench --backend cuda,wgpu` of both builds, alternating $REPS times ($ROWS).
# Writes $OUT/both_ab.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/both_ab.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${CHECK:-1}" = 1 ]; then
  TILES="${TILES:-8x8 4x4}" BE="cuda wgpu" OUT=$OUT/check tests/device/fused.sh check > /dev/null 2>&1
  grep -E "^==|density|heat_flux|FAIL" $OUT/check/log.txt
fi
for rep in $(seq ${REPS:-2}); do
  for b in knudsen-old knudsen; do
    echo "== bench $b ($rep)"
    carry/$b bench --backend ${BENCH_BE:-cuda,wgpu} --rows ${ROWS:-32x32,64x64} --iterations 5 --out /tmp/bb-$b-$rep 2>&1 \
      | grep -E "^(cuda|wgpu) [0-9a-z]+:"
  done
done
