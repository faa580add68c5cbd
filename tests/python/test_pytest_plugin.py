# SPDX-License-Identifier: MIT
"""The pytest plugin, as a user meets it: pytest runs of their own over the files in
plugin_cases/ (copied into a temporary directory, so that nothing of this directory's conftest
applies), with the plugin loaded by its pytest11 entry point from $PYTHONPATH (the build tree's
copy, as ctest sets it), or with -p from the source tree."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parent / "plugin_cases"
SOURCE_TREE = Path(__file__).resolve().parent.parent.parent / "python"
# A pytest of its own imports torch and records; on a busy 2-core node it takes seconds.
RUN_TIMEOUT = 300


def run_pytest(tmp_path, case, *args, env=None, drop=()):
    """`python -m pytest CASE ARGS` in a copy of the case; (completed process, ran dir)."""
    work = tmp_path / "work"
    ran = tmp_path / "ran"
    work.mkdir(exist_ok=True)
    ran.mkdir(exist_ok=True)
    (work / case).write_bytes((CASES / case).read_bytes())
    environment = {k: v for k, v in os.environ.items()
                   if k not in drop and not k.startswith("PYTEST_")}
    environment["CASE_RAN_DIR"] = str(ran)
    environment.update(env or {})
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
            f"--basetemp={tmp_path / 'basetemp'}", case, *args]
    done = subprocess.run(argv, cwd=work, env=environment, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False)
    return done, ran


def outcomes(done):
    """{test name: PASSED/FAILED/ERROR} from -rA's short summary."""
    return {m.group(2): m.group(1)
            for m in re.finditer(r"^(PASSED|FAILED|ERROR) \S+::(\w+)", done.stdout, re.M)}


def junit_cases(path):
    return {case.get("name"): case for case in ElementTree.parse(path).getroot().iter("testcase")}


def kept_recording(text):
    match = re.search(r"recording kept: (\S+) \(loaderlens report ", text)
    assert match, text
    return Path(match.group(1))


def test_torch_loaders_are_judged_by_their_memory(tmp_path):
    pytest.importorskip("torch", reason="python3-torch is not installed")
    pytest.importorskip("numpy", reason="python3-numpy is not installed")
    junit = tmp_path / "junit.xml"
    done, _ = run_pytest(tmp_path, "case_torch_loaders.py", f"--junitxml={junit}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcomes(done) == {"test_list_copied_on_read": "FAILED",
                              "test_numpy_control": "PASSED",
                              "test_persistent_workers_leak": "FAILED"}, done.stdout
    cases = junit_cases(junit)
    copied = cases["test_list_copied_on_read"].find("failure").get("message")
    assert re.search(r"FAIL\s+findings\s+no copy_on_read", copied), copied
    assert "Private_Dirty" in copied, copied
    recording = kept_recording(copied)
    assert recording.is_file() and recording.parent.is_relative_to(tmp_path / "basetemp")
    leak = cases["test_persistent_workers_leak"].find("failure").get("message")
    # 16 MiB per epoch in each slot, against 8 MiB allowed after the first epoch.
    growth = re.search(r"FAIL\s+growth\s+rss per epoch\s+([\d.]+) MiB/epoch\s+> 8\.0 MiB", leak)
    assert growth and 12 <= float(growth.group(1)) <= 20, leak
    assert "warm-up: the first 1 epoch" in leak, leak
    assert cases["test_numpy_control"].find("failure") is None
    assert re.search(r"PASS\s+findings\s+no copy_on_read\s+none", done.stdout), done.stdout


def test_rules_held_failed_and_a_failing_body(tmp_path):
    junit = tmp_path / "junit.xml"
    done, ran = run_pytest(tmp_path, "case_plain.py", f"--junitxml={junit}")
    assert done.returncode == 1, done.stdout + done.stderr
    result = outcomes(done)
    assert result["test_within_budget"] == "PASSED"
    assert result["test_only_the_call_is_recorded"] == "PASSED"
    assert result["test_over_budget"] == "FAILED"
    assert result["test_body_fails"] == "FAILED"
    cases = junit_cases(junit)
    over = cases["test_over_budget"].find("failure").get("message")
    # check's own line: the figure, the limit, the process and when.
    assert re.search(r"FAIL\s+process\s+main rss\s+[\d.]+ MiB\s+> 1\.0 MiB\s+main \(pid \d+\)"
                     r"\s+at [\d.]+ s", over), over
    assert kept_recording(over).is_file()
    body = cases["test_body_fails"].find("failure").get("message")
    assert "the body's own failure" in body, body
    # The failed body's rules are still checked, shown as a section of its report.
    section = done.stdout.split("_ test_body_fails _")[1].split("\n_")[0]
    assert re.search(r"-+ loaderlens -+\nPASS\s+process\s+main rss", section), section
    passed = done.stdout.split("_ test_within_budget _")[1]
    assert re.search(r"PASS\s+findings\s+no copy_on_read", passed), passed


