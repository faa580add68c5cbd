#!/usr/bin/env bash
# Builds the benchmarks in Release (build-bench/) and runs them:
#   1. sampler bench: cost per process of each tier as a ratio to the raw /proc read (~1 min)
#   2. fleet bench: CPU share of `loaderlens record` on 16 workers sharing a 256 MiB file (~1 min)
# Needs about 1.3 GiB of free memory and disk for the generated files (removed at the end).
#
# Exit status: non-zero only when something broke (build, setup, a measurement missing). A missed
# performance target is printed as MISSED and still exits 0: it is a result, not a failure.
# Extra arguments go to the sampler bench (e.g. --sizes-mib=0,256 --benchmark_repetitions=3).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

bash scripts/setup.sh

cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
# Only what the benchmarks run: the GUI is not needed here.
cmake --build build-bench --target loaderlens loaderlens_bench_samplers loaderlens_bench_fleet

# The benches remove their files themselves, even on Ctrl-C; a private TMPDIR removed on exit
# also covers a bench killed with SIGKILL. /var/tmp, not /tmp: /tmp may be a tmpfs, whose pages
# would be shmem instead of the page-cache file pages being measured.
scratch=$(mktemp -d "${BENCH_TMPDIR:-/var/tmp}/loaderlens-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch

status=0
echo
echo "### sampler bench"
build-bench/bench/loaderlens_bench_samplers "$@" || status=$?
echo
echo "### fleet bench"
build-bench/bench/loaderlens_bench_fleet --cli build-bench/cli/loaderlens || status=$?

if ((status != 0)); then
  echo "bench.sh: a benchmark failed to run (exit $status)" >&2
fi
exit "$status"
