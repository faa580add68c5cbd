# SPDX-License-Identifier: MIT
"""What the Python test scripts (tests/slurm/, tests/prometheus/) share: PASS/FAIL lines, the skip
protocol, the deadline, free ports, polling, and a driver that always stops what it started.

A script imports it with bytecode writing off (sys.dont_write_bytecode), so no __pycache__ lands
in the source tree:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.dont_write_bytecode = True
    import script_harness
"""

import os
import signal
import socket
import sys
import time

results = []  # (name, ok, detail)
_deadline_s = None


def log(msg):
    print(msg, flush=True)


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))
    log(("PASS  " if ok else "FAIL  ") + name + (f"  [{detail}]" if detail else ""))
    return bool(ok)


class Deadline(Exception):
    pass


class Stop(Exception):
    pass


def _on_alarm(signum, frame):
    raise Deadline(f"deadline of {_deadline_s} s reached")


def _on_term(signum, frame):
    raise Stop(f"signal {signum} received")


def precondition_missing(reason):
    """ctest reports the test as Skipped (SKIP_REGULAR_EXPRESSION LOADERLENS-SKIP) with the reason;
    in strict mode (CI, LOADERLENS_STRICT=1) a lack the machine must not have fails instead."""
    if os.environ.get("LOADERLENS_STRICT") == "1":
        log(f"LOADERLENS-MISSING: {reason} (strict mode: CI must have it)")
        log("0 passed, 1 failed")
        sys.exit(1)
    log(f"LOADERLENS-SKIP: {reason}")
    log("0 passed, 0 failed")
    sys.exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(what, test, timeout, interval=0.2):
    """test() until it returns something true; its value, or RuntimeError after timeout s."""
    end = time.monotonic() + timeout
    while True:
        value = test()
        if value:
            return value
        if time.monotonic() > end:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def run_script(start, body, deadline_variable, deadline_default):
    """start() makes what the test runs on (an object with show_logs() and stop()), body(it) runs
    the checks; then it is stopped whatever happened, and the summary line printed. Exits 0 when
    every check passed, 1 otherwise.

    The whole run must end (cleanup included) before ctest's TIMEOUT, which would SIGKILL the
    script and leave daemons behind: an alarm turns the deadline (the environment variable
    `deadline_variable`, else `deadline_default` s) into an exception, so `finally` cleans up."""
    global _deadline_s
    _deadline_s = int(os.environ.get(deadline_variable, str(deadline_default)))
    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    signal.signal(signal.SIGALRM, _on_alarm)
    for sig in handled:
        signal.signal(sig, _on_term)
    signal.alarm(_deadline_s)
    t0 = time.monotonic()
    it, error = None, None
    try:
        it = start()
        body(it)
    except (Deadline, Stop, Exception) as e:  # noqa: BLE001
        error = e
        log(f"ERROR: {type(e).__name__}: {e}")
    finally:
        signal.alarm(0)
        for sig in handled:
            signal.signal(sig, signal.SIG_IGN)
        if it is not None:
            if error is not None or any(not ok for _, ok, _ in results):
                it.show_logs()
            t = time.monotonic()
            it.stop()
            log(f"cleanup: {time.monotonic() - t:.1f} s; total {time.monotonic() - t0:.1f} s")
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed + (1 if error is not None else 0)
    log(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 else 1)
