"""The sandboxed grader (grader/safegrade) against hostile submissions, for real.

A tiny torch-free nbgrader assignment (tests/hostile/tiny_course.py) gets ~50 submissions
(tests/hostile/cases.py): honest ones, cheats, crashes, runaway code and broken files. Each must end
with its expected score and reason; afterwards the instructor's sources, the gradebook and every
submission must be byte-for-byte unchanged, and no process of the sandboxes may be left. One small
torch.fx assignment checks the real torch path, and a batch interrupted with Ctrl-C or SIGKILL must
resume without losing or duplicating a grade.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
sys.path.insert(0, str(ROOT))

import hostile_cases  # noqa: E402
import tiny_course  # noqa: E402
import torch_course  # noqa: E402

TIMEOUT = "3"  # seconds per test process: the endless loops wait this out
MEMORY_MB = "1024"


def safegrade(course: Path, *args: str, tag: str = "", **popen) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SAFEGRADE_TAG=tag or uuid.uuid4().hex)
    command = [sys.executable, "-m", "grader.safegrade", *args]
    return subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, **popen)


def tree_digest(path: Path) -> dict[str, str]:
    """Every file (and symlink target) under path, hashed."""
    digest = {}
    for item in sorted(path.rglob("*")):
        rel = str(item.relative_to(path))
        if item.is_symlink():
            digest[rel] = "link:" + os.readlink(item)
        elif item.is_file():
            digest[rel] = hashlib.sha256(item.read_bytes()).hexdigest()
    return digest


def gradebook_dump(db: Path) -> str:
    with sqlite3.connect(db) as connection:
        return "\n".join(connection.iterdump())


def result(course: Path, student: str, assignment: str = tiny_course.ASSIGNMENT) -> dict:
    return json.loads(result_path(course, student, assignment).read_text())


def result_path(course: Path, student: str, assignment: str = tiny_course.ASSIGNMENT) -> Path:
    return course / "autograded" / ".safegrade" / assignment / f"{student}.json"


def tagged_sandboxes(tag: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if tag in line and "bwrap" in line]


def sync_gradebook(course: Path, assignment: str) -> int:
    from grader.safegrade import gradebook
    from grader.safegrade.assignment import load_assignment
    from grader.safegrade.course import load_course

    here = Path.cwd()
    os.chdir(course)
    try:
        state = load_course()
        loaded = load_assignment(assignment, state.source(assignment))
        return gradebook.sync(state, loaded, gradebook.collect_results(state, assignment))
    finally:
        os.chdir(here)


# ----------------------------------------------------------------------------- the hostile batch


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    course = tmp_path_factory.mktemp("hostile_course")
    cases = hostile_cases.build_cases(course)
    tiny_course.make_course(course, {case.name: case.submission for case in cases})
    sync_gradebook(course, tiny_course.ASSIGNMENT)  # the gradebook exists before grading
    before = {
        "source": tree_digest(course / "source"),
        "submitted": tree_digest(course / "submitted"),
        "gradebook": gradebook_dump(course / "gradebook.db"),
        "gradebook_bytes": hashlib.sha256((course / "gradebook.db").read_bytes()).hexdigest(),
    }
    tag = uuid.uuid4().hex
    started = time.perf_counter()
    run = safegrade(
        course,
        "autograde",
        "tiny",
        "--workers=2",
        f"--timeout={TIMEOUT}",
        f"--memory-mb={MEMORY_MB}",
        "--no-sync",
        "--no-progress",
        tag=tag,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    print(run.stdout[-3000:], run.stderr[-3000:])
    return {
        "course": course,
        "cases": cases,
        "before": before,
        "run": run,
        "tag": tag,
        "s": seconds,
    }


def test_batch_finishes_and_prints_a_summary(hostile):
    run = hostile["run"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"{len(hostile['cases'])} submissions, {len(hostile['cases'])} graded now" in run.stdout
    print(f"graded {len(hostile['cases'])} hostile submissions in {hostile['s']:.1f} s")


@pytest.mark.parametrize("name", [c.name for c in hostile_cases.build_cases(Path("/x"))])
def test_hostile_submission_gets_its_score_and_reason(hostile, name):
    case = next(c for c in hostile["cases"] if c.name == name)
    got = result(hostile["course"], name)
    messages = {t["id"]: t["message"] for t in got["notebooks"]["tiny.ipynb"]["tests"]}
    assert got["status"] == "graded"
    assert got["score"] == case.score, (got["reason"], messages)
    assert case.reason in got["reason"], got["reason"]
    assert "\n" not in got["reason"]
    for test_id, text in (case.messages or {}).items():
        assert text in messages[test_id], messages


def test_sandbox_left_sources_gradebook_and_submissions_alone(hostile):
    course, before = hostile["course"], hostile["before"]
    assert tree_digest(course / "source") == before["source"]
    assert tree_digest(course / "submitted") == before["submitted"]
    assert gradebook_dump(course / "gradebook.db") == before["gradebook"]
    db_bytes = hashlib.sha256((course / "gradebook.db").read_bytes()).hexdigest()
    assert db_bytes == before["gradebook_bytes"]
    assert not (course / "CANARY-written-by-sandbox").exists()


def test_sandbox_could_not_see_the_instructors_files(hostile):
    """The spy's own report of what it tried (its answer cell's output, kept by the grader)."""
    cells = result(hostile["course"], "spy")["notebooks"]["tiny.ipynb"]["cells"]
    output = cells["add_all"]["stdout"]
    for probe in (
        "read-source",
        "read-sibling",
        "list-course",
        "read-gradebook",
        "write-canary",
        "list-repo",
        "network",
        "proc",
        "shadow",
        "userns",
        "mount",
    ):
        assert f"{probe} blocked:" in output, output
    assert "SUCCEEDED" not in output


def test_student_code_cannot_read_the_tests_frames(hostile):
    got = result(hostile["course"], "frame_peek")["notebooks"]["tiny.ipynb"]["tests"]
    for test in got:
        assert test["output"].count("blocked:") >= 2 and "peeked" not in test["output"], test


def test_no_sandbox_process_is_left(hostile):
    assert tagged_sandboxes(hostile["tag"]) == []
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"sleep {hostile_cases.sleeper_seconds(hostile['course'])}" not in ps


def test_outputs_are_capped(hostile):
    for name in ("giant_output", "giant_saved_output", "fork_bomb"):
        assert result_path(hostile["course"], name).stat().st_size < 150_000, name
    cells = result(hostile["course"], "giant_output")["notebooks"]["tiny.ipynb"]["cells"]
    assert "truncated" in cells["add_all"]["stdout"]


def test_warnings_are_reported_but_cost_nothing(hostile):
    got = result(hostile["course"], "warnings_and_stderr")
    assert got["score"] == 10
    warnings = got["notebooks"]["tiny.ipynb"]["warnings"]
    assert any("this is deprecated" in w for w in warnings), warnings


def test_one_worker_grades_the_same(hostile, tmp_path):
    """A serial run over a copy of the course gives every test the same outcome."""
    copy = tmp_path / "serial"  # rebuilt, not copied: copying would turn links into files
    cases = hostile_cases.build_cases(copy)
    tiny_course.make_course(copy, {case.name: case.submission for case in cases})
    run = safegrade(
        copy,
        "autograde",
        "tiny",
        "--workers=1",
        "--force",
        f"--timeout={TIMEOUT}",
        f"--memory-mb={MEMORY_MB}",
        "--no-sync",
        "--no-progress",
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    for case in hostile["cases"]:
        parallel, serial = result(hostile["course"], case.name), result(copy, case.name)
        outcome = [
            (t["id"], t["passed"], t["kind"]) for t in parallel["notebooks"]["tiny.ipynb"]["tests"]
        ]
        again = [
            (t["id"], t["passed"], t["kind"]) for t in serial["notebooks"]["tiny.ipynb"]["tests"]
        ]
        assert (parallel["score"], outcome) == (serial["score"], again), case.name


def test_feedback_names_failures_but_never_shows_hidden_tests(hostile):
    course = hostile["course"]
    run = safegrade(course, "feedback", "tiny", timeout=120)
    assert run.returncode == 0, run.stderr
    hidden = (tiny_course.SECRET_MARK, "math.isclose(value, 8.5)", "add_all([10, -2, 0.5])")
    for case in hostile["cases"]:
        page = (course / "feedback" / case.name / "tiny" / "feedback.html").read_text()
        notebook = (course / "autograded" / case.name / "tiny" / "tiny.ipynb").read_text()
        own = b"".join(
            p.read_bytes() for p in (course / "submitted" / case.name).rglob("*") if p.is_file()
        )
        for text in hidden:
            if text.encode() not in own:  # a learner may quote what they already know
                assert text not in page and text not in notebook, (case.name, text)
    page = (course / "feedback" / "wrong" / "tiny" / "feedback.html").read_text()
    assert "test_basic" in page and "should be 3" in page


def grades_per_student(gradebook: Path) -> list[tuple[str, float, int, int]]:
    """(student, total auto score, grade rows, rows needing manual grading) from nbgrader's db."""
    with sqlite3.connect(gradebook) as db:
        return db.execute(
            "select s.student_id, sum(g.auto_score), count(*), sum(g.needs_manual_grade) "
            "from grade g join submitted_notebook n on g.notebook_id = n.id "
            "join submitted_assignment s on n.assignment_id = s.id group by s.student_id"
        ).fetchall()


