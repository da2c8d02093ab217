"""A whole class cycle on the class hub (`make hub`), in a real browser (`make test-hub`).

The hub runs as it would for a class, with throwaway system accounts (an instructor and two
learners), ports and folders of its own. In headless Chromium:

1. the instructor opens the formgrader from JupyterLab's Nbgrader menu, generates and releases
   exercise 1;
2. two learners log in, fetch it from the Assignments tab into their home, type an answer (one the
   reference solution, one a known mistake), save and submit; ada's notebook also carries HTML
   that would write a file through the Jupyter API if it ran in a browser;
3. ada, from her own account, plants links to the hidden checks.py and the gradebook in her inbound
   submission, back-dates its timestamp.txt and submits a copy under bob's name;
4. the instructor collects (nothing of the links arrives, bob's work stays his, ada's time is the
   one the system recorded), autogrades both submissions, opens ada's submission in the formgrader
   (nothing of hers runs), generates and releases feedback;
5. each learner fetches their feedback and sees their own score and failure messages, and no
   hidden test; the gradebook export has a row for each;
6. ada allocates past her server's memory limit: her kernel is killed, her server, bob's and the
   hub answer on;
7. a learner added with `make hub-accounts` while the hub runs logs in at once.

Along the way it checks the boundaries: learners have no formgrader, cannot read each other's
work or the instructor's course folder, and fetched notebooks hold no solution or hidden test.
Screenshots of every step are in test-artifacts/hub/. Afterwards (also after a failure) the hub
and every process of the accounts must be gone, and the accounts, their files and nothing else.
Needs root (the hub runs each account's server as that account). A checkout in a private folder
is made enterable by every account while the hub runs, then put back.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from browser_lab import CHROMIUM, CHROMIUM_ARGS
from hub_class import (
    ClassHub,
    load_accounts,
    reachable_by_every_account,
    run_as,
    running_class_hub,
)
from hub_pages import GRADING_TIMEOUT_MS, Formgrader, HubUser, run_in_new_kernel
from nbformat.reader import NotJSONError
from submissions.build import read_snippet, reference_solutions

from fxcourse.workspace import START_PAGE, course_kernel
from grader import exercises, intake
from grader.course import Course
from grader.intake import exchange as intake_exchange

ROOT = Path(__file__).resolve().parents[1]

ARTIFACTS = ROOT / "test-artifacts" / "hub"
HUB_PYTHON = ROOT / os.environ.get("HUB_VENV", ".venv-hub") / "bin" / "python"
ASSIGNMENT = "ex1_sigmoid_to_tanh"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
MISTAKE = read_snippet(ROOT / "tests" / "submissions" / "ex1_only_torch_sigmoid.py")
# What the feedback tells the learner who only rewrote torch.sigmoid (a check's message).
MISTAKE_MESSAGE = "x.sigmoid(): the rewritten graph still computes a sigmoid"
KERNEL = course_kernel()["name"]
COURSE_ID = Course.configured().course_id


def write_file_js(name: str) -> str:
    """JavaScript that, run in a page of a user's server, writes ~/name through the Jupyter API
    with that user's session (what a learner's script in the instructor's browser could do)."""
    return (
        "fetch(top.location.pathname.match(/^\\/user\\/[^\\/]+\\//)[0]+'api/contents/" + name + "',"
        "{method:'PUT',headers:{'Content-Type':'application/json','X-XSRFToken':"
        "decodeURIComponent((top.document.cookie.match(/_xsrf=([^;]+)/)||[])[1]||'')},"
        "body:JSON.stringify({type:'file',format:'text',content:'ran'})})"
    )


