#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The report judges a job by what its site really applies (issue 28, docs/slurm.md "Modes").

Usage: slurm_verdicts.py LOADERLENS

On the private single-node SLURM of slurm_cluster.py, polling every 60 s (JobAcctGatherFrequency
=task=60: only `sstat` makes slurmstepd poll before that, so the test chooses the moment SLURM
looks), each task runs tests/workload/hold_memory.py under `loaderlens record`: W forked
workers map a file and/or write anonymous memory and hold it; once all hold, the task writes a marker and waits for the
recorder's acknowledgement that it sampled every tier after it (LOADERLENS_SAMPLED), then says
it is ready. The test then runs sstat: SLURM polls the plateau, and kills the step if it is over.
  1. jobacct_gather/linux + OverMemoryKill, a 2-task step (`srun -n2`) whose tasks each hold half
     of a sum over the job's --mem: SLURM kills it on the sum. Each task's report finds the other
     task's recording beside it, sums them: a negative margin on the node sum (within 3% of
     slurmstepd's "exceeded memory limit (N > M)"), a positive one for the task alone, and its
     limit finding names the step's tasks.
  2. A step with its own `srun --mem` inside a bigger job: killed; its report holds it against the
     step's memory (scontrol show step), not SLURM_MEM_PER_NODE, with SLURM's margin within 3%.
  3. The caveat names the site's polling period (60 s, read with scontrol show config).
  4. UsePss + OverMemoryKill (reconfigured): 3 workers share a file, Σ RSS over the limit, Σ PSS
     under it: the job completes, and its report has no warning or critical limit finding; the
     same with more anonymous memory: killed on Σ PSS, blamed on Σ PSS with SLURM's margin (3%).
  5. `srun -n2 loaderlens check --junit DIR/run-%j.%t.xml -- true` leaves one file per task.
Skip protocol, deadline (LOADERLENS_SLURM_DEADLINE, 150 s) and cleanup as slurm_job_control.py.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # importing slurm_cluster must not write __pycache__ into tests/
from slurm_cluster import check, log, main, report_json  # noqa: E402

TOLERANCE = 0.03

# The task each step runs under the recorder (tests/workload/hold_memory.py).
TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workload",
                    "hold_memory.py")


def report_text(c, path):
    return c.run([c.loaderlens, "report", path], check_rc=False).stdout


def view(rep, key):
    return next((v for v in rep.get("schedulers", []) if v.get("key") == key), None)


def findings(rep, kind=None):
    return [f for f in rep.get("findings", []) if kind is None or f.get("kind") == kind]


def task_cmd(c, d, name, anon_mib, data, workers):
    """A task under the recorder; `name` may use %j %s %t (the recording) and $SLURM_PROCID."""
    return (f"{c.loaderlens} record -q -o {d}/{name}.db -- sh -c 'exec /usr/bin/python3 "
            f"{TASK} {anon_mib} {data} {workers} {d}/ready.$SLURM_PROCID {d}/release'")


def killed_by_slurm(c, name, job, step):
    """SLURM's kill of job.step: its sacct row and slurmstepd's (N > M) in bytes, or None."""
    rows = c.wait_job(job)
    log(f"      sacct job {job}: " + "; ".join(f"{k} {v[0]} {v[1]}" for k, v in sorted(rows.items())))
    out = c.job_output(name, job)
    said = re.search(r"exceeded memory limit \((\d+) > (\d+)\)", out)
    if said:
        log(f"      slurmstepd: {said.group(0)}")
    return rows.get(f"{job}.{step}"), (int(said.group(1)), int(said.group(2))) if said else None


def ready_then_poll(c, d, job, step, tasks):
    for t in range(tasks):
        c.poll(f"task {t} of {job}.{step} to hold its memory, sampled",
               lambda t=t: os.path.exists(os.path.join(d, f"ready.{t}")), timeout=60, interval=0.05)
    # sstat makes slurmstepd poll at once: SLURM looks at the plateau now.
    p = c.run(["sstat", "-j", f"{job}.{step}", "--noconvert", "-P", "-n", "--format=MaxRSS"],
              check_rc=False, timeout=20)
    log(f"      sstat {job}.{step} MaxRSS: {p.stdout.strip()!r}")


def check_margin(label, margin_kib, said):
    """The report's margin against slurmstepd's limit M minus the figure N it killed at (bytes)."""
    slurm_margin = (said[1] - said[0]) / 1024
    check(f"{label} is SLURM's (M - N) within 3% of N", margin_kib is not None
          and abs(margin_kib - slurm_margin) <= TOLERANCE * said[0] / 1024,
          f"report {margin_kib} KiB, SLURM {slurm_margin:,.0f} KiB")


def near(a, b):
    return a is not None and b is not None and abs(a - b) <= TOLERANCE * abs(b)


