#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/fused_ncu.sh [row] [launch]
# ncu on one sweep_fused launch (default: the 8th of the first iteration, a full diagonal
# at 64^3 x 64^3), with stall reasons and the hottest SASS lines; and one fused_moments
# launch. Writes $OUT/ncu_sweep.txt, $OUT/ncu_mom.txt.
set -u
. tests/device/setup.sh
row=${1:-64x64}
skip=${2:-7}
N=/usr/local/cuda/bin/ncu
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats --section InstructionStats --section SourceCounters"
$N --kernel-name sweep_fused --launch-skip "$skip" --launch-count 1 $S --metrics smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_short_scoreboard,smsp__average_warp_latency_issue_stalled_math_pipe_throttle,smsp__average_warp_latency_issue_stalled_wait,smsp__average_warp_latency_issue_stalled_mio_throttle,smsp__average_warp_latency_issue_stalled_not_selected,smsp__average_warp_latency_issue_stalled_dispatch_stall,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_fmaheavy.sum \
  $K run configs/bench/row-$row.json --backend cuda \
  --max-iterations 1 --memory-budget-mib 16384 --out /tmp/ncu1 2>&1 | grep -v -e "^==PROF==" -e XDG > "$OUT/ncu_sweep.txt"
$N --kernel-name fused_moments --launch-skip "$skip" --launch-count 1 --section SpeedOfLight $K run configs/bench/row-$row.json --backend cuda \
  --max-iterations 1 --memory-budget-mib 16384 --out /tmp/ncu2 2>&1 | grep -v -e "^==PROF==" -e XDG > "$OUT/ncu_mom.txt"
grep -E "Duration|Registers Per|Theoretical Occ|Achieved Occ|Eligible Warps|Issue Slots Busy|Executed Instructions  |DRAM Throughput|stalled|pipe_" "$OUT/ncu_sweep.txt"
grep -E "Duration" "$OUT/ncu_mom.txt"
