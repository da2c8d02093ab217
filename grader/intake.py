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

nbgrader's exchange (`collect_inbound`: `make collect`, the formgrader's Collect) is read by the
same rules, except who and when: there the learner writes the folder, so its name and timestamp.txt
are claims. The student is the account that owns the inbound folder (a folder named for another
student is refused), and the time is the newest change time (ctime) of the folder and its entries,
which no process can set back, taken again after the copy; timestamp.txt is only compared with it.
The folder itself is not followed if it was swapped for a link after it was checked, and a file
its owner does not own (a hard link to another account's file) is not copied.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO

MAX_FILE_BYTES = 256 * 2**20  # per file taken from a zip
MAX_ZIP_BYTES = 4 * 2**30  # all files taken from one zip, uncompressed
MAX_ZIP_ENTRIES = 50_000
# One student's submission of one assignment, from any source (an upload, a zip, the exchange):
# refused whole, before anything is copied, when its files' sizes (sparse files count in full:
# the copy is not sparse) or their number pass these.
MAX_SUBMISSION_BYTES = 2**30
MAX_SUBMISSION_FILES = 2_000
TIMESTAMP_FILE = "timestamp.txt"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's exchange format, in UTC
COPY_ERRORS = (OSError, EOFError, ValueError, RuntimeError, zipfile.BadZipFile, zlib.error)


class IntakeError(Exception):
    """The upload as a whole cannot be read (nothing was collected from it)."""


class OverCap(Exception):
    """One submission passes a per-submission cap (nothing of it was collected)."""


def lms_patterns(assignments: Iterable[str]) -> dict[str, str]:
    """File-name patterns of common LMS downloads (regexes for nbgrader's FileNameCollectorPlugin,
    matched with re.match against the file's path: `(?:.*/)?` lets them match a full path too)."""
    names = "|".join(map(re.escape, assignments))
    return {
        # alice_<exercise>.ipynb (student ids may hold underscores)
        "plain": rf"(?:.*/)?(?P<student_id>[^/]+)_(?P<file_id>{names})\.ipynb$",
        # Canvas: [<sortable name>_][LATE_]<user id or anon_...>_<attachment id>_<file>[-<n>].ipynb
        "canvas": rf"(?:.*/)?(?:[^/]*?_)?(?:LATE_)?(?P<student_id>\d+|anon_[^_/]+)_\d+_"
        rf"(?P<file_id>{names})(?:-\d+)?\.ipynb$",
        # Moodle: <Full Name>_<participant id>_assignsubmission_file_[/]<file>.ipynb
        "moodle": rf"(?:.*/)?(?P<student_id>[^/_]+)_\d+_assignsubmission_file_/?"
        rf"(?P<file_id>{names})\.ipynb$",
        # Blackboard: <assignment>_<username>_attempt_<YYYY-MM-DD-hh-mm-ss>_<file>.ipynb
        "blackboard": rf"(?:.*/)?[^/]*?_(?P<student_id>[^/]+?)_attempt_"
        rf"(?P<timestamp>\d{{4}}(?:-\d\d){{5}})_(?P<file_id>{names})\.ipynb$",
    }


# Student ids that suggest the wrong pattern was used (shown as a hint, nothing is changed).
PATTERN_HINTS = {
    "canvas": re.compile(r"_(?:LATE_)?\d+_\d+$"),
    "moodle": re.compile(r"_\d+_assignsubmission_file$"),
    "blackboard": re.compile(r"_attempt_\d{4}-"),
}


@dataclass(frozen=True)
class Found:
    """One entry of an upload: its path inside the upload and how to read it (None: refused)."""

    parts: tuple[str, ...]  # may hold undecodable bytes as surrogates (os.fsdecode)
    open: Callable[[], BinaryIO] | None = None
    problem: str = ""
    size: int = 0  # bytes, as the folder or the zip says (the copy counts them again)


@dataclass(frozen=True)
class Place:
    student: str
    assignment: str
    inner: tuple[str, ...]  # path inside the submission folder
    timestamp: datetime | None = None  # naive UTC, from the file name
    by_name: bool = False  # placed by the file-name pattern


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


def _escaped(text: str, template: str) -> str:
    """text with every character that is not printable replaced by its UTF-8 bytes."""

    def byte_text(char: str) -> str:
        try:
            raw = char.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = char.encode("utf-8", "surrogatepass")
        return "".join(template % byte for byte in raw)

    return "".join(char if char.isprintable() else byte_text(char) for char in text)


def near_match(name: str, choices: Iterable[str]) -> str:
    """'; did you mean 'X'?' for the choice `name` is a slip of (a letter or two off, or the
    only choice with the same first word: node_dumps for node_dump_graph), else ''."""
    choices = list(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.8)
    same_start = [c for c in choices if c.split("_")[0] == name.split("_")[0]]
    close = close or (same_start if len(same_start) == 1 else [])
    return f"; did you mean '{close[0]}'?" if close else ""


def shown(text: str) -> str:
    """A path as printed in messages: never fails to encode, shows odd bytes as \\xNN."""
    return _escaped(text, "\\x%02x")


def safe_name(name: str) -> str:
    """The name a file is copied under: odd bytes and control characters become %XX."""
    return _escaped(name, "%%%02X")


def student_problem(student: str) -> str | None:
    if not student:
        return "the student id is empty"
    if safe_name(student) != student:
        return f"the student id '{shown(student)}' is not printable UTF-8 text"
    if student.startswith(".") or "/" in student or "\\" in student:
        return f"the student id '{student}' starts with '.' or holds a slash"
    return None


def _kind(mode: int) -> str:
    kinds = [(stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket")]
    kinds += [(stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    return next((name for test, name in kinds if test(mode)), "a special file")


def open_regular(path: str, owner: int | None = None) -> BinaryIO:
    """Open a regular file without following a link or blocking on a FIFO swapped in; with
    `owner`, only a file that account owns (a hard link keeps its file's owner)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    info = os.fstat(fd)
    problem = "" if stat.S_ISREG(info.st_mode) else "no longer a regular file"
    if not problem and owner is not None and info.st_uid != owner:
        problem = f"owned by uid {info.st_uid}, not by the submitter (a hard link?): not copied"
    # O_NOFOLLOW covers the last name only: a folder on the way swapped for a link (a learner's
    # process racing the copy) shows as another path to the file that was opened.
    with contextlib.suppress(OSError):
        if os.readlink(f"/proc/self/fd/{fd}") != os.path.abspath(path):
            problem = "a folder on its path was replaced by a link: not followed"
    if problem:
        os.close(fd)
        raise OSError(problem)
    return os.fdopen(fd, "rb")


def _entry(entry: os.DirEntry, parts: tuple[str, ...], owner=None) -> Found | tuple[str, ...]:
    """A Found for a file, link or special file; the parts of a folder to walk."""
    if entry.is_symlink():
        try:
            target = shown(os.readlink(entry.path))
        except OSError:
            target = "?"
        return Found(parts, problem=f"a symbolic link (to {target}): links are not followed")
    if entry.is_dir(follow_symlinks=False):
        return parts
    if entry.is_file(follow_symlinks=False):
        size = entry.stat(follow_symlinks=False).st_size
        return Found(parts, functools.partial(open_regular, entry.path, owner), size=size)
    kind = _kind(entry.stat(follow_symlinks=False).st_mode)
    return Found(parts, problem=f"{kind}, not a regular file: not opened")


def walk_folder(root: Path, owner: int | None = None, follow_root=True) -> Iterator[Found]:
    """Every file, link and special file under root, without following links (root itself is
    followed unless follow_root is False: a learner's folder may be swapped for a link)."""
    # open_regular compares the path it opened with this one
    if follow_root:
        root = Path(os.path.realpath(root))
    else:
        root = Path(os.path.realpath(root.parent)) / root.name
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parts = pending.pop()
        try:
            with os.scandir(os.path.join(root, *parts)) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            yield Found((*parts, ""), problem=f"the folder cannot be read ({error.strerror})")
            continue
        for entry in entries:
            try:
                found = _entry(entry, (*parts, entry.name), owner)
            except OSError as error:
                found = Found((*parts, entry.name), problem=f"cannot be read ({error.strerror})")
            if isinstance(found, Found):
                yield found
            else:
                pending.append(found)


def _zip_problem(info: zipfile.ZipInfo, parts: tuple[str, ...]) -> str:
    name = info.filename
    if not parts or ".." in parts or name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        return "the entry's path leads outside the upload (zip slip): refused"
    mode = info.external_attr >> 16 if info.create_system == 3 else 0
    if stat.S_ISLNK(mode):
        return "a symbolic link entry: refused"
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        return f"{_kind(mode)} entry, not a regular file: refused"
    if info.flag_bits & 0x1:
        return "an encrypted entry: refused"
    if info.file_size > MAX_FILE_BYTES:
        return f"{info.file_size} bytes, over the {MAX_FILE_BYTES}-byte cap per file: refused"
    return ""


def read_zip(archive: zipfile.ZipFile) -> Iterator[Found]:
    """Every file entry of the archive (directories are not files), each checked."""
    entries = archive.infolist()
    if len(entries) > MAX_ZIP_ENTRIES:
        raise IntakeError(f"{len(entries)} entries, over the cap of {MAX_ZIP_ENTRIES}: unpack it")
    total = 0
    for info in entries:
        if info.is_dir():
            continue
        parts = tuple(p for p in re.split(r"[/\\]", info.filename) if p not in ("", "."))
        problem = _zip_problem(info, parts)
        if not problem and total + info.file_size > MAX_ZIP_BYTES:
            problem = f"the zip's files pass the {MAX_ZIP_BYTES}-byte cap here: refused"
        if problem:
            yield Found(parts or (info.filename,), problem=problem)
            continue
        total += info.file_size
        yield Found(parts, functools.partial(archive.open, info), size=info.file_size)


def strip_zip_root(found: list[Found], assignments: Iterable[str]) -> list[Found]:
    """Read a zip of one folder as that folder, unless the folder is one student's."""
    content = [f for f in found if f.parts[0] != "__MACOSX"]
    roots = {f.parts[0] for f in content}
    student_folder = any(len(f.parts) > 2 and f.parts[1] in assignments for f in content)
    if len(roots) != 1 or student_folder or any(len(f.parts) < 2 for f in content):
        return found
    return [f if f.parts[0] == "__MACOSX" else replace(f, parts=f.parts[1:]) for f in found]


@dataclass
class FileNamePattern:
    """A FileNameCollectorPlugin-like matcher, made on first use (loading a config is slow)."""

    load: Callable[[], tuple[Callable[[str], dict | None], str]]  # -> (match, label)

    @functools.cached_property
    def _loaded(self) -> tuple[Callable[[str], dict | None], str]:
        return self.load()

    def match(self, path: str) -> dict | None:
        return self._loaded[0](path)

    @property
    def label(self) -> str:
        return self._loaded[1]


def name_time(text: str, zone_name: str) -> datetime:
    """A time from a file name (Blackboard's 2025-03-02-10-15-00, or ISO 8601), read in zone_name
    unless it names its zone, as naive UTC. (dateutil, which nbgrader uses, drops the minutes of
    Blackboard's form.)"""
    from dateutil import tz

    try:
        moment = datetime.strptime(text, "%Y-%m-%d-%H-%M-%S")
    except ValueError:
        moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz.gettz(zone_name))
    return moment.astimezone(UTC).replace(tzinfo=None)


@dataclass
class Locator:
    assignments: tuple[str, ...]
    pattern: FileNamePattern
    zone_name: str = "UTC"

    def __call__(self, parts: tuple[str, ...]) -> Place | str:
        """Where a file of the upload belongs, or why it belongs nowhere."""
        if parts[0] == "__MACOSX":
            return "macOS archive metadata (__MACOSX), not part of a submission"
        if len(parts) >= 3 and parts[1] in self.assignments:
            return Place(parts[0], parts[1], parts[2:])
        groups = self.pattern.match("/".join(parts))
        if not groups:
            layout = "<student>/<assignment>/..."
            if len(parts) >= 3:
                layout = f"{layout} ('{shown(parts[1])}' is not an assignment of this course"
                layout += f"{near_match(parts[1], self.assignments)})"
            return f"neither {layout} nor a name the file-name pattern {self.pattern.label} matches"
        file_id = PurePosixPath(groups["file_id"])
        assignment = groups.get("assignment_id") or file_id.stem
        if assignment not in self.assignments:
            return (
                f"the pattern gives assignment '{shown(assignment)}', not one of this course"
                + near_match(assignment, self.assignments)
            )
        when = None
        if groups.get("timestamp"):
            try:
                when = name_time(groups["timestamp"], self.zone_name)
            except (ValueError, OverflowError):
                return f"the time '{shown(groups['timestamp'])}' in the name cannot be read"
        inner = file_id.with_name(file_id.stem + PurePosixPath(parts[-1]).suffix).parts
        return Place(groups["student_id"], assignment, inner, when, by_name=True)


def read_timestamp(opener: Callable[[], BinaryIO]) -> datetime:
    """A timestamp.txt as nbgrader reads it (naive UTC); ValueError when it is not one."""
    from nbgrader.utils import parse_utc

    with opener() as handle:
        text = handle.read(4096).decode("utf-8").strip()
    if not text:
        raise ValueError("empty")
    try:
        return parse_utc(text)
    except (ValueError, OverflowError) as error:
        raise ValueError(f"'{shown(text[:40])}' is not a time") from error


def existing_time(folder: Path) -> datetime | None:
    path = Path(os.path.realpath(folder)) / TIMESTAMP_FILE
    if not path.is_file() or path.is_symlink():
        return None
    try:
        return read_timestamp(functools.partial(open_regular, str(path)))
    except (*COPY_ERRORS, UnicodeDecodeError):
        return None


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
    if len(files) > MAX_SUBMISSION_FILES:
        return f"{len(files)} files, over the cap of {MAX_SUBMISSION_FILES} files per submission"
    if total > MAX_SUBMISSION_BYTES:
        return f"{total} bytes, over the cap of {MAX_SUBMISSION_BYTES} bytes per submission"
    return ""


def copy_file(found: Found, target: Path, room: int) -> int:
    """Copy one file, at most MAX_FILE_BYTES of it, into a new file (none when it fails).
    Returns its size; OverCap when it passes the `room` left in its submission (it grew)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with found.open() as source, open(target, "xb") as sink:
            copied = 0
            while chunk := source.read(1 << 20):
                copied += len(chunk)
                if copied > MAX_FILE_BYTES:
                    raise ValueError(f"over the {MAX_FILE_BYTES}-byte cap per file")
                if copied > room:
                    raise OverCap(f"over the cap of {MAX_SUBMISSION_BYTES} bytes per submission")
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
    copied, room = 0, MAX_SUBMISSION_BYTES
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


def pattern_hints(groups: dict[tuple, Candidates], pattern: FileNamePattern) -> list[str]:
    """Hints when students placed by their file names look like another LMS's download."""
    by_name = {
        student
        for (student, _), candidates in groups.items()
        if any(place.by_name for options in candidates.values() for _, place in options)
    }
    hints = []
    for lms, looks_like in PATTERN_HINTS.items():
        match = next(filter(looks_like.search, by_name), None)
        if match and lms not in pattern.label:
            example = f"student ids such as '{shown(match)}'"
            hints.append(f"{example} look like a {lms} download: try LMS={lms}")
    return hints


# nbgrader's exchange: inbound/<student>+<assignment>+<time>[+<random>]/ (nbgrader.exchange)
INBOUND_NAME = re.compile(r"(?P<student>.+?)\+(?P<assignment>[^+]+)\+(?P<time>[^+]+)(?:\+[^+]*)?$")
CLOCK_SLACK_S = 120  # timestamp.txt and the change time may differ by the copy's duration


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
    if abs((claimed - submission.when).total_seconds()) > CLOCK_SLACK_S:
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
