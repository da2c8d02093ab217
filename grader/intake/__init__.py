"""Bring learners' uploads into nbgrader's submitted folder (`make autograde SUBMISSIONS=...`).

An upload is a folder, or a .zip of one, holding either or both of
    <student>/<assignment>/...   nbgrader's layout (the exchange's, `nbgrader collect`'s)
    files an LMS named           matched by a file-name pattern: nbgrader's FileNameCollectorPlugin
                                 regex with `student_id` and `file_id` groups, optional `timestamp`
A zip whose entries all sit in one folder (`zip -r X.zip X`) is read as that folder, unless that
folder is a student's (its subfolders are assignments).

Every (student, assignment) found replaces `<submitted>/<student>/<assignment>/` as a whole, unless
both carry a time and the one already there is newer. Nothing is lost without a word: every
regular file either arrives or is reported with the reason, and one bad upload never stops the
others. Links are never followed (a link, dangling or not, is reported, not copied); FIFOs, sockets
and devices are reported without being opened. A file name that is not printable UTF-8 text is
copied under a safe name (each offending byte written as %XX) and the rename is reported; a student
id that is not printable text, or starts with '.', is reported and nothing of it is collected.
Zip entries that would land outside the upload, links, special files, encrypted entries and entries
over the size caps are refused; a submission whose files pass the per-submission caps (total
bytes, number of files) is refused whole before anything of it is copied. Times come only from a
timestamp.txt in the upload (as nbgrader's exchange writes it) or from a `timestamp` group of the
file-name pattern, never from file dates.

nbgrader's exchange (`make collect`, the formgrader's Collect) is read by the same rules, except
who and when: grader/intake/exchange.py. Parts: names.py (who and what a file is),
uploads.py (reading a folder or zip), grader/safegrade/files.py (the no-follow reader),
grader/safegrade/grading_limits.py (every cap).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.intake.names import (
    FileNamePattern,
    Locator,
    Place,
    lms_patterns,
    near_match,
    pattern_hints,
    safe_name,
    shown,
    student_problem,
)
from grader.intake.uploads import (
    COPY_ERRORS,
    TIME_FORMAT,
    TIMESTAMP_FILE,
    Found,
    IntakeError,
    existing_time,
    read_timestamp,
    read_zip,
    strip_zip_root,
    walk_folder,
)
from grader.safegrade.files import open_regular
from grader.safegrade.grading_limits import LIMITS

# intake's public names, wherever they are defined
__all__ = [
    "TIME_FORMAT", "FileNamePattern", "IntakeError", "OverCap", "Report", "collect", "copy_file",
    "lms_patterns", "near_match", "open_regular", "safe_name", "shown", "walk_folder",
]  # fmt: skip


class OverCap(Exception):
    """One submission passes a per-submission cap (nothing of it was collected)."""


@dataclass
class Report:
    collected: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path as shown, reason)
    notes: list[str] = field(default_factory=list)

    def refuse(self, parts: Iterable[str], reason: str) -> None:
        self.refused.append((shown("/".join(parts)), reason))

    def lines(self, source: str) -> list[str]:
        lines = [f"not collected: {path}: {reason}" for path, reason in sorted(self.refused)]
        lines += [f"note: {note}" for note in self.notes]
        summary = f"collected {len(self.collected)} submission(s), {self.files} file(s), from "
        summary += f"{shown(source)}; {len(self.refused)} file(s) not collected"
        return [*lines, summary + (" (listed above)" if self.refused else "")]


Candidates = dict[tuple[str, ...], list[tuple[Found, Place]]]


def plan(found: Iterable[Found], locate: Locator, report: Report) -> dict[tuple, Candidates]:
    """(student, assignment) -> path inside the submission -> the upload's files for it."""
    groups: dict[tuple, Candidates] = {}
    for item in found:
        place = locate(item.parts) if item.open else item.problem
        if isinstance(place, Place) and (problem := student_problem(place.student)):
            place = problem
        if isinstance(place, str):
            report.refuse(item.parts, place)
            continue
        inner = tuple(safe_name(part) for part in place.inner)
        if inner != place.inner:
            where = "/".join((place.student, place.assignment, *inner))
            report.notes.append(f"{shown('/'.join(item.parts))} copied as {where} (odd name)")
        files = groups.setdefault((place.student, place.assignment), {})
        files.setdefault(inner, []).append((item, place))
    return groups


