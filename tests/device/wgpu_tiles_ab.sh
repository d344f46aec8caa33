#!/usr/bin/env bash
# Runs on the NVIDIA device machine: a change to the WGSL fused sweep (carry/knudsen) against
# the build before it (carry/knudsen-old). First the new build's fused sweep against the slice
# kernels on wgpu (tests/device/fused.sh check, tiles $TILES); then `knudsen bench --backend
# wgpu` of both at each tile in $TILES ($ROWS), alternating $REPS times; then `knudsen
# vk-stats` of the new build. Writes $OUT/wgpu_ab.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/wgpu_ab.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${CHECK:-1}" = 1 ]; then
  echo "== check"
  TILES="${TILES:-4x4 8x8}" BE=wgpu OUT=$OUT/check tests/device/fused.sh check 2>&1 | grep -vE "^\s*$|XDG" | head -80
fi
for rep in $(seq ${REPS:-2}); do
  for t in ${TILES:-4x4 8x8}; do
    for b in knudsen-old knudsen; do
      echo "== bench $b tile $t ($rep)"
      KNUDSEN_FUSED_TILE=$t carry/$b bench --backend wgpu --rows ${ROWS:-32x32,64x64} --iterations 5 --out /tmp/wb-$b-$t-$rep 2>&1 \
        | grep -E "^wgpu [0-9]"
    done
  done
done
carry/knudsen vk-stats --row 64x64 --tiles $(echo ${TILES:-4x4 8x8} | tr ' ' ',') 2>&1 | grep -E "tile|Register|Binary"
