#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   PART=check|time|ncu|e2e|all tests/device/slice_rows.sh (all: check and time)
# The slice sweep's rows in flight (KNUDSEN_SLICE_ROWS, src/backend/slice_rows.rs) on the
# backends $BE (default "cuda"; "cuda wgpu" for both).
#   check: each case's fields after 3 sweeps with the rule's rows and with 32 rows against one
#          row, in f32 (KNUDSEN_SWEEP=slices) and f64, first and second order: every
#          operation of every cell is the same, so 0 in every field is expected; prints
#          "DIFFERS" otherwise.
#   time:  the sweep's time (the solver's `backend` time in the debug log, the median of 5) at each row
#          setting ($SETTINGS) for the f64 cavity rows ($F64_ROWS) and, through `knudsen
#          bench` with KNUDSEN_SWEEP=slices, the f32 rows ($F32_ROWS) at first and second order.
#   e2e:   the Kn 0.001 cavities in f64 with GSIS (32^3 cells to 1e-10, 64^3 to 1e-8; 32^3
#          velocities) on $BE: iterations (sweeps) and solver seconds from summary.json.
#   ncu:   one sweep_slice launch (the 21st) of the f64 $NCU_ROW row (default 64x32) at each of
#          $NCU_SETTINGS (default "1 rule"): duration, occupancy, waves, memory throughput.
# Needs carry/knudsen built with `--features cuda`. Writes $OUT/slice-rows.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/slice-rows.txt") 2>&1
R=/tmp/knudsen-rows
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
PART=${PART:-all}

run3() { # backend out config [NAME=value...] [--option...]
  local be=$1 out=$2 cfg=$3; shift 3
  local vars=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do vars+=("$1"); shift; done
  rm -rf "$out"
  env "${vars[@]}" $K run "$cfg" --backend $be --max-iterations 3 --tolerance 1e-30 --acceleration none \
    --coarse-grids 0 "$@" --out "$out" > "$out.log" 2>&1 || { echo "FAILED: $out"; tail -3 "$out.log"; }
}
if [ "$PART" = check ] || [ "$PART" = all ]; then
  for be in ${BE:-cuda}; do
  for cfg in ${CASES:-tests/device/fused/odd.json tests/device/fused/thin.json tests/device/fused/body.json tests/device/fused/partner.json tests/device/fused/mach10.json configs/cavity-quick.json configs/cube-quick.json}; do
    for prec in f32 f64; do
      for scheme in first_order second_order; do
        n=$be-$(basename "$cfg" .json)-$prec-$scheme
        common=(RUST_LOG=knudsen=info KNUDSEN_SWEEP=slices)
        [ $prec = f64 ] && common=(RUST_LOG=knudsen=info)
        run3 $be $R/$n-1 "$cfg" "${common[@]}" KNUDSEN_SLICE_ROWS=1 --precision $prec --scheme $scheme
        run3 $be $R/$n-auto "$cfg" "${common[@]}" --precision $prec --scheme $scheme
        run3 $be $R/$n-32 "$cfg" "${common[@]}" KNUDSEN_SLICE_ROWS=32 --precision $prec --scheme $scheme
        for r in auto 32; do
          rows=$(grep -ohE "[0-9]+ (thread|invocation)\(s\) per velocity" $R/$n-$r.log | tail -1)
          # A compare that fails (a run that wrote nothing) counts as a difference.
          d=$($K compare $R/$n-$r $R/$n-1 2>&1 | grep -v XDG | awk '!(NF == 2 && $2 == "0.000e0") && !/^relative/' | tr '\n' ' ')
          printf '%-46s rows %-4s (%s): %s\n' "$n" "$r" "${rows:-?}" "${d:-same bits}"
          [ -n "$d" ] && echo "DIFFERS: $n rows $r"
        done
      done
    done
  done
  done
