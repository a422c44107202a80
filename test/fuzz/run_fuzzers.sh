#!/usr/bin/env bash
# Runs every libFuzzer target in $1 for $2 seconds each, starting from its committed corpus.
# New inputs go to a scratch directory (build/fuzz/corpus/<name>) so the committed corpus
# stays small; crashes are written to build/fuzz/artifacts/ and fail the run.
set -uo pipefail
bin=$1
seconds=${2:-60}
status=0
for fuzzer in "$bin"/*_fuzzer; do
  name=$(basename "$fuzzer" _fuzzer)
  scratch=build/fuzz/corpus/$name
  artifacts=build/fuzz/artifacts/$name/
  mkdir -p "$scratch" "$artifacts"
  echo "fuzz: $name for ${seconds}s"
  if ! "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$artifacts" \
      "$scratch" "test/fuzz/corpus/$name" >"build/fuzz/$name.log" 2>&1; then
    echo "fuzz: $name FAILED, see build/fuzz/$name.log and $artifacts"
    status=1
  fi
  grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "build/fuzz/$name.log" | sed 's/^/  /'
done
exit $status
