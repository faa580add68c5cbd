# SPDX-License-Identifier: MIT
"""Finding the loaderlens command: the one this package was built with, or the user's choice."""

import os
import shutil
import subprocess


class RecorderError(RuntimeError):
    """The recorder could not be found, started, or stopped cleanly."""


_NOT_FOUND = "loaderlens: the loaderlens command was not found: install it, or set LOADERLENS_BIN"


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_cli() -> str:
    """$LOADERLENS_BIN, else the binary of this package's build or install, else PATH."""
    chosen = os.environ.get("LOADERLENS_BIN")
    if chosen:
        if not _executable(chosen):
            raise RecorderError(
                f"loaderlens: LOADERLENS_BIN={chosen!r} is not an executable file")
        return chosen
    try:
        from . import _build_info
    except ImportError:  # the source tree: no generated file
        _build_info = None
    built = getattr(_build_info, "CLI", None)
    if built and _executable(built):
        return built
    found = shutil.which("loaderlens")
    if found:
        return found
    raise RecorderError(_NOT_FOUND)


def cli_version() -> str:
    """`loaderlens --version` of the command find_cli() chose."""
    done = subprocess.run([find_cli(), "--version"], capture_output=True, text=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        raise RecorderError(f"loaderlens --version exited {done.returncode}: "
                            f"{last_line(done.stderr)}")
    return done.stdout.strip()


def last_line(text: str) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(nothing on stderr)"
