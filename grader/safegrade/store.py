"""Results: scoring from what the grader observed, one JSON file per submission, atomic writes.

Points come only from the instructor's source notebook; the sandbox only says which tests passed.
Each result is written to a temporary file in the same folder, flushed to disk and renamed over
the old one, so a result file is always either the old or the new complete version.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path

from . import VERSION
from .assignment import Assignment, Submission

SCHEMA = 1
NOTEBOOK_OUTPUT_CAP = 64_000
CELL_OUTPUT_CAP = 4_000


def atomic_write(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _cap(text, limit: int) -> str:
    text = text if isinstance(text, str) else ""
    return text if len(text) <= limit else text[:limit] + f"\n[truncated {len(text) - limit}]"


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def score_notebook(source, submitted, worker_nb: dict | None) -> dict:
    """Combine the source's points with the pass/fail the worker observed."""
    observed = {}
    if worker_nb is not None:
        for record in worker_nb.get("tests", []):
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                observed.setdefault(record["id"], record)
    tests, cells, warnings, budget = [], {}, [], NOTEBOOK_OUTPUT_CAP
    for test in source.tests:
        record = observed.get(test.id)
        if submitted.problem:
            passed, kind, message = False, "not-run", submitted.problem
        elif record is None:
            passed, kind, message = False, "error", "the worker reported no result for this test"
        else:
            passed = record.get("passed") is True
            kind = str(record.get("kind", "failed"))[:20]
            message = "" if passed else _short(record.get("message", "failed"), 600)
        entry = {
            "id": test.id,
            "max_points": test.points,
            "points": test.points if passed else 0.0,
            "passed": passed,
            "kind": kind,
            "message": message,
        }
        if record is not None:
            entry["seconds"] = float(record.get("seconds", 0) or 0)
            output = _cap(record.get("stdout", ""), CELL_OUTPUT_CAP)
            output += _cap(record.get("fd_output", ""), CELL_OUTPUT_CAP)
            entry["output"] = output[: max(0, budget)]
            budget -= len(entry["output"])
            for cell in record.get("cells", []) or []:
                if isinstance(cell, dict) and isinstance(cell.get("id"), str):
                    cells[cell["id"]] = {
                        "error": _short(cell["error"], 600) if cell.get("error") else None,
                        "stdout": _cap(cell.get("stdout", ""), CELL_OUTPUT_CAP)[: max(0, budget)],
                        "stderr": _cap(cell.get("stderr", ""), CELL_OUTPUT_CAP)[: max(0, budget)],
                    }
                    budget -= len(cells[cell["id"]]["stdout"]) + len(cells[cell["id"]]["stderr"])
            for warning in record.get("warnings", []) or []:
                if isinstance(warning, str) and warning not in warnings and len(warnings) < 30:
                    warnings.append(_short(warning, 300))
        tests.append(entry)
    manual = [c.id for c in source.cells if c.kind == "manual"]
    return {
        "file": submitted.graded_file,
        "score": sum(t["points"] for t in tests),
        "max_score": source.max_score,
        "problem": submitted.problem,
        "notes": submitted.notes[:20],
        "tests": tests,
        "cells": cells,
        "warnings": warnings,
        "manual_cells": manual,
        "answer_cells": source.solution_ids,
    }


def reason_line(notebooks: dict, score: float, max_score: float) -> str:
    problems = [f"{name}: {nb['problem']}" for name, nb in notebooks.items() if nb["problem"]]
    tests = [t for nb in notebooks.values() for t in nb["tests"]]
    failed = [t for t in tests if not t["passed"]]
    head = f"{score:g}/{max_score:g}: "
    if problems:
        body = problems[0]
    elif not failed:
        body = f"all {len(tests)} tests passed"
    else:
        first = failed[0]
        body = (
            f"{len(failed)} of {len(tests)} tests failed; first {first['id']}: {first['message']}"
        )
    if failed and not problems:
        errors = [
            f"answer cell {cid!r} raised {cell['error']}"
            for nb in notebooks.values()
            for cid, cell in nb["cells"].items()
            if cell.get("error") and cid in nb.get("answer_cells", [])
        ]
        if errors:
            body += f"; {errors[0]}"
    notes = [n for nb in notebooks.values() for n in nb["notes"] if n.startswith("graded ")]
    if notes:
        body += f" [{notes[0]}]"
    return _short(head + body, 400)


def build_result(
    assignment: Assignment,
    submission: Submission,
    worker_reply: dict | None,
    seconds: float,
    grading_key: str,
    error: str | None = None,
) -> dict:
    notebooks = {}
    for source in assignment.notebooks:
        submitted = submission.notebooks[source.name]
        if error and not submitted.problem:
            submitted.problem = f"grading failed: {error} (rerun to retry)"
        worker_nb = None
        if worker_reply is not None:
            worker_nb = worker_reply.get("notebooks", {}).get(source.name)
        notebooks[source.name] = score_notebook(source, submitted, worker_nb)
    score = sum(nb["score"] for nb in notebooks.values())
    max_score = assignment.max_score
    return {
        "schema": SCHEMA,
        "grader": f"safegrade {VERSION}",
        "assignment": assignment.name,
        "student": submission.student,
        "status": "error" if error else "graded",
        "score": score,
        "max_score": max_score,
        "reason": reason_line(notebooks, score, max_score),
        "grading_key": grading_key,
        "submission_sha256": submission.sha256,
        "timestamp": submission.timestamp,
        "graded_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "notebooks": notebooks,
    }


def write_result(path: Path, result: dict) -> Path:
    atomic_write(path, json.dumps(result, indent=1, sort_keys=True).encode())
    return path


def read_result(path: Path) -> dict | None:
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) and result.get("schema") == SCHEMA else None


def is_current(result: dict | None, grading_key: str, submission: Submission) -> bool:
    return (
        result is not None
        and result.get("status") == "graded"
        and result.get("grading_key") == grading_key
        and result.get("submission_sha256") == submission.sha256
    )