def choose(candidates: Candidates, report: Report) -> dict[tuple[str, ...], tuple[Found, Place]]:
    """One file per path: the newest when every candidate has a time, else none of them."""
    chosen = {}
    for inner, options in candidates.items():
        if len(options) == 1:
            chosen[inner] = options[0]
            continue
        names = ", ".join(shown("/".join(item.parts)) for item, _ in options)
        if all(place.timestamp for _, place in options):
            newest = max(options, key=lambda option: option[1].timestamp)
            chosen[inner] = newest
            for item, _ in (option for option in options if option is not newest):
                report.refuse(item.parts, f"an older copy of {shown('/'.join(newest[0].parts))}")
            continue
        for item, _ in options:
            reason = f"{len(options)} files ({names}) would become the same file: remove all "
            report.refuse(item.parts, reason + "but one and collect again")
    return chosen


def submission_time(files: dict, report: Report) -> datetime | None:
    """The time of a submission: its timestamp.txt, else the newest time in its file names.
    An unreadable timestamp.txt is reported and dropped (the submission then has no time)."""
    stamp = files.get((TIMESTAMP_FILE,))
    if stamp is not None:
        try:
            return read_timestamp(stamp[0].open)
        except (*COPY_ERRORS, UnicodeDecodeError) as error:
            del files[(TIMESTAMP_FILE,)]
            report.refuse(stamp[0].parts, f"not a time nbgrader can read ({error}): dropped")
    times = [place.timestamp for _, place in files.values() if place.timestamp]
    return max(times, default=None)


def over_caps(files: dict) -> str:
    """Why a submission of `files` passes a per-submission cap ("" when it does not)."""
    total = sum(item.size for item, _ in files.values())
    if len(files) > (most := LIMITS.submission_files):
        return f"{len(files)} files, over the cap of {most} files per submission"
    if total > (most := LIMITS.submission_bytes):
        return f"{total} bytes, over the cap of {most} bytes per submission"
    return ""


def copy_file(found: Found, target: Path, room: int) -> int:
    """Copy one file, at most file_cap of its name, into a new file (none when it fails).
    Returns its size; OverCap when it passes the `room` left in its submission (it grew)."""
    cap, most = LIMITS.file_cap(target.name), LIMITS.submission_bytes
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with found.open() as source, open(target, "xb") as sink:
            copied = 0
            while chunk := source.read(1 << 20):
                copied += len(chunk)
                if copied > cap:
                    raise ValueError(f"over the {cap}-byte cap per file")
                if copied > room:
                    raise OverCap(f"over the cap of {most} bytes per submission")
                sink.write(chunk)
        return copied
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def install(files: dict, when: datetime | None, target: Path, stage: Path, report: Report) -> int:
    """Copy one submission's files to stage, then put stage in target's place (replacing an
    earlier submission unless that one is newer). Returns the number of files copied; OverCap
    (nothing copied) when the submission passes a per-submission cap."""
    before = existing_time(target)
    if when and before and when < before:
        reason = f"older ({when:%Y-%m-%d %H:%M} UTC) than the submission already collected "
        for item, _ in files.values():
            report.refuse(item.parts, reason + f"({before:%Y-%m-%d %H:%M} UTC): that one is kept")
        return 0
    if problem := over_caps(files):
        raise OverCap(problem)
    copied, room = 0, LIMITS.submission_bytes
    try:
        for inner, (item, _) in sorted(files.items()):
            try:
                room -= copy_file(item, stage.joinpath(*inner), room)
                copied += 1
            except COPY_ERRORS as error:
                report.refuse(item.parts, f"could not be copied ({error})")
    except OverCap:
        shutil.rmtree(stage, ignore_errors=True)  # nothing of it stays on the disk
        raise
    if not copied:
        return 0
    if when and not (stage / TIMESTAMP_FILE).exists():
        (stage / TIMESTAMP_FILE).write_text(when.strftime(TIME_FORMAT) + "\n")
    target.parent.mkdir(parents=True, exist_ok=True)
    earlier = stage.with_name(f"{stage.name}.earlier")  # deleted with the staging folder
    if os.path.lexists(target):
        os.rename(target, earlier)
    try:
        os.rename(stage, target)
    except OSError:
        if os.path.lexists(earlier):
            os.rename(earlier, target)
        raise
    return copied