def test_gradebook_gets_the_scores_once_and_idempotently(hostile):
    course = hostile["course"]
    assert sync_gradebook(course, "tiny") == len(hostile["cases"])
    first = gradebook_dump(course / "gradebook.db")
    scores = {
        student: (total, count, manual)
        for student, total, count, manual in grades_per_student(course / "gradebook.db")
    }
    assert set(scores) == {case.name for case in hostile["cases"]}
    for case in hostile["cases"]:
        assert scores[case.name] == (case.score, 3, 0), case.name
    # Again: nothing regraded, nothing changed.
    results = {c.name: result(course, c.name) for c in hostile["cases"]}
    limits = (f"--timeout={TIMEOUT}", f"--memory-mb={MEMORY_MB}")
    run = safegrade(course, "autograde", "tiny", *limits, "--no-sync", timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"0 graded now, {len(hostile['cases'])} unchanged" in run.stdout
    assert {c.name: result(course, c.name) for c in hostile["cases"]} == results
    sync_gradebook(course, "tiny")
    assert gradebook_dump(course / "gradebook.db") == first


# ----------------------------------------------------------------------------- torch


def test_real_torch_assignment(tmp_path):
    source = torch_course.source_notebook()
    release = tiny_course.release_notebook(source)
    answers = {
        "correct": (torch_course.CORRECT, 10, "all 3 tests passed"),
        "noisy": (torch_course.NOISY, 10, "all 3 tests passed"),
        "tensor_liar": (torch_course.TENSOR_LIAR, 0, "return the GraphModule"),
        "torch_patcher": (torch_course.TORCH_PATCHER, 0, "was replaced"),
    }
    submissions = {
        name: tiny_course.with_answer(code, release, "answer")
        for name, (code, _, _) in answers.items()
    }
    course = tiny_course.make_course(tmp_path, submissions, source, torch_course.ASSIGNMENT)
    run = safegrade(
        course, "autograde", "fxmini", "--workers=2", "--timeout=60", "--no-sync", timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    for name, (_, score, reason) in answers.items():
        got = result(course, name, torch_course.ASSIGNMENT)
        assert (got["score"], reason in got["reason"]) == (score, True), got["reason"]
    liar = result(course, "tensor_liar", torch_course.ASSIGNMENT)["notebooks"]["fxmini.ipynb"]
    assert "overrides __torch_function__" in liar["tests"][1]["message"]
    noisy = result(course, "noisy", torch_course.ASSIGNMENT)["notebooks"]["fxmini.ipynb"]
    assert any("relu_to_sigmoid is deprecated" in w for w in noisy["warnings"])


# ----------------------------------------------------------------------------- interruptions

SLOW = tiny_course.CORRECT + "import time\ntime.sleep(0.6)\n"
STUDENTS = [f"student{i}" for i in range(4)]


def _slow_course(path: Path) -> Path:
    answers = {s: tiny_course.with_answer(SLOW) for s in STUDENTS}
    return tiny_course.make_course(path, answers)


def _start(course: Path, tag: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SAFEGRADE_TAG=tag)
    command = [sys.executable, "-m", "grader.safegrade", "autograde", "tiny", "--workers=1"]
    return subprocess.Popen(
        command + ["--no-progress", *extra],
        cwd=course,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_results(course: Path, count: int, limit: float = 120) -> list[Path]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = sorted(course.glob("autograded/.safegrade/tiny/*.json"))
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} results after {limit} s")


def _wait_until_gone(tag: str, limit: float = 20) -> None:
    deadline = time.monotonic() + limit
    while tagged_sandboxes(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tagged_sandboxes(tag) == []


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_interrupted_batch_resumes_without_losing_or_duplicating(tmp_path, how):
    course = _slow_course(tmp_path)
    tag = uuid.uuid4().hex
    extra = ("--no-sync",) if how == "sigkill" else ()
    grader = _start(course, tag, *extra)
    done = _wait_for_results(course, 1)
    grader.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
    out, err = grader.communicate(timeout=120)
    _wait_until_gone(tag)
    if how == "ctrl-c":
        assert grader.returncode == 130, err[-2000:]
        assert "INTERRUPTED" in out
    kept = {path: path.read_bytes() for path in course.glob("autograded/.safegrade/tiny/*.json")}
    assert 1 <= len(kept) < len(STUDENTS), "interrupt earlier: the batch had finished"
    assert not list(course.glob("autograded/.safegrade/tiny/.*")), "a half-written result"
    assert done[0] in kept

    rerun = safegrade(course, "autograde", "tiny", "--workers=1", "--no-progress", timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"{len(kept)} unchanged (kept)" in rerun.stdout
    for path, data in kept.items():
        assert path.read_bytes() == data, "a finished grade was redone"
    for student in STUDENTS:
        assert result(course, student)["score"] == 10
    per_student = [
        (student, count, total)
        for student, total, count, _ in grades_per_student(course / "gradebook.db")
    ]
    assert sorted(per_student) == [(s, 3, 10.0) for s in STUDENTS]
