"""course.json, the course's identity: read here by the learner's side (fxcourse.workspace) and by
the instructor's tools (grader.course), so both find the same course id, kernel and class data.

    settings(root)              {"course_id": ..., "classdata": ..., "kernel": {...}}
    classdata(root, environ)    where the class data lives: $FXCOURSE_CLASSDATA, else course.json's
                                (relative to the course root, or absolute)
    shared_exchange(root, environ)  an exchange shared beyond the class data (a hub's):
                                $FXCOURSE_EXCHANGE, else course.json's "exchange" (a hub's
                                course folder names it there), else None

A folder without its own course.json (a scratch folder of submissions, a copy of the chapters
only) is this course's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

SETTINGS = "course.json"  # at the course root
CLASSDATA_VARIABLE = "FXCOURSE_CLASSDATA"
EXCHANGE_VARIABLE = "FXCOURSE_EXCHANGE"
THIS_COURSE = Path(__file__).resolve().parents[1]


def settings(root: Path = THIS_COURSE) -> dict:
    path = root / SETTINGS if (root / SETTINGS).is_file() else THIS_COURSE / SETTINGS
    return json.loads(path.read_text(encoding="utf-8"))


def classdata(root: Path = THIS_COURSE, environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    return Path(environ.get(CLASSDATA_VARIABLE) or settings(root)["classdata"])


def shared_exchange(
    root: Path = THIS_COURSE, environ: Mapping[str, str] | None = None
) -> Path | None:
    environ = os.environ if environ is None else environ
    if configured := environ.get(EXCHANGE_VARIABLE):
        return Path(configured).resolve()
    named = settings(root).get("exchange")  # relative to the course root, or absolute
    return (root / named).resolve() if named else None
