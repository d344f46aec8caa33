#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/cube.sh MAX_ITERATIONS [continue] [BUDGET_MIB]
# The paper's Ma = 2, Kn = 1 cube (configs/cube-ma2-kn1.json) on wgpu, for at most
# MAX_ITERATIONS; with `continue`, from the state a previous call left in target/cube-run
# (kept while the machine stays warm). A call is limited to 10 minutes, so a long run is a
# chain of calls. Writes under $OUT: log.txt, summary.json, residuals.csv, the peak GPU
# memory, and the temperature, velocity and density on the symmetry plane z = 0 as CSV.
set -u
. tests/device/setup.sh
ITER=${1:-3}
MODE=${2:-new}
BUDGET=${3:-20000}
RUN=target/cube-run
EXTRA=""
if [ "$MODE" = continue ]; then
    [ -f $RUN/fields.h5 ] || { echo "no previous run in $RUN (the machine was released?)"; exit 3; }
    EXTRA="--restart $RUN"
fi
exec > >(tee -a "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > /tmp/cube.mem &
smi=$!
$K run configs/cube-ma2-kn1.json --backend wgpu --out $RUN --max-iterations "$ITER" \
    --memory-budget-mib "$BUDGET" $EXTRA 2>&1 | grep -v XDG_RUNTIME
kill $smi; wait $smi 2>/dev/null
echo "gpu_mem_peak_mib $(( $(sort -n /tmp/cube.mem | tail -1) - idle ))" | tee $OUT/gpu_mem.txt
cp $RUN/summary.json $RUN/residuals.csv $OUT/
$K slice $RUN --field temperature --axis z --at 0 --out $OUT/plane_temperature.csv
$K slice $RUN --field velocity --axis z --at 0 --out $OUT/plane_velocity.csv
$K slice $RUN --field density --axis z --at 0 --out $OUT/plane_density.csv
