#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/records.sh [check|bench|cavity|all]
# Needs carry/knudsen built with `--features cuda` and .gl/*.deb (tests/device/setup.sh).
# A GPU backend's cell records computed on the device (shaders/cuda/cell_records.cu, on
# wgpu shaders/cell_records_f64.wgsl, or with MODES="host device-f32" the f32 stage
# shaders/cell_records.wgsl; BE=wgpu for the check)
# against the host's (KNUDSEN_CELL_RECORDS=host), on the same binary:
#   check:  5 iterations of each case with both (GSIS; one case second order), `knudsen
#           compare` of the fields;
#   bench:  `knudsen bench --backend $BE --rows $ROWS` alternating $MODES (host device), $REPS
#           times each, with the debug split of the sweep and the host update;
#   cavity: configs/cavity-kn1.json to convergence with both, with the config's budget and
#           with other budgets ($BUDGETS, MiB or "config"; default "config 16384"), $REPS times.
# Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
what=${1:-all}
R=/tmp/knudsen-records
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
summary() { # summary.json label
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"  {sys.argv[2]}: {d['iterations']} iterations, converged {d['converged']}, "
      f"residual {d['final_residual']:.2e}, {d['total_seconds']:.3f} s ({d['seconds_per_iteration']:.4f} s/it)")
PY
}
if [ "$what" = check ] || [ "$what" = all ]; then
  # Entries are a config, or config:scheme (the second-order scheme runs the slice kernels).
  for entry in ${CASES:-tests/device/fused/odd.json tests/device/fused/body.json tests/device/fused/partner.json configs/cavity-quick.json configs/cube-quick.json configs/cavity-kn0.01.json configs/cavity-quick.json:second_order}; do
    cfg=${entry%%:*}
    scheme=first_order
    [ "$entry" != "$cfg" ] && scheme=${entry#*:}
    n=$(basename "$cfg" .json)-$scheme
    echo "== check $n"
    for mode in host device; do
      # A fixed path (`auto` follows timings) that makes synthetic solves (their right-hand
      # side reads the collision frequency).
      KNUDSEN_CELL_RECORDS=$mode $K run "$cfg" --backend ${BE:-cuda} --max-iterations 5 --tolerance 1e-30 --acceleration gsis \
        --scheme $scheme --out $R/$n-$mode > $R/$n-$mode.log 2>&1 || { echo "FAILED: $n $mode"; tail -5 $R/$n-$mode.log; }
    done
    $K compare $R/$n-device $R/$n-host | sed "s/^/  device against host: /"
  done
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  for rep in $(seq ${REPS:-2}); do
    for mode in ${MODES:-host device}; do
      echo "== bench $mode ($rep)"
      KNUDSEN_CELL_RECORDS=$mode RUST_LOG=knudsen=debug $K bench --backend ${BE:-cuda} --rows ${ROWS:-32x32,64x64} \
        --iterations ${ITERS:-5} --out $OUT/bench-$mode-$rep > $R/bench-$mode-$rep.log 2>&1 || echo "FAILED: bench $mode"
      grep -v -e XDG_RUNTIME -e DEBUG -e INFO $R/bench-$mode-$rep.log | tail -6
      grep -h -e "cuda sweep:" -e "wgpu sweep:" -e "host update" $R/bench-$mode-$rep.log | sed 's/.*DEBUG[^:]*: //' | tail -6
    done
  done
fi
if [ "$what" = cavity ] || [ "$what" = all ]; then
  for rep in $(seq ${REPS:-2}); do
    for budget in ${BUDGETS:-config 16384}; do
      for mode in ${MODES:-host device}; do
        extra=()
        [ "$budget" != config ] && extra=(--memory-budget-mib $budget)
        out=$R/cavity-$mode-$budget-$rep
        KNUDSEN_CELL_RECORDS=$mode $K run configs/cavity-kn1.json --backend ${BE:-cuda} "${extra[@]}" --out $out \
          > $out.log 2>&1 || { echo "FAILED: cavity $mode $budget"; tail -5 $out.log; }
        summary $out/summary.json "cavity, budget $budget, records on the $mode ($rep)"
      done
    done
  done
fi
