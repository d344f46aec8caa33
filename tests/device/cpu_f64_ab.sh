#!/usr/bin/env bash
# Runs on the device machine: the f64 CPU sweep of carry/knudsen-old against carry/knudsen,
# alternating ($REPS rounds) on $THREADS threads: `knudsen bench --backend cpu --rows
# ${ROW:-32x32} --iterations 2 --scheme ${SCHEME:-first_order}` (f64, the default precision).
# Writes $OUT/cpu_f64_ab.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/cpu_f64_ab.txt") 2>&1
for r in $(seq ${REPS:-2}); do
  for b in knudsen-old knudsen; do
    carry/$b bench --backend cpu --rows ${ROW:-32x32} --threads ${THREADS:-16} --iterations 2 --scheme ${SCHEME:-first_order} --out /tmp/cf64 2>&1 \
      | grep -E "^cpu [0-9]" | tail -1 | sed "s/^/$b t${THREADS:-16}: /"
  done
done
