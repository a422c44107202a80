#!/usr/bin/env bash
# Runs every test suite of one build (its output directory is $1, e.g. build or build/asan)
# and closes with one line `N passed, M failed` summed over all suites. Exits non-zero when
# any test failed or any suite did not run to completion.
#
# Suites: the Catch2 unit and integration binaries (counted in test cases), the fuzz corpus
# replays (counted in inputs), the fake API server's self-test suites, and every executable
# test/e2e/*_test.* script (each prints its own `N passed, M failed` line). Logs go to $OUT/test-logs/.
set -uo pipefail

out=${1:-build}
bin=$out/bin
logs=$out/test-logs
mkdir -p "$logs"
export KDNS_BIN="$bin"

total_passed=0
total_failed=0
broken=()

# Adds a suite's counts, reading a Catch2 summary or a plain `N passed, M failed` line.
count() {
  local name=$1 log=$2 rc=$3 p f line
  if line=$(grep -E '^All tests passed \(' "$log" | tail -1) && [[ -n $line ]]; then
    p=$(sed -E 's/.* in ([0-9]+) test cases?\)/\1/' <<<"$line"); f=0
  elif line=$(grep -E '^test cases: ' "$log" | tail -1) && [[ -n $line ]]; then
    p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
    [[ $p =~ ^[0-9]+$ ]] || p=0
  elif line=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -1) && [[ -n $line ]]; then
    p=$(sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
    f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  else
    p=0; f=0
  fi
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    broken+=("$name (exit $rc)")
    f=1
  fi
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  printf '%-40s %6d passed, %d failed%s\n' "$name" "$p" "$f" \
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
echo "$total_passed passed, $total_failed failed"
[[ $total_failed -eq 0 ]]
