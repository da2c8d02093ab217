"""The instructors' progress page on the class hub: each learner's passed try-its and exercises,
without opening their notebooks. A JupyterHub service (jupyterhub_config.py starts it, as root);
only instructors may open it (the `access:services!service=progress` scope of their role).

Learners' homes are theirs alone (0700), and everything in them is the learner's to shape. So
each learner's notebooks are read by `python -I -m fxcourse.progress --json` running *as that
learner* (runuser, in /, with a clean environment): a link in a home reaches only what its owner
could read anyway. What that process prints is a claim about the learner's own work: read with a
time limit and a size cap, checked for shape against the course's chapters and exercises, and
shown HTML-escaped. The page reads the learners' group at every request: new learners appear.
"""

from __future__ import annotations

import concurrent.futures
import grp
import html
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

from fxcourse.progress import AS_OF_KINDS, ExerciseState
from fxcourse.workspace import course_notebooks
from grader.course import Course
from grader.report_model import course_tryits, own_tryits
from grader.safegrade.grading_limits import LIMITS

RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
WHEN = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass(frozen=True)
class Shape:
    """What a learner's progress may name: the course's chapters, exercises and try-its."""

    chapters: tuple[str, ...]  # the workspace's chapter notebooks ("01_symbolic_tracing.ipynb")
    assignments: frozenset[str]
    tryits: dict[str, str]  # try-it id -> its chapter

    @classmethod
    def of(cls, course: Course) -> Shape:
        notebooks = course_notebooks(course.root)
        chapters = tuple(name for name in notebooks if not name.startswith("exercises/"))
        exercises = (Path(name).stem for name in notebooks if name.startswith("exercises/"))
        return cls(chapters, frozenset(exercises), course_tryits())

    @property
    def per_chapter(self) -> Counter:
        """How many try-its each chapter has: a learner's copy that lost a try-it's cells has
        not passed it."""
        return Counter(self.tryits.values())


@cache
def course_shape() -> Shape:
    """The configured course's shape, read once, when the service first needs it."""
    return Shape.of(Course.configured())


def learners(unix_group: str) -> list[str]:
    """The accounts in the learners' system group, now."""
    try:
        return sorted(grp.getgrnam(unix_group).gr_mem)
    except KeyError:
        return []


def read_as(account: str, folder: str = "chapters") -> dict | str:
    """The progress of `account`'s ~/folder, read by a process running as `account`: the checked
    data, or a one-line reason it could not be read."""
    try:
        home = pwd.getpwnam(account).pw_dir
    except KeyError:
        return "no such account"
    command = [RUNUSER, "-u", account, "--", sys.executable, "-I", "-m", "fxcourse.progress"]
    command += ["--json", os.path.join(home, folder)]
    environment = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}
    done = run_capped(command, environment)
    if isinstance(done, str):
        return done
    returncode, output = done
    if returncode != 0:
        return "no chapters yet" if returncode == 2 else "could not be read"
    return checked(output)


