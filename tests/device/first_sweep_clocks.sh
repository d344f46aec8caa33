#!/usr/bin/env bash
# Runs on the device machine: the GPU's SM clock and power state, sampled every 20 ms by
# nvidia-smi, while `knudsen bench --backend $BE --rows 64x64` runs its first sweeps in a fresh
# process (debug log lines stamped with the host's clock), to see whether a process's first
# sweep meets a GPU that is still clocking up. Writes $OUT/first_sweep_clocks.txt.
set -u
. tests/device/setup.sh
log=$OUT/first_sweep_clocks.txt
stamp() { python3 -u -c 'import sys, datetime
for l in sys.stdin: print(datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3], l, end="")'; }
for be in ${BES:-wgpu cuda}; do
  sleep ${IDLE:-5}
  nvidia-smi --query-gpu=timestamp,clocks.sm,pstate,power.draw,utilization.gpu --format=csv,noheader -lms 20 > /tmp/clk-$be.csv &
  smi=$!
  sleep 1
  echo "== $be" >> "$log"
  RUST_LOG=knudsen::backend=debug $K bench --backend $be --rows 64x64 --warmup 3 --warmup-seconds 0 --iterations 3 \
    --out /tmp/fsc 2>&1 | grep -E "sweep:|^$be " | stamp >> "$log"
  sleep 0.5
  kill $smi
  # One line per change of clock or power state, to keep the file short.
  awk -F', ' '{ k = $2 " " $3; if (k != last) { print; last = k } }' /tmp/clk-$be.csv >> "$log"
done
