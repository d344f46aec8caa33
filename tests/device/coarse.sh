#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/coarse.sh [cases] [backends]
# Needs carry/knudsen built with `--features cuda` and .gl/*.deb (tests/device/setup.sh).
# The shipped cases to convergence with `--coarse-grids 0` and `1` ($REPS passes, the order
# swapped in even ones): per run the case's iterations, the coarse levels' iterations, final
# residual, seconds and set-up seconds, the seconds in all (summary.json's total_seconds:
# the coarse levels' iterations included, no backend's set-up) and with the coarse level's
# set-up added, the case backend's own set-up (summary.json's setup_seconds, where the binary
# writes it), the process's wall time, and C_D for the cube; the two results compared.
# Extra arguments to knudsen run: $EXTRA. Passes $FIRST_REP (default 1) to $REPS. The
# binary: $K (default carry/knudsen). Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
cases=${1:-cavity-kn1,cavity-kn0.1,cube-ma2-kn1}
backends=${2:-cuda,wgpu}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for rep in $(seq ${FIRST_REP:-1} ${REPS:-1}); do
for c in ${cases//,/ }; do
for b in ${backends//,/ }; do
# The plain start first in odd passes, the coarse start first in even ones.
order="0 1"; [ $((rep % 2)) = 0 ] && order="1 0"
for g in $order; do
  extra=()
  [ "$c" = cube-ma2-kn1 ] && extra=(--memory-budget-mib 16384)
  out="$OUT/$c-$b-g$g-$rep"
  t0=$(date +%s%N)
  $K run configs/$c.json --backend $b --coarse-grids $g "${extra[@]}" ${EXTRA:-} --out "$out" > "$out.log" 2>&1
  rc=$?
  t1=$(date +%s%N)
  python3 - "$out/summary.json" "$c $b coarse_grids=$g rep $rep" $(( (t1 - t0) / 1000000 )) $rc <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}: no summary (rc {sys.argv[4]}): {e}"); sys.exit()
cs = d.get("coarse_start")
lv = "; ".join(f"{l['cells']} x {l['velocity_points']}^3: {l['iterations']} it to {l['final_residual']:.2e}, {l['seconds']:.3f} s, set-up {l['setup_seconds']:.3f} s" for l in cs["levels"]) if cs else "-"
setup = cs["setup_seconds"] if cs else 0.0
cd = [b.get("drag_coefficient") for b in d.get("bodies", [])]
print(f"{sys.argv[2]}: {d['iterations']} iterations, residual {d['final_residual']:.2e}, "
      f"{d['total_seconds']:.3f} s in all ({d['seconds_per_iteration']:.4f} s/it), with the coarse set-up {d['total_seconds'] + setup:.3f} s, coarse [{lv}], "
      f"case set-up {d.get('setup_seconds', float('nan')):.3f} s, process wall {int(sys.argv[3]) / 1000:.2f} s, C_D {cd}")
PY
done
$K compare "$OUT/$c-$b-g0-$rep" "$OUT/$c-$b-g1-$rep" 2>&1 | sed "s/^/  $c $b g0 vs g1: /" | grep -v relative
rm -f "$OUT"/$c-$b-g*-$rep/fields.h5
done; done; done
