#!/bin/bash
# The integration tests whose backend loops include CUDA (and `gpu_prewarm`, whose wgpu
# tests then run on the device's GPU instead of lavapipe), run on the device with CUDA
# required (TESTS_REQUIRE_CUDA=1, set by setup.sh: a CUDA that does not answer fails them
# instead of leaving the CUDA leg out, as CI does). Carry `carry/t.tar.xz`, made here by
#   cargo test --release --features cuda --no-run --test T ... (the names in TESTS below)
#   and a `cargo build --release --features cuda`, each stripped into t/ (t/knudsen the
#   binary, t/NAME the test binaries), then `tar cJf carry/t.tar.xz t` (stripped they are
#   89 MB, packed 22 MB: under the carry limit).
# Tests that spawn the CLI or read configs/ look for them under the build's paths
# (/work/main/...), linked to this tree here. One log per test binary under $OUT.
. tests/device/setup.sh
(cd carry && tar xJf t.tar.xz)
mkdir -p target/release && cp carry/t/knudsen target/release/knudsen
if [ ! -e /work/main ]; then mkdir -p /work && ln -sfn "$PWD" /work/main; fi
nvidia-smi -L
for t in ${TESTS:-cuda_f64 gsis conservation second_order coarse_start partner_relaxation cavity faces rest wall_damping slice_rows gpu_prewarm}; do
  s=$(date +%s)
  carry/t/$t --test-threads 2 > "$OUT/$t.log" 2>&1 &
  pid=$!
  # A binary still running after 200 s has hung (all of them take under 90 s): its threads'
  # kernel stacks and wait channels, and with gdb their user stacks, go to $OUT/$t.hang
  # before it is killed, so that a hang that does not recur can still be read.
  for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 1; done
  if kill -0 $pid 2>/dev/null; then
    for task in /proc/$pid/task/*; do
      echo "== $task $(cat $task/comm 2>/dev/null) wchan=$(cat $task/wchan 2>/dev/null)"
      cat $task/stack 2>/dev/null
    done > "$OUT/$t.hang"
    command -v gdb >/dev/null && gdb -p $pid -batch -ex 'thread apply all bt' >> "$OUT/$t.hang" 2>&1
    kill -9 $pid
  fi
  wait $pid
  echo "$t rc=$? $(( $(date +%s) - s ))s $(grep -E '^test result' "$OUT/$t.log")"
  grep -E 'panicked|FAILED|NOTE' "$OUT/$t.log" | head -5
done
