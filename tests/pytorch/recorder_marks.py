# SPDX-License-Identifier: MIT
# An epoch marker as a training script writes it (docs/recording.md), and the wait for the
# recorder's acknowledgement of the sample that marker asked for ($LOADERLENS_SAMPLED): shared by
# the PyTorch test jobs. Without a recorder (no $LOADERLENS_MARKERS) it does nothing.
import os
import sys
import time


def mark_and_wait(text):
    markers, sampled = os.environ.get("LOADERLENS_MARKERS"), os.environ.get("LOADERLENS_SAMPLED")
    if not markers:
        return
    asked = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    with open(markers, "a") as f:
        f.write(text + "\n")
    deadline = time.monotonic() + 10
    while sampled and time.monotonic() < deadline:  # the recorder's acknowledgement
        with open(sampled) as f:
            parts = f.read().split()
        if len(parts) == 2 and parts[0] == parts[1] and int(parts[0]) >= asked:
            return
        time.sleep(0.005)  # polling a file the recorder rewrites; not a synchronisation
    print("no acknowledgement for", text, file=sys.stderr)
