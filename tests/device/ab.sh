#!/usr/bin/env bash
# Runs on the NVIDIA device machine, from the repository root: a change (carry/knudsen)
# against the build before it (carry/knudsen-old), in one call, so that the timings compare.
#   CHECK="cuda wgpu"   first the new build's fused sweep against the slice kernels on those
#                       backends (tests/device/fused.sh check; its $TILES and $CASES, or
#                       its defaults); empty: no check
#   BENCH_BE, ROWS      `knudsen bench --backend $BENCH_BE --rows $ROWS --iterations 5` of
#                       both builds, alternating $REPS times (default cuda,wgpu; 32x32,64x64; 2)
#   VARY                one bench pass per setting, e.g. "KNUDSEN_FUSED_TILE=4x4
#                       KNUDSEN_FUSED_TILE=8x8" or "KNUDSEN_FUSED_MIN_BLOCKS=2 ..."; "-" for
#                       none (the default). A setting is NAME=value without spaces; two
#                       variables at once are joined by a comma: NAME=a,OTHER=b
#   COMPARE=ROW         both builds' fields after 3 sweeps of bench row ROW on each backend
#                       of $BENCH_BE, compared (0 when the change keeps every operation's order);
#                       ROW=cube is the paper cube (configs/cube-ma2-kn1.json, every velocity
#                       in flight, as the bench runs it)
#   NCU=KERNEL          ncu's duration, throughput, warp instructions and active lanes per
#                       instruction of one launch of KERNEL (launch $SKIP,
#                       default 7) of both builds on row $ROW_NCU (default 64x64), CUDA
#   VKSTATS=TILES       `knudsen vk-stats` of the new build, e.g. VKSTATS=4x4,8x8
#   ARGS                more arguments for every bench, COMPARE and NCU run, e.g.
#                       ARGS="--scheme second_order"
# Writes $OUT/ab.txt and the bench CSVs under $OUT/bench-*.
set -u -o pipefail
. tests/device/setup.sh
exec > >(tee -a "$OUT/ab.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
BENCH_BE=${BENCH_BE:-cuda,wgpu}
if [ -n "${CHECK:-}" ]; then
  echo "== check ($CHECK)"
  BE="$CHECK" OUT=$OUT/check bash tests/device/fused.sh check 2>&1 | grep -E "^==|density|heat_flux|FAIL"
fi
for rep in $(seq ${REPS:-2}); do
  for setting in ${VARY:--}; do
    vars=()
    [ "$setting" = - ] || IFS=, read -r -a vars <<< "$setting"
    for b in knudsen-old knudsen; do
      echo "== bench $b, $setting ($rep)"
      env "${vars[@]}" carry/$b bench --backend $BENCH_BE --rows ${ROWS:-32x32,64x64} --iterations 5 ${ARGS:-} \
        --out $OUT/bench-$b-${setting//[^A-Za-z0-9]/_}-$rep 2>&1 | grep -E "^(cuda|wgpu|cpu) [0-9a-z]+:" \
        || echo "FAILED: bench $b, $setting"
    done
  done
done
if [ -n "${COMPARE:-}" ]; then
  cmp_case=(configs/bench/row-$COMPARE.json)
  [ "$COMPARE" = cube ] && cmp_case=(configs/cube-ma2-kn1.json --memory-budget-mib 16384)
  for be in ${BENCH_BE//,/ }; do
    for b in knudsen-old knudsen; do
      rm -rf /tmp/ab3-$be-$b
      carry/$b run "${cmp_case[@]}" --backend $be --acceleration none --max-iterations 3 \
        ${ARGS:-} --out /tmp/ab3-$be-$b > /dev/null 2>&1 || echo "FAILED: $b on $be"
    done
    echo "== fields after 3 sweeps of $COMPARE on $be, new against old"
    carry/knudsen compare /tmp/ab3-$be-knudsen /tmp/ab3-$be-knudsen-old 2>&1 | grep -v XDG
  done
fi
if [ -n "${NCU:-}" ]; then
  for b in knudsen-old knudsen; do
    echo "== ncu $NCU, $b, row ${ROW_NCU:-64x64}"
    /usr/local/cuda/bin/ncu --kernel-name regex:"$NCU" --launch-skip ${SKIP:-7} --launch-count 1 --section SpeedOfLight \
      --metrics smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio \
      carry/$b run configs/bench/row-${ROW_NCU:-64x64}.json --backend cuda --acceleration none --max-iterations 1 \
      ${ARGS:-} --out /tmp/ncu-$b 2>&1 | grep -E "$NCU|Duration|DRAM Throughput|Memory Throughput|inst_executed"
  done
fi
if [ -n "${VKSTATS:-}" ]; then
  carry/knudsen vk-stats --row 64x64 --tiles $VKSTATS 2>&1 | grep -E "tile|Register|Binary"
fi
