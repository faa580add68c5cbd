# SPDX-License-Identifier: MIT
"""Issue 12's 'done when': a real PyTorch job (Debian's python3-torch) maps two .npy files with
np.load(mmap_mode='r'), 5 DataLoader workers re-forked at every epoch, under `loaderlens record`.
At each epoch's last batch the job reads every worker's /proc/PID/smaps itself (the oracle, which
shares no code with loaderlens), marks the epoch's end as docs/recording.md says, and waits for the
recorder's $LOADERLENS_SAMPLED. Afterwards this script reads the recording with Python's sqlite3 and
compares the marker's per-file RSS (the residency tier's pagemap count) and smaps (the maps tier)
with the oracle, and prints the recorder's CPU share (its /proc/PID/stat, polled) and each tier's
longest interval (tier_stats).

Usage: /usr/bin/python3 bench/epoch_end_torch.py LOADERLENS [--workers 5] [--file-mib 256]
       [--epochs 3] [--epoch-s 6] [--keep DIR] [--record-arg ARG]...
--record-arg passes ARG to `record` (e.g. --record-arg=--pss-max-age --record-arg=0: the full PSS
sweep at every rollup sample, the baseline of the kept/composite readings' cost).
Exit status: 0 when every target is met, 3 when one is missed, 1 when the run itself failed.
"""
import argparse, os, shutil, sqlite3, subprocess, sys, tempfile, threading, time

JOB = r'''
import os, sys, time, numpy as np, torch
from torch.utils.data import Dataset, DataLoader
data, epochs, step_s, oracle_path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]

class Pairs(Dataset):
    def __init__(self):
        self.x = np.load(os.path.join(data, "x.npy"), mmap_mode="r")
        self.y = np.load(os.path.join(data, "y.npy"), mmap_mode="r")
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.x[i])), torch.from_numpy(np.array(self.y[i]))

def file_rss_kb(pid):
    """Rss of x.npy and y.npy in /proc/PID/smaps, KiB (the oracle)."""
    out, current = {"x.npy": 0, "y.npy": 0}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                current = os.path.basename(path) if os.path.basename(path) in out else None
            elif current and first == "Rss:":
                out[current] += int(line.split()[1])
    return out

def sampled_ns():
    try:
        a, b = open(os.environ["LOADERLENS_SAMPLED"]).read().split()
        return int(a) if a == b else 0
    except (OSError, ValueError, KeyError):
        return 0

loader = DataLoader(Pairs(), batch_size=32, shuffle=True, num_workers=5, persistent_workers=False)
oracle = open(oracle_path, "w")
for epoch in range(epochs):
    it = iter(loader)
    for i, batch in enumerate(it):
        if i == len(loader) - 1:
            pids = [w.pid for w in it._workers]
            before = {p: file_rss_kb(p) for p in pids}
            asked = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
            with open(os.environ["LOADERLENS_MARKERS"], "a") as m:
                m.write(f"epoch {epoch} end\n")
            deadline = time.monotonic() + 2
            while sampled_ns() < asked and time.monotonic() < deadline:
                time.sleep(0.002)
            waited_ms = (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - asked) / 1e6
            after = {p: file_rss_kb(p) for p in pids}
            for p in pids:
                for name in ("x.npy", "y.npy"):
                    print(epoch, p, name, before[p][name], after[p][name], f"{waited_ms:.1f}",
                          file=oracle)
            oracle.flush()
        time.sleep(step_s)
'''


