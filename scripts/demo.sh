#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo: installs only what building and running it needs (`setup.sh --demo`: no SLURM,
# MariaDB, Prometheus or torch), builds, installs with `cmake --install` (to /usr/local, CMake's
# default prefix), then runs the INSTALLED loaderlens: generates a small dataset, replays a
# PyTorch-like DataLoader over it under the recorder (4 workers, re-forked each epoch, 2 epochs)
# from a cold page cache, and prints the report (with page residency: cache and worker mappings
# against the loader's reads). The installed dashboard shows the same run.
#
# It builds in build-demo/, not build/: the demo configures without the tests (their libraries
# are not in its profile), and scripts/test.sh's build/ keeps its own configuration.
# The recording is build-demo/demo.db. LOADERLENS_DEMO_PREFIX=DIR installs into DIR instead of
# /usr/local (no root needed then); LOADERLENS_DEMO_BUILD=DIR builds there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
build=${LOADERLENS_DEMO_BUILD:-build-demo}
prefix_option=()
[ -z "${LOADERLENS_DEMO_PREFIX:-}" ] || prefix_option=("-DCMAKE_INSTALL_PREFIX=$LOADERLENS_DEMO_PREFIX")
# Unity batches and line tables only: the quickest build (docs/testing.md, "Build time").
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
  -DLOADERLENS_BUILD_BENCH=OFF -DLOADERLENS_UNITY_BUILD=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${prefix_option[@]}"
cmake --build "$build"

prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
# sudo unless the prefix (or, before it exists, the nearest folder above it) is ours to write.
writable=$prefix
while [ ! -e "$writable" ]; do writable=$(dirname "$writable"); done
sudo_cmd=()
if [ "$(id -u)" -ne 0 ] && ! [ -w "$writable" ]; then sudo_cmd=(sudo); fi
# --strip: what a user runs needs no debug info (the CLI is 3 MB instead of 22).
"${sudo_cmd[@]}" cmake --install "$build" --strip >"$build/install.log"
echo "demo: installed into $prefix (the list: $build/install_manifest.txt)"
loaderlens=$prefix/bin/loaderlens

data_dir=$(mktemp -d /var/tmp/loaderlens-demo.XXXXXX)  # not /tmp: it may be a tmpfs
trap 'rm -rf "$data_dir"' EXIT
# 2048 images of 3x64x64 float32: 96 MiB.
"$loaderlens" mkdata npy "$data_dir/images.npy" --count 2048 --shape 3x64x64 --dtype f4
# Start from disk, as a job on a fresh node does: write the file back, then drop it from the page
# cache (vmtouch -e: posix_fadvise DONTNEED), so the report shows the cache filling ahead of reads.
sync "$data_dir/images.npy"
vmtouch -q -e "$data_dir/images.npy"
recording=$(realpath -m "$build/demo.db")
"$loaderlens" replay "$data_dir/images.npy" --workers 4 --batch 32 --epochs 2 \
  --step-time 20ms --epoch-pause 500ms --interval residency=250ms --force -o "$recording"
echo
echo "Recording: $recording   (also: $loaderlens export --format csv|json|residency-csv $recording)"
echo "Dashboard: $prefix/bin/loaderlens-gui $recording   (no display: add --screenshot demo.png --view all)"
echo "Manual:    man loaderlens-replay   (every command has its page: man loaderlens)"
echo "Uninstall: ${sudo_cmd[*]:+${sudo_cmd[*]} }xargs -d '\\n' rm -f < $build/install_manifest.txt"
