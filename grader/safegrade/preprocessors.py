"""The course's nbgrader preprocessors (grader/nbgrader_config.py puts them in place).

SandboxExecute replaces nbgrader's Execute step of ``Autograde``; everything else (gradebook,
timestamps, late penalties, the autograded notebook, feedback) stays nbgrader's own. It sends the
notebook's code cells, in nbgrader's order, to a sandbox (``sandbox``), with each graded test
cell replaced by the instructor's probe for it. The records that come back are data. Each probe's
data then goes, with the exercise's checks, to a check process of this submission's own (a second
sandboxed child, ``checking``), which decodes it under size caps, rebuilds graphs without
compiling code and returns each verdict as data; this process, which holds the gradebook and the
grading secret, never decodes a learner's graph or runs a check on learner data. A failing check
becomes an error output of its cell, which is what nbgrader scores.
``--SandboxExecute.unsandboxed=True`` runs nbgrader's plain kernel instead, with a loud warning.

ResilientExecute: the plain path; a kernel that dies fails its cell and the later ones.
HideHiddenTests: feedback without hidden tests, tracebacks of graded cells cut to their last line.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from nbclient.exceptions import DeadKernelError
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import (
    ClearHiddenTests,
    DeduplicateIds,
    Execute,
    GetGrades,
    NbGraderPreprocessor,
)
from traitlets import Bool, Instance, List, Unicode

from . import checking, kernel, result_files, wording
from .assignments import catalogs_of
from .checking import GraderFailure
from .feedback_summary import RecordedTests, messages_in_language_of
from .gradebook import ClearUnreadableUpload
from .grading_files import results_folder, secret_file
from .pool import Pool
from .records import read_records
from .sandbox import Limits, SandboxError, memory_limit_in_force
from .session import GradingSession
from .staging import GRADER_ONLY, files_for_sandbox, forbidden_paths, preimports
from .verdicts import (
    code_cells,
    error_output,
    grade_id,
    is_test,
    outputs,
    place,
    seed,
    sent_data,
    step,
    stopped,
)
from .wording import _

UNSANDBOXED = (
    "UNSANDBOXED GRADING: learners' code runs in a plain kernel with your permissions and can "
    "read the hidden tests, the gradebook and your files, and forge its own score. Use it only "
    "for code you trust (--SandboxExecute.unsandboxed=True was given)."
)


def configure(c, course) -> None:
    """The grading settings of a course's nbgrader configuration (grader/nbgrader_config.py), for
    `course` (grader/course.py's Course: its source, results and secret): Autograde's Execute step
    replaced by SandboxExecute, deleted test cells put back, probes and checks never released,
    feedback without hidden tests, where the hidden part of each test cell finds the exercises'
    probes and checks (ResilientExecute.source, which its kernel gets), where the results and the
    grading secret are (grading_files.py), and this interpreter's folder on PATH (for nbgrader's
    `alembic`). Limits: GradingLimits' traits, set after this call."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.converters import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [SandboxExecute if s is Execute else s for s in steps]
    steps = Autograde.class_traits()["sanitize_preprocessors"].default()
    at = steps.index(DeduplicateIds) + 1
    c.Autograde.sanitize_preprocessors = [*steps[:at], ForgetDuplicates, *steps[at:]]
    c.OverwriteCells.add_missing_cells = True
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
    c.CourseDirectory.ignore += GRADER_ONLY
    steps = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests, RecordedTests]
    c.GenerateFeedback.preprocessors = steps
    c.Autograde.pre_convert_hook = ClearUnreadableUpload(c)
    c.GradingFiles.results, c.GradingFiles.secret = str(course.results), str(course.secret)
    c.ResilientExecute.source = str(course.source)
    c.ResilientExecute.catalogs = c.RecordedTests.catalogs = str(catalogs_of(course.root))
    # nbgrader's gradebook runs the `alembic` command; make and `make lab` do not activate the venv.
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])


