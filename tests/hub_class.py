"""Run the class hub (`make hub`) for a test, and take it away again without a trace.

Used by tests/test_hub.py. The hub runs with its own throwaway accounts (random names), ports,
homes, exchange and state, all under one scratch folder; `running_class_hub` stops it, deletes the
accounts with `make hub-remove`, and then checks, whatever happened before, that no process of
the hub or of the accounts is left, that the accounts and their files are gone everywhere, and
that the checkout gained no file.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from browser_lab import describe, free_loopback_port, process_tree, start_make, still_running

from grader.course import Course

HUB_START_TIMEOUT_S = 180
SHARED_TEMP_FOLDERS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


@dataclass
class ClassHub:
    url: str  # ends in "/"
    instructor: str
    learners: tuple[str, ...]
    passwords: dict[str, str]
    environment: dict[str, str]  # what `make hub` and `make hub-remove` ran with
    scratch: Path
    process: subprocess.Popen
    log_path: Path
    uids: dict[str, int] = field(default_factory=dict)

    def home(self, account: str) -> Path:
        return self.scratch / "home" / account

    @property
    def course(self) -> Path:
        return (
            self.home(self.instructor) / Course.configured().course_id
        )  # the hub's default course folder

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def hub_environment(scratch: Path, tag: str) -> dict[str, str]:
    """`make hub`'s environment: accounts, ports and folders of this test run only."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(
        FXHUB_INSTRUCTORS=f"{tag}-instructor",
        FXHUB_LEARNERS=f"{tag}-ada,{tag}-bob",
        FXHUB_LEARNERS_UNIX_GROUP=f"{tag}-learners",
        FXHUB_PORT=str(free_loopback_port()),
        FXHUB_HUB_PORT=str(free_loopback_port()),
        FXHUB_PROXY_API_PORT=str(free_loopback_port()),
        FXHUB_PROGRESS_PORT=str(free_loopback_port()),
        FXHUB_REPORT_PORT=str(free_loopback_port()),
        FXHUB_STATE_DIR=str(scratch / "state"),
        FXHUB_EXCHANGE_ROOT=str(scratch / "exchange"),
        FXHUB_HOME_ROOT=str(scratch / "home"),
    )
    return env


