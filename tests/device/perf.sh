#!/usr/bin/env bash
# Stage timings of the wgpu backend on the device machine (see docs/performance.md):
#   tests/device/perf.sh            (needs carry/knudsen and .gl/*.deb)
# Each variant runs up to 3 iterations of a table case; the last iteration's time is printed.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/perf.txt") 2>&1
nvidia-smi --query-gpu=name --format=csv,noheader

variant() { # label case budget env...
  local label=$1 case=$2 budget=$3; shift 3
  env "$@" timeout 300 $K run configs/bench/$case.json --backend wgpu --max-iterations 3 --tolerance 1e-30 \
    --memory-budget-mib $budget --out /tmp/perf-$label > /tmp/perf-$label.log 2>&1
  local med
  # The last iteration: with KNUDSEN_STAGES set, iterations after the first time one stage.
  med=$(awk -F, 'NR>1 {t=$(NF-1)} END {print t}' /tmp/perf-$label/residuals.csv)
  printf '%-28s %-8s %6s MiB  %s s/iter  [%s]\n' "$label" "$case" "$budget" "$med" "$*"
}

variant full            row-64x64 16384 KNUDSEN_STAGES=all
variant full-again      row-64x64 16384 KNUDSEN_STAGES=all
variant sweep-only      row-64x64 16384 KNUDSEN_STAGES=sweep
variant moment-only     row-64x64 16384 KNUDSEN_STAGES=moment
variant full-8g         row-64x64 8192  KNUDSEN_STAGES=all
variant full            row-32x64 16384 KNUDSEN_STAGES=all
