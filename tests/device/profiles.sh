#!/usr/bin/env bash
# Runs on the NVIDIA device machine, from the repository root (`docs/validation.md`,
# "Centre-line profiles of the paper cavity"): configs/cavity-kn1.json at Kn 1 and 0.1 on
# 64^3 and 128^3 cells, first and second order, CUDA, GSIS, then `knudsen line` of the
# velocity and temperature along the vertical (y) and horizontal (x) centre lines through
# z = 0.5. PART=a: the 64^3 runs and first order at 128^3; PART=b: second order at 128^3
# (about 2 minutes each), after re-extracting the lines of any earlier runs in /tmp (the
# tool returns few files, so everything goes back as $OUT/profiles.tar.gz); PART=c: Kn 1 on
# 64^3 cells with 96^3 and 128^3 velocities (the velocity grid's share).
# docs/validation/cavity_profiles.py compares the unpacked folders.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/profiles.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
case_for() { # kn cells velocity-points -> path of the case file
  local path=/tmp/cav-kn$1-$2-$3.json
  python3 -c "
import json, sys
c = json.load(open('configs/cavity-kn1.json'))
c['gas']['kn'] = float(sys.argv[1])
for a in 'xyz': c['grid'][a]['cells'] = int(sys.argv[2])
c['velocity']['points'] = int(sys.argv[3])
json.dump(c, open(sys.argv[4], 'w'))" "$1" "$2" "$3" "$path"
  echo "$path"
}
lines() {
  local tag=$1
  mkdir -p "$OUT/p/$tag"
  cp "/tmp/p-$tag/summary.json" "$OUT/p/$tag/"
  for f in velocity temperature; do
    $K line "/tmp/p-$tag" --field $f --along y --through 0.5,0.5 --out "$OUT/p/$tag/$f-vertical.csv"
    $K line "/tmp/p-$tag" --field $f --along x --through 0.5,0.5 --out "$OUT/p/$tag/$f-horizontal.csv"
  done
}
run() { # kn cells scheme tolerance max-iterations [velocity points, default 64]
  local m=${6:-64}
  local tag=kn$1-$2-$3
  [ "$m" = 64 ] || tag=$tag-v$m
  echo "== $tag"
  RUST_LOG=knudsen=info $K run "$(case_for "$1" "$2" "$m")" --backend cuda --scheme "$3" --tolerance "$4" \
    --max-iterations "$5" --out "/tmp/p-$tag" 2>&1 | grep -E "converged|error|iteration [0-9]+ residual" | tail -4
  lines "$tag"
}
# The f32 sweep's residual floor of 2.1 million cells lies near 1e-5: 2e-5 at 128^3.
if [ "${PART:-a}" = a ]; then
  run 1 64 first_order 1e-5 60
  run 0.1 64 first_order 1e-5 60
  run 1 64 second_order 1e-5 60
  run 0.1 64 second_order 1e-5 60
  run 1 128 first_order 2e-5 40
  run 0.1 128 first_order 2e-5 40
elif [ "$PART" = b ]; then
  for d in /tmp/p-*; do [ -d "$d" ] && lines "${d#/tmp/p-}"; done
  run 1 128 second_order 2e-5 24
  run 0.1 128 second_order 2e-5 24
else
  run 1 64 first_order 1e-5 60 96
  run 1 64 first_order 1e-5 60 128
  run 1 64 second_order 1e-5 40 96
  run 1 64 second_order 1e-5 30 128
fi
tar -C "$OUT" -czf "$OUT/profiles.tar.gz" p && rm -rf "$OUT/p"
