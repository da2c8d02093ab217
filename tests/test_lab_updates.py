"""Course updates with the lab running, against real Jupyter servers (no browser: the test plays
the browser tab's part over HTTP, as env/jupyter-learner/labextensions/fxcourse-lab-updates does;
tests/test_browser.py runs that extension itself, in every language).

- a server with the learner's configuration (fxcourse.lab_updates): `make workspace` hands the
  update of each open notebook to the lab, which merges it into the document the tab sends (the
  learner's unsaved typing in it) and records it once the tab has saved; closed notebooks are
  written on disk as before; a second `make lab` names the running lab and starts none;
- a server without it (a Jupyter the learner started another way): a notebook with a kernel
  there is left as it is and named, `make workspace` fails; once it is closed, it is updated.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from lab_runner import (
    LabServer,
    _wait_until_up,
    free_loopback_port,
    scratch_environment,
    stop_lab,
)
from nbformat.v4 import new_code_cell, new_notebook

from fxcourse import course_update, workspace

# One worker: each test starts a server of its own, and they are heavy on 2 cores.
pytestmark = pytest.mark.xdist_group("lab-updates")

ROOT = Path(__file__).resolve().parents[1]
JUPYTER = ROOT / ".venv" / "bin" / "jupyter"
PYTHON = ROOT / ".venv" / "bin" / "python"
LEARNER_CONFIG = ROOT / "env" / "jupyter-learner"
TYPED = "a + 1  # typed in the lab, not saved"


@contextmanager
def jupyter_server(folder: Path, scratch: Path, config: Path | None) -> Iterator[LabServer]:
    """`jupyter server` on `folder` (loopback, a token, scratch Jupyter folders), with the
    learner's configuration `config` (env/jupyter-learner) or none."""
    env = scratch_environment(scratch)
    env.pop("JUPYTER_CONFIG_PATH", None)
    if config is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config)
    token, port = "t" * 48, free_loopback_port()
    command = [
        str(JUPYTER),
        "server",
        f"--ServerApp.root_dir={folder}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--FileCheckpoints.checkpoint_dir={scratch / 'checkpoints'}",
        *(["--allow-root"] if os.getuid() == 0 else []),
    ]
    log_path = scratch / "server.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    exchange = Path(env["FXCOURSE_EXCHANGE"])
    url = f"http://127.0.0.1:{port}/"
    server = LabServer(url, token, ROOT, process, log_path, folder, exchange, env)
    try:
        _wait_until_up(server)
        yield server
    finally:
        forced = stop_lab(server)
        assert not forced, f"processes outlived the server: {forced}"


def call(server: LabServer, path: str, body: dict | None = None, method: str | None = None):
    """The JSON answer of a request with the server's token (POST when there is a body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Authorization", f"token {server.token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


class Tab:
    """What a browser tab of the learner's lab does, over HTTP (fxcourse-lab-updates)."""

    def __init__(self, server: LabServer, name: str = "tab-1"):
        self.server, self.name = server, name

    def report(self, paths: list[str]) -> list[str]:
        body = {"frontend": self.name, "open": paths}
        return call(self.server, "fxcourse/lab/frontends", body)["updates"]

    def merge(self, path: str, document: dict) -> dict:
        body = {"path": path, "notebook": document, "frontend": self.name}
        return call(self.server, "fxcourse/lab/merge", body)

    def save_and_confirm(self, path: str, document: dict, reply: dict) -> None:
        """Hold the answer's cells, save through the contents API, say it is saved."""
        outputs = {cell["id"]: cell for cell in document["cells"]}  # none: kept as they were
        cells = [{**outputs.get(cell["id"], {}), **cell} for cell in reply["cells"]]
        for cell in cells:
            if cell["cell_type"] == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
        content = {"cells": cells, "metadata": document["metadata"]} | {
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        saved = {"type": "notebook", "format": "json", "content": content}
        call(self.server, f"api/contents/{path}", saved, method="PUT")
        call(self.server, "fxcourse/lab/merged", {"token": reply["token"]})


def document_of(path: Path, typed: dict[int, str] | None = None) -> dict:
    """The open document a tab sends: the saved notebook with what was typed since."""
    notebook = nbformat.read(path, as_version=4)
    cells = []
    for index, cell in enumerate(notebook.cells):
        entry = {"id": cell.id, "cell_type": cell.cell_type, "metadata": dict(cell.metadata)}
        entry["source"] = (typed or {}).get(index, cell.source)
        cells.append(entry)
    return {"metadata": dict(notebook.metadata), "cells": cells}


def _chapter(folder: Path, name: str, *sources: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(code) for code in sources]), folder / name)


