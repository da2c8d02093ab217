"""Drive the course in a real JupyterLab and headless Chromium, the way a learner clicks through it.

Used by tests/test_browser.py (in every language of the registry), on a server of
tests/lab_runner.py (started with `make lab` or `make formgrader`).
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab_runner import (  # noqa: F401  (tests/hub_class.py takes the process helpers from here)
    LabServer,
    describe,
    free_loopback_port,
    process_tree,
    start_make,
    still_running,
)

CHROMIUM = Path(os.environ.get("FXCOURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
UI_TIMEOUT_MS = 60_000
RUN_ALL_COMMAND = "runmenu:run-all"  # the Run menu's "Run All Cells"


# ----------------------------------------------------------------------------- the page

# JavaScript run in the page. `window.jupyterapp` exists because of expose_app_in_browser; the
# test clicks like a learner and uses the app only to read state (models, kernels, commands).
JS_CURRENT_NOTEBOOK = """
(path) => {
  // Straight after a page load the app object is not there yet: not ready, not an error.
  if (!window.jupyterapp || !window.jupyterapp.shell) {
    return null;
  }
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

    def save_notebook(self) -> None:
        """File -> Save Notebook, as a learner's Ctrl+S: the current notebook written now, not at
        autosave's next turn (JupyterLab stretches its interval to ten times the last save's
        duration, past a minute on a loaded machine)."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")

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
