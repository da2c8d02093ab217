"""nbgrader's exchange, read and written by the course's rules (grader/nbgrader_config.py puts these
classes in nbgrader's place, so `nbgrader collect`, `nbgrader release_feedback` and the formgrader's
Collect and Release Feedback buttons use them; `make collect` and `make release-feedback` call the
same functions).

* Collect: intake_exchange.collect_inbound: links never followed, the student is the inbound
  folder's owner, the time is the one the system recorded (not the learner's timestamp.txt).
* Release feedback: every student whose feedback can go through the exchange gets it; a feedback
  folder that cannot (an LMS or folder upload has no submission_secret.txt) is named with the
  reason, and does not stop the others. nbgrader's own class stops at the first such folder.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.exchange.default import ExchangeCollect, ExchangeReleaseFeedback
from nbgrader.utils import notebook_hash

from grader import intake
from grader.intake import exchange as intake_exchange
from grader.safegrade.data import inert_text
from grader.safegrade.grading_limits import LIMITS
from grader.safegrade.result_files import not_graded

SECRET_FILE = "submission_secret.txt"
OUTBOUND_FEEDBACK_MODE = 0o711  # nbgrader's: learners reach their own file by its hashed name


def owner_name(uid: int) -> str:
    return pwd.getpwuid(uid).pw_name


def inbound_folder(exchange_root: Path, course_id: str) -> Path:
    return Path(exchange_root) / course_id / "inbound"


def collect(exchange_root: Path, course_id: str, submitted: Path, assignments) -> intake.Report:
    """Every student's newest exchange submission of `assignments` into `submitted`."""
    inbound = inbound_folder(exchange_root, course_id)
    if not inbound.is_dir():
        raise intake.IntakeError(f"{inbound} does not exist: nothing was released through it")
    return intake_exchange.collect_inbound(inbound, submitted, assignments, owner_name)


def collect_command(exchange_root: Path, course_id: str, submitted: Path, assignments) -> int:
    """`make collect`: collect, print the report. Exit status: 0 all collected, 1 some files or
    folders refused, 2 nothing to collect."""
    try:
        report = collect(exchange_root, course_id, submitted, assignments)
    except intake.IntakeError as error:
        print(f"collect: {error}", file=sys.stderr)
        return 2
    inbound = inbound_folder(exchange_root, course_id)
    if not report.collected and not report.refused:
        names = ", ".join(assignments)
        print(f"collect: no submission of {names} in {inbound} yet", file=sys.stderr)
        return 2
    print("\n".join(report.lines(str(inbound))), flush=True)
    return 1 if report.refused or not report.collected else 0


def release_feedback_command(
    course_exchange: Path, feedback: Path, assignments, results: Path | None = None
) -> int:
    """`make release-feedback`: release every feedback folder of `assignments` under `feedback`
    to <course_exchange>/feedback, printing what was not, and each upload the last make
    autograde could not grade (its results under `results`: no feedback to release). Exit
    status: 0 all released, 1 some not, 2 none to release."""
    folders = {a: list(feedback.glob(f"*/{a}")) for a in assignments}
    ungraded = not_graded(results, assignments) if results is not None else []
    for result in ungraded:
        note = f"no feedback for {result.student}/{result.assignment}: {result.reason}"
        print(inert_text(note, LIMITS.reason_chars), file=sys.stderr)
    if not any(folders.values()):
        print(
            f"release-feedback: no feedback of {', '.join(assignments)} in {feedback}: "
            "run make feedback first",
            file=sys.stderr,
        )
        return 2
    not_released = 0
    for assignment, found in folders.items():
        result = release_feedback(found, assignment, course_exchange / "feedback")
        print(f"{assignment}:", *result.lines(), sep="\n  ", flush=True)
        not_released += len(result.not_released)
    return 1 if not_released or ungraded else 0


@dataclass
class FeedbackRelease:
    released: list[str] = field(default_factory=list)  # "student/assignment/notebook"
    not_released: list[tuple[str, str]] = field(default_factory=list)  # (folder, reason)

    def lines(self) -> list[str]:
        lines = [f"not released: {folder}: {reason}" for folder, reason in self.not_released]
        summary = f"released {len(self.released)} feedback file(s) through the exchange"
        return [*lines, summary + f"; {len(self.not_released)} folder(s) not released"]


def release_feedback(folders: list[Path], assignment: str, outbound: Path) -> FeedbackRelease:
    """Copy each feedback folder's *.html (one student's feedback on `assignment`) to
    outbound/<hash>.html, where the learner's own Fetch Feedback finds it (the hash of their
    submission's secret and the notebook)."""
    result = FeedbackRelease()
    folders = sorted(folder for folder in folders if folder.is_dir())
    if folders and not outbound.is_dir():
        outbound.mkdir(parents=True)
        outbound.chmod(OUTBOUND_FEEDBACK_MODE)
    for folder in folders:
        # A learner's submission reaches this folder too (nbgrader copies its other files, and
        # its submission_secret.txt): a folder named *.html or a secret that is not text must
        # stop only that student's release.
        pages = sorted(page for page in folder.glob("*.html") if page.is_file())
        reason = release_problem(folder, pages)
        if not reason:
            try:
                secret = (folder / SECRET_FILE).read_text()
                for page in pages:
                    release_page(page, secret, outbound)
                    result.released.append(str(page))
            except (OSError, UnicodeDecodeError) as error:
                reason = f"could not be released ({error})"
        if reason:
            result.not_released.append((str(folder), reason))
    return result


def release_page(page: Path, secret: str, outbound: Path) -> None:
    target = outbound / f"{notebook_hash(secret=secret, notebook_id=page.stem)}.html"
    staged = target.with_suffix(".tmp")
    shutil.copyfile(page, staged)
    staged.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    os.replace(staged, target)


def release_problem(folder: Path, pages: list[Path]) -> str:
    if not pages:
        return "no feedback HTML in it (make feedback writes it)"
    if not (folder / SECRET_FILE).is_file():
        return (
            f"not submitted through the exchange (no {SECRET_FILE}: an LMS or folder upload): "
            "hand its HTML to the student another way"
        )
    return ""


class SafeExchangeCollect(ExchangeCollect):
    """nbgrader's collect (and the formgrader's Collect button) by
    intake_exchange.collect_inbound."""

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.inbound_path = str(inbound_folder(self.root, self.coursedir.course_id))
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")

    def copy_files(self):
        submitted = Path(self.coursedir.root) / self.coursedir.submitted_directory
        assignment = self.coursedir.assignment_id
        report = intake_exchange.collect_inbound(
            Path(self.inbound_path), submitted, [assignment], owner_name
        )
        for line in report.lines(self.inbound_path):
            (self.log.warning if line.startswith("not collected") else self.log.info)(line)


class ReleaseEveryFeedback(ExchangeReleaseFeedback):
    """nbgrader's release_feedback (and the formgrader's button) by release_feedback above."""

    def copy_files(self):
        coursedir, excluded = self.coursedir, set(self.coursedir.student_id_exclude.split(","))
        student = coursedir.student_id or "*"
        pattern = coursedir.format_path(
            coursedir.feedback_directory, student, coursedir.assignment_id
        )
        folders = [Path(path) for path in glob.glob(pattern)]
        folders = [folder for folder in folders if folder.parent.name not in excluded]
        result = release_feedback(folders, coursedir.assignment_id, Path(self.dest_path))
        for line in result.lines():
            (self.log.warning if line.startswith("not released") else self.log.info)(line)
