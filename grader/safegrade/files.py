"""Reading a learner's files without following links: the one reader of intake and staging.

A learner shapes the folders the grader reads (an upload, the exchange's inbound folder, the
submitted copy): a name may be a link, a FIFO, a device, or be swapped for one while it is read.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
from pathlib import Path
from typing import BinaryIO

from .grading_limits import LIMITS


def open_regular(
    path: str, owner: int | None = None, *, whole_path: bool = True, single_link: bool = False
) -> BinaryIO:
    """Open a regular file without following a link or blocking on a FIFO swapped in; with
    `owner`, only a file that account owns (a hard link keeps its file's owner); with
    `whole_path`, only if no folder on the (absolute, resolved) path was swapped for a link;
    with `single_link`, only a file with no other hard link. OSError says why not."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    info = os.fstat(fd)
    problem = "" if stat.S_ISREG(info.st_mode) else "no longer a regular file"
    if not problem and owner is not None and info.st_uid != owner:
        problem = f"owned by uid {info.st_uid}, not by the submitter (a hard link?): not copied"
    if not problem and single_link and info.st_nlink != 1:
        problem = "a hard link to another file: not read"
    # O_NOFOLLOW covers the last name only: a folder on the way swapped for a link (a learner's
    # process racing the copy) shows as another path to the file that was opened.
    if not problem and whole_path:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") != os.path.abspath(path):
                problem = "a folder on its path was replaced by a link: not followed"
    if problem:
        os.close(fd)
        raise OSError(problem)
    return os.fdopen(fd, "rb")


def read_regular(path: str, cap: int) -> bytes | None:
    """The bytes of a regular, unlinked file no larger than cap, else None. Never follows a
    symlink (the last name's) and never blocks on a FIFO."""
    try:
        handle = open_regular(path, whole_path=False, single_link=True)
    except OSError:
        return None
    with handle:
        if os.fstat(handle.fileno()).st_size > cap:
            return None
        return handle.read(cap + 1)[:cap]


def walk(folder: Path, skip: list[str] = ()) -> tuple[list[str], list[str]]:
    """Relative paths of the regular files under folder (names matching `skip` left out),
    without following links or recursing, and notes on what else was left out: at most
    LIMITS.submission_files files, LIMITS.folder_depth folders deep."""
    found, notes, stack = [], [], [("", 0)]
    while stack:
        rel, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder / rel), key=lambda entry: entry.name)
        except OSError as exc:
            notes.append(f"{rel or '.'} could not be read ({exc.strerror})")
            continue
        for entry in entries:
            path = os.path.join(rel, entry.name)
            if any(fnmatch.fnmatch(entry.name, pattern) for pattern in skip):
                continue
            if entry.is_dir(follow_symlinks=False) and depth < LIMITS.folder_depth:
                stack.append((path, depth + 1))
            elif entry.is_file(follow_symlinks=False) and len(found) < LIMITS.submission_files:
                found.append(path)
            else:
                notes.append(f"{path} was left out (a link, FIFO or device, or too deep or many)")
    return found, notes
