#!/usr/bin/env bash
# Runs on the NVIDIA device machine: a sweep-kernel change (carry/knudsen) against the build
# before it (carry/knudsen-old). First the fused sweep of the new build against the slice
# kernels (tests/device/fused.sh check, tiles $TILES, both backends), then `knudsen bench`
# of both binaries in the same call ($ROWS, $BENCH_BE), then the new build's CUDA row at
# each `__launch_bounds__` block count in $MINB. Writes $OUT/ab.txt and the bench CSVs.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/ab.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${CHECK:-1}" = 1 ]; then
  OUT=$OUT tests/device/fused.sh check 2>&1 | grep -v XDG_RUNTIME
fi
for b in knudsen-old knudsen; do
  echo "== bench $b"
  carry/$b bench --backend ${BENCH_BE:-cuda,wgpu} --rows ${ROWS:-32x32,64x64,128x64} --out $OUT/bench-$b 2>&1 | grep -vE '^\[|^$|XDG_RUNTIME'
done
for n in ${MINB:-}; do
  echo "== bench knudsen, KNUDSEN_FUSED_MIN_BLOCKS=$n"
  KNUDSEN_FUSED_MIN_BLOCKS=$n carry/knudsen bench --backend cuda --rows ${MINB_ROWS:-32x32,64x64} --out $OUT/bench-minb$n 2>&1 | grep -vE '^\[|^$|XDG_RUNTIME'
done
