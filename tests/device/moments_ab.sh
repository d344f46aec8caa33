#!/usr/bin/env bash
# Runs on the NVIDIA device machine: a fused_moments change (carry/knudsen) against the build
# before it (carry/knudsen-old). `knudsen bench --backend cuda` of both, alternating $REPS
# times ($ROWS); ncu's duration and DRAM throughput of one fused_moments launch of each
# ($ROW_NCU, launch $SKIP); and the fields of both after 3 sweeps of that row, compared
# (`knudsen compare`: a change that keeps the sums' order gives 0). Writes $OUT/moments_ab.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/moments_ab.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for rep in $(seq ${REPS:-2}); do
  for b in knudsen-old knudsen; do
    echo "== bench $b ($rep)"
    carry/$b bench --backend cuda --rows ${ROWS:-32x32,64x64,128x64} --iterations 5 --out /tmp/bench-$b-$rep 2>&1 \
      | grep -vE '^\[|^$|XDG_RUNTIME'
  done
done
row=${ROW_NCU:-64x64}
for b in knudsen-old knudsen; do
  echo "== ncu fused_moments $b, row $row"
  /usr/local/cuda/bin/ncu --kernel-name regex:fused_moments --launch-skip ${SKIP:-7} --launch-count 1 --section SpeedOfLight \
    carry/$b run configs/bench/row-$row.json --backend cuda --acceleration none --max-iterations 1 --out /tmp/ncu-$b 2>&1 \
    | grep -E "fused_moments|Duration|DRAM Throughput|Memory Throughput"
  carry/$b run configs/bench/row-$row.json --backend cuda --acceleration none --max-iterations 3 --out /tmp/f3-$b > /dev/null 2>&1
done
echo "== fields after 3 sweeps, new against old"
carry/knudsen compare /tmp/f3-knudsen /tmp/f3-knudsen-old 2>&1 | grep -v XDG
