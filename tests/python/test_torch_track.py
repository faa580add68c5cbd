# SPDX-License-Identifier: MIT
# loaderlens.torch.track on a real torch DataLoader (Debian's python3-torch): workers forked anew
# every epoch, a training step of 1 ms (the last one too), both cores kept busy by stress-ng.
# Before the package, the README's recipe (a marker appended at the last batch, nothing waited
# for) lost 6 of 6 workers' epoch-end readings with a 5 ms step: the DataLoader ended them before
# the recorder's sample. With track(), the end is marked and waited for while they live.
#
# Each of the RUNS runs is its own recording (loaderlens.recording() in the job); one more run is
# recorded from outside (`loaderlens record -- python3 job.py`), one runs without a recorder.
# Oracles: the workers' PIDs and names as the job saw them in its batches (get_worker_info and
# /proc/self/comm in the worker, tests/python/jobs/tracked_epochs.py), and the recording's rows
# read with sqlite3 (docs/recording.md, "Tables").
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "jobs", "tracked_epochs.py")
ITERABLE_JOB = os.path.join(HERE, "jobs", "iterable_epochs.py")
RUNS = 10
EPOCHS = 2
WORKERS = 3

np = pytest.importorskip("numpy", reason="Debian's python3-numpy is not installed")
pytest.importorskip("torch", reason="Debian's python3-torch is not installed")


def job_environment():
    # No recorder's variables; the CLI the job's loaderlens.recording() starts is the one tested.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LOADERLENS_") or k == "LOADERLENS_BIN"}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "rows.npy"
    np.save(path, np.arange(512 * 1024, dtype=np.float32).reshape(512, 1024))  # 2 MiB, 8 batches
    return path