def run_as(account: str, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a command as `account`, the way that account's own shell would."""
    return subprocess.run(
        ["runuser", "-u", account, "--", *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def start_hub(root: Path, scratch: Path, log_path: Path) -> ClassHub:
    """Start `make hub` (it returns before the hub answers: see wait_until_up)."""
    tag = "t" + secrets.token_hex(3)  # account names of this run: e.g. t3fa9c1-ada
    env = hub_environment(scratch, tag)
    process = start_make(["make", "--no-print-directory", "hub"], root, env, log_path)
    return ClassHub(
        url=f"http://127.0.0.1:{env['FXHUB_PORT']}/",
        instructor=env["FXHUB_INSTRUCTORS"],
        learners=tuple(env["FXHUB_LEARNERS"].split(",")),
        passwords={},
        environment=env,
        scratch=scratch,
        process=process,
        log_path=log_path,
    )


def load_accounts(hub: ClassHub) -> None:
    """The accounts `make hub` created (their passwords and uids), as far as it got."""
    record_path = hub.scratch / "state" / "classroom.json"
    if not record_path.exists():
        return
    record = json.loads(record_path.read_text())
    hub.passwords = {name: entry["password"] for name, entry in record["accounts"].items()}
    for name in hub.passwords:
        try:
            hub.uids[name] = pwd.getpwnam(name).pw_uid
        except KeyError:
            continue


def wait_until_up(hub: ClassHub) -> None:
    deadline = time.monotonic() + HUB_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            raise RuntimeError(f"`make hub` exited early:\n{hub.log_tail()}")
        try:
            with urllib.request.urlopen(hub.url + "hub/api", timeout=2) as response:
                if response.status == 200:
                    load_accounts(hub)
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"the hub did not answer in {HUB_START_TIMEOUT_S} s:\n{hub.log_tail()}")


def _processes_of(hub: ClassHub) -> set[int]:
    """Processes of the hub's accounts, and any process started with this hub's environment
    (the hub, its proxy: also one a failed hub left behind, outside its process tree)."""
    uids, marker = set(hub.uids.values()), f"FXHUB_STATE_DIR={hub.scratch / 'state'}\0".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            if entry.stat().st_uid in uids or marker in (entry / "environ").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def stop_hub(hub: ClassHub, grace_s: float = 60) -> list[str]:
    """SIGTERM to the hub (it stops every server, their kernels and the proxy), then wait for all
    of it to end. Returns what had to be killed by force (ideally nothing)."""
    tree = process_tree(hub.process.pid)
    for pid in tree:
        try:
            if b"/jupyterhub\0-f\0" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGTERM)  # the hub itself, not the recipe's shell
        except (OSError, ProcessLookupError):
            continue
    try:
        hub.process.wait(grace_s)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 20  # servers and kernels end after the hub has said goodbye
    while (still_running(tree) or _processes_of(hub)) and time.monotonic() < deadline:
        time.sleep(0.3)
    left = sorted(set(still_running(tree)) | _processes_of(hub))
    forced = describe(left)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if hub.process.poll() is None:
        hub.process.wait(10)
    return forced


def remove_accounts(root: Path, hub: ClassHub) -> list[str]:
    """`make hub-remove`, then check that the accounts, their groups and their files are gone."""
    done = subprocess.run(
        ["make", "--no-print-directory", "hub-remove"],
        cwd=root,
        env=hub.environment,
        capture_output=True,
        text=True,
        check=False,
    )
    problems = []
    if done.returncode != 0:
        problems.append(f"make hub-remove failed:\n{done.stdout}{done.stderr}")
    learners_group = hub.environment["FXHUB_LEARNERS_UNIX_GROUP"]
    if subprocess.run(["getent", "group", learners_group], capture_output=True).returncode == 0:
        problems.append(f"the system group {learners_group} is still there")
    for name in hub.uids:
        for database in ("passwd", "group", "shadow"):
            if subprocess.run(["getent", database, name], capture_output=True).returncode == 0:
                problems.append(f"{name} is still in {database}")
    left = [str(p) for p in hub.scratch.iterdir()] if hub.scratch.exists() else []
    problems += [f"left behind: {path}" for path in left]
    problems += [f"left behind: {path}" for path in files_owned_by(set(hub.uids.values()))]
    return problems


def files_owned_by(uids: set[int]) -> list[Path]:
    """Files and folders of these users in the machine's shared temporary folders."""
    found = []
    for top in SHARED_TEMP_FOLDERS:
        for folder, subfolders, files in os.walk(top):
            for name in subfolders + files:
                path = Path(folder, name)
                try:
                    if path.lstat().st_uid in uids:
                        found.append(path)
                except OSError:
                    continue
    return found


def repository_files(root: Path) -> set[str]:
    """Every file git sees in the checkout, ignored ones included (but not the test artifacts)."""
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    paths = {line[3:] for line in listed.splitlines()}
    # Python's bytecode caches (the hub imports the course's modules) are not the hub's files.
    return {p for p in paths if not p.startswith("test-artifacts/") and "__pycache__" not in p}


@contextmanager
def reachable_by_every_account(path: Path) -> Iterator[None]:
    """What a class hub needs of its checkout (grader/hub/README.md: clone it where every account
    can read it): the folders above `path` may be entered by others (o+x), for as long as the
    hub runs. A checkout in a private folder (a CI runner's, `mktemp -d`) gets that permission
    and has its folders' modes put back afterwards."""
    changed = {}
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode & 0o7777
        if not mode & 0o001:
            changed[folder] = mode
            folder.chmod(mode | 0o001)
    try:
        yield
    finally:
        for folder, mode in changed.items():
            folder.chmod(mode)


@contextmanager
def running_class_hub(root: Path, scratch: Path, log_path: Path) -> Iterator[ClassHub]:
    """The hub for one test; afterwards nothing of it may be left, also when the test failed."""
    files_before = repository_files(root)
    hub = start_hub(root, scratch, log_path)
    try:
        wait_until_up(hub)
        yield hub
    finally:
        load_accounts(hub)  # also those of a hub that never came up
        problems = [f"killed after the hub stopped: {p}" for p in stop_hub(hub)]
        problems += remove_accounts(root, hub)
        added = sorted(repository_files(root) - files_before)
        problems += [f"the hub wrote into the checkout: {path}" for path in added]
        if problems:  # raised also when the test failed: both are reported
            raise AssertionError("the class hub left things behind:\n" + "\n".join(problems))
