#!/usr/bin/env bash
# Runs on the NVIDIA device machine: the validation suite (full subset, CPU backend, all host
# cores) with `auto` and with `gsis`; then the first and second `auto` run of
# cavity-kn0.01 on CUDA (the synthetic kernels' one-off compile on a fresh machine).
# Writes $OUT/validate-{auto,gsis}.json and $OUT/validate.txt.
set -u
. tests/device/setup.sh
for acc in ${ACCS:-auto gsis}; do
  t0=$(date +%s)
  $K validate --backend cpu --acceleration $acc --out /tmp/val-$acc > /tmp/val-$acc.log 2>&1
  echo "validate $acc: rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/validate.txt
  tail -3 /tmp/val-$acc.log >> $OUT/validate.txt
  cp /tmp/val-$acc/results-full.json $OUT/validate-$acc.json
done
for i in 1 2; do
  RUST_LOG=knudsen=debug,info $K run configs/cavity-kn0.01.json --backend cuda --acceleration auto --tolerance 1e-5 --out /tmp/k01-$i > /tmp/k01-$i.log 2>&1
  grep -E "kernels ready|converged" /tmp/k01-$i.log | sed 's/.*\] //' >> $OUT/validate.txt
done
cat $OUT/validate.txt