@pytest.fixture
def busy_cores():
    stress = shutil.which("stress-ng")
    if not stress:
        pytest.skip("stress-ng is not installed (scripts/setup.sh installs it)")
    hog = subprocess.Popen([stress, "--cpu", str(os.cpu_count() or 2), "--timeout", "600s",
                            "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield
    hog.terminate()
    hog.wait(timeout=30)


def epoch_end_readings(db, job):
    """For each epoch the job saw, each of its workers: (pid, recorded comm, time of its first PSS
    reading at or after the moment its figures were due and before its exit, or None). Due: the
    epoch's end marker, or the marker `worker W done in epoch E` if that came first (a worker
    whose IterableDataset shard ended early is told to exit before the pass ends)."""
    found = []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        def marker_ms(text):
            row = c.execute("SELECT MIN(t_ms) FROM markers WHERE text = ?", (text,)).fetchone()
            return row[0]

        for epoch in job["epochs"]:
            end_ms = marker_ms(f"epoch {epoch['epoch']} end")
            assert end_ms is not None, f"no end marker for epoch {epoch['epoch']}"
            for worker, pid in sorted(epoch["workers"].items()):
                done_ms = marker_ms(f"worker {worker} done in epoch {epoch['epoch']}")
                due_ms = min(end_ms, done_ms) if done_ms is not None else end_ms
                process = c.execute(
                    "SELECT id, comm, exit_ms FROM processes WHERE pid = ? AND birth_ms <= ? "
                    "AND (exit_ms IS NULL OR exit_ms >= ?)", (pid, due_ms, due_ms)).fetchone()
                reading = None
                if process is not None:
                    reading = c.execute(
                        "SELECT MIN(t_ms) FROM rollup_samples WHERE process_id = ? AND t_ms >= ? "
                        "AND pss_kb IS NOT NULL AND (? IS NULL OR t_ms <= ?)",
                        (process[0], due_ms, process[2], process[2])).fetchone()[0]
                found.append({"epoch": epoch["epoch"], "worker": int(worker), "pid": pid,
                              "comm": process[1] if process else None, "reading_ms": reading,
                              "due_ms": due_ms})
    return found


def test_every_worker_has_its_epoch_end_reading_on_busy_cores(dataset, tmp_path, busy_cores):
    # The RUNS runs in one process (torch imported once), each recorded on its own by
    # loaderlens.recording(), which attaches `record --pid` to the job.
    out = tmp_path / "runs.json"
    p = subprocess.run([sys.executable, JOB, str(dataset), str(out), str(EPOCHS), str(WORKERS),
                        str(RUNS)], env=job_environment(), cwd=tmp_path, capture_output=True,
                       text=True, timeout=280)
    assert p.returncode == 0, p.stderr[-2000:]
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == RUNS
    missing = []
    for run, job in enumerate(runs):
        assert job["active"] is True
        assert [e["batches"] for e in job["epochs"]] == [job["len"]] * EPOCHS
        # Named by their slot in the worker itself, the user's own worker_init_fn chained.
        assert all(e["names"] == {str(w): f"loader-w{w}" for w in range(WORKERS)}
                   for e in job["epochs"]), job["epochs"]
        readings = epoch_end_readings(job["recording"], job)
        assert len(readings) == EPOCHS * WORKERS
        # Re-forked: each epoch had its own worker processes.
        assert len({r["pid"] for r in readings}) == EPOCHS * WORKERS
        for r in readings:
            # Named by their slot (worker_init_fn), as ps and the recorder see them.
            assert r["comm"] == f"loader-w{r['worker']}", r
            if r["reading_ms"] is None:
                missing.append((run, r))
    assert missing == [], f"{len(missing)} of {RUNS * EPOCHS * WORKERS} epoch-end readings lost"


def test_under_record_the_same_script_is_recorded_from_outside(loaderlens_bin, dataset,
                                                               tmp_path):
    db, out = tmp_path / "run.db", tmp_path / "run.json"
    p = subprocess.run([loaderlens_bin, "record", "-q", "--no-clobber", "-o", str(db), "--",
                        sys.executable, JOB, str(dataset), str(out), str(EPOCHS), "2"],
                       env=job_environment(), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["active"] is True
    readings = epoch_end_readings(db, result["runs"][0])
    assert [r["reading_ms"] is not None for r in readings] == [True] * (EPOCHS * 2), readings


def test_without_a_recorder_the_same_script_runs_unchanged(dataset, tmp_path):
    out = tmp_path / "bare.json"
    p = subprocess.run([sys.executable, JOB, str(dataset), str(out), str(EPOCHS), "2"],
                       env=job_environment(), cwd=tmp_path, capture_output=True, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["active"] is False
    job = result["runs"][0]
    assert [e["batches"] for e in job["epochs"]] == [job["len"]] * EPOCHS
    assert all(e["names"] == {"0": "loader-w0", "1": "loader-w1"} for e in job["epochs"])
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bare.json"]  # no marker file made


def test_loaders_of_unknown_or_wrong_length_are_sampled_before_their_workers_exit(tmp_path):
    # An IterableDataset with uneven shards: PyTorch tells the worker whose shard ended to exit
    # at once; without __len__, or with one that overestimates, the pass also ends before any
    # count says so. Persistent workers: one iterator for every epoch, hooked once.
    out = tmp_path / "iterable.json"
    p = subprocess.run([sys.executable, ITERABLE_JOB, str(out)], env=job_environment(),
                       cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    result = json.loads(out.read_text())
    for name in ("unknown_length", "estimated_length", "persistent"):
        case = result[name]
        assert all(sorted(e["workers"]) == ["0", "1"] for e in case["epochs"]), case
        readings = epoch_end_readings(case["recording"], case)
        assert [r["reading_ms"] is not None for r in readings] == [True] * len(readings), \
            (name, readings)
    assert result["persistent"]["hooked_once"] is True
    # The DataLoader's own attributes show through (its timeout is 0, the wrapper's wait 5 s).
    assert result["attributes"] == {"timeout": 0, "batch_size": 4, "copied_len": 2,
                                    "loader_is": True, "next_epoch": 2}


def test_epochs_continue_when_the_loader_is_wrapped_again(monkeypatch):
    import loaderlens.torch
    written = []
    monkeypatch.setattr(loaderlens.torch, "epoch_start", lambda e: written.append(("start", e)))
    monkeypatch.setattr(loaderlens.torch, "epoch_end",
                        lambda e, wait, timeout: written.append(("end", e)))
    loader = [1, 2, 3]  # anything iterable with a length; a list cannot be weakly referenced
    for _ in range(2):
        assert list(loaderlens.torch.track(loader)) == [1, 2, 3]
    for batch in loaderlens.torch.track(loader):
        break  # left early: the epoch ends there
    assert written == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2),
                       ("end", 2)]
