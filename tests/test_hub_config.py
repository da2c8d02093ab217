"""The class hub's configuration, read the way JupyterHub, Jupyter and nbgrader read it (fast; the
hub itself runs in tests/test_hub.py under `make test-hub`).

Checks that the deployment values come from the environment, that roles get the right Jupyter
configuration, that what the learners' configuration turns off exists in the installed nbgrader
(so a rename cannot silently turn it back on), and that an instructor's course folder is a
self-consistent nbgrader course pointed at the shared exchange.
"""

from __future__ import annotations

import inspect
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from nbgrader.api import Gradebook
from traitlets.config.loader import PyFileConfigLoader

from fxcourse import workspace
from fxcourse.workspace import START_PAGE
from grader.course import Course
from grader.hub import classroom, progress_service
from grader.hub.settings import INSTRUCTORS_GROUP, LEARNERS_GROUP, Settings
from grader.safegrade.grading_limits import LIMITS

ROLE_CONFIG = Settings.from_environ({}).role_config

ASSIGNMENTS = Course.configured().exercises  # this repository's

ROOT = Path(__file__).resolve().parents[1]
HUB = ROOT / "grader" / "hub"

NBGRADER_EXTENSIONS = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter"
LAB_SCHEMAS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"


def load(path: Path, environ: dict[str, str], monkeypatch) -> dict:
    """A Jupyter/JupyterHub Python config file's settings, with `environ` as the environment."""
    for name in [n for n in os.environ if n.startswith("FXHUB_")]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def test_defaults_are_for_one_server_on_loopback():
    deployment = Settings.from_environ({})
    assert deployment.url == "http://127.0.0.1:8000/"
    assert deployment.instructors == ("fx-instructor",)
    assert len(deployment.learners) == 3
    assert deployment.exchange_root == Path("/srv/nbgrader/exchange")
    assert deployment.venv == Path(sys.prefix)


def test_each_learner_servers_limit_is_declared_once_and_the_environment_sets_it():
    from grader.hub.settings import HubLimits

    defaults = Settings.from_environ({})
    declared = HubLimits()
    assert (defaults.mem_limit, defaults.cpu_limit, defaults.cull_idle_s) == (
        declared.mem_limit, declared.cpu_limit, declared.cull_idle_s,
    )  # fmt: skip
    given = {"FXHUB_MEM_LIMIT": "3G", "FXHUB_CPU_LIMIT": "0.5", "FXHUB_CULL_IDLE_S": "0"}
    moved = Settings.from_environ(given)
    assert (moved.mem_limit, moved.cpu_limit, moved.cull_idle_s) == ("3G", 0.5, 0)
    with pytest.raises(ValueError):
        Settings.from_environ({"FXHUB_CPU_LIMIT": "one"})


def test_environment_sets_every_deployment_value():
    deployment = Settings.from_environ(
        {"FXHUB_LEARNERS": " ann, ben ,", "FXHUB_IP": "0.0.0.0", "FXHUB_PORT": "443"}
    )
    assert deployment.learners == ("ann", "ben")
    assert deployment.url == "http://0.0.0.0:443/"


@pytest.mark.parametrize(
    ("environ", "complaint"),
    [
        ({"FXHUB_LEARNERS": "ann", "FXHUB_INSTRUCTORS": "ann"}, "both learner and instructor"),
        ({"FXHUB_LEARNERS": ""}, "need one account name"),
        ({"FXHUB_EXCHANGE_ROOT": "exchange"}, "absolute"),
        ({"FXHUB_STATE_DIR": str(ROOT / "hub-state")}, "inside the checkout"),
    ],
)
def test_confusing_values_are_refused(environ, complaint):
    with pytest.raises(ValueError, match=complaint):
        Settings.from_environ(environ)


