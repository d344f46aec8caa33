#!/usr/bin/env bash
# Runs on the device machine: what the host's cores give in parallel, apart from knudsen.
# A compute-bound loop that lives in L1 (pure Python: no memory traffic to speak of) runs in
# 1, 8 and 16 processes at once ($COUNTS), $REPS times; its time per process against the single
# process's is the host's own ceiling for the parallel efficiency of compute-bound code
# (clock under all-core load, shared cores). Then `knudsen bench --backend cpu --precision
# f32 --rows 32x32` on 1 and 16 threads ($THREADS), for comparison. Writes $OUT/cpu_scaling.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/cpu_scaling.txt") 2>&1
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|CPU max MHz|CPU MHz)" || true
loop='import time; t=time.perf_counter(); s=0
for i in range(20_000_000): s += i * i
print(f"{time.perf_counter()-t:.3f}")'
for rep in $(seq ${REPS:-2}); do
  for n in ${COUNTS:-1 8 16}; do
    ts=$(for i in $(seq $n); do python3 -c "$loop" & done; wait)
    echo "processes $n (pass $rep): seconds per process $(echo $ts | tr '\n' ' ')"
  done
done
for t in ${THREADS:-1 16}; do
  echo "== knudsen bench cpu f32 32x32, $t threads"
  $K bench --backend cpu --precision f32 --rows 32x32 --threads $t --iterations 2 --out $OUT/cpu-t$t 2>&1 | grep -E "^cpu "
done
