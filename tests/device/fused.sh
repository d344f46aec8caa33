#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/fused.sh [check|bench|bench-fused|all]
# Needs carry/knudsen built with `--features cuda`. check: the fused on-chip sweep against
# the slice kernels (KNUDSEN_SWEEP=slices) after 5 iterations on small cases with odd and
# stretched grids, tiles wider than the grid, a one-cell axis, free-stream faces and several
# tile shapes, a body (and the quick cube, and a box in a Mach 10 stream), periodic and specular faces, on CUDA and wgpu ($BE); twice the same run for determinism. bench: `knudsen
# bench --backend cuda,wgpu` ($BENCH_BE) with each kernel. $ARGS goes to every run and bench
# (e.g. ARGS="--scheme second_order"). Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
what=${1:-all}
R=/tmp/knudsen-fused
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
BE=${BE:-cuda wgpu}
run5() { # out config [env...]
  local out=$1 cfg=$2; shift 2
  # A fixed path: `auto` chooses its synthetic solves from timings, so two runs of it may
  # stand at different iterates after 5 sweeps.
  env "$@" $K run "$cfg" --backend $be --max-iterations 5 --tolerance 1e-30 --acceleration none ${ARGS:-} --out "$out" > "$out.log" 2>&1 \
    || { echo "FAILED: $out"; tail -5 "$out.log"; }
  grep -h "sweep kernel" "$out.log" | sed 's/.*cuda sweep kernel/  kernel/' | head -1
}
if [ "$what" = check ] || [ "$what" = all ]; then
  for be in $BE; do
  for cfg in ${CASES:-tests/device/fused/odd.json tests/device/fused/thin.json tests/device/fused/body.json tests/device/fused/partner.json tests/device/fused/mach10.json configs/cavity-quick.json configs/cube-quick.json}; do
    n=$be-$(basename "$cfg" .json)
    echo "== $n"
    run5 $R/$n-slices "$cfg" KNUDSEN_SWEEP=slices RUST_LOG=knudsen=info
    for tile in ${TILES:-8x8 4x4 16x8 2x8}; do
      run5 $R/$n-fused-$tile "$cfg" KNUDSEN_SWEEP=fused KNUDSEN_FUSED_TILE=$tile RUST_LOG=knudsen=info
      $K compare $R/$n-fused-$tile $R/$n-slices | sed "s/^/  $tile: /"
    done
    # The first tile again: a rerun must give the same bits.
    first=${TILES:-8x8}
    first=${first%% *}
    run5 $R/$n-fused-again "$cfg" KNUDSEN_SWEEP=fused KNUDSEN_FUSED_TILE=$first RUST_LOG=knudsen=info
    $K compare $R/$n-fused-again $R/$n-fused-$first | sed "s/^/  rerun: /"
  done
  done
fi
if [ "$what" = bench ] || [ "$what" = bench-fused ] || [ "$what" = all ]; then
  sweeps="fused slices"
  [ "$what" = bench-fused ] && sweeps=fused
  for sweep in $sweeps; do
    echo "== bench, KNUDSEN_SWEEP=$sweep"
    KNUDSEN_SWEEP=$sweep $K bench --backend ${BENCH_BE:-cuda,wgpu} --rows ${ROWS:-32x32,64x64,128x64} ${ARGS:-} --out "$OUT/bench-$sweep" 2>&1 \
      | grep -v -e XDG_RUNTIME -e "stopping at 1.0e-5"
  done
fi
