"""make autograde starts its sandboxes before it reads the course's configuration (Pool.early):
each imports torch meanwhile and serves nothing until settle() gives it the course's imports and
limits, after checking the paths no sandbox may see; the sandboxes past the batch's size, and
all of them when that check fails, are stopped."""

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
