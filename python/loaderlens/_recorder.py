# SPDX-License-Identifier: MIT
"""Recording this process's tree from Python: ``with loaderlens.recording() as rec: ...``.

``loaderlens record --pid PID`` is attached for the block's duration. The recorder runs in its own
session: a Ctrl-C at the terminal reaches the Python process (KeyboardInterrupt unwinds the
block, whose cleanup and DataLoader shutdown are then still recorded) and the recorder is stopped
by the block's end, with SIGINT, after the last of it. Were it in the terminal's process group,
the same Ctrl-C would end the recording at once, before that cleanup, and the block's end would
find it gone. It cannot be left behind: ``record --pid`` ends by itself when the process exits.
"""

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from . import _markers
from ._budget import Budget
from ._cli import RecorderError, find_cli, last_line

# Variables naming another recorder's files: the attached recorder must make its own, and this
# process must not keep writing through descriptors of the outer one.
_OUTER_VARIABLES = ("LOADERLENS_MARKERS", "LOADERLENS_SAMPLED", "LOADERLENS_MARKERS_FD",
                    "LOADERLENS_SAMPLED_FD", "LOADERLENS_LOADER_EVENTS",
                    "LOADERLENS_LOADER_EVENTS_FD")
_INSIDE_VARIABLES = ("LOADERLENS_MARKERS", "LOADERLENS_SAMPLED", "LOADERLENS_MARKERS_FD",
                     "LOADERLENS_SAMPLED_FD")
# A recorder finishes its file within a second or two of SIGINT (the last samples, the
# checkpoint); a busy CI node gets ample room before it is called stuck.
_TAKEN_SUFFIXES = ("", "-wal", "-shm", "-journal", ".markers", ".sampled")
_STOP_TIMEOUT = 60.0
_CHECK_TIMEOUT = 300.0
_POLL_SECONDS = 0.005
# Recordings of this process whose environment is in force, the newest last.
_active = []


@dataclass
class CheckResult:
    """What ``loaderlens check`` said: ``passed`` (every rule held), its exit code, its lines."""

    passed: bool
    exit_code: int
    lines: list = field(default_factory=list)
    output: str = ""

    def __bool__(self):
        return self.passed


def _run(argv, timeout):
    try:
        return subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise RecorderError(f"loaderlens: {' '.join(argv[:2])} did not finish within "
                            f"{timeout:g} s") from e


