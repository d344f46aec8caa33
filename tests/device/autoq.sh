#!/usr/bin/env bash
# Runs on the NVIDIA device machine: `auto` against source iteration on the quick cases
# (five times each, and with the trial on 2 threads), the 16^3 cavity at Kn 0.1 and 0.01,
# then the paper cube with `auto` on CUDA and wgpu (CUBE=0: not). Writes $OUT/quick.txt.
set -u
. tests/device/setup.sh
R=/tmp/aq; mkdir -p $R
one() { # name cfg be acc [env]
  env ${5:-} RUST_LOG=knudsen=debug $K run configs/$2.json --backend $3 --acceleration $4 --tolerance 1e-5 --out $R/$1 > $R/$1.log 2>&1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]+'/summary.json')); print('%-34s %3d it %3s solves %.4f s' % (sys.argv[2], d['iterations'], d.get('synthetic_solves'), d['total_seconds']))" $R/$1 "$1 ${5:-}"
}
for be in cuda wgpu; do for cfg in cavity-quick cube-quick; do for rep in 1 2 3 4 5; do
  one $cfg-$be-none-$rep $cfg $be none
  one $cfg-$be-auto-$rep $cfg $be auto
  one $cfg-$be-auto2-$rep $cfg $be auto KNUDSEN_GSIS_TRIAL_THREADS=2
done; done; done > $OUT/quick.txt
grep -E "iteration [0-9]+:" $R/cavity-quick-cuda-none-3.log | awk '{print $4, $6, $9}' | tr '\n' ';' >> $OUT/quick.txt; echo >> $OUT/quick.txt
grep -E "iteration [0-9]+:|auto:" $R/cavity-quick-cuda-auto-3.log | awk '{print $4, $6, $9}' | tr '\n' ';' >> $OUT/quick.txt; echo >> $OUT/quick.txt
grep -h "gsis auto" $R/cavity-quick-cuda-auto-3.log $R/cube-quick-cuda-auto-3.log | sed 's/.*gsis auto: /  auto: /' >> $OUT/quick.txt
# The 16^3 cavity at lower Kn (a host solve beside the GPU sweep, where a solve pays).
for kn in 0.1 0.01; do
  python3 - $kn <<'PY'
import json, sys
c = json.load(open("configs/cavity-quick.json")); c["name"] = "cq" + sys.argv[1]; c["gas"]["kn"] = float(sys.argv[1])
c["solver"] = {"tolerance": 1e-5, "max_iterations": 4000}
json.dump(c, open(f"configs/cq{sys.argv[1]}.json", "w"))
PY
  for be in cuda wgpu; do for acc in none auto; do one cq$kn-$be-$acc cq$kn $be $acc; done
    grep -h "gsis auto" $R/cq$kn-$be-auto.log | sed 's/.*gsis auto: /  auto: /'
  done
done >> $OUT/quick.txt
cat $OUT/quick.txt
[ "${CUBE:-1}" = 0 ] && exit 0
for be in cuda wgpu; do
  mem=""; [ $be = wgpu ] && mem="--memory-budget-mib 16384"  # as tests/device/gsis.sh
  RUST_LOG=knudsen=debug,info timeout 280 $K run configs/cube-ma2-kn1.json --backend $be --acceleration auto --tolerance 1e-5 $mem --out $R/cube-$be > $R/cube-$be.log 2>&1
  grep -E "auto:|converged|C_D" $R/cube-$be.log | tail -4 | cut -c1-200
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]+'/summary.json')); print(sys.argv[1], d['iterations'], d.get('synthetic_solves'), d['total_seconds'])" $R/cube-$be
done