class ForgetDuplicates(NbGraderPreprocessor):
    """After DeduplicateIds: a duplicated cell's emptied nbgrader metadata removed, so that it is
    a plain cell (OverwriteCells' add_missing_cells fails on the empty dict otherwise)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.metadata.get("nbgrader") == {}:
            del cell.metadata["nbgrader"]
        return cell, resources


class ResilientExecute(Execute):
    """nbgrader's Execute, except that a kernel that dies fails the cell it died in and every
    later code cell instead of failing the whole submission. Its kernel, which runs the hidden
    part of each test cell (kernel.run_check), is told where the exercises' probes and checks
    are in its own environment: `source`, from this course's configuration."""

    source = Unicode(
        "", help="The exercises' source folder (the Course's solutions/) for the kernel's checks"
    ).tag(config=True)
    catalogs = Unicode(
        "", help="The course's translation catalogs (assignments.catalogs_of; default: installed)"
    ).tag(config=True)

    def kernel_environment(self) -> dict[str, str]:
        """The environment the kernel starts with: this process's, and the course's source."""
        told = {kernel.SOURCE_VARIABLE: self.source} if self.source else {}
        return {**os.environ, **told}

    def start_new_kernel(self, **kwargs):
        kwargs.setdefault("env", self.kernel_environment())
        return super().start_new_kernel(**kwargs)

    async def async_start_new_kernel(self, **kwargs):
        kwargs.setdefault("env", self.kernel_environment())
        return await super().async_start_new_kernel(**kwargs)

    def preprocess(self, nb, resources=None, km=None):
        self._died_in: str | None = None
        self._not_run: set[int] = set()  # the index of each cell the dead kernel never ran
        nb, resources = super().preprocess(nb, resources, km)
        told = in_language_of(resources["nbgrader"]["assignment"], self.catalogs)
        for cell in (cell for cell in nb.cells if cell.cell_type == "code"):
            cell.outputs = told(cell.outputs)  # before the record, which the report reads
        record_tests(self.config, resources, nb, self._not_run)
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if self._died_in is not None:
            said = _("not run: the kernel died {where}").format(where=self._died_in)
            cell.outputs = [error_output("DeadKernelError", said)]
            self._not_run.add(index)
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._died_in = place(cell)
            said = _("the kernel died in this cell")
            cell.outputs.append(error_output("DeadKernelError", said))
            return cell, resources


def record_tests(config, resources, nb, not_run: set[int]) -> None:
    """Each graded cell's status and message, recorded where its verdict is known: from the
    outputs this process gave it; not run when the submission never reached it (``not_run``:
    the indexes of such cells), never because of what a message says (result_files.save_tests)."""
    info = resources["nbgrader"]
    graded = [
        (k, cell) for k, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and utils.is_grade(cell)
    ]  # fmt: skip
    tests = [result_files.tested(cell, k not in not_run) for k, cell in graded]
    result_files.save_tests(results_folder(config), info["student"], info["assignment"], tests)


def in_language_of(assignment: str, catalogs: str | Path = ""):
    """The grader's own messages in a cell's outputs (wording.py) told in the language of
    `assignment` (an exercise in another language, grader/exercises.py; `catalogs`: the course's,
    assignments.catalogs_of, the installed ones when empty): a function of the outputs. The
    checks' messages are already in it (its checks.py and verify.py are)."""
    lookup = messages_in_language_of(assignment, catalogs)
    if not lookup:
        return lambda found: found

    def told(found: list) -> list:
        errors = (o for o in found if o.output_type == "error" and o.ename in wording.GRADER_ERRORS)
        for output in errors:
            said = wording.translated(output.evalue, lookup)
            output.traceback = [line.replace(output.evalue, said) for line in output.traceback]
            output.evalue = said
        return found

    return told


