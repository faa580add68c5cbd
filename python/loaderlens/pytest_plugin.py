# SPDX-License-Identifier: MIT
"""pytest plugin: ``@pytest.mark.loaderlens(**rules, budget=None, record_args=())``.

A marked test's body (the call, not its fixtures' setup) runs under ``loaderlens.recording()``
attached to the test process, then ``loaderlens check`` holds the recording to the rules. A rule
that fails makes the test fail with check's lines and the recording's path; a body that failed
stays failed with its own error, check's lines shown as a "loaderlens" section. Loaded by the
``pytest11`` entry point, or with ``-p loaderlens.pytest_plugin``; unmarked tests cost nothing.
"""

import functools
import os
import re

import pytest

_MARKER = "loaderlens"
_PLAN = pytest.StashKey()
_RESULT = pytest.StashKey()


class _Plan:
    __slots__ = ("rules", "budget", "record_args", "path")

    def __init__(self, rules, budget, record_args, path):
        self.rules, self.budget, self.record_args, self.path = rules, budget, record_args, path


class _Outcome:
    __slots__ = ("path", "check", "error")

    def __init__(self, path):
        self.path, self.check, self.error = path, None, None


def pytest_addoption(parser):
    group = parser.getgroup("loaderlens", "loaderlens: memory of a test's process tree")
    group.addoption("--loaderlens-dir", dest="loaderlens_dir", default=None, metavar="DIR",
                    help="keep the recordings of tests marked loaderlens in DIR (default: "
                         "pytest's temporary directory, as tmp_path)")
    parser.addini("loaderlens_dir", "directory for the recordings of tests marked loaderlens",
                  default="")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "loaderlens(**rules, budget=None, record_args=()): record the test's process tree "
        "during its call and fail it when `loaderlens check` fails a rule, e.g. "
        "forbid=[\"copy_on_read\"], worker_pss=\"200MiB\", growth_rss=\"8MiB\" (docs/python.md)")


def _marker_rules(item):
    """The rules of every loaderlens marker on the item, the closest winning a keyword."""
    rules = {}
    for marker in reversed(list(item.iter_markers(_MARKER))):
        if marker.args:
            raise TypeError(
                f"loaderlens: @pytest.mark.loaderlens takes keywords only, got "
                f"{marker.args!r} (e.g. @pytest.mark.loaderlens(forbid=[\"copy_on_read\"]))")
        rules.update(marker.kwargs)
    budget = rules.pop("budget", None)
    record_args = rules.pop("record_args", ())
    if not isinstance(record_args, (list, tuple)) or not all(isinstance(a, str)
                                                              for a in record_args):
        raise TypeError(f"loaderlens: record_args={record_args!r}: a list of `loaderlens record` "
                        "options, e.g. [\"--interval\", \"rollup=500ms\"]")
    return rules, budget, tuple(record_args)


def _free_path(directory, nodeid):
    from ._recorder import _TAKEN_SUFFIXES  # the names recording() refuses to write over

    os.makedirs(directory, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("._")[:120] or "test"
    for n in range(10000):
        path = os.path.join(directory, f"{stem}.db" if n == 0 else f"{stem}-{n}.db")
        if not any(os.path.lexists(path + suffix)
                   for suffix in _TAKEN_SUFFIXES):
            return os.path.abspath(path)
    raise RuntimeError(f"loaderlens: no free recording name for {nodeid} in {directory}")


def _recording_path(item):
    config = item.config
    # The option is relative to the working directory, the ini value to the ini file's.
    directory = config.getoption("loaderlens_dir")
    if not directory and config.getini("loaderlens_dir"):
        base = config.inipath.parent if config.inipath else config.rootpath
        directory = os.path.join(str(base), os.path.expanduser(config.getini("loaderlens_dir")))
    if directory:
        return _free_path(os.path.abspath(os.path.expanduser(directory)), item.nodeid)
    # The place tmp_path uses, kept (and cleaned) by pytest's usual retention.
    name = re.sub(r"\W", "_", item.name)[:30]
    return os.path.join(str(config._tmp_path_factory.mktemp(name, numbered=True)),
                        "recording.db")


def _recordable(item):
    """Only a test function's call is wrapped (pytest_pyfunc_call): a unittest.TestCase method
    or another kind of item would run unrecorded and pass unchecked."""
    if type(item) is pytest.Function:
        return True
    try:
        from _pytest.unittest import TestCaseFunction
    except ImportError:  # pragma: no cover - pytest's layout
        TestCaseFunction = ()
    return isinstance(item, pytest.Function) and not isinstance(item, TestCaseFunction)


# Not tryfirst: pytest's skipping plugin (tryfirst) has already skipped what it skips, and the
# runner's fixture setup, registered before this plugin, comes after this hook.
@pytest.hookimpl
def pytest_runtest_setup(item):
    # Before fixtures and body: a typo in a rule, or no loaderlens command, is the test's error,
    # never a run that was not checked.
    if item.get_closest_marker(_MARKER) is None:
        return
    if not _recordable(item):
        pytest.fail(f"{item.nodeid}: @pytest.mark.loaderlens works on test functions; "
                    f"{type(item).__name__} items (e.g. unittest.TestCase methods) are not "
                    "recorded", pytrace=False)
    from ._recorder import RecorderError, validate

    try:
        rules, budget, record_args = _marker_rules(item)
        if budget is not None:
            # Relative to where pytest was started, resolved now: a fixture may change the
            # working directory before the check runs.
            budget = os.path.join(str(item.config.invocation_params.dir),
                                  os.path.expanduser(str(budget)))
        validate(budget, **rules)
    except (TypeError, ValueError, RecorderError) as e:
        pytest.fail(f"{item.nodeid}: {e}", pytrace=False)
    item.stash[_PLAN] = _Plan(rules, budget, record_args, _recording_path(item))


def _check(rec, plan, outcome, body_failed):
    try:
        rec.stop()  # before the check: the recording is finished
        outcome.check = rec.check(plan.budget, **plan.rules)
    except Exception as e:  # noqa: BLE001 - a failed body keeps its own error; this is shown
        outcome.error = e
        if not body_failed:
            raise


def _recorded(plan, outcome, body):
    from ._recorder import recording

    @functools.wraps(body)
    def run(*args, **kwargs):
        with recording(plan.path, args=plan.record_args) as rec:
            try:
                result = body(*args, **kwargs)
            except BaseException:
                _check(rec, plan, outcome, body_failed=True)
                raise
            _check(rec, plan, outcome, body_failed=False)
            return result

    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    plan = pyfuncitem.stash.get(_PLAN, None)
    if plan is None:
        yield
        return
    outcome = pyfuncitem.stash[_RESULT] = _Outcome(plan.path)
    body = pyfuncitem.obj
    pyfuncitem.obj = _recorded(plan, outcome, body)
    try:
        yield
    finally:
        pyfuncitem.obj = body


def _section(outcome):
    lines = list(outcome.check.lines) if outcome.check is not None else []
    if outcome.error is not None:
        lines.append(f"loaderlens: the check could not be made: {outcome.error}")
    lines.append(f"recording kept: {outcome.path} (loaderlens report {outcome.path})")
    return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    made = yield
    if call.when != "call":
        return
    outcome = item.stash.get(_RESULT, None)
    if outcome is None:
        return
    report = made.get_result()
    section = _section(outcome)
    if report.passed and outcome.check is not None and not outcome.check.passed:
        report.outcome = "failed"
        report.longrepr = f"loaderlens check failed:\n{section}"
    else:
        report.sections.append((_MARKER, section))
