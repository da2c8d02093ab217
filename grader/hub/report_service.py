"""The instructors' class report on the hub: `make report` of the instructor who opens it, with
every learner's try-it progress. A JupyterHub service (jupyterhub_config.py starts it, as root);
only instructors may open it (the `access:services!service=report` scope of their role).

The gradebook and submissions are in the instructor's course folder (~/fx-course), theirs alone:
the report is built by `python -I -m grader.report --stdout` running *as that instructor*
(runuser, a clean environment), fed on its standard input with the learners' progress, which
progress_service.py reads running as each learner. The page it prints escapes every learner text;
it is served with a policy that runs only its own sorting script and loads nothing. Links to
feedback pages go to the instructor's own server (/user/<name>/files/...).
"""

from __future__ import annotations

import html
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from grader.course import Course
from grader.hub.progress_service import RUNUSER, progress_of_everyone, serve
from grader.report import CSP
from grader.safegrade.grading_limits import LIMITS


def report_of(instructor: str, course_folder: str, progress: dict, hub_prefix: str) -> str:
    """The report page for `instructor`'s course folder, or a page saying why there is none."""
    try:
        home = pwd.getpwnam(instructor).pw_dir
    except KeyError:
        return message("no such account")
    course = os.path.join(home, course_folder)
    # the class data as the report run below finds it (its environment sets no FXCOURSE_*)
    classdata = Course.configured(Path(course), environ={}).classdata.as_posix()
    files = f"{hub_prefix}user/{quote(instructor)}/files/{quote(course_folder)}/{quote(classdata)}"
    command = [RUNUSER, "-u", instructor, "--", sys.executable, "-I", "-m", "grader.report"]
    command += ["--course", course, "--stdout", "--progress", "-", "--link-base", files]
    environment = {"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin", "HOME": home}
    environment["LANG"] = "C.UTF-8"
    environment["MPLCONFIGDIR"] = os.path.join(home, ".cache", "matplotlib")
    try:
        done = subprocess.run(
            command,
            cwd=course if os.path.isdir(course) else "/",
            env=environment,
            input=json.dumps(progress).encode(),
            capture_output=True,
            timeout=LIMITS.report_time,
        )
    except subprocess.TimeoutExpired:
        return message(f"the report was not built within {LIMITS.report_time:g} s")
    if done.returncode != 0 or len(done.stdout) > LIMITS.report_page_bytes:
        last = done.stderr.decode(errors="replace").strip().split("\n")[-1]
        return message(f"no report yet: {last or 'the report could not be built'}")
    return done.stdout.decode(errors="replace")


def message(text: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Class report</title>'
        f"</head><body><main><h1>Class report</h1><p>{html.escape(text)}</p></main></body></html>"
    )


def main() -> None:
    from jupyterhub.services.auth import HubOAuthenticated
    from tornado import ioloop, web

    unix_group = os.environ["FXHUB_LEARNERS_UNIX_GROUP"]
    course_folder = os.environ["FXHUB_COURSE_FOLDER"]
    instructors = set(os.environ["FXHUB_INSTRUCTORS"].split(","))
    hub_prefix = os.environ.get("JUPYTERHUB_BASE_URL", "/")

    class ReportPage(HubOAuthenticated, web.RequestHandler):
        @web.authenticated
        async def get(self):
            name = self.get_current_user()["name"]
            if name not in instructors:  # the scope already says so; the course folder too
                raise web.HTTPError(403)
            loop = ioloop.IOLoop.current()
            progress = await loop.run_in_executor(None, progress_of_everyone, unix_group)
            page = await loop.run_in_executor(
                None, report_of, name, course_folder, progress, hub_prefix
            )
            self.set_header("Content-Security-Policy", CSP)
            self.write(page)

    serve(ReportPage)


if __name__ == "__main__":
    main()
