#!/usr/bin/env bash
# Builds another commit's release binaries once, for benchmarks that compare this build with
# it (`make bench-compare BASELINE=ref`), and prints their directory. The commit's tree is
# exported with `git archive` into build/baseline/SHA/src and built there with its own
# Makefile; a second call with the same commit reuses it. Build output goes to stderr.
#
# Usage: mk/baseline.sh REF [DIR]   (DIR default build/baseline)
set -euo pipefail
ref=${1:?usage: mk/baseline.sh REF [DIR]}
dir=${2:-build/baseline}
sha=$(git rev-parse --verify --quiet "$ref^{commit}") || {
  echo "baseline: $ref is not a commit" >&2
  exit 1
}
root=$dir/$sha
if [[ ! -x $root/src/build/bin/frontend-cache ]]; then
  echo "baseline: building $ref ($sha) in $root/src" >&2
  rm -rf "$root"
  mkdir -p "$root/src"
  git archive "$sha" | tar -x -C "$root/src"
  # The export has no .git: the version its binaries report is given (mk/version.sh).
  make -C "$root/src" --no-print-directory -j"$(nproc)" all \
    KDNS_VERSION="0.0.0-baseline-g${sha:0:12}" KDNS_REVISION="$sha" >&2
fi
echo "$root/src/build/bin"
