#!/usr/bin/env bash
# Runs on the NVIDIA device machine, from the repository root: the Kn 0.1 cavity
# (configs/cavity-kn0.1.json, second order on 64^3 cells). PART=profiles: the case with
# 32^3 and 48^3 velocities on CUDA to 1e-5, then `knudsen line` of the velocity and
# temperature through the centre (docs/validation.md, "Centre-line profiles of the paper
# cavity"; compare with docs/validation/cavity_profiles.py). PART=times (the default): the
# case as shipped with GSIS (twice) and source iteration on CUDA and wgpu, and the fields of
# the runs compared (docs/benchmarks.md, "The Kn 0.1 cavity").
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/kn01.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
summ() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(' iterations', s['iterations'], 'solver s', s['total_seconds'], 'residual', s['final_residual'], s['converged'])" "$1/summary.json"
}
if [ "${PART:-times}" = profiles ]; then
  for m in 32 48; do
    python3 -c "
import json, sys
c = json.load(open('configs/cavity-kn0.1.json'))
c['velocity']['points'] = int(sys.argv[1])
json.dump(c, open(sys.argv[2], 'w'))" $m /tmp/c$m.json
    echo "== profile v$m"
    RUST_LOG=knudsen=info $K run /tmp/c$m.json --backend cuda --tolerance 1e-5 --out /tmp/p$m 2>&1 |
      grep -E "converged|error|iteration [0-9]+ residual" | tail -3
    summ /tmp/p$m
    tag=kn0.1-64-second_order-v$m
    mkdir -p "$OUT/p/$tag"
    cp /tmp/p$m/summary.json "$OUT/p/$tag/"
    for f in velocity temperature; do
      $K line /tmp/p$m --field $f --along y --through 0.5,0.5 --out "$OUT/p/$tag/$f-vertical.csv"
      $K line /tmp/p$m --field $f --along x --through 0.5,0.5 --out "$OUT/p/$tag/$f-horizontal.csv"
    done
  done
  tar -C "$OUT" -czf "$OUT/kn01.tar.gz" p && rm -rf "$OUT/p"
  exit 0
fi
for be in cuda wgpu; do
  for acc in gsis none; do
    for rep in 1 2; do
      [ $acc = none ] && [ $rep = 2 ] && continue
      echo "== configs/cavity-kn0.1.json $be $acc rep $rep"
      RUST_LOG=knudsen=info $K run configs/cavity-kn0.1.json --backend $be --acceleration $acc --max-iterations 400 \
        --out /tmp/t-$be-$acc-$rep 2>&1 | grep -E "converged|error|warn|WARN" | tail -3
      summ /tmp/t-$be-$acc-$rep
    done
  done
done
$K compare /tmp/t-cuda-gsis-1 /tmp/t-wgpu-gsis-1 2>&1 | tail -8
$K compare /tmp/t-cuda-gsis-1 /tmp/t-cuda-none-1 2>&1 | tail -8
$K compare /tmp/t-wgpu-gsis-1 /tmp/t-wgpu-none-1 2>&1 | tail -8
