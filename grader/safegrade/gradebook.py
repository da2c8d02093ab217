"""Keep nbgrader's gradebook in step with the results, in one transaction (grader side).

The gradebook is written only here, by the grader process, from the result files the grader wrote.
Everything for an assignment is upserted and committed once; on any error the transaction is rolled
back and the gradebook stays as it was. Running it twice leaves the same rows.
"""

from __future__ import annotations

import os
import sys

from . import store
from .assignment import Assignment
from .course import Course


def collect_results(course: Course, name: str) -> list[dict]:
    results = []
    for student in course.students(name):
        result = store.read_result(course.result_path(student, name))
        if result is not None and result.get("student") == student:
            results.append(result)
    return results


def _one(session, model, **filters):
    return session.query(model).filter_by(**filters).one_or_none()


def _timestamp(text: str | None):
    if not text:
        return None
    from nbgrader import utils

    try:
        return utils.parse_utc(text)
    except Exception:
        return None


def _structure(session, api, gb, assignment: Assignment):
    """The assignment, its notebooks and cells; created if nbgrader never saw them."""
    row = _one(session, api.Assignment, name=assignment.name)
    if row is None:
        row = api.Assignment(name=assignment.name, course_id=gb.course_id)
        session.add(row)
    notebooks = {}
    for source in assignment.notebooks:
        nb = _one(session, api.Notebook, name=source.stem, assignment=row)
        if nb is None:
            nb = api.Notebook(name=source.stem, assignment=row)
            session.add(nb)
        grade_cells, solution_cells = {}, {}
        for cell in source.cells:
            graded = cell.kind == "test" or (
                cell.kind in ("manual", "solution")
                and cell.metadata.get("nbgrader", {}).get("grade")
            )
            if graded:
                found = _one(session, api.GradeCell, name=cell.id, notebook=nb)
                if found is None:
                    found = api.GradeCell(
                        name=cell.id, notebook=nb, max_score=cell.points, cell_type=cell.cell_type
                    )
                    session.add(found)
                grade_cells[cell.id] = (found, cell.kind == "test")
            if cell.kind == "solution" or (
                cell.kind == "manual" and cell.metadata.get("nbgrader", {}).get("solution")
            ):
                found = _one(session, api.SolutionCell, name=cell.id, notebook=nb)
                if found is None:
                    found = api.SolutionCell(name=cell.id, notebook=nb)
                    session.add(found)
                solution_cells[cell.id] = found
        notebooks[source.name] = (nb, grade_cells, solution_cells)
    return row, notebooks


def sync(course: Course, assignment: Assignment, results: list[dict]) -> int:
    from nbgrader import api

    # nbgrader's Gradebook runs the `alembic` command that sits beside this interpreter.
    bin_dir = os.path.dirname(sys.executable)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])

    gb = api.Gradebook(course.db_url, course.course_id or "default_course")
    session = gb.db
    try:
        row, notebooks = _structure(session, api, gb, assignment)
        for result in results:
            student = session.get(api.Student, result["student"])
            if student is None:
                student = api.Student(id=result["student"])
                session.add(student)
            submission = _one(session, api.SubmittedAssignment, assignment=row, student=student)
            if submission is None:
                submission = api.SubmittedAssignment(assignment=row, student=student)
                session.add(submission)
            submission.timestamp = _timestamp(result.get("timestamp")) or submission.timestamp
            for name, (nb, grade_cells, solution_cells) in notebooks.items():
                nb_result = result["notebooks"].get(name, {"tests": [], "file": None})
                points = {t["id"]: t["points"] for t in nb_result["tests"]}
                snb = _one(session, api.SubmittedNotebook, assignment=submission, notebook=nb)
                if snb is None:
                    snb = api.SubmittedNotebook(assignment=submission, notebook=nb)
                    session.add(snb)
                for grade_id, (cell, autograded) in grade_cells.items():
                    grade = _one(session, api.Grade, notebook=snb, cell=cell)
                    if grade is None:
                        grade = api.Grade(notebook=snb, cell=cell)
                        session.add(grade)
                    if autograded:
                        grade.auto_score = float(points.get(grade_id, 0.0))
                        grade.needs_manual_grade = grade.manual_score is not None
                    else:
                        grade.auto_score = None
                        grade.needs_manual_grade = grade.manual_score is None
                for cell in solution_cells.values():
                    comment = _one(session, api.Comment, notebook=snb, cell=cell)
                    if comment is None:
                        session.add(api.Comment(notebook=snb, cell=cell))
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        gb.close()
    return len(results)
