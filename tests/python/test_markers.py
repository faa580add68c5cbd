# SPDX-License-Identifier: MIT
# loaderlens.mark / epoch_start / epoch_end: the marker protocol (docs/recording.md) as the
# Python package speaks it. Against the real recorder (`loaderlens record -- python3 -c ...`),
# whose recording is read back with sqlite3; and against files the test owns where the point is
# the package's own behaviour (a recorder that never answers, a name swapped for a link or FIFO).
import os
import sqlite3
import subprocess
import sys
import textwrap
import warnings

import pytest

import loaderlens
from loaderlens import _markers


def clean_environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOADERLENS_")}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    return env


def record(cli, tmp_path, script, name="run.db"):
    """Runs `script` under `loaderlens record`; returns (completed process, recording path)."""
    db = tmp_path / name
    p = subprocess.run([cli, "record", "-q", "--no-clobber", "-o", str(db), "--",
                        sys.executable, "-c", textwrap.dedent(script)],
                       env=clean_environment(), capture_output=True, text=True, timeout=120)
    return p, db


def markers_of(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return [text for (text,) in c.execute("SELECT text FROM markers ORDER BY t_ms, rowid")]


@pytest.fixture
def fresh_state(monkeypatch):
    for name in list(os.environ):
        if name.startswith("LOADERLENS_") and name != "LOADERLENS_BIN":
            monkeypatch.delenv(name)
    _markers.reset()
    _markers._warned.clear()
    yield monkeypatch
    _markers.reset()


@pytest.fixture
def silent_recorder(fresh_state, tmp_path):
    """A markers file and an acknowledgement file nobody answers in: the test plays the recorder."""
    markers, sampled = tmp_path / "m", tmp_path / "s"
    markers.write_text("")
    sampled.write_text("")
    fresh_state.setenv("LOADERLENS_MARKERS", str(markers))
    fresh_state.setenv("LOADERLENS_SAMPLED", str(sampled))
    return markers, sampled


def test_without_a_recorder_nothing_is_written_and_nothing_waits(fresh_state, tmp_path):
    fresh_state.chdir(tmp_path)
    assert loaderlens.active() is False
    assert loaderlens.mark("hello") is False
    assert loaderlens.epoch_start(0) is False
    assert loaderlens.epoch_end(0) is False  # wait=True by default: nothing to wait for
    assert list(tmp_path.iterdir()) == []


def test_an_epoch_end_is_acknowledged_by_the_real_recorder(loaderlens_bin, tmp_path):
    p, db = record(loaderlens_bin, tmp_path, """
        import loaderlens
        assert loaderlens.active()
        assert loaderlens.epoch_start(0) is True
        print(loaderlens.epoch_end(0))                      # waits for the sample
        print(loaderlens.mark("two\\nlines", wait=True))   # one marker, newline made a space
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "True"], p.stderr
    assert markers_of(db) == ["epoch 0 start", "epoch 0 end", "two lines"]


def test_the_acknowledged_sample_holds_what_the_process_held_then(loaderlens_bin, tmp_path):
    # 64 MiB written, marked with wait, then freed: the recording must have a fast and a rollup
    # reading at or after the marker that still shows the 64 MiB (the sample was taken before
    # mark() returned).
    p, db = record(loaderlens_bin, tmp_path, """
        import loaderlens
        block = bytearray(64 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        assert loaderlens.mark("holding", wait=True)
        del block
        assert loaderlens.mark("freed", wait=True)
    """)
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        (held,), (freed,) = c.execute("SELECT t_ms FROM markers ORDER BY t_ms").fetchall()
        main = c.execute("SELECT id FROM processes WHERE role = 'main'").fetchone()[0]
        anon = c.execute("SELECT anon_kb FROM fast_samples WHERE process_id = ? AND t_ms >= ? "
                         "AND t_ms < ? ORDER BY t_ms LIMIT 1", (main, held, freed)).fetchone()
        rollup = c.execute("SELECT private_dirty_kb FROM rollup_samples WHERE process_id = ? "
                           "AND t_ms >= ? AND t_ms < ? AND age_ms = 0 ORDER BY t_ms LIMIT 1",
                           (main, held, freed)).fetchone()
    assert anon is not None and anon[0] >= 64 * 1024, anon
    assert rollup is not None and rollup[0] >= 64 * 1024, rollup


def test_threads_and_forked_processes_write_whole_lines(loaderlens_bin, tmp_path):
    p, db = record(loaderlens_bin, tmp_path, """
        import os, threading, loaderlens
        def many(tag):
            for i in range(50):
                loaderlens.mark(f"{tag} {i} " + "x" * 200)
        threads = [threading.Thread(target=many, args=(f"thread{t}",)) for t in range(8)]
        for t in threads:
            t.start()
        pid = os.fork()   # while the threads write: the child's lock must not be held
        if pid == 0:
            many("child")
            os._exit(0 if loaderlens.mark("child done", wait=True) else 1)
        for t in threads:
            t.join()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    """)
    assert p.returncode == 0, p.stderr
    texts = markers_of(db)
    expected = {f"{tag} {i} " + "x" * 200
                for tag in [f"thread{t}" for t in range(8)] + ["child"] for i in range(50)}
    assert expected <= set(texts)
    assert len(texts) == len(expected) + 1 and "child done" in texts


def test_a_child_forked_while_the_lock_is_held_still_marks(loaderlens_bin, tmp_path):
    # The package holds its lock around every write; a fork while another thread holds it
    # copies it held. The child must get a fresh one (os.register_at_fork), or its first marker
    # would wait forever: here the alarm ends it, and the test fails.
    p, db = record(loaderlens_bin, tmp_path, """
        import os, signal, loaderlens
        from loaderlens import _markers
        assert loaderlens.mark("parent before the fork")
        _markers._lock.acquire()  # as another thread would hold it; the child never releases
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)
            os._exit(0 if loaderlens.mark("child after the fork", wait=True) else 1)
        _markers._lock.release()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert loaderlens.mark("parent after the fork", wait=True)
    """)
    assert p.returncode == 0, p.stderr
    assert markers_of(db) == ["parent before the fork", "child after the fork",
                              "parent after the fork"]


def test_a_long_marker_is_cut_at_a_character(silent_recorder):
    markers, _ = silent_recorder
    assert loaderlens.mark("é" * 5000) is True
    line = markers.read_bytes()
    assert len(line) <= 4096 and line.endswith(b"\n")
    text = line.decode("utf-8")  # raises on a split character
    assert set(text.split(" ", 1)[1].strip()) == {"é"}


def test_a_recorder_that_never_answers_is_waited_for_once(silent_recorder):
    markers, sampled = silent_recorder
    with pytest.warns(RuntimeWarning, match="did not acknowledge"):
        assert loaderlens.mark("first", wait=True, timeout=0.05) is False
    unanswered = _markers._channel.unanswered
    assert unanswered is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, and no wait
        assert loaderlens.mark("second", wait=True, timeout=60) is False
    # The recorder answers the first stamp at last: marks wait again.
    sampled.write_text(f"{unanswered} {unanswered}\n")
    stamp = _markers.write_marker("third")
    sampled.write_text(f"{stamp} {stamp}\n")
    assert _markers.wait_sampled(stamp, 60) is True
    lines = markers.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["first", "second", "third"]
    assert all(line.startswith("@") and line[1:].split(" ")[0].isdigit() for line in lines)


def test_a_torn_acknowledgement_is_not_taken(silent_recorder):
    markers, sampled = silent_recorder
    stamp = _markers.write_marker("x")
    sampled.write_text(f"{stamp + 1} {stamp + 2}\n")  # the two numbers differ: torn
    with pytest.warns(RuntimeWarning):
        assert _markers.wait_sampled(stamp, 0.05) is False


def test_the_handed_descriptor_is_used_when_the_name_was_swapped(fresh_state, tmp_path):
    real, other = tmp_path / "run.db.markers", tmp_path / "other"
    real.write_text("")
    other.write_text("")
    fd = os.open(real, os.O_WRONLY | os.O_APPEND)
    reader = os.open(real, os.O_RDONLY)
    st = os.fstat(fd)
    fresh_state.setenv("LOADERLENS_MARKERS", str(real))
    fresh_state.setenv("LOADERLENS_MARKERS_FD", f"{fd}:{st.st_dev}:{st.st_ino}")
    real.unlink()
    real.symlink_to(other)  # someone who can write the directory swapped the name
    try:
        assert loaderlens.mark("through the descriptor") is True
        _markers.reset()
        assert other.read_text() == ""
        assert b"through the descriptor" in os.pread(reader, 4096, 0)
    finally:
        os.close(fd)
        os.close(reader)


def test_a_link_or_fifo_at_the_name_is_refused_without_blocking(fresh_state, tmp_path):
    target, link, fifo = tmp_path / "target", tmp_path / "link", tmp_path / "fifo"
    target.write_text("")
    link.symlink_to(target)
    os.mkfifo(fifo)
    for name in (link, fifo):
        fresh_state.setenv("LOADERLENS_MARKERS", str(name))
        _markers.reset()
        with pytest.warns(RuntimeWarning, match=str(name)):
            assert loaderlens.mark("x") is False
    assert target.read_text() == ""


def test_version_is_the_command_line_tools(loaderlens_bin):
    p = subprocess.run([loaderlens_bin, "--version"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0
    assert loaderlens.__version__ == p.stdout.strip()
