#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/targets.sh cavity|cube [backends]
# Needs carry/knudsen built with `--features cuda` and .gl/*.deb (tests/device/setup.sh).
# The converged-run targets of the speed issue: `configs/cavity-kn1.json` and the paper cube
# (`configs/cube-ma2-kn1.json`, budget 16384 MiB, all 110592 velocities in flight) run to their
# tolerance on each backend ($REPS times); prints iterations, total solver seconds and C_D (cube) from
# summary.json, and writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
which=${1:-cavity}
backends=${2:-cuda,wgpu}
case "$which" in
  # BUDGET (MiB) overrides the cavity config's 512 MiB: 16384 puts every velocity in flight.
  cavity) cfg=configs/cavity-kn1.json; extra=(${BUDGET:+--memory-budget-mib $BUDGET}) ;;
  cube) cfg=configs/cube-ma2-kn1.json; extra=(--memory-budget-mib 16384) ;;
  *) echo "unknown case $which"; exit 2 ;;
esac
for rep in $(seq ${REPS:-1}); do
for b in ${backends//,/ }; do
  out="$OUT/$which-$b-$rep"
  $K run "$cfg" --backend "$b" "${extra[@]}" --out "$out" 2>&1 | grep -v -e XDG_RUNTIME -e INFO | tail -3
  python3 - "$out/summary.json" "$b" "$which" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cd = [b.get("drag_coefficient") for b in d.get("bodies", [])]
print(f"{sys.argv[3]} {sys.argv[2]}: {d['iterations']} iterations, converged {d['converged']}, "
      f"residual {d['final_residual']:.2e}, {d['total_seconds']:.2f} s ({d['seconds_per_iteration']:.3f} s/it), C_D {cd}")
PY
done
done
