#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/cuda.sh
# Needs carry/knudsen built with `--features cuda`. The CUDA backend against the f64 CPU
# reference and against wgpu (quick cavity, cube-quick), then the paper's table rows timed
# for cuda and wgpu side by side. Writes under $OUT: log.txt, cuda.jsonl.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
R=/tmp/knudsen-cuda
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
$K info 2>&1 | grep -E "^(cuda|--backend|wgpu):"

case_run() { # name config backend args...
  local name=$1 cfg=$2 be=$3; shift 3
  local idle; idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 > $R/$name.mem &
  local smi=$!
  timeout 200 $K run "$cfg" --backend "$be" --out $R/$name "$@" > $R/$name.log 2>&1
  local rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  local peak; peak=$(sort -n $R/$name.mem | tail -1)
  local med; med=$(awk -F, 'NR>1 {print $8}' $R/$name/residuals.csv 2>/dev/null | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}')
  echo "{\"run\": \"$name\", \"rc\": $rc, \"gpu_mem_peak_mib\": $((peak - idle)), \"median_iteration_s\": $med}" >> $OUT/cuda.jsonl
  printf '%-22s rc=%s peak=%s MiB median=%s s/iter\n' "$name" "$rc" "$((peak - idle))" "$med"
  grep -E "backend|converged|error|C_D" $R/$name.log | grep -v XDG | tail -2
}

# Correctness: converged runs compared field by field.
case_run quick-cpu configs/cavity-quick.json cpu
case_run quick-cuda configs/cavity-quick.json cuda
case_run quick-wgpu configs/cavity-quick.json wgpu
$K compare $R/quick-cuda $R/quick-cpu
$K compare $R/quick-cuda $R/quick-wgpu
case_run cube-cpu configs/cube-quick.json cpu
case_run cube-cuda configs/cube-quick.json cuda
case_run cube-wgpu configs/cube-quick.json wgpu
$K compare $R/cube-cuda $R/cube-cpu
$K compare $R/cube-cuda $R/cube-wgpu
for r in cube-cpu cube-cuda cube-wgpu; do
  python3 -c "import json,sys; b=json.load(open('$R/$r/summary.json'))['bodies'][0]; print('$r', b['drag_coefficient'], b['heat_transfer_coefficient'])"
done

# The paper's table rows, 3 iterations each, cuda then wgpu.
for row in 32x32 32x64 64x32 64x64 64x128 128x64; do
  for be in cuda wgpu; do
    case_run "row-$row-$be" configs/bench/row-$row.json $be --max-iterations 3 --tolerance 1e-30 --memory-budget-mib 16384
  done
done
