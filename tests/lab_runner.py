"""The course's JupyterLab for the tests: started with `make lab` (the learner's lab, in a scratch
workspace) or `make formgrader` (the instructor's), on loopback with token auth, scratch
Jupyter/IPython/Matplotlib folders and exchange, autosave off (unless a test asks for
JupyterLab's default, AUTOSAVE_SETTINGS) and checkpoints kept outside the repository, so a
run leaves nothing behind. `stop_lab` asks the server to shut down (which stops its kernels),
then kills whatever is left of its process tree: kernels run in sessions of their own, so
killing the server's process group alone would miss them. tests/browser_lab.py drives a browser
on it.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fxcourse.languages import SOURCE
from fxcourse.workspace import LAB_SETTINGS as WORKSPACE_LAB_SETTINGS

SERVER_START_TIMEOUT_S = 120

DOCMANAGER = "@jupyterlab/docmanager-extension/plugin"
# User settings a learner could set too: no autosave, and no news/update toasts covering the
# screenshots. Autosave is off because the formgrader's lab serves the repository itself (a save
# would write into it) and because the learner's tests assert that their edits stay in the
# browser; it also hides what autosave does to a chapter the learner only opens (the kernel fills
# its metadata, autosave writes it), which AUTOSAVE_SETTINGS tests on its own lab.
LAB_SETTINGS = {
    DOCMANAGER: {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}
# JupyterLab's default autosave (on), its interval lowered from 120 s so the test need not wait.
AUTOSAVE_SETTINGS = {**LAB_SETTINGS, DOCMANAGER: {"autosave": True, "autosaveInterval": 2}}


# ----------------------------------------------------------------------------- processes


def _start_time(pid: int) -> str | None:
    """The kernel's start tick of `pid` (tells a live process from a reused pid), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # a zombie is already dead, only waiting for its parent to reap it
        return None
    return fields[19]


def process_tree(root_pid: int) -> dict[int, str]:
    """{pid: start tick} of `root_pid` and all its live descendants (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, todo = {}, [root_pid]
    while todo:
        pid = todo.pop()
        started = _start_time(pid)
        if started is not None:
            tree[pid] = started
        todo.extend(children.get(pid, []))
    return tree


def still_running(tree: dict[int, str]) -> list[int]:
    return [pid for pid, started in tree.items() if _start_time(pid) == started]


def describe(pids: list[int]) -> list[str]:
    described = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmd = "?"
        described.append(f"{pid}: {cmd[:150]}")
    return described


# ----------------------------------------------------------------------------- the server


@dataclass
class LabServer:
    url: str  # base URL, ending in "/"
    token: str
    root: Path
    process: subprocess.Popen
    log_path: Path
    workspace: Path  # the learner's (`make lab`): WORKSPACE=
    exchange: Path  # nbgrader's exchange for this server: FXCOURSE_EXCHANGE=
    environment: dict[str, str]  # the server's: its runtime folder, exchange, settings

    def lab_url(self, query: str = "reset") -> str:
        return f"{self.url}lab?{query}&token={self.token}"

    def request(
        self, path: str, method: str = "GET", timeout: float = 10, missing_ok: bool = False
    ) -> bytes | None:
        """The body of an authenticated request; None for a 404 when `missing_ok`."""
        req = urllib.request.Request(self.url + path, method=method)
        req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            if missing_ok and error.code == 404:
                return None
            raise

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scratch_environment(scratch: Path) -> dict[str, str]:
    """The server's environment, each per-user Jupyter/IPython/Matplotlib folder in `scratch`."""
    folders = {
        "JUPYTER_CONFIG_DIR": "jupyter-config",
        "JUPYTER_DATA_DIR": "jupyter-data",
        "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
        "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
        "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces",
        "IPYTHONDIR": "ipython",
        "MPLCONFIGDIR": "matplotlib",
    }
    env = dict(os.environ)
    for variable, name in folders.items():
        (scratch / name).mkdir(parents=True, exist_ok=True)
        env[variable] = str(scratch / name)
    env.pop("JUPYTER_PATH", None)  # the kernelspec and extensions come from the venv (sys-prefix)
    env["FXCOURSE_GRADEBOOK_URL"] = f"sqlite:///{scratch / 'gradebook.db'}"
    env["FXCOURSE_EXCHANGE"] = str(scratch / "exchange")
    return env


