"""JupyterHub for a class taking the course: the file `make hub` starts, and a real deployment too.

Deployment values (accounts, ports, folders) come from environment variables: see settings.py.
What this file decides:

* Accounts are the machine's own users, logged in with their system password (PAM), each server
  running as its user in its home: a learner's work stays theirs, and nobody else's files
  (the instructor's solutions and gradebook, other learners' work) can be read.
* Every server runs the course environment, whose only kernel is "Python 3 (fx-course)".
* Roles come from hub groups: members of "instructors" get the formgrader and the assignment
  editor over the course folder in their home; "learners" get the Assignments tab only.
* nbgrader's exchange is one folder shared by all, outside any checkout and any home.
* Before a learner's server starts, the course's chapters are brought into ~/chapters, as
  `make lab` does for its workspace: new chapters copied, course updates merged into the
  learner's copies (fxcourse/workspace.py).
* Each learner's server, with its kernels, has a memory and a CPU limit (learner_cgroups.py:
  cgroups); servers idle for FXHUB_CULL_IDLE_S are stopped (jupyterhub-idle-culler, a hub service).
"""

import asyncio
import pwd
import shutil
import sys
from pathlib import Path

from fxcourse.workspace import START_PAGE
from grader.hub.learner_cgroups import LearnerGroups, LimitedSpawner
from grader.hub.settings import (
    INSTRUCTORS_GROUP,
    LEARNERS_GROUP,
    PROXY_PID_FILE,
    Settings,
)

