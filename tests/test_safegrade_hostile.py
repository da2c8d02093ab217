"""The sandboxed grader against hostile, broken and honest submissions, for real.

A tiny torch-free course (tests/hostile/tiny_course.py) gets about fifty submissions
(tests/hostile/hostile_cases.py), graded in one batch as `make autograde` grades them. Each must
end with its expected score and reason; the course's sources and the submissions must be left
as they were, the gradebook must hold exactly the expected scores, no process may be left
behind, and a second run must change nothing. A batch interrupted with Ctrl-C or SIGKILL must
resume without losing or redoing a grade. nbgrader's own commands (feedback, release_feedback,
the formgrader's Autograde call) work on what the batch wrote.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))

import hostile_cases  # noqa: E402
import tiny_course  # noqa: E402

from grader.course import Course  # noqa: E402
from grader.safegrade import worker  # noqa: E402
from grader.safegrade.records import read_records  # noqa: E402
from grader.safegrade.visibility import python_folders  # noqa: E402
from grader.tools.bench import scores  # noqa: E402

# The tests that read one graded course share its worker; the others grade courses of their own
# and go to whichever worker is free (one group of them all kept one worker busy for minutes).
HOSTILE_BATCH = pytest.mark.xdist_group("safegrade-hostile")
ONE_SANDBOX = pytest.mark.xdist_group("safegrade-one-sandbox")
# VmHWM, not getrusage: ru_maxrss would count the pytest process this one was forked from.
MEASURED = (
    "import sys\nfrom grader.safegrade.__main__ import main\nstatus = main(sys.argv[1:])\n"
    "peak = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
    "print('peak-rss-kb', peak)\nsys.exit(status)\n"
)


def autograde(course: Path, *args: str, **popen) -> subprocess.CompletedProcess:
    """`make autograde`'s grading step on the course; prints the grader's peak memory."""
    env = popen.pop("env", None) or dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", MEASURED, "autograde", *args]
    return subprocess.run(command, cwd=course, env=env, capture_output=True, text=True, **popen)


def graded_scores(course: Path) -> dict[str, float]:
    """student -> the gradebook's score of their tiny submission (read as the bench reads it)."""
    return scores(Course(course, "tiny-course", Path(".")), tiny_course.ASSIGNMENT)


def tree_digest(path: Path) -> dict[str, str]:
    """Every entry under path: files hashed, links by target, anything else by its type."""
    digest = {}
    for item in sorted(Path(path).rglob("*")):
        info = item.lstat()
        if stat.S_ISLNK(info.st_mode):
            digest[str(item)] = "link:" + os.readlink(item)
        elif stat.S_ISREG(info.st_mode):
            digest[str(item)] = hashlib.sha256(item.read_bytes()).hexdigest()
        else:
            digest[str(item)] = f"mode:{stat.S_IFMT(info.st_mode)}"
    return digest


def result(course: Path, student: str) -> dict:
    return json.loads(
        (course / "autograded" / ".safegrade" / "tiny" / f"{student}.json").read_text()
    )


def printed(course: Path, student: str, cell: str | None = None) -> str:
    """What the learner's code printed (in `cell`, or anywhere), in the autograded notebook."""
    nb = json.loads((course / "autograded" / student / "tiny" / "tiny.ipynb").read_text())
    cells = [c for c in nb["cells"] if cell in (None, hostile_cases.grade_id(c))]
    return "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", []))


