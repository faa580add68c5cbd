#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A task that holds known memory until released, run under `loaderlens record`.

Usage: hold_memory.py ANON_MIB FILE|- WORKERS READY RELEASE [RAMP_S]

Forks WORKERS workers; each maps FILE read-only and reads every page (unless FILE is -) and
writes ANON_MIB MiB of its own (over RAMP_S seconds when given, in 20 steps), then holds. Once
every worker holds its memory, main writes the marker "plateau" to $LOADERLENS_MARKERS and waits
for the recorder's acknowledgement that it sampled every tier after it ($LOADERLENS_SAMPLED,
docs/recording.md), then creates READY. Everyone holds until RELEASE exists (the task's end, not
a measurement's synchronisation: it polls for the file) and exits 0.
"""
import mmap
import os
import sys
import time

# The package's marker protocol (python/loaderlens), from the source tree beside these tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import loaderlens  # noqa: E402

anon_mib, path, workers, ready, release = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                                           sys.argv[4], sys.argv[5])
ramp_s = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0


def hold():
    while not os.path.exists(release):
        time.sleep(0.05)


def work(w):
    if path != "-":
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        sum(m[o] for o in range(0, len(m), 4096))
    steps = 20 if ramp_s > 0 else 1
    kept = []
    for _ in range(steps):
        a = bytearray((anon_mib << 20) // steps)
        for o in range(0, len(a), 4096):
            a[o] = 1
        kept.append(a)
        if ramp_s > 0:
            time.sleep(ramp_s / steps)
    os.write(w, b"r")
    hold()


r, w = os.pipe()
kids = []
for _ in range(workers):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        work(w)
        os._exit(0)
    kids.append(pid)
os.close(w)
got = 0
while got < workers:
    chunk = os.read(r, workers)
    if not chunk:
        sys.exit("hold_memory: a worker died before it held its memory")
    got += len(chunk)
# The recorder's acknowledgement that it sampled every tier after the marker.
if not loaderlens.mark("plateau", wait=True, timeout=120):
    sys.exit("hold_memory: the recorder did not acknowledge the marker within 120 s")
open(ready, "w").close()
hold()
for k in kids:
    os.waitpid(k, 0)
