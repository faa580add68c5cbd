#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What SLURM's accounting counts, against what the recording predicts (issue 15, docs/slurm.md).

Usage: slurm_accounting.py LOADERLENS WORKLOAD

WORKLOAD is loaderlens-test-workload (tests/workload/workload.cpp): 3 forked workers map one
96 MiB file read-only, touch every page, write 8 MiB of their own and hold. jobacct_gather/linux
counts the file once per worker (Σ RSS ~330 MiB), UsePss once in all (Σ PSS ~130 MiB).
On the private single-node SLURM of slurm_cluster.py:
  1. jobacct_gather/linux: one job, two steps of `srun loaderlens record -o DIR/run-%j.%s.db --
     WORKLOAD`. During each step's plateau `sstat` (it makes slurmstepd poll at once) gives MaxRSS;
     after the step, the recording's `report --json` predicts it: schedulers[slurm_linux] peak_kib
     + recorder_kib (the recorder is a process of the step, SLURM counts it). Asserted: both steps
     ran (COMPLETED, exit 0) and wrote finished recordings to distinct per-step files, and
     |predicted - sstat| <= 2% of sstat for each step.
  2. `scontrol reconfigure` to JobAcctGatherParams=UsePss: the same job again, slurm_usepss against
     sstat, 2%; and the two modes' figures differ by far more than 2% (the test tells them apart).
  3. scancel: `srun loaderlens record -- sleep 300`, `scancel JOB`: sacct says the step is
     CANCELLED, the recording is finished (report --json "finished": true, "cut": null) and
     notes the SIGTERM (meta signal_received, or the command's exit_signal, "Terminated").
  4. `loaderlens merge` of the two step files of 1: exit 0; report --json of the merged file has
     merged.parts, one per input, each part's step the input's meta slurm_step_id, and
     merged.totals.
Skip protocol, deadline (LOADERLENS_SLURM_DEADLINE, 120 s) and cleanup as slurm_job_control.py.
"""

import os
import sys
import time

sys.dont_write_bytecode = True  # importing slurm_cluster must not write __pycache__ into tests/
from slurm_cluster import (check, find_pids, log, main, parent_comm, read_text,  # noqa: E402
                           report_json)

DATA_MIB = 96
WORKERS = 3
ANON_MIB = 8
# The workload holds until the test has read sstat and sends SIGUSR1; this is only the fallback
# end of the hold should the test not get there.
HOLD_MS = 20000
TOLERANCE = 0.02


def kib_of(text):
    """sstat/sacct MaxRSS in KiB: with --noconvert SLURM 22.05 prints bytes without a unit;
    with a unit (K, M, G, T) the number is in that unit."""
    text = text.strip()
    if not text:
        return None
    units = {"K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3}
    if text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text) / 1024


def scheduler_view(rep, key):
    views = rep.get("schedulers")
    if views is None:
        views = (rep.get("diagnosis") or {}).get("schedulers", [])
    return next((v for v in views if v.get("key") == key), None)


def predicted_kib(view):
    """What SLURM should say: the view's peak plus the recorder (unless already in the figure)."""
    if view is None or view.get("peak_kib") is None:
        return None
    rec = 0 if view.get("recorder_in_figure") else (view.get("recorder_kib") or 0)
    return view["peak_kib"] + rec


def sstat_maxrss(c, job, step):
    p = c.run(["sstat", "-j", f"{job}.{step}", "--noconvert", "-P", "-n", "--format=MaxRSS"],
              check_rc=False, timeout=20)
    raw = p.stdout.strip().splitlines()[0] if p.stdout.strip() else ""
    return raw, kib_of(raw)


def sacct_maxrss(c, job, step):
    p = c.run(["sacct", "-j", f"{job}.{step}", "--noconvert", "-P", "-n", "--format=MaxRSS"],
              check_rc=False)
    raw = p.stdout.strip().splitlines()[0] if p.stdout.strip() else ""
    return kib_of(raw)


def workload_main(job, step):
    """The workload's main process in job.step: the one whose parent is the recorder (its workers'
    parent is main; SIGUSR1 would kill them)."""
    return [p for p in find_pids(job, step, "loaderlens-test") if parent_comm(p) == "loaderlens"]


def submit_steps(c, name, workload, data):
    d = os.path.join(c.work, name)
    os.mkdir(d)
    cmd = (f"{c.loaderlens} record -q -o {d}/run-%j.%s.db -- {workload} --file {data} "
           f"--workers {WORKERS} --anon-mib {ANON_MIB} --hold-ms {HOLD_MS}")
    # --mem well above Σ RSS: OverMemoryKill acts on the sampled sum, the shared file counted 3x.
    job = c.sbatch(name, f"""
srun -n 1 --mem=600M -o {d}/step-%j.%s.out {cmd}; echo $? >{d}/rc.0
srun -n 1 --mem=600M -o {d}/step-%j.%s.out {cmd}; echo $? >{d}/rc.1
""", "-n", "1", "--mem=700M")
    return job, d


def measure_steps(c, job, d):
    """For steps 0 and 1: wait for the plateau, read sstat twice, release the workload."""
    figures = {}
    for step in ("0", "1"):
        out = os.path.join(d, f"step-{job}.{step}.out")
        c.poll(f"step {job}.{step} to reach its plateau ('ready 0')",
               lambda: "ready 0" in (read_text(out, "") or ""), timeout=60, interval=0.1)
        # The recorder samples RSS every 100 ms and PSS every second: let it see the plateau twice.
        time.sleep(1.0)
        first = sstat_maxrss(c, job, step)
        time.sleep(1.0)
        raw, kib = sstat_maxrss(c, job, step)
        figures[step] = (raw, kib, first[1])
        pids = workload_main(job, step)
        for pid in pids:
            os.kill(pid, 10)  # SIGUSR1: end the hold
        if not pids:
            log(f"      step {job}.{step}: workload main not found; it ends after {HOLD_MS} ms")
    return figures


def check_mode(c, label, key, job, d, figures):
    rows = c.wait_job(job)
    log(f"      sacct job {job}: " + "; ".join(f"{k} {v[0]} {v[1]}" for k, v in sorted(rows.items())))
    results = {}
    files = []
    for step in ("0", "1"):
        rc = read_text(os.path.join(d, f"rc.{step}"))
        st = rows.get(f"{job}.{step}")
        check(f"{label}: step {step} ran: srun exit 0, sacct COMPLETED 0:0",
              rc == "0" and st is not None and st[:2] == ("COMPLETED", "0:0"),
              f"srun exit {rc}, sacct {st}; {read_text(os.path.join(d, f'step-{job}.{step}.out'), '')[-300:]!r}")
        db = os.path.join(d, f"run-{job}.{step}.db")
        if not os.path.exists(db):
            check(f"{label}: step {step} recorded to run-{job}.{step}.db", False,
                  f"files: {sorted(os.listdir(d))}")
            continue
        files.append(db)
        rep = report_json(c, db)
        meta = rep.get("meta") or {}
        check(f"{label}: step {step} recorded to its own file, finished, meta slurm_step_id {step}",
              rep.get("finished") is True and rep.get("cut") is None
              and str(meta.get("slurm_step_id")) == step and meta.get("state") == "finished",
              f"{os.path.basename(db)}: finished {rep.get('finished')}, cut {rep.get('cut')}, "
              f"state {meta.get('state')}, slurm_step_id {meta.get('slurm_step_id')!r}")
        view = scheduler_view(rep, key)
        pred = predicted_kib(view)
        raw, sst, first = figures.get(step, ("", None, None))
        final = sacct_maxrss(c, job, step)
        other = predicted_kib(scheduler_view(rep, "slurm_usepss" if key == "slurm_linux"
                                             else "slurm_linux"))
        results[step] = (sst, pred, other)
        if pred is None or not sst:
            check(f"{label}: step {step} predicted MaxRSS within 2% of sstat", False,
                  f"predicted {pred}, sstat {raw!r}")
            continue
        diff = pred - sst
        log(f"      step {job}.{step} {key}: sstat MaxRSS {raw} = {sst:,.0f} KiB (1 s earlier "
            f"{first:,.0f}); report peak {view['peak_kib']:,} + recorder {view.get('recorder_kib')} "
            f"(in figure: {view.get('recorder_in_figure')}) = {pred:,} KiB; diff {diff:+,.0f} KiB "
            f"({100 * diff / sst:+.2f}%); sacct MaxRSS after the step "
            f"{'n/a' if final is None else f'{final:,.0f}'} KiB; other mode's prediction {other} KiB")
        check(f"{label}: step {step} predicted MaxRSS ({key} peak + recorder) within 2% of sstat",
              abs(diff) <= TOLERANCE * sst,
              f"predicted {pred:,} KiB, sstat {sst:,.0f} KiB, {100 * diff / sst:+.2f}%")
    if len(files) == 2:
        check(f"{label}: the two steps' files are distinct", os.path.basename(files[0])
              != os.path.basename(files[1]), f"{[os.path.basename(f) for f in files]}")
    return files, results


def submit_cancel(c):
    d = os.path.join(c.work, "cancel")
    os.mkdir(d)
    job = c.sbatch("cancel", f"""
srun -n 1 --mem=100M -o {d}/step-%j.%s.out {c.loaderlens} record -q -o {d}/cancel-%j.%s.db -- sleep 300
""", "-n", "1", "--mem=150M")
    return job, d


def cancel_when_running(c, job):
    c.poll(f"the recorded sleep of job {job} to run",
           lambda: any(parent_comm(p) == "loaderlens" for p in find_pids(job, "0", "sleep")),
           timeout=60)
    time.sleep(1)  # a second of recording
    # `scancel JOB`: SIGCONT + SIGTERM to every process of the step (`scancel JOB.STEP` would be
    # SIGKILL: a cut recording by design, docs/slurm.md).
    c.run(["scancel", job])


def check_cancel(c, job, d):
    rows = c.wait_job(job)
    st = rows.get(f"{job}.0")
    log(f"      sacct job {job}: " + "; ".join(f"{k} {v[0]} {v[1]}" for k, v in sorted(rows.items())))
    check("scancel: sacct records the step CANCELLED", st is not None and st[0] == "CANCELLED",
          f"sacct {st}")
    db = os.path.join(d, f"cancel-{job}.0.db")
    if not os.path.exists(db):
        check("scancel: the recording exists", False, f"files: {sorted(os.listdir(d))}")
        return
    rep = report_json(c, db)
    meta = rep.get("meta") or {}
    log(f"      recording: finished {rep.get('finished')}, cut {rep.get('cut')}, state "
        f"{meta.get('state')}, signal_received {meta.get('signal_received')!r} at "
        f"{meta.get('signal_received_ms')} ms, exit_signal {meta.get('exit_signal')!r}")
    # proctrack/linuxproc signals the step's processes one by one, deepest first (kill_tree.c
    # prepends each child to the list): `sleep` gets SIGTERM before the recorder. When slurmstepd
    # is preempted between the two kill() calls (a busy node), the command dies and the recorder
    # finishes and exits before its own SIGTERM is queued; the SIGTERM is then recorded as the
    # command's exit_signal only. Either record says the step was terminated; neither is a failure.
    noted = meta.get("signal_received") == "Terminated" or meta.get("exit_signal") == "Terminated"
    check("scancel: the recording is finished (finished true, not cut, state finished or "
          "interrupted) and notes SIGTERM (signal_received or the command's exit_signal "
          "Terminated)",
          rep.get("finished") is True and rep.get("cut") is None
          and meta.get("state") in ("finished", "interrupted") and noted,
          f"finished {rep.get('finished')}, cut {rep.get('cut')}, state {meta.get('state')}, "
          f"signal_received {meta.get('signal_received')!r}, "
          f"exit_signal {meta.get('exit_signal')!r}")


def check_merge(c, job, files):
    if len(files) != 2:
        check("merge: two step recordings to merge", False, f"{files}")
        return
    out = os.path.join(os.path.dirname(files[0]), f"job-{job}.db")
    p = c.run([c.loaderlens, "merge", *files, "-o", out], check_rc=False)
    log(f"      merge: exit {p.returncode}; {(p.stdout + p.stderr).strip()[:300]}")
    if not check("merge: loaderlens merge A.db B.db -o job.db exits 0", p.returncode == 0,
                 f"exit {p.returncode}: {p.stderr.strip()[:300]}"):
        return
    merged = report_json(c, out).get("merged") or {}
    parts = merged.get("parts") or []
    want = sorted(str((report_json(c, f).get("meta") or {}).get("slurm_step_id")) for f in files)
    got = sorted(str(part.get("step")) for part in parts)
    log(f"      merged parts: " + "; ".join(f"{part.get('name')} step {part.get('step')} "
                                           f"source {part.get('source')}" for part in parts))
    check("merge: report --json has merged.parts, one per input, steps = the inputs' slurm_step_id",
          len(parts) == 2 and got == want, f"parts' steps {got}, inputs' {want}")
    check("merge: report --json has merged.totals", bool(merged.get("totals")),
          f"totals {str(merged.get('totals'))[:200]}")


def run(c, args):
    workload = args[1]
    data = os.path.join(c.work, "data.bin")
    with open(data, "wb") as f:  # written, not sparse: every page a real page-cache page
        chunk = b"\x5a" * (1 << 20)
        for _ in range(DATA_MIB):
            f.write(chunk)

    # jobacct_gather/linux (the cluster's default), and the scancel job beside it on the other CPU.
    cancel_job, cancel_dir = submit_cancel(c)
    job, d = submit_steps(c, "linux", workload, data)
    log(f"jobs: cancel {cancel_job}, linux {job}")
    cancel_when_running(c, cancel_job)
    figures = measure_steps(c, job, d)
    log("-- jobacct_gather/linux")
    files, linux = check_mode(c, "linux", "slurm_linux", job, d, figures)
    log("-- scancel")
    check_cancel(c, cancel_job, cancel_dir)
    log("-- merge")
    check_merge(c, job, files)

    # UsePss: slurm.conf rewritten, scontrol reconfigure (the next steps' slurmstepd reads it).
    t = time.monotonic()
    c.reconfigure(acct_params="UsePss,OverMemoryKill")
    log(f"-- JobAcctGatherParams=UsePss,OverMemoryKill (reconfigured in {time.monotonic() - t:.1f} s)")
    job2, d2 = submit_steps(c, "usepss", workload, data)
    figures2 = measure_steps(c, job2, d2)
    _, usepss = check_mode(c, "UsePss", "slurm_usepss", job2, d2, figures2)

    # The test must tell the modes apart: SLURM's figures under the two modes differ by far more
    # than the tolerance, so a prediction from the wrong view could not pass.
    for step in ("0", "1"):
        lin, pss = linux.get(step), usepss.get(step)
        if lin and pss and lin[0] and pss[0]:
            check(f"modes: step {step} sstat under UsePss < 60% of under linux (SLURM applied it)",
                  pss[0] < 0.6 * lin[0], f"UsePss {pss[0]:,.0f} KiB, linux {lin[0]:,.0f} KiB")


if __name__ == "__main__":
    main(__doc__, run, nargs=2, deadline_default=120)