def test_hub_config_reads_the_deployment(monkeypatch, tmp_path):
    environ = {
        "FXHUB_INSTRUCTORS": "ivy",
        "FXHUB_LEARNERS": "ann,ben",
        "FXHUB_PORT": "8123",
        "FXHUB_STATE_DIR": str(tmp_path / "state"),
        "FXHUB_EXCHANGE_ROOT": str(tmp_path / "exchange"),
    }
    config = load(HUB / "jupyterhub_config.py", environ, monkeypatch)
    assert config.JupyterHub.port == 8123 and config.JupyterHub.ip == "127.0.0.1"
    assert config.JupyterHub.authenticator_class == "pam"
    assert config.Authenticator.allowed_users == {"ivy", "ann", "ben"}
    assert config.JupyterHub.load_groups[INSTRUCTORS_GROUP]["users"] == ["ivy"]
    assert config.JupyterHub.load_groups[LEARNERS_GROUP]["users"] == ["ann", "ben"]
    assert config.JupyterHub.db_url == f"sqlite:///{tmp_path / 'state' / 'jupyterhub.sqlite'}"
    assert Path(config.Spawner.cmd[0]).parent == Path(sys.prefix) / "bin"
    assert Path(config.ConfigurableHTTPProxy.command[0]).exists(), "the Python proxy is missing"
    assert config.Spawner.environment["FXHUB_EXCHANGE_ROOT"] == str(tmp_path / "exchange")


@pytest.mark.parametrize("group", [INSTRUCTORS_GROUP, LEARNERS_GROUP])
def test_each_role_gets_its_own_jupyter_configuration(monkeypatch, tmp_path, group):
    account = pwd.getpwuid(os.getuid())  # an account that exists, for the instructor's home
    config = load(HUB / "jupyterhub_config.py", {"FXHUB_STATE_DIR": str(tmp_path)}, monkeypatch)
    spawner = SimpleNamespace(
        user=SimpleNamespace(name=account.pw_name, groups=[SimpleNamespace(name=group)]),
        environment=dict(config.Spawner.environment),
    )
    then = config.Spawner.pre_spawn_hook(spawner)
    if group == LEARNERS_GROUP:  # the chapters' sync (run as the learner): not run here
        assert inspect.iscoroutine(then), then
        then.close()
    else:
        assert then is None
    config_path = spawner.environment["JUPYTER_CONFIG_PATH"].split(":")
    assert config_path == [str(folder) for folder in ROLE_CONFIG[group]]
    assert all(Path(folder).is_dir() for folder in config_path), config_path
    course = spawner.environment.get("FXHUB_COURSE_DIR")
    if group == INSTRUCTORS_GROUP:
        assert course == str(Path(account.pw_dir) / Course.configured().course_id)
    else:
        assert course is None, "a learner's server must not know the course folder"


def installed_nbgrader_plugins() -> set[str]:
    text = "".join(p.read_text() for p in (NBGRADER_EXTENSIONS / "nbgrader").rglob("*.js"))
    return set(re.findall(r'"(@jupyter/nbgrader:[a-z-]+)"', text))


def test_learners_have_no_grading_tools_in_the_installed_nbgrader():
    first = ROLE_CONFIG[LEARNERS_GROUP][0]  # its jpserver_extensions replace those of the others
    server = load_plain(first / "jupyter_server_config.py")
    turned_off = {name for name, on in server.ServerApp.jpserver_extensions.items() if not on}
    assert turned_off == {
        "nbgrader.server_extensions.formgrader",
        "nbgrader.server_extensions.course_list",
    }
    installed = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    enabled = json.loads(installed.read_text())["ServerApp"]["jpserver_extensions"]
    assert turned_off <= set(enabled), "nbgrader names its server extensions differently now"
    disabled = set()  # JupyterLab merges the page configs of every folder on the path
    for folder in ROLE_CONFIG[LEARNERS_GROUP]:
        page_config = folder / "labconfig" / "page_config.json"
        if page_config.exists():
            disabled |= set(json.loads(page_config.read_text())["disabledExtensions"])
    # JupyterLab's news announcements are off for learners too (env/jupyter-learner).
    nbgrader_plugins = disabled - {"@jupyterlab/apputils-extension:announcements"}
    assert nbgrader_plugins == {
        "@jupyter/nbgrader:formgrader",
        "@jupyter/nbgrader:create-assignment",
        "@jupyter/nbgrader:course-list",
    }
    assert nbgrader_plugins <= installed_nbgrader_plugins(), "nbgrader renamed its lab plugins"


