"""Prepare this machine for the class hub (run as root by `make hub`), or take it away again.

    python grader/hub/classroom.py setup       accounts, shared exchange, course folders
    python grader/hub/classroom.py remove      delete what `setup` created (accounts, homes, ...)
    python grader/hub/classroom.py stop-proxy  stop the proxy a hub that failed left running
    python grader/hub/classroom.py service     install `make hub` as a systemd service

`setup` is safe to repeat. It creates the learner and instructor accounts that do not exist yet
(system users with a private home and a random password, kept in the hub's state folder, readable
by root only), leaves existing accounts and their passwords alone, creates nbgrader's exchange
(world-writable with the sticky bit, as nbgrader requires) and refreshes each instructor's course
folder as that instructor (`course-folder`): a copy of the course's nbgrader sources and
configuration, with the instructor's working folders and gradebook kept. Names and folders come
from settings.py (environment variables).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from grader.course import SETTINGS, Course, settings
from grader.hub.settings import PROXY_PID_FILE, Settings
from grader.instructor import copy_course

RECORD = "classroom.json"  # in the state folder: what setup created, and the demo passwords


class SetupError(RuntimeError):
    pass


def run(*command: str, stdin: str | None = None) -> None:
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SetupError(f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip()}")


def account_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def check_usable_by_all(venv: Path) -> None:
    """Every account's server runs this environment: try it as an account without privileges."""
    python = venv / "bin" / "python"
    command = ["runuser", "-u", "nobody", "--", str(python), "-c", "import jupyterhub, nbgrader"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SetupError(
            f"other accounts cannot run {python} ({python.resolve()}): "
            f"{done.stderr.strip()[-300:]}. The environment and the Python it was made from must "
            "be readable by every account (e.g. clone the course to /opt/fx-course, and build the "
            "hub's environment with a system Python: make hub HUB_PYTHON=/usr/bin/python3.11)."
        )


def read_record(deployment: Settings) -> dict:
    path = deployment.state_dir / RECORD
    return json.loads(path.read_text()) if path.exists() else {"accounts": {}, "created": []}


def write_record(deployment: Settings, record: dict) -> None:
    path = deployment.state_dir / RECORD
    path.write_text(json.dumps(record, indent=2) + "\n")
    path.chmod(0o600)


def make_folder(path: Path, mode: int, record: dict, enforce: bool = False) -> None:
    """Create `path` (and parents) if missing, remembering the topmost folder created. Its mode
    is set when it is new, or always with `enforce`."""
    missing = [p for p in [*reversed(path.parents), path] if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for parent in missing[:-1]:
        parent.chmod(0o755)
    if missing or enforce:
        path.chmod(mode)  # mkdir's mode is filtered by the umask; chmod is not
    if missing and str(missing[0]) not in record["created"]:
        record["created"].append(str(missing[0]))


def ensure_learners_group(deployment: Settings, record: dict) -> None:
    """The system group whose members may log in as learners (jupyterhub_config.py), with every
    learner in it; created here if missing, and then removed by `remove`."""
    group = deployment.learners_unix_group
    if subprocess.run(["getent", "group", group], capture_output=True).returncode != 0:
        run("groupadd", "--system", group)
        record.setdefault("groups", []).append(group)
    for name in deployment.learners:
        run("usermod", "--append", "--groups", group, name)


def create_account(deployment: Settings, name: str, record: dict) -> None:
    home = deployment.home_root / name
    run(
        "useradd",
        "--create-home",
        "--home-dir",
        str(home),
        "--user-group",
        "--shell",
        "/bin/bash",
        name,
    )
    home.chmod(0o700)  # a learner's work is theirs alone
    password = secrets.token_urlsafe(12)
    run("chpasswd", stdin=f"{name}:{password}\n")
    record["accounts"][name] = {"password": password}


def write_course_folder(course: Path, exchange_root: Path) -> None:
    """Copy the course's nbgrader sources and grader configuration into `course`, its course.json
    naming the shared exchange: the copy's Course (Course.configured) is then on that exchange,
    and its nbgrader configuration follows the Course. Runs as the instructor: root never writes
    into an account's home."""
    copy_course(course)
    named = settings(course) | {"exchange": str(exchange_root)}
    (course / SETTINGS).write_text(json.dumps(named, indent=2) + "\n")
    # The gradebook's folder: sqlite creates the file, not its folder, and the shared exchange
    # no longer lies in the class data (whose creation used to make it).
    Course.configured(course).data.mkdir(parents=True, exist_ok=True)


def refresh_course_folder(deployment: Settings, instructor: str) -> Path:
    course = Path(pwd.getpwnam(instructor).pw_dir) / deployment.course_folder
    this_script = str(Path(__file__).resolve())
    command = [sys.executable, this_script, "course-folder", str(course)]
    run("runuser", "-u", instructor, "--", *command, str(deployment.exchange_root))
    return course


def setup(deployment: Settings) -> dict:
    check_usable_by_all(deployment.venv)
    record = read_record(deployment)
    make_folder(deployment.state_dir, 0o700, record)
    make_folder(deployment.home_root, 0o755, record)
    for name in deployment.accounts:
        if not account_exists(name):
            create_account(deployment, name, record)
            write_record(deployment, record)  # a later failure must not lose the password
    ensure_learners_group(deployment, record)
    make_folder(deployment.exchange_root, 0o1777, record, enforce=True)
    write_record(deployment, record)
    for instructor in deployment.instructors:
        refresh_course_folder(deployment, instructor)
    return record


def remove(deployment: Settings) -> list[str]:
    """Delete the accounts (with their homes) and folders that `setup` created; returns problems."""
    record = read_record(deployment)
    problems = []
    for name in record["accounts"]:
        if account_exists(name):
            try:
                run("userdel", "--remove", name)
            except SetupError as error:
                problems.append(str(error))
    for group in record.get("groups", []):
        try:
            run("groupdel", group)
        except SetupError as error:
            problems.append(str(error))
    for folder in [*record["created"], str(deployment.state_dir)]:
        shutil.rmtree(folder, ignore_errors=True)
    return problems


def stop_proxy(deployment: Settings, grace_s: float = 10) -> str | None:
    """Stop the hub's proxy if a hub that failed to start left it running (JupyterHub stops it on
    a normal shutdown). Returns what was stopped."""
    pid_file = deployment.state_dir / PROXY_PID_FILE
    try:
        pid = int(pid_file.read_text())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, ValueError):
        return None
    pid_file.unlink()
    if "configurable-http-proxy" not in command:
        return None  # the pid is another process's by now
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)
    return f"{pid}: {command}"


