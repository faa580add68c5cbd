# SPDX-License-Identifier: MIT
"""Marked tests without torch, run by test_pytest_plugin.py in a pytest of its own. A body that
runs leaves a file named after its test in $CASE_RAN_DIR, so the outer test can tell which ran."""

import os

import pytest


def ran(name):
    with open(os.path.join(os.environ["CASE_RAN_DIR"], name), "w", encoding="utf-8"):
        pass


@pytest.mark.loaderlens(main_rss="4GiB", forbid=["copy_on_read"])
def test_within_budget():
    ran("test_within_budget")


@pytest.mark.loaderlens(main_rss="1MiB")
def test_over_budget():
    ran("test_over_budget")
    held = bytearray(b"x" * (8 << 20))  # main's RSS is far over 1 MiB anyway: this is visible
    assert len(held) == 8 << 20


@pytest.mark.loaderlens(main_rss="4GiB")
def test_body_fails():
    ran("test_body_fails")
    assert 6 * 7 == 41, "the body's own failure"


@pytest.mark.loaderlens(worker_rs="100MiB")
def test_typo():
    ran("test_typo")


@pytest.mark.loaderlens(forbid=["copy_on_reed"])
def test_bad_finding_kind():
    ran("test_bad_finding_kind")


@pytest.fixture
def recorded_during_setup():
    import loaderlens
    return loaderlens.active()


@pytest.mark.loaderlens(main_rss="4GiB")
def test_only_the_call_is_recorded(recorded_during_setup):
    import loaderlens
    ran("test_only_the_call_is_recorded")
    assert not recorded_during_setup, "a fixture's setup ran under the recorder"
    assert loaderlens.active(), "the body does not run under the recorder"