def write_lab_settings(settings_dir: Path, settings: dict = LAB_SETTINGS) -> None:
    for plugin, values in settings.items():
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def start_make(command: list[str], root: Path, env: dict, log_path: Path) -> subprocess.Popen:
    """`make ...` in `root`, in a session of its own (stop it by its process group), its output
    in `log_path`."""
    with open(log_path, "w") as log:
        return subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_lab(
    root: Path,
    scratch: Path,
    log_path: Path,
    target: str = "lab",
    settings: dict = LAB_SETTINGS,
    language: str = SOURCE.code,
) -> LabServer:
    """Start the course's JupyterLab with `make lab` (or `make formgrader`) in `root` and wait
    until its API answers.

    Going through the Makefile runs exactly what a learner (or instructor) runs: the venv's
    `jupyter lab`, in the environment `make` gives it. The learner's workspace is a scratch one
    (WORKSPACE=...), so a real workspace is never touched; LAB_ARGS adds what a test needs.
    `language="zh"` is `make lab LANG=zh`: the Chinese chapters, and JupyterLab's user settings
    in the workspace (where the Makefile points them), so the test's settings go there too.
    """
    env = scratch_environment(scratch)
    write_lab_settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]), settings)
    for variable in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # when run from `make test`
        env.pop(variable, None)
    token, port = secrets.token_hex(24), free_loopback_port()
    lab_args = [
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",  # lets the test read the notebook model
        f"--FileCheckpoints.checkpoint_dir={scratch / 'checkpoints'}",
    ]
    if any(" " in arg for arg in lab_args):
        raise ValueError(f"LAB_ARGS cannot carry spaces: {lab_args}")
    command = ["make", "--no-print-directory", target, "LAB_ARGS=" + " ".join(lab_args)]
    workspace = scratch / "workspace"
    command.append(f"WORKSPACE={workspace}")
    if language != SOURCE.code:
        command.append(f"LANG={language}")
        write_lab_settings(workspace / WORKSPACE_LAB_SETTINGS, settings)
    process = start_make(command, root, env, log_path)
    url, exchange = f"http://127.0.0.1:{port}/", Path(env["FXCOURSE_EXCHANGE"])
    server = LabServer(url, token, root, process, log_path, workspace, exchange, env)
    try:
        _wait_until_up(server)
    except BaseException:
        stop_lab(server)
        raise
    return server


def _wait_until_up(server: LabServer) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"`make lab` exited early:\n{server.log_tail()}")
        try:
            server.request("api/status", timeout=2)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)  # not listening yet
    waited = f"jupyter lab did not answer in {SERVER_START_TIMEOUT_S} s"
    raise TimeoutError(f"{waited}:\n{server.log_tail()}")


def stop_lab(server: LabServer, grace_s: float = 30) -> list[str]:
    """Shut the server and its kernels down; returns what had to be killed by force (ideally [])."""
    tree = process_tree(server.process.pid)
    if server.process.poll() is None:
        try:
            server.request("api/shutdown", method="POST")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        try:
            server.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(server.process.pid, signal.SIGTERM)
            try:
                server.process.wait(10)
            except subprocess.TimeoutExpired:
                _signal_group(server.process.pid, signal.SIGKILL)
                server.process.wait(10)
    deadline = time.monotonic() + 10  # kernels may take a moment after the server has gone
    while still_running(tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    forced = describe(still_running(tree))
    for pid in still_running(tree):
        os.kill(pid, signal.SIGKILL)
    return forced


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # start_new_session made the server its group's leader
    except ProcessLookupError:
        pass


@contextmanager
def running_lab(
    root: Path,
    scratch: Path,
    log_path: Path,
    target: str = "lab",
    settings: dict = LAB_SETTINGS,
    language: str = SOURCE.code,
) -> Iterator[LabServer]:
    server = start_lab(root, scratch, log_path, target, settings, language)
    try:
        yield server
    finally:
        forced = stop_lab(server)
        if forced:
            raise RuntimeError("processes outlived the lab shutdown (killed): " + "; ".join(forced))
