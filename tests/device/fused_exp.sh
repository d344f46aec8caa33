#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool): quick fused-sweep experiments
# (register cap, tile shape) on the bench rows; prints s/iter. docs/performance.md records them.
. tests/device/setup.sh
RUST_LOG=knudsen::backend::cuda=debug $K bench --backend cuda --rows 32x32 --iterations 1 --out /tmp/b 2>&1 | grep -E "registers" | head -1
for mb in ${MINBLOCKS:-2 3}; do echo "minblocks $mb"; KNUDSEN_FUSED_MIN_BLOCKS=$mb $K bench --backend cuda --rows 64x64 --out /tmp/b 2>&1 | grep -E "^cuda " | head -1; done
for t in ${TILES:-8x8 8x4}; do echo "tile $t"; KNUDSEN_FUSED_TILE=$t $K bench --backend cuda --rows 32x32 --out /tmp/b 2>&1 | grep -E "^cuda " | head -1; done
