#!/usr/bin/env bash
# Runs each libFuzzer target for FUZZ_TIME seconds on a working corpus seeded
# from fuzz/seeds/<name>. Prints executions and the corpus size per target; a
# crash leaves its input in build-fuzz/ and fails the run. When
# SANDBOX_TEST_COUNTS is set (CI), each target adds one passed/failed line.
set -uo pipefail
cd "$(dirname "$0")/.."
time=${FUZZ_TIME:-60}
fails=0
for bin in "$@"; do
  name=$(basename "$bin"); name=${name#fuzz_}
  corpus=build-fuzz/corpus-$name
  mkdir -p "$corpus"
  log=build-fuzz/$name.log
  LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0 "$bin" -max_total_time="$time" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="build-fuzz/crash-$name-" "$corpus" "fuzz/seeds/$name" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1)
  if [ $rc -eq 0 ]; then
    echo "fuzz $name: ${execs:-?} executions in ${time}s, $cov, corpus $(ls "$corpus" | wc -l), no finding"
    [ -n "${SANDBOX_TEST_COUNTS:-}" ] && echo "1 0" >>"$SANDBOX_TEST_COUNTS"
  else
    echo "fuzz $name: FINDING (exit $rc), log $log:"
    grep -E 'ERROR|invariant|raised|SUMMARY|Test unit written' "$log" | head -n 20
    [ -n "${SANDBOX_TEST_COUNTS:-}" ] && echo "0 1" >>"$SANDBOX_TEST_COUNTS"
    fails=$((fails + 1))
  fi
done
[ $fails -eq 0 ]
