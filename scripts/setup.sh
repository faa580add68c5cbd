#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian 12 package the build, the tests and the benchmarks need.
# Idempotent: runs `apt-get update` once per invocation, then installs what is missing.
# `setup.sh --bench` is accepted for the benchmarks; everything they need is installed anyway.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build clang-format
  libproc2-dev libsqlite3-dev liblmdb-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libtomlplusplus-dev
  libboost-test-dev libbenchmark-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl-dev xvfb xauth
  python3-numpy util-linux vmtouch
  python3-psutil smem
  python3-torch
  slurmctld slurmd slurm-client munge slurmdbd mariadb-server
)
# qt6-svg-dev: the dashboard's SVG export; xvfb (xvfb-run) and xauth: its tests on a real X server.
# python3-numpy: the tests read generated .npy files with numpy itself (the reference reader).
# util-linux (fincore) and vmtouch: the oracles the residency tests compare page-cache counts to.
# python3-psutil and smem: the fleet bench's baselines for a full PSS sweep (psutil's
# memory_full_info(), the smem command).
# python3-torch: real DataLoader workers for the worker-recognition tests (and the loader bench).
# slurm*, munge, slurmdbd, mariadb-server: a real single-node SLURM for the job-control tests
# (sacct is what tells CANCELLED from FAILED); started by the tests themselves, never as services.

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
