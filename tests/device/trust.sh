#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/trust.sh
# Needs carry/knudsen built with `--features cuda`. The trust-at-scale checks: two runs of
# the quick cavity per GPU backend must be bit-identical; one iteration of 128^3 cells x
# 128^3 velocities at a 70000 MiB budget (over a million velocities in flight) must give
# the moments of a 16000 MiB run; the paper cube on CUDA converges. Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
R=/tmp/knudsen-trust
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
git log -1 --format='commit %H' 2>/dev/null || true

run() { # name config backend args...
  local name=$1 cfg=$2 be=$3; shift 3
  local t0; t0=$(date +%s.%N)
  timeout "${LIMIT:-300}" $K run "$cfg" --backend "$be" --out $R/$name "$@" > $R/$name.log 2>&1
  local rc=$?
  printf '%-16s rc=%s wall %.1f s\n' "$name" "$rc" "$(python3 -c "print($(date +%s.%N) - $t0)")"
  grep -E "backend |converged|error|interrupted" $R/$name.log | grep -v XDG | tail -3
}

echo "== repeatability: two runs per backend, compared field by field"
for be in cuda wgpu; do
  run quick-$be-1 configs/cavity-quick.json $be
  run quick-$be-2 configs/cavity-quick.json $be
  $K compare $R/quick-$be-1 $R/quick-$be-2
  cmp <(h5dump -d density $R/quick-$be-1/fields.h5 2>/dev/null) <(h5dump -d density $R/quick-$be-2/fields.h5 2>/dev/null) >/dev/null 2>&1 && echo "h5dump density identical" || true
done

echo "== 128^3 x 128^3, one iteration, 16000 and 70000 MiB"
python3 - <<'PY'
import json
c = json.load(open("configs/cavity-kn1.json"))
for a in "xyz":
    c["grid"][a]["cells"] = 128
c["velocity"]["points"] = 128
c["solver"].update({"max_iterations": 1, "tolerance": 1e-30})
c["solver"].pop("memory_budget_mib", None)
json.dump(c, open("/tmp/big.json", "w"))
PY
LIMIT=240 run big-16000 /tmp/big.json cuda --memory-budget-mib 16000
LIMIT=240 run big-70000 /tmp/big.json cuda --memory-budget-mib 70000
$K compare $R/big-70000 $R/big-16000
for r in big-16000 big-70000; do
  python3 -c "import json; s=json.load(open('$R/$r/summary.json')); print('$r', s['velocities_in_flight'], 'in flight,', s['seconds_per_iteration'], 's/iter')"
done

echo "== paper cube on CUDA"
LIMIT=330 run cube-cuda configs/cube-ma2-kn1.json cuda
python3 -c "import json; s=json.load(open('$R/cube-cuda/summary.json')); print('cube-cuda', s['iterations'], 'iterations, converged', s['converged'], 'residual', s['final_residual'], 'C_D', s['bodies'][0]['drag_coefficient'], s['seconds_per_iteration'], 's/iter')"
