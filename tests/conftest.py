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


@pytest.fixture(scope="session")
def released_course(tmp_path_factory) -> Path:
    """The course as `make release` leaves it, built once per run for every worker
    (tests/released_course.py): read it, or grade in a copy (released_course.copy_of)."""
    from released_course import shared_release

    return shared_release(tmp_path_factory)


@pytest.fixture(scope="session")
def class_languages():
    """A function giving a course copy's class these languages, as an instructor does: a line
    in its nbgrader_config.py (grader/exercises.py, ClassLanguages)."""

    def given(course: Path, *languages: str) -> Path:
        with open(course / "nbgrader_config.py", "a", encoding="utf-8") as config:
            config.write(f"\nc.ClassLanguages.languages = {list(languages)!r}\n")
        return course

    return given


@pytest.fixture(scope="session", autouse=True)
def _no_class_from_the_shell():
    """Where a class's data and exchange are comes from the Course (or the workspace's exchange)
    a test builds, or from the environment a test gives a server or command it starts; never from
    the shell running the tests (a hub's terminal sets FXCOURSE_EXCHANGE to the real class's)."""
    for variable in ("FXCOURSE_EXCHANGE", "FXCOURSE_CLASSDATA"):
        os.environ.pop(variable, None)


@pytest.fixture(autouse=True)
def _fxcourse_language_kept():
    """fxcourse's message language is one global of this process: a test that changes it and
    leaves it changed makes later tests in the same worker speak another language (they then
    fail or pass by the order xdist gives them). Such a test errors here, and the language is
    put back."""
    from fxcourse import messages

    before = messages.language()
    yield
    after = messages.language()
    messages.use_language(before)
    assert after == before, f"the test left fxcourse speaking {after!r} (was {before!r})"


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
    config.addinivalue_line(
        "markers",
        "end_to_end: a long path whose parts `make test` checks one by one (a whole class round"
        " trip, a fresh environment, chapters 6-12, a run repeated elsewhere):"
        " `make test-end-to-end` runs it (CI too), `make test` leaves it out",
    )
    # pytest-xdist declares this mark itself; declared here too so that `-p no:xdist` runs
    # (the helpers' focused runs) do not warn about an unknown mark.
    config.addinivalue_line("markers", "xdist_group(name): tests run by one xdist worker")


def pytest_collection_modifyitems(items):
    """`make test`'s pytest-xdist (--dist loadgroup) hands out the xdist groups first (most tests
    first), then the single tests in collection order, each to the next worker with at most two
    tests left. The chapter runs (a minute each; the student edition's set-up-and-run test too)
    go first among those, so that none of them is handed out last and keeps one worker busy
    while the other has nothing left to do. A group holds only tests that share a server, a
    course or a gradebook: a group that shares nothing lengthens one worker's chain."""
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
