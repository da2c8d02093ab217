"""make autograde starts its sandboxes before it reads the course's configuration (Pool.early):
each imports torch meanwhile and serves nothing until settle() gives it the course's imports and
limits, after checking the paths no sandbox may see; the sandboxes past the batch's size, and
all of them when that check fails, are stopped. It starts them only when something is submitted
for the selection (folder names only), since each costs seconds of CPU."""

from __future__ import annotations

import sys

import pytest

from grader.safegrade import sandbox
from grader.safegrade.pool import Pool
from grader.safegrade.records import read_records

LIMITS = sandbox.Limits(budget=30, cell_timeout=15, memory_mb=1024, nproc=33)
REPORT = """
import resource, sys
print(sorted(name for name in ("colorsys", "wave", "torch") if name in sys.modules),
      resource.getrlimit(resource.RLIMIT_NPROC)[0])
"""


def test_an_early_pool_serves_with_the_course_imports_and_limits(tmp_path):
    pool = Pool.early(2)
    started = list(pool.idle.queue)
    try:
        assert pool.settle(1, ["torch", "colorsys"], [str(tmp_path)], LIMITS) is pool
        assert pool.idle.qsize() == 1
        extra = next(box for box in started if box.cancelled)
        assert extra.proc is None  # the one past the batch's size stopped
        with pool.sandbox() as box:
            job = {"cells": [{"code": REPORT}], "files": {}, "nonce": "n", "probes": ""}
            reply = box.run(job)
    finally:
        pool.close()
    stdout = read_records(reply["records"], 1, "n").get(0, {}).get("stdout")
    assert stdout == "['colorsys', 'torch'] 33\n", (reply, stdout)


def test_settle_refuses_a_path_the_sandboxes_would_see():
    pool = Pool.early(1)
    (box,) = pool.idle.queue
    try:
        with pytest.raises(sandbox.SandboxError, match="would see"):
            pool.settle(1, ["torch"], [sys.prefix], LIMITS)
    finally:
        pool.close()
    box.starting.join()
    assert box.proc is None and box.cancelled


def test_an_early_pool_for_exercises_without_torch_is_closed():
    pool = Pool.early(1)
    (box,) = pool.idle.queue
    try:
        assert pool.settle(1, ["json"], [], LIMITS) is None
        assert pool.closed
    finally:
        pool.close()
    box.starting.join()
    assert box.proc is None


def test_closing_an_early_pool_ends_every_start_before_it_returns():
    """Closed before settle (nothing to grade): each sandbox's start has stopped it and removed
    its cgroup by then, not later in a thread the grader's exit would cut short."""
    pool = Pool.early(2)
    boxes = list(pool.idle.queue)
    pool.close()
    assert not any(box.starting.is_alive() for box in boxes)
    assert all(box.proc is None and box.cgroup is None for box in boxes)


def test_the_early_start_looks_where_the_course_layout_puts_submissions(tmp_path, monkeypatch):
    """The guess reads the folder the course's Course names, here a course.json's class data."""
    from grader.course import Course
    from grader.safegrade.__main__ import something_submitted

    (tmp_path / "course.json").write_text('{"course_id": "c", "classdata": "data"}')
    monkeypatch.chdir(tmp_path)
    submitted = Course.configured(tmp_path).submitted
    assert submitted == tmp_path / "data" / "submitted"
    (submitted / "cy" / "ex3").mkdir(parents=True)
    assert something_submitted("ex3", "*", [])
    (tmp_path / "classdata" / "submitted" / "dee" / "ex4").mkdir(parents=True)
    assert not something_submitted("ex4", "*", [])  # the default folder is not this course's


def test_something_submitted_reads_folder_names_of_the_selection(tmp_path, monkeypatch):
    from grader.safegrade.__main__ import something_submitted

    (tmp_path / "course.json").write_text('{"course_id": "c", "classdata": "data"}')
    submitted = "data/submitted"
    monkeypatch.chdir(tmp_path)
    assert not something_submitted("*", "*", [])
    (tmp_path / submitted / "ann").mkdir(parents=True)
    (tmp_path / submitted / "ann" / "ex2").write_text("a file, not a submission")
    assert not something_submitted("*", "*", [])
    (tmp_path / submitted / "bob" / "ex1").mkdir(parents=True)
    assert something_submitted("*", "*", []) and something_submitted("ex1", "b*", [])
    assert not something_submitted("ex2", "*", []) and not something_submitted("ex1", "ann", [])
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "in" / "cy" / "ex3").mkdir(parents=True)
    monkeypatch.chdir(elsewhere / "in")
    assert not something_submitted("ex3", "*", [f"--CourseDirectory.root={tmp_path}"])
    moved = ["--CourseDirectory.submitted_directory", str(elsewhere / "in")]
    assert something_submitted("ex3", "*", [f"--CourseDirectory.root={tmp_path}", *moved])


@pytest.mark.parametrize("submitted", [False, True])
def test_sandboxes_start_early_only_with_something_submitted(submitted, tmp_path, monkeypatch):
    from grader.safegrade import __main__ as command
    from grader.safegrade import batch

    class Early:
        closed = False

        def close(self):
            self.closed = True

    started, handed = [], []
    monkeypatch.setattr(Pool, "early", lambda size: started.append(Early()) or started[-1])
    monkeypatch.setattr(batch, "autograde", lambda *args: handed.append(args[-1]) or 0)
    (tmp_path / "course.json").write_text('{"course_id": "c", "classdata": "data"}')
    monkeypatch.chdir(tmp_path)
    if submitted:
        (tmp_path / "data/submitted/ann/ex1").mkdir(parents=True)
    assert command.main(["autograde", "ex1", "--workers=2"]) == 0
    assert handed == (started if submitted else [None]) and len(started) == submitted
    assert all(early.closed for early in started)