def step_sum(c):
    d = os.path.join(c.work, "sum")
    os.mkdir(d)
    # Each task: python main + 1 worker of 170 MiB + its recorder, ~205 MiB alone; two: ~410.
    job = c.sbatch("sum", f"srun -n2 {task_cmd(c, d, 'sum-%j.%s.%t', 170, '-', 1)}\n",
                   "-n2", "-c1", "--mem=330M")
    log(f"-- 1. a 2-task step over the limit on its sum (job {job})")
    ready_then_poll(c, d, job, "0", 2)
    st, said = killed_by_slurm(c, "sum", job, "0")
    check("sum: SLURM kills the step (CANCELLED 0:9 with 'exceeded memory limit', or "
          "OUT_OF_MEMORY)", st is not None and (st[0] == "OUT_OF_MEMORY" or said is not None),
          f"sacct {st}")
    for t in ("0", "1"):
        db = os.path.join(d, f"sum-{job}.0.{t}.db")
        if not check(f"sum: task {t} recorded to {os.path.basename(db)}", os.path.exists(db),
                     f"files: {sorted(os.listdir(d))}"):
            continue
        rep = report_json(c, db)
        v = view(rep, "slurm_linux") or {}
        node = v.get("node") or {}
        log(f"      task {t}: alone counted {v.get('counted_kib')} KiB margin "
            f"{v.get('margin_kib')}; node sum tasks {node.get('tasks')} recorded "
            f"{node.get('recorded')} counted {node.get('counted_kib')} margin "
            f"{node.get('margin_kib')} KiB; site {rep.get('site', {}).get('view')}")
        check(f"sum: task {t}'s report sums both tasks (node.tasks 2, recorded 2)",
              node.get("tasks") == 2 and node.get("recorded") == 2, f"node {str(node)[:200]}")
        check(f"sum: task {t} alone is within the limit, the node sum over it",
              (v.get("margin_kib") or -1) > 0 and (node.get("margin_kib") or 0) < 0,
              f"alone {v.get('margin_kib')}, node {node.get('margin_kib')}")
        if said:
            slurm_kib = said[0] / 1024
            check(f"sum: task {t}'s node sum within 3% of SLURM's figure at the kill",
                  near(node.get("counted_kib"), slurm_kib),
                  f"node counted {node.get('counted_kib')} KiB, SLURM {slurm_kib:,.0f} KiB")
        limit = findings(rep, "limit_near")
        check(f"sum: task {t}'s verdict: critical, over the limit, naming the step's 2 tasks",
              bool(limit) and limit[0]["severity"] == "critical"
              and "the 2 tasks of step" in limit[0]["title"],
              f"{[f['title'][:160] for f in limit]}")
        text = report_text(c, db)
        check(f"sum: task {t}'s text report shows the sum over the 2 tasks",
              "Σ over the 2 tasks on this node" in text, text[:400])


def step_mem(c):
    d = os.path.join(c.work, "stepmem")
    os.mkdir(d)
    job = c.sbatch("stepmem", f"srun --mem=200M {task_cmd(c, d, 'stepmem-%j.%s', 230, '-', 1)}\n",
                   "-n1", "--mem=900M")
    log(f"-- 2. a step with its own --mem (job {job})")
    ready_then_poll(c, d, job, "0", 1)
    st, said = killed_by_slurm(c, "stepmem", job, "0")
    check("stepmem: SLURM kills the step at its own --mem", st is not None and said is not None
          and said[1] == 200 * 1024 * 1024, f"sacct {st}, slurmstepd {said}")
    db = os.path.join(d, f"stepmem-{job}.0.db")
    if not check("stepmem: recorded", os.path.exists(db), f"files: {sorted(os.listdir(d))}"):
        return
    rep = report_json(c, db)
    meta = rep.get("meta") or {}
    v = view(rep, "slurm_linux") or {}
    lim = v.get("limit") or {}
    log(f"      limit {lim}; SLURM_MEM_PER_NODE {meta.get('slurm_mem_per_node')}; margin "
        f"{v.get('margin_kib')} KiB")
    check("stepmem: held against the step's 200 MiB (scontrol show step), not the job's 900",
          lim.get("kib") == 200 * 1024 and "scontrol show step" in (lim.get("source") or "")
          and str(meta.get("slurm_mem_per_node")) == "900", f"limit {lim}, meta "
          f"slurm_mem_per_node {meta.get('slurm_mem_per_node')}")
    if said:
        check_margin("stepmem: the margin", v.get("margin_kib"), said)
    check("stepmem: a killed_near_limit finding (the step was killed outright)",
          bool(findings(rep, "killed_near_limit")), f"{[f['kind'] for f in findings(rep)]}")
    text = report_text(c, db)
    check("caveat: the site's polling period, 60 s, read from scontrol show config",
          "SLURM polls every 60 s on this site" in text,
          next((line for line in text.splitlines() if "sampled:" in line), text[:300]))


