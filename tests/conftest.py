"""Shared pytest set-up: paths, and a printed summary of each notebook's wall time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_notebook_times: dict[str, float] = {}


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True)
def _environment_restored():
    """Loading a course's nbgrader configuration sets SAFEGRADE_* variables in this process;
    without this, kernels started by a later test in the same worker would inherit them."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "whole_chapter: runs a whole chapter in a kernel (handed out first, see below)"
    )


def pytest_collection_modifyitems(items):
    """`make test`'s pytest-xdist (--dist loadgroup) hands out the xdist groups first (most tests
    first), then the single tests in collection order, each to the next worker with little left.
    The chapter runs (a minute each) go first among those, so that none of them is handed out
    last and keeps one worker busy while the other has nothing left to do."""
    items.sort(key=lambda item: item.get_closest_marker("whole_chapter") is None)


def pytest_runtest_logreport(report):
    # user_properties travel from xdist workers to the controller, unlike module globals.
    for key, value in report.user_properties:
        if key == "notebook_seconds":
            _notebook_times[report.nodeid] = value


def pytest_terminal_summary(terminalreporter):
    if not _notebook_times:
        return
    terminalreporter.section("notebook wall times")
    for nodeid, seconds in sorted(_notebook_times.items(), key=lambda kv: -kv[1]):
        test, _, notebook = nodeid.split("::")[-1].partition("[")
        terminalreporter.write_line(f"{seconds:7.1f} s  {notebook.rstrip(']'):28} {test[:60]}")
    terminalreporter.write_line(f"{sum(_notebook_times.values()):7.1f} s  total")
