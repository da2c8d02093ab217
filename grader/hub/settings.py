"""The class hub's deployment values, from environment variables (defaults for one server).

Read by jupyterhub_config.py (the hub) and classroom.py (accounts, exchange, the instructor's
course folder), so both agree on every name and path. Every value can be set in the environment
of `make hub`. <course id> is course.json's (fx-course):

    FXHUB_LEARNERS        comma-separated learner accounts   fx-learner1,fx-learner2,fx-learner3
    FXHUB_INSTRUCTORS     comma-separated instructor accounts  fx-instructor
    FXHUB_IP / FXHUB_PORT where the hub listens              127.0.0.1 / 8000
    FXHUB_HUB_PORT        the hub's internal API              8081
    FXHUB_PROXY_API_PORT  the proxy's REST API                8001
    FXHUB_PROGRESS_PORT   the instructors' progress page      8002
    FXHUB_REPORT_PORT     the instructors' class report       8003
    FXHUB_STATE_DIR       hub database, cookie secret, demo passwords   /srv/<course id>/hub
    FXHUB_EXCHANGE_ROOT   nbgrader's shared exchange          /srv/nbgrader/exchange
    FXHUB_HOME_ROOT       where new accounts get their homes  /home
    FXHUB_COURSE_FOLDER   the course folder in an instructor's home  <course id>
    FXHUB_VENV            the environment every server runs   the one running the hub
    FXHUB_LEARNERS_UNIX_GROUP  the system group whose members may log in as learners  fx-learners
    FXHUB_MEM_LIMIT, FXHUB_CPU_LIMIT, FXHUB_CULL_IDLE_S   each learner server's limits: HubLimits
                          below declares them, with their defaults (2G, 1 CPU, 3600 s)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Float, Integer, Unicode
from traitlets.config import Configurable

from grader.course import Course

HUB_DIR = Path(__file__).resolve().parent
LEARNERS_GROUP, INSTRUCTORS_GROUP = "learners", "instructors"
PROXY_PID_FILE = "jupyterhub-proxy.pid"  # in the state folder
LEARNERS_UNIX_GROUP = "fx-learners"  # FXHUB_LEARNERS_UNIX_GROUP's default


class HubLimits(Configurable):
    """The limits of each learner's server on the hub, declared once with their defaults; the
    deployment's environment sets them (the variable each names), Settings carries them."""

    mem_limit = Unicode("2G", help="Memory of a learner's server and its kernels (cgroups)")
    mem_limit.tag(config=True, variable="FXHUB_MEM_LIMIT")
    cpu_limit = Float(1.0, help="CPUs of a learner's server and its kernels (cgroups)")
    cpu_limit.tag(config=True, variable="FXHUB_CPU_LIMIT")
    cull_idle_s = Integer(3600, help="Stop a server idle this many seconds (0: never)")
    cull_idle_s.tag(config=True, variable="FXHUB_CULL_IDLE_S")

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> HubLimits:
        """The limits the environment sets, the others at their defaults."""
        traits = cls.class_traits(variable=lambda name: name is not None)
        return cls(**{
            name: type(trait.default_value)(env[trait.metadata["variable"]])
            for name, trait in traits.items()
            if trait.metadata["variable"] in env
        })  # fmt: skip


def _names(value: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in value.split(",") if name.strip())


@dataclass(frozen=True)
class Settings:
    learners: tuple[str, ...]
    instructors: tuple[str, ...]
    ip: str
    port: int
    hub_port: int
    proxy_api_port: int
    progress_port: int
    report_port: int
    state_dir: Path
    exchange_root: Path
    home_root: Path
    course_folder: str
    venv: Path
    learners_unix_group: str
    mem_limit: str
    cpu_limit: float
    cull_idle_s: int
    course: Course = field(default_factory=Course.configured)  # the checkout the hub runs

    @classmethod
    def from_environ(
        cls, environ: os._Environ | dict | None = None, course: Course | None = None
    ) -> Settings:
        env = os.environ if environ is None else environ
        course = course or Course.configured(environ=env)
        limits = HubLimits.from_environ(env)
        settings = cls(
            learners=_names(env.get("FXHUB_LEARNERS", "fx-learner1,fx-learner2,fx-learner3")),
            instructors=_names(env.get("FXHUB_INSTRUCTORS", "fx-instructor")),
            ip=env.get("FXHUB_IP", "127.0.0.1"),
            port=int(env.get("FXHUB_PORT", "8000")),
            hub_port=int(env.get("FXHUB_HUB_PORT", "8081")),
            proxy_api_port=int(env.get("FXHUB_PROXY_API_PORT", "8001")),
            progress_port=int(env.get("FXHUB_PROGRESS_PORT", "8002")),
            report_port=int(env.get("FXHUB_REPORT_PORT", "8003")),
            state_dir=Path(env.get("FXHUB_STATE_DIR", f"/srv/{course.course_id}/hub")),
            exchange_root=Path(env.get("FXHUB_EXCHANGE_ROOT", "/srv/nbgrader/exchange")),
            home_root=Path(env.get("FXHUB_HOME_ROOT", "/home")),
            course_folder=env.get("FXHUB_COURSE_FOLDER", course.course_id),
            venv=Path(env.get("FXHUB_VENV", sys.prefix)).absolute(),
            learners_unix_group=env.get("FXHUB_LEARNERS_UNIX_GROUP", LEARNERS_UNIX_GROUP),
            mem_limit=limits.mem_limit,
            cpu_limit=limits.cpu_limit,
            cull_idle_s=limits.cull_idle_s,
            course=course,
        )
        settings.check()
        return settings

    def check(self) -> None:
        """Refuse values that would make a confusing hub rather than a clear error."""
        if not self.learners or not self.instructors:
            raise ValueError("FXHUB_LEARNERS and FXHUB_INSTRUCTORS need one account name each")
        both = set(self.learners) & set(self.instructors)
        if both:
            raise ValueError(f"accounts both learner and instructor: {', '.join(sorted(both))}")
        for path in (self.state_dir, self.exchange_root, self.home_root):
            if not path.is_absolute():
                raise ValueError(f"{path}: the hub's folders must be absolute paths")
            if path.resolve().is_relative_to(self.course.root):
                raise ValueError(
                    f"{path} is inside the checkout {self.course.root}: put it outside"
                )

    @property
    def accounts(self) -> tuple[str, ...]:
        return self.instructors + self.learners

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{self.port}/"

    @property
    def role_config(self) -> dict[str, list[Path]]:
        """Per-role Jupyter configuration: the folders the hub puts on each server's
        JUPYTER_CONFIG_PATH, first the one that wins. Learners get `make lab`'s learner
        configuration too (the course's env/)."""
        common = HUB_DIR / "jupyter" / "common"
        learner = self.course.root / "env" / "jupyter-learner"
        return {
            LEARNERS_GROUP: [HUB_DIR / "jupyter" / "learner", learner, common],
            INSTRUCTORS_GROUP: [HUB_DIR / "jupyter" / "instructor", common],
        }