SERVICE_NAME = "fx-hub"
UNIT = """\
# Written by `make hub-service` (grader/hub/classroom.py); write it again after changing a value.
[Unit]
Description={course_id} class hub (JupyterHub, grader/hub/README.md)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
WorkingDirectory={repo}
ExecStart={make} --no-print-directory hub HUB_VENV={hub_venv}
{environment}Restart=on-failure
RestartSec=10
# The hub puts each learner's server into a cgroup of its own, below the service's
# (grader/hub/learner_cgroups.py).
Delegate=yes
# Stopping the service stops the hub, every server and kernel, and the proxy.
KillMode=control-group
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
"""


def service_unit(environ: dict[str, str], make: str, hub_venv: str) -> str:
    """The systemd unit that runs `make hub` in this checkout with the FXHUB_* values of
    `environ` (the deployment's), started at boot and restarted when it fails."""
    values = {name: value for name, value in sorted(environ.items()) if name.startswith("FXHUB_")}
    for name, value in values.items():
        if any(char in value for char in '"\\\n%$'):
            raise SetupError(f"{name}={value!r}: a systemd Environment= line cannot hold it")
    lines = "".join(f'Environment="{name}={value}"\n' for name, value in values.items())
    course = Course.configured(environ=environ)  # the checkout the unit runs `make hub` in
    return UNIT.format(
        course_id=course.course_id,
        repo=course.root,
        make=make,
        hub_venv=hub_venv,
        environment=lines,
    )


def install_service(unit_dir: Path, hub_venv: str) -> str:
    """Write the unit, and enable and start it where systemd runs. Returns what was done."""
    make = shutil.which("make") or "/usr/bin/make"
    unit = unit_dir / f"{SERVICE_NAME}.service"
    unit.write_text(service_unit(dict(os.environ), make, hub_venv))
    unit.chmod(0o644)
    if not Path("/run/systemd/system").is_dir():  # systemd's own test for "booted with systemd"
        return (
            f"wrote {unit}; systemd does not run on this machine, so nothing was enabled. "
            f"On a machine with systemd: systemctl daemon-reload && systemctl enable --now "
            f"{SERVICE_NAME}"
        )
    run("systemctl", "daemon-reload")
    run("systemctl", "enable", "--now", SERVICE_NAME)
    return f"wrote {unit}, enabled and started {SERVICE_NAME} (journalctl -u {SERVICE_NAME})"


def describe(deployment: Settings, record: dict) -> str:
    lines = [f"The class hub: {deployment.url}", "accounts (password):"]
    for name in deployment.accounts:
        password = record["accounts"].get(name, {}).get("password", "its own system password")
        role = "instructor" if name in deployment.instructors else "learner"
        lines.append(f"  {role:10} {name:20} {password}")
    lines.append(f"nbgrader exchange: {deployment.exchange_root}")
    for instructor in deployment.instructors:
        home = Path(pwd.getpwnam(instructor).pw_dir)
        lines.append(f"course folder of {instructor}: {home / deployment.course_folder}")
    lines.append(f"passwords of the accounts created here: {deployment.state_dir / RECORD}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup", help="accounts, exchange, instructors' course folders")
    commands.add_parser("remove", help="delete what setup created")
    commands.add_parser("stop-proxy", help="stop a proxy a failed hub left running")
    service = commands.add_parser("service", help="install `make hub` as a systemd service")
    service.add_argument("--unit-dir", type=Path, default=Path("/etc/systemd/system"))
    service.add_argument("--hub-venv", default=".venv-hub")
    course_folder = commands.add_parser("course-folder", help="(run as the instructor by setup)")
    course_folder.add_argument("course", type=Path)
    course_folder.add_argument("exchange_root", type=Path)
    args = parser.parse_args(argv)
    if args.command == "course-folder":
        write_course_folder(args.course, args.exchange_root)
        return 0
    if os.geteuid() != 0:
        print(
            "classroom: the class hub runs every account's server as that account, so it needs "
            "root: run `sudo make hub` (or as root).",
            file=sys.stderr,
        )
        return 2
    try:
        deployment = Settings.from_environ()
        if args.command == "setup":
            print(describe(deployment, setup(deployment)))
            return 0
        if args.command == "service":
            print(install_service(args.unit_dir, args.hub_venv))
            return 0
        if args.command == "stop-proxy":
            stopped = stop_proxy(deployment)
            if stopped:
                print(f"classroom: stopped the proxy a failed hub left running: {stopped}")
            return 0
        problems = remove(deployment)
    except (SetupError, ValueError) as error:
        print(f"classroom: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"classroom: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
