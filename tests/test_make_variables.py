"""`make` refuses a command-line variable that is a slip of one the course reads (`make autograde
SUBMISSION=...` would otherwise grade what is already in classdata/submitted/ and exit 0), and warns
about one no makefile reads. `make -n` only reads the makefiles: nothing is built or graded."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def dry_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize(
    "given, meant",
    [
        ("SUBMISSION=/tmp/uploads", "SUBMISSIONS"),
        ("ASSIGMENT=ex1_sigmoid_to_tanh", "ASSIGNMENT"),
        ("GRADING_WORKER=2", "GRADING_WORKERS"),
        ("FXHUB_LEARNER=ann", "FXHUB_LEARNERS"),
    ],
)
def test_a_slip_of_a_known_variable_is_refused_with_the_near_match(given, meant):
    run = dry_run("autograde", given)
    assert run.returncode != 0
    name = given.split("=")[0]
    assert f"{name} is not a variable of this Makefile; did you mean {meant}=?" in run.stderr
    assert "safegrade" not in run.stdout  # stopped before any recipe


def test_known_variables_pass_and_an_unrelated_one_is_only_warned_about():
    known = ["SUBMISSIONS=/tmp/uploads", "LMS=canvas", "ASSIGNMENT=ex1_sigmoid_to_tanh"]
    run = dry_run("autograde", *known)
    assert run.returncode == 0, run.stderr
    assert "not a variable" not in run.stderr and "not read" not in run.stderr
    assert "/tmp/uploads" in run.stdout
    run = dry_run("help", "COLOUR_SCHEME=dark")
    assert run.returncode == 0, run.stderr
    assert "COLOUR_SCHEME is not read by this Makefile" in run.stderr
