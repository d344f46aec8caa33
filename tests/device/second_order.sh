#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/second_order.sh tests|refine|speed|cube [BACKEND]
# Needs carry/knudsen built with `--features cuda`, .gl/*.deb (tests/device/setup.sh), and
# for `tests` carry/second_order (the stripped test binary of tests/second_order.rs).
#   tests:  the second-order tests with CUDA and wgpu present (every backend against the CPU).
#   refine [CELLS]: the cavity (Kn 1, 32^3 velocities unless set) at CELLS^3 cells (default 16,32,64),
#           first and second order, on CUDA with GSIS (or ACC=none): centre velocity.
#           KN (default 1), VPTS (velocity points per axis, 32), TOL (1e-5), ITS (200) and
#           SCHEMES (first_order,second_order) change the case; TAG names the output.
#   speed:  seconds per iteration of configs/cavity-kn1.json (64^3 x 64^3), both schemes,
#           CUDA and wgpu (3 iterations each).
#   cube:   the paper cube (configs/cube-ma2-kn1.json), second order, on BACKEND (cuda).
# Writes $OUT/log.txt and the files named below.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
case "${1:-}" in
tests)
    carry/second_order --test-threads 1 --nocapture 2>&1 | grep -v XDG_RUNTIME
    ;;
refine)
    CELLS=${2:-16,32,64} KN=${KN:-1} VPTS=${VPTS:-32} TOL=${TOL:-1e-5} ITS=${ITS:-200} \
        SCHEMES=${SCHEMES:-first_order,second_order} python3 - <<'PY'
import json, os
CELLS = [int(n) for n in os.environ["CELLS"].split(",")]
kn, vp = float(os.environ["KN"]), int(os.environ["VPTS"])
c = json.load(open("configs/validation/cavity-grid.json"))
c["name"] = "cavity-refine"
c["title"] = f"Lid-driven cavity, Kn = {kn:g}, {vp}^3 velocities: centre velocity u_x / U against cells"
c["order"] = [0.0, 3.0]
c["case"]["gas"]["kn"] = kn
c["case"]["velocity"]["points"] = vp
c["case"]["solver"] = {"tolerance": float(os.environ["TOL"]), "max_iterations": int(os.environ["ITS"])}
c["points"] = [{"set": {"grid.x.cells": n, "grid.y.cells": n, "grid.z.cells": n, "solver.scheme": s},
                "subsets": ["fast", "full"]}
               for s in os.environ["SCHEMES"].split(",") for n in CELLS]
c.pop("plot", None)
json.dump(c, open("/tmp/cavity-refine.json", "w"), indent=1)
PY
    # validate needs three points per subset for the order; with fewer it reports the values.
    $K validate /tmp/cavity-refine.json --fast --backend cuda --acceleration "${ACC:-gsis}" --out /tmp/refine${TAG:-} 2>&1 | grep --line-buffered -v XDG_RUNTIME
    cp /tmp/refine${TAG:-}/results-fast.json "$OUT/refine${TAG:-}.json"
    ;;
speed)
    for be in cuda wgpu; do
        for s in first_order second_order; do
            echo "== $be $s"
            $K run configs/cavity-kn1.json --backend $be --scheme $s --max-iterations 3 --acceleration none \
                --memory-budget-mib 20000 --out /tmp/speed-$be-$s 2>&1 | grep -E "backend|iteration [0-9]+ |error"
        done
    done
    ;;
cube)
    be=${2:-cuda}
    t0=$(date +%s)
    $K run configs/cube-ma2-kn1.json --backend "$be" --scheme second_order --max-iterations 40 \
        --memory-budget-mib 40000 --out /tmp/cube2 2>&1 | grep -v XDG_RUNTIME | grep -E "backend|iteration|converged|error|WARN"
    echo "wall $(( $(date +%s) - t0 )) s"
    cp /tmp/cube2/summary.json "$OUT/cube-summary.json" 2>/dev/null
    ;;
*)
    echo "usage: $0 tests|refine|speed|cube [BACKEND]"; exit 2
    ;;
esac
