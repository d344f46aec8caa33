#!/usr/bin/env bash
# Runs on the NVIDIA device machine (the `device` tool), from the repository root:
#   tests/device/resume.sh
# Needs carry/knudsen built with `--features cuda`. Kill -9 and SIGINT cycles on the GPU
# backends: the 64^3 x 64^3 cavity checkpointing every iteration, stopped mid-run,
# continued with --restart, compared with a run never stopped. Writes $OUT/log.txt.
set -u
. tests/device/setup.sh
exec > >(tee -a "$OUT/log.txt") 2>&1
R=/tmp/knudsen-resume
mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 - <<'PY'
import json
c = json.load(open("configs/cavity-kn1.json"))
c["solver"].update({"checkpoint_minutes": 1e-6})
c["solver"].pop("memory_budget_mib", None)
json.dump(c, open("/tmp/cavity-ckpt.json", "w"))
PY
for be in cuda wgpu; do
  $K run /tmp/cavity-ckpt.json --backend $be --out $R/$be-ref > $R/$be-ref.log 2>&1
  echo "$be uninterrupted: rc=$? $(grep -E 'converged' $R/$be-ref.log | tail -1)"
  for sig in KILL INT; do
    out=$R/$be-$sig
    $K run /tmp/cavity-ckpt.json --backend $be --out $out > $out.log 2>&1 &
    pid=$!
    # Iteration 7 logged: the checkpoint of iteration 6 is on disk.
    timeout 120 bash -c "until grep -q \"iteration 7 \" $out.log 2>/dev/null; do sleep 0.05; done"
    kill -$sig $pid; wait $pid; rc=$?
    echo "$be SIG$sig: exit $rc; $(grep -E 'interrupted' $out.log | cut -c1-90)"
    $K run /tmp/cavity-ckpt.json --backend $be --restart $out --out $out > $out.resume.log 2>&1
    echo "$be resumed: rc=$? $(grep -E 'continuing after|converged' $out.resume.log | tr '\n' ' ')"
    $K compare $out $R/$be-ref
  done
done
