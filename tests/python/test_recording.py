# SPDX-License-Identifier: MIT
"""loaderlens.recording(): a real recorder attached to this test process, the figures of
processes the test owns read at markers it wrote and waited for."""

import multiprocessing
import os
import sqlite3
import stat

import pytest

import loaderlens
from loaderlens import _budget
from loaderlens._cli import find_cli
from loaderlens._recorder import validate

HELD_MIB = 48
SIDE_VARIABLES = ("LOADERLENS_MARKERS", "LOADERLENS_SAMPLED", "LOADERLENS_MARKERS_FD",
                  "LOADERLENS_SAMPLED_FD")


@pytest.fixture(autouse=True)
def the_cli(loaderlens_bin, monkeypatch):
    monkeypatch.setenv("LOADERLENS_BIN", loaderlens_bin)
    for name in SIDE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_attaches_and_records_a_marker_written_inside(tmp_path):
    path = tmp_path / "run.db"
    with loaderlens.recording(path) as rec:
        assert rec.pid == os.getpid() and rec.path == str(path)
        assert loaderlens.active()
        assert loaderlens.mark("inside the block", wait=True)
    assert not loaderlens.active()
    report = rec.report()
    texts = [m["text"] for m in report["markers"]]
    assert texts[:2] == ["loaderlens: recording attached", "inside the block"], texts
    assert report["meta"]["mode"] == "attach"
    assert report["meta"]["root_pid"] == str(os.getpid())


def _hold_then_wait(size_mib, conn):
    held = bytearray(b"x" * (size_mib << 20))  # written: every page resident
    conn.send("holding")
    conn.recv()  # until the parent's marker was sampled
    conn.close()
    assert len(held) == size_mib << 20


def test_a_forked_child_is_recorded_as_a_worker_holding_its_memory(tmp_path):
    path = tmp_path / "run.db"
    fork = multiprocessing.get_context("fork")
    parent_end, child_end = fork.Pipe()
    with loaderlens.recording(path):
        child = fork.Process(target=_hold_then_wait, args=(HELD_MIB, child_end))
        child.start()
        assert parent_end.recv() == "holding"
        assert loaderlens.mark("child holds", wait=True)
        # A second acknowledged marker while it still holds: every sample between the two was
        # taken while it held (the times are whole ms: the first marker's own sample may share
        # its millisecond, a sample of the same millisecond before it may not be the child's).
        assert loaderlens.mark("child still holds", wait=True)
        parent_end.send("go")
        child.join(30)
        assert child.exitcode == 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    marked = dict(db.execute("SELECT text, t_ms FROM markers WHERE text LIKE 'child%'"))
    process_id, role = db.execute("SELECT id, role FROM processes WHERE pid = ?",
                                  (child.pid,)).fetchone()
    assert role == "worker"
    # The last sample up to the second marker: at or after the first one's own sample.
    rss_kb, anon_kb = db.execute(
        "SELECT rss_kb, anon_kb FROM fast_samples WHERE process_id = ? AND t_ms BETWEEN ? AND ? "
        "ORDER BY t_ms DESC LIMIT 1",
        (process_id, marked["child holds"], marked["child still holds"])).fetchone()
    assert anon_kb >= HELD_MIB * 1024 and rss_kb >= HELD_MIB * 1024, (rss_kb, anon_kb)
    # What it holds beyond what it inherited (main's, shared since the fork, counted in both):
    # so that a main with more than HELD_MIB of its own could not pass this for the child.
    (main_anon_kb,) = db.execute(
        "SELECT f.anon_kb FROM fast_samples f JOIN processes p ON p.id = f.process_id "
        "WHERE p.pid = ? AND f.t_ms BETWEEN ? AND ? ORDER BY f.t_ms DESC LIMIT 1",
        (os.getpid(), marked["child holds"], marked["child still holds"])).fetchone()
    assert anon_kb - main_anon_kb >= (HELD_MIB - 4) * 1024, (anon_kb, main_anon_kb)
    db.close()


