#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the shell blocks of README.md (and docs/tutorial.md) as written, and checks their links.

Every fenced block whose info string is sh, bash or shell is run with `bash -e -o pipefail`, the
blocks of one file in order in one fresh temporary directory (a later block may use what an
earlier one made: the tutorial's train.py), with the build's CLI and dashboard first on PATH and
the build's Python package on PYTHONPATH. A block fails the test when it exits non-zero.

A block that cannot run here (the two top commands, installing packages, the user's own script,
a SLURM job) carries an HTML comment on the line before its fence:
    <!-- readme-test: skip: needs your training script -->
and is printed with that reason. `<!-- readme-test: needs: torch -->` runs the block only where
Debian's python3-torch imports; without it the rest of that file is skipped with a
`LOADERLENS-SKIP:` line (ctest: Skipped); under LOADERLENS_STRICT=1 that is a failure
(`LOADERLENS-MISSING:`), as for the C++ preconditions (docs/testing.md).
A file without a single block to run fails too: a test that runs nothing proves nothing. So does a
relative link ([text](path), pictures too) to a file that does not exist.

Usage: readme_commands.py --cli-dir DIR [--gui-dir DIR] --python-dir DIR FILE...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SHELLS = {"sh", "bash", "shell"}
DIRECTIVE = re.compile(r"^<!--\s*readme-test:\s*(skip|needs):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([^\s`]*)")
BLOCK_TIMEOUT_S = 120


def blocks(path):
    """Yields (line number of the fence, info string, directive or None, text) per fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    previous = ""  # the last non-blank line before the fence
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, info = match.group(1), match.group(2).lower()
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"{path}:{start}: a fenced block is never closed")
        directive = DIRECTIVE.match(previous)
        yield start, info, (directive.groups() if directive else None), "\n".join(body) + "\n"
        previous = ""
        i += 1


LINK = re.compile(r"\]\(([^)\s]+)\)")


def broken_links(path):
    """Relative links ([text](target), images too) whose file does not exist: a page moved or
    renamed leaves the README pointing nowhere."""
    base = os.path.dirname(os.path.abspath(path))
    broken = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                if not os.path.exists(os.path.join(base, target.split("#")[0])):
                    broken.append(f"{os.path.basename(path)}:{number}: {target}")
    return broken


def torch_imports(env):
    return subprocess.run(["python3", "-c", "import torch"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def run_file(path, env):
    """Returns (blocks run, failures, skipped because of a missing need)."""
    ran, failures, lacking = 0, 0, None
    with tempfile.TemporaryDirectory(prefix="loaderlens-readme-") as scratch:
        for line, info, directive, text in blocks(path):
            if info not in SHELLS:
                continue
            where = f"{os.path.basename(path)}:{line}"
            if directive and directive[0] == "skip":
                print(f"skipped {where}: {directive[1]}")
                for command in text.strip().split("\n"):
                    print(f"    {command}")
                continue
            if lacking is None and directive and directive[0] == "needs":
                if directive[1] != "torch":
                    sys.exit(f"{where}: unknown need '{directive[1]}' (known: torch)")
                if not torch_imports(env):
                    lacking = f"{where}: python3-torch does not import"
            if lacking:
                print(f"not run {where}: {lacking}")
                continue
            started = time.monotonic()
            try:
                done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=scratch,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=BLOCK_TIMEOUT_S)
                status, output = done.returncode, done.stdout
            except subprocess.TimeoutExpired as timeout:
                status, output = f"killed after {BLOCK_TIMEOUT_S} s", timeout.stdout or b""
            ran += 1
            elapsed = time.monotonic() - started
            if status == 0:
                print(f"ok      {where} ({elapsed:.1f} s)")
                continue
            failures += 1
            print(f"FAILED  {where}: exit {status} ({elapsed:.1f} s); the block:")
            for command in text.strip().split("\n"):
                print(f"    {command}")
            print("  its output (last 40 lines):")
            for out in output.decode("utf-8", "replace").rstrip("\n").split("\n")[-40:]:
                print(f"    {out}")
    if ran == 0 and not lacking:
        print(f"FAILED  {path}: no shell block to run (each one skipped?)")
        failures += 1
    return ran, failures, lacking


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli-dir", required=True)
    parser.add_argument("--gui-dir")
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    env = dict(os.environ)
    # /usr/bin before the rest: `python3` in a block is Debian's (with torch and pytest), not an
    # interpreter a developer's PATH puts first.
    dirs = [args.cli_dir] + ([args.gui_dir] if args.gui_dir else [])
    path = [os.path.abspath(d) for d in dirs] + ["/usr/bin", "/bin"]
    env["PATH"] = os.pathsep.join(path + [env.get("PATH", "")])
    env["PYTHONPATH"] = os.path.abspath(args.python_dir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_ADDOPTS"] = "-p no:cacheprovider"
    for name in ("LOADERLENS_BIN", "LOADERLENS_MARKERS", "LOADERLENS_SAMPLED"):
        env.pop(name, None)  # a block runs as a user's shell would, not inside a recording

    total_failures, skips = 0, []
    for path in args.files:
        for link in broken_links(path):
            print(f"FAILED  {link}: no such file")
            total_failures += 1
        ran, failures, lacking = run_file(path, env)
        total_failures += failures
        if lacking:
            skips.append(lacking)
    strict = os.environ.get("LOADERLENS_STRICT") == "1"
    if total_failures:
        print(f"readme: {total_failures} failure(s): blocks that failed, links to nothing")
    # A skip is printed only when nothing failed: ctest's SKIP_REGULAR_EXPRESSION wins over the
    # exit status, and a skip must never hide a failure (docs/testing.md, "Skips").
    for reason in skips:
        if strict:
            print(f"LOADERLENS-MISSING: {reason} (strict mode: CI must have it)")
        elif not total_failures:
            print(f"LOADERLENS-SKIP: {reason}")
    return 1 if total_failures or (skips and strict) else 0


if __name__ == "__main__":
    sys.exit(main())
