"""One released copy of the course per test run, shared by the modules that read it or copy it
(grading, similarity, export), in every xdist worker: `make release` (nbgrader's
generate_assignment for every exercise, which imports torch) runs once, not once per module.

Nothing may change the shared copy: a test that grades, collects or releases again works on a
copy of its own (`copy_of`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

from grader import instructor

DONE = ".released"  # written last: a copy whose release failed half-way is built again


def shared_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course as `make release` leaves it, its student versions published to published/."""
    run_folder = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_folder = run_folder.parent  # each worker's basetemp is a folder of the run's
    course = run_folder / "released-course"
    with FileLock(f"{course}.lock"):
        if not (course / DONE).exists():
            shutil.rmtree(course, ignore_errors=True)
            instructor.copy_course(course)
            instructor.release(course, publish_to=course / "published")
            (course / DONE).touch()
    return course


def copy_of(released: Path, target: Path) -> Path:
    """A copy of the released course at target, to grade in (target may exist, empty)."""
    shutil.copytree(released, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
    return target
