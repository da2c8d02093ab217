"""Who and what a file of an upload is: the file-name patterns of LMS downloads, where each file
belongs (student, assignment, path inside the submission), and how names are shown and copied
(odd bytes never reach a terminal or a file name). Part of intake (grader/intake/).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath


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
class Place:
    student: str
    assignment: str
    inner: tuple[str, ...]  # path inside the submission folder
    timestamp: datetime | None = None  # naive UTC, from the file name
    by_name: bool = False  # placed by the file-name pattern


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
    if student != student.strip():  # nbgrader strips an id: it would grade another folder
        return f"the student id '{student}' starts or ends with a space"
    if pattern := sorted(set(student) & set("[]*?")):
        # nbgrader matches an id, then the folder it found, as file patterns: "Ann [TA] Lee"
        # would match no notebook, "[A-Z]*" the classmates' (converters/base.py, init_notebooks)
        renamed = student.translate(str.maketrans("[]*?", "()+_"))
        return (
            f"the student id '{student}' holds {' '.join(pattern)}, which nbgrader reads as a "
            f"file pattern (it would grade nobody, or classmates): rename it, say '{renamed}'"
        )
    return None


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


def pattern_hints(groups: dict[tuple, dict], pattern: FileNamePattern) -> list[str]:
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