HOSTILE_MARKUP = "HOSTILE MARKUP"  # visible text of the hostile cell: it reached the page
HOSTILE_CELL = (
    f'<b>{HOSTILE_MARKUP}</b> <img src="x" onerror="{write_file_js("PWNED-img.txt")}">\n'
    f"<script>{write_file_js('PWNED-script.txt')}</script>\n"
    f'<iframe srcdoc="<script>{write_file_js("PWNED-frame.txt")}</script>"></iframe>'
)
PWNED = ("PWNED-img.txt", "PWNED-script.txt", "PWNED-frame.txt")
ADD_MARKDOWN_CELL = """
import sys, nbformat
path, text = sys.argv[1], sys.argv[2]
notebook = nbformat.read(path, as_version=4)
notebook.cells.append(nbformat.v4.new_markdown_cell(text))
nbformat.write(notebook, path)
"""
# Run by ada in her own inbound folder after submitting: what any learner's shell can do there.
PLANT = """set -e
cd "$1"
chmod u+w .
ln -s "$2" checks.py
ln -s "$3" gradebook.db
rm -f timestamp.txt
echo "2020-01-01 00:00:00.000000 UTC" > timestamp.txt
mkdir "$4"
cp *.ipynb "$4/"
echo "2099-01-01 00:00:00.000000 UTC" > "$4/timestamp.txt"
"""

pytestmark = [
    pytest.mark.xdist_group("class-hub"),
    pytest.mark.skipif(
        os.environ.get("FXCOURSE_HUB_TEST") != "1",
        reason="the class hub's browser test runs in `make test-hub` (root; about 4 minutes)",
    ),
]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for stale in [*ARTIFACTS.glob("*.png"), *ARTIFACTS.glob("*.txt")]:
        stale.unlink()
    print(f"class hub screenshots: {ARTIFACTS}/")
    return ARTIFACTS


@pytest.fixture(scope="module")
def class_hub(artifacts) -> Iterator[ClassHub]:
    if os.geteuid() != 0:
        pytest.fail("the class hub runs every account's server as that account: run as root")
    with tempfile.TemporaryDirectory(prefix="fxhub-test-", dir="/tmp") as scratch:
        os.chmod(scratch, 0o755)  # the accounts' homes are inside
        with reachable_by_every_account(ROOT):
            with running_class_hub(ROOT, Path(scratch), artifacts / "hub.log") as hub:
                yield hub


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `env/setup.sh test` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="fxhub-chromium-") as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, env=env
            )
            yield chromium
            chromium.close()


# ----------------------------------------------------------------------------- helpers


def hidden_test_lines() -> list[str]:
    """The distinctive lines of exercise 1's hidden tests (none may reach a learner): those not
    also written somewhere outside the hidden tests. make release writes them into the source."""
    hidden, visible, inside = set(), set(), False
    source = exercises.with_hidden_tests(nbformat.read(SOURCE, as_version=4), ASSIGNMENT)
    for cell in source.cells:
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                inside = "BEGIN" in line
            else:
                (hidden if inside else visible).add(line.strip())
    distinctive = sorted(line for line in hidden - visible if len(line) >= 25)
    assert distinctive, f"{SOURCE} has no hidden tests to look for"
    return distinctive


def leaked(text: str) -> list[str]:
    markers = ["BEGIN HIDDEN TESTS", "BEGIN SOLUTION"]
    return [line for line in [*markers, *hidden_test_lines()] if line in text]


def notebook_text(notebook: Path) -> str:
    return "\n".join(cell.source for cell in nbformat.read(notebook, as_version=4).cells)


