#!/usr/bin/env bash
# make bench: install what the baselines need, build them, fetch memfs from
# npm into build/bench (ignored), give the real-file workloads a tmpfs, and
# run the driver (bench/run.lua). BENCH_ROUNDS sets the rounds (5).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="lua-filesystem gnuplot-nox bubblewrap strace poppler-utils"
command -v node >/dev/null 2>&1 || extra="$extra nodejs"
command -v npm >/dev/null 2>&1 || extra="$extra npm"
SANDBOX_EXTRA_PKGS="$extra" bash scripts/deps.sh
make -s all bench-build
B=build/bench
if [ ! -d "$B/node_modules/memfs" ]; then
  npm install --prefix "$B" --no-save --no-audit --no-fund --loglevel=error memfs@4.80.1 >/dev/null \
    || echo "memfs could not be installed: the Node baselines are skipped" >&2
fi
# real files go to a tmpfs (perf.md: disk timings on this kind of VM are noise)
tmp=$B/tmpfs
mkdir -p "$tmp"
mounted=0
if ! mountpoint -q "$tmp"; then
  if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1g sandbox-bench "$tmp" 2>/dev/null; then
    mounted=1
  else
    tmp=$(mktemp -d /dev/shm/sandbox-bench.XXXXXX)
  fi
fi
cleanup() {
  if [ $mounted = 1 ]; then umount "$B/tmpfs"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
# issue 35's rows: each driver appends its own (bench/lib.lua's target)
rm -f "${BENCH_OUT:-bench/out}/targets.tsv"
BENCH_TMPFS=$(cd "$tmp" && pwd) BENCH_BUILD=$B lua5.4 bench/run.lua
# where a confined command's time goes: what its seccomp filter's install costs (issue 35)
"$B/seccomp_cost" || echo "(seccomp refused here: its cost per command not measured)"
# system calls per operation: the container's read and create against C (issue 35)
BENCH_BUILD=$B lua5.4 bench/syscalls.lua "$(cd "$tmp" && pwd)"
# search and big files: grep/glob against rg, grep -rn and find on copies of
# real trees, 50 MB read_file/write_file against C (SPEC §10, §12)
BENCH_TMPFS=$(cd "$tmp" && pwd) BENCH_BUILD=$B lua5.4 bench/search_ops.lua "$(cd "$tmp" && pwd)"
# the OverlaySandbox: an untouched read against the container, review against git diff --no-index
BENCH_TMPFS=$(cd "$tmp" && pwd) BENCH_BUILD=$B lua5.4 bench/overlay_ops.lua "$(cd "$tmp" && pwd)"
# the audit trail's cost: 10 000 file operations with and without audit_log, side by side
BENCH_TMPFS=$(cd "$tmp" && pwd) BENCH_BUILD=$B lua5.4 bench/audit_ops.lua "$(cd "$tmp" && pwd)"
# the remote client against E2B's SDK, over loopback to the test peer
bash scripts/npm-deps.sh
BENCH_BUILD=$B lua5.4 bench/remote_ops.lua
# the secrets proxy: TLS interception against a plain CONNECT tunnel (issue 33)
BENCH_BUILD=$B lua5.4 bench/secrets_ops.lua
# issue 35's rows together, each with its target and whether it is met
lua5.4 bench/targets.lua