def run_capped(command: list[str], environment: dict) -> tuple[int, bytes] | str:
    """(exit status, stdout) of the command, its output read as it comes: past the progress
    output cap or time limit (LIMITS) it is stopped and a one-line reason returned instead (a
    learner's notebooks can make the reader print without end; nothing more than the cap is ever
    held)."""
    process = subprocess.Popen(
        command, cwd="/", env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        process.kill()

    timer = threading.Timer(LIMITS.progress_time, stop)
    timer.start()
    try:
        output = process.stdout.read(LIMITS.progress_output_bytes + 1)
        if len(output) > LIMITS.progress_output_bytes:
            process.kill()
        returncode = process.wait()
    finally:
        timer.cancel()
        process.stdout.close()
    if len(output) > LIMITS.progress_output_bytes:
        return "could not be read (too large)"
    if timed_out.is_set():
        return f"not read within {LIMITS.progress_time:g} s"
    return returncode, output


def checked(output: bytes, shape: Shape | None = None) -> dict | str:
    """fxcourse.progress's JSON as this course can have it, or a reason it is not."""
    shape = shape or course_shape()
    if len(output) > LIMITS.progress_output_bytes:
        return "could not be read (too large)"
    try:
        claim = json.loads(output)
        tryits = {  # None: unread
            name: booleans(name, claim["tryits"][name], shape) for name in shape.chapters
        }
        exercises = {
            name: state
            for name, (state, _copy) in claim["exercises"].items()
            if name in shape.assignments and state in set(ExerciseState)
        }
        named = {*shape.chapters, *shape.assignments}
        as_of = {
            name: (kind, when)
            for name, (kind, when) in claim.get("as_of", {}).items()
            if name in named and kind in AS_OF_KINDS and is_when(when)
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return "could not be read (not the course's progress)"
    return {"tryits": tryits, "exercises": exercises, "as_of": as_of}


def is_when(value: object) -> bool:
    return isinstance(value, str) and bool(WHEN.match(value))


def as_of_note(row: dict, name: str) -> str:
    """When the shown result was checked, as a second line of its cell (escaped)."""
    if name not in row["as_of"]:
        return ""
    kind, when = row["as_of"][name]
    return f"<br><small>{html.escape(f'{kind} {when[:10]} {when[11:16]} UTC')}</small>"


def booleans(chapter: str, marks: dict | None, shape: Shape) -> dict[str, bool] | None:
    """A chapter's try-it marks with the course's own ids of that chapter only (a learner's
    process could claim any id: one of 5,000 digits broke the class report)."""
    if marks is None:
        return None
    kept = {t: ok for t, ok in marks.items() if isinstance(ok, bool)}
    return own_tryits(chapter, kept, shape.tryits)


def page(rows: dict[str, dict | str], shape: Shape | None = None) -> str:
    """The HTML page: one row per learner, a column per chapter (try-its passed) and exercise."""
    shape = shape or course_shape()
    chapters, exercises, per_chapter = shape.chapters, sorted(shape.assignments), shape.per_chapter
    head = "".join(f"<th>{html.escape(name.split('_')[0])}</th>" for name in chapters)
    head += "".join(f"<th>{html.escape(name)}</th>" for name in exercises)
    body = []
    for account, row in rows.items():
        cells = f"<td>{html.escape(account)}</td>"
        if isinstance(row, str):
            cells += f'<td colspan="{len(chapters) + len(exercises)}">{html.escape(row)}</td>'
        else:
            for name in chapters:
                marks = row["tryits"][name]
                total = per_chapter[name.removesuffix(".ipynb")]
                shown = "unreadable" if marks is None else f"{sum(marks.values())}/{total}"
                cells += f"<td>{shown}{as_of_note(row, name)}</td>"
            cells += "".join(
                f"<td>{html.escape(row['exercises'].get(name, 'not opened'))}"
                f"{as_of_note(row, name)}</td>"
                for name in exercises
            )
        body.append(f"<tr>{cells}</tr>")
    return PAGE.format(head=head, body="\n".join(body) or NOBODY)


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Learners' progress</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{border:1px solid #ccc;padding:4px 8px}}
table{{border-collapse:collapse}}</style></head><body><h1>Learners' progress</h1>
<p>Try-its passed per chapter (in each learner's ~/chapters) and the state of each exercise's
submitted copy (its visible tests), as the checks said when they last ran (a checkpoint, a test
cell, Validate; the time is under each), else as the saved notebook says; a learner's own claim,
not a grade: grades come from the formgrader.</p>
<table><tr><th>learner</th>{head}</tr>
{body}
</table></body></html>"""
NOBODY = "<tr><td>no learners yet</td></tr>"


def progress_of_everyone(unix_group: str) -> dict[str, dict | str]:
    accounts = learners(unix_group)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(accounts, pool.map(read_as, accounts), strict=True))


def main() -> None:
    from jupyterhub.services.auth import HubOAuthenticated
    from tornado import ioloop, web

    unix_group = os.environ["FXHUB_LEARNERS_UNIX_GROUP"]

    class ProgressPage(HubOAuthenticated, web.RequestHandler):
        @web.authenticated
        async def get(self):
            loop = ioloop.IOLoop.current()
            rows = await loop.run_in_executor(None, progress_of_everyone, unix_group)
            # the page runs no script at all
            self.set_header(
                "Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"
            )
            self.write(page(rows))

    serve(ProgressPage)


def serve(page_handler) -> None:
    """Serve one page (and the hub's OAuth callback) where JupyterHub says this service is."""
    from jupyterhub.services.auth import HubOAuthCallbackHandler
    from tornado import ioloop, web

    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    app = web.Application(
        [(prefix, page_handler), (prefix + "oauth_callback", HubOAuthCallbackHandler)],
        cookie_secret=os.urandom(32),
    )
    url = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    app.listen(url.port, url.hostname)
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
