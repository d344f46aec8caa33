#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/mpi.sh check|strong|weak
# Needs carry/knudsen built with `--features cuda,mpi` (tests/device/setup.sh).
#   check:  the 64^3 cavity on CUDA, one process against mpirun -np 2 and -np 4 (on however
#           many GPUs there are: ranks share them round-robin): iterations, relative L2 of
#           every field (knudsen compare), and the time in the sum per iteration. ACC=gsis:
#           with GSIS (each process solving the correction on its GPU).
#   strong: 64^3 x 64^3 and 128^3 x 64^3, 5 source iterations, on 1, 2 and 4 processes
#           (one GPU each on nvidia-h200-x2/-x4): seconds per iteration and in the sum.
#   weak:   64^3 cells and about 64^3 velocities per process (64, 81, 102 points per axis;
#           PAIRS="0:64 2:81" picks processes:points pairs).
# Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=/tmp/knudsen-mpi
mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "cores $(nproc); GPUs $(nvidia-smi -L | wc -l); $(mpirun --version | head -1)"

cavity() { # name cells points iterations
  python3 - "$@" <<'PY'
import json, os, sys
name, n, m, it = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
c = json.load(open("configs/cavity-kn1.json"))
c["name"] = name
for a in "xyz":
    c["grid"][a]["cells"] = n
c["velocity"]["points"] = m
c["solver"] = {"tolerance": 1e-5, "max_iterations": it, "acceleration": os.environ.get("ACC", "none")}
json.dump(c, open(f"/tmp/{name}.json", "w"))
PY
}

run() { # name config ranks args...
  local name=$1 cfg=$2 np=$3; shift 3
  local threads=$(( $(nproc) / (np > 0 ? np : 1) ))
  local launch=()
  [ "$np" -gt 0 ] && launch=(mpirun --oversubscribe --bind-to none -np "$np")
  local t0; t0=$(date +%s.%N)
  RUST_LOG=knudsen=info timeout "${LIMIT:-500}" "${launch[@]}" $K run "$cfg" --backend cuda --threads $threads \
    --memory-budget-mib 16384 --out $R/$name "$@" > $R/$name.log 2>&1
  local rc=$?
  local wall; wall=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
  local per; per=$(grep -oE "iteration [0-9]+ residual [0-9.e+-]+ .* [0-9.]+ s$" $R/$name.log | tail -n +2 |
    awk '{s+=$(NF-1); n++} END {if (n) printf "%.3f s per iteration (after the first)", s/n}')
  local sum; sum=$(grep -oE "sum over [0-9]+ processes: .*" $R/$name.log | tail -1)
  local fin; fin=$(grep -E "converged|error|failed" $R/$name.log | tail -1 | sed 's/.*knudsen\] //')
  printf '%-22s np=%s rc=%s wall %6s s | %s | %s | %s\n' "$name" "$np" "$rc" "$wall" "$per" "${sum:-single process}" "$fin"
}

case "${1:-check}" in
check)
  cavity c64 64 64 100
  run c64-np0 /tmp/c64.json 0
  for np in ${CHECK_NPS:-2 4}; do
    run c64-np$np /tmp/c64.json $np
    $K compare $R/c64-np$np $R/c64-np0 | tail -8
  done
  ;;
strong)
  for n in ${SIZES:-64 128}; do
    cavity s$n $n 64 5
    for np in ${NPS:-0 2 4}; do run s$n-np$np /tmp/s$n.json $np; done
  done
  ;;
weak)
  for pair in ${PAIRS:-0:64 2:81 4:102}; do
    np=${pair%%:*}; m=${pair##*:}
    cavity w$m 64 $m 5
    run w$m-np$np /tmp/w$m.json $np
  done
  ;;
esac
