"""What a person does on the class hub in the browser: log in, the Assignments tab, a notebook, the
formgrader. Used by tests/test_hub.py; every step reads the page as a person would (no access to
the lab's JavaScript objects), and every wait has a reason to end.
"""

from __future__ import annotations

import re
from pathlib import Path

from browser_lab import BrowserSteps, exact
from playwright.sync_api import expect

SPAWN_TIMEOUT_MS = 240_000  # a server imports the lab and nbgrader: slow on a busy machine
GRADING_TIMEOUT_MS = 300_000  # the formgrader's autograde runs the notebook, torch included
UI_WAIT_MS = 60_000  # a page that has loaded catching up with its state, on a busy machine
# What the lab and the formgrader show when something is wrong (toasts, nbgrader's list errors).
WARNING_SELECTORS = (
    ".Toastify__toast--error",
    ".Toastify__toast--warning",
    ".jp-Dialog",
    "[id$='_assignments_list_error']",
    ".alert-danger",
    ".alert-warning",
)
# Resolves when the page's CSS transitions and animations have finished (dialogs fading in).
JS_SETTLE = "() => Promise.all(document.getAnimations().map((a) => a.finished))"


class HubUser(BrowserSteps):
    """One person's browser session on the hub, with a browser context (cookies) of their own."""

    def __init__(self, browser, hub_url: str, account: str, password: str, artifacts: Path):
        self.account, self.password = account, password
        self.hub_url = hub_url
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        super().__init__(self.context.new_page(), artifacts)

    @property
    def server_url(self) -> str:
        return f"{self.hub_url}user/{self.account}/"

    def close(self) -> None:
        self.context.close()

    # --- evidence

    def warnings_shown(self) -> list[str]:
        """Visible error or warning banners, toasts and dialogs, with their text."""
        shown = []
        for selector in WARNING_SELECTORS:
            for element in self.page.locator(selector).all():
                if element.is_visible():
                    shown.append(f"{selector}: {element.inner_text().strip()[:300]}")
        return shown

    # --- the hub

    def start_login(self) -> None:
        """Log in with the hub's form; the hub then starts this account's server."""
        self.page.goto(self.hub_url + "hub/login")
        self.page.locator("#username_input").fill(self.account)
        self.page.locator("#password_input").fill(self.password)
        self.page.locator("#login_submit").click()

    def wait_for_lab(self) -> None:
        """Until the lab shows its first page: the Launcher, or the notebook it opens on.
        Only a shown one counts: a restored workspace keeps other notebooks in hidden tabs."""
        self.page.wait_for_url(f"**/user/{self.account}/lab**", timeout=SPAWN_TIMEOUT_MS)
        shown = self.page.locator(".jp-LauncherCard:visible, .jp-NotebookPanel:visible")
        shown.first.wait_for(timeout=SPAWN_TIMEOUT_MS)

    def current_document(self, expected: str) -> str:
        """The name of the document in the main area's current tab ("Name: ..." in its title),
        once it is `expected` or the wait is over: the lab first restores the tabs of its last
        session (one of them current), then opens the one its URL names."""
        tab = self.page.locator('li.lm-TabBar-tab.lm-mod-current[data-type="document-title"]').first
        expect(tab).to_have_attribute("title", re.compile("^Name: "))  # set once it has loaded
        named = re.compile(f"^Name: {re.escape(expected)}$", re.MULTILINE)
        try:
            expect(tab).to_have_attribute("title", named, timeout=UI_WAIT_MS)
        except AssertionError:
            pass  # the caller's assert says which document is current instead
        return tab.get_attribute("title").splitlines()[0].removeprefix("Name: ")

    def open_progress(self):
        """The hub's home page, Services -> progress (as the hub README says), in a tab of its
        own; returns that tab."""
        return self.open_service("progress", "Learners' progress")

    def open_report(self):
        """Services -> report: the class at a glance, in a tab of its own."""
        return self.open_service("report", "The class at a glance")

    def open_service(self, name: str, heading: str):
        tab = self.context.new_page()
        tab.goto(self.hub_url + "hub/home")
        tab.locator("a.dropdown-toggle", has_text=exact("Services")).click()
        tab.locator("a.dropdown-item", has_text=exact(name)).click()
        tab.locator("h1", has_text=heading).wait_for(timeout=SPAWN_TIMEOUT_MS)
        return tab

    # --- JupyterLab

    def menu_items(self, menu: str) -> list[str]:
        """The labels of a top menu's visible items (the menu is closed again afterwards)."""
        self.page.locator(".lm-MenuBar-item").filter(has_text=exact(menu)).click()
        items = self.page.locator(".lm-Menu-item:visible .lm-Menu-itemLabel")
        items.first.wait_for()
        labels = [label.strip() for label in items.all_inner_texts()]
        self.page.keyboard.press("Escape")
        return labels

    def menu(self, menu: str, item: str) -> None:
        self.page.locator(".lm-MenuBar-item").filter(has_text=exact(menu)).click()
        self.page.locator(".lm-Menu-item").filter(has_text=exact(item)).click()

    def open_path(self, relative: str) -> None:
        """Double-click through the file browser from the home folder down to `relative`."""
        self.page.locator(".jp-BreadCrumbs-home").click()
        parts = relative.split("/")
        for depth, name in enumerate(parts):
            listing = self.page.locator(".jp-DirListing-itemText", has_text=exact(name))
            self.page.locator(".jp-DirListing-item").filter(has=listing).dblclick()
            if depth < len(parts) - 1:
                self.page.locator(".jp-BreadCrumbs").filter(has_text=name).wait_for()

    def cell_holding(self, text: str):
        """The notebook cell whose code contains `text`."""
        return self.page.locator(".jp-Notebook .jp-Cell").filter(
            has=self.page.locator(".cm-content", has_text=text)
        )

    def replace_cell(self, cell, code: str) -> None:
        """Click into the cell's editor, select everything and type `code` over it (typed as one
        input, like a paste, so auto-indent and bracket closing leave it as written)."""
        editor = cell.locator(".cm-content")
        editor.scroll_into_view_if_needed()
        editor.click()
        self.page.keyboard.press("ControlOrMeta+a")
        self.page.keyboard.insert_text(code)

    def save_notebook(self) -> None:
        self.page.keyboard.press("ControlOrMeta+s")

    # --- nbgrader's Assignments tab

    def open_assignments(self) -> None:
        self.menu("Nbgrader", "Assignment List")
        self.page.locator("#released_assignments_list").wait_for()
        self.wait_assignment_lists_loaded()

    def course_shown(self) -> str:
        """The course the tab lists assignments of (or its error: "Error fetching courses!")."""
        return self.page.locator("#course_list_default").inner_text().strip()


