"""The learner's running JupyterLab, as the workspace's commands see it.

    python -m fxcourse.lab_link running WORKSPACE [--language CODE]
                                        (`make lab`: is a lab already open there?)

A Jupyter server writes a file about itself (jpserver-PID.json: its URL, token, folder and
process) into Jupyter's runtime folder while it runs; jupyter_server's `list_running_servers`
reads them. The labs that serve a workspace (their folder is the workspace or holds it) are
asked which of its notebooks are open:

- a lab started by `make lab` runs fxcourse.lab_updates, which knows the notebooks open in the
  browser tabs connected to it; an update to one of them is handed to that lab, which merges it
  into the open document (the learner's unsaved typing included) and saves it;
- another lab (plain `jupyter lab`, an older `make lab`) only says which notebooks have a kernel
  (its sessions): those are left alone, to be saved and closed before the next `make workspace`;
- a lab that does not answer (a password instead of a token, https) is not asked: every notebook
  the update would change is left alone.

`make lab` uses `running` to open no second server on a workspace that has one: it prints the
running lab's address instead, in the language `--language` names (a code of fxcourse.languages,
as `make lab LANG=zh` passes it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from fxcourse import course_update, languages
from fxcourse.messages import _, use_language

ASK_TIMEOUT_S = 5
# How long `make workspace` waits for an open tab to take its update: a tab asks every 2 s, a
# browser tab hidden for minutes about once a minute (browsers slow the timers of hidden tabs).
DELIVERY_WAIT_S = 75


@dataclass(frozen=True)
class RunningLab:
    url: str  # ends in "/"
    token: str
    root_dir: Path
    pid: int

    def address(self) -> str:
        """The address to open the lab at (with its token, as `jupyter lab` prints it)."""
        return f"{self.url}lab?token={self.token}" if self.token else f"{self.url}lab"

    def call(self, path: str, body: dict | None = None) -> object:
        """The JSON answer of an authenticated request (POST when there is a body)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data)
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=ASK_TIMEOUT_S) as answer:
            return json.loads(answer.read() or b"null")

    def names(self, paths: list[str], workspace: Path) -> list[str]:
        """The workspace-relative names of server `paths` (relative to its folder) that lie in
        the workspace."""
        found = []
        for path in paths:
            file = (self.root_dir / path).resolve()
            if file.is_relative_to(workspace):
                found.append(str(file.relative_to(workspace)))
        return found


def running_labs(runtime_dir: str | None = None) -> list[RunningLab]:
    """Every Jupyter server of this user whose process is alive (jupyter_server's runtime files)."""
    from jupyter_server.serverapp import list_running_servers

    return [
        RunningLab(info["url"], info.get("token") or "", Path(info["root_dir"]).resolve(), pid)
        for info in list_running_servers(runtime_dir)
        if (pid := info.get("pid")) and info.get("url")
    ]


def labs_serving(workspace: Path) -> list[RunningLab]:
    """The running labs whose folder is the workspace or holds it."""
    workspace = workspace.resolve()
    return [lab for lab in running_labs() if workspace.is_relative_to(lab.root_dir)]


def lab_of(workspace: Path) -> RunningLab | None:
    """The running lab opened on the workspace itself (`make lab`), if one answers."""
    for lab in labs_serving(workspace):
        if lab.root_dir == workspace.resolve() and _answers(lab):
            return lab
    return None


def _answers(lab: RunningLab) -> bool:
    try:
        lab.call("api/status")
        return True
    except (OSError, ValueError):  # URLError, HTTPError and timeouts are OSErrors
        return False


@dataclass
class OpenInLab:
    """Which notebooks of a workspace are open in a running lab, and whether that lab takes
    course updates into them."""

    delivering: dict[str, RunningLab] = field(default_factory=dict)  # fxcourse.lab_updates
    blocking: dict[str, RunningLab] = field(default_factory=dict)  # open; save and close first
    unasked: list[RunningLab] = field(default_factory=list)  # every notebook as if open

    def lab_for(self, name: str) -> RunningLab | None:
        """The lab that has `name` open (or may have: one not asked)."""
        found = self.delivering.get(name) or self.blocking.get(name)
        return found or (self.unasked[0] if self.unasked else None)

    def delivers(self, name: str) -> bool:
        return name in self.delivering and name not in self.blocking and not self.unasked


def open_notebooks(workspace: Path) -> OpenInLab:
    """Ask every lab serving the workspace which of its notebooks are open (module docstring)."""
    found, workspace = OpenInLab(), workspace.resolve()
    for lab in labs_serving(workspace):
        try:
            paths = lab.call("fxcourse/lab/frontends")["open"]
            found.delivering |= dict.fromkeys(lab.names(paths, workspace), lab)
            continue
        except urllib.error.HTTPError as error:
            if error.code != 404:  # 404: a lab without fxcourse.lab_updates
                found.unasked.append(lab)
                continue
        except (OSError, ValueError, KeyError, TypeError):
            found.unasked.append(lab)
            continue
        try:
            sessions = lab.call("api/sessions")
            paths = [s["path"] for s in sessions if s.get("type", "notebook") == "notebook"]
        except (OSError, ValueError, KeyError, TypeError):
            found.unasked.append(lab)
            continue
        found.blocking |= dict.fromkeys(lab.names(paths, workspace), lab)
    return found


def wait_for_delivery(workspace: Path, names: list[str], wait_s: float = DELIVERY_WAIT_S):
    """The names among `names` whose staged update the lab took within `wait_s` seconds."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not set(names) & set(course_update.staged_names(workspace)):
            break
        time.sleep(0.5)
    waiting = set(course_update.staged_names(workspace))
    return [name for name in names if name not in waiting]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["running"])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--language", choices=languages.codes(), help="of the message shown")
    args = parser.parse_args(argv)
    if args.language:
        use_language(args.language)
    lab = lab_of(args.workspace)
    if lab is None:
        return 1
    running = _(
        "JupyterLab is already running on {workspace} (process {pid}); no second one is "
        "started. Open it at:"
    )
    afresh = _(
        "To start it afresh, stop it first (File > Shut Down in the lab, or Ctrl+C where it runs)."
    )
    print("[lab] " + running.format(workspace=args.workspace, pid=lab.pid))
    print(f"\n    {lab.address()}\n")
    print("[lab] " + afresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