deployment = Settings.from_environ()
SPAWN_TIMEOUT_S = 180  # importing torch on a busy machine takes a while
PROXY_TIMEOUT_S = SPAWN_TIMEOUT_S + 60
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# --- where the hub listens and keeps its state (never in the current folder)
c.JupyterHub.ip = deployment.ip
c.JupyterHub.port = deployment.port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = deployment.hub_port
c.JupyterHub.db_url = f"sqlite:///{deployment.state_dir / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(deployment.state_dir / "jupyterhub_cookie_secret")
# The Python port of configurable-http-proxy, from the course environment: no Node.js needed.
# It answers a request only once the server has finished it, so a long one (the spawn progress
# page's event stream) must not be cut off at its default 20 s.
c.ConfigurableHTTPProxy.command = [
    str(deployment.venv / "bin" / "configurable-http-proxy"),
    f"--proxy-timeout={PROXY_TIMEOUT_S * 1000}",
]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{deployment.proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = str(deployment.state_dir / PROXY_PID_FILE)

# --- who may log in: system accounts with their passwords. A larger class would use its
# institution's single sign-on instead (OAuthenticator, or LTIAuthenticator from the LMS).
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set(deployment.accounts)
# Members of this system group log in too, as learners: a learner added while the hub runs
# (`make hub-accounts FXHUB_LEARNERS=...`) needs no restart; PAM checks the group at each log-in.
c.LocalAuthenticator.allowed_groups = {deployment.learners_unix_group}
c.JupyterHub.load_groups = {
    INSTRUCTORS_GROUP: {"users": list(deployment.instructors)},
    LEARNERS_GROUP: {"users": list(deployment.learners)},
}
# Instructors may look after learners' servers (open, start, stop them), and no one else's.
c.JupyterHub.load_roles = [
    {
        "name": "instructor",
        "description": "look after the learners' servers",
        "groups": [INSTRUCTORS_GROUP],
        "scopes": [
            "admin-ui",
            f"list:users!group={LEARNERS_GROUP}",
            f"read:users!group={LEARNERS_GROUP}",
            f"admin:servers!group={LEARNERS_GROUP}",
            f"access:servers!group={LEARNERS_GROUP}",
            "access:services!service=progress",
            "access:services!service=report",
        ],
    }
]

# --- every user's server: the course environment, as that user, in that user's home
c.JupyterHub.spawner_class = LimitedSpawner
LimitedSpawner.cgroups = LearnerGroups.detect()
LimitedSpawner.unlimited_groups = frozenset({INSTRUCTORS_GROUP})
c.Spawner.mem_limit = deployment.mem_limit
c.Spawner.cpu_limit = deployment.cpu_limit
print(
    f"fx-hub: each learner's server: memory {deployment.mem_limit}, {deployment.cpu_limit:g} CPU: "
    f"{LimitedSpawner.cgroups.describe()}",
    file=sys.stderr,
)
c.Spawner.cmd = [str(deployment.venv / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = SPAWN_TIMEOUT_S
c.Spawner.http_timeout = SPAWN_TIMEOUT_S
c.Spawner.environment = {
    "PATH": f"{deployment.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    "FXHUB_EXCHANGE_ROOT": str(deployment.exchange_root),
}


LEARNERS_CHAPTERS = "chapters"  # in a learner's home
# By its path: the servers' PATH (Spawner.environment) has no sbin folder.
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


def configure_role(spawner):
    """Put the role's Jupyter configuration (grader/hub/jupyter/) on the server's config path.
    For a learner, returns the step that brings the chapters into their home (JupyterHub awaits
    it before the server starts)."""
    groups = {group.name for group in spawner.user.groups}
    role = INSTRUCTORS_GROUP if INSTRUCTORS_GROUP in groups else LEARNERS_GROUP
    environment = {
        "JUPYTER_CONFIG_PATH": ":".join(str(path) for path in deployment.role_config[role])
    }
    home = Path(pwd.getpwnam(spawner.user.name).pw_dir)
    if role == INSTRUCTORS_GROUP:
        environment["FXHUB_COURSE_DIR"] = str(home / deployment.course_folder)
    else:  # a learner's lab opens on the course's first chapter, as `make lab` does
        spawner.default_url = f"/lab/tree/{LEARNERS_CHAPTERS}/{START_PAGE}"
    spawner.environment = {**spawner.environment, **environment}
    return None if role == INSTRUCTORS_GROUP else sync_chapters(spawner, home)


async def sync_chapters(spawner, home: Path) -> None:
    """`make lab`'s workspace sync, run as the learner (the files are theirs), into ~/chapters."""
    command = [RUNUSER, "-u", spawner.user.name, "--", str(deployment.venv / "bin" / "python")]
    command += ["-m", "fxcourse.workspace", "sync", "--workspace", str(home / LEARNERS_CHAPTERS)]
    environment = {**spawner.environment, "HOME": str(home)}
    environment["FXCOURSE_EXCHANGE"] = str(deployment.exchange_root)
    try:
        done = await asyncio.create_subprocess_exec(
            *command,
            cwd=home,
            env=environment,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await done.communicate()
        failed = output.decode(errors="replace") if done.returncode != 0 else ""
    except OSError as error:
        failed = str(error)
    if failed:  # the server still starts: exercises come through the exchange
        spawner.log.warning("chapters for %s not synced: %s", spawner.user.name, failed)


c.Spawner.pre_spawn_hook = configure_role

# --- the instructors' progress page (progress_service.py) and class report (report_service.py),
# in the hub's Services menu
c.JupyterHub.services = [
    {
        "name": "progress",
        "display": True,
        "oauth_no_confirm": True,
        "url": f"http://127.0.0.1:{deployment.progress_port}",
        "command": [str(deployment.venv / "bin" / "python"), "-m", "grader.hub.progress_service"],
        "environment": {"FXHUB_LEARNERS_UNIX_GROUP": deployment.learners_unix_group},
    },
    # the class at a glance (report_service.py: `make report` of the instructor who opens it)
    {
        "name": "report",
        "display": True,
        "oauth_no_confirm": True,
        "url": f"http://127.0.0.1:{deployment.report_port}",
        "command": [str(deployment.venv / "bin" / "python"), "-m", "grader.hub.report_service"],
        "environment": {
            "FXHUB_LEARNERS_UNIX_GROUP": deployment.learners_unix_group,
            "FXHUB_COURSE_FOLDER": deployment.course_folder,
            "FXHUB_INSTRUCTORS": ",".join(deployment.instructors),
        },
    },
]

# --- idle servers give their memory back: jupyterhub-idle-culler as a hub service
if deployment.cull_idle_s:
    c.JupyterHub.services.append(
        {
            "name": "idle-culler",
            "command": [
                str(deployment.venv / "bin" / "python"),
                "-m",
                "jupyterhub_idle_culler",
                f"--timeout={deployment.cull_idle_s}",
            ],
        }
    )
    c.JupyterHub.load_roles.append(
        {
            "name": "idle-culler",
            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
            "services": ["idle-culler"],
        }
    )
