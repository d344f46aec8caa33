#!/usr/bin/env bash
# Runs on the device machine: the f32 CPU sweep of carry/$A against carry/$B, alternating
# ($REPS rounds) on $THREADS threads, then once each on one thread: `knudsen bench --backend
# cpu --precision f32 --rows 32x32`, with the stage times of the debug log. Writes
# $OUT/cpu_ab.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/cpu_ab.txt") 2>&1
run() { # binary threads
  RUST_LOG=knudsen=debug carry/$1 bench --backend cpu --precision f32 --rows ${ROW:-32x32} --threads $2 --iterations 2 --out /tmp/cab 2>&1 \
    | grep -E "cpu f32 stages|^cpu [0-9]" | sed 's/.*DEBUG  *knudsen[^ ]* //' | tail -2 | sed "s/^/$1 t$2: /"
}
for r in $(seq ${REPS:-3}); do for b in $A $B; do run $b ${THREADS:-16}; done; done
for b in $A $B; do run $b 1; done
