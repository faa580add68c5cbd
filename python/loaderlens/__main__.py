# SPDX-License-Identifier: MIT
"""``python -m loaderlens ARGS...``: the loaderlens command this package belongs to, with ARGS
(``python -m loaderlens record -- python train.py``), for environments where only the Python
package is on the path. ``--version`` also names the package's version."""

import os
import sys

from ._cli import RecorderError, find_cli


def main(argv):
    try:
        cli = find_cli()
    except RecorderError as e:
        print(e, file=sys.stderr)
        return 127  # the shell's "command not found"
    if argv == ["--version"]:
        from . import __version__
        sys.stdout.write(f"loaderlens (Python package) {__version__}\n")
        sys.stdout.flush()
    try:
        os.execv(cli, [cli, *argv])
    except OSError as e:
        print(f"loaderlens: {cli}: cannot run: {e.strerror}", file=sys.stderr)
        return 126
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
