# SPDX-License-Identifier: MIT
# What loaderlens.mark(), epoch_start() and epoch_end() cost a script that runs WITHOUT a
# recorder (issue 29's target: < 1 us per call), against an empty Python function of the same
# signature timed in the same run (what any call costs), and against one os.environ look-up
# (what the check costs). The best of 7 rounds of 1,000,000 calls each.
# Usage: /usr/bin/python3 bench/python_markers.py  (PYTHONPATH=python, set by scripts/bench.sh)
# Exit status: 0 target met, 3 missed.
import os
import platform
import sys
import time
import timeit

for name in [n for n in os.environ if n.startswith("LOADERLENS_")]:
    del os.environ[name]  # no recorder: the case measured

import loaderlens  # noqa: E402

CALLS = 1_000_000
ROUNDS = 7
TARGET_NS = 1000


def empty(text, wait=False, timeout=5.0):
    return False


def best_ns(statement, setup_globals):
    timer = timeit.Timer(statement, globals=setup_globals)
    return min(timer.repeat(repeat=ROUNDS, number=CALLS)) / CALLS * 1e9


def main():
    g = {"loaderlens": loaderlens, "empty": empty, "os": os}
    baseline = best_ns("empty('epoch 3 end')", g)
    environ = best_ns("os.environ.get('LOADERLENS_MARKERS')", g)
    rows = [("mark('epoch 3 end')", best_ns("loaderlens.mark('epoch 3 end')", g)),
            ("epoch_start(3)", best_ns("loaderlens.epoch_start(3)", g)),
            ("epoch_end(3)  (wait=True)", best_ns("loaderlens.epoch_end(3)", g))]
    print(f"python markers bench, {time.strftime('%Y-%m-%d')}, Linux {platform.release()}, "
          f"Python {platform.python_version()}, best of {ROUNDS} x {CALLS:,} calls")
    print(f"  baseline: an empty function of the same signature  {baseline:7.1f} ns")
    print(f"  one os.environ.get                                 {environ:7.1f} ns")
    missed = []
    for name, ns in rows:
        verdict = "met" if ns < TARGET_NS else "MISSED"
        print(f"  {name:<28} without a recorder  {ns:7.1f} ns = {ns / baseline:4.1f}x the "
              f"baseline; target < {TARGET_NS} ns: {verdict}")
        if ns >= TARGET_NS:
            missed.append(name)
    return 3 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