def usepss(c, data):
    c.reconfigure(acct_params="UsePss,OverMemoryKill")
    for name, anon, killed in (("pssok", 10, False), ("psskill", 60, True)):
        d = os.path.join(c.work, name)
        os.mkdir(d)
        # 3 workers share 96 MiB: Σ RSS ~3x96 + 3 anon + 4 interpreters + recorder; Σ PSS ~96 +
        # 3 anon + the rest. 240M: over by Σ RSS in both, over by Σ PSS only with 3x60 anon.
        job = c.sbatch(name, f"srun {task_cmd(c, d, name + '-%j.%s', anon, data, 3)}\n",
                       "-n1", "--mem=240M")
        log(f"-- 4. UsePss: {name} (job {job})")
        ready_then_poll(c, d, job, "0", 1)
        if not killed:
            open(os.path.join(d, "release"), "w").close()
        st, said = killed_by_slurm(c, name, job, "0")
        db = os.path.join(d, f"{name}-{job}.0.db")
        if not check(f"{name}: recorded", os.path.exists(db), f"files: {sorted(os.listdir(d))}"):
            continue
        rep = report_json(c, db)
        site = rep.get("site") or {}
        rss, pss = view(rep, "slurm_linux") or {}, view(rep, "slurm_usepss") or {}
        log(f"      site {site.get('view')} kills {site.get('kills')} poll {site.get('poll_s')}; "
            f"Σ RSS margin {rss.get('margin_kib')}, Σ PSS margin {pss.get('margin_kib')} KiB; "
            f"findings {[(f['kind'], f['severity']) for f in findings(rep)]}")
        check(f"{name}: the site's view is slurm_usepss, enforced", site.get("view") ==
              "slurm_usepss" and pss.get("site_role") == "enforced"
              and rss.get("site_role") is None, f"site {site}, roles {pss.get('site_role')} "
              f"{rss.get('site_role')}")
        check(f"{name}: Σ RSS over the limit (a judge by Σ RSS would say killed)",
              (rss.get("margin_kib") or 0) < 0, f"Σ RSS margin {rss.get('margin_kib')}")
        limit = findings(rep, "limit_near")
        if not killed:
            check("pssok: the job completed (COMPLETED 0:0)", st is not None and st[:2] ==
                  ("COMPLETED", "0:0"), f"sacct {st}")
            check("pssok: no warning or critical limit finding (Σ PSS within the limit)",
                  not limit and (pss.get("margin_kib") or -1) > 0,
                  f"{[(f['severity'], f['title'][:120]) for f in limit]}, Σ PSS margin "
                  f"{pss.get('margin_kib')}")
            check("pssok: an info finding says Σ RSS would be over if the site counted it",
                  any(f["severity"] == "info" for f in findings(rep, "limit_other_mode")),
                  f"{[f['kind'] for f in findings(rep)]}")
        else:
            check("psskill: SLURM kills the step on Σ PSS", st is not None and said is not None,
                  f"sacct {st}")
            check("psskill: blamed on Σ PSS (critical limit finding about it)",
                  bool(limit) and limit[0]["severity"] == "critical"
                  and "UsePss" in limit[0]["title"], f"{[f['title'][:160] for f in limit]}")
            if said:
                check_margin("psskill: Σ PSS margin", pss.get("margin_kib"), said)


def junit(c):
    d = os.path.join(c.work, "junit")
    os.mkdir(d)
    with open(os.path.join(d, "budget.toml"), "w") as f:
        f.write('[schedulers]\nslurm_linux = "250MiB"\n')
    job = c.sbatch("junit", f"srun -n2 {c.loaderlens} check -q --budget {d}/budget.toml --junit "
                   f"{d}/run-%j.%t.xml -o {d}/chk-%j.%s.%t.db -- true\n", "-n2", "-c1",
                   "--mem=300M")
    log(f"-- 5. check --junit run-%j.%t.xml under srun -n2 (job {job})")
    c.wait_job(job)
    files = sorted(f for f in os.listdir(d) if f.endswith(".xml"))
    check("junit: one file per task, run-J.0.xml and run-J.1.xml",
          files == [f"run-{job}.0.xml", f"run-{job}.1.xml"], f"{files}; job output "
          f"{c.job_output('junit', job)[-300:]!r}")


def run(c, args):
    data = os.path.join(c.work, "data.bin")
    with open(data, "wb") as f:  # written, not sparse: every page a real page-cache page
        chunk = b"\x5a" * (1 << 20)
        for _ in range(96):
            f.write(chunk)
    junit(c)
    step_sum(c)
    step_mem(c)
    usepss(c, data)


if __name__ == "__main__":
    main(__doc__, run, nargs=1, deadline_default=150, frequency="task=60")
