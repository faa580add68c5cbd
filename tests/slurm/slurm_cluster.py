# SPDX-License-Identifier: MIT
"""A private single-node SLURM 22.05 for the tests in this directory (docs/slurm.md).

munged, MariaDB, slurmdbd, slurmctld and slurmd in one temporary directory (no systemd, every
port a free one on 127.0.0.1), the skip protocol, the deadline and the cleanup that the test
scripts share. The scripts import it with bytecode writing off (sys.dont_write_bytecode), so no
__pycache__ lands in the source tree.
"""

import glob
import json
import os
import pwd
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.dont_write_bytecode = True  # no __pycache__ in tests/
from script_harness import (Deadline, Stop, check, free_port, log,  # noqa: E402,F401
                            precondition_missing, run_script)

TOOLS = ["munged", "mungekey", "mariadb-install-db", "mariadbd", "mariadb", "slurmdbd",
         "slurmctld", "slurmd", "srun", "sbatch", "scancel", "sacct", "sacctmgr", "scontrol",
         "sinfo", "squeue"]
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def check_preconditions():
    if os.geteuid() != 0:
        precondition_missing("the SLURM tests need root (they start munged, MariaDB, slurmdbd, "
                             "slurmctld and slurmd)")
    missing = [t for t in TOOLS if shutil.which(t, path=SBIN_PATH) is None]
    if missing:
        precondition_missing("not installed: " + " ".join(missing) + " (Debian packages slurmctld "
                             "slurmd slurm-client munge slurmdbd mariadb-server; scripts/setup.sh)")
    for user in ("munge",):
        try:
            pwd.getpwnam(user)
        except KeyError:
            precondition_missing(f"no '{user}' user (package munge)")


# ---------------------------------------------------------------------------------------------
# The private SLURM