def answer_cell(notebook: Path) -> str:
    """The source of the (single) answer cell of exercise 1 in a learner's notebook on disk."""
    cells = nbformat.read(notebook, as_version=4).cells
    answers = [c.source for c in cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(answers) == 1, f"{notebook}: {len(answers)} answer cells"
    return answers[0]


def wait_for_file_content(path: Path, expected: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if answer_cell(path) == expected:
                return
        except (FileNotFoundError, NotJSONError):  # not saved yet, or read while being written
            pass
        time.sleep(0.5)
    raise AssertionError(f"{path} was not saved with the typed answer in {timeout_s} s")


def memory_mib(hub: ClassHub, account: str) -> float:
    """Resident memory of all of an account's processes (its server and kernels), in MiB."""
    total_kib = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        uid = re.search(r"^Uid:\s+(\d+)", text, re.MULTILINE)
        rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
        if uid and rss and int(uid.group(1)) == hub.uids[account]:
            total_kib += int(rss.group(1))
    return total_kib / 1024


def note(artifacts: Path, line: str) -> None:
    """Measurements for the README's sizing estimate: printed, and kept beside the screenshots."""
    print(line)
    with (artifacts / "hub-measurements.txt").open("a") as handle:
        handle.write(line + "\n")


# ----------------------------------------------------------------------------- the steps


def release_exercise(instructor: HubUser) -> None:
    with instructor.step("01-instructor-lab"):
        instructor.wait_for_lab()
        items = instructor.menu_items("Nbgrader")
        assert "Formgrader" in items, f"the instructor's Nbgrader menu: {items}"
        instructor.shot("01-instructor-lab")
    formgrader = Formgrader(instructor)
    with instructor.step("02-formgrader-release"):
        formgrader.open_from_menu()
        assert not instructor.warnings_shown(), instructor.warnings_shown()
        instructor.shot("02-formgrader-assignments")
        row = formgrader.row(ASSIGNMENT)
        formgrader.click_and_confirm(row, "assign", "Successfully created the student version")
        formgrader.close_dialog()
        formgrader.click_and_confirm(row, "release", "Successfully released")
        instructor.shot("02-formgrader-released")
        formgrader.close_dialog()
        row.locator("td.status", has_text="released").wait_for()


def fetch_answer_submit(
    hub: ClassHub, learner: HubUser, answer: str, prefix: str, markdown: str = ""
) -> None:
    """Fetch, answer, save and submit; `markdown` is added as a cell from the learner's shell."""
    with learner.step(f"{prefix}-lab"):
        learner.wait_for_lab()
        items = learner.menu_items("Nbgrader")
        assert items == ["Assignment List"], f"a learner's Nbgrader menu: {items}"
        learner.open_assignments()
        assert learner.course_shown() == Course.configured().course_id, learner.course_shown()
        learner.assignment_item("released", ASSIGNMENT).wait_for()
        assert not learner.warnings_shown(), learner.warnings_shown()
        learner.shot(f"{prefix}-assignments")
    notebook = hub.home(learner.account) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    with learner.step(f"{prefix}-fetch"):
        learner.click_assignment_button("released", ASSIGNMENT, "Fetch", then="fetched")
        assert notebook.stat().st_uid == hub.uids[learner.account], "not in the learner's own files"
        assert not leaked(notebook.read_text()), (
            f"the fetched notebook holds {leaked(notebook.read_text())}"
        )
        learner.shot(f"{prefix}-fetched")
    with learner.step(f"{prefix}-answer"):
        learner.open_path(f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
        cell = learner.cell_holding("raise NotImplementedError()")
        learner.replace_cell(cell, answer)
        learner.save_notebook()
        wait_for_file_content(notebook, answer)
        if markdown:
            added = run_as(
                learner.account, str(HUB_PYTHON), "-c", ADD_MARKDOWN_CELL, str(notebook), markdown
            )
            assert added.returncode == 0, added.stderr
        learner.shot(f"{prefix}-answered")
    with learner.step(f"{prefix}-submit"):
        learner.page.locator(".lm-TabBar-tab", has_text="Assignments").click()
        learner.click_assignment_button("fetched", ASSIGNMENT, "Submit", then="submitted")
        assert not learner.warnings_shown(), learner.warnings_shown()
        learner.shot(f"{prefix}-submitted")


def grade_and_release_feedback(
    hub: ClassHub, instructor: HubUser, artifacts: Path, ada_time: str
) -> None:
    formgrader = Formgrader(instructor)
    with instructor.step("20-collect"):
        formgrader.open_from_menu()
        row = formgrader.row(ASSIGNMENT)
        formgrader.click_and_confirm(row, "collect", "Successfully collected")
        formgrader.close_dialog()
        check_collected(hub, *hub.learners, ada_time)
        row.locator("td.num-submissions a", has_text="2").click()
    with instructor.step("21-autograde"):
        for learner in hub.learners:
            student = formgrader.page.locator("#main-table tr").filter(
                has=formgrader.page.locator("td.student-id", has_text=learner)
            )
            started = time.monotonic()
            formgrader.click_and_confirm(student, "autograde", "Successfully autograded")
            note(
                artifacts,
                f"autograde of {learner}'s submission: {time.monotonic() - started:.1f} s",
            )
            formgrader.close_dialog()
            student.locator("td.score", has_text=re.compile(r"/ 10$")).wait_for()
        instructor.shot("21-autograded")
    with instructor.step("21-hostile-submission"):
        view_hostile_submission(hub, instructor, formgrader)
    with instructor.step("22-feedback"):
        formgrader.open_assignments()
        row = formgrader.row(ASSIGNMENT)
        formgrader.click_and_confirm(row, "generate-feedback", "Successfully generated feedback")
        formgrader.close_dialog()
        formgrader.click_and_confirm(row, "release-feedback", "Successfully released feedback")
        instructor.shot("22-feedback-released")
        formgrader.close_dialog()


def inbound(hub: ClassHub) -> Path:
    return hub.scratch / "exchange" / COURSE_ID / "inbound"


def plant_in_exchange(hub: ClassHub, ada: str, bob: str) -> tuple[Path, str]:
    """As ada: links to the hidden checks.py and the gradebook in her inbound submission, a
    back-dated timestamp.txt, and a copy submitted under bob's name. Returns her folder and the
    time the system recorded for it, as nbgrader writes times."""
    (folder,) = inbound(hub).glob(f"{ada}+{ASSIGNMENT}+*")
    checks = hub.course / "solutions" / ASSIGNMENT / "checks.py"
    assert checks.is_file(), checks
    forged = inbound(hub) / f"{bob}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+forged"
    gradebook = Course.configured(hub.course).gradebook
    done = run_as(
        ada, "bash", "-c", PLANT, "plant", str(folder), str(checks), str(gradebook), str(forged)
    )
    assert done.returncode == 0, done.stderr
    return folder, f"{intake_exchange.changed_at(folder):{intake.TIME_FORMAT}}"


def check_collected(hub: ClassHub, ada: str, bob: str, ada_time: str) -> None:
    """Nothing the links point at arrived, bob's submission is his own, ada's time is real."""
    submitted = Course.configured(hub.course).submitted
    arrived = [path for path in submitted.rglob("*") if path.is_file()]
    secrets = {(hub.course / "solutions" / ASSIGNMENT / "checks.py").read_bytes()}
    assert not [p for p in arrived if p.name in ("checks.py", "gradebook.db")], arrived
    assert not [p for p in arrived if p.read_bytes() in secrets], "checks.py arrived"
    bobs = submitted / bob / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert answer_cell(bobs) == MISTAKE.cells["replace_sigmoid_with_tanh"], "bob's work replaced"
    recorded = (submitted / ada / ASSIGNMENT / "timestamp.txt").read_text().strip()
    assert recorded == ada_time, f"ada's time: {recorded}, the exchange's: {ada_time}"


def view_hostile_submission(hub: ClassHub, instructor: HubUser, formgrader: Formgrader) -> None:
    """The instructor opens ada's submission in the formgrader's frame: her cell is there and
    nothing of it ran. The proof that it would have: the same script, run in that frame after the
    page has loaded, writes its file (so a script of the page would have written first)."""
    api = instructor.server_url + f"formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}"
    submissions = instructor.page.request.get(api).json()
    (ada_submission,) = [s for s in submissions if s["student"] == hub.learners[0]]
    formgrader.page.goto(instructor.server_url + f"formgrader/submissions/{ada_submission['id']}/")
    hostile = formgrader.page.get_by_text(HOSTILE_MARKUP).first
    hostile.wait_for()
    hostile.scroll_into_view_if_needed()
    instructor.shot("21-hostile-submission")
    formgrader.page.evaluate(write_file_js("CONTROL.txt"))
    control = hub.home(hub.instructor) / "CONTROL.txt"
    deadline = time.monotonic() + 30
    while not control.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert control.exists(), "the control script could not write: the check proves nothing"
    ran = [name for name in PWNED if (hub.home(hub.instructor) / name).exists()]
    assert not ran, f"ada's HTML ran in the instructor's formgrader: {ran}"


def check_feedback_html(hub: ClassHub, ada: str) -> None:
    """The feedback file ada's browser shows: her markup is there, none of her scripts."""
    page = Course.configured(hub.course).feedback / ada / ASSIGNMENT / f"{ASSIGNMENT}.html"
    html = page.read_text()
    assert HOSTILE_MARKUP in html, "the hostile cell is not in the feedback"
    for name in PWNED:
        lines = [line for line in html.splitlines() if name in line]
        assert all("&lt;" in line or "<pre" in line for line in lines), lines
    assert "onerror" not in html and "<iframe" not in html
    assert not [n for n in PWNED if (hub.home(ada) / n).exists()], "ada's HTML ran in her feedback"


def oom_kills(pid: int) -> int:
    """How often the kernel's OOM killer struck in the memory cgroup of process `pid`."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            text = Path("/sys/fs/cgroup/memory", path.lstrip("/"), "memory.oom_control").read_text()
            return int(re.search(r"oom_kill (\d+)", text).group(1))
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            text = Path("/sys/fs/cgroup", path.lstrip("/"), "memory.events").read_text()
            return int(re.search(r"oom_kill (\d+)", text).group(1))
    raise AssertionError(f"process {pid} is in no memory cgroup")


def server_pid(hub: ClassHub, account: str) -> int:
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if entry.stat().st_uid == hub.uids[account]:
                if b"jupyterhub-singleuser" in (entry / "cmdline").read_bytes():
                    return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no server of {account} runs")


def check_memory_limit(hub: ClassHub, ada: HubUser, bob: HubUser) -> None:
    """ada's server is in a cgroup of her own; a kernel of hers that allocates past the limit is
    killed there; her server, bob's and the hub answer on."""
    with ada.step("40-memory-limit"):
        pid = server_pid(hub, ada.account)
        assert f"fx-hub-{ada.account}" in Path(f"/proc/{pid}/cgroup").read_text()
        before = oom_kills(pid)
        result = run_in_new_kernel(ada, "hog = b'x' * (3 << 30)")  # past the 2G of FXHUB_MEM_LIMIT
        assert result["end"] != "ok", f"3 GiB were allocated under a 2 GiB limit: {result}"
        assert oom_kills(pid) > before, f"the kernel ended without an OOM kill: {result}"
        assert server_pid(hub, ada.account) == pid, "ada's server was killed"
        for person in (ada, bob):
            status = person.page.request.get(person.server_url + "api/status")
            assert status.ok, f"{person.account}'s server: {status.status}"
        hub_api = ada.page.request.get(hub.url + "hub/api")
        assert hub_api.ok, hub_api.status


AUTOSAVE_S = 2  # JupyterLab's autosave stays on, only sooner than its default of 120 s
UPDATE_MARKER = "This line came with a course update."


def autosave_soon(hub: ClassHub, account: str) -> None:
    """As a learner may in Settings: autosave every AUTOSAVE_S seconds (the learner's own file)."""
    folder = hub.home(account) / ".jupyter/lab/user-settings/@jupyterlab/docmanager-extension"
    setting = json.dumps({"autosaveInterval": AUTOSAVE_S})
    write = 'mkdir -p "$1" && printf %s "$2" > "$1/plugin.jupyterlab-settings"'
    done = run_as(account, "sh", "-c", write, "sh", str(folder), setting)
    assert done.returncode == 0, done.stderr


def saved_language_info(path: Path) -> bool:
    try:
        return "version" in json.loads(path.read_text())["metadata"].get("language_info", {})
    except (OSError, ValueError, KeyError):  # not written yet, or being written
        return False


def check_course_update_reaches_an_opened_chapter(hub: ClassHub, ada: HubUser) -> None:
    """ada opens chapter 1 with autosave on and autosave writes the kernel's language_info into
    it: opened, never edited. A course update to chapter 1 reaches her at her next server start
    (the hub's Stop My Server, Start My Server), and the chapter shows it. (Autosave is made
    sooner only now: earlier steps write into her exercise from her shell, which an open tab's
    autosave would meet with a "File Changed" dialog.)"""
    mine = hub.home(ada.account) / "chapters" / START_PAGE
    autosave_soon(hub, ada.account)
    ada.page.goto(ada.server_url + f"lab/tree/chapters/{START_PAGE}")
    ada.wait_for_lab()
    deadline = time.monotonic() + 120
    while not saved_language_info(mine) and time.monotonic() < deadline:
        time.sleep(1)
    assert saved_language_info(mine), "autosave never wrote the chapter ada only opened"
    course_chapter = ROOT / "chapters" / START_PAGE
    original = course_chapter.read_bytes()
    try:
        updated = nbformat.reads(original.decode(), as_version=4)
        updated.cells[0].source += f"\n\n{UPDATE_MARKER}"
        nbformat.write(updated, course_chapter)
        with ada.step("45-course-update"):
            ada.page.goto(hub.url + "hub/home")
            ada.page.locator("#stop").click()
            ada.page.locator("#stop").wait_for(state="hidden", timeout=GRADING_TIMEOUT_MS)
            ada.page.locator("#start", has_text="Start My Server").click()
            ada.wait_for_lab()
            shown = ada.current_document(START_PAGE)
            assert shown == START_PAGE, shown
            ada.page.locator(".jp-Notebook").get_by_text(UPDATE_MARKER).wait_for()
            # she never sees the sync's output: the chapter itself says that it changed
            ada.page.locator(".jp-RenderedMarkdown").get_by_text("Course update (").first.wait_for()
            ada.shot("45-course-update")
    finally:
        course_chapter.write_bytes(original)
    assert UPDATE_MARKER in mine.read_text(), "the update did not reach ada's chapter"


def add_learner_while_running(hub: ClassHub, browser, artifacts: Path) -> None:
    """`make hub-accounts` with one more learner while the hub runs: they log in at once."""
    newcomer = f"{hub.instructor.split('-')[0]}-cy"
    environment = {**hub.environment, "FXHUB_LEARNERS": ",".join([*hub.learners, newcomer])}
    done = subprocess.run(
        ["make", "--no-print-directory", "hub-accounts"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    load_accounts(hub)
    person = HubUser(browser, hub.url, newcomer, hub.passwords[newcomer], artifacts)
    try:
        with person.step("50-new-learner"):
            person.start_login()
            person.wait_for_lab()
            shown = person.current_document(START_PAGE)
            assert shown == START_PAGE, shown
            person.shot("50-new-learner")
    finally:
        person.close()


def check_progress_page(hub: ClassHub, instructor: HubUser, ada: str, bob: str) -> None:
    """The instructors' progress page lists both learners' chapters; a link ada plants in her
    chapters to a file only root may read shows nothing of it (her files are read as her)."""
    planted = hub.home(ada) / "chapters" / "03_graph_transforms.ipynb"
    planted.unlink()
    planted.symlink_to("/etc/shadow")
    os.lchown(planted, hub.uids[ada], -1)
    with instructor.step("38-progress"):
        tab = instructor.open_progress()
        rows = {
            row.locator("td").first.inner_text(): row.locator("td").all_inner_texts()[1:]
            for row in tab.locator("tr").all()
            if row.locator("td").count()
        }
        tab.screenshot(path=instructor.artifacts / "38-progress.png", full_page=True)
        text = tab.locator("body").inner_text()
        tab.close()
    assert set(rows) == {ada, bob}, rows
    assert "root:" not in text, "the progress page showed a file only root may read"
    assert all(cell.startswith("0/") for cell in rows[bob][:9]), rows[bob]
    assert rows[ada][2] == "unreadable", rows[ada]  # her planted chapter 3, said to be no notebook


def check_report_page(instructor: HubUser, ada: str, bob: str) -> None:
    """Services -> report: the class at a glance, with both learners' rows, bob's failure
    message as he read it, and their try-it progress from the hub."""
    with instructor.step("39-report"):
        tab = instructor.open_report()
        learners = tab.locator(f"#h-{ASSIGNMENT} ~ table.sortable tbody th").all_inner_texts()
        text = tab.locator("body").inner_text()
        heads = tab.locator(f"#h-{ASSIGNMENT} ~ table.sortable thead th").all_inner_texts()
        tab.screenshot(path=instructor.artifacts / "39-report.png", full_page=True)
        tab.close()
    assert sorted(learners) == sorted([ada, bob]), learners
    assert MISTAKE_MESSAGE in text, "the report lacks bob's failure message"
    assert any("try-its passed" in head for head in heads), heads


def read_feedback(learner: HubUser, prefix: str, message: str | None = None) -> str:
    """Fetch the feedback from the Assignments tab and open it; returns the text shown. With
    `message`, also a screenshot of where the feedback shows it."""
    with learner.step(f"{prefix}-feedback"):
        learner.page.locator(".lm-TabBar-tab", has_text="Assignments").click()
        learner.refresh_assignments()
        submitted = learner.assignment_item("submitted", ASSIGNMENT)
        submitted.locator("button", has_text="Fetch Feedback").click()
        submitted = learner.assignment_item("submitted", ASSIGNMENT)
        submitted.locator("a", has_text="view feedback").click(timeout=GRADING_TIMEOUT_MS)
        learner.page.locator(".jp-DirListing-itemText", has_text=f"{ASSIGNMENT}.html").dblclick()
        shown = learner.page.frame_locator(".jp-HTMLViewer iframe").locator("body")
        shown.locator("text=Score").first.wait_for()
        learner.shot(f"{prefix}-feedback")
        if message:
            shown.get_by_text(message).first.scroll_into_view_if_needed()
            learner.shot(f"{prefix}-feedback-message")
        return shown.inner_text()


def check_feedback(text: str, expected_score: float, account: str) -> None:
    score = re.search(rf"{ASSIGNMENT} \(Score: ([0-9.]+) / 10\.0\)", text)
    assert score, f"{account}'s feedback shows no score:\n{text[:2000]}"
    assert float(score.group(1)) == expected_score, f"{account}: {score.group(0)}"
    assert not leaked(text), f"{account}'s feedback shows hidden tests: {leaked(text)}"


def check_boundaries(hub: ClassHub, learner: HubUser, other: str) -> None:
    """A learner's server has no grading tools and one kernel; files stay with their owners; the
    learner has their own copy of the chapters."""
    chapter = hub.home(learner.account) / "chapters" / "01_symbolic_tracing.ipynb"
    assert chapter.is_file(), f"{learner.account} has no chapters: {chapter}"
    assert chapter.stat().st_uid == hub.uids[learner.account], "the chapters are not the learner's"
    response = learner.page.request.get(learner.server_url + "formgrader/manage_assignments")
    assert response.status == 404, f"a learner's server answers the formgrader: {response.status}"
    kernels = learner.page.request.get(learner.server_url + "api/kernelspecs").json()
    assert set(kernels["kernelspecs"]) == {KERNEL}, kernels["kernelspecs"]
    others_work = hub.home(other) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert run_as(learner.account, "cat", str(others_work)).returncode != 0, "work is readable"
    course = run_as(learner.account, "ls", str(hub.course))
    assert course.returncode != 0, (
        f"a learner lists the instructor's course folder: {course.stdout}"
    )


def exported_scores(hub: ClassHub) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The course's CSV exports, run by the instructor in their course folder: each student's
    exercise 1 score, and each student's points per test cell."""
    export = run_as(
        hub.instructor, str(HUB_PYTHON), "grader/course_grader.py", "export", cwd=hub.course
    )
    assert export.returncode == 0, export.stdout + export.stderr
    exports = Course.configured(hub.course).exports
    with (exports / "grades.csv").open() as handle:
        scores = {row["student_id"]: row[ASSIGNMENT] for row in csv.DictReader(handle)}
    with (exports / "grades_by_test.csv").open() as handle:
        by_test = {row.pop("student_id"): row for row in csv.DictReader(handle)}
    return scores, by_test


AUTOGRADE_STEPS = """
from nbgrader.apps.baseapp import NbGrader
from nbgrader.converters import Autograde
app = NbGrader()
app.initialize([])
app.load_config_file()
steps = Autograde(config=app.config).autograde_preprocessors
unsandboxed = app.config.SandboxExecute.get("unsandboxed", False)
print(*[step.__name__ for step in steps], f"unsandboxed={unsandboxed}")
"""


def autograde_steps(hub: ClassHub) -> list[str]:
    """The steps of Autograde (the formgrader's button) in the instructor's course folder, with
    its configuration loaded as the instructor's server loads it."""
    done = run_as(hub.instructor, str(HUB_PYTHON), "-c", AUTOGRADE_STEPS, cwd=hub.course)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split()


# ----------------------------------------------------------------------------- the test


def test_a_class_cycle_on_the_hub(class_hub: ClassHub, browser, artifacts: Path):
    hub = class_hub
    ada_name, bob_name = hub.learners
    people = {
        name: HubUser(browser, hub.url, name, hub.passwords[name], artifacts)
        for name in (hub.instructor, ada_name, bob_name)
    }
    instructor, ada, bob = people[hub.instructor], people[ada_name], people[bob_name]
    reference = reference_solutions(nbformat.read(SOURCE, as_version=4))
    try:
        started = time.monotonic()
        for person in (instructor, ada, bob):  # three servers start at once, as in a class
            person.start_login()
        release_exercise(instructor)
        note(artifacts, f"instructor logged in and released: {time.monotonic() - started:.1f} s")
        answer = reference["replace_sigmoid_with_tanh"]
        fetch_answer_submit(hub, ada, answer, "10-ada", markdown=HOSTILE_CELL)
        fetch_answer_submit(hub, bob, MISTAKE.cells["replace_sigmoid_with_tanh"], "11-bob")
        _, ada_time = plant_in_exchange(hub, ada_name, bob_name)
        for name in (hub.instructor, ada_name, bob_name):
            note(artifacts, f"memory of {name}'s processes: {memory_mib(hub, name):.0f} MiB")
        check_boundaries(hub, ada, bob_name)
        check_boundaries(hub, bob, ada_name)

        grade_and_release_feedback(hub, instructor, artifacts, ada_time)

        check_feedback(read_feedback(ada, "30-ada"), 10.0, ada_name)
        check_feedback_html(hub, ada_name)
        bob_feedback = read_feedback(bob, "31-bob", MISTAKE_MESSAGE)
        check_feedback(bob_feedback, MISTAKE.expected, bob_name)
        assert MISTAKE_MESSAGE in bob_feedback, f"bob's feedback lacks {MISTAKE_MESSAGE!r}"

        scores, by_test = exported_scores(hub)
        assert scores == {ada_name: "10", bob_name: f"{MISTAKE.expected:g}"}, scores
        assert set(by_test) == {ada_name, bob_name}, by_test
        assert by_test[bob_name][f"{ASSIGNMENT}:test_method_and_module"] == "0", by_test
        note(artifacts, f"the whole cycle in the browser: {time.monotonic() - started:.1f} s")

        check_progress_page(hub, instructor, ada_name, bob_name)
        check_report_page(instructor, ada_name, bob_name)
        check_memory_limit(hub, ada, bob)
        check_course_update_reaches_an_opened_chapter(hub, ada)
        add_learner_while_running(hub, browser, artifacts)

        steps = autograde_steps(hub)
        assert "SandboxExecute" in steps and "Execute" not in steps, steps
        assert "unsandboxed=False" in steps, steps
    finally:
        for person in people.values():
            person.close()
