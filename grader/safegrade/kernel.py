"""The hidden part of every graded test cell calls ``run_check`` in the learner's kernel (see
README.md): the test's inputs, made by checks.py for a seed drawn here, then the probe and its
data through the same encoding and decoding as to and from the sandbox, then the check. So plain
nbgrader, which runs the cell, and the sandboxed grader, which replaces the cell by the probe and
runs the check outside, judge the same kind of data. SAFEGRADE_SOURCE, in this kernel's own
environment (given by the grader that started it: preprocessors.ResilientExecute, from the
course's configuration), is where the exercises' probes and checks are; a source notebook run in
place (cwd solutions/<assignment>) needs none.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from . import probing
from .data import decode, encode
from .wording import _

SOURCE_VARIABLE = "SAFEGRADE_SOURCE"


def exercise_folder(assignment: str, source: Path | str | None = None) -> Path:
    """Where `assignment`'s probes and checks are: in `source`, or the kernel's SAFEGRADE_SOURCE,
    or the current folder (a source notebook run in place)."""
    source = source or os.environ.get(SOURCE_VARIABLE)
    return Path(source, assignment) if source else Path.cwd()


def crossed(value):
    """value as it arrives on the other side of the boundary."""
    return decode(json.loads(json.dumps(encode(value))))


class GraderError(RuntimeError):
    """The exercise's checks.py failed: the grader's fault, not the submission's."""


def run_check(
    assignment: str, grade_id: str, namespace: dict, source: Path | str | None = None
) -> None:
    folder = exercise_folder(assignment, source)
    probes = probing.load(folder / "probes.py")
    checks = probing.load(folder / "checks.py")
    with probing.torch_defaults():  # the checks too run in the learner's process here
        try:
            inputs = probing.make_inputs(checks, grade_id, random.SystemRandom().getrandbits(32))
        except Exception as exc:
            said = _("checks.py could not make the inputs of {name}").format(name=grade_id)
            raise GraderError(said) from exc
        data = crossed(probing.call_probe(probes, grade_id, namespace, crossed(inputs)))
        probing.run_check_function(checks, grade_id, data, inputs)
