"""Course updates merged into the notebooks open in the learner's JupyterLab: a Jupyter server
extension (turned on in env/jupyter-learner/jupyter_server_config.json), whose browser half is
the lab extension in env/jupyter-learner/labextensions/fxcourse-lab-updates/ (`make lab` adds it).

A notebook open in the lab is never written on disk by `make workspace`: JupyterLab would meet
the new file at its next save with "File Changed", where Revert drops what the learner typed and
not yet saved, and Overwrite (the focused button) drops the update. Instead:

1. each browser tab of the lab reports, every few seconds, the notebooks it has open
   (POST fxcourse/lab/frontends); the answer names those with an update waiting;
2. `make workspace` asks which notebooks are open (GET fxcourse/lab/frontends, fxcourse.lab_link)
   and stages the update of each (fxcourse.course_update.stage) instead of writing it;
3. the tab sends the open document as it is in the browser, saved or not (POST
   fxcourse/lab/merge); the server merges the course's changes into it as a sync would merge them
   into a saved copy (fxcourse.course_update.plan) and answers with the cells it should hold;
4. the tab changes only the cells that differ, if the learner typed nothing in between (else it
   asks again), saves the notebook and says so (POST fxcourse/lab/merged: the update is then
   recorded as delivered, and the course's version saved beside it where both changed a cell).

A tab that has not reported for LIVE_S seconds, or said goodbye when it was closed, no longer
counts: its notebooks are updated on disk by the next sync, as closed ones are.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from fxcourse import course_update, results
from fxcourse.messages import _, speaking

LIVE_S = 600  # a hidden browser tab reports about once a minute (browsers slow its timers)
MAX_OPEN = 500  # paths one tab may report
MERGE_S = 60  # how long a tab has to save a merged notebook before another tab may take it


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "fxcourse.lab_updates"}]


def _load_jupyter_server_extension(serverapp) -> None:
    lab = LabState(Path(serverapp.root_dir))
    base = serverapp.web_app.settings["base_url"]
    routes = {"frontends": FrontendsHandler, "merge": MergeHandler, "merged": MergedHandler}
    serverapp.web_app.add_handlers(
        ".*$",
        [(url_path_join(base, f"fxcourse/lab/{n}"), h, {"lab": lab}) for n, h in routes.items()],
    )


@dataclass
class Merge:
    """An update handed to a tab, until the tab has saved it."""

    workspace: Path
    name: str
    update: course_update.Update
    course: nbformat.NotebookNode
    frontend: str
    since: float = field(default_factory=time.monotonic)


class LabState:
    """The tabs connected to this server and the merges they have asked for."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.frontends: dict[str, tuple[float, list[str]]] = {}  # id -> (last report, paths)
        self.merges: dict[str, Merge] = {}  # by token

    def report(self, frontend: str, paths: list[str], leaving: bool) -> list[str]:
        """Note what a tab has open; the paths among them with an update waiting."""
        if leaving:
            self.frontends.pop(frontend, None)
            return []
        self.frontends[frontend] = (time.monotonic(), paths)
        return [path for path in paths if self.waiting(path) is not None]

    def open_paths(self) -> list[str]:
        cutoff = time.monotonic() - LIVE_S
        self.frontends = {k: v for k, v in self.frontends.items() if v[0] >= cutoff}
        return sorted({path for _, paths in self.frontends.values() for path in paths})

    def locate(self, path: str) -> tuple[Path, str] | None:
        """(workspace, workspace-relative name) of a notebook the server serves, if in one."""
        file = (self.root / path).resolve()
        if not file.is_relative_to(self.root) or file.suffix != ".ipynb":
            return None
        workspace = results.workspace_of(file.parent)
        return None if workspace is None else (workspace, str(file.relative_to(workspace)))

    def waiting(self, path: str) -> tuple | None:
        """(workspace, name, course version, language) of the update staged for `path`."""
        found = self.locate(path)
        staged = found and course_update.staged(*found)
        return (*found, *staged) if staged else None

    def merge(self, path: str, notebook: nbformat.NotebookNode, frontend: str) -> dict:
        """The cells `notebook` (a tab's open document) should hold with the update merged in,
        the message to show, and the token to confirm with once saved."""
        waiting = self.waiting(path)
        if waiting is None:
            return {"token": None}  # nothing waiting (taken already)
        workspace, name, course, language = waiting
        if self.taken_elsewhere(workspace, name, frontend):
            return {"token": None}  # another tab of this notebook saves it (then it is stale)
        with speaking(language):
            update = course_update.plan(workspace, name, notebook, course)
            message = merged_message(update.outcome, name)
        token = secrets.token_hex(16)
        self.merges[token] = Merge(workspace, name, update, course, frontend)
        cells = tab_cells(update.notebook) if update.notebook is not None else None
        return {"token": token, "cells": cells, "message": message}

    def taken_elsewhere(self, workspace: Path, name: str, frontend: str) -> bool:
        """Whether another tab was handed this notebook's update within MERGE_S and has not
        saved it yet; this tab's earlier, unconfirmed merges of it are dropped (it asks again
        when the learner typed while one was on its way)."""
        cutoff = time.monotonic() - MERGE_S
        self.merges = {
            token: merge
            for token, merge in self.merges.items()
            if merge.since >= cutoff
            and not (
                merge.frontend == frontend and (merge.workspace, merge.name) == (workspace, name)
            )
        }
        return any((m.workspace, m.name) == (workspace, name) for m in self.merges.values())

    def merged(self, token: str) -> None:
        """The tab saved the merged notebook: record the update as delivered."""
        merge = self.merges.pop(token)
        workspace, name, update, course = merge.workspace, merge.name, merge.update, merge.course
        if update.beside is not None:
            beside = (workspace / name).with_name(course_update.beside_name(Path(name).name))
            course_update.write(update.beside, beside)
        newer = course_update.staged(workspace, name)
        course_update.commit(workspace, name, update, course)
        if newer and course_update.cells_text(newer[0]) != course_update.cells_text(course):
            course_update.stage(workspace, name, *newer)  # staged while the tab was merging


