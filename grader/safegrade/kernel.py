"""The hidden part of every graded test cell calls ``run_check`` (in the learner's kernel):

    ### BEGIN HIDDEN TESTS
    import os
    import sys

    sys.path.insert(0, os.environ.get("SAFEGRADE_COURSE", "../.."))
    from grader.safegrade.kernel import run_check

    run_check("ex1_sigmoid_to_tanh", "test_torch_sigmoid", globals())
    ### END HIDDEN TESTS

It runs the probe and then the check in the kernel, with the probe's data sent through the same
encoding and decoding as in the sandbox, so that plain nbgrader (which runs this cell) and the
sandboxed grader (which replaces the whole cell by the probe and runs the check outside) judge
the same data. The course's nbgrader configuration sets SAFEGRADE_COURSE (the course root, for
the import above) and SAFEGRADE_SOURCE (where the exercises' probes and checks are); a source
notebook run in place (cwd solutions/<assignment>) needs neither.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import probing
from .data import decode, encode


def exercise_folder(assignment: str) -> Path:
    source = os.environ.get("SAFEGRADE_SOURCE")
    return Path(source, assignment) if source else Path.cwd()


def run_check(assignment: str, grade_id: str, namespace: dict) -> None:
    folder = exercise_folder(assignment)
    probes = probing.load(folder / "probes.py")
    checks = probing.load(folder / "checks.py")
    data = decode(json.loads(json.dumps(encode(probing.call_probe(probes, grade_id, namespace)))))
    getattr(checks, grade_id)(data)
