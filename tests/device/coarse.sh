#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/coarse.sh [cases] [backends]
# Needs carry/knudsen built with `--features cuda` and .gl/*.deb (tests/device/setup.sh).
# The shipped cases to convergence with `--coarse-grids 0` and `1`, alternating ($REPS
# times): per run the case's iterations, the coarse levels' iterations and seconds, the
# seconds in all (summary.json's total_seconds, the coarse start included), the process's
# wall time, and C_D for the cube; the two results compared. Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
cases=${1:-cavity-kn1,cavity-kn0.1,cube-ma2-kn1}
backends=${2:-cuda,wgpu}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for rep in $(seq ${REPS:-1}); do
for c in ${cases//,/ }; do
for b in ${backends//,/ }; do
for g in 0 1; do
  extra=()
  [ "$c" = cube-ma2-kn1 ] && extra=(--memory-budget-mib 16384)
  out="$OUT/$c-$b-g$g-$rep"
  t0=$(date +%s%N)
  $K run configs/$c.json --backend $b --coarse-grids $g "${extra[@]}" --out "$out" > "$out.log" 2>&1
  rc=$?
  t1=$(date +%s%N)
  python3 - "$out/summary.json" "$c $b coarse_grids=$g rep $rep" $(( (t1 - t0) / 1000000 )) $rc <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}: no summary (rc {sys.argv[4]}): {e}"); sys.exit()
cs = d.get("coarse_start")
lv = "; ".join(f"{l['cells']} x {l['velocity_points']}^3: {l['iterations']} it, {l['seconds']:.3f} s" for l in cs["levels"]) if cs else "-"
cd = [b.get("drag_coefficient") for b in d.get("bodies", [])]
print(f"{sys.argv[2]}: {d['iterations']} iterations, residual {d['final_residual']:.2e}, "
      f"{d['total_seconds']:.3f} s in all ({d['seconds_per_iteration']:.4f} s/it), coarse [{lv}], "
      f"process wall {int(sys.argv[3]) / 1000:.2f} s, C_D {cd}")
PY
done
$K compare "$OUT/$c-$b-g0-$rep" "$OUT/$c-$b-g1-$rep" 2>&1 | sed "s/^/  $c $b g0 vs g1: /" | grep -v relative
rm -f "$OUT"/$c-$b-g*-$rep/fields.h5
done; done; done