fi
if [ "$PART" = time ] || [ "$PART" = all ]; then
  # The rows' cases at the GPU's default budget ($BUDGET MiB; the bench files' 512 MiB would
  # split 64^3 x 32^3 in f64 into waves of fewer velocities); "old" is carry/knudsen-old.
  for be in ${BE:-cuda}; do
  for row in ${F64_ROWS:-32x32 64x32}; do
    for rows in ${SETTINGS:-1 2 4 8 16} rule old; do
      log=$R/f64-$be-$row-$rows.log
      bin=$K vars=(KNUDSEN_SLICE_ROWS=$rows)
      [ $rows = rule ] && vars=()
      [ $rows = old ] && { vars=(); bin=carry/knudsen-old; [ -x $bin ] || continue; }
      env "${vars[@]}" RUST_LOG=knudsen=debug $bin run configs/bench/row-$row.json --backend $be \
        --precision f64 --max-iterations 6 --tolerance 1e-30 --acceleration none --coarse-grids 0 \
        --memory-budget-mib ${BUDGET:-16384} --out $R/f64-$row-$rows > $log 2>&1 || echo "FAILED: f64 $be $row rows $rows"
      med=$(grep -oE "backend [0-9.]+ s" $log | awk '{print $2}' | tail -5 | sort -g | sed -n 3p)
      echo "f64 $be $row rows $rows: sweep ${med:-?} s (median of the last 5) $(grep -ohE "[0-9]+ (thread|invocation)\(s\) per velocity" $log | tail -1)"
    done
  done
  for scheme in ${SCHEMES:-first_order second_order}; do
    for rows in ${SETTINGS:-1 2 4 8 16} rule old; do
      echo "== f32 slices, $be, $scheme, rows $rows"
      bin=$K vars=(KNUDSEN_SLICE_ROWS=$rows)
      [ $rows = rule ] && vars=()
      [ $rows = old ] && { vars=(); bin=carry/knudsen-old; [ -x $bin ] || continue; }
      env "${vars[@]}" KNUDSEN_SWEEP=slices $bin bench --backend $be --rows ${F32_ROWS:-32x32,64x64} \
        --scheme $scheme --iterations 3 --out $OUT/bench-f32-$be-$scheme-$rows 2>&1 | grep -E "^(cuda|wgpu) [0-9a-z]+:" \
        || echo "FAILED: bench $be $scheme rows $rows"
    done
  done
  done
fi
if [ "$PART" = ncu ]; then
  for rows in ${NCU_SETTINGS:-1 rule}; do
    vars=(KNUDSEN_SLICE_ROWS=$rows)
    [ $rows = rule ] && vars=()
    echo "== ncu sweep_slice, f64 ${NCU_ROW:-64x32}, rows $rows"
    env "${vars[@]}" /usr/local/cuda/bin/ncu --kernel-name sweep_slice --launch-skip 20 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section SchedulerStats \
      $K run configs/bench/row-${NCU_ROW:-64x32}.json --backend cuda --precision f64 --max-iterations 2 \
      --tolerance 1e-30 --acceleration none --coarse-grids 0 --memory-budget-mib ${BUDGET:-16384} \
      --out $R/ncu-$rows 2>&1 | grep -E "Duration|Registers|Waves Per SM|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Eligible Warps|Stall|Block Limit|Grid Size|Compute \(SM\)"
  done
fi
if [ "$PART" = e2e ]; then
  for n in 32 64; do
    python3 - $n <<'PY'
import json, sys
n = int(sys.argv[1])
c = json.load(open("configs/cavity-quick.json"))
c["name"] = f"cav{n}-kn0.001"
c["gas"]["kn"] = 0.001
for a in "xyz":
    c["grid"][a]["cells"] = n
c["velocity"]["points"] = 32
c["solver"] = {"tolerance": 1e-5, "max_iterations": 4000}
json.dump(c, open(f"/tmp/cav{n}-kn0.001.json", "w"))
PY
    tol=1e-10; [ $n = 64 ] && tol=1e-8
    for be in ${BE:-cuda}; do
      name=e2e-cav$n-$be
      rm -rf $R/$name
      timeout 200 $K run /tmp/cav$n-kn0.001.json --backend $be --precision f64 --acceleration gsis \
        --tolerance $tol --out $R/$name > $R/$name.log 2>&1 || echo "FAILED: $name"
      python3 -c "import json; s = json.load(open('$R/$name/summary.json')); print('$name to $tol:', 'iterations', s['iterations'], 'converged', s['converged'], 'total_seconds', s['total_seconds'], 'device', s.get('device'))"
      grep -ohE "[0-9]+ (thread|invocation)\(s\) per velocity" $R/$name.log | tail -1
    done
  done
fi