def _upload(source: Path, assignments: tuple[str, ...], stack: contextlib.ExitStack):
    if source.is_dir():
        return list(walk_folder(source))
    if not source.is_file():
        raise IntakeError("no such folder or zip file")
    try:
        archive = stack.enter_context(zipfile.ZipFile(source))
        return strip_zip_root(list(read_zip(archive)), assignments)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, ValueError) as error:
        raise IntakeError(f"not a folder or a readable zip file ({error})") from error


def collect(
    source: Path, submitted: Path, assignments: Iterable[str], pattern: FileNamePattern, zone="UTC"
) -> Report:
    """Copy every submission of the upload at source into submitted/<student>/<assignment>/."""
    assignments, report = tuple(assignments), Report()
    with contextlib.ExitStack() as stack:
        found = _upload(source, assignments, stack)
        if not found:
            raise IntakeError("it holds no files")
        groups = plan(found, Locator(assignments, pattern, zone), report)
        submitted.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".collect-", dir=submitted))
        stack.callback(shutil.rmtree, staging, True)
        for index, (key, candidates) in enumerate(sorted(groups.items())):
            files = choose(candidates, report)
            collect_one(key, files, submitted, staging / str(index), report)
        report.notes += pattern_hints(groups, pattern)
    return report


def collect_one(key: tuple[str, str], files: dict, submitted: Path, stage: Path, report: Report):
    """Install one student's submission of one assignment and record the outcome."""
    student, assignment = key
    when = submission_time(files, report)
    target = submitted / student / assignment
    try:
        copied = install(files, when, target, stage, report)
    except OverCap as error:
        report.refuse([student, assignment], f"{error}: refused, nothing of it collected")
        return
    except OSError as error:
        for item, _ in files.values():
            report.refuse(item.parts, f"could not be written to {shown(str(target))} ({error})")
        return
    if copied:
        report.collected.append(key)
        report.files += copied
        if not (target / f"{assignment}.ipynb").exists():
            report.notes.append(f"{shown(student)}/{assignment} has no {assignment}.ipynb")


def file_name_pattern(course: Path, lms: str | None, presets: dict[str, str]) -> FileNamePattern:
    """presets[lms], or else the course config's FileNameCollectorPlugin.named_regexp (the
    pattern `nbgrader zip_collect` reads too), applied by nbgrader's own plugin."""

    def load():
        from nbgrader.plugins import FileNameCollectorPlugin
        from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

        quiet = logging.getLogger("course_grader.collect")  # the report says what did not match
        quiet.setLevel(logging.ERROR)
        if lms:
            plugin = FileNameCollectorPlugin(named_regexp=presets[lms], log=quiet)
        else:
            try:
                config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
            except ConfigFileNotFound as error:
                raise IntakeError(f"{error}: name a pattern with --lms") from error
            plugin = FileNameCollectorPlugin(config=config, log=quiet)
        regex = plugin.named_regexp
        try:
            groups = set(re.compile(regex).groupindex)
        except re.error as error:
            raise IntakeError(f"file-name pattern {regex!r}: {error}") from error
        if not {"student_id", "file_id"} <= groups:
            raise IntakeError(
                f"the file-name pattern {regex!r} needs (?P<student_id>...) and (?P<file_id>...)"
            )
        names = [name for name, preset in presets.items() if preset == regex]
        label = f"LMS={names[0]}" if names else f"{regex!r} (FileNameCollectorPlugin.named_regexp)"
        return plugin.collect, label

    return FileNamePattern(load)