def load_plain(path: Path):
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def test_every_server_offers_the_course_kernel_only():
    from jupyter_client.kernelspec import KernelSpecManager

    common = load_plain(HUB / "jupyter" / "common" / "jupyter_server_config.py")
    kernel = workspace.course_kernel()
    assert common.KernelSpecManager.allowed_kernelspecs == {kernel["name"]}
    spec = KernelSpecManager().get_kernel_spec(kernel["name"])
    assert spec.display_name == kernel["display_name"]
    overrides = Path(common.LabApp.app_settings_dir) / "overrides.json"
    for plugin in json.loads(overrides.read_text()):
        package, _, name = plugin.partition(":")
        assert (LAB_SCHEMAS / package / f"{name}.json").exists(), f"no JupyterLab setting {plugin}"


def test_the_instructors_course_folder_is_a_course_on_the_shared_exchange(tmp_path, monkeypatch):
    course, exchange = tmp_path / "home" / "fx-course", tmp_path / "exchange"
    classroom.write_course_folder(course, exchange)
    monkeypatch.setenv("FXHUB_COURSE_DIR", str(course))
    monkeypatch.setenv("PATH", os.environ["PATH"])  # the course's config prepends its venv
    config = load_plain(ROLE_CONFIG[INSTRUCTORS_GROUP][0] / "nbgrader_config.py")
    assert config.Exchange.root == str(exchange)
    assert Course.configured(course, environ={}).exchange == exchange  # from the Course alone
    assert "Exchange" not in (course / "nbgrader_config.py").read_text()
    assert config.CourseDirectory.root == str(course)
    assert config.CourseDirectory.course_id == Course.configured().course_id
    assert config.CourseDirectory.db_url == f"sqlite:///{course / 'classdata' / 'gradebook.db'}"
    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gradebook:
        assert gradebook.assignments == []  # the formgrader's first read opens it
    sources = sorted(p.parent.name for p in (course / "solutions").glob("*/*.ipynb"))
    assert sources == list(ASSIGNMENTS)
    classroom.write_course_folder(course, exchange)  # again, as every `make hub` does
    assert sorted(p.parent.name for p in (course / "solutions").glob("*/*.ipynb")) == sources


