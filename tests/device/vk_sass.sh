#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/vk_sass.sh [row] [tile ...]
# The machine code the NVIDIA Vulkan driver made of the wgpu kernels, which its pipeline
# statistics (`knudsen vk-stats`) do not show: for each tile, the driver's shader disk cache
# is put in a folder of its own, a one-iteration `knudsen bench --backend wgpu` fills it, and
# its .toc and .bin files are copied to $OUT/glcache-ROW-TILE/. tests/tools/nvcache.py
# unpacks and disassembles them; the device machine has no zstd decoder, so run it on the
# developer machine (a venv with pip's zstandard and nvidia-cuda-nvdisasm):
#   python tests/tools/nvcache.py DIR/glcache-64x64-4x4 /tmp/sass .../nvidia/cu13/bin/nvdisasm
# $ARGS goes to the bench (e.g. ARGS="--scheme second_order", with KNUDSEN_SWEEP=fused for
# sweep_fused2).
set -u -o pipefail
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
row=${1:-64x64}
shift
for tile in "${@:-4x4}"; do
  cache=/tmp/glcache-$row-$tile
  rm -rf "$cache"; mkdir -p "$cache" "$OUT/glcache-$row-$tile"
  __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 __GL_SHADER_DISK_CACHE_PATH=$cache \
    KNUDSEN_FUSED_TILE=$tile $K bench --backend wgpu --rows "$row" --warmup 0 --iterations 1 ${ARGS:-} \
    --out "$OUT/vkbench-$row-$tile" 2>&1 | grep -v XDG_RUNTIME | tail -2 \
    || echo "FAILED: the bench of $row, $tile"
  # Flat (the device tool does not return the cache's deep folders), each file named after
  # its folder too, so that files of the same name in two folders do not overwrite each other.
  find "$cache" -type f \( -name '*.toc' -o -name '*.bin' \) | while read -r f; do
    cp "$f" "$OUT/glcache-$row-$tile/$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  find "$OUT/glcache-$row-$tile" -type f -name '*.toc' | grep -q . || echo "FAILED: no cache table for $row, $tile"
done
