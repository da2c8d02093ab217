"""The Course (grader/course.py): built once from the course's course.json and the environment,
it is what every instructor step and nbgrader's configuration read the course's folders from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fxcourse import workspace
from grader.course import REPOSITORY, Course
from grader.instructor import copy_course

ROOT = Path(__file__).resolve().parents[1]


def test_the_class_data_is_where_course_json_or_the_environment_puts_it(tmp_path):
    (tmp_path / "course.json").write_text(json.dumps({"course_id": "c1", "classdata": "data"}))
    course = Course.configured(tmp_path, environ={})
    assert (course.course_id, course.submitted) == ("c1", tmp_path / "data" / "submitted")
    assert course.secret == tmp_path / "data" / "autograded" / ".safegrade_secret"
    moved = Course.configured(tmp_path, environ={"FXCOURSE_CLASSDATA": "elsewhere"})
    assert moved.gradebook == tmp_path / "elsewhere" / "gradebook.db"
    elsewhere = tmp_path.parent / f"{tmp_path.name}-data"  # outside the course
    outside = Course.configured(tmp_path, environ={"FXCOURSE_CLASSDATA": str(elsewhere)})
    assert outside.results == elsewhere / "autograded" / ".safegrade"
    assert outside.relative(outside.release) == elsewhere / "release"  # stays absolute
    assert course.relative(course.release) == Path("data/release")


def test_a_folder_without_course_json_is_this_repositorys_course(tmp_path):
    bare, here = Course.configured(tmp_path, environ={}), Course.configured(REPOSITORY, environ={})
    assert bare.course_id == here.course_id and bare.classdata == here.classdata
    assert bare.exercises == () and here.exercises  # its exercises are its solutions/' only


def test_the_learners_side_finds_the_instructors_course_and_exchange(tmp_path, monkeypatch):
    """Both sides read course.json with fxcourse.course_file: the learner's package imports no
    grader, and its workspace still submits to the exchange the instructor collects from."""
    (tmp_path / "grader").mkdir()  # a course, not a student edition
    (tmp_path / "course.json").write_text(json.dumps({"course_id": "c2", "classdata": "data"}))
    monkeypatch.delenv("FXCOURSE_EXCHANGE", raising=False)
    for moved in (None, "elsewhere", str(tmp_path.parent / f"{tmp_path.name}-data")):
        if moved:
            monkeypatch.setenv("FXCOURSE_CLASSDATA", moved)
        else:
            monkeypatch.delenv("FXCOURSE_CLASSDATA", raising=False)
        course = Course.configured(tmp_path)
        assert workspace.exchange_root(tmp_path) == course.exchange, moved
    shared = tmp_path / "shared-exchange"  # `make lab` on a hub: its FXCOURSE_EXCHANGE wins
    hub = {"FXCOURSE_EXCHANGE": str(shared)}
    assert workspace.exchange_root(tmp_path, hub) == shared
    assert Course.configured(tmp_path, environ=hub).exchange == shared  # the instructor's too
    assert workspace.course_file.settings(tmp_path)["course_id"] == course.course_id == "c2"
    source = (ROOT / "fxcourse" / "workspace.py").read_text()
    assert "grader" not in {
        line.split()[1].split(".")[0]
        for line in source.splitlines()
        if line.startswith(("import ", "from "))
    }


def test_nbgrader_reads_the_course_of_its_own_course_json(tmp_path):
    """A course copy whose course.json names another id and class data folder: nbgrader's
    configuration there (grader/nbgrader_config.py) follows it, without any variable set."""
    course = copy_course(tmp_path / "course", [])
    (course / "course.json").write_text(json.dumps({"course_id": "c2", "classdata": "term2"}))
    show = (
        "from nbgrader.apps.baseapp import NbGrader\n"
        "app = NbGrader()\napp.initialize([])\nd = app.coursedir\n"
        "print(d.course_id, d.submitted_directory, d.db_url)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXCOURSE_")}
    done = subprocess.run(
        [sys.executable, "-c", show], cwd=course, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    course_id, submitted, db_url = done.stdout.split()[-3:]
    assert (course_id, submitted) == ("c2", "term2/submitted")
    assert db_url == f"sqlite:///{course.resolve() / 'term2' / 'gradebook.db'}"


def test_nbgrader_uses_the_exchange_and_gradebook_of_the_course(tmp_path):
    """FXCOURSE_EXCHANGE and FXCOURSE_GRADEBOOK_URL are read once, by Course.configured: nbgrader's
    configuration takes the Course's exchange and gradebook, so the two never differ."""
    course = copy_course(tmp_path / "course", [])
    moved = {"FXCOURSE_EXCHANGE": str(tmp_path / "hub-exchange")}
    moved["FXCOURSE_GRADEBOOK_URL"] = f"sqlite:///{tmp_path / 'scratch.db'}"
    show = (
        "from nbgrader.apps.baseapp import NbGrader\n"
        "app = NbGrader()\napp.initialize([])\n"
        "print(app.config.Exchange.root, app.coursedir.db_url)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXCOURSE_")} | moved
    done = subprocess.run(
        [sys.executable, "-c", show], cwd=course, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    configured = Course.configured(course, environ=moved)
    assert done.stdout.split()[-2:] == [str(configured.exchange), configured.gradebook_url]
    assert configured.exchange == tmp_path / "hub-exchange" and configured.exchange.is_dir()
    plain = Course.configured(course, environ={})
    assert plain.gradebook_url == f"sqlite:///{plain.gradebook}"
