# SPDX-License-Identifier: MIT
"""Markers the plugin must not let pass unchecked, nor turn into errors where pytest skips, nor
lose to a fixture that changes directory; run by test_pytest_plugin.py."""

import unittest

import pytest


@pytest.mark.loaderlens(main_rss="64GiB")
class TestCaseStyle(unittest.TestCase):
    def test_method(self):  # pytest runs it without pytest_pyfunc_call: it would go unrecorded
        pass


@pytest.mark.skipif(True, reason="skipped before loaderlens is asked")
@pytest.mark.loaderlens(main_rss="64GiB")
def test_skipped():
    pass


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.mark.loaderlens(budget="budget.toml")
def test_relative_budget_after_chdir(elsewhere):
    pass