def test_the_environment_is_restored(tmp_path, monkeypatch):
    # An outer recorder's files (this process runs under `loaderlens record` too): the attached
    # recorder must make its own, and the block must not write through the outer descriptors.
    outer = tmp_path / "outer.markers"
    outer.write_text("")
    monkeypatch.setenv("LOADERLENS_MARKERS", str(outer))
    monkeypatch.setenv("LOADERLENS_MARKERS_FD", "99:1:2")
    monkeypatch.delenv("LOADERLENS_SAMPLED", raising=False)
    path = tmp_path / "run.db"
    with loaderlens.recording(path, ready_timeout=10):
        assert os.environ["LOADERLENS_MARKERS"] == f"{path}.markers"
        assert os.environ["LOADERLENS_SAMPLED"] == f"{path}.sampled"
        # The inner files as descriptors too (as `record` hands a command its files), never
        # the outer ones.
        fd, device, inode = map(int, os.environ["LOADERLENS_MARKERS_FD"].split(":"))
        st = os.stat(f"{path}.markers")
        assert (os.fstat(fd).st_ino, device, inode) == (st.st_ino, st.st_dev, st.st_ino)
        assert loaderlens.mark("inner", wait=True)
    assert os.environ["LOADERLENS_MARKERS"] == str(outer)
    assert os.environ["LOADERLENS_MARKERS_FD"] == "99:1:2"
    assert "LOADERLENS_SAMPLED" not in os.environ
    assert outer.read_text() == ""


def test_recordings_stopped_out_of_order_leave_the_environment_as_it_was(tmp_path, monkeypatch):
    for name in SIDE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with loaderlens.recording(tmp_path / "outer.db") as outer:
        with loaderlens.recording(tmp_path / "inner.db"):
            outer.stop()  # the outer one ends first
            assert os.environ["LOADERLENS_MARKERS"] == f"{tmp_path / 'inner.db'}.markers"
            assert loaderlens.mark("inner", wait=True)
        outer.stop()  # again: nothing more, no second error
    assert not any(name in os.environ for name in SIDE_VARIABLES)
    assert loaderlens.mark("after both") is False
    assert not (tmp_path / "outer.db.markers").exists()  # never made again by name


