"""From records to a test cell's outputs: the job sent for a notebook's code cells (its tests'
inputs made by an inputs process, checking.py), each cell's record and its check's verdict
turned into the outputs nbgrader scores (a failing check is an error output of its cell).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader import utils

from .data import clean_text
from .grading_limits import LIMITS
from .wording import _


def sent_data(cell, record: dict | None) -> bool:
    """Whether a test cell's record holds its probe's data (not an error)."""
    return (
        isinstance(record, dict)
        and "error" not in record
        and record.get("probe") == grade_id(cell)
        and "data" in record
    )


def grade_id(cell) -> str:
    return cell.metadata.nbgrader["grade_id"]


def first_line(source: str) -> str:
    lines = source.strip().split("\n")
    return repr(lines[0][: LIMITS.cell_start_chars]) if lines and lines[0] else "an empty cell"


def error_output(ename: str, evalue: str, traceback: list[str] = ()):
    ename, evalue = clean_text(ename, LIMITS.name_chars), clean_text(evalue, LIMITS.error_chars)
    return new_output(
        "error", ename=ename, evalue=evalue, traceback=list(traceback) or [f"{ename}: {evalue}"]
    )


def code_cells(nb) -> list:
    """The code cells up to the last graded one: later cells cannot change a score."""
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    graded = [i for i, cell in enumerate(cells) if is_test(cell)]
    return cells[: graded[-1] + 1] if graded else []


def is_test(cell) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def seed(path: Path, student: str, assignment: str) -> int:
    """The seed of a submission's test inputs: from its student, assignment and the grading
    secret at `path` (Course.secret; made on first use), so a regrade sees the same inputs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():  # written whole, then linked: a reader never sees half a secret
        draft = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, secrets.token_hex(32).encode())
        os.close(fd)
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    text = f"{path.read_text().strip()}\0{student}\0{assignment}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def step(cell, inputs: dict[str, int]) -> dict:
    """A cell's job entry: its code, or for a test cell the probe's name and the number of the
    job's blob that holds its inputs (grade_id -> blob, from an inputs process's records)."""
    if not is_test(cell):
        return {"code": cell.source}
    grade_id = cell.metadata.nbgrader["grade_id"]
    return {"probe": grade_id, "inputs": inputs[grade_id]}


def outputs(cell, record: dict | None, missing: tuple[str, str], verdict) -> list:
    """The cell's outputs: the learner's output and error, or for a test cell the verdict of
    its check (None: passed)."""
    if record is None:
        return [error_output(*missing)] if is_test(cell) else []
    found = []
    for name in ("stdout",) if is_test(cell) else ("stdout", "stderr"):
        if isinstance(record.get(name), str) and record[name]:
            found.append(
                new_output(
                    "stream",
                    name=name,
                    text=clean_text(record[name], LIMITS.cell_output_chars + 100),
                )
            )
    error = record.get("error")
    if isinstance(error, dict):
        lines = error.get("traceback") if isinstance(error.get("traceback"), list) else []
        cap, kept = LIMITS.traceback_line_chars, lines[-LIMITS.traceback_lines :]
        lines = [clean_text(line, cap) for line in kept if isinstance(line, str)]
        found.append(error_output(str(error.get("ename")), str(error.get("evalue")), lines))
    elif is_test(cell) and not sent_data(cell, record):
        found.append(error_output("GraderError", _("the probe for this test sent no data")))
    elif is_test(cell) and verdict is not None:
        found.append(error_output(*verdict))
    return found


def stopped(reply: dict, records: dict, cells: list) -> tuple[str, str]:
    """Why test cells have no record: where the submission's process stopped, and how."""
    index = max(records) + 1 if records else 0
    where = place(cells[index]) if index < len(cells) else _("after its last cell")
    if reply.get("timed_out"):
        said = _("not run: the submission used up its time budget {where}")
        return "TimeoutError", said.format(where=where)
    said = _("not run: {where}, the submission's process {status}")
    return "DeadKernelError", said.format(status=reply.get("status"), where=where)


def place(cell) -> str:
    """Where in a notebook `cell` is, as a message says it: its test, or how it starts."""
    if is_test(cell):
        return _("in the test {name}").format(name=grade_id(cell))
    if not cell.source.strip():
        return _("in an empty cell")
    return _("in the cell that starts {start}").format(start=first_line(cell.source))
