#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Job control as a real SLURM records it: loaderlens record inside srun steps.

Usage: slurm_job_control.py LOADERLENS

Brings up a private single-node SLURM 22.05 in a temporary directory (munged, MariaDB, slurmdbd,
slurmctld, slurmd; no systemd, everything on 127.0.0.1 or unix sockets in that directory), runs
jobs through it and checks what SLURM and the recordings say (docs/slurm.md):
  1. scancel: a step under the recorder is recorded exactly like the same step without it
     (CANCELLED 0:15), and its recording opens;
  2. two steps with one -o name: both commands run, the second recording goes to NAME.1.db,
     announced on stderr; --no-clobber refuses (exit 2) without running the command;
  3. %s %t %a %% in -o, and a default name that differs across steps and tasks;
  4. the recording's meta holds the SLURM ids, --mem / --mem-per-cpu, CPUs and node as SLURM
     gave them to the step;
  5. a step killed by OverMemoryKill: FILE-wal stays, report says "Recording cut:", and FILE
     copied without FILE-wal is refused with one line naming the missing FILE-wal.
Everything it started is stopped and removed at the end, also when a check fails or on SIGTERM.

Skips (prints "LOADERLENS-SKIP: reason", exit 0) when not root or SLURM/munge/MariaDB are not
installed; with LOADERLENS_STRICT=1 (CI) prints "LOADERLENS-MISSING: reason" and exits 1 instead.
LOADERLENS_SLURM_KEEP=1 keeps the temporary directory (daemons are stopped all the same).
"""

import os
import re
import shutil
import sys
import time

sys.dont_write_bytecode = True  # importing slurm_cluster must not write __pycache__ into tests/
from slurm_cluster import (Deadline, Stop, check, find_pids, log, main,  # noqa: E402
                           meta_of, parent_comm, read_env, read_text)


# ---------------------------------------------------------------------------------------------
# The jobs. All are submitted at once; SLURM runs them as the node's 2 CPUs allow.

def submit_all(c):
    W, LL = c.work, c.loaderlens
    jobs = {}

    # 1. scancel: the baseline (plain sleep) and the recorded sleep, two steps side by side.
    os.mkdir(os.path.join(W, "cancel"))
    jobs["cancel"] = c.sbatch("cancel", f"""
cd {W}/cancel
srun -n 1 --exact --mem=100M -J baseline sleep 300 &
srun -n 1 --exact --mem=100M -J recorded {LL} record -q -o {W}/cancel/r-%j-%s.db -- sleep 300 &
wait
""", "-n", "2", "--mem=300M")

    # 2-4. Names and meta, one step after another in one job.
    for d in ("names", "defaults"):
        os.mkdir(os.path.join(W, d))
    jobs["names"] = c.sbatch("names", f"""
N={W}/names
cd $N
# step 0: what SLURM gives a step with these options, without the recorder
srun -n 2 --mem=150M -o $N/env-plain.%t env
# steps 1, 2: one -o name twice; step 3: the same with --no-clobber
srun -n 1 --mem=150M {LL} record -q -o $N/run-%j-%N.db -- sh -c 'touch {W}/names/ran.$SLURM_STEP_ID' 2>$N/err.1; echo $? >$N/rc.1
srun -n 1 --mem=150M {LL} record -q -o $N/run-%j-%N.db -- sh -c 'touch {W}/names/ran.$SLURM_STEP_ID' 2>$N/err.2; echo $? >$N/rc.2
srun -n 1 --mem=150M {LL} record -q --no-clobber -o $N/run-%j-%N.db -- sh -c 'touch {W}/names/ran.$SLURM_STEP_ID' 2>$N/err.3; echo $? >$N/rc.3
# step 4: per-step, per-task names; the command saves the step's own environment
srun -n 2 --mem=150M {LL} record -q -o $N/r-%j.%s.%t.db -- sh -c 'env >{W}/names/env-task.$SLURM_PROCID' 2>$N/err.4; echo $? >$N/rc.4
# step 5: %% is a literal %
srun -n 1 --mem=150M {LL} record -q -o $N/pct-%%-%j.db -- true 2>$N/err.5; echo $? >$N/rc.5
# steps 6, 7: the default name, two tasks each, in the working directory
cd {W}/defaults
srun -n 2 --mem=150M {LL} record -q -- true 2>$N/err.6; echo $? >$N/rc.6
srun -n 2 --mem=150M {LL} record -q -- true 2>$N/err.7; echo $? >$N/rc.7
""", "-n", "2", "--mem=400M")

    # 3. %a in an array job
    os.mkdir(os.path.join(W, "array"))
    jobs["array"] = c.sbatch("array", f"""
