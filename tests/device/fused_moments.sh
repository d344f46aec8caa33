#!/usr/bin/env bash
# Runs on the NVIDIA device machine: fused_moments as one thread per cell and moment
# or per cell (carry/knudsen, KNUDSEN_FUSED_MOMENTS=split|cell) against the one-thread-per-
# cell kernel of the build before it (carry/knudsen-old): the same fields bit for bit after
# 5 fused sweeps (`knudsen compare`, on CUDA and wgpu, with bodies and partner faces, and a
# 64^3-cell grid), then `knudsen bench` of both binaries, same call.
# Writes $OUT/moments.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/moments.txt") 2>&1
R=/tmp/fm; mkdir -p $R
# A 64^3-cell cavity with 10^3 velocities: above SPLIT_MOMENTS_BELOW_CELLS.
python3 - <<'PY'
import json
c = json.load(open("configs/cavity-quick.json")); c["name"] = "c64"
for a in "xyz": c["grid"][a]["cells"] = 64
c["velocity"]["points"] = 10
json.dump(c, open("/tmp/c64.json", "w"))
PY
for be in cuda wgpu; do
  for cfg in ${CASES:-configs/cavity-quick.json configs/cube-quick.json tests/device/fused/body.json tests/device/fused/partner.json /tmp/c64.json}; do
    n=$be-$(basename $cfg .json)
    KNUDSEN_SWEEP=fused carry/knudsen-old run $cfg --backend $be --acceleration none --max-iterations 5 --tolerance 1e-30 --out $R/$n-old > $R/$n-old.log 2>&1 || tail -3 $R/$n-old.log
    for mpt in split cell; do
      KNUDSEN_FUSED_MOMENTS=$mpt KNUDSEN_SWEEP=fused $K run $cfg --backend $be --acceleration none --max-iterations 5 --tolerance 1e-30 --out $R/$n-$mpt > $R/$n-$mpt.log 2>&1 || tail -3 $R/$n-$mpt.log
      echo "== $n, $mpt against the old kernel: $($K compare $R/$n-$mpt $R/$n-old | awk 'NR>1 {printf "%s %s  ", $1, $2}')"
    done
  done
done
[ "${BENCH:-1}" = 0 ] && exit 0
for b in knudsen-old knudsen; do
  echo "== bench $b"
  carry/$b bench --backend cuda,wgpu --rows ${ROWS:-32x32,64x64,128x64} --out $R/bench-$b 2>&1 | grep -vE '^\[|^$'
done
