#!/usr/bin/env bash
# The main job: set up, build, record a worker tree of known shape, print the report.
# The tree: main forks 4 workers that each map the same 64 MiB file and write 16 MiB of their own
# memory, twice (workers are re-forked like non-persistent DataLoader workers each epoch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target loaderlens loaderlens-test-workload

data_dir=$(mktemp -d /var/tmp/loaderlens-demo.XXXXXX)  # not /tmp: it may be a tmpfs
trap 'rm -rf "$data_dir"' EXIT
head -c $((64 << 20)) /dev/urandom > "$data_dir/data.bin"
recording=build/demo.db
build/cli/loaderlens record --force -o "$recording" -- \
  build/tests/loaderlens-test-workload --file "$data_dir/data.bin" --workers 4 --anon-mib 16 \
  --generations 2 --hold-ms 2500 > /dev/null
build/cli/loaderlens report "$recording"
echo
echo "Recording: $recording   (also: build/cli/loaderlens export --format csv $recording)"
