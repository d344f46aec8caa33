#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/gsis.sh shipped|kn|kn1|wgpu64|cube|device|wgpudev|auto|threshold|stall|f64|f64big|f64si
# (f64: BES="cuda wgpu" for both GPU backends.)
# (`device`, `wgpudev`: also need carry/knudsen-lib-tests, the stripped `cargo test --release
# --features cuda --lib --no-run` binary.)
# Needs carry/knudsen built with `--features cuda` and .gl/*.deb (tests/device/setup.sh).
# Source iteration against GSIS: iterations, wall time, and the mean sweep and host-update
# time per iteration, on CUDA and wgpu. The GPU stores f in f32, so every run stops at 1e-5.
# Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
R=/tmp/knudsen-gsis
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "cores $(nproc)"

run() { # name config backend acceleration args...
  local name=$1 cfg=$2 be=$3 acc=$4; shift 4
  local t0; t0=$(date +%s.%N)
  RUST_LOG=knudsen=debug,info timeout "${LIMIT:-300}" $K run "$cfg" --backend "$be" --acceleration "$acc" \
    --tolerance 1e-5 --out $R/$name "$@" > $R/$name.log 2>&1
  local rc=$?
  local wall; wall=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
  local means; means=$(grep -oE "backend [0-9.]+ s, host update [0-9.]+ s" $R/$name.log |
    awk '{b+=$2; h+=$6; n++} END {if (n) printf "sweep %.3f s, host %.3f s per iteration", b/n, h/n}')
  local fin; fin=$(grep -E "converged|error" $R/$name.log | grep -v XDG | tail -1 | sed 's/.*knudsen\] //')
  printf '%-28s %-5s %-5s rc=%s wall %6s s | %s | %s\n' "$name" "$be" "$acc" "$rc" "$wall" "$means" "$fin"
}

cavity() { # name cells points kn
  python3 - "$@" <<'PY'
import json, sys
name, n, m, kn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
c = json.load(open("configs/cavity-quick.json"))
c["name"] = name
c["gas"]["kn"] = kn
for a in "xyz":
    c["grid"][a]["cells"] = n
c["velocity"]["points"] = m
c["solver"] = {"tolerance": 1e-5, "max_iterations": 4000}
json.dump(c, open(f"/tmp/{name}.json", "w"))
PY
}