class Cluster:
    """acct_params: slurm.conf's JobAcctGatherParams (reconfigure() changes it on a running
    cluster); conf_extra: more slurm.conf lines, appended before the node line; frequency:
    JobAcctGatherFrequency."""

    def __init__(self, loaderlens, acct_params="OverMemoryKill", conf_extra="", frequency="1"):
        self.loaderlens = loaderlens
        self.acct_params = acct_params
        self.frequency = frequency  # JobAcctGatherFrequency
        self.conf_extra = conf_extra
        self.node_mem_mb = None  # RealMemory from `slurmd -C`
        self.tmp = tempfile.mkdtemp(prefix="loaderlens-slurm.")
        os.chmod(self.tmp, 0o711)  # munged (user munge) must reach its directory inside
        self.work = os.path.join(self.tmp, "work")
        os.mkdir(self.work)
        self.daemons = []  # (name, Popen), in start order
        self.conf = os.path.join(self.tmp, "etc", "slurm.conf")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        self.env["PATH"] = SBIN_PATH + ":" + self.env.get("PATH", "")
        self.env["SLURM_CONF"] = self.conf
        self.node = None
        self.startup_s = None

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def run(self, args, check_rc=True, timeout=60, **kw):
        p = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout,
                           **kw)
        if check_rc and p.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
        return p

    def spawn(self, name, args, **kw):
        out = open(self.path(name + ".out"), "w")
        p = subprocess.Popen(args, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, **kw)
        out.close()
        self.daemons.append((name, p))
        return p

    def poll(self, what, test, timeout=60, interval=0.2):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for name, p in self.daemons:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for {what}; "
                                       f"see {self.path(name + '.out')}")
            if test():
                return
            time.sleep(interval)
        raise RuntimeError(f"timed out after {timeout} s waiting for {what}")

    def ok(self, args):
        try:
            return self.run(args, check_rc=False, timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    # -- start-up ------------------------------------------------------------------------------
    def start(self):
        t0 = time.monotonic()
        munge = pwd.getpwnam("munge")
        mdir = self.path("munge")
        os.mkdir(mdir, 0o711)  # munged wants its socket directory executable by all
        os.chown(mdir, munge.pw_uid, munge.pw_gid)
        for d in ("etc", "ctld", "slurmd", "log"):
            os.mkdir(self.path(d), 0o755)
        self.munge_socket = os.path.join(mdir, "socket")

        # MariaDB's data directory takes the longest: start it first, munge meanwhile.
        db_port = free_port()
        install = subprocess.Popen(
            ["mariadb-install-db", "--no-defaults", "--user=root", "--datadir=" + self.path("db"),
             "--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve"],
            env=self.env, stdout=open(self.path("mariadb-install-db.out"), "w"),
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        key = os.path.join(mdir, "munge.key")
        subprocess.run(["mungekey", "--create", "--keyfile", key], check=True, user="munge",
                       group="munge", extra_groups=[], env=self.env, capture_output=True)
        self.spawn("munged", ["munged", "--foreground", "--socket", self.munge_socket,
                              "--key-file", key, "--log-file", os.path.join(mdir, "log"),
                              "--pid-file", os.path.join(mdir, "pid"),
                              "--seed-file", os.path.join(mdir, "seed")],
                   user="munge", group="munge", extra_groups=[])
        self.poll("munged", lambda: self.ok(["munge", "-S", self.munge_socket, "-n"]))

        if install.wait(timeout=120) != 0:
            raise RuntimeError("mariadb-install-db failed: see " + self.path("mariadb-install-db.out"))
        db_socket = self.path("mariadb.sock")
        self.spawn("mariadbd", ["mariadbd", "--no-defaults", "--user=root",
                                "--datadir=" + self.path("db"), "--socket=" + db_socket,
                                "--port=" + str(db_port), "--bind-address=127.0.0.1",
                                "--skip-name-resolve", "--pid-file=" + self.path("mariadb.pid"),
                                "--innodb-buffer-pool-size=64M",
                                "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"])
        sql = ["mariadb", "--no-defaults", "-S", db_socket, "-u", "root"]
        self.poll("mariadbd", lambda: self.ok(sql + ["-e", "select 1"]))
        self.run(sql + ["-e", "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'loaderlens'; "
                              "GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';"])

        # slurm.conf: the node as slurmd sees it, free ports, state in the temp dir.
        self.node_line = self.run(["slurmd", "-C"]).stdout.splitlines()[0].strip()
        self.node = re.search(r"NodeName=(\S+)", self.node_line).group(1)
        self.node_mem_mb = int(re.search(r"RealMemory=(\d+)", self.node_line).group(1))
        self.ctld_port, self.slurmd_port, dbd_port = free_port(), free_port(), free_port()
        self.dbd_port = dbd_port
        auth = self.auth()
        self.write_conf()
        dbd_conf = self.path("etc", "slurmdbd.conf")
        with open(dbd_conf, "w") as f:
            f.write(f"""{auth}DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
LogFile={self.path('log', 'slurmdbd.log')}
PidFile={self.path('slurmdbd.pid')}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=slurm
StoragePass=loaderlens
StorageLoc=slurm_acct_db
""")
        os.chmod(dbd_conf, 0o600)

        self.spawn("slurmdbd", ["slurmdbd", "-D"])
        self.poll("slurmdbd", lambda: self.ok(["sacctmgr", "-n", "-P", "list", "cluster"]))
        if "loaderlens" not in self.run(["sacctmgr", "-n", "-P", "list", "cluster",
                                         "format=cluster"]).stdout.split():
            self.run(["sacctmgr", "-i", "add", "cluster", "loaderlens"])
        self.spawn("slurmctld", ["slurmctld", "-D", "-i"])
        self.poll("slurmctld", lambda: self.ok(["scontrol", "ping"]))
        self.spawn("slurmd", ["slurmd", "-D"])

        self.poll("the node to be idle", self.node_idle)
        self.startup_s = time.monotonic() - t0

    def auth(self):
        return f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\n"

    def write_conf(self):
        extra = self.conf_extra + ("\n" if self.conf_extra and not self.conf_extra.endswith("\n")
                                   else "")
        with open(self.conf, "w") as f:
            f.write(f"""# loaderlens SLURM test cluster (tests/slurm/slurm_cluster.py)
ClusterName=loaderlens
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmUser=root
SlurmdUser=root
{self.auth()}CredType=cred/munge
StateSaveLocation={self.path('ctld')}
SlurmdSpoolDir={self.path('slurmd')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency={self.frequency}
JobAcctGatherParams={self.acct_params}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={self.dbd_port}
AccountingStoragePass={self.munge_socket}
JobCompType=jobcomp/none
ReturnToService=2
KillWait=10
SchedulerParameters=sched_interval=1
{extra}{self.node_line} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")

    def reconfigure(self, acct_params=None, conf_extra=None):
        """Rewrite slurm.conf and `scontrol reconfigure`: slurmctld rereads it and has slurmd
        reread it; steps launched afterwards get the new JobAcctGatherParams (research15 §4,
        measured). Waits until slurmctld shows the new value and the node is idle again."""
        if acct_params is not None:
            self.acct_params = acct_params
        if conf_extra is not None:
            self.conf_extra = conf_extra
        self.write_conf()
        slurmd_log = self.path("log", "slurmd.log")
        before = os.path.getsize(slurmd_log)
        self.run(["scontrol", "reconfigure"])

        def applied():
            p = self.run(["scontrol", "show", "config"], check_rc=False)
            m = re.search(r"^JobAcctGatherParams\s*=\s*(\S+)", p.stdout, re.M)
            return m is not None and m.group(1) == self.acct_params
        self.poll(f"JobAcctGatherParams={self.acct_params} in slurmctld", applied, timeout=30)
        # slurmctld forwards the request to slurmd asynchronously, and a step's slurmstepd gets
        # slurmd's configuration: wait for slurmd to log its rereading (with no step running,
        # nothing else writes to its log; 3 ms after slurmctld here). Not fatal: a test that
        # depends on the change checks its effect.
        try:
            self.poll("slurmd to reread slurm.conf", lambda: os.path.getsize(slurmd_log) > before,
                      timeout=10, interval=0.05)
        except RuntimeError as e:
            log(f"reconfigure: {e}")
        self.poll("the node to be idle", self.node_idle, timeout=30)

    def node_idle(self):
        p = self.run(["sinfo", "-h", "-N", "-o", "%T"], check_rc=False)
        return p.returncode == 0 and p.stdout.strip() == "idle"

    # -- jobs ----------------------------------------------------------------------------------
    def sbatch(self, name, script, *options):
        path = os.path.join(self.work, name + ".sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        p = self.run(["sbatch", "--parsable", "-J", name, "-D", self.work,
                      "-o", os.path.join(self.work, name + "-%j.out"), *options, path])
        return p.stdout.strip().split(";")[0]

    def squeue_empty(self, job):
        p = self.run(["squeue", "-h", "-j", job, "-o", "%i"], check_rc=False)
        return p.returncode == 0 and not p.stdout.strip()

    def sacct(self, job):
        """{JobID: (State, ExitCode, JobName)} once no line of the job is pending or running."""
        p = self.run(["sacct", "-j", job, "-P", "-n", "--format=JobID,State,ExitCode,JobName"],
                     check_rc=False)
        rows = {}
        for line in p.stdout.splitlines():
            parts = line.split("|")
            if len(parts) >= 4:
                rows[parts[0]] = (parts[1].split()[0], parts[2], parts[3])
        return rows

    def wait_job(self, job, timeout=90):
        self.poll(f"job {job} to end", lambda: self.squeue_empty(job), timeout=timeout)
        final = {}

        def recorded():
            rows = self.sacct(job)
            if not rows or any(s in ("PENDING", "RUNNING", "REQUEUED", "COMPLETING", "SUSPENDED")
                               for s, _, _ in rows.values()):
                return False
            final.update(rows)
            return True
        self.poll(f"sacct to record job {job}", recorded, timeout=30, interval=0.5)
        return final

    def job_output(self, name, job):
        try:
            with open(os.path.join(self.work, f"{name}-{job}.out")) as f:
                return f.read()
        except OSError:
            return ""

    # -- stop everything -----------------------------------------------------------------------
    def ours(self):
        """PIDs of processes started from this cluster (daemons, slurmstepd, job tasks): their
        environment or command line names our temporary directory."""
        pids = []
        marker = self.tmp.encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if marker in env or marker in cmd:
                pids.append(int(entry))
        return pids

    def stop(self):
        names = {n for n, p in self.daemons if p.poll() is None}
        if "slurmctld" in names:
            try:
                self.run(["scancel", "--partition=test"], check_rc=False, timeout=15)
                end = time.monotonic() + 15
                while time.monotonic() < end:
                    p = self.run(["squeue", "-h", "-o", "%i"], check_rc=False, timeout=10)
                    if p.returncode != 0 or not p.stdout.strip():
                        break
                    time.sleep(0.3)
            except Exception as e:  # noqa: BLE001 - stopping must go on
                log(f"cleanup: cancelling jobs: {e}")
        for name, p in reversed(self.daemons):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
        # Whatever outlived its daemon (slurmstepd, a job's tasks) is ours by its environment.
        for _ in range(3):
            left = self.ours()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        left = self.ours()
        if left:
            log(f"cleanup: processes still alive: {left}")
        if os.environ.get("LOADERLENS_SLURM_KEEP") == "1":
            log(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def show_logs(self):
        outs = [self.path(n + ".out") for n in ("mariadb-install-db", "mariadbd", "munged")]
        for f in sorted(glob.glob(self.path("log", "*.log"))) + outs:
            try:
                with open(f, errors="replace") as fh:
                    tail = fh.read().splitlines()[-12:]
            except OSError:
                continue
            log(f"--- {os.path.basename(f)} (last lines)")
            for line in tail:
                log("    " + line)


# ---------------------------------------------------------------------------------------------
# Helpers on recordings

def report_json(c, path):
    """`loaderlens report --json PATH`, parsed; RuntimeError naming the file when it fails."""
    p = c.run([c.loaderlens, "report", "--json", path], check_rc=False)
    if p.returncode != 0:
        raise RuntimeError(f"report --json {os.path.basename(path)} exited {p.returncode}: "
                           f"{p.stderr.strip()[:300]}")
    return json.loads(p.stdout)


def meta_of(path):
    """The meta table of a finished recording (opened read-only)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()


def read_env(path):
    env = {}
    try:
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    env[k] = v
    except OSError:
        pass
    return env


def read_text(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def find_pids(job, step, comm):
    """PIDs of processes named comm running in job.step (by their SLURM environment)."""
    found = []
    want = {b"SLURM_JOB_ID=" + job.encode(), b"SLURM_STEP_ID=" + step.encode()}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() != comm:
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = set(f.read().split(b"\0"))
        except OSError:
            continue
        if want <= env:
            found.append(int(entry))
    return found


def parent_comm(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            ppid = f.read().rsplit(")", 1)[1].split()[1]
        with open(f"/proc/{ppid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""




# ---------------------------------------------------------------------------------------------
# The driver both scripts share

def main(doc, body, nargs=1, deadline_default=130, **cluster_kw):
    """Usage check, skip protocol, SLURM start, body(cluster, args), then the harness's deadline
    (LOADERLENS_SLURM_DEADLINE), cleanup and summary (script_harness.run_script)."""
    if len(sys.argv) != nargs + 1:
        print(doc, file=sys.stderr)
        sys.exit(2)
    args = [os.path.abspath(a) for a in sys.argv[1:]]
    check_preconditions()
    for a in args:
        if not os.access(a, os.X_OK):
            log(f"not executable: {a}")
            sys.exit(1)

    def start():
        c = Cluster(args[0], **cluster_kw)
        log(f"SLURM: starting in {c.tmp}")
        try:
            c.start()
        except BaseException:
            c.show_logs()
            c.stop()  # what started before the failure
            raise
        log(f"SLURM start-up: {c.startup_s:.1f} s (munged, MariaDB incl. mariadb-install-db, "
            f"slurmdbd, slurmctld, slurmd until the node is idle)")
        return c

    run_script(start, lambda c: body(c, args), "LOADERLENS_SLURM_DEADLINE", deadline_default)
