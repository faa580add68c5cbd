#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine, builds, and runs every test (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
ctest --test-dir build --output-on-failure --no-tests=error --timeout 300 -j2
