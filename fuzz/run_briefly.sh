#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each, starting from fuzz/corpus/<target>.
# New inputs go to a scratch directory, so the checked-in seed corpus stays as it is.
#
# Memory: the image decoders run under a budget of FUZZ_MEMORY_BUDGET_MB (fuzz/decode_target.hpp, keep the
# two in step), checked from each header before pixels are allocated. No single allocation may exceed the
# budget plus a small margin (-malloc_limit_mb), nor the process the budget plus the fuzzer's and the
# sanitizers' own memory (-rss_limit_mb): a decompression bomb that slips past the checks is then a
# reported finding (with its input saved), not an out-of-memory kill of the machine.
set -euo pipefail
build=${1:?usage: run_briefly.sh BUILD_DIR [SECONDS]}
seconds=${2:-10}
FUZZ_MEMORY_BUDGET_MB=256
malloc_limit_mb=$((FUZZ_MEMORY_BUDGET_MB + 64))
rss_limit_mb=$((FUZZ_MEMORY_BUDGET_MB + 768))
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for target in "$build"/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  mkdir -p "$scratch/$name" "$here/corpus/$name"
  echo "== fuzzing $name for ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb="$rss_limit_mb" \
       -malloc_limit_mb="$malloc_limit_mb" -print_final_stats=1 \
       -artifact_prefix="$scratch/" "$scratch/$name" "$here/corpus/$name" 2>"$scratch/$name.log"; then
    echo "fuzz target $name failed:"; tail -40 "$scratch/$name.log"; status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$scratch/$name.log" | tr '\n' ' '; echo
  fi
done
exit $status
