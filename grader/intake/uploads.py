"""Reading an upload: the files of a folder or a zip, each checked before it is opened (links,
special files, zip slips, encrypted entries and entries over the caps are refused with the
reason), and timestamp.txt. Part of intake (grader/intake/); files are opened by the one
no-follow reader (grader/safegrade/files.py).
"""

from __future__ import annotations

import functools
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from grader.intake.names import shown
from grader.safegrade.files import open_regular
from grader.safegrade.grading_limits import LIMITS

TIMESTAMP_FILE = "timestamp.txt"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's exchange format, in UTC
COPY_ERRORS = (OSError, EOFError, ValueError, RuntimeError, zipfile.BadZipFile, zlib.error)


class IntakeError(Exception):
    """The upload as a whole cannot be read (nothing was collected from it)."""


@dataclass(frozen=True)
class Found:
    """One entry of an upload: its path inside the upload and how to read it (None: refused)."""

    parts: tuple[str, ...]  # may hold undecodable bytes as surrogates (os.fsdecode)
    open: Callable[[], BinaryIO] | None = None
    problem: str = ""
    size: int = 0  # bytes, as the folder or the zip says (the copy counts them again)


def _kind(mode: int) -> str:
    kinds = [(stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket")]
    kinds += [(stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    return next((name for test, name in kinds if test(mode)), "a special file")


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
    if info.file_size > (cap := LIMITS.file_cap(parts[-1])):
        return f"{info.file_size} bytes, over the {cap}-byte cap per file: refused"
    return ""


def read_zip(archive: zipfile.ZipFile) -> Iterator[Found]:
    """Every file entry of the archive (directories are not files), each checked."""
    entries = archive.infolist()
    if len(entries) > LIMITS.zip_entries:
        raise IntakeError(
            f"{len(entries)} entries, over the cap of {LIMITS.zip_entries}: unpack it"
        )
    total = 0
    for info in entries:
        if info.is_dir():
            continue
        parts = tuple(p for p in re.split(r"[/\\]", info.filename) if p not in ("", "."))
        problem = _zip_problem(info, parts)
        if not problem and total + info.file_size > LIMITS.zip_bytes:
            problem = f"the zip's files pass the {LIMITS.zip_bytes}-byte cap here: refused"
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


def read_timestamp(opener: Callable[[], BinaryIO]) -> datetime:
    """A timestamp.txt as nbgrader reads it (naive UTC); ValueError when it is not one."""
    from nbgrader.utils import parse_utc

    with opener() as handle:
        text = handle.read(LIMITS.timestamp_bytes).decode("utf-8").strip()
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