class Recording:
    """A recording being made (inside ``recording()``) or made (after it)."""

    def __init__(self, path, pid, cli=None):
        self.path = path
        self.pid = pid
        self._cli = cli or find_cli()
        self._process = None
        self._stderr = None
        self._owner = os.getpid()
        self._saved_environment = None
        self._handed = []
        self._stopped = False

    def __repr__(self):
        state = "recording" if self.running else "stopped"
        return f"<Recording {self.path!r} pid={self.pid} {state}>"

    @property
    def running(self):
        return self._process is not None and self._process.poll() is None

    # Starting ---------------------------------------------------------------------------------

    def _start(self, args, ready_timeout):
        # record's own test of a taken name (docs/cli.md: "A name that is taken"): a .markers left
        # by a killed recorder would otherwise look like this recorder's, ready.
        for taken in (self.path + suffix for suffix in _TAKEN_SUFFIXES):
            if os.path.lexists(taken):
                raise RecorderError(f"loaderlens: {taken}: exists; a recording is never written "
                                    "over (choose another path, or none for a new temporary one)")
        environment = {k: v for k, v in os.environ.items() if k not in _OUTER_VARIABLES}
        argv = [self._cli, "record", "--pid", str(self.pid), "-q", "--no-clobber", "-o",
                self.path, *[str(a) for a in args]]
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(argv, env=environment, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=self._stderr,
                                         start_new_session=True)
        try:
            self._wait_ready(ready_timeout)
        except BaseException:
            self._leave_environment()
            self._kill_quietly()
            raise

    def _recorder_failed(self, what):
        code = self._process.returncode
        return RecorderError(f"loaderlens: the recorder {what} (exit {code}): "
                             f"{last_line(self._stderr_text())}")

    def _wait_ready(self, timeout):
        markers, sampled = self.path + ".markers", self.path + ".sampled"
        deadline = time.monotonic() + timeout
        while not (os.path.exists(markers) and os.path.exists(sampled)):
            if self._process.poll() is not None:
                raise self._recorder_failed("exited before it was ready")
            if time.monotonic() >= deadline:
                raise RecorderError(f"loaderlens: the recorder made no {markers} within "
                                    f"{timeout:g} s")
            time.sleep(_POLL_SECONDS)
        self._enter_environment(markers, sampled)
        stamp = _markers.write_marker("loaderlens: recording attached")
        if stamp is None:
            raise RecorderError(f"loaderlens: cannot write a marker to {markers}")
        remaining = max(0.0, deadline - time.monotonic())
        if not _markers.wait_sampled(stamp, remaining, alive=lambda: self.running, warn=False):
            if self._process.poll() is not None:
                raise self._recorder_failed("exited before its first sample")
            raise RecorderError(f"loaderlens: the recorder did not acknowledge its first marker "
                                f"within {timeout:g} s ({sampled})")

    def _enter_environment(self, markers, sampled):
        self._saved_environment = {k: os.environ.get(k) for k in _INSIDE_VARIABLES}
        # The files also as open descriptors named by identity, as `record` hands them to a
        # command it launches: a process still holding these variables after the block (a
        # worker forked inside it) then never re-creates a removed file by its name.
        self._handed = []
        for variable, path, flags in (("LOADERLENS_MARKERS", markers, os.O_WRONLY | os.O_APPEND),
                                      ("LOADERLENS_SAMPLED", sampled, os.O_RDONLY)):
            os.environ[variable] = path
            os.environ.pop(variable + "_FD", None)
            try:
                fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            st = os.fstat(fd)
            self._handed.append(fd)
            os.environ[variable + "_FD"] = f"{fd}:{st.st_dev}:{st.st_ino}"
        _active.append(self)
        _markers.reset()

    def _leave_environment(self):
        saved, self._saved_environment = self._saved_environment, None
        if saved is None:
            return
        # Recordings may end out of order: one that ends under a newer one hands what it saved
        # to that one, which restores it when it ends (never an environment naming a finished
        # recording's files).
        position = _active.index(self) if self in _active else len(_active)
        del _active[position:position + 1]
        if position < len(_active):
            _active[position]._saved_environment = saved
        else:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            _markers.reset()
        for fd in getattr(self, "_handed", ()):
            os.close(fd)
        self._handed = []

    def _stderr_text(self):
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    # Stopping ---------------------------------------------------------------------------------

    def stop(self):
        """Ends the recording (SIGINT: the recorder finishes its file). Idempotent (a failure is
        raised once); a no-op in a process forked inside the block (only the process that
        started it stops it)."""
        if os.getpid() != self._owner or self._process is None or self._stopped:
            return
        self._stopped = True
        self._leave_environment()
        process = self._process
        try:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(_STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self._kill_quietly()
                    raise RecorderError(f"loaderlens: the recorder did not finish {self.path} "
                                        f"within {_STOP_TIMEOUT:g} s of SIGINT; killed") from None
            if process.returncode != 0:
                raise self._recorder_failed(f"failed while recording {self.path}")
        finally:
            self._close_stderr()

    def _kill_quietly(self):
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._close_stderr()

    def _close_stderr(self):
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # Reading ----------------------------------------------------------------------------------

    def report(self) -> dict:
        """``loaderlens report --json`` of the recording (docs/report-json.md)."""
        done = _run([self._cli, "report", "--json", self.path], _CHECK_TIMEOUT)
        if done.returncode != 0:
            raise RecorderError(f"loaderlens report exited {done.returncode}: "
                                f"{last_line(done.stderr)}")
        return json.loads(done.stdout)

    def check(self, budget=None, **rules) -> CheckResult:
        """``loaderlens check`` of the recording against the user's budget file and/or keyword
        rules (written as a budget beside the recording; check takes one budget per run)."""
        files = _budget_files(budget, rules, self.path + ".budget.toml")
        results = []
        for path, generated in files:
            done = _run([self._cli, "check", "--budget", path, self.path], _CHECK_TIMEOUT)
            if done.returncode == 2:
                raise _budget_error(done.stderr, path, generated)
            if done.returncode not in (0, 3):
                raise RecorderError(f"loaderlens check exited {done.returncode}: "
                                    f"{last_line(done.stderr)}")
            results.append(done)
        lines = [line for done in results for line in done.stdout.splitlines()]
        failed = [done.returncode for done in results if done.returncode != 0]
        return CheckResult(passed=not failed, exit_code=failed[0] if failed else 0,
                           lines=lines, output="\n".join(lines))


def _budget_files(budget, rules, generated_path):
    """[(path, Budget or None)]: the user's file, then the keyword rules written out."""
    generated = Budget(rules)
    if budget is None and generated.empty:
        raise ValueError("loaderlens: no rules: give a budget file (budget=\"FILE.toml\") or "
                         "keyword rules (e.g. forbid=[\"copy_on_read\"])")
    files = []
    if budget is not None:
        budget = os.fspath(budget)
        if not os.path.isfile(budget):
            raise ValueError(f"loaderlens: budget={budget!r}: no such file")
        files.append((budget, None))
    if not generated.empty:
        with open(generated_path, "w", encoding="utf-8") as out:
            out.write(generated.text)
        files.append((generated_path, generated))
    return files


def _budget_error(stderr, path, generated):
    """check's one line about a budget file, as a ValueError naming the keyword that wrote the
    line it names (keyword rules) or the user's file."""
    message = last_line(stderr)
    prefix = f"loaderlens: {path}:"
    if generated is not None and message.startswith(prefix):
        where, _, problem = message[len(prefix):].partition(": ")
        if where.isdigit() and generated.keyword_at(int(where)):
            _, _, problem = problem.partition(": ")  # the TOML key, named by the keyword now
            return ValueError(f"loaderlens rule {generated.keyword_at(int(where))}: {problem}")
    return ValueError(message)


def validate(budget=None, **rules):
    """Raises (TypeError/ValueError, one line) for rules check would refuse, before any run:
    names and types here, values (sizes, durations, finding kinds) by check itself, which reads
    the budget before it opens the recording."""
    cli = find_cli()
    with tempfile.TemporaryDirectory(prefix="loaderlens-validate-") as scratch:
        missing = os.path.join(scratch, "no-recording.db")
        for path, generated in _budget_files(budget, rules,
                                             os.path.join(scratch, "rules.toml")):
            done = _run([cli, "check", "--budget", path, missing], _CHECK_TIMEOUT)
            if done.returncode == 2 and missing not in last_line(done.stderr):
                raise _budget_error(done.stderr, path, generated)


@contextlib.contextmanager
def recording(path=None, *, pid=None, args=(), ready_timeout=30.0):
    """Records ``pid``'s tree (default: this process's) for the ``with`` block.

    Yields a ``Recording`` once the recorder has sampled the tree (a marker written here was
    acknowledged); ``$LOADERLENS_MARKERS`` names its markers file inside the block, so
    ``loaderlens.mark``/``epoch_end`` and ``loaderlens.torch.track`` write to it. ``path`` must
    not exist (default: ``recording.db`` in a new private temporary directory); ``args`` are more
    ``loaderlens record`` options (``["--interval", "rollup=500ms"]``).
    """
    cli = find_cli()  # before a temporary directory is made for nothing
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="loaderlens-"), "recording.db")
    rec = Recording(os.path.abspath(os.fspath(path)), os.getpid() if pid is None else int(pid),
                    cli)
    rec._start(args, ready_timeout)
    try:
        yield rec
    except BaseException:
        try:
            rec.stop()
        except RecorderError:
            pass  # the block's own exception says more; the recorder's is in its file's state
        raise
    rec.stop()
