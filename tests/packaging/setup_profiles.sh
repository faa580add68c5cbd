#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/setup.sh's two profiles, read with `--list` (nothing is installed): the demo's installs
# no SLURM, MariaDB, Prometheus or torch (issue 30: a user trying the tool gets none of them), and
# is part of the full profile, which has the test-only packages as well.
#   setup_profiles.sh SETUP_SH
set -uo pipefail
setup=${1:?path of scripts/setup.sh}
failures=0
fail() {
  echo "setup_profiles: FAIL: $*" >&2
  failures=$((failures + 1))
}

demo=$(bash "$setup" --list demo) || fail "setup.sh --list demo: exit $?"
all=$(bash "$setup" --list all) || fail "setup.sh --list all: exit $?"
[ "$(wc -l <<<"$demo")" -ge 10 ] || fail "the demo profile lists $(wc -l <<<"$demo") packages: '$demo'"
# Written here, not read from setup.sh: the test's own list of what the demo must not bring.
forbidden=$(grep -E '^(slurm.*|munge|mariadb.*|prometheus.*|python3-torch|libboost-test-dev)$' <<<"$demo")
[ -z "$forbidden" ] || fail "the demo profile installs $(tr '\n' ' ' <<<"$forbidden")"
for p in $demo; do grep -qx "$p" <<<"$all" || fail "$p is in the demo profile, not in the full one"; done
for p in cmake ninja-build qt6-base-dev vmtouch help2man; do
  grep -qx "$p" <<<"$demo" || fail "the demo profile lacks $p"
done
for p in python3-jsonschema bash-completion python3-torch slurmctld prometheus xvfb; do
  grep -qx "$p" <<<"$all" || fail "the full profile lacks $p"
done
[ "$(sort <<<"$all" | uniq -d)" = "" ] || fail "listed twice: $(sort <<<"$all" | uniq -d)"
# A wrong argument: one line on stderr, exit 2, nothing installed.
err=$(bash "$setup" --list everything 2>&1 >/dev/null)
status=$?
[ "$status" -eq 2 ] || fail "setup.sh --list everything: exit $status, not 2"
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "setup.sh --list everything: stderr is not one line: $err"
# The demo installs with its profile only.
grep -qE '^bash scripts/setup.sh --demo$' "$(dirname "$setup")/demo.sh" ||
  fail "scripts/demo.sh does not run 'bash scripts/setup.sh --demo'"
((failures == 0)) || exit 1
echo "setup_profiles: demo $(wc -l <<<"$demo") packages, full $(wc -l <<<"$all")"