def _sources(path: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(path, as_version=4).cells]


def sync_command(server: LabServer, course: Path) -> list[str]:
    return [
        str(PYTHON),
        "-m",
        "fxcourse.workspace",
        "sync",
        "--workspace",
        str(server.workspace),
    ] + [
        "--course",
        str(course),
    ]


def run(command: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `command` in a session of its own; on a timeout, end all of it (a lab it started)."""
    env = {k: v for k, v in env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        raise AssertionError(f"{command} still running after {timeout} s:\n{out}") from None
    return subprocess.CompletedProcess(command, process.returncode, out)


@pytest.fixture
def course_and_workspace(tmp_path) -> tuple[Path, Path]:
    """A course of three chapters and a workspace made from it (nbgrader's exchange: the
    course's own, in tmp_path)."""
    course, mine = tmp_path / "course", tmp_path / "workspace"
    _chapter(course / "chapters", "01_a.ipynb", "a = 1", "a")
    _chapter(course / "chapters", "02_b.ipynb", "b = 1", "b")
    _chapter(course / "chapters", "03_c.ipynb", "c = 1")
    workspace.sync(mine, course)
    return course, mine


def test_an_update_goes_into_the_open_document_through_the_lab(course_and_workspace, tmp_path):
    course, mine = course_and_workspace
    with jupyter_server(mine, tmp_path / "scratch", LEARNER_CONFIG) as server:
        tab, open_paths = Tab(server), ["01_a.ipynb", "02_b.ipynb"]
        assert tab.report(open_paths) == []
        assert call(server, "fxcourse/lab/frontends")["open"] == open_paths
        typed = document_of(mine / "01_a.ipynb", {1: TYPED})  # in the tab only
        on_disk = {name: (mine / name).read_bytes() for name in open_paths}
        for name in (*open_paths, "03_c.ipynb"):  # the course changes each first cell
            first, *rest = _sources(course / "chapters" / name)
            _chapter(course / "chapters", name, first.replace("1", "2"), *rest)

        sync = subprocess.Popen(
            sync_command(server, course), env=server.environment, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline, waiting = time.monotonic() + 120, []
        while sorted(waiting) != open_paths and time.monotonic() < deadline and sync.poll() is None:
            time.sleep(0.5)
            waiting = tab.report(open_paths)
        assert sorted(waiting) == open_paths, f"no update offered to the tab: {waiting}"
        assert {name: (mine / name).read_bytes() for name in open_paths} == on_disk

        first = tab.merge("01_a.ipynb", typed)
        assert Tab(server, "tab-2").merge("01_a.ipynb", typed) == {"token": None}  # one saves
        reply = tab.merge("01_a.ipynb", typed)  # asked again (the learner typed meanwhile)
        with pytest.raises(urllib.error.HTTPError) as dropped:
            call(server, "fxcourse/lab/merged", {"token": first["token"]})
        assert dropped.value.code == 404
        notice, *cells = reply["cells"]
        assert notice["id"] == course_update.NOTICE_ID and "Course update" in notice["source"]
        assert [cell["source"] for cell in cells] == ["a = 2", TYPED]
        assert "with what you had typed" in reply["message"]
        tab.save_and_confirm("01_a.ipynb", typed, reply)
        opened = document_of(mine / "02_b.ipynb")
        reply = tab.merge("02_b.ipynb", opened)
        assert [c["source"] for c in reply["cells"][1:]] == ["b = 2", "b"], reply
        assert "now the course's new version" in reply["message"]
        tab.save_and_confirm("02_b.ipynb", opened, reply)

        out, _ = sync.communicate(timeout=120)
        assert sync.returncode == 0, out
        delivered = "merged into the notebook open in your lab, with what you typed there"
        for name in open_paths:
            assert f"{delivered} (and saved): {name}" in out, out
        assert "updated (you had not edited it): 03_c.ipynb" in out, out  # closed: on disk
        assert _sources(mine / "01_a.ipynb")[1:] == ["a = 2", TYPED]
        assert course_update.staged_names(mine) == []
        again = run(sync_command(server, course), server.environment)
        assert again.returncode == 0 and again.stdout.count("\n") == 1, again.stdout  # up to date
        check_what_a_tab_cannot_do(server, tab, typed)
        check_a_second_make_lab_starts_no_server(server, tmp_path / "scratch")


def check_what_a_tab_cannot_do(server: LabServer, tab: Tab, document: dict) -> None:
    assert tab.merge("../outside.ipynb", document) == {"token": None}
    assert tab.merge("01_a.ipynb", document) == {"token": None}  # nothing waiting any more
    malformed = {"metadata": {}, "cells": [{"id": "x", "cell_type": "python", "source": 1}]}
    for claim, status in (
        ({"path": "01_a.ipynb", "notebook": malformed}, 400),
        ({"token": "not-one-it-gave"}, 404),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            route = "merge" if "path" in claim else "merged"
            call(server, f"fxcourse/lab/{route}", claim)
        assert refused.value.code == status
    anonymous = urllib.request.Request(server.url + "fxcourse/lab/frontends")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(anonymous, timeout=30)
    assert refused.value.code == 403
    call(server, "fxcourse/lab/frontends", {"frontend": tab.name, "leaving": True})
    assert call(server, "fxcourse/lab/frontends")["open"] == []


def check_a_second_make_lab_starts_no_server(server: LabServer, scratch: Path) -> None:
    runtime = Path(server.environment["JUPYTER_RUNTIME_DIR"])
    assert len(list(runtime.glob("jpserver-*.json"))) == 1
    command = ["make", "--no-print-directory", "lab", f"WORKSPACE={server.workspace}"]
    done = run(command, server.environment)
    assert done.returncode == 0, done.stdout
    assert "JupyterLab is already running on" in done.stdout, done.stdout
    assert f"{server.url}lab?token={server.token}" in done.stdout, done.stdout
    assert len(list(runtime.glob("jpserver-*.json"))) == 1, "a second server was started"
    elsewhere = [str(PYTHON), "-m", "fxcourse.lab_link", "running", str(scratch)]
    other = run(elsewhere, server.environment)
    assert other.returncode == 1 and not other.stdout, other.stdout  # another folder: none there


def test_a_lab_that_cannot_take_updates_keeps_its_open_notebooks_as_they_are(
    course_and_workspace, tmp_path
):
    course, mine = course_and_workspace
    with jupyter_server(mine, tmp_path / "scratch", None) as server:  # no fxcourse.lab_updates
        session = call(
            server, "api/sessions",
            {"path": "02_b.ipynb", "type": "notebook", "name": "", "kernel": {"name": "fx-course"}},
        )  # fmt: skip
        before = (mine / "02_b.ipynb").read_bytes()
        _chapter(course / "chapters", "02_b.ipynb", "b = 2", "b")
        done = run(sync_command(server, course), server.environment)
        assert done.returncode == 1, done.stdout
        assert f"NOT UPDATED: 02_b.ipynb is open in the JupyterLab at {server.url}" in done.stdout
        assert (mine / "02_b.ipynb").read_bytes() == before
        call(server, f"api/sessions/{session['id']}", method="DELETE")
        done = run(sync_command(server, course), server.environment)
        assert done.returncode == 0, done.stdout
        assert "updated (you had not edited it): 02_b.ipynb" in done.stdout, done.stdout
        assert _sources(mine / "02_b.ipynb")[1:] == ["b = 2", "b"]
