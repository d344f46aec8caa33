#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool): quick fused-sweep experiments
# (register cap, tile shape) on the bench rows; prints s/iter.
# docs/performance.md records them.
#   BE=cuda|wgpu ROWS="32x32 64x64" TILES="8x8 8x4" MINBLOCKS="2 3" tests/device/fused_exp.sh
. tests/device/setup.sh
BE=${BE:-cuda}
for row in ${ROWS:-32x32 64x64}; do
  for mb in ${MINBLOCKS:-3}; do
    for t in ${TILES:-8x8}; do
      printf '%s %s tile %s minblocks %s: ' "$BE" "$row" "$t" "$mb"
      KNUDSEN_SWEEP=fused KNUDSEN_FUSED_MIN_BLOCKS=$mb KNUDSEN_FUSED_TILE=$t \
        $K bench --backend $BE --rows $row --out /tmp/b 2>&1 | grep -E "^$BE [0-9]" | head -1
    done
  done
done
