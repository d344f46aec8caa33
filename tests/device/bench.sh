#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/bench.sh
# Needs carry/knudsen (a release build from a developer machine) and .gl/*.deb (Debian's
# libvulkan1: the machine has the NVIDIA Vulkan driver but no loader). Writes under $OUT:
# bench.jsonl (one summary per run, plus peak GPU memory), log.txt, and the fields of the
# converged 32^3 x 64^3 and 64^3 x 64^3 cavities for comparison with the CPU reference.
set -u
. tests/device/setup.sh
RUNS=/tmp/knudsen-runs
mkdir -p $RUNS
LOG=$OUT/log.txt
exec > >(tee -a "$LOG") 2>&1

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
$K info 2>&1 | grep -v XDG

# Peak GPU memory of a command, sampled every 50 ms by nvidia-smi, minus the idle level.
run_case() { # name config timeout args...
  local name=$1 cfg=$2 limit=$3; shift 3
  local idle; idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 > $RUNS/$name.mem &
  local smi=$!
  timeout "$limit" $K run "$cfg" --out $RUNS/$name "$@" > $RUNS/$name.log 2>&1
  local rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  local peak; peak=$(sort -n $RUNS/$name.mem | tail -1)
  local med; med=$(awk -F, 'NR>1 {print $(NF-1)}' $RUNS/$name/residuals.csv 2>/dev/null | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}')
  echo "{\"run\": \"$name\", \"rc\": $rc, \"gpu_mem_peak_mib\": $((peak - idle)), \"median_iteration_s\": $med, \"summary\": $(tr -d "\n" < $RUNS/$name/summary.json 2>/dev/null || echo null)}" >> $OUT/bench.jsonl
  printf '%-16s rc=%s peak=%s MiB median=%s s/iter\n' "$name" "$rc" "$((peak - idle))" "$med"
  grep -E "backend|converged|not converged|error" $RUNS/$name.log | grep -v XDG | tail -3
}

# Correctness on this machine: the quick cavity on the CPU (16 cores) and on wgpu.
run_case quick-cpu configs/cavity-quick.json 300 --backend cpu
run_case quick-wgpu configs/cavity-quick.json 300 --backend wgpu
$K compare $RUNS/quick-wgpu $RUNS/quick-cpu

# The paper's table rows: 3 iterations each, all velocities of a row in flight where the
# 16 GiB budget allows.
for row in 32x32 32x64 64x32 64x64 64x128 128x64; do
  run_case "row-$row" configs/bench/row-$row.json 240 --backend wgpu --max-iterations 3 --tolerance 1e-30 --memory-budget-mib 16384
done
# The budget's effect at 64^3 x 64^3: 2 GiB (default) and 8 GiB.
run_case row-64x64-b2g configs/bench/row-64x64.json 240 --backend wgpu --max-iterations 3 --tolerance 1e-30 --memory-budget-mib 2048
run_case row-64x64-b8g configs/bench/row-64x64.json 240 --backend wgpu --max-iterations 3 --tolerance 1e-30 --memory-budget-mib 8192

# Converged cavities: 32^3 cells x 64^3 velocities, and the paper's 64^3 x 64^3.
run_case conv-32x64 configs/bench/row-32x64.json 300 --backend wgpu --max-iterations 200 --memory-budget-mib 16384
RUST_LOG=knudsen=debug run_case cavity-kn1 configs/cavity-kn1.json 400 --backend wgpu --memory-budget-mib 16384
grep -E "wgpu sweep|host update" $RUNS/cavity-kn1.log | tail -4
$K compare $RUNS/cavity-kn1 $RUNS/conv-32x64
cp $RUNS/conv-32x64/fields.h5 $OUT/conv-32x64.h5
split -b 15M -d $RUNS/cavity-kn1/fields.h5 $OUT/cavity-kn1.h5.part
ls -la $OUT
