"""Intake from nbgrader's exchange (`make collect`, the formgrader's Collect): the same rules as
an upload's (grader/intake/), except who and when. There the learner writes the folder, so its
name and timestamp.txt are claims: the student is the account that owns the inbound folder (a
folder named for another student is refused), and the time is the newest change time (ctime) of
the folder and its entries, which no process can set back, taken again after the copy;
timestamp.txt is only compared with it. The folder itself is not followed if it was swapped for
a link after it was checked, and a file its owner does not own (a hard link to another account's
file) is not copied.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from grader.intake import OverCap, Report, install
from grader.intake.names import Place, safe_name, shown
from grader.intake.uploads import (
    COPY_ERRORS,
    TIME_FORMAT,
    TIMESTAMP_FILE,
    read_timestamp,
    walk_folder,
)
from grader.safegrade.grading_limits import LIMITS

# nbgrader's exchange: inbound/<student>+<assignment>+<time>[+<random>]/ (nbgrader.exchange)
INBOUND_NAME = re.compile(r"(?P<student>.+?)\+(?P<assignment>[^+]+)\+(?P<time>[^+]+)(?:\+[^+]*)?$")


@dataclass(frozen=True)
class Inbound:
    """One folder a learner submitted into the exchange, with who and when as the system says."""

    name: str
    path: Path
    student: str  # the folder's owner
    assignment: str
    when: datetime  # naive UTC: the newest change time of the folder and everything in it
    uid: int | None = None  # the owner's


def changed_at(path: Path) -> datetime:
    """The newest ctime of path and everything under it (links not followed), as naive UTC."""
    newest = os.lstat(path).st_ctime
    for folder, subfolders, files in os.walk(path):
        for name in subfolders + files:
            with contextlib.suppress(OSError):
                newest = max(newest, os.lstat(os.path.join(folder, name)).st_ctime)
    return datetime.fromtimestamp(newest, UTC).replace(tzinfo=None)


def read_inbound(
    inbound: Path, assignments: Iterable[str], owner_name: Callable[[int], str], report: Report
) -> list[Inbound]:
    """The inbound folders of `assignments` whose name and owner agree; the others refused."""
    found = []
    for entry in sorted(os.scandir(inbound), key=lambda entry: entry.name):
        match = INBOUND_NAME.match(entry.name)
        if not match or match["assignment"] not in assignments:
            continue  # another assignment's, or not nbgrader's
        claimed, info = match["student"], entry.stat(follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            report.refuse([entry.name], "not a folder (a link or a file): not followed")
            continue
        try:
            owner = owner_name(info.st_uid)
        except KeyError:
            owner = f"uid {info.st_uid}"
        if owner != claimed:
            reason = f"named for '{shown(claimed)}' but owned by '{owner}': refused, nothing of it"
            report.refuse([entry.name], reason + " collected (only a folder's owner submits)")
            continue
        found.append(
            Inbound(
                entry.name,
                Path(entry.path),
                owner,
                match["assignment"],
                changed_at(Path(entry.path)),
                info.st_uid,
            )
        )
    return found


def cross_check(submission: Inbound, files: dict, report: Report) -> None:
    """Drop the learner's timestamp.txt (the exchange's time is written instead), noting when
    it disagrees with the time the system recorded."""
    stamp = files.pop((TIMESTAMP_FILE,), None)
    if stamp is None:
        return
    try:
        claimed = read_timestamp(stamp[0].open)
    except (*COPY_ERRORS, UnicodeDecodeError) as error:
        report.notes.append(f"{shown(submission.name)}: timestamp.txt unreadable ({error})")
        return
    if abs((claimed - submission.when).total_seconds()) > LIMITS.clock_slack:
        report.notes.append(
            f"{shown(submission.name)}: timestamp.txt says {claimed:%Y-%m-%d %H:%M:%S} UTC; the "
            f"exchange changed it last at {submission.when:%Y-%m-%d %H:%M:%S} UTC: that one is used"
        )


def collect_inbound(
    inbound: Path, submitted: Path, assignments: Iterable[str], owner_name: Callable[[int], str]
) -> Report:
    """Copy each student's newest inbound submission of `assignments` into
    submitted/<owner>/<assignment>/ by intake's rules, with the time the system recorded."""
    assignments, report = tuple(assignments), Report()
    newest: dict[tuple[str, str], Inbound] = {}
    for submission in read_inbound(inbound, assignments, owner_name, report):
        key = (submission.student, submission.assignment)
        # Equal times (within the clock's tick): the learner's own later-named folder.
        if key not in newest or (submission.when, submission.name) > (
            newest[key].when,
            newest[key].name,
        ):
            newest[key] = submission
    submitted.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".collect-", dir=submitted))
    try:
        for index, (key, submission) in enumerate(sorted(newest.items())):
            files = {}
            # The folder is not followed if the learner swapped it for a link since it was
            # checked; a file that is not the owner's (a hard link) is not copied.
            for item in walk_folder(submission.path, submission.uid, follow_root=False):
                parts = (submission.name, *item.parts)
                if item.open is None:
                    report.refuse(parts, item.problem)
                    continue
                inner = tuple(safe_name(part) for part in item.parts)
                if inner != item.parts:
                    report.notes.append(f"{shown('/'.join(parts))} copied as {'/'.join(inner)}")
                files[inner] = (replace(item, parts=parts), Place(*key, inner, submission.when))
            cross_check(submission, files, report)
            install_inbound(key, submission, files, submitted, staging / str(index), report)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def install_inbound(key, submission: Inbound, files: dict, submitted: Path, stage: Path, report):
    target = submitted / key[0] / key[1]
    try:
        copied = install(files, submission.when, target, stage, report)
    except OverCap as error:
        report.refuse([submission.name], f"{error}: refused, nothing of it collected")
        return
    except OSError as error:
        report.refuse([submission.name], f"could not be written to {shown(str(target))} ({error})")
        return
    if copied:
        report.collected.append(key)
        report.files += copied
        # Changed while it was copied (a learner's process can see the collect start): the time
        # is the change time after the copy, which no later change can set back.
        after = changed_at(submission.path)
        if after > submission.when:
            (target / TIMESTAMP_FILE).write_text(after.strftime(TIME_FORMAT) + "\n")
            report.notes.append(
                f"{shown(submission.name)} changed while it was collected: its time is "
                f"{after:%Y-%m-%d %H:%M:%S} UTC, the change time after the copy"
            )