class SandboxExecute(ResilientExecute):
    """Execute's replacement: learners' code runs in the sandbox, verdicts come from checks."""

    unsandboxed = Bool(False, help="Run learners' code unsandboxed (nbgrader's plain Execute)")
    preimport = List([], help="Modules a sandbox imports before any submission (default: those "
                      "imported by the source notebooks and probes)")  # fmt: skip
    session = Instance(GradingSession, allow_none=True, help="make autograde's shared session")
    for trait in (unsandboxed, preimport, session):
        trait.tag(config=True)
    del trait

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Every limit is GradingLimits' (grader/nbgrader_config.py); nbgrader's Execute.timeout
        # follows its cell_timeout, for the unsandboxed path too.
        self.grading_limits = Limits(config=self.config)
        self.timeout = int(self.grading_limits.cell_timeout)
        # a kernel that imports torch on a busy class server can take over nbclient's default
        # 60 s to answer (seen once in CI, two test workers at once): a submission is not lost
        self.startup_timeout = max(self.startup_timeout, 240)

    def preprocess(self, nb, resources=None, km=None):
        if self.unsandboxed:
            self.log.warning("!" * 20 + " " + UNSANDBOXED)
            return super().preprocess(nb, resources, km)
        info = resources["nbgrader"]
        course = CourseDirectory(config=self.config)
        folder = Path(course.format_path(course.source_directory, ".", info["assignment"]))
        submission_seed = seed(secret_file(self.config), info["student"], info["assignment"])
        submitted = course.format_path(
            course.submitted_directory, info["student"], info["assignment"]
        )
        cells = code_cells(nb)
        self.course, self.folder, self.own_pool = course, folder, None
        try:
            stream, nonce = self.run_job(*self.submission_job(cells, submitted, submission_seed))
            records = read_records(stream, len(cells), nonce)
            missing = stopped(self.last_reply, records, cells)
            verdicts = self.verdicts(cells, records, submission_seed)
        except GraderFailure:
            if self.session is not None:
                self.session.grader_failed.add((info["student"], info["assignment"]))
            raise
        finally:
            if self.own_pool is not None:
                self.own_pool.close()
        told = in_language_of(info["assignment"], self.catalogs)
        for index, cell in enumerate(cells):
            cell.outputs = told(outputs(cell, records.get(index), missing, verdicts.get(index)))
        at = {id(cell): index for index, cell in enumerate(nb.cells)}
        unrun = {at[id(cell)] for k, cell in enumerate(cells) if is_test(cell) and k not in records}
        record_tests(self.config, resources, nb, unrun)
        return nb, resources

    def submission_job(self, cells: list, submitted: str, seed: int) -> tuple[dict, list]:
        """The job of the submission's process and its blobs: each test's inputs (as the
        inputs process sent them, unparsed here) and the submission's files."""
        blobs = checking.Blobs()
        inputs = {name: blobs.add(data) for name, data in self.test_inputs(cells, seed).items()}
        files = files_for_sandbox([Path(submitted), self.folder], self.course.ignore)
        job = {
            "cells": [step(cell, inputs) for cell in cells],
            "probes": (self.folder / "probes.py").read_text(),
            "files": blobs.files(files),
        }
        return job, blobs

    def test_inputs(self, cells: list, seed: int) -> dict[str, bytes]:
        """grade_id -> its inputs (the bytes of their JSON), for every test cell: made from
        checks.py and the seed by an inputs process of this submission's own (a sandboxed child
        that has held no learner's data), so that this process, which holds the gradebook and
        the grading secret, never runs checks.py, nor imports torch to make models for it."""
        tests = sorted({grade_id(cell) for cell in cells if is_test(cell)})
        if not tests:
            return {}
        stream, nonce = self.run_job(*checking.inputs_job(self.exercise_files(), seed, tests))
        found = read_records(stream, len(tests), nonce)
        return {name: checking.inputs_of(found.get(k), name) for k, name in enumerate(tests)}

    def exercise_files(self) -> dict[str, bytes]:
        """The exercise's Python files (checks.py, probes.py, verify.py), by name."""
        return {path.name: path.read_bytes() for path in sorted(self.folder.glob("*.py"))}

    def verdicts(self, cells: list, records: dict, seed: int) -> dict[int, tuple | None]:
        """cell index -> the verdict of its check (None: passed), for every test cell whose
        probe sent data, from a check process of this submission's own (checking.py)."""
        tested = [i for i, c in enumerate(cells) if is_test(c) and sent_data(c, records.get(i))]
        if not tested:
            return {}
        tests = [(grade_id(cells[i]), records[i]["data"]) for i in tested]
        stream, nonce = self.run_job(*checking.check_job(self.exercise_files(), seed, tests))
        found = read_records(stream, len(tests), nonce)
        reply = self.last_reply
        why = _("the grader's check of this test did not finish: its process {status}")
        why = why.format(status=reply.get("status"))
        if reply.get("timed_out"):
            why = _("the grader's check of this test did not finish within the budget")
        return {i: checking.verdict_of(found.get(k), why) for k, i in enumerate(tested)}

    def limits(self) -> Limits:
        return self.grading_limits

    def run_job(self, job: dict, blobs: list) -> tuple[bytearray, str]:
        """The records the job's sandboxed process sent, and the job's nonce; a sandbox that
        fails is replaced and the job run once more. The reply is kept as last_reply."""
        job = job | {"nonce": secrets.token_hex(16)}
        failure = None
        for attempt in ("retrying in a fresh sandbox", "giving up"):
            try:
                self.last_reply = self.run_once(job, blobs)
                return self.last_reply["records"], job["nonce"]
            except SandboxError as exc:
                self.log.warning("safegrade: the sandbox failed (%s); %s", exc, attempt)
                failure = exc
        raise GraderFailure(f"the grader's sandbox failed twice: {failure}")

    def run_once(self, job: dict, blobs: list) -> dict:
        if self.session is not None:
            with self.session.sandbox() as box:
                return box.run(job, blobs)
        if self.own_pool is None:  # one sandbox for this notebook: its submission and checks
            self.log.info("safegrade: %s", memory_limit_in_force(self.limits()))
            imports = self.preimport or preimports([self.folder])
            self.own_pool = Pool(1, imports, forbidden_paths(self.course), self.limits())
        with self.own_pool.sandbox() as box:
            return box.run(job, blobs)


class HideHiddenTests(ClearHiddenTests):
    """ClearHiddenTests for feedback: also shorten graded cells' tracebacks to their last line."""

    # The feedback exporter configures this for every preprocessor (as nbgrader's GetGrades has).
    display_data_priority = List(GetGrades.class_traits()["display_data_priority"].default())
    display_data_priority.tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        # Only instructor cells hold hidden tests; a learner's answer may quote the markers.
        if not utils.is_solution(cell):
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if utils.is_grade(cell) and cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
