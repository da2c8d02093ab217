"""Memory and CPU limits for each learner's server on the class hub, enforced by Linux cgroups.

JupyterHub's Spawner.mem_limit and cpu_limit are only promises for the local spawner; here
LimitedSpawner makes them true without systemd (which jupyterhub-systemdspawner needs): before a
learner's server starts, the hub (root) makes a cgroup for that learner with the limits, and the
server's process enters it between fork and exec, so the server, its kernels and its terminals
share the limit. Past the memory limit the kernel's OOM killer picks the largest process inside
that cgroup (a kernel that allocated too much), never the hub, a classmate's server or the
instructor's. Past the CPU limit, the learner's processes are slowed, no one else's.

Which cgroups are in force is detected when the hub starts, as the grader's sandboxes detect
theirs (grader/safegrade/cgroup.py), and written to its log the same way:
* v1 (this development machine): the memory and cpu hierarchies, below the hub's own groups;
* v2 (systemd machines): below the hub's own group, which needs `Delegate=yes` in the hub's
  systemd unit (`make hub-service` writes it); at the first learner's start the hub moves itself
  into a leaf group "hub" so that the controllers can be enabled for its children;
* none writable: the hub says so and runs without limits.
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

from grader.safegrade.cgroup import Cgroups

PERIOD_US = 100_000  # the CPU quota's period


class LearnerGroups(Cgroups):
    """The cgroups of the learners' servers: memory and cpu, detected as the grader's sandboxes'
    are (grader/safegrade/cgroup.py), one group per learner in each controller's folder."""

    CONTROLLERS = ("memory", "cpu")
    WITHOUT = "no limits are enforced"

    def _delegate(self) -> None:
        """v2 lets only a group without processes of its own hand controllers to its children:
        the hub's processes move into a leaf "hub" first."""
        base = self.parents["memory"]
        if (base / "cgroup.procs").read_text().strip():
            (base / "hub").mkdir(exist_ok=True)
            for pid in (base / "cgroup.procs").read_text().split():
                (base / "hub" / "cgroup.procs").write_text(pid)
        (base / "cgroup.subtree_control").write_text("+memory +cpu")

    def groups(self, name: str) -> list[Path]:
        return sorted({parent / f"fx-hub-{name}" for parent in self.parents.values()})

    def create(self, name: str, memory_bytes: int, cpus: float) -> list[Path]:
        """The learner's groups with the limits (made again if they exist)."""
        if self.version == "v2":
            self._delegate()
        settings = {"v1": self._v1_limits, "v2": self._v2_limits}[self.version](memory_bytes, cpus)
        groups = self.groups(name)
        for group in groups:
            group.mkdir(exist_ok=True)
            for file_name, value in settings.items():
                if (group / file_name).exists():
                    (group / file_name).write_text(value)
        return groups

    @staticmethod
    def _v1_limits(memory_bytes: int, cpus: float) -> dict[str, str]:
        limits = {"memory.limit_in_bytes": str(memory_bytes)}
        limits["memory.memsw.limit_in_bytes"] = str(memory_bytes)  # no escape into swap
        limits["cpu.cfs_period_us"] = str(PERIOD_US)
        limits["cpu.cfs_quota_us"] = str(int(cpus * PERIOD_US)) if cpus else "-1"
        return limits

    @staticmethod
    def _v2_limits(memory_bytes: int, cpus: float) -> dict[str, str]:
        quota = str(int(cpus * PERIOD_US)) if cpus else "max"
        limits = {"memory.max": str(memory_bytes), "memory.swap.max": "0"}
        return {**limits, "cpu.max": f"{quota} {PERIOD_US}"}

    def remove(self, name: str) -> list[str]:
        """Delete the learner's groups; returns those that could not be (processes left)."""
        left = []
        for group in self.groups(name):
            try:
                group.rmdir()
            except FileNotFoundError:
                continue
            except OSError as error:
                left.append(f"{group}: {error.strerror}")
        return left


def enter(groups: list[Path]) -> None:
    """Move the calling process into the groups (called between fork and exec, as root)."""
    for group in groups:
        (group / "cgroup.procs").write_text(str(os.getpid()))


class LimitedSpawner(LocalProcessSpawner):
    """The local spawner with mem_limit and cpu_limit enforced for every user outside the groups
    in `unlimited_groups` (set by jupyterhub_config.py: the instructors, who grade)."""

    cgroups: LearnerGroups | None = None  # detected once, by jupyterhub_config.py
    unlimited_groups: frozenset[str] = frozenset()
    _groups: list[Path] = []

    def limited(self) -> bool:
        names = {group.name for group in self.user.groups}
        in_force = self.cgroups and self.cgroups.version != "none"
        return bool(in_force and not names & self.unlimited_groups)

    async def start(self):
        self._groups = []
        if self.limited() and (self.mem_limit or self.cpu_limit):
            memory = self.mem_limit or 2**62
            self._groups = self.cgroups.create(self.user.name, memory, self.cpu_limit or 0)
            self.log.info(
                "%s's server limited: %s", self.user.name, ", ".join(map(str, self._groups))
            )
        return await super().start()

    def make_preexec_fn(self, name):
        drop_privileges, groups = super().make_preexec_fn(name), list(self._groups)

        def preexec():
            enter(groups)
            drop_privileges()

        return preexec

    async def stop(self, now=False):
        await super().stop(now=now)
        if self._groups:
            for problem in self.cgroups.remove(self.user.name):
                self.log.warning("cgroup not removed: %s", problem)