def recorder_cpu_poll(pid, out, stop):
    """The recorder's own CPU (utime + stime, not its children's), polled until it exits, and
    per thread (by name: loaderlens-fast, loaderlens-deep; the main thread writes)."""
    tick = os.sysconf("SC_CLK_TCK")
    threads = out.setdefault("threads", {})
    while not stop.is_set():
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            out["cpu_s"] = (int(fields[11]) + int(fields[12])) / tick
            out["wall_s"] = time.monotonic() - out["start"]
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    text = open(f"/proc/{pid}/task/{tid}/stat").read()
                    name = text[text.index("(") + 1:text.rindex(")")]
                    f = text.rsplit(")", 1)[1].split()
                    threads[tid] = (name, (int(f[11]) + int(f[12])) / tick)
                except (OSError, ValueError):
                    pass
        except (OSError, IndexError, ValueError):
            return
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loaderlens")
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--file-mib", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--epoch-s", type=float, default=6.0)
    ap.add_argument("--keep", help="directory for the recording and data, kept afterwards")
    ap.add_argument("--record-arg", action="append", default=[],
                    help="an argument for `record` (repeatable)")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="loaderlens-epoch-end-")
    os.makedirs(work, exist_ok=True)
    try:
        import numpy as np
        rows = a.file_mib * 1024 // 64  # 64 KiB rows
        for name, seed in (("x.npy", 1), ("y.npy", 2)):
            arr = np.lib.format.open_memmap(os.path.join(work, name), mode="w+",
                                            dtype=np.float32, shape=(rows, 16384))
            arr[:] = np.random.default_rng(seed).random((rows, 16384), dtype=np.float32)
            arr.flush()
            del arr
        job = os.path.join(work, "job.py")
        open(job, "w").write(JOB.replace("num_workers=5", f"num_workers={a.workers}"))
        batches = (rows + 31) // 32
        db, oracle = os.path.join(work, "run.db"), os.path.join(work, "oracle.txt")
        cmd = [a.loaderlens, "record", *a.record_arg, "-q", "-f", "-o", db, "--", sys.executable, job, work,
               str(a.epochs), str(a.epoch_s / batches), oracle]
        proc = subprocess.Popen(cmd)
        cpu = {"start": time.monotonic()}
        stop = threading.Event()
        poller = threading.Thread(target=recorder_cpu_poll, args=(proc.pid, cpu, stop))
        poller.start()
        rc = proc.wait()
        stop.set()
        poller.join()
        if rc != 0:
            print(f"epoch_end_torch: the recorded job failed (exit {rc})", file=sys.stderr)
            return 1
        return judge(db, oracle, cpu, a)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def judge(db, oracle_path, cpu, a):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    page_kb = 4
    markers = {int(text.split()[1]): t for t, text in
               con.execute("SELECT t_ms, text FROM markers WHERE text LIKE 'epoch % end'")}
    process_of = {}
    for pid, pid_id in con.execute("SELECT pid, id FROM processes"):
        process_of.setdefault(pid, pid_id)
    worst, rows, missed = 0.0, [], []
    for line in open(oracle_path):
        epoch, pid, name, before, after, waited = line.split()
        epoch, pid, before, after = int(epoch), int(pid), int(before), int(after)
        t = markers.get(epoch)
        if t is None or pid not in process_of:
            missed.append(f"epoch {epoch} pid {pid}: no marker or process in the recording")
            continue
        res = con.execute(
            "SELECT r.t_ms, r.present_pages FROM mapped_residency r JOIN residency_files f"
            " ON f.id = r.file_id WHERE r.process_id = ? AND f.path LIKE ? AND r.t_ms >= ?"
            " ORDER BY r.t_ms LIMIT 1", (process_of[pid], "%/" + name, t)).fetchone()
        smaps = con.execute(
            "SELECT m.t_ms, SUM(m.rss_kb) FROM map_samples m JOIN objects o ON o.id = m.object_id"
            " WHERE m.process_id = ? AND o.path LIKE ? AND m.t_ms >= ? GROUP BY m.t_ms"
            " ORDER BY m.t_ms LIMIT 1", (process_of[pid], "%/" + name, t)).fetchone()
        if res is None:
            missed.append(f"epoch {epoch} pid {pid} {name}: no residency row after the marker")
            continue
        rss = res[1] * page_kb
        error = (rss - after) / after if after else 0.0
        worst = max(worst, abs(error))
        rows.append((epoch, pid, name, after, before, rss, res[0] - t,
                     smaps[1] if smaps else None, (smaps[0] - t) if smaps else None, waited))
    print("epoch  pid      file   oracle(after,before) KiB  pagemap KiB (+ms)  smaps KiB (+ms)  waited")
    for e, pid, name, after, before, rss, dt, s, sdt, waited in rows:
        print(f"{e:5} {pid:7} {name:6} {after:10} {before:10} {rss:12} (+{dt})"
              f" {s if s is not None else 'n/a':>12} (+{sdt})  {waited} ms")
    tiers = dict(con.execute("SELECT tier, MAX(interval_ms) FROM tier_stats GROUP BY tier"))
    # How the rollup tier's rows came: read afresh (age 0), composite, or kept.
    fresh, composite, kept = con.execute(
        "SELECT SUM(COALESCE(age_ms, 0) = 0), SUM(pss_computed_kb IS NOT NULL),"
        " SUM(age_ms > 0 AND pss_computed_kb IS NULL) FROM rollup_samples").fetchone()
    print(f"rollup rows: {fresh} read afresh, {composite} composite, {kept} kept")
    share = cpu.get("cpu_s", 0) / max(cpu.get("wall_s", 1), 1e-9)
    print(f"recorder CPU {100 * share:.2f}% of one core over {cpu.get('wall_s', 0):.1f} s")
    by_name = {}
    for name, seconds in cpu.get("threads", {}).values():
        by_name[name] = by_name.get(name, 0) + seconds
    wall = max(cpu.get("wall_s", 1), 1e-9)
    print("  by thread:", ", ".join(f"{n} {100 * s / wall:.2f}%" for n, s in sorted(by_name.items())))
    print("longest interval per tier (tier_stats):",
          ", ".join(f"{k} {v} ms" for k, v in sorted(tiers.items())))
    print(f"worst epoch-end per-file RSS error (pagemap vs smaps oracle): {100 * worst:.2f}%")
    ok = not missed and rows and worst <= 0.02 and share < 0.05
    for tier in ("fast", "rollup", "residency"):
        if tiers.get(tier, 0) > 1000:
            ok = False
            print(f"MISSED: the {tier} tier stretched to {tiers[tier]} ms (target: <= 1 s)")
    for m in missed:
        print("MISSED:", m)
    if worst > 0.02:
        print("MISSED: epoch-end per-file RSS not within 2% of smaps")
    if share >= 0.05:
        print("MISSED: recorder at or above 5% of one core")
    print("all targets met" if ok else "targets missed")
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
