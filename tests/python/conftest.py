# SPDX-License-Identifier: MIT
"""The skip protocol of the ctest entries, and what every Python test needs (docs/testing.md).

Each tests/python/test_*.py is one ctest entry (tests/python/CMakeLists.txt) whose
SKIP_REGULAR_EXPRESSION is "LOADERLENS-SKIP". As in the C++ tests (tests/precondition.cpp):
- every skipped test prints `LOADERLENS-SKIP: <nodeid>: <reason>` on stdout once the file's tests
  are over (scripts/test.sh lists those lines), but only when none of them failed: ctest's skip
  expression wins over the exit status, so a skip printed beside a failure would hide it;
- under LOADERLENS_STRICT=1 (CI) a skip is a failure, `LOADERLENS-MISSING: <reason> (strict mode:
  CI must have it)`.
Only the tests in this directory follow it: pytest runs started by the tests themselves on files
below it (plugin_cases/) get their skips as plain pytest reports them.
"""

import filecmp
import os
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE_PACKAGE = HERE.parent.parent / "python" / "loaderlens"

# Split in two: a traceback that quotes this line must not read as a skip to ctest.
SKIP_PREFIX = "LOADERLENS-" "SKIP: "
# This run's skips (node id, reason), and whether any of our tests failed.
_skips_key = pytest.StashKey[list]()
_failed_key = pytest.StashKey[bool]()


def strict_mode() -> bool:
    return os.environ.get("LOADERLENS_STRICT") == "1"


def _ours(path) -> bool:
    return Path(str(path)).resolve().parent == HERE


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    reason = reason.removeprefix("Skipped: ")
    # One line per skip: scripts/test.sh reads them line by line.
    return " ".join(reason.split())


def _build_copy_is_stale() -> str | None:
    """Names a module whose build copy differs from python/loaderlens/, if any.

    ctest runs what the last build copied (python/CMakeLists.txt): a test run after an edit but
    before `cmake --build` would otherwise test the old code and pass."""
    try:
        import loaderlens
    except ImportError:
        return None  # the tests that import it say why
    imported = Path(loaderlens.__file__).resolve().parent
    if imported == SOURCE_PACKAGE.resolve() or not SOURCE_PACKAGE.is_dir():
        return None
    for source in sorted(SOURCE_PACKAGE.glob("*.py")):
        copy = imported / source.name
        if not copy.is_file() or not filecmp.cmp(source, copy, shallow=False):
            return f"{copy} is not a copy of {source}"
    for copy in sorted(imported.glob("*.py")):
        if copy.name != "_build_info.py" and not (SOURCE_PACKAGE / copy.name).exists():
            return f"{copy} has no source in {SOURCE_PACKAGE}"
    return None


def pytest_configure(config):
    config.stash[_skips_key] = []
    config.stash[_failed_key] = False
    stale = _build_copy_is_stale()
    if stale:
        raise pytest.UsageError(f"loaderlens: stale build copy of the package: {stale}; "
                                "run `cmake --build` first")



def _account(config, report, nodeid, path):
    if not _ours(path):
        return
    if report.failed:
        config.stash[_failed_key] = True
    elif report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if strict_mode():
            report.outcome = "failed"
            report.longrepr = f"LOADERLENS-MISSING: {reason} (strict mode: CI must have it)"
            config.stash[_failed_key] = True
        else:
            config.stash[_skips_key].append((nodeid, reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    _account(item.config, report, item.nodeid, item.path)


# A module skipped whole (pytest.importorskip or pytest.skip(allow_module_level=True) at its top)
# is skipped at collection, with no test report.
@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if isinstance(collector, pytest.Module):
        _account(collector.config, report, report.nodeid, collector.path)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skips = config.stash.get(_skips_key, [])
    if not skips:
        return
    failed = config.stash.get(_failed_key, False) or exitstatus not in (0, 5)
    for nodeid, reason in skips:
        if failed:
            terminalreporter.write_line(f"loaderlens: {nodeid} skipped ({reason}) in a file where "
                                        "a test failed: the entry is reported as failed")
        else:
            terminalreporter.write_line(f"{SKIP_PREFIX}{nodeid}: {reason}")


@pytest.fixture(scope="session")
def loaderlens_bin() -> str:
    """The CLI under test: $LOADERLENS_BIN (ctest sets the build tree's), else the one the package
    names (_build_info.CLI), else loaderlens on PATH."""
    candidates = [os.environ.get("LOADERLENS_BIN")]
    try:
        from loaderlens import _build_info
        candidates.append(_build_info.CLI)
    except ImportError:
        pass
    candidates.append(shutil.which("loaderlens"))
    for candidate in candidates:
        if candidate:
            if not os.access(candidate, os.X_OK):
                pytest.fail(f"loaderlens: {candidate}: not an executable (LOADERLENS_BIN)")
            return candidate
    pytest.fail("loaderlens: no CLI to test: set LOADERLENS_BIN (ctest sets it)")


@pytest.fixture(scope="session")
def loaderlens_workload() -> str:
    """The test workload binary (tests/workload/): a process tree of known memory shape."""
    workload = os.environ.get("LOADERLENS_TEST_WORKLOAD")
    if not workload or not os.access(workload, os.X_OK):
        pytest.fail(f"loaderlens: LOADERLENS_TEST_WORKLOAD={workload!r}: not an executable "
                    "(ctest sets it to the build tree's loaderlens-test-workload)")
    return workload
