"""make autograde's shortcuts in nbgrader's bookkeeping (grader/safegrade/bookkeeping.py): the
same validation errors, the same gradebook, and nothing left patched after the batch."""

from __future__ import annotations

import os
import sys

import jsonschema
import nbgrader.api
import nbgrader.nbgraderformat.common as nbformat_common
import pytest
from nbgrader.api import Gradebook
from nbgrader.nbgraderformat import MetadataValidator

from grader.safegrade.bookkeeping import batch_bookkeeping

GOOD = {"grade": True, "grade_id": "t1", "locked": True, "points": 1, "schema_version": 3,
        "solution": False, "task": False}  # fmt: skip
BAD = [GOOD | {"points": "one"}, GOOD | {"grade_id": 7}, {k: v for k, v in GOOD.items()
       if k != "locked"}, GOOD | {"surprise": 1}]  # fmt: skip


def failure(metadata: dict) -> str | None:
    cell = {"cell_type": "code", "metadata": {"nbgrader": metadata}, "source": ""}
    try:
        MetadataValidator().validate_cell(nbgrader.nbgraderformat.common.NotebookNode(cell))
    except jsonschema.ValidationError as exc:
        return f"{exc.message} at {list(exc.absolute_path)}"
    return None


@pytest.mark.parametrize("metadata", [GOOD, *BAD])
def test_cell_metadata_is_judged_as_without_the_batch(metadata):
    plain = failure(metadata)
    with batch_bookkeeping():
        assert failure(metadata) == plain
        assert failure(metadata) == plain  # the kept validator, a second time
    assert (plain is None) == (metadata is GOOD)


def test_gradebooks_of_a_batch_share_an_engine_and_hold_the_same(tmp_path, monkeypatch):
    # nbgrader runs `alembic` when it makes a gradebook; it is beside this interpreter
    monkeypatch.setenv(
        "PATH", os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
    )
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with batch_bookkeeping():
        with Gradebook(url, "course") as first:
            first.add_student("ada")
            engine = first.engine
        with Gradebook(url, "course") as second:
            assert second.engine is engine
            assert [s.id for s in second.students] == ["ada"]
    with Gradebook(url, "course") as after:
        assert after.engine is not engine
        assert [s.id for s in after.students] == ["ada"]
    assert nbgrader.api.create_engine.__module__.startswith("sqlalchemy")
    assert nbformat_common.jsonschema is jsonschema