def test_classroom_refuses_to_run_without_root(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert classroom.main(["setup"]) == 2
    assert "needs root" in capsys.readouterr().err


# ----------------------------------------------------------------------------- limits, service


def fake_v1(root: Path, writable: bool = True) -> Path:
    for controller in ("memory", "cpu"):
        (root / controller / "hubs").mkdir(parents=True)
    (root / "memory" / "memory.limit_in_bytes").write_text("max")
    if not writable:
        (root / "cpu" / "hubs").chmod(0o555)
    proc = root / "self-cgroup"
    proc.write_text("4:memory:/hubs\n1:cpu,cpuacct:/hubs\n0::/\n")
    return proc


def test_cgroups_v1_are_detected_and_limits_written(tmp_path):
    from grader.hub.learner_cgroups import LearnerGroups

    cgroups = LearnerGroups.detect(tmp_path, fake_v1(tmp_path))
    assert cgroups.version == "v1", cgroups.problem
    assert "cgroup v1" in cgroups.describe()
    groups = cgroups.create("ann", 2 * 2**30, 1.5)
    assert groups == sorted([tmp_path / c / "hubs" / "fx-hub-ann" for c in ("cpu", "memory")])
    for group in groups:  # a real cgroup folder has every file; the fake one gets them written
        assert not list(group.iterdir()), "only files the controller provides are written"
    memory, cpu = (
        tmp_path / "memory" / "hubs" / "fx-hub-ann",
        tmp_path / "cpu" / "hubs" / "fx-hub-ann",
    )
    (memory / "memory.limit_in_bytes").write_text("")
    (cpu / "cpu.cfs_quota_us").write_text("")
    cgroups.create("ann", 2 * 2**30, 1.5)
    assert (memory / "memory.limit_in_bytes").read_text() == str(2 * 2**30)
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"
    for path in (memory / "memory.limit_in_bytes", cpu / "cpu.cfs_quota_us"):
        path.unlink()
    assert cgroups.remove("ann") == [] and not memory.exists()


def test_cgroups_v2_and_none_are_told_apart(tmp_path):
    from grader.hub.learner_cgroups import LearnerGroups

    (tmp_path / "hub.service").mkdir()
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids")
    (tmp_path / "hub.service" / "cgroup.controllers").write_text("pids")
    proc = tmp_path / "self-cgroup"
    proc.write_text("0::/hub.service\n")
    none = LearnerGroups.detect(tmp_path, proc)
    assert none.version == "none" and "Delegate=yes" in none.describe()
    (tmp_path / "hub.service" / "cgroup.controllers").write_text("cpu memory pids")
    assert LearnerGroups.detect(tmp_path, proc).parents["memory"] == tmp_path / "hub.service"
    assert LearnerGroups.detect(tmp_path / "absent", proc).version == "none"


def test_the_hub_enforces_limits_culls_idle_servers_and_admits_new_learners(monkeypatch, tmp_path):
    config = load(HUB / "jupyterhub_config.py", {"FXHUB_STATE_DIR": str(tmp_path)}, monkeypatch)
    from grader.hub.learner_cgroups import LimitedSpawner

    assert config.JupyterHub.spawner_class is LimitedSpawner
    assert config.Spawner.mem_limit == "2G" and config.Spawner.cpu_limit == 1.0
    assert LimitedSpawner.unlimited_groups == {INSTRUCTORS_GROUP}
    services = {service["name"]: service for service in config.JupyterHub.services}
    culler = services["idle-culler"]
    assert culler["command"][1:] == ["-m", "jupyterhub_idle_culler", "--timeout=3600"]
    assert any("idle-culler" in role.get("services", []) for role in config.JupyterHub.load_roles)
    assert config.LocalAuthenticator.allowed_groups == {"fx-learners"}
    assert services["progress"]["command"][1:] == ["-m", "grader.hub.progress_service"]
    instructor = next(role for role in config.JupyterHub.load_roles if role["name"] == "instructor")
    assert "access:services!service=progress" in instructor["scopes"]


def test_the_progress_page_shows_what_learners_claim_only_as_checked_escaped_data():
    chapters = [name for name in workspace.course_notebooks() if "/" not in name]
    claim = {
        "tryits": {name: {} for name in chapters},
        "exercises": {"ex1_sigmoid_to_tanh": ["passed", "x"], "<b>ex9</b>": ["<i>", "y"]},
    }
    claim["tryits"][chapters[0]] = {"1.1": True, "1.2": False, "1.3": "yes"}
    claim["tryits"][chapters[1]] = None  # a file the learner put there that is not a notebook
    claim["as_of"] = {
        "ex1_sigmoid_to_tanh": ["checks ran", "2026-01-31T12:05:00Z"],
        chapters[0]: ["notebook saved", "<script>x</script>"],  # not a time: dropped
        chapters[1]: ["<b>made up</b>", "2026-01-31T12:05:00Z"],  # not a kind: dropped
    }
    row = progress_service.checked(json.dumps(claim).encode())
    assert row["tryits"][chapters[0]] == {"1.1": True, "1.2": False}  # "yes" is not a verdict
    assert row["exercises"] == {"ex1_sigmoid_to_tanh": "passed"}  # the course's, in known states
    assert row["as_of"] == {"ex1_sigmoid_to_tanh": ("checks ran", "2026-01-31T12:05:00Z")}
    del claim["tryits"][chapters[-1]]
    for bad in (b"not json", json.dumps(claim).encode(), b" " * (LIMITS.progress_output_bytes + 1)):
        assert progress_service.checked(bad).startswith("could not be read")
    shown = progress_service.page({"<script>ann": row, "ben": "no chapters yet"})
    per_chapter = (
        progress_service.course_shape().per_chapter
    )  # out of the chapter's try-its, not the claim's
    first, third = (per_chapter[chapters[i].removesuffix(".ipynb")] for i in (0, 2))
    assert "<script>" not in shown and "&lt;script&gt;ann" in shown and f">1/{first}" in shown
    assert third and f">0/{third}" in shown  # a chapter claiming none
    assert "no chapters yet" in shown and "ex1_sigmoid_to_tanh" in shown
    assert "<td>unreadable</td>" in shown
    assert "passed<br><small>checks ran 2026-01-31 12:05 UTC</small>" in shown
    assert "made up" not in shown and "<script>x" not in shown


def test_the_progress_reader_is_stopped_at_the_output_cap_not_after_it_ends(monkeypatch):
    """A reader that prints past the cap and then never ends is stopped at the cap: the service
    holds no more than the cap, and does not wait out the time limit."""
    monkeypatch.setattr(LIMITS, "progress_time", 60)
    endless = "import sys, time; sys.stdout.buffer.write(b'x' * (1 << 20)); sys.stdout.flush(); "
    endless += "time.sleep(3600)"
    env = {"PATH": os.environ["PATH"]}
    assert progress_service.run_capped([sys.executable, "-c", endless], env) == (
        "could not be read (too large)"
    )
    small = [sys.executable, "-c", "print('{}'); raise SystemExit(2)"]
    assert progress_service.run_capped(small, env) == (2, b"{}\n")
    monkeypatch.setattr(LIMITS, "progress_time", 0.5)
    silent = [sys.executable, "-c", "import time; time.sleep(3600)"]
    assert progress_service.run_capped(silent, env) == "not read within 0.5 s"


def test_a_learners_lab_opens_on_the_first_chapter_an_instructors_on_the_launcher(
    monkeypatch, tmp_path
):
    config = load(HUB / "jupyterhub_config.py", {"FXHUB_STATE_DIR": str(tmp_path)}, monkeypatch)
    configure_role = config.Spawner.pre_spawn_hook
    opened = {}
    for role in (LEARNERS_GROUP, INSTRUCTORS_GROUP):
        user = SimpleNamespace(name="root", groups=[SimpleNamespace(name=role)])
        spawner = SimpleNamespace(user=user, environment={}, default_url=config.Spawner.default_url)
        sync = configure_role(spawner)
        if sync is not None:
            sync.close()  # the chapters' sync, not run here
        opened[role] = spawner.default_url
    assert opened[LEARNERS_GROUP] == "/lab/tree/chapters/01_symbolic_tracing.ipynb"
    assert opened[INSTRUCTORS_GROUP] == "/lab"
    assert f"START_PAGE := {START_PAGE}" in (ROOT / "env" / "learner.mk").read_text()


def test_the_instructors_server_may_show_the_formgrader_in_its_own_lab(monkeypatch):
    config = load(HUB / "jupyter" / "instructor" / "jupyter_server_config.py", {}, monkeypatch)
    headers = config.ServerApp.tornado_settings["headers"]
    assert headers["Content-Security-Policy"] == "frame-ancestors 'self'"


def test_the_service_unit_runs_make_hub_with_the_deployment(tmp_path):
    unit = classroom.service_unit(
        {"FXHUB_LEARNERS": "ann,ben", "FXHUB_IP": "0.0.0.0", "HOME": "/root"},
        "/usr/bin/make",
        ".venv-hub",
    )
    assert f"WorkingDirectory={ROOT}\n" in unit
    assert "ExecStart=/usr/bin/make --no-print-directory hub HUB_VENV=.venv-hub\n" in unit
    assert 'Environment="FXHUB_IP=0.0.0.0"\nEnvironment="FXHUB_LEARNERS=ann,ben"\n' in unit
    assert "HOME" not in unit and "Delegate=yes" in unit and "WantedBy=multi-user.target" in unit
    with pytest.raises(classroom.SetupError, match="Environment="):
        classroom.service_unit({"FXHUB_LEARNERS": 'a"b'}, "/usr/bin/make", ".venv-hub")
    verify = shutil.which("systemd-analyze")
    if verify:  # the unit as systemd reads it (no systemd needs to run)
        (tmp_path / "fx-hub.service").write_text(unit)
        done = subprocess.run(
            [verify, "verify", str(tmp_path / "fx-hub.service")], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
