#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets everything up on a fresh Debian 12 machine, builds, runs every test (CTest), builds again
# with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) and runs the parser, recording,
# dataset and fuzz suites there, and checks the formatting of the tracked sources. Exits non-zero if
# a test failed (in either build), a sanitizer reported anything, or a file is not clang-format
# clean. LOADERLENS_STRICT=1 (what .ci/run sets) makes a missing precondition that CI must meet
# (root, numpy, fincore, vmtouch, python3-torch) a failure instead of a skip; see docs/testing.md.
# LOADERLENS_SKIP_SANITIZE=1 leaves the sanitizer build out (a quicker local run; CI never sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The benchmarks are built and run by scripts/bench.sh (docs/benchmarks.md); no test runs them; building
# them here took minutes of the 20 the whole run may take.
# This build compiles in unity batches (cmake/unity.cmake: the verified sources of each target,
# several per translation unit; the sanitizer build below gained too little to keep them) and
# with line tables only (-g1; no test reads debug info, and a backtrace still has file:line):
# less than the default's compile time (docs/testing.md, "Build time"). A developer's own build
# keeps one file per unit and full -g.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOADERLENS_BUILD_BENCH=OFF \
  -DLOADERLENS_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
started=$SECONDS
cmake --build build
echo "tests: release build: $((SECONDS - started)) s"

echo "tests: strict mode ${LOADERLENS_STRICT:-0} (LOADERLENS_STRICT=1: what CI must have fails instead of skipping)"
status=0
started=$SECONDS
ctest --test-dir build --output-on-failure --no-tests=error --timeout 300 -j2 || status=$?
echo "tests: release build, every test: $((SECONDS - started)) s"

# ctest says "Skipped" without the reason: each skipped case printed its own.
list_skips() {
  local log=$1/Testing/Temporary/LastTest.log
  if [ -f "$log" ] && grep -q '^LOADERLENS-SKIP: ' "$log"; then
    echo "Skipped cases and why${2:-}:"
    grep -h '^LOADERLENS-SKIP: ' "$log" | sort -u | sed 's/^LOADERLENS-SKIP: /  /'
  fi
}
list_skips build

# The sanitizer build: the suites that read what a user hands us (/proc texts, recordings,
# datasets, hostile input) once more under ASan and UBSan, whose any report fails the run:
# UBSan aborts at the first report (-fno-sanitize-recover, halt_on_error), ASan stops at its first
# (halt_on_error), and a report is never mistaken for a pass (the fuzz suites also fail a command
# whose stderr holds one). detect_leaks=1: a leak in the recorder grows with a days-long
# recording, and the short commands are leak-free, so LeakSanitizer's exit-time check fails only
# on a real leak. GUI and benchmarks stay out of this build.
if [ "${LOADERLENS_SKIP_SANITIZE:-0}" != 1 ]; then
  started=$SECONDS
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOADERLENS_SANITIZE=ON \
    -DLOADERLENS_BUILD_GUI=OFF -DLOADERLENS_BUILD_BENCH=OFF
  cmake --build build-asan --target loaderlens loaderlens_tests
  echo "tests: sanitizer build: $((SECONDS - started)) s"
  export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
  # Leaks in libraries we link, each named with where it was seen (tests/lsan_suppressions.txt).
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan_suppressions.txt:print_suppressions=0"
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  # Its test binary holds only the suites listed in tests/CMakeLists.txt
  # (loaderlens_sanitized_suites: parsers, recording, datasets, hostile input, fuzz): all of them.
  echo "tests: sanitizer run of $(build-asan/tests/loaderlens_tests --list_content 2>&1 |
    sed -n 's/^\([a-z0-9_]*\)\*$/\1/p' | tr '\n' ' ')"
  started=$SECONDS
  ctest --test-dir build-asan --output-on-failure --no-tests=error --timeout 600 -j2 || status=1
  echo "tests: sanitizer run: $((SECONDS - started)) s"
  list_skips build-asan " (sanitizer build)"
fi

# Layers: no core layer includes a header of a layer above it (docs/architecture.md).
if bash scripts/layers.sh; then
  echo "layers: every include in core/ points down"
else
  status=1
fi

# Formatting: every tracked C++ source as .clang-format says.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files -- '*.cpp' '*.hpp')
else
  mapfile -t sources < <(find . -path './build*' -prune -o \( -name '*.cpp' -o -name '*.hpp' \) -print)
fi
existing=()
for f in "${sources[@]}"; do [ -f "$f" ] && existing+=("$f"); done
sources=("${existing[@]}")
# One clang-format run over them all; it names each file it would change.
mapfile -t unformatted < <(
  clang-format --dry-run --Werror "${sources[@]}" 2>&1 |
    sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if ((${#unformatted[@]})); then
  echo "format: ${#unformatted[@]} of ${#sources[@]} files differ from clang-format ($(clang-format --version | head -n1)):"
  printf '  %s\n' "${unformatted[@]}"
  echo "format: fix with: clang-format -i <file>..."
  [ "$status" -ne 0 ] || status=1
else
  echo "format: all ${#sources[@]} C++ sources are clang-format clean"
fi
exit "$status"