srun -n 1 {LL} record -q -o {W}/array/arr-%j-%a.db -- true
""", "--array=1-2", "-n", "1", "--mem=100M")

    # 4. --mem-per-cpu reaches the meta as slurm_mem_per_cpu
    os.mkdir(os.path.join(W, "percpu"))
    jobs["percpu"] = c.sbatch("percpu", f"""
P={W}/percpu
srun -n 1 --mem-per-cpu=120M -o $P/env-plain env
srun -n 1 --mem-per-cpu=120M {LL} record -q -o $P/cpu.db -- true 2>$P/err; echo $? >$P/rc
""", "-n", "1", "--mem-per-cpu=120M")

    # 5. OverMemoryKill: 256 MiB touched under --mem=64M
    os.mkdir(os.path.join(W, "oom"))
    hog = ("import time; b = bytearray(256 << 20)\n"
           "for i in range(0, len(b), 4096): b[i] = 1\n"
           "time.sleep(300)")
    jobs["oom"] = c.sbatch("oom", f"""
srun -n 1 --mem=64M {LL} record -o {W}/oom/oom.db -- /usr/bin/python3 -c '{hog}'
echo "srun exit $?"
""", "-n", "1", "--mem=64M")
    return jobs


# ---------------------------------------------------------------------------------------------
# The checks

def check_cancel(c, job):
    W = c.work
    # Wait until both sleeps run (the recorded one as the recorder's child), then cancel each step.
    steps = {}

    def both_running():
        p = c.run(["squeue", "-h", "-s", "-j", job, "-o", "%i|%j"], check_rc=False)
        for line in p.stdout.split():
            sid, _, name = line.partition("|")
            if name in ("baseline", "recorded"):
                steps[name] = sid.split(".")[-1]
        if len(steps) < 2:
            return False
        base = find_pids(job, steps["baseline"], "sleep")
        rec = [p for p in find_pids(job, steps["recorded"], "sleep")
               if parent_comm(p) == "loaderlens"]
        return bool(base) and bool(rec)
    try:
        c.poll(f"both sleeps of job {job} to run", both_running, timeout=60)
    except RuntimeError as e:
        check("scancel: the recorded step runs its command", False, str(e))
        c.run(["scancel", job], check_rc=False)
        c.wait_job(job)
        return
    time.sleep(1)  # a second of recording
    # `scancel JOB`: slurmd sends SIGCONT + SIGTERM to every process of every step, SIGKILL after
    # KillWait. (`scancel JOB.STEP` sends SIGKILL at once: CANCELLED 0:9 with or without the
    # recorder, which tests nothing.)
    c.run(["scancel", job])
    rows = c.wait_job(job)
    base = rows.get(f"{job}.{steps['baseline']}")
    rec = rows.get(f"{job}.{steps['recorded']}")
    log(f"      sacct job {job}: " + "; ".join(f"{k} {v[2]} {v[0]} {v[1]}" for k, v in
                                                 sorted(rows.items())))
    check("scancel: baseline step without the recorder is CANCELLED 0:15 (harness sanity)",
          base and base[:2] == ("CANCELLED", "0:15"), f"baseline {base}")
    check("scancel: step under the recorder recorded as the baseline (State, ExitCode)",
          rec and base and rec[:2] == base[:2], f"recorded {rec}, baseline {base}")
    db = os.path.join(W, "cancel", f"r-{job}-{steps['recorded']}.db")
    present = os.path.exists(db)
    check("scancel: recording r-%j-%s.db exists", present,
          f"{os.path.basename(db)}; files: {sorted(os.listdir(os.path.join(W, 'cancel')))}")
    if present:
        p = c.run([c.loaderlens, "report", db], check_rc=False)
        check("scancel: loaderlens report on it exits 0", p.returncode == 0,
              f"exit {p.returncode} {p.stderr.strip()[:200]}")
        m = meta_of(db) if p.returncode == 0 else {}
        if m:
            log(f"      recorded meta: state={m.get('state')} exit_status={m.get('exit_status')} "
                f"exit_signal={m.get('exit_signal')} signal_received={m.get('signal_received')}")


def check_names(c, job):
    N = os.path.join(c.work, "names")
    rows = c.wait_job(job)
    log(f"      sacct job {job}: " + "; ".join(f"{k} {v[0]} {v[1]}" for k, v in sorted(rows.items())))
    node = c.node
    rc = {i: read_text(os.path.join(N, f"rc.{i}")) for i in range(1, 8)}
    err = {i: read_text(os.path.join(N, f"err.{i}"), "") for i in range(1, 8)}

    # 2. two steps, one name
    first, second = f"run-{job}-{node}.db", f"run-{job}-{node}.1.db"
    check("one name, step 1: exit 0, command ran, run-J-NODE.db written",
          rc[1] == "0" and os.path.exists(os.path.join(N, "ran.1"))
          and os.path.exists(os.path.join(N, first)), f"exit {rc[1]} {err[1][:200]}")
    check("one name, step 2: exit 0 and the command ran (ran.2)",
          rc[2] == "0" and os.path.exists(os.path.join(N, "ran.2")), f"exit {rc[2]} {err[2][:200]}")
    check("one name, step 2: recording went to run-J-NODE.1.db",
          os.path.exists(os.path.join(N, second)),
          f"run-* files: {sorted(f for f in os.listdir(N) if f.startswith('run-'))}")
    announced = [line for line in err[2].splitlines() if second in line]
    check("one name, step 2: one stderr line announces the new name", len(announced) == 1,
          f"stderr: {err[2][:300]!r}")
    check("one name, --no-clobber: exit 2, command not run, nothing new written",
          rc[3] == "2" and not os.path.exists(os.path.join(N, "ran.3"))
          and not os.path.exists(os.path.join(N, f"run-{job}-{node}.2.db")),
          f"exit {rc[3]} {err[3][:200]}")

    # 3. per-step, per-task names
    t0, t1 = os.path.join(N, f"r-{job}.4.0.db"), os.path.join(N, f"r-{job}.4.1.db")
    check("names: srun -n 2 -o r-%j.%s.%t.db gives r-J.4.0.db and r-J.4.1.db",
          rc[4] == "0" and os.path.exists(t0) and os.path.exists(t1),
          f"exit {rc[4]}; r-* files: {sorted(f for f in os.listdir(N) if f.startswith('r-'))} "
          f"{err[4][:200]}")
    pct = os.path.join(N, f"pct-%-{job}.db")
    check("names: %% is a literal %", rc[5] == "0" and os.path.exists(pct),
          f"exit {rc[5]}; pct* files: {sorted(f for f in os.listdir(N) if f.startswith('pct'))}")
    D = os.path.join(c.work, "defaults")
    want = {f"loaderlens-{job}.{s}.{t}-{node}.db" for s in (6, 7) for t in (0, 1)}
    got = {f for f in os.listdir(D) if f.endswith(".db")}
    check("names: default name loaderlens-%j.%s.%t-%N.db, 2 steps x 2 tasks = 4 distinct files",
          rc[6] == "0" and rc[7] == "0" and got == want,
          f"exits {rc[6]},{rc[7]}; got {sorted(got)}")

    # 4. meta against the step's environment (the recorded command's own and a plain srun env)
    # and against scontrol.
    sc = scontrol_job(c, job)
    log(f"      scontrol show job {job}: {sc}")
    plain = read_env(os.path.join(N, "env-plain.0"))
    for task, db in ((0, t0), (1, t1)):
        if not os.path.exists(db):
            check(f"meta, task {task}: recording exists", False, db)
            continue
        m = meta_of(db)
        env = read_env(os.path.join(N, f"env-task.{task}"))
        expect = {
            "slurm_job_id": (env.get("SLURM_JOB_ID"), job, sc.get("JobId")),
            "slurm_step_id": (env.get("SLURM_STEP_ID"), "4"),
            "slurm_procid": (env.get("SLURM_PROCID"), str(task)),
            # The job's --mem (scontrol MinMemoryNode): a step's own srun --mem does not change
            # SLURM_MEM_PER_NODE in its environment.
            "slurm_mem_per_node": (env.get("SLURM_MEM_PER_NODE"), plain.get("SLURM_MEM_PER_NODE"),
                                   sc.get("MinMemoryNode")),
            "slurm_cpus_on_node": (env.get("SLURM_CPUS_ON_NODE"), plain.get("SLURM_CPUS_ON_NODE"),
                                   sc.get("NumCPUs")),
            "slurmd_nodename": (env.get("SLURMD_NODENAME"), plain.get("SLURMD_NODENAME"), node,
                                sc.get("NodeList")),
        }
        for key, sources in expect.items():
            ok = m.get(key) is not None and all(s == m.get(key) for s in sources)
            check(f"meta, task {task}: {key}", ok, f"meta {m.get(key)!r}, SLURM says {sources}")
        if "slurm_mem_per_cpu" in m or "SLURM_MEM_PER_CPU" in env:
            check(f"meta, task {task}: slurm_mem_per_cpu as the step's environment",
                  m.get("slurm_mem_per_cpu") == env.get("SLURM_MEM_PER_CPU"),
                  f"meta {m.get('slurm_mem_per_cpu')!r}, env {env.get('SLURM_MEM_PER_CPU')!r}")


def scontrol_job(c, job):
    """JobId, NodeList, NumCPUs, MinMemoryNode / MinMemoryCPU (in MiB) from scontrol show job."""
    text = c.run(["scontrol", "show", "job", job], check_rc=False).stdout
    out = {}
    for key in ("JobId", "NodeList", "NumCPUs", "MinMemoryNode", "MinMemoryCPU"):
        m = re.search(r"\b" + key + r"=(\S+)", text)
        if m:
            out[key] = m.group(1)
    for key in ("MinMemoryNode", "MinMemoryCPU"):
        m = re.fullmatch(r"(\d+)([MGT])", out.get(key, ""))
        if m:
            out[key] = str(int(m.group(1)) * {"M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2)])
    return out


def check_array(c, job):
    rows = c.wait_job(job)
    ids = {}

    def both_tasks():  # sacct may list the second array task a moment later
        raw = c.run(["sacct", "-j", job, "-X", "-P", "-n", "--format=JobIDRaw,JobID"]).stdout
        for line in raw.split():
            r, _, j = line.partition("|")
            if "_" in j and "[" not in j:
                ids[j.split("_")[1]] = r
        return len(ids) == 2
    try:
        c.poll("sacct to list both array tasks", both_tasks, timeout=20, interval=0.5)
    except RuntimeError:
        pass
    A = os.path.join(c.work, "array")
    want = {f"arr-{ids.get(t)}-{t}.db" for t in ("1", "2")}
    got = {f for f in os.listdir(A) if f.endswith(".db")}
    check("names: %a in an array job (--array=1-2, -o arr-%j-%a.db)", got == want and len(ids) == 2,
          f"want {sorted(want)}, got {sorted(got)}; sacct {sorted(rows.items())}")


def check_percpu(c, job):
    c.wait_job(job)
    P = os.path.join(c.work, "percpu")
    db = os.path.join(P, "cpu.db")
    if not os.path.exists(db):
        check("meta: --mem-per-cpu recording exists", False,
              f"exit {read_text(os.path.join(P, 'rc'))} {read_text(os.path.join(P, 'err'), '')[:200]}")
        return
    m, env, sc = meta_of(db), read_env(os.path.join(P, "env-plain")), scontrol_job(c, job)
    check("meta: slurm_mem_per_cpu as --mem-per-cpu set it",
          m.get("slurm_mem_per_cpu") is not None
          and m.get("slurm_mem_per_cpu") == env.get("SLURM_MEM_PER_CPU") == sc.get("MinMemoryCPU"),
          f"meta {m.get('slurm_mem_per_cpu')!r}, env {env.get('SLURM_MEM_PER_CPU')!r}, "
          f"scontrol MinMemoryCPU {sc.get('MinMemoryCPU')!r}")
    check("meta: no slurm_mem_per_node where SLURM set none",
          m.get("slurm_mem_per_node") == env.get("SLURM_MEM_PER_NODE"),
          f"meta {m.get('slurm_mem_per_node')!r}, env {env.get('SLURM_MEM_PER_NODE')!r}")


def check_oom(c, job):
    rows = c.wait_job(job)
    step = rows.get(f"{job}.0")
    log(f"      sacct job {job}: " + "; ".join(f"{k} {v[0]} {v[1]}" for k, v in sorted(rows.items())))
    out = c.job_output("oom", job)
    # SLURM 22.05 records the OverMemoryKill of a step as CANCELLED 0:9 (slurmstepd: "StepId=J.0
    # exceeded memory limit (N > M), being killed"); other versions say OUT_OF_MEMORY.
    said = [line for line in out.splitlines() if "exceeded memory limit" in line]
    killed = step is not None and (step[0] == "OUT_OF_MEMORY" or
                                   (step[0] in ("CANCELLED", "FAILED") and bool(said)))
    check("OverMemoryKill: SLURM kills the step", killed,
          f"sacct {step and step[:2]}; {said[0].strip() if said else out.strip()[-300:]!r}")
    O = os.path.join(c.work, "oom")
    db = os.path.join(O, "oom.db")
    check("OverMemoryKill: oom.db-wal exists", os.path.exists(db + "-wal"),
          f"files: {sorted(os.listdir(O))}")
    if not os.path.exists(db):
        check("OverMemoryKill: oom.db exists", False)
        return
    # First the copy without its WAL (before any reader of the original checkpoints it away).
    lone = os.path.join(c.work, "oom-copy")
    os.mkdir(lone)
    shutil.copy(db, lone)
    p = c.run([c.loaderlens, "report", os.path.join(lone, "oom.db")], check_rc=False)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    check("OverMemoryKill: oom.db copied without -wal: exit 2, one line naming oom.db-wal",
          p.returncode == 2 and len(lines) == 1 and "oom.db-wal" in lines[0],
          f"exit {p.returncode}, stderr {p.stderr.strip()[:300]!r}")
    p = c.run([c.loaderlens, "report", db], check_rc=False)
    cut = [line for line in p.stdout.splitlines() if line.startswith("Recording cut:")]
    check("OverMemoryKill: report exits 0 and prints 'Recording cut:'",
          p.returncode == 0 and len(cut) >= 1,
          f"exit {p.returncode}; {cut[0] if cut else 'no Recording cut: line'}; "
          f"stderr {p.stderr.strip()[:200]!r}")


def run_checks(c, args):
    jobs = submit_all(c)
    log("jobs: " + ", ".join(f"{k} {v}" for k, v in jobs.items()))
    for name, fn in (("cancel", check_cancel), ("names", check_names),
                     ("array", check_array), ("percpu", check_percpu), ("oom", check_oom)):
        log(f"-- {name} (job {jobs[name]})")
        try:
            fn(c, jobs[name])
        except (Deadline, Stop):
            raise
        except Exception as e:  # noqa: BLE001 - report and go on with the next job
            check(f"{name}: ran to the end", False, f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    main(__doc__, run_checks)
