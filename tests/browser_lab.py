"""Drive the course in a real JupyterLab and headless Chromium, the way a learner clicks through it.

Used by tests/test_browser.py. The server is started with `make lab` (the learner's lab, in a
scratch workspace) or `make formgrader` (the instructor's), on loopback with token auth, scratch
Jupyter/IPython/Matplotlib folders and exchange, autosave off (unless a test asks for
JupyterLab's default, AUTOSAVE_SETTINGS) and checkpoints kept outside the repository, so a
run leaves nothing behind. `stop_lab` asks the server to shut down (which stops its kernels),
then kills whatever is left of its process tree: kernels run in sessions of their own, so
killing the server's process group alone would miss them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fxcourse.workspace import LAB_SETTINGS as WORKSPACE_LAB_SETTINGS

CHROMIUM = Path(os.environ.get("FXCOURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 120
UI_TIMEOUT_MS = 60_000
RUN_ALL_COMMAND = "runmenu:run-all"  # the Run menu's "Run All Cells"

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
    language: str = "en",
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
    if language != "en":
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
    language: str = "en",
) -> Iterator[LabServer]:
    server = start_lab(root, scratch, log_path, target, settings, language)
    try:
        yield server
    finally:
        forced = stop_lab(server)
        if forced:
            raise RuntimeError("processes outlived the lab shutdown (killed): " + "; ".join(forced))


# ----------------------------------------------------------------------------- the page

# JavaScript run in the page. `window.jupyterapp` exists because of expose_app_in_browser; the
# test clicks like a learner and uses the app only to read state (models, kernels, commands).
JS_CURRENT_NOTEBOOK = """
(path) => {
  const widget = window.jupyterapp.shell.currentWidget;
  if (!widget || !widget.context || widget.context.path !== path || !widget.content.model) {
    return null;
  }
  const kernel = widget.sessionContext.session && widget.sessionContext.session.kernel;
  return {
    kernel: kernel ? kernel.name : null,
    status: kernel ? kernel.status : null,
    ready: widget.context.isReady,
  };
}
"""

JS_WATCH_COMMANDS = """
() => {
  window.__fxCommands = [];
  if (!window.__fxWatching) {
    window.jupyterapp.commands.commandExecuted.connect((_, executed) => {
      const record = {id: executed.id, done: false, value: null, error: null};
      window.__fxCommands.push(record);
      Promise.resolve(executed.result).then(
        (value) => { record.value = value; record.done = true; },
        (error) => { record.error = String(error); record.done = true; });
    });
    window.__fxWatching = true;
  }
}
"""

JS_COMMAND_DONE = """
(id) => {
  const record = (window.__fxCommands || []).find((r) => r.id === id);
  return record && record.done ? {value: record.value, error: record.error} : null;
}
"""

JS_NOTEBOOK_REPORT = """
() => {
  const model = window.jupyterapp.shell.currentWidget.content.model;
  const cells = [];
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    const entry = {index: i, type: cell.type, source: cell.sharedModel.getSource(),
                   nbgrader: (cell.getMetadata && cell.getMetadata('nbgrader')) || null,
                   tryit: (cell.getMetadata && cell.getMetadata('tryit')) || null};
    if (cell.type === 'code') {
      entry.execution_count = cell.executionCount;
      entry.outputs = cell.outputs.toJSON();
    }
    cells.push(entry);
  }
  return cells;
}
"""

JS_CELL_SOURCE = """
(index) => window.jupyterapp.shell.currentWidget.content.model.cells.get(index)
  .sharedModel.getSource()