case "${1:-shipped}" in
stall)
  # The f32 floor at small Kn (docs/model.md, "The f32 floor at small Kn"): the 32^3 cavity
  # with GSIS at Kn 0.001 (stalls, stopped by solver.stall_sweeps) and 0.01 (converges) on
  # both GPU backends, then each against the CPU backend's f64 answer to 1e-10.
  for kn in 0.001 0.01; do
    cavity cav32-kn$kn 32 32 $kn
    for be in cuda wgpu; do run cav32-kn$kn-$be-gsis /tmp/cav32-kn$kn.json $be gsis; done
    timeout 600 $K run /tmp/cav32-kn$kn.json --backend cpu --acceleration gsis --tolerance 1e-10 \
      --out $R/cav32-kn$kn-cpu-f64 > $R/cav32-kn$kn-cpu-f64.log 2>&1
    tail -1 $R/cav32-kn$kn-cpu-f64.log
    for be in cuda wgpu; do
      echo "== $be against cpu f64, Kn $kn"
      $K compare $R/cav32-kn$kn-cpu-f64 $R/cav32-kn$kn-$be-gsis
      python3 -c "import json; s = json.load(open('$R/cav32-kn$kn-$be-gsis/summary.json')); print('iterations', s['iterations'], 'converged', s['converged'], 'stalled', s.get('stalled'), 'total_seconds', s['total_seconds'])"
    done
  done
  cp -r $R/*.log "$OUT/" 2>/dev/null
  ;;
f64)
  # The GPU backends' f64 slice kernels (solver.precision "f64") where f32 stalls, on BES
  # (default "cuda"; "cuda wgpu" for both): the 32^3 cavity at Kn 0.001 with GSIS to 1e-8 and
  # 1e-10, against the CPU's f64 answer to 1e-10, then the cost of an f64 sweep (3 sweeps of
  # source iteration, 32^3 and 64^3 cells; the solver's `backend` time per iteration) against
  # the f32 one. With carry/cuda_f64-test and carry/wgpu_f64-test (the stripped `cargo test
  # --release --features cuda --test cuda_f64|wgpu_f64 --no-run` binaries) their tests run first.
  for t in cuda_f64 wgpu_f64; do
    if [ -x carry/$t-test ]; then carry/$t-test ${t%_f64}_in_f64 --test-threads 1 --nocapture 2>&1 | grep -E "f64 |Kn 0.001|test |result"; fi
  done
  cavity cav32-kn0.001 32 32 0.001
  for be in ${BES:-cuda}; do
    for tol in 1e-8 1e-10; do
      name=cav32-kn0.001-$be-f64-$tol
      t0=$(date +%s.%N)
      RUST_LOG=knudsen=debug,info timeout 300 $K run /tmp/cav32-kn0.001.json --backend $be --precision f64 \
        --acceleration gsis --tolerance $tol --out $R/$name > $R/$name.log 2>&1
      echo "$name rc=$? wall $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
      grep -E "sweep kernel|converged|stalled" $R/$name.log | sed 's/.*knudsen\] //' | tail -2
      python3 -c "import json; s = json.load(open('$R/$name/summary.json')); print('iterations', s['iterations'], 'converged', s['converged'], 'stalled', s.get('stalled'), 'total_seconds', s['total_seconds'], 'device', s.get('device'))"
    done
  done
  timeout 600 $K run /tmp/cav32-kn0.001.json --backend cpu --acceleration gsis --tolerance 1e-10 \
    --out $R/cav32-kn0.001-cpu-f64 > $R/cav32-kn0.001-cpu-f64.log 2>&1
  tail -1 $R/cav32-kn0.001-cpu-f64.log
  for be in ${BES:-cuda}; do
    for tol in 1e-8 1e-10; do
      echo "== $be f64 to $tol against cpu f64 to 1e-10"
      $K compare $R/cav32-kn0.001-cpu-f64 $R/cav32-kn0.001-$be-f64-$tol
    done
  done
  for n in 32 64; do
    cavity cav$n-kn1 $n 32 1
    for be in ${BES:-cuda}; do
      for p in f64 f32; do
        name=cav$n-$be-$p-3
        RUST_LOG=knudsen=debug timeout 300 $K run /tmp/cav$n-kn1.json --backend $be --precision $p --acceleration none \
          --coarse-grids 0 --max-iterations 3 --out $R/$name > $R/$name.log 2>&1
        echo "$name rc=$? sweeps $(grep -oE 'iteration [0-9]+: backend [0-9.]+ s' $R/$name.log | awk '{print $4}' | tr '\n' ' ')s"
        grep -E "sweep kernel" $R/$name.log | sed 's/.*knudsen[^]]*\] //' | head -1
      done
    done
  done
  cp -r $R/*.log "$OUT/" 2>/dev/null
  ;;
f64big)
  # The f64 slice kernels on BES (default "cuda wgpu") at a larger size: the 64^3 cavity, 32^3
  # velocities, Kn 0.001, GSIS to 1e-8, against the CPU's f64 to 1e-8 (LIMIT seconds, 480).
  cavity cav64-kn0.001 64 32 0.001
  for be in ${BES:-cuda wgpu}; do
    name=cav64-kn0.001-$be-f64
    t0=$(date +%s.%N)
    RUST_LOG=info timeout 300 $K run /tmp/cav64-kn0.001.json --backend $be --precision f64 \
      --acceleration gsis --tolerance 1e-8 --out $R/$name > $R/$name.log 2>&1
    echo "$name rc=$? wall $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
    python3 -c "import json; s = json.load(open('$R/$name/summary.json')); print('iterations', s['iterations'], 'converged', s['converged'], 'stalled', s.get('stalled'), 'total_seconds', s['total_seconds'], 'device', s.get('device'))"
  done
  timeout ${LIMIT:-480} $K run /tmp/cav64-kn0.001.json --backend cpu --acceleration gsis --tolerance 1e-8 \
    --out $R/cav64-kn0.001-cpu-f64 > $R/cav64-kn0.001-cpu-f64.log 2>&1
  echo "cpu rc=$?"; tail -1 $R/cav64-kn0.001-cpu-f64.log | sed 's/.*knudsen\] //'
  for be in ${BES:-cuda wgpu}; do
    echo "== $be f64 against cpu f64, both to 1e-8"
    $K compare $R/cav64-kn0.001-cpu-f64 $R/cav64-kn0.001-$be-f64
  done
  ;;
f64si)
  # Source iteration at Kn 0.001 on the 32^3 cavity, in f64 on CUDA (f32 stopped at 2.1e-5
  # after 4000 sweeps): sweeps and time to the GPU tables' 1e-5 stop, for docs/validation.md.
  cavity cav32-kn0.001 32 32 0.001
  name=cav32-kn0.001-cuda-f64-none
  RUST_LOG=info timeout 580 $K run /tmp/cav32-kn0.001.json --backend cuda --precision f64 --acceleration none \
    --tolerance 1e-5 --max-iterations 20000 --out $R/$name > $R/$name.log 2>&1
  echo "$name rc=$?"
  grep -E "converged|error" $R/$name.log | sed 's/.*knudsen\] //' | tail -1
  python3 -c "import json; s = json.load(open('$R/$name/summary.json')); print('iterations', s['iterations'], 'converged', s['converged'], 'total_seconds', s['total_seconds'])"
  cp -r $R/*.log "$OUT/" 2>/dev/null
  ;;
shipped)
  for cfg in cavity-quick cube-quick cavity-kn0.01; do
    for be in cuda wgpu; do
      for acc in none gsis; do
        run $cfg-$be-$acc configs/$cfg.json $be $acc
      done
    done
  done
  for acc in none gsis; do run cavity-kn1-cuda-$acc configs/cavity-kn1.json cuda $acc; done
  ;;
kn)
  # BES="cuda wgpu": the backends (CUDA alone by default).
  for kn in ${KNS:-10 1 0.1 0.01 0.001}; do
    cavity cav32-kn$kn 32 32 $kn
    for be in ${BES:-cuda}; do
      for acc in gsis none; do run cav32-kn$kn-$be-$acc /tmp/cav32-kn$kn.json $be $acc; done
    done
  done
  ;;
auto)
  # `auto` against source iteration and GSIS on the shipped cases (CASES), on BES (both by
  # default), each run REPS times; KNS="10 1 0.1 0.01": the 32^3 cavity at those Kn too;
  # CUBE="auto gsis": the paper cube on CUDA and wgpu. The lines where auto chose are kept.
  for be in ${BES:-cuda wgpu}; do
    for cfg in ${CASES:-cavity-quick cube-quick cavity-kn0.01 cavity-kn1}; do
      for rep in $(seq ${REPS:-1}); do for acc in ${ACCS:-none gsis auto}; do
        run $cfg-$be-$acc-$rep configs/$cfg.json $be $acc
      done; done
      grep -h "gsis auto" $R/$cfg-$be-auto-1.log | sed 's/.*gsis auto: /    auto: /'
    done
    for kn in ${KNS:-}; do
      cavity cav32-kn$kn 32 32 $kn
      for acc in ${ACCS:-none gsis auto}; do run cav32-kn$kn-$be-$acc /tmp/cav32-kn$kn.json $be $acc; done
      grep -h "gsis auto" $R/cav32-kn$kn-$be-auto.log | sed 's/.*gsis auto: /    auto: /'
    done
    for acc in ${CUBE:-}; do
      LIMIT=${LIMIT:-400} run cube-ma2-kn1-$be-$acc configs/cube-ma2-kn1.json $be $acc --memory-budget-mib 16384
      grep -h "gsis auto" $R/cube-ma2-kn1-$be-$acc.log | sed 's/.*gsis auto: /    auto: /'
    done
  done
  for f in $R/*/summary.json; do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2], d['iterations'], d.get('synthetic_solves'), round(d['total_seconds'],3))" $f
  done
  cp $R/*.log "$OUT/"
  ;;
wgpu64)
  for acc in none gsis; do LIMIT=280 run cavity-kn1-wgpu-$acc configs/cavity-kn1.json wgpu $acc; done
  ;;
kn1)
  for be in cuda wgpu; do for acc in ${ACCS:-none gsis}; do
    run cavity-kn1-$be-$acc configs/cavity-kn1.json $be $acc
  done; done
  ;;
cube)
  LIMIT=${LIMIT:-560} run cube-ma2-kn1-cuda-gsis configs/cube-ma2-kn1.json cuda gsis
  ;;
device)
  # The synthetic solve on the CUDA device against the host's: the unit test (one W-cycle,
  # dot products and whole solves against the host's), then whole runs with the solve on the
  # device and, with KNUDSEN_GSIS_DEVICE=host, on the host; their fields compared.
  carry/knudsen-lib-tests synthetic::cuda --include-ignored --test-threads 1 2>&1 | tail -4
  for cfg in ${CASES:-cavity-quick cube-quick cavity-kn0.01 cavity-kn1}; do
    run $cfg-cuda-none configs/$cfg.json cuda none
    run $cfg-cuda-gsis configs/$cfg.json cuda gsis
    KNUDSEN_GSIS_DEVICE=host run $cfg-cuda-gsis-host configs/$cfg.json cuda gsis
    grep -m1 -oE "GMRES on the [a-z]+" $R/$cfg-cuda-gsis.log $R/$cfg-cuda-gsis-host.log
    $K compare $R/$cfg-cuda-gsis $R/$cfg-cuda-gsis-host 2>&1 | tail -6
  done
  # CUBE="none lines jacobi": the paper cube with source iteration, and with GSIS and each
  # smoother (KNUDSEN_GSIS_SMOOTHER).
  case " ${CUBE:-} " in *" none "*)
    LIMIT=${LIMIT:-400} run cube-ma2-kn1-cuda-none configs/cube-ma2-kn1.json cuda none ;;
  esac
  # DRIFTS="0.1 0.2": the paper cube and the 64^3 cavity with those rebuild thresholds.
  for d in ${DRIFTS:-}; do
    KNUDSEN_GSIS_REBUILD_DRIFT=$d run cavity-kn1-cuda-gsis-drift$d configs/cavity-kn1.json cuda gsis
    KNUDSEN_GSIS_REBUILD_DRIFT=$d LIMIT=${LIMIT:-400} run cube-ma2-kn1-cuda-gsis-drift$d configs/cube-ma2-kn1.json cuda gsis
    grep -c "operator rebuilt" $R/cube-ma2-kn1-cuda-gsis-drift$d.log
  done
  for sm in ${CUBE:-}; do
    [ "$sm" = none ] && continue
    KNUDSEN_GSIS_SMOOTHER=$sm LIMIT=${LIMIT:-400} run cube-ma2-kn1-cuda-gsis-$sm configs/cube-ma2-kn1.json cuda gsis
    grep -E "gsis:" $R/cube-ma2-kn1-cuda-gsis-$sm.log | head -4
  done
  cp $R/*.log "$OUT/"
  ;;
wgpudev)
  # The synthetic solve on the wgpu device (f32) against the host's: the unit test, then
  # whole runs with the solve on the device and on the host (KNUDSEN_GSIS_DEVICE=host),
  # their fields compared. CUBE="none gsis": the paper cube on wgpu with all its velocities
  # in flight (16384 MiB, as tests/device/targets.sh).
  carry/knudsen-lib-tests synthetic::wgpu --test-threads 1 --nocapture 2>&1 | grep -E "cycle|test result"
  for cfg in ${CASES:-cavity-quick cube-quick cavity-kn0.01 cavity-kn1}; do
    run $cfg-wgpu-none configs/$cfg.json wgpu none
    run $cfg-wgpu-gsis configs/$cfg.json wgpu gsis
    KNUDSEN_GSIS_DEVICE=host run $cfg-wgpu-gsis-host configs/$cfg.json wgpu gsis
    grep -m1 -oE "GMRES on the [a-z]+" $R/$cfg-wgpu-gsis.log $R/$cfg-wgpu-gsis-host.log
    $K compare $R/$cfg-wgpu-gsis $R/$cfg-wgpu-gsis-host 2>&1 | tail -6
  done
  for acc in ${CUBE:-}; do
    LIMIT=${LIMIT:-400} run cube-ma2-kn1-wgpu-$acc configs/cube-ma2-kn1.json wgpu $acc --memory-budget-mib 16384
  done
  cp $R/*.log "$OUT/"
  ;;
threshold)
  # placement.rs::DEVICE_MIN_CELLS: grids below it solve on the host with wgpu, and with
  # `auto` on CUDA too. Each case with the solve forced onto the device and onto the host,
  # alternating $REPS times, on each backend in $BACKENDS (default wgpu).
  for rep in $(seq ${REPS:-2}); do
    for be in ${BACKENDS:-wgpu}; do
      for cfg in ${CASES:-cavity-quick cube-quick cavity-kn1}; do
        for where in device host; do
          KNUDSEN_GSIS_DEVICE=$where run $cfg-$be-$where-$rep configs/$cfg.json $be gsis
        done
      done
    done
  done
  ;;
esac
