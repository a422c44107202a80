#!/usr/bin/env bash
# Runs clang-tidy over every project translation unit with the flags the build uses.
set -euo pipefail
flags=(-std=c++20 -I. $(pkg-config --cflags libuv libcares libcurl gflags libglog yaml-cpp))
files=$(git ls-files '*.cc' | grep -v '^test/fuzz/corpus/')
status=0
# Two at a time: the machine has two cores.
printf '%s\n' $files | xargs -P 2 -I{} sh -c \
  'clang-tidy --quiet "{}" -- '"${flags[*]}"' 2>/dev/null || { echo "lint: {} has findings"; exit 1; }' \
  || status=1
if [[ $status -eq 0 ]]; then echo "lint: clean"; fi
exit $status
