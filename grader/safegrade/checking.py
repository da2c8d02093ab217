"""The check process: the instructor's checks, run on a submission's data in a sandboxed process
of their own (a fresh child of the template, like a submission's, which never runs learner code).
Before the submission runs, an inputs process (another such child, holding only the exercise's
files and the seed) makes each test's inputs the same way, so the grading process never runs
checks.py (nor imports torch).

It receives the exercise's checks.py and verify.py (as files), the submission's seed and each
test's data as the probe sent it (the bytes of its record's body, which the grading process
forwards without parsing them); it makes each test's inputs from the seed, decodes the data,
rebuilds graphs (graph_data.build, without compiling code) and runs the check. Each verdict goes
back as data: None (passed) or [ename, message]. The process holds no secret (only this
submission's seed), no gradebook, no other submission's data and cannot write to the course, so a
hole in the builder or a check reaches nothing, and it ends with the submission: nothing it does
can change how the next submission is judged. Never imports nbgrader.
"""

from __future__ import annotations

import json
import os

from . import probing
from .data import DataError, clean_text, decode, encode
from .grading_limits import LIMITS
from .jsontext import json_values
from .wording import _

# JSON values of one probe's data: decode() takes at most data_items values, each of which is
# at most a few JSON values ({"tuple": [...]}, a dict's [key, value] pairs, a tensor's fields).
MAX_JSON_VALUES = 8 * LIMITS.data_items


def judge(checks, grade_id: str, sent: bytes, seed: int) -> list[str] | None:
    """The check of one test on the probe's data (its JSON, as sent): None when it passes, else
    [ename, message]. Raises GraderFailure when checks.py cannot make the test's inputs."""
    try:
        data = decode(parsed(sent))
    except Exception as exc:  # noqa: BLE001 - whatever the data does, it fails this test only
        return [
            "DataError",
            _("the data your code produced could not be read: {why}").format(why=exc),
        ]
    if getattr(checks, grade_id, None) is None:
        return ["GraderError", _("checks.py has no check for {name}").format(name=repr(grade_id))]
    inputs = trusted_inputs(checks, grade_id, seed)
    try:
        with probing.torch_defaults():
            probing.run_check_function(checks, grade_id, data, inputs)
    except Exception as exc:  # noqa: BLE001 - any failing check is the learner's failed test
        return [
            clean_text(type(exc).__name__, LIMITS.name_chars),
            clean_text(str(exc), LIMITS.error_chars),
        ]
    return None


def parsed(sent: bytes):
    """The JSON of a probe's data, counted before it is parsed."""
    if (values := json_values(sent)) > MAX_JSON_VALUES:
        said = _("it holds over {cap} JSON values ({count})")
        raise DataError(said.format(cap=MAX_JSON_VALUES, count=values))
    return json.loads(sent)


def trusted_inputs(checks, grade_id: str, seed: int):
    """checks.inputs(grade_id, seed); raises GraderFailure when checks.py cannot make them."""
    try:
        return probing.make_inputs(checks, grade_id, seed)
    except Exception as exc:  # noqa: BLE001 - the instructor's checks.py failed, not the learner
        why = f"{type(exc).__name__}: {clean_text(str(exc), LIMITS.check_error_chars)}"
        raise GraderFailure(f"checks.py could not make the inputs of {grade_id} ({why})") from exc


def encoded_inputs(checks, grade_id: str, seed: int) -> dict:
    """An inputs process's record of one test: {"inputs": its inputs as data} (every test has
    inputs, made by checks.inputs). Raises GraderFailure when checks.py cannot make or send them."""
    inputs = trusted_inputs(checks, grade_id, seed)
    try:
        return {"inputs": encode(inputs)}
    except Exception as exc:  # noqa: BLE001 - the instructor's inputs, not the learner's data
        why = clean_text(str(exc), LIMITS.check_error_chars)
        raise GraderFailure(f"the inputs of {grade_id} cannot be sent ({why})") from exc


class GraderFailure(RuntimeError):
    """The grader's failure, not the learner's: the sandbox failed twice on a submission, or the
    exercise's checks.py could not be loaded or could not make a test's inputs."""


def load_checks(folder: str):
    """checks.py of the folder the job's files were written to (its verify.py beside it)."""
    try:
        return probing.load(os.path.join(folder, "checks.py"))
    except Exception as exc:  # noqa: BLE001 - the instructor's file: the grader's failure
        why = f"{type(exc).__name__}: {clean_text(str(exc), LIMITS.check_error_chars)}"
        raise GraderFailure(f"checks.py could not be loaded ({why})") from exc


class Blobs(list):
    """A job's blobs: bytes sent after it, each named in the job by its number."""

    def add(self, data: bytes | memoryview) -> int:
        self.append(data)
        return len(self) - 1

    def files(self, files: dict[str, bytes]) -> dict[str, int]:
        return {name: self.add(data) for name, data in files.items()}


def check_job(files: dict[str, bytes], seed: int, tests: list[tuple[str, bytes]]) -> tuple:
    """The job a check process runs, and its blobs: the exercise's files, the seed, and each
    test's grade_id and data (the bytes the probe sent)."""
    blobs = Blobs()
    rows = [{"grade_id": grade_id, "value": blobs.add(sent)} for grade_id, sent in tests]
    job = {"kind": "checks", "files": blobs.files(files), "seed": seed, "tests": rows}
    return job, blobs


def inputs_job(files: dict[str, bytes], seed: int, grade_ids: list[str]) -> tuple:
    """The job an inputs process runs, and its blobs: the exercise's files, the seed, and the
    grade_id of each test whose inputs it makes."""
    blobs = Blobs()
    job = {"kind": "inputs", "files": blobs.files(files), "seed": seed, "tests": list(grade_ids)}
    return job, blobs


def inputs_of(record: dict | None, grade_id: str) -> memoryview | bytes:
    """An inputs process's record for a test, checked: the inputs' bytes (its body). Raises
    GraderFailure when the process failed or sent no such record."""
    if record is None:
        raise GraderFailure(f"the grader's process making the inputs of {grade_id} did not finish")
    if "grader_error" in record:
        raise GraderFailure(clean_text(str(record["grader_error"]), LIMITS.grader_error_chars))
    if "error" in record or "data" not in record or set(record) - {"cell", "data"}:
        raise GraderFailure(f"the inputs of {grade_id} did not arrive whole")
    return record["data"]


def verdict_of(record: dict | None, why_missing: str) -> tuple[str, str] | None:
    """What a check process's record for a test says, made safe: None (passed) or (ename,
    message). Raises GraderFailure for the grader's own failure."""
    if record is None:
        return "CheckNotFinished", why_missing
    if "grader_error" in record:
        raise GraderFailure(clean_text(str(record["grader_error"]), LIMITS.grader_error_chars))
    verdict = record.get("verdict", "missing")
    if verdict is None:
        return None
    if type(verdict) is list and len(verdict) == 2 and all(type(v) is str for v in verdict):
        return clean_text(verdict[0], LIMITS.name_chars), clean_text(verdict[1], LIMITS.error_chars)
    return "GraderError", _("the check process sent a malformed verdict")