"""


# nbgrader's Assignments tab: its three lists, by element id.
ASSIGNMENT_LISTS = {
    "released": "#released_assignments_list",
    "fetched": "#fetched_assignments_list",
    "submitted": "#submitted_assignments_list",
}
ASSIGNMENT_TIMEOUT_MS = 240_000  # a fetch or submit on a busy machine


class BrowserSteps:
    """What every browser session of the tests has: a page, screenshots, named steps that keep
    the evidence on failure, and nbgrader's Assignments tab."""

    def __init__(self, page, artifacts: Path, timeout_ms: int = UI_TIMEOUT_MS):
        self.page, self.artifacts = page, artifacts
        self.console_errors: list[str] = []
        page.on(
            "console",
            lambda msg: self.console_errors.append(msg.text) if msg.type == "error" else None,
        )
        page.set_default_timeout(timeout_ms)

    def shot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """When the step raises, keep what the page looked like (`name`-FAILED.png) and the
        browser console's errors (`name`-FAILED-console.txt)."""
        try:
            yield
        except BaseException:
            console = self.artifacts / f"{name}-FAILED-console.txt"
            console.write_text("\n".join(self.console_errors) + "\n")
            try:
                self.shot(f"{name}-FAILED")
            except Exception:  # the page itself may be what failed
                pass
            raise

    # --- nbgrader's Assignments tab

    def wait_assignment_lists_loaded(self) -> None:
        for list_id in ASSIGNMENT_LISTS.values():
            self.page.locator(f"{list_id}_loading").wait_for(state="hidden")

    def refresh_assignments(self) -> None:
        self.page.locator("#refresh_assignments_list").click()
        self.wait_assignment_lists_loaded()

    def assignment_item(self, section: str, assignment: str):
        """The row of `assignment` in one of the tab's three lists."""
        return self.page.locator(f"{ASSIGNMENT_LISTS[section]} .list_item").filter(
            has=self.page.locator(".item_name", has_text=assignment)
        )

    def click_assignment_button(self, section: str, assignment: str, label: str, then: str):
        """Click the row's button `label`, and wait until the row appears in section `then`."""
        button = self.assignment_item(section, assignment).locator("button", has_text=exact(label))
        button.click()
        self.assignment_item(then, assignment).first.wait_for(timeout=ASSIGNMENT_TIMEOUT_MS)


class LabPage(BrowserSteps):
    """One browser tab on the lab, with the steps a learner takes and the checks the test makes."""

    def __init__(self, page, server: LabServer, artifacts: Path):
        super().__init__(page, artifacts)
        self.server = server
        self.content_writes: list[str] = []  # saves, renames, new or deleted files
        page.on("request", self._note_content_write)

    def _note_content_write(self, request) -> None:
        path = urllib.parse.urlsplit(request.url).path
        if "/api/contents" not in path or request.method in ("GET", "HEAD"):
            return
        if request.method == "POST" and path.endswith("/checkpoints"):
            return  # the lab checkpoints what it opens; start_lab keeps checkpoints in scratch
        self.content_writes.append(f"{request.method} {path}")

    # --- generic

    def open_lab(self) -> None:
        self.page.goto(self.server.lab_url())
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell")
        self.page.evaluate("() => window.jupyterapp.restored")
        self.page.locator(".jp-DirListing-item").first.wait_for()

    # --- file browser and notebooks

    def double_click_path(self, relative: str) -> None:
        """Double-click through the file browser, from the lab root down to `relative`."""
        self.page.locator(".jp-BreadCrumbs-home").click()
        parts = relative.split("/")
        for depth, name in enumerate(parts):
            item = self.page.locator(".jp-DirListing-item").filter(
                has=self.page.locator(".jp-DirListing-itemText", has_text=exact(name))
            )
            item.dblclick()
            if depth < len(parts) - 1:  # wait for the folder to open
                self.page.locator(".jp-BreadCrumbs").filter(has_text=name).wait_for()

    def wait_for_notebook(self, relative: str, kernel: str) -> dict:
        """Wait until `relative` is the current tab and its kernel is `kernel` and idle."""
        handle = self.page.wait_for_function(
            f"""() => {{
              const state = ({JS_CURRENT_NOTEBOOK})({json.dumps(relative)});
              return state && state.ready && state.kernel === {json.dumps(kernel)}
                && state.status === 'idle' ? state : null;
            }}""",
            timeout=UI_TIMEOUT_MS * 2,
        )
        return handle.json_value()

    def menu(self, menu_label: str, command: str) -> None:
        """Open a top menu by its label and click the item bound to `command`."""
        self.page.locator(".lm-MenuBar-item").filter(has_text=exact(menu_label)).click()
        self.page.locator(f'.lm-Menu-item[data-command="{command}"]').click()

    def run_all_cells(self, timeout_s: float, run_menu: str = "Run") -> None:
        """Run -> Run All Cells (the Run menu is `run_menu` in a translated lab), then wait until
        the command reports that all cells have run."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.page.evaluate(JS_WATCH_COMMANDS)
        self.menu(run_menu, RUN_ALL_COMMAND)
        try:
            handle = self.page.wait_for_function(
                JS_COMMAND_DONE, arg=RUN_ALL_COMMAND, timeout=timeout_s * 1000, polling=250
            )
        except PlaywrightTimeout:
            running = self.page.locator(".jp-InputPrompt").filter(has_text="[*]").count()
            raise AssertionError(
                f"Run All Cells had not finished after {timeout_s} s ({running} cells running or"
                " queued)"
            ) from None
        outcome = handle.json_value()
        if outcome["error"]:
            raise RuntimeError(f"Run All Cells failed: {outcome['error']}")
        busy = self.page.locator(".jp-InputPrompt").filter(has_text="[*]")
        if busy.count():
            raise AssertionError(f"{busy.count()} cells still running after Run All Cells finished")

    def cells(self) -> list[dict]:
        return self.page.evaluate(JS_NOTEBOOK_REPORT)

    def cell(self, index: int):
        """Cell `index` of the notebook in the current tab (other tabs' cells are in the page
        too, hidden)."""
        panel = self.page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
        return self.page.locator(f'[id="{panel}"] .jp-Notebook .jp-Cell').nth(index)

    def replace_cell_source(self, index: int, code: str) -> None:
        """Click into the cell's editor, select all of it and type `code` over it."""
        # A cell far down is drawn (its editor made) only once it is scrolled to.
        self.cell(index).scroll_into_view_if_needed()
        editor = self.cell(index).locator(".cm-content")
        editor.scroll_into_view_if_needed()
        editor.click()
        self.page.keyboard.press("ControlOrMeta+a")
        # insert_text types the text as one input event, like a paste: the editor's auto-indent
        # and bracket closing (which act on single keystrokes) leave it as written.
        self.page.keyboard.insert_text(code)
        typed = self.page.evaluate(JS_CELL_SOURCE, index)
        if typed != code:
            raise AssertionError(f"cell {index} holds\n{typed!r}\nafter typing\n{code!r}")


