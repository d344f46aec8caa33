#!/bin/bash
# The integration tests whose backend loops include CUDA, run on the device with CUDA
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
for t in ${TESTS:-cuda_f64 gsis second_order coarse_start partner_relaxation cavity faces rest wall_damping slice_rows}; do
  s=$(date +%s)
  timeout 240 carry/t/$t --test-threads 2 > "$OUT/$t.log" 2>&1
  echo "$t rc=$? $(( $(date +%s) - s ))s $(grep -E '^test result' "$OUT/$t.log")"
  grep -E 'panicked|FAILED|NOTE' "$OUT/$t.log" | head -5
done
