#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a GUI test binary under Xvfb with Qt's xcb platform (a real X server, as on a desktop).
# Without xvfb-run the entry is Skipped with the reason; in strict mode (CI, where setup.sh
# installs xvfb) that fails instead.
set -euo pipefail
if ! command -v xvfb-run >/dev/null; then
  if [ "${LOADERLENS_STRICT:-0}" = 1 ]; then
    echo "LOADERLENS-MISSING: xvfb-run (Debian package xvfb) is not installed"
    exit 1
  fi
  echo "LOADERLENS-SKIP: gui_window_xvfb: xvfb-run (Debian package xvfb) is not installed"
  exit 0
fi
export QT_QPA_PLATFORM=xcb
exec xvfb-run -a -s "-screen 0 1920x1080x24" "$@"
