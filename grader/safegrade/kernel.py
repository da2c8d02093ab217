"""The hidden part of every graded test cell calls ``run_check`` in the learner's kernel (see
README.md): the probe, its data through the same encoding and decoding as from the sandbox, then
the check. So plain nbgrader, which runs the cell, and the sandboxed grader, which replaces the
cell by the probe and runs the check outside, judge the same data. SAFEGRADE_SOURCE (set by the
course's nbgrader configuration) is where the exercises' probes and checks are; a source notebook
run in place (cwd solutions/<assignment>) needs none.
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