def merged_message(outcome: str | None, name: str) -> str | None:
    """What the tab says once it has merged and saved the update."""
    if outcome == "updated":
        text = _("Course update: {name} is now the course's new version (you had not edited it).")
    elif outcome == "merged":
        text = _(
            "Course update: the course's changes are merged into {name}, with what you had typed "
            "in it, and the notebook is saved."
        )
    elif outcome == "kept":
        text = _(
            "Course update: the course changed cells of {name} that you had changed too. Your "
            "cells are kept; the course's version is saved beside it (see the notebook's first "
            "cell)."
        )
    else:
        return None
    return text.format(name=Path(name).name)


def tab_cells(notebook: nbformat.NotebookNode) -> list[dict]:
    """The cells a tab should hold, each with a unique id (the tab matches its cells by id)."""
    cells, seen = [], set()
    for cell in notebook.cells:
        cell_id = cell.get("id")
        if not cell_id or cell_id in seen:
            cell_id = secrets.token_hex(4)
        seen.add(cell_id)
        entry = {"id": cell_id, "cell_type": cell.cell_type, "source": cell.source}
        entry["metadata"] = dict(cell.metadata)
        if cell.get("attachments"):
            entry["attachments"] = cell.attachments
        if cell.cell_type == "code":
            entry |= {"outputs": [], "execution_count": None}
        cells.append(entry)
    return cells


def notebook_of(claim: dict) -> nbformat.NotebookNode:
    """The tab's document as a notebook (its cells without outputs); ValueError if malformed."""
    makers = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }
    cells = []
    for cell in claim["cells"]:
        make = makers[cell["cell_type"]]
        if not isinstance(cell["source"], str) or not isinstance(cell["metadata"], dict):
            raise ValueError("a cell's source or metadata is malformed")
        made = make(cell["source"], id=str(cell["id"]), metadata=cell["metadata"])
        if cell.get("attachments") and cell["cell_type"] != "code":
            made.attachments = cell["attachments"]
        cells.append(made)
    notebook = nbformat.v4.new_notebook(cells=cells, metadata=claim.get("metadata") or {})
    nbformat.validate(notebook)
    return notebook


class _Handler(APIHandler):
    auth_resource = "contents"  # reads and saves the learner's notebooks

    def initialize(self, lab: LabState) -> None:
        self.lab = lab

    def body(self) -> dict:
        try:
            found = json.loads(self.request.body or b"{}")
        except ValueError as error:
            raise web.HTTPError(400, "not JSON") from error
        if not isinstance(found, dict):
            raise web.HTTPError(400, "not a JSON object")
        return found


class FrontendsHandler(_Handler):
    @web.authenticated
    @authorized
    def get(self) -> None:
        self.finish({"open": self.lab.open_paths()})

    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.body()
        paths = [p for p in body.get("open", []) if isinstance(p, str)][:MAX_OPEN]
        frontend = str(body.get("frontend", ""))[:64]
        self.finish({"updates": self.lab.report(frontend, paths, bool(body.get("leaving")))})


class MergeHandler(_Handler):
    @web.authenticated
    @authorized
    def post(self) -> None:
        body = self.body()
        try:
            notebook = notebook_of(body["notebook"])
        except (KeyError, TypeError, ValueError, nbformat.ValidationError) as error:
            raise web.HTTPError(400, f"not a notebook: {error}") from error
        frontend = str(body.get("frontend", ""))[:64]
        self.finish(self.lab.merge(str(body.get("path", "")), notebook, frontend))


class MergedHandler(_Handler):
    @web.authenticated
    @authorized
    def post(self) -> None:
        token = str(self.body().get("token", ""))
        if token not in self.lab.merges:
            raise web.HTTPError(404, "no such merge")
        self.lab.merged(token)
        self.finish({})