# Runs in a page: start a kernel through the server's API, run `code` in it over the kernel's
# websocket, and resolve with how it ended ("ok", "error", or the kernel's status when it died).
JS_RUN_IN_NEW_KERNEL = """async (code) => {
  const base = location.pathname.match(/^\\/user\\/[^\\/]+\\//)[0];
  const xsrf = decodeURIComponent((document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || "");
  const started = await fetch(base + "api/kernels", {method: "POST",
    headers: {"Content-Type": "application/json", "X-XSRFToken": xsrf}, body: "{}"});
  const kernel = await started.json();
  const socket = new WebSocket(`ws://${location.host}${base}api/kernels/${kernel.id}/channels`);
  return await new Promise((resolve) => {
    const done = (end) => resolve({id: kernel.id, end});
    setTimeout(() => done("no answer in 180 s"), 180000);
    socket.onopen = () => socket.send(JSON.stringify({channel: "shell", buffers: [],
      header: {msg_id: "run", username: "", session: "t", msg_type: "execute_request",
               version: "5.3", date: new Date().toISOString()},
      parent_header: {}, metadata: {}, content: {code, silent: false, store_history: false,
      user_expressions: {}, allow_stdin: false, stop_on_error: true}}));
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      const state = message.content && message.content.execution_state;
      if (message.msg_type === "execute_reply") done(message.content.status);
      if (["restarting", "autorestarting", "dead"].includes(state)) done(state);
    };
    socket.onclose = () => done("closed");
  });
}"""


def run_in_new_kernel(user: HubUser, code: str) -> dict:
    """Start a kernel on the user's server and run `code` in it (as their notebook would);
    returns {"id": kernel id, "end": "ok" | "error" | the kernel's status when it died}."""
    return user.page.evaluate(JS_RUN_IN_NEW_KERNEL, code)


class Formgrader:
    """The instructor's formgrader (nbgrader's own pages, served by the instructor's server),
    opened from JupyterLab's Nbgrader menu: the pages are inside the lab's formgrader frame."""

    def __init__(self, user: HubUser):
        self.user = user
        self.page = user.page  # the formgrader's frame, once opened

    def open_from_menu(self) -> None:
        """Nbgrader -> Formgrader, as the README tells the instructor (a header that forbids
        the frame leaves it empty, and this waits in vain)."""
        self.user.menu("Nbgrader", "Formgrader")
        # nbgrader's FormgraderWidget: a JupyterLab IFrame widget (a div holding the iframe)
        frame = self.user.page.locator("#formgrader-iframe iframe").last
        frame.wait_for()
        self.page = frame.element_handle().content_frame()
        self.page.locator("#main-table tr td.name a").first.wait_for()

    def open_assignments(self) -> None:
        self.page.goto(self.user.server_url + "formgrader/manage_assignments")
        self.page.locator("#main-table tr td.name a").first.wait_for()

    def row(self, assignment: str):
        return self.page.locator("#main-table tr").filter(
            has=self.page.locator("td.name", has_text=exact(assignment))
        )

    def click_and_confirm(self, row, column: str, success: str) -> str:
        """Click the icon in `column` of `row`; nbgrader answers with a dialog. Returns its text;
        raises unless it is the success dialog whose message contains `success`."""
        row.locator(f"td.{column} a").click()
        dialog = self.page.locator(".modal.in").first
        dialog.wait_for(timeout=GRADING_TIMEOUT_MS)
        self.page.evaluate(JS_SETTLE)  # the dialog fades in
        text = dialog.inner_text()
        if dialog.get_attribute("id") != "success-modal" or success not in text:
            raise AssertionError(f"the formgrader answered {column} with:\n{text}")
        return text

    def close_dialog(self) -> None:
        dialog = self.page.locator(".modal.in").first
        dialog.locator(".modal-footer button", has_text=exact("OK")).click()
        # nbgrader removes the dialog once it has faded out (and the page shows again)
        self.page.locator(".modal, .modal-backdrop").first.wait_for(state="detached")
