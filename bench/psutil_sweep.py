# SPDX-License-Identifier: MIT
"""The psutil baseline of the fleet bench: CPU per full PSS sweep of the given processes.

Usage: python3 psutil_sweep.py SWEEPS PID...

A sweep is what a psutil-based memory monitor does at each sample: memory_full_info() of every
process (psutil reads statm, then smaps_rollup where the kernel has it, else smaps). The Process
objects are made once, as a monitoring loop keeps them. Each sweep is timed with
time.process_time() (user + system CPU of this process, so the kernel's smaps walk counts), after
one untimed sweep; interpreter start-up and imports are not counted.

Prints one line per figure: "sweep_us" and the CPU of each sweep, "pss_kb" and the sum of PSS
over the processes in the last sweep, "processes" and how many were read. Exits 2 when psutil
cannot be imported, 1 when a process could not be read.
"""
import sys
import time

try:
    import psutil
except ImportError as error:
    print(f"psutil_sweep: cannot import psutil ({error}); install python3-psutil", file=sys.stderr)
    sys.exit(2)


def sweep(processes):
    return sum(p.memory_full_info().pss for p in processes)


def main():
    sweeps = int(sys.argv[1])
    try:
        processes = [psutil.Process(int(pid)) for pid in sys.argv[2:]]
        sweep(processes)  # untimed: first opens, lazy imports of psutil's Linux module
        times = []
        for _ in range(sweeps):
            start = time.process_time()
            pss = sweep(processes)
            times.append((time.process_time() - start) * 1e6)
    except (psutil.Error, OSError) as error:
        print(f"psutil_sweep: {error}", file=sys.stderr)
        sys.exit(1)
    print("sweep_us", " ".join(f"{t:.1f}" for t in times))
    print("pss_kb", pss // 1024)
    print("processes", len(processes))


if __name__ == "__main__":
    main()