class Listener:
    """A TCP listener on the host's loopback that records every connection it accepts."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()


@pytest.fixture(scope="module")
def listener():
    found = Listener()
    yield found
    found.socket.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, listener):
    course = tiny_course.make_course(tmp_path_factory.mktemp("hostile"))
    cases = hostile_cases.build_cases(course, listener.port)
    for case in cases:
        tiny_course.add_submission(course, case.name, case.submission)
    before = {name: tree_digest(course / name) for name in ("solutions", "submitted", "release")}
    run = autograde(course, "--workers=2", timeout=900)
    print(run.stdout[-5000:], run.stderr[-3000:])
    return {"course": course, "cases": cases, "before": before, "run": run}


@HOSTILE_BATCH
def test_every_submission_gets_a_score_and_one_line_reason(hostile):
    run, cases = hostile["run"], hostile["cases"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"{len(cases)} submissions, 0 unchanged" in run.stdout
    assert "| running:" in run.stdout, "the progress line names the submissions still running"
    summary = run.stdout.split("safegrade: scores")[1]
    for case in cases:
        assert "\n" not in result(hostile["course"], case.name)["reason"], case.name
        assert f"  {case.name}  tiny  " in summary, case.name
    plain = "could not be graded: the notebook is cut off or corrupt: ask for a new upload"
    assert f"\n  invalid_json  tiny  {plain}\n" in summary  # no "0:", no parser's words


@HOSTILE_BATCH
@pytest.mark.parametrize("case", hostile_cases.build_cases(Path("/course")), ids=lambda c: c.name)
def test_hostile_submission_gets_its_score_and_reason(hostile, case):
    got = result(hostile["course"], case.name)
    assert (got["score"], case.reason in got["reason"]) == (case.score, True), got["reason"]


@HOSTILE_BATCH
def test_nothing_outside_the_submissions_changed(hostile):
    course = hostile["course"]
    for name, digest in hostile["before"].items():
        assert tree_digest(course / name) == digest, f"{name}/ changed"
    assert not (course / "CANARY").exists()
    expected = {case.name: case.score for case in hostile["cases"]}
    recorded = graded_scores(course)
    assert {s: recorded.get(s, 0.0) for s in expected} == expected


@HOSTILE_BATCH
def test_the_sandbox_saw_none_of_the_course(hostile, listener):
    output = printed(hostile["course"], "spy", "add_all")
    for label in ("read-checks", "read-source", "read-sibling", "read-gradebook", "write-canary"):
        assert f"{label} blocked: FileNotFoundError" in output, output
    assert "network blocked: " in output and listener.accepted == 0, output
    assert "proc-environ blocked: PermissionError" in output, output
    for label in ("userns", "mount", "ptrace"):
        assert f"{label} blocked: Operation not permitted" in output, output
    assert "SUCCEEDED" not in output


@pytest.fixture(scope="module")
def feedback(hostile) -> list[Path]:
    """`make feedback` (nbgrader's generate_feedback) on the whole batch, once: its pages."""
    tiny_course.nbgrader(hostile["course"], "generate_feedback", "tiny")
    return list((hostile["course"] / "feedback").rglob("*.html"))


@HOSTILE_BATCH
def test_hidden_checks_never_reach_a_learner(hostile, feedback):
    course = hostile["course"]
    # The walk finds the probes' text (shipped into the sandbox), never the checks'.
    assert "probes True checks False" in printed(course, "frame_and_gc_walk")
    assert "read the checks" not in printed(course, "reads_the_checks")
    assert "no: FileNotFoundError" in printed(course, "reads_the_checks")
    assert len(feedback) >= 30
    for page in feedback:
        text = page.read_text(errors="replace")
        mine = course / "submitted" / page.parent.parent.name  # a learner may quote the mark
        own = (p.read_bytes() for p in mine.rglob("*") if p.is_file() and not p.is_symlink())
        if not any(tiny_course.SECRET_MARK.encode() in data for data in own):
            assert tiny_course.SECRET_MARK not in text, page
        assert "run_check" not in text, page
    page = (course / "feedback" / "wrong" / "tiny" / "tiny.html").read_text()
    assert "add_all([1, 2]) should be 3" in page
    tangled = (course / "feedback" / "tangled_markup" / "tiny" / "tiny.html").read_text()
    assert "Shown as text: it is 330004 characters long" in tangled  # 30,000 nested divs
    assert "passed 100000 characters" in tangled and len(tangled) < 1_000_000


@HOSTILE_BATCH
def test_feedback_on_tangled_markup_takes_seconds(hostile):
    """nbgrader's generate_feedback (make feedback) on the notebook of 30,000 nested divs, a
    20,000-row table and 300,000 printed '<' alone, and on an honest one (the formgrader's
    exporter is test_learner_html's): printed side by side, they differ by seconds, not the
    minutes bleach and nbconvert's page parser took (a time budget is not asserted)."""
    course, seconds = hostile["course"], {}
    for student in ("correct", "tangled_markup"):
        started = time.monotonic()
        tiny_course.nbgrader(course, "generate_feedback", "tiny", f"--student={student}", "--force")
        seconds[student] = time.monotonic() - started
    print("feedback seconds: " + ", ".join(f"{s} {t:.1f}" for s, t in seconds.items()))
    page = course / "feedback" / "tangled_markup" / "tiny" / "tiny.html"
    assert "Shown as text" in page.read_text()


@HOSTILE_BATCH
def test_no_process_is_left_and_outputs_are_capped(hostile):
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 4321" not in ps and "sleep 4322" not in ps
    giant = hostile["course"] / "autograded" / "giant_output" / "tiny" / "tiny.ipynb"
    assert giant.stat().st_size < 200_000
    assert "truncated" in printed(hostile["course"], "giant_output", "add_all")


@HOSTILE_BATCH
def test_the_graders_memory_stays_bounded(hostile):
    """many_tiny_outputs is a 600,000-output notebook: read whole it would take gigabytes."""
    peak = peak_kb(hostile["run"])
    print(f"grader peak RSS: {peak / 1024:.0f} MiB")
    assert peak < 400 * 1024


def peak_kb(run: subprocess.CompletedProcess) -> int:
    return int(run.stdout.rsplit("peak-rss-kb", 1)[1].split()[0])


@pytest.mark.end_to_end
def test_the_graders_memory_grows_by_at_most_its_stated_bound(tmp_path):
    """One worker grades an honest class, then the same class with submissions that send as
    much as the caps let through (hostile_cases.memory_cases: record frames of eleven million
    values, a flood of output, notebooks at the size and value caps): the grading process's
    peak grows by no more than the bound make autograde prints."""
    from grader.safegrade.grading_limits import LIMITS, MiB

    runs = {}
    for name, cases in (("honest", []), ("at_the_caps", hostile_cases.memory_cases())):
        # cells that build frames at the caps take seconds on a loaded machine: this test is
        # about memory, so their time limits are wide (a timeout would hide the frames' check)
        course = tiny_course.make_course(tmp_path / name, cell_timeout=20, budget=60)
        for student in ("honest", "honest_too"):
            tiny_course.add_submission(
                course, student, tiny_course.with_answer(tiny_course.CORRECT)
            )
        for case in cases:
            tiny_course.add_submission(course, case.name, case.submission)
        runs[name] = autograde(course, "--workers=1", timeout=900)
        assert runs[name].returncode == 0, runs[name].stderr[-3000:]
        for case in cases:
            got = result(course, case.name)
            assert (got["score"], case.reason in got["reason"]) == (case.score, True), got
    flood = course / "autograded" / "m_output_flood" / "tiny" / "tiny.ipynb"
    assert flood.stat().st_size < 4 * LIMITS.records_text_chars + (1 << 20)
    grown, bound = (
        peak_kb(runs["at_the_caps"]) - peak_kb(runs["honest"]),
        LIMITS.grading_memory_bytes(),
    )
    print(f"grader peak: {peak_kb(runs['honest']) >> 10} MiB honest, grown by {grown >> 10} MiB")
    assert f"grows by at most {bound // MiB} MiB per worker" in runs["at_the_caps"].stdout
    assert grown << 10 <= bound


@HOSTILE_BATCH
def test_a_second_run_changes_nothing(hostile):
    course = hostile["course"]
    before = {name: tree_digest(course / name) for name in ("autograded", "submitted")}
    with sqlite3.connect(course / "gradebook.db") as db:
        dump = "\n".join(db.iterdump())
    again = autograde(course, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(hostile['cases'])} unchanged (kept)" in again.stdout
    assert {name: tree_digest(course / name) for name in before} == before
    with sqlite3.connect(course / "gradebook.db") as db:
        assert "\n".join(db.iterdump()) == dump


@HOSTILE_BATCH
def test_nbgrader_feedback_release_and_the_formgraders_autograde(hostile, feedback):
    course = hostile["course"]
    (course / "exchange").mkdir()
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"c.Exchange.root = {str(course / 'exchange')!r}\n")
    tiny_course.nbgrader(course, "release_feedback", "tiny")
    assert list((course / "exchange").rglob("*.html")), "release_feedback released nothing"
    button = (
        "from nbgrader.apps.api import NbGraderAPI\nfrom nbgrader.apps.baseapp import NbGrader\n"
        "app = NbGrader()\napp.initialize([])\napp.load_config_file()\n"
        "print(NbGraderAPI(app.coursedir, parent=app).autograde('tiny', 'wrong')['success'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", button], cwd=course, capture_output=True, text=True
    )
    assert done.stdout.strip().endswith("True"), done.stdout[-2000:] + done.stderr[-2000:]
    assert graded_scores(course)["wrong"] == 0


