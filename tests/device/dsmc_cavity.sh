#!/usr/bin/env bash
# Runs on the NVIDIA device machine, from the repository root (`docs/validation.md`, "The
# cubic cavity against DSMC"): the 1 mm argon cavity of the DSMC study whose diagonal
# profiles docs/data/cavity-dsmc/ holds (tests/device/dsmc-cavity/kn1.json, kn0.1.json:
# delta = 0.8866 and 8.866, lid 0.14828 v0), CUDA, GSIS, then `knudsen line` of every field
# along the diagonal (1,1,0) -> (0,0,1) at the DSMC file's 200 points.
# PART=a: 64^3 cells and velocities, first and second order, and second order with 96^3
# velocities at Kn 1; PART=b: second order on 128^3 cells (about 2 minutes each); PART=w:
# second order on 64^3 cells with wgpu (its slice kernels), tagged -wgpu.
# docs/validation/cavity_dsmc.py compares the unpacked folders with the DSMC profiles.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/dsmc-cavity.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
case_for() { # kn cells velocity-points -> path of the case file
  local path=/tmp/dsmc-kn$1-$2-$3.json
  python3 -c "
import json, sys
c = json.load(open('tests/device/dsmc-cavity/kn' + sys.argv[1] + '.json'))
for a in 'xyz': c['grid'][a]['cells'] = int(sys.argv[2])
c['velocity']['points'] = int(sys.argv[3])
json.dump(c, open(sys.argv[4], 'w'))" "$1" "$2" "$3" "$path"
  echo "$path"
}
run() { # kn cells scheme velocity-points tolerance [backend, default cuda]
  local be=${6:-cuda}
  local tag=kn$1-$2-$3-v$4
  [ "$be" = cuda ] || tag=$tag-$be
  echo "== $tag"
  RUST_LOG=knudsen=info $K run "$(case_for "$1" "$2" "$4")" --backend "$be" --scheme "$3" --tolerance "$5" \
    --out "/tmp/d-$tag" 2>&1 | grep -E "converged|error|stalled|iteration [0-9]+ residual" | tail -3
  mkdir -p "$OUT/d/$tag"
  cp "/tmp/d-$tag/summary.json" "$OUT/d/$tag/"
  for f in density velocity temperature stress heat_flux; do
    $K line "/tmp/d-$tag" --field $f --from 1,1,0 --to 0,0,1 --points 200 --out "$OUT/d/$tag/$f.csv"
  done
}
# The f32 sweep's residual floor: about 1e-5 at 64^3 cells, 2e-5 at 128^3.
if [ "${PART:-a}" = a ]; then
  run 1 64 second_order 64 1e-5
  run 0.1 64 second_order 64 1e-5
  run 1 64 first_order 64 1e-5
  run 0.1 64 first_order 64 1e-5
  run 1 64 second_order 96 1e-5
elif [ "$PART" = w ]; then
  run 1 64 second_order 64 1e-5 wgpu
  run 0.1 64 second_order 64 1e-5 wgpu
else
  run 1 128 second_order 64 2e-5
  run 0.1 128 second_order 64 2e-5
fi
tar -C "$OUT" -czf "$OUT/dsmc-cavity-${PART:-a}.tar.gz" d && rm -rf "$OUT/d"
