#!/usr/bin/env bash
# Runs every test suite of one build (its output directory is $1, e.g. build or build/asan)
# and closes with one line `N passed, M failed, K skipped` summed over all suites, every
# skip named with its reason above it. Exits non-zero when any test failed or any suite
# did not run to completion. A test skips only for what it cannot have here (a tool not
# installed, no root, no IPv6) and says why; under CI=true a skip for what the install
# step provides is a failure (harness.skip_counts, test/support/skip.h).
#
# Suites: the Catch2 unit and integration binaries (counted in test cases), the fuzz corpus
# replays (counted in inputs), the fake API server's self-test suites, and every executable
# test/e2e/*_test.* script (each prints its own `N passed, M failed, K skipped` line; a
# Catch2 case that skips prints `SKIP <case>: <reason>`). Logs go to $OUT/test-logs/.
set -uo pipefail

out=${1:-build}
bin=$out/bin
logs=$out/test-logs
mkdir -p "$logs"
export KDNS_BIN="$bin"

total_passed=0
total_failed=0
total_skipped=0
broken=()
skips=()

# Adds a suite's counts, reading a Catch2 summary (its skipped cases, counted by Catch2 as
# passed, are the `SKIP ` lines) or a plain `N passed, M failed[, K skipped]` line.
count() {
  local name=$1 log=$2 rc=$3 p f k=0 line
  if line=$(grep -E '^All tests passed \(' "$log" | tail -1) && [[ -n $line ]]; then
    p=$(sed -E 's/.* in ([0-9]+) test cases?\)/\1/' <<<"$line"); f=0
    k=$(grep -c '^SKIP ' "$log"); p=$((p - k))
  elif line=$(grep -E '^test cases: ' "$log" | tail -1) && [[ -n $line ]]; then
    p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
    [[ $p =~ ^[0-9]+$ ]] || p=0
    k=$(grep -c '^SKIP ' "$log"); p=$((p - k))
  elif line=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -1) && [[ -n $line ]]; then
    p=$(sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
    f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    if [[ $line =~ ([0-9]+)\ skipped ]]; then k=${BASH_REMATCH[1]}; fi
  else
    p=0; f=0
  fi
  while IFS= read -r skip; do skips+=("$name: ${skip#SKIP }"); done < <(grep -E '^SKIP ' "$log")
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    broken+=("$name (exit $rc)")
    f=1
  fi
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  total_skipped=$((total_skipped + k))
  printf '%-40s %6d passed, %d failed, %d skipped%s\n' "$name" "$p" "$f" "$k" \
    "$([[ $rc -ne 0 ]] && echo "   <- see $log")"
}

run() {
  local name=$1; shift
  local log=$logs/$name.log
  "$@" >"$log" 2>&1
  local rc=$?
  count "$name" "$log" "$rc"
  if [[ $rc -ne 0 ]]; then tail -40 "$log" | sed 's/^/    | /'; fi
}

run unit "$bin/unit_tests"
run integration "$bin/integration_tests"

for fuzzer in "$bin"/*_fuzzer; do
  [[ -x $fuzzer ]] || continue
  name=$(basename "$fuzzer" _fuzzer)
  run "fuzz-replay-$name" "$fuzzer" "test/fuzz/corpus/$name"
done

for script in test/fake_apiserver/*_test.py test/e2e/*_test.*; do
  [[ -x $script ]] || continue
  run "e2e-$(basename "${script%.*}")" "$script"
done

if ((${#broken[@]})); then
  echo "suites that did not finish cleanly: ${broken[*]}"
fi
if ((${#skips[@]})); then
  echo "skipped, and why:"
  printf '  %s\n' "${skips[@]}"
fi
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[[ $total_failed -eq 0 ]]
