#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: set up, build, generate a small dataset, replay a PyTorch-like DataLoader over it
# under the recorder (4 workers, re-forked each epoch, 2 epochs) from a cold page cache, and print
# the report (with page residency: cache and worker mappings against the loader's reads). The
# dashboard is built too: `build/gui/loaderlens-gui build/demo.db` shows the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target loaderlens loaderlens-gui

data_dir=$(mktemp -d /var/tmp/loaderlens-demo.XXXXXX)  # not /tmp: it may be a tmpfs
trap 'rm -rf "$data_dir"' EXIT
# 2048 images of 3x64x64 float32: 96 MiB.
build/cli/loaderlens mkdata npy "$data_dir/images.npy" --count 2048 --shape 3x64x64 --dtype f4
# Start from disk, as a job on a fresh node does: write the file back, then drop it from the page
# cache (vmtouch -e: posix_fadvise DONTNEED), so the report shows the cache filling ahead of reads.
sync "$data_dir/images.npy"
vmtouch -q -e "$data_dir/images.npy"
recording=build/demo.db
build/cli/loaderlens replay "$data_dir/images.npy" --workers 4 --batch 32 --epochs 2 \
  --step-time 20ms --epoch-pause 500ms --interval residency=250ms --force -o "$recording"
echo
echo "Recording: $recording   (also: build/cli/loaderlens export --format csv|json|residency-csv $recording)"
echo "Dashboard: build/gui/loaderlens-gui $recording   (no display: add --screenshot demo.png --view all)"