def exact(text: str) -> re.Pattern:
    return re.compile(rf"^\s*{re.escape(text)}\s*$")


# ----------------------------------------------------------------------------- notebook checks


def error_outputs(cells: list[dict]) -> list[str]:
    """Errors a learner would see: error outputs and tracebacks on stderr (as notebook_runner)."""
    found = []
    for cell in cells:
        for output in cell.get("outputs") or []:
            if output["output_type"] == "error":
                found.append(f"cell {cell['index']}: {output['ename']}: {output['evalue']}")
            elif output.get("name") == "stderr" and "Traceback" in _text(output.get("text")):
                found.append(f"cell {cell['index']}: traceback on stderr")
    return found


def unexecuted_code_cells(cells: list[dict]) -> list[int]:
    return [
        c["index"]
        for c in cells
        if c["type"] == "code" and c["source"].strip() and c.get("execution_count") is None
    ]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


# What the page shows that a person would read as something gone wrong: JupyterLab's error and
# warning notifications, dialogs, and the formgrader's alert boxes. (Notebook outputs are checked
# on the notebook's model, see `warning_outputs`: JupyterLab does not render cells off screen.)
BANNER_SELECTORS = [
    ".Toastify__toast--error",
    ".Toastify__toast--warning",
    ".jp-Dialog",
    ".alert-danger",
    ".alert-warning",
]


def visible_banners(page) -> list[str]:
    """The text of every visible error or warning banner, in the page and in its iframes."""
    found = []
    for frame in page.frames:
        for selector in BANNER_SELECTORS:
            for element in frame.locator(selector).all():
                if element.is_visible():
                    found.append(f"{selector}: {element.text_content()[:300]!r}")
    return found


def warning_outputs(cells: list[dict]) -> list[str]:
    """Outputs a learner sees as a red or pink box: errors and anything on stderr."""
    found = []
    for cell in cells:
        for output in cell.get("outputs") or []:
            if output["output_type"] == "error":
                found.append(f"cell {cell['index']}: {output['ename']}: {output['evalue']}")
            elif output.get("name") == "stderr":
                found.append(f"cell {cell['index']}: stderr: {_text(output.get('text'))[:300]!r}")
    return found


JS_PICTURES_WIDER_THAN_OUTPUT = """
() => Array.from(document.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output svg'))
  .filter((img) => img.getBoundingClientRect().width > 0)
  .map((img) => ({width: img.getBoundingClientRect().width,
                  room: img.closest('.jp-OutputArea-output').getBoundingClientRect().width}))
  .filter((size) => size.width > size.room + 1)
"""


def svg_from_data_url(src: str) -> str:
    """The SVG document inside an <img src="data:image/svg+xml..."> (URL- or base64-encoded)."""
    header, _, payload = src.partition(",")
    if ";base64" in header:
        return base64.b64decode(payload).decode("utf-8")
    return urllib.parse.unquote(payload)
