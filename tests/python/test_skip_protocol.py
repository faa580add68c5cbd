# SPDX-License-Identifier: MIT
# conftest.py's side of the ctest entries (docs/testing.md, "The Python tests"): skips printed for
# scripts/test.sh and ctest, never beside a failure; strict mode turning them into failures; a
# build copy older than the sources refused. Each case runs pytest on files of its own, in a
# directory laid out as the repository (tests/python/conftest.py, python/loaderlens/), with a
# copy of the real conftest.py.
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"
# Built, not written out: a failure's traceback quoting this file must not read as a skip.
SKIP_LINE = "LOADERLENS-" "SKIP: "

CASES = """
import pytest

def test_passes():
    pass

def test_skips():
    pytest.skip("no widget on this machine")

@pytest.mark.skipif(True, reason="marked away")
def test_marked_skip():
    pass

@pytest.mark.xfail(reason="known bug", strict=True)
def test_expected_failure():
    assert False
"""


def layout(root, files):
    tests = root / "tests" / "python"
    tests.mkdir(parents=True)
    shutil.copy(CONFTEST, tests / "conftest.py")
    for name, text in files.items():
        (tests / name).write_text(textwrap.dedent(text))
    return tests


def pytest_run(tests, target, strict=False, pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LOADERLENS_STRICT", "PYTHONPATH")}
    if strict:
        env["LOADERLENS_STRICT"] = "1"
    # Our package's plugin stays out unless asked for: these runs are about conftest.py alone.
    env["PYTHONPATH"] = str(pythonpath) if pythonpath else ""
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                           str(tests / target)],
                          cwd=tests.parent.parent, env=env, capture_output=True, text=True,
                          timeout=120)
    return done


def skip_lines(output):
    return sorted(line for line in output.splitlines() if line.startswith(SKIP_LINE))


def test_each_skip_prints_its_line(tmp_path):
    tests = layout(tmp_path, {"test_cases.py": CASES})
    done = pytest_run(tests, "test_cases.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert skip_lines(done.stdout) == [
        f"{SKIP_LINE}tests/python/test_cases.py::test_marked_skip: marked away",
        f"{SKIP_LINE}tests/python/test_cases.py::test_skips: no widget on this machine",
    ]


def test_strict_mode_fails_each_skip(tmp_path):
    tests = layout(tmp_path, {"test_cases.py": CASES})
    done = pytest_run(tests, "test_cases.py", strict=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert SKIP_LINE not in done.stdout
    assert "LOADERLENS-MISSING: no widget on this machine (strict mode: CI must have it)" \
        in done.stdout
    # The skip in a test fails it; the one of its setup (skipif) is an error of its setup.
    assert "1 failed, 1 passed, 1 xfailed, 1 error" in done.stdout


def test_no_skip_line_beside_a_failure(tmp_path):
    tests = layout(tmp_path, {"test_cases.py": CASES + "\ndef test_fails():\n    assert 1 == 2\n"})
    done = pytest_run(tests, "test_cases.py")
    assert done.returncode == 1, done.stdout + done.stderr
    # ctest's skip expression would win over the exit status and hide test_fails.
    assert SKIP_LINE not in done.stdout + done.stderr
    assert "tests/python/test_cases.py::test_skips skipped (no widget on this machine) in a file where a test " \
        "failed" in done.stdout


def test_a_module_skipped_whole(tmp_path):
    module = 'import pytest\npytest.importorskip("no_such_module_for_loaderlens")\n' \
             "def test_never_runs():\n    pass\n"
    tests = layout(tmp_path, {"test_module.py": module})
    done = pytest_run(tests, "test_module.py")
    assert done.returncode == 5, done.stdout + done.stderr  # pytest's "no tests collected"
    assert skip_lines(done.stdout) == [
        f"{SKIP_LINE}tests/python/test_module.py: could not import 'no_such_module_for_loaderlens': "
        "No module named 'no_such_module_for_loaderlens'"]
    strict = pytest_run(tests, "test_module.py", strict=True)
    assert strict.returncode != 0, strict.stdout + strict.stderr
    assert SKIP_LINE not in strict.stdout
    assert "LOADERLENS-MISSING: could not import" in strict.stdout


def test_a_stale_build_copy_is_refused(tmp_path):
    tests = layout(tmp_path, {"test_one.py": "def test_one():\n    pass\n"})
    source = tmp_path / "python" / "loaderlens"
    copy = tmp_path / "build" / "python" / "loaderlens"
    source.mkdir(parents=True)
    copy.mkdir(parents=True)
    (source / "__init__.py").write_text("VALUE = 2\n")
    (copy / "__init__.py").write_text("VALUE = 2\n")
    (copy / "_build_info.py").write_text('VERSION = "0"\n')
    done = pytest_run(tests, "test_one.py", pythonpath=copy.parent)
    assert done.returncode == 0, done.stdout + done.stderr

    (source / "__init__.py").write_text("VALUE = 3\n")
    done = pytest_run(tests, "test_one.py", pythonpath=copy.parent)
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"stale build copy of the package: {copy / '__init__.py'} is not a copy of" \
        in done.stderr

    (source / "__init__.py").write_text("VALUE = 2\n")
    (copy / "removed.py").write_text("")
    done = pytest_run(tests, "test_one.py", pythonpath=copy.parent)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "removed.py has no source" in done.stderr