def test_the_environment_is_restored_when_the_block_raises(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with loaderlens.recording(tmp_path / "run.db") as rec:
            1 / 0
    assert not any(name in os.environ for name in SIDE_VARIABLES)
    assert not rec.running
    assert rec.report()["meta"]["state"] == "interrupted"


def test_a_recorder_that_cannot_start_says_why(tmp_path):
    with pytest.raises(loaderlens.RecorderError, match=r"exit 2\).*--no-such-option"):
        with loaderlens.recording(tmp_path / "run.db", args=["--no-such-option"]):
            pytest.fail("the block ran without a recorder")
    assert not any(name in os.environ for name in SIDE_VARIABLES)


def test_an_existing_path_is_refused(tmp_path):
    path = tmp_path / "run.db"
    path.write_bytes(b"someone's file")
    with pytest.raises(loaderlens.RecorderError, match=r"run\.db: exists"):
        with loaderlens.recording(path):
            pytest.fail("the block ran")
    assert path.read_bytes() == b"someone's file"
    left = tmp_path / "other.db.markers"  # what a killed recorder leaves
    left.write_text("")
    with pytest.raises(loaderlens.RecorderError, match=r"other\.db\.markers: exists"):
        with loaderlens.recording(tmp_path / "other.db"):
            pytest.fail("the block ran")
    assert left.read_text() == ""


def test_check_passes_and_fails(tmp_path):
    with loaderlens.recording(tmp_path / "run.db") as rec:
        held = bytearray(b"x" * (HELD_MIB << 20))
        assert loaderlens.mark("main holds", wait=True)
        del held
    passing = rec.check(main_rss="4GiB", forbid=["copy_on_read"])
    assert passing.passed and passing.exit_code == 0
    assert any(line.startswith("PASS  ") and "main rss" in line for line in passing.lines)
    failing = rec.check(main_rss_anon=f"{HELD_MIB // 2}MiB")
    assert not failing.passed and failing.exit_code == 3
    assert any(line.startswith("FAIL  ") and "main rss_anon" in line for line in failing.lines)
    # The user's file and keyword rules: check runs once on each; either failing fails.
    budget = tmp_path / "mine.toml"
    budget.write_text('[[process]]\nrole = "main"\nrss = "4GiB"\n')
    both = rec.check(budget, main_rss_anon="1MiB")
    assert not both.passed
    assert [line.split()[0] for line in both.lines if not line.startswith("check:")] \
        == ["PASS", "FAIL"]
    assert sum(line.startswith("check:") for line in both.lines) == 2
    with pytest.raises(ValueError, match=r"^loaderlens rule main_rss: '4 gigs' is not a size"):
        rec.check(main_rss="4 gigs")
    budget.write_text('[[process]]\nrole = "main"\nrss = "4 gigs"\n')
    with pytest.raises(ValueError, match=rf"^loaderlens: {budget}:3: process\[0\]\.rss"):
        rec.check(budget)


def test_keyword_rules_are_named_when_wrong():
    with pytest.raises(TypeError, match=r"unknown rule 'worker_rs' \(valid: forbid, .*worker<N>"):
        _budget.budget_toml(worker_rs="1GiB")
    with pytest.raises(ValueError, match=r"rule worker_rss=4\.5: a size is a string"):
        _budget.budget_toml(worker_rss=4.5)
    with pytest.raises(ValueError, match=r"rule warmup_epochs: .*out of range"):
        validate(warmup_epochs=10**9)
    with pytest.raises(ValueError, match=r"rule forbid: 'copy-on-read' is not a finding kind"):
        validate(forbid=["copy-on-read"])
    validate(workers_pss="1GiB", worker1_rss=1 << 30, growth_rss="8MiB", growth_role="worker",
             warmup="30s", slurm_linux="2GiB", min_margin="1GiB", max_severity="warning")


def test_strings_are_escaped_for_toml(tmp_path):
    pattern = 'we"ird\\ \t\x01\x7f é*.npy'
    text = _budget.budget_toml(files={pattern: {"rss": "64MiB"}})
    validate(files={pattern: {"rss": "64MiB"}})  # check parses it
    assert '"we\\"ird\\\\ \\t\\u0001\\u007F é*.npy"' in text, text


def test_a_child_forked_inside_never_stops_the_recorder(tmp_path):
    with loaderlens.recording(tmp_path / "run.db") as rec:
        pid = os.fork()
        if pid == 0:
            try:
                rec.stop()
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert rec.running
        assert loaderlens.mark("after the child", wait=True)
    assert "after the child" in [m["text"] for m in rec.report()["markers"]]


def test_find_cli_names_a_bad_loaderlens_bin(tmp_path, monkeypatch):
    not_executable = tmp_path / "loaderlens"
    not_executable.write_text("#!/bin/sh\n")
    not_executable.chmod(stat.S_IRUSR | stat.S_IWUSR)
    monkeypatch.setenv("LOADERLENS_BIN", str(not_executable))
    with pytest.raises(loaderlens.RecorderError, match=f"LOADERLENS_BIN='{not_executable}'"):
        find_cli()


def test_python_dash_m_runs_the_command(loaderlens_bin, tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "loaderlens", "--version"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    package_line, command_line = done.stdout.splitlines()
    assert package_line == f"loaderlens (Python package) {loaderlens.__version__}"
    assert command_line == subprocess.run([loaderlens_bin, "--version"], capture_output=True,
                                          text=True, check=True).stdout.strip()
    environment = dict(os.environ, LOADERLENS_BIN=str(tmp_path / "none"))
    done = subprocess.run([sys.executable, "-m", "loaderlens", "report", "x.db"],
                          capture_output=True, text=True, timeout=60, env=environment,
                          check=False)
    assert done.returncode == 127
    assert done.stderr == f"loaderlens: LOADERLENS_BIN='{tmp_path / 'none'}' is not an " \
        "executable file\n"


def test_every_keyword_the_package_knows_is_one_check_takes():
    # The keywords mirror check's budget keys (cli/budget_file.cpp); a key renamed or removed
    # there must fail here, not in front of a user whose marker check refuses.
    rules = {"forbid": ["copy_on_read"], "max_severity": "critical", "warmup": "1s",
             "warmup_epochs": 1, "mem_limit": "8GiB", "skip_unavailable": True,
             "growth_role": "worker", "files": {"*.npy": {f: "1GiB" for f in _budget.FILE_FIGURES}}}
    rules.update({key: "1GiB" for key in _budget.SCHEDULER_KEYS})
    for selection in ("main", "worker", "helper", "workers", "worker0"):
        rules.update({f"{selection}_{figure}": "1GiB" for figure in _budget.PROCESS_FIGURES})
    rules.update({f"growth_{figure}": "1GiB" for figure in _budget.GROWTH_FIGURES})
    validate(**rules)  # raises with check's line for a key it does not take
