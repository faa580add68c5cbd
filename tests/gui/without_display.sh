#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# loaderlens-gui's --help, --version and a mistyped option, on a machine without a display (a
# login node, an ssh session): answered, never Qt's abort for want of a platform (exit 134).
# Usage: without_display.sh LOADERLENS_GUI VERSION
set -u
gui=$1 version=$2
unset DISPLAY WAYLAND_DISPLAY QT_QPA_PLATFORM
failed=0
expect() { # what, wanted exit, got exit, pattern, text
  if [ "$2" != "$3" ] || ! grep -q -- "$4" <<<"$5"; then
    echo "FAIL $1: exit $3 (wanted $2), output: $5"
    failed=1
  else
    echo "PASS $1"
  fi
}
out=$("$gui" --help 2>&1); expect "--help" 0 $? "Usage: .*recording" "$out"
out=$("$gui" --version 2>&1); expect "--version" 0 $? "^loaderlens-gui $version\$" "$out"
out=$("$gui" --no-such-option 2>&1); expect "a mistyped option" 2 $? \
  "^loaderlens-gui: Unknown option 'no-such-option'.\$" "$out"
exit $failed
