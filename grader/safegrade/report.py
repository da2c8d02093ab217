"""What people read: the autograded notebook (for the formgrader) and the learner's feedback.

Neither contains hidden test source: test cells show only the part the learner already saw in the
released notebook, followed by the outcome.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from . import store
from .assignment import Assignment, Submission, visible_test_source

HIDDEN_NOTE = "# (hidden tests are not shown)\n"


def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def autograded_notebook(source, submitted, nb_result: dict) -> dict:
    tests = {t["id"]: t for t in nb_result["tests"]}
    answers = {}
    for cell in submitted.cells:
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        grade_id = (
            meta.get("nbgrader", {}).get("grade_id")
            if isinstance(meta.get("nbgrader"), dict)
            else None
        )
        if isinstance(grade_id, str) and grade_id not in answers:
            answers[grade_id] = cell
    cells = []
    for cell in source.cells:
        meta = json.loads(json.dumps(cell.metadata))
        if cell.cell_type != "code":
            text = cell.source
            if cell.kind == "manual" and cell.id in answers:
                text = submitted_text(answers[cell.id])
            cells.append({"cell_type": cell.cell_type, "metadata": meta, "source": text})
            continue
        outputs = []
        if cell.kind == "solution":
            text = submitted.solutions.get(
                cell.id, "# (this answer cell is missing from the submission)\n"
            )
        elif cell.kind == "test":
            text = visible_test_source(cell.source)
            if text != cell.source:
                text = text.rstrip("\n") + "\n" + HIDDEN_NOTE
            test = tests.get(cell.id)
            if test is not None:
                verdict = "PASSED" if test["passed"] else "FAILED"
                line = f"safegrade: {verdict} ({test['points']:g}/{test['max_points']:g} points)"
                if not test["passed"]:
                    line += f": {test['message']}"
                outputs.append(_stream("stdout", line + "\n"))
        else:
            text = cell.source
        info = nb_result["cells"].get(cell.id)
        if info and cell.kind != "test":
            if info.get("stdout"):
                outputs.append(_stream("stdout", info["stdout"]))
            if info.get("stderr"):
                outputs.append(_stream("stderr", info["stderr"]))
            if info.get("error"):
                outputs.append(_stream("stdout", f"safegrade: this cell raised {info['error']}\n"))
        cells.append(
            {
                "cell_type": "code",
                "metadata": meta,
                "source": text,
                "outputs": outputs,
                "execution_count": None,
            }
        )
    return {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {"kernelspec": source.kernelspec, "safegrade": {"score": nb_result["score"]}},
        "cells": cells,
    }


def submitted_text(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def write_autograded_notebooks(
    folder: Path, assignment: Assignment, submission: Submission, result: dict
) -> None:
    for source in assignment.notebooks:
        nb_result = result["notebooks"][source.name]
        notebook = autograded_notebook(source, submission.notebooks[source.name], nb_result)
        store.atomic_write(Path(folder) / source.name, json.dumps(notebook, indent=1).encode())


def feedback_html(result: dict) -> str:
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>Feedback: {esc(result['assignment'])}</title>",
        "<style>body{font-family:sans-serif;max-width:52em;margin:2em auto}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}"
        "table{border-collapse:collapse}.pass{color:#176d1e}.fail{color:#a8071a}</style>",
        "</head><body>",
        f"<h1>{esc(result['assignment'])}: {result['score']:g} / {result['max_score']:g}</h1>",
    ]
    for name, nb in result["notebooks"].items():
        parts.append(f"<h2>{esc(name)}: {nb['score']:g} / {nb['max_score']:g}</h2>")
        if nb["problem"]:
            parts.append(f"<p class='fail'>{esc(nb['problem'])}</p>")
        parts.append("<table><tr><th>check</th><th>points</th><th>result</th></tr>")
        for test in nb["tests"]:
            status = "passed" if test["passed"] else esc(test["message"] or "failed")
            css = "pass" if test["passed"] else "fail"
            points = f"{test['points']:g} / {test['max_points']:g}"
            parts.append(
                f"<tr><td>{esc(test['id'])}</td><td>{points}</td>"
                f"<td class='{css}'>{status}</td></tr>"
            )
        parts.append("</table>")
        errors = [(cid, c["error"]) for cid, c in nb["cells"].items() if c.get("error")]
        if errors:
            parts.append("<h3>Errors in your cells</h3><ul>")
            parts += [f"<li>{esc(cid)}: {esc(err)}</li>" for cid, err in errors]
            parts.append("</ul>")
        if nb["warnings"]:
            parts.append("<h3>Warnings (they never cost points)</h3><ul>")
            parts += [f"<li>{esc(w)}</li>" for w in nb["warnings"]]
            parts.append("</ul>")
        if nb["notes"]:
            parts.append("<h3>Notes</h3><ul>")
            parts += [f"<li>{esc(n)}</li>" for n in nb["notes"]]
            parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_feedback(folder: Path, result: dict) -> Path:
    path = Path(folder) / "feedback.html"
    store.atomic_write(path, feedback_html(result).encode())
    return path