def test_a_bad_rule_is_an_error_and_the_body_never_runs(tmp_path):
    done, ran = run_pytest(tmp_path, "case_plain.py", "-k", "typo or bad_finding_kind")
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcomes(done) == {"test_typo": "ERROR", "test_bad_finding_kind": "ERROR"}
    assert "unknown rule 'worker_rs'" in done.stdout, done.stdout
    assert re.search(r"rule forbid: 'copy_on_reed' is not a finding kind", done.stdout)
    assert sorted(os.listdir(ran)) == []


def test_exit_status_zero_when_every_rule_holds(tmp_path):
    done, ran = run_pytest(tmp_path, "case_plain.py", "-k", "within_budget or only_the_call")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(os.listdir(ran)) == ["test_only_the_call_is_recorded", "test_within_budget"]


def entry_point_name():
    """The name pytest registers the auto-loaded plugin under (what `-p no:NAME` blocks)."""
    from importlib.metadata import entry_points
    names = [ep.name for ep in entry_points(group="pytest11")
             if ep.value == "loaderlens.pytest_plugin"]
    assert len(names) == 1, f"pytest11 entry points for loaderlens.pytest_plugin: {names}"
    return names[0]


def test_the_plugin_is_what_fails_the_test(tmp_path):
    # Auto-loaded by the entry point above; blocked here, the same test passes unjudged.
    done, _ = run_pytest(tmp_path, "case_plain.py", "-p", f"no:{entry_point_name()}",
                         "-k", "over_budget")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recording kept" not in done.stdout


def test_dash_p_beside_the_entry_point(tmp_path):
    # CI jobs often set PYTEST_DISABLE_PLUGIN_AUTOLOAD and name their plugins with -p; others
    # name it with -p where it is also installed. Both must load it once, not fail to start
    # ("Plugin already registered": the entry point's name must be the module's).
    for env in ({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, {}):
        done, _ = run_pytest(tmp_path, "case_plain.py", "-p", "loaderlens.pytest_plugin",
                             "-k", "over_budget", env=env)
        assert done.returncode == 1, (env, done.stdout + done.stderr)
        assert re.search(r"FAIL\s+process\s+main rss", done.stdout), done.stdout


def test_loaded_with_dash_p_from_the_source_tree(tmp_path):
    source = {"PYTHONPATH": str(SOURCE_TREE)}
    done, _ = run_pytest(tmp_path, "case_plain.py", "-p", "loaderlens.pytest_plugin",
                         "-k", "over_budget", env=source)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"FAIL\s+process\s+main rss", done.stdout), done.stdout
    # Without -p the source tree has no entry point: the plugin is not loaded.
    done, _ = run_pytest(tmp_path, "case_plain.py", "-k", "over_budget", env=source)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_loaderlens_command_is_an_error(tmp_path):
    # The source tree has no _build_info naming the build's binary; PATH has no loaderlens.
    done, ran = run_pytest(tmp_path, "case_plain.py", "-p", "loaderlens.pytest_plugin",
                           "-k", "within_budget", drop=("LOADERLENS_BIN",),
                           env={"PYTHONPATH": str(SOURCE_TREE), "PATH": str(tmp_path)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcomes(done) == {"test_within_budget": "ERROR"}
    assert "the loaderlens command was not found: install it, or set LOADERLENS_BIN" \
        in done.stdout
    assert os.listdir(ran) == []


def test_recordings_go_to_loaderlens_dir(tmp_path):
    kept = tmp_path / "recordings"
    done, _ = run_pytest(tmp_path, "case_plain.py", f"--loaderlens-dir={kept}",
                         "-k", "within_budget")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in kept.glob("*.db")] == ["case_plain.py_test_within_budget.db"]
    assert kept_recording(done.stdout) == kept / "case_plain.py_test_within_budget.db"


def test_markers_it_cannot_honour_are_errors_and_skips_stay_skips(tmp_path):
    (tmp_path / "work").mkdir()
    # Relative to where pytest started, though the test's fixture changed directory.
    (tmp_path / "work" / "budget.toml").write_text('[[process]]\nrole = "main"\nrss = "64GiB"\n')
    done, _ = run_pytest(tmp_path, "case_refusals.py")
    seen = outcomes(done)
    assert seen.get("test_method") == "ERROR", done.stdout[-3000:]
    assert "unittest.TestCase methods) are not recorded" in done.stdout
    assert seen.get("test_relative_budget_after_chdir") == "PASSED", done.stdout[-3000:]
    assert re.search(r"^SKIPPED .*skipped before loaderlens is asked", done.stdout, re.M)
    # A skipped test is skipped even where no loaderlens command could check it.
    done, _ = run_pytest(tmp_path, "case_refusals.py", "-k", "skipped",
                         env={"LOADERLENS_BIN": str(tmp_path / "no-such-loaderlens")})
    assert done.returncode == 0, done.stdout[-3000:]
    assert re.search(r"^SKIPPED ", done.stdout, re.M) and "ERROR" not in done.stdout