SNOOP = """
found = {"seen": 0, "read": 0, "hits": [], "site": False}


def under(path, folders):
    return any(path == f or path.startswith(f + "/") for f in folders)


def look(path):
    found["seen"] += 1
    found["site"] |= path == "/opt/safegrade/grader/safegrade/worker.py"
    named = os.path.basename(path) in NAMES and not under(path, [*INSTALLED, "/tmp/work"])
    if named or under(path, FORBIDDEN):
        found["hits"].append(path)


def read(path):
    try:
        if os.path.islink(path) or os.path.getsize(path) > 262144:
            return
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return
    found["read"] += 1
    found["hits"] += [f"{path} holds {mark}" for mark in MARKS if mark.encode() in data]


for top, dirs, files in os.walk("/"):
    if top == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in dirs + files:
        look(os.path.join(top, name))
    for name in files if not under(top, ["/usr", *INSTALLED]) else []:
        read(os.path.join(top, name))
found["top"] = sorted(os.listdir("/"))
found["checkout"] = sorted(os.listdir(CHECKOUT)) if os.path.isdir(CHECKOUT) else None
print("snooped", json.dumps(found)[:15000])
"""
SYSTEM_TOP = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}


def test_a_snooping_submission_finds_no_course_data_or_checkout(tmp_path):
    """Graded by a venv that is an editable install of another checkout (this one), a submission
    that walks / (but /proc, /sys and /dev) and reads every file it can outside /usr and the
    Python installation finds no course, no class data (gradebook, grading secret, another
    submission), no source tree of the course or of the checkout: only the system, the
    installation, the grader's installed sandbox package and its own files."""
    from test_safegrade import editable_sources

    sources, installation = editable_sources(), [Path(f) for f in python_folders()]
    assert sources and not any(Path(s).is_relative_to(tmp_path) for s in sources)
    course = tiny_course.make_course(tmp_path / "course", cell_timeout=60, budget=120)
    grading_secret = "GRADING-SECRET-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()
    (course / "autograded").mkdir()
    (course / "autograded" / ".safegrade_secret").write_text(grading_secret)
    victim = "# VICTIM-ANSWER-MARK\n" + tiny_course.CORRECT
    tiny_course.add_submission(course, "a_victim", tiny_course.with_answer(victim))
    checkout = [  # the checkout's folders but one that holds the venv (shown: the prefix)
        str(p) for p in ROOT.iterdir() if not any(f.is_relative_to(p) for f in installation)
    ]
    names = ["gradebook.db", ".safegrade_secret", "submission_secret.txt", "checks.py"]
    given = {
        "FORBIDDEN": sorted({str(course.resolve()), *checkout, *sources}),
        "NAMES": [*names, tiny_course.NOTEBOOK],
        "MARKS": [tiny_course.SECRET_MARK, grading_secret, "VICTIM-ANSWER-MARK"],
        "CHECKOUT": str(ROOT),
        "INSTALLED": [str(f) for f in installation],
    }
    code = "import json, os\n" + "".join(f"{k} = {v!r}\n" for k, v in given.items())
    code += SNOOP + hostile_cases.WRONG
    tiny_course.add_submission(course, "snoop", tiny_course.with_answer(code))
    run = autograde(course, "--workers=1", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert result(course, "a_victim")["score"] == 10, "the victim is graded (its data exists)"
    output = printed(course, "snoop", "add_all")
    found = json.loads(output.split("snooped ", 1)[1].split("\n")[0])
    assert found["seen"] > 1000 and found["read"] > 20 and found["site"], output[:3000]
    assert found["hits"] == [], found["hits"]
    holding_venv = {f.relative_to(ROOT).parts[0] for f in installation if f.is_relative_to(ROOT)}
    assert found["checkout"] == (sorted(holding_venv) if holding_venv else None), found
    tops = SYSTEM_TOP | {"tmp", "opt"} | {f.parts[1] for f in installation}
    assert set(found["top"]) <= tops, found["top"]


def test_failures_are_put_where_they_belong(tmp_path):
    """A sandbox that cannot start is the grader's failure: reported so, not kept. A re-upload
    that cannot be graded leaves no earlier grade or feedback behind."""
    course = tiny_course.make_course(tmp_path)
    folder = tiny_course.add_submission(course, "s", tiny_course.with_answer(tiny_course.CORRECT))
    assert autograde(course).returncode == 0
    tiny_course.nbgrader(course, "generate_feedback", "tiny")
    assert graded_scores(course) == {"s": 10.0}
    (folder / tiny_course.NOTEBOOK).write_bytes(b"{not json")
    assert autograde(course).returncode == 0
    got = result(course, "s")
    assert got["reason"].startswith("could not be graded: the notebook is cut off or corrupt")
    assert "NotJSONError" in got["detail"] or "JSONDecodeError" in got["detail"], got
    assert graded_scores(course).get("s", 0) == 0
    for kept in ("feedback", "autograded"):
        assert not (course / kept / "s" / "tiny").exists(), kept
    tiny_course.nbgrader(course, "export")
    with (course / "grades.csv").open() as grades:
        rows = [row for row in csv.DictReader(grades) if row["student_id"] == "s"]
    assert all(float(row["score"]) == 0 for row in rows), rows
    # The same through plain `nbgrader autograde` (what the formgrader's button runs).
    correct = tiny_course.with_answer(tiny_course.CORRECT)
    (folder / tiny_course.NOTEBOOK).write_text(json.dumps(correct))
    for step in (["autograde", "tiny", "--force"], ["generate_feedback", "tiny", "--force"]):
        tiny_course.nbgrader(course, *step)
    assert graded_scores(course) == {"s": 10.0}
    (folder / tiny_course.NOTEBOOK).write_bytes(b"{not json")
    failed = subprocess.run(
        [sys.executable, "-m", "nbgrader", "autograde", "tiny", "--force"],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failed.returncode != 0 and "JSONDecodeError" in failed.stderr, failed.stderr[-2000:]
    earlier = graded_scores(course).get("s", 0)
    assert earlier == 0, f"the earlier upload's grade outlived it: {earlier}"
    for kept in ("feedback", "autograded"):
        assert not (course / kept / "s" / "tiny").exists(), kept
    no_bwrap = str(Path(sys.executable).parent)  # bubblewrap cannot be found: no sandbox starts
    (folder / tiny_course.NOTEBOOK).write_text(json.dumps(tiny_course.with_answer("x = 1")))
    run = autograde(course, env=dict(os.environ, PYTHONPATH=str(ROOT), PATH=no_bwrap))
    got = result(course, "s")
    assert got["status"] == "grader-error" and "the grader failed" in got["reason"], got
    assert got["score"] is None  # no score recorded: 0 would say the submission earned it
    assert "bubblewrap" in got["reason"] and run.returncode == 0
    again = autograde(course)
    assert "0 unchanged" in again.stdout and result(course, "s")["status"] == "graded"


def test_a_student_folder_named_like_a_pattern_is_never_handed_to_nbgrader(tmp_path):
    """nbgrader matches a student id, then the folder it found, as file patterns: a folder
    "[a-c]*" would be graded as its classmates, "dee [ta]" as nobody (intake refuses such
    ids; these were put in place by hand). Each is reported as not graded, saying what to do;
    every classmate is graded once, as themselves, and gets feedback and a row of the export
    of their own; the export says which uploads could not be graded."""
    course = tiny_course.make_course(tmp_path)
    for student in ("ann", "bob", "[a-c]*", "dee [ta]", "eve?"):
        answer = tiny_course.CORRECT if student.isalpha() else hostile_cases.WRONG
        tiny_course.add_submission(course, student, tiny_course.with_answer(answer))
    run = autograde(course, "--workers=1")
    assert run.returncode == 0, run.stderr[-3000:]
    assert graded_scores(course) == {"ann": 10.0, "bob": 10.0}
    for student in ("[a-c]*", "dee [ta]", "eve?"):
        got = result(course, student)
        assert got["status"] == "error" and "reads as a file pattern: rename" in got["reason"]
    graded = re.findall(r"^\[\d/5\] tiny/(.+?): ", run.stdout, re.MULTILINE)
    assert sorted(graded) == sorted(["ann", "bob", "[a-c]*", "dee [ta]", "eve?"]), run.stdout
    tiny_course.nbgrader(course, "generate_feedback", "tiny", "--force")
    pages = {page.parent.parent.name for page in (course / "feedback").glob("*/tiny/*.html")}
    assert pages == {"ann", "bob"}
    assert exported(course) == {
        "ann": "10",
        "bob": "10",
        **dict.fromkeys(["[a-c]*", "dee [ta]", "eve?"], "could not grade"),
    }


def exported(course: Path) -> dict[str, str]:
    """student id -> their cell of the tiny course's grades.csv (make export's writer)."""
    from grader import grades_export

    where = grades_export.Where(
        gradebook_url=f"sqlite:///{course / 'gradebook.db'}",
        course_id="tiny-course",
        assignments=("tiny",),
        results=course / "autograded" / ".safegrade",
        sources=course / "solutions",
    )
    out = grades_export.write(where, course / "export" / "grades.csv", ["tiny"])
    with out.open(newline="") as handle:
        return {row["student_id"]: row["tiny"] for row in csv.DictReader(handle)}


SNOOPING_CHECKS = """import os

TARGETS = {targets!r}


def found():
    seen = []
    for path in TARGETS:
        try:
            seen.append((path, os.listdir(path) if os.path.isdir(path) else open(path).read(40)))
        except OSError:
            pass
    return seen


def inputs(grade_id, seed):
    return {{"empty": []}} if grade_id == "test_hidden" else [1, 2]


def test_basic(value, inputs):
    raise AssertionError(f"the check process found {{found()}}")


test_helper = test_hidden = test_basic
"""


def test_a_check_finds_no_secret_gradebook_or_other_submission(tmp_path):
    """Checks run in a check process of the submission's own: a check that looks for the
    grading secret, the gradebook, the course and other submissions (what a hole in the graph
    builder would let a learner's description do) finds nothing, and says so in the reason."""
    course = tiny_course.make_course(tmp_path)
    for student in ("victim", "snooper"):
        tiny_course.add_submission(course, student, tiny_course.with_answer(tiny_course.CORRECT))
    secret = course / "autograded" / ".safegrade_secret"
    targets = [str(p) for p in (course, secret, course / "gradebook.db", course / "submitted")]
    targets += [str(course / "submitted" / "victim"), str(course / "solutions"), "/proc/1/environ"]
    checks = SNOOPING_CHECKS.format(targets=targets)
    (course / "solutions" / tiny_course.ASSIGNMENT / "checks.py").write_text(checks)
    assert autograde(course, "--workers=1").returncode == 0
    assert secret.exists()
    for student in ("victim", "snooper"):
        assert "the check process found []" in result(course, student)["reason"]


SLOW_CHECKS = """import time


def inputs(grade_id, seed):
    return {"empty": []} if grade_id == "test_hidden" else [1, 2, 3]


def test_basic(value, numbers):
    time.sleep(600)


def test_helper(value, numbers):
    assert value == 6, "check_sum failed"


def test_hidden(data, cases):
    assert data["empty"] == 0, "empty list"
"""


def test_a_check_over_the_cell_timeout_fails_its_own_test_only(tmp_path):
    """A check that runs past the cell timeout (data that makes a check slow, such as a graph
    whose nodes sleep) fails its own test with CheckTimeout; the check process lives on and
    judges the submission's other tests."""
    course = tiny_course.make_course(tmp_path)
    tiny_course.add_submission(course, "s", tiny_course.with_answer(tiny_course.CORRECT))
    (course / "solutions" / tiny_course.ASSIGNMENT / "checks.py").write_text(SLOW_CHECKS)
    assert autograde(course, "--workers=1").returncode == 0
    got = result(course, "s")
    assert got["score"] == 7 and "test_basic: CheckTimeout" in got["reason"], got["reason"]


def test_a_replaced_sandbox_serves_the_next_submission(tmp_path):
    """A stopped sandbox starts again (as after a failure) and serves the next submission."""
    from grader.safegrade.sandbox import Limits, Sandbox

    box = Sandbox([], [str(tmp_path)], Limits(budget=20, cell_timeout=10, memory_mb=1024))
    job = {"cells": [{"code": "x = 41"}, {"probe": "t", "inputs": 0}], "files": {}, "nonce": "n"}
    job["probes"] = "def t(namespace, one):\n    return namespace['x'] + one\n"
    try:
        for _ in range(4):
            reply = box.run(job, [b"1"])  # the inputs: blob 0
            assert bytes(read_records(reply["records"], 2, "n")[1]["data"]) == b"42", reply
            box.stop()
    finally:
        box.stop()


def test_a_submission_cannot_pass_for_a_sandbox_that_failed(tmp_path):
    """A submission that exits with the status of a child that could not be isolated has
    still been isolated: it ends as the submission's own doing, its output not in the grader's
    messages, and the sandbox is neither stopped nor reported failed (which would make it the
    grader's failure: never scored, and graded again on every run)."""
    from grader.safegrade.sandbox import Limits, Sandbox

    box = Sandbox([], [str(tmp_path)], Limits(budget=20, cell_timeout=10, memory_mb=1024))
    code = f"import os\nos._exit({worker.NOT_ISOLATED})\n"
    job = {"cells": [{"code": code}], "files": {}, "nonce": "n", "probes": ""}
    try:
        reply = box.run(job)
        assert reply["isolated"] and str(worker.NOT_ISOLATED) in reply["status"], reply
        assert box.proc is not None and box.run(job)["isolated"]
    finally:
        box.stop()


# ----------------------------------------------------------------------------- one sandbox

ONE_AFTER_ANOTHER = hostile_cases.neighbour_cases() + hostile_cases.honest_style_cases()


@pytest.fixture(scope="module")
def one_sandbox(tmp_path_factory):
    """Students graded one after another by ONE sandbox (victims first, then the attackers)."""
    course = tiny_course.make_course(tmp_path_factory.mktemp("one-sandbox"))
    for case in ONE_AFTER_ANOTHER:
        tiny_course.add_submission(course, case.name, case.submission)
    run = autograde(course, "--workers=1", timeout=600)
    print(run.stdout[-3000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stderr[-3000:]
    return {"course": course, "run": run}


@ONE_SANDBOX
@pytest.mark.parametrize("case", ONE_AFTER_ANOTHER, ids=lambda c: c.name)
def test_one_sandbox_grades_each_student_on_their_own(one_sandbox, case):
    got = result(one_sandbox["course"], case.name)
    assert (got["score"], case.reason in got["reason"]) == (case.score, True), got["reason"]


@ONE_SANDBOX
def test_no_student_finds_what_an_earlier_one_left(one_sandbox):
    course = one_sandbox["course"]
    assert "sent 0 True True" in printed(course, "a2_leaves_ipc_and_files")
    scan = printed(course, "b1_memory_scan")
    assert int(scan.split("scanned MiB")[1].split()[0]) > 10 and "suffixes []" in scan, scan
    assert "nothing to copy" in printed(course, "b2_plagiarist")
    left = printed(course, "b3_looks_for_leftovers")
    assert "shm -1 msg -1" in left, left
    listed = left.split("files ", 1)[1].split("\n")[0]  # files [in /tmp] [in /dev/shm]
    end = listed.index("] ") + 1
    tmp, shm = ast.literal_eval(listed[:end]), ast.literal_eval(listed[end:].strip())
    # The sandbox's own folders, and the top folders of a Python installation bound under /tmp.
    bound = {Path(f).parts[2] for f in python_folders() if Path(f).parts[1:2] == ("tmp",)}
    assert (set(tmp), shm) == ({"home", "work"} | bound, []), left
    for kind in ("shm", "msg", "sem"):
        assert f"{kind} objects 0" in left, left
    mapped = printed(course, "b4_shared_mmap_4g")  # stopped by the limit, or still touching
    assert "child" in mapped and "touched MiB 4096" not in mapped, mapped


@ONE_SANDBOX
def test_the_memory_limit_in_force_is_reported(one_sandbox):
    line = next(x for x in one_sandbox["run"].stdout.splitlines() if "safegrade: memory:" in x)
    assert "cgroup" in line or "RLIMIT_AS" in line


@ONE_SANDBOX
def test_the_limits_in_force_are_printed_before_grading(one_sandbox):
    """The tiny course configures its own limits (tiny_course.CONFIG): those are printed."""
    out = one_sandbox["run"].stdout
    assert re.search(r"^  budget +\S+ s +configurable$", out, re.M), out[:3000]
    assert re.search(r"^  memory_mb +1024 MiB +configurable$", out, re.M), out[:3000]
    assert re.search(r"^  tmp_mb +128 MiB +configurable$", out, re.M), out[:3000]
    assert out.index("the limits in force") < out.index("[1/")  # before the first submission


@ONE_SANDBOX
def test_honest_styles_get_plain_nbgraders_scores(one_sandbox, tmp_path):
    course = tiny_course.make_course(tmp_path)
    honest = hostile_cases.honest_style_cases()
    for case in honest:
        tiny_course.add_submission(course, case.name, case.submission)
    tiny_course.nbgrader(course, "autograde", "tiny", "--SandboxExecute.unsandboxed=True")
    plain = graded_scores(course)
    sandboxed = graded_scores(one_sandbox["course"])
    assert {case.name: plain.get(case.name) for case in honest} == {
        case.name: sandboxed.get(case.name) for case in honest
    }
    assert all(plain[case.name] == case.score for case in honest), plain


# ----------------------------------------------------------------------------- interruptions

SLOW = tiny_course.CORRECT + "import time\ntime.sleep(1)\n"
STUDENTS = [f"student{i}" for i in range(4)]


def as_in_a_terminal() -> None:
    """Ctrl-C reaches the grader as it does in an instructor's terminal, whatever this test's
    process ignores: a shell that runs a command in the background (`make test &`, a CI runner)
    hands SIGINT on ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.end_to_end
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_an_interrupted_batch_resumes_without_losing_or_redoing(tmp_path, how):
    course = tiny_course.make_course(tmp_path)
    for student in STUDENTS:
        tiny_course.add_submission(course, student, tiny_course.with_answer(SLOW))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "grader.safegrade", "autograde", "--workers=1"]
    grader = subprocess.Popen(
        command, cwd=course, env=env, stdout=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal
    )
    results = course / "autograded" / ".safegrade" / "tiny"
    while not list(results.glob("*.json")) and grader.poll() is None:
        time.sleep(0.05)
    grader.send_signal(how)
    out, _ = grader.communicate(timeout=300)
    if how == signal.SIGINT:
        assert grader.returncode == 130 and "INTERRUPTED" in out, out
    kept = {path: path.read_bytes() for path in results.glob("*.json")}
    assert 1 <= len(kept) < len(STUDENTS), "interrupt earlier: the batch had finished"
    again = subprocess.run(
        command, cwd=course, env=env, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(kept)} unchanged (kept)" in again.stdout
    assert all(path.read_bytes() == data for path, data in kept.items()), "a grade was redone"
    assert graded_scores(course) == dict.fromkeys(STUDENTS, 10.0)
