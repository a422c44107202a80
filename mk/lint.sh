#!/usr/bin/env bash
# Runs clang-tidy over every project translation unit with the flags the build uses.
set -euo pipefail
# $1: the build's object directory; its gen/ holds the generated version header (make lint
# writes it first).
flags=(-std=c++20 -I. -I"${1:-build/obj}/gen" $(pkg-config --cflags libuv libcares libcurl gflags libglog yaml-cpp))
files=$(git ls-files '*.cc' | grep -v '^test/fuzz/corpus/')
status=0
# Two at a time: the machine has two cores. Test files get glog first, as the Makefile's
# %_test.o rule gives them, so that their CHECK is Catch's.
printf '%s\n' $files | xargs -P 2 -I{} sh -c \
  'case "{}" in *_test.cc) first="-include glog/logging.h" ;; *) first= ;; esac
   clang-tidy --quiet "{}" -- '"${flags[*]}"' $first 2>/dev/null || { echo "lint: {} has findings"; exit 1; }' \
  || status=1
if [[ $status -eq 0 ]]; then echo "lint: clean"; fi
exit $status
