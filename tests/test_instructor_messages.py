"""What the instructor's commands say when an upload could not be graded or a name is wrong: a
reason that says what happened and what to do (the error one click away), every upload without
feedback named by `make release-feedback`, and `make autograde ASSIGNMENT=<wrong>` refused
before anything is generated."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from grader import course_grader, instructor
from grader.course import Course
from grader.intake import class_exchange
from grader.safegrade import result_files

ROOT = Path(__file__).resolve().parents[1]
EX1 = "ex1_sigmoid_to_tanh"


@pytest.mark.parametrize(
    ("detail", "notes", "plain"),
    [
        ("nbformat.reader.NotJSONError: Notebook does not appear to be JSON: '{\\n \"c'", [],
         "the notebook is cut off or corrupt: ask for a new upload"),
        ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)", [],
         "the notebook is cut off or corrupt: ask for a new upload"),
        ("jsonschema.exceptions.ValidationError: None is not of type 'object'", [],
         "the notebook's structure is damaged (nbformat refuses it): ask for a new upload"),
        ("No notebooks were matched by '/c/submitted/dave/ex1/ex1.ipynb'", [],
         "the upload holds no notebook of this exercise: ask for it"),
        ("No notebooks were matched by 'x'", ["ex1.ipynb was left out: 9 MB without outputs"],
         "ex1.ipynb was left out (9 MB without outputs): ask for a smaller notebook"),
        ("no graded cell in the autograded notebook", [],
         "the notebook has none of the exercise's test cells (another notebook?): ask for it"),
        ("OSError: something nobody foresaw", [],
         "nbgrader could not read it (see the detail): ask for a new upload"),
    ],
    ids=["not-json", "empty", "invalid", "no-notebook", "left-out", "no-tests", "other"],
)  # fmt: skip
def test_an_upload_that_could_not_be_graded_says_what_to_do(detail, notes, plain):
    assert result_files.what_to_do(detail, notes) == plain


def test_release_feedback_names_the_uploads_it_could_not_grade(tmp_path, capsys):
    feedback, found = tmp_path / "feedback", tmp_path / "results"
    folder = feedback / "ada" / EX1
    folder.mkdir(parents=True)
    (folder / f"{EX1}.html").write_text("<p>feedback</p>")
    (folder / "submission_secret.txt").write_text("secret of ada")
    reason = "could not be graded: the notebook is cut off or corrupt: ask for a new upload"
    dave = result_files.SubmissionResult("dave", EX1, result_files.NOT_GRADABLE, 0.0, 10.0, reason)
    result_files.save(dave, found / EX1 / "dave.json")
    status = class_exchange.release_feedback_command(tmp_path / "exchange", feedback, [EX1], found)
    out, err = capsys.readouterr()
    assert status == 1 and "released 1 feedback file(s)" in out
    assert f"no feedback for dave/{EX1}: could not be graded: the notebook is cut off" in err


def test_a_wrong_assignment_name_stops_autograde_before_anything_is_generated(tmp_path, capsys):
    course = instructor.copy_course(tmp_path / "course")
    with pytest.raises(SystemExit) as stopped:
        course_grader.main(
            ["--course", str(course), "release", "--no-publish", "--assignment", "ex1"]
        )
    assert stopped.value.code == 2
    assert (
        "unknown assignment 'ex1'; did you mean 'ex1_sigmoid_to_tanh'?" in capsys.readouterr().err
    )
    assert not Course.configured(course).release.exists()
    planned = subprocess.run(
        ["make", "-n", "autograde", "ASSIGNMENT=ex1"], cwd=ROOT, capture_output=True, text=True
    ).stdout.splitlines()
    grading = [line for line in planned if "course_grader.py" in line or "safegrade" in line]
    assert grading[0].endswith('release --no-publish --assignment "ex1"'), planned
