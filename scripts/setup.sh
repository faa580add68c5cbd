#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages a profile needs:
#   setup.sh            everything: the build, the tests, the benchmarks (what scripts/test.sh runs)
#   setup.sh --demo     the build and the demo only (scripts/demo.sh): no SLURM, MariaDB,
#                       Prometheus or torch on a machine that only wants to try the tool
#   setup.sh --list demo|all   prints a profile's packages, one a line, and installs nothing
# Idempotent: runs `apt-get update` once per invocation, then installs what is missing.
# `setup.sh --bench` is accepted for the benchmarks; everything they need is in the full profile.
set -euo pipefail

# The demo: build the CLI, the dashboard and the man pages, install them, replay a loader.
demo_packages=(
  build-essential cmake pkg-config ninja-build
  libproc2-dev libsqlite3-dev liblmdb-dev libhdf5-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libtomlplusplus-dev
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl-dev
  vmtouch help2man
)
# build-essential also brings dpkg-dev, whose dpkg-shlibdeps gives the .debs their dependencies.
# libhdf5-dev: the reference loader reads and mkdata writes HDF5 through the C API (hdf5-serial).
# qt6-svg-dev: the dashboard's SVG export (qt6-base-dev brings the Qt platform plugins that
# --screenshot renders with, no display needed).
# vmtouch: the demo drops its dataset from the page cache (vmtouch -e) to start cold.
# help2man: the man pages are made from each command's --help at build time.

# The tests and benchmarks, on top of the demo's.
test_packages=(
  clang-format libboost-test-dev libbenchmark-dev
  xvfb xauth
  python3-numpy python3-h5py util-linux
  python3-psutil smem
  python3-torch python3-lmdb stress-ng
  python3-pytest python3-jsonschema
  bash-completion man-db
  slurmctld slurmd slurm-client munge slurmdbd mariadb-server
  prometheus prometheus-node-exporter
)
# clang-format: the format check; libboost-test-dev: the test binary; libbenchmark-dev: bench/.
# xvfb (xvfb-run) and xauth: the dashboard's tests on a real X server, and the packaging test's
# screenshot from the installed loaderlens-gui.
# python3-numpy: the tests read generated .npy files with numpy itself (the reference reader).
# python3-h5py: the HDF5 tests' oracle of the files' content (tests/test_hdf5.cpp).
# util-linux (fincore) and vmtouch: the oracles the residency tests compare page-cache counts to.
# python3-psutil and smem: the fleet bench's baselines for a full PSS sweep (psutil's
# memory_full_info(), the smem command).
# python3-torch: real DataLoader workers for the worker-recognition tests (and the loader bench).
# python3-lmdb and stress-ng: the real-PyTorch growth tests read an LMDB from their workers with
# py-lmdb, as users do, while stress-ng keeps both cores busy (a loaded node).
# python3-pytest: the Python package's tests (tests/python/, one ctest entry per file) run under
# Debian's pytest, which also loads the package's own pytest plugin that they test.
# python3-jsonschema: the JSON outputs are checked against their JSON Schemas in docs/.
# bash-completion: the completion script is loaded and exercised as bash does it; man-db (man):
# the installed man pages are rendered by the packaging test.
# slurm*, munge, slurmdbd, mariadb-server: a real single-node SLURM for the job-control tests
# (sacct is what tells CANCELLED from FAILED); started by the tests themselves, never as services.
# prometheus (with promtool), prometheus-node-exporter: promtool checks the OpenMetrics export and
# the textfile; the Prometheus test starts both on free loopback ports itself (docs/metrics.md).
# Their postinst scripts enable and start system services on :9090 and :9100; see below.

usage="usage: setup.sh [--demo | --bench | --list demo|all]"
profile=all
case "${1:-}" in
  "" | --bench) profile=all ;;
  --demo) profile=demo ;;
  --list)
    case "${2:-}" in
      demo) printf '%s\n' "${demo_packages[@]}" ;;
      all) printf '%s\n' "${demo_packages[@]}" "${test_packages[@]}" ;;
      *) echo "setup.sh: --list takes demo or all, not '${2:-}'; $usage" >&2; exit 2 ;;
    esac
    exit 0 ;;
  *) echo "setup.sh: unknown argument '$1'; $usage" >&2; exit 2 ;;
esac
packages=("${demo_packages[@]}")
[ "$profile" = demo ] || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  # No service starts during the install: a policy-rc.d that answers 101 ("action forbidden")
  # makes invoke-rc.d and deb-systemd-invoke skip every start. Prometheus on :9090 and
  # node_exporter on :9100 would otherwise serve this machine's metrics to anyone who can reach
  # them, and munged, MariaDB and the SLURM daemons run too; the tests start their own. Only when
  # there is none: a container image's own policy-rc.d stays as it is. The units stay enabled, so
  # on a systemd host the two Prometheus ones are disabled after the install: a reboot does not
  # start them either.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# setup.sh (loaderlens): no service starts during the install\nexit 101\n' |
      "${sudo_cmd[@]}" tee "$policy" >/dev/null
    "${sudo_cmd[@]}" chmod 755 "$policy"
    own_policy=1
    trap '[ "$own_policy" = 1 ] && "${sudo_cmd[@]}" rm -f "$policy"' EXIT
  fi
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ "$own_policy" = 1 ]; then
    "${sudo_cmd[@]}" rm -f "$policy"
    own_policy=0
  fi
  if [ -d /run/systemd/system ]; then
    for unit in prometheus prometheus-node-exporter; do
      case " ${missing[*]} " in *" $unit "*)
        "${sudo_cmd[@]}" systemctl disable --now "$unit" >/dev/null 2>&1 || true ;;
      esac
    done
  fi
else
  echo "setup: all packages present"
fi
