"""Linux cgroups, the one place that reads them: which hierarchy this process may make groups
in (`Cgroups.detect`: v1's per-controller hierarchies, v2's unified one, or none, with why), said
the same way by every part that reports what is in force (`Cgroups.describe`); and the memory
cgroup of one sandbox (`Cgroup`). The class hub's learner groups (grader/hub/learner_cgroups.py) are
`Cgroups` with the cpu controller too; a test points `detect` at a fake tree in a folder.
"""

from __future__ import annotations

import os
import secrets
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from .grading_limits import LIMITS

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")  # this process's groups, one line per hierarchy
# A memory group's files: (limit, usage) by cgroup version.
MEMORY_FILES = {
    "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes"),
    "v2": ("memory.max", "memory.current"),
}


def own_group(controller: str, proc_cgroup: str) -> str:
    """This process's group path for a v1 controller ("" for v2's unified line) from
    /proc/self/cgroup."""
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") or (controller == "" and controllers == ""):
            return path
    raise LookupError(controller)


@dataclass
class Cgroups:
    """Where this process can make groups with CONTROLLERS: the folder for each controller's
    new groups, below this process's own group, or the reason there is none."""

    CONTROLLERS = ("memory",)
    WITHOUT = "no writable memory cgroup here"  # how describe() begins when there is none

    version: str  # "v1", "v2" or "none"
    parents: dict[str, Path] = field(default_factory=dict)  # controller -> folder for groups
    problem: str = ""  # why there are none

    @classmethod
    def detect(cls, root: Path = CGROUP_ROOT, proc: Path = PROC_CGROUP) -> Cgroups:
        text = proc.read_text() if proc.exists() else ""
        try:
            if (root / "cgroup.controllers").exists():
                return cls._v2(root / own_group("", text).lstrip("/"))
            if (root / "memory" / "memory.limit_in_bytes").exists():
                groups = {c: own_group(c, text).lstrip("/") for c in cls.CONTROLLERS}
                return cls._v1({c: root / c / group for c, group in groups.items()})
        except (LookupError, OSError) as error:
            return cls("none", problem=f"cgroups could not be read ({error})")
        return cls("none", problem=f"no cgroup memory controller under {root}")

    @classmethod
    def _v1(cls, parents: dict[str, Path]) -> Cgroups:
        for parent in parents.values():
            if not os.access(parent, os.W_OK):
                return cls("none", problem=f"{parent} is not writable (run as root)")
        return cls("v1", parents)

    @classmethod
    def _v2(cls, base: Path) -> Cgroups:
        if not set(cls.CONTROLLERS) <= set((base / "cgroup.controllers").read_text().split()):
            names = " and ".join(cls.CONTROLLERS)
            return cls("none", problem=f"{base} has no {names} controllers (Delegate=yes)")
        return cls("v2", dict.fromkeys(cls.CONTROLLERS, base))

    def describe(self) -> str:
        """What is in force, in words (the grader's and the hub's logs)."""
        if self.version == "none":
            return f"{self.WITHOUT}: {self.problem}"
        where = ", ".join(sorted({str(parent) for parent in self.parents.values()}))
        return f"cgroup {self.version} under {where}"


class Cgroup:
    """A memory cgroup for one sandbox: cgroup v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``, made under this process's own cgroup where that is writable."""

    def __init__(self, path: Path, limit_file: str, usage_file: str):
        self.path, self.limit_file, self.usage_file = path, limit_file, usage_file

    @classmethod
    def create(cls, cgroups: Cgroups | None = None) -> Cgroup | None:
        """A new, empty cgroup, or None where the machine does not let this process make one."""
        cgroups = cgroups or Cgroups.detect()
        if cgroups.version == "none":
            return None
        limit_file, usage_file = MEMORY_FILES[cgroups.version]
        path = cgroups.parents["memory"] / f"safegrade-{secrets.token_hex(6)}"
        try:
            path.mkdir()
        except OSError:
            return None
        if (path / limit_file).exists():
            return cls(path, limit_file, usage_file)
        path.rmdir()
        return None

    def wrap(self, argv: list[str]) -> list[str]:
        """argv started inside the cgroup (before it can fork anything)."""
        procs = str(self.path / "cgroup.procs")
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs, *argv]

    def usage(self) -> int:
        return int((self.path / self.usage_file).read_text().split()[0])

    def limit(self, size: int) -> None:
        (self.path / self.limit_file).write_text(str(size))
        swap = self.path / "memory.memsw.limit_in_bytes"  # v1: no escape into swap
        with suppress(OSError):
            swap.write_text(str(size))

    def remove(self) -> None:
        for _ in range(500):  # the cgroup empties as the killed processes are reaped
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


def memory_limit_in_force(limits, cgroups: Cgroups | None = None) -> str:
    """Which memory limit sandboxes get on this machine, in words (logged by the grader);
    limits: a sandbox.Limits; cgroups: what detect() finds here, unless given."""
    cgroups = cgroups or Cgroups.detect()
    cgroup = Cgroup.create(cgroups)
    if cgroup is None:
        if cgroups.version != "none":  # detected, yet no group could be made in it
            refused = f"{cgroups.parents['memory']} refused a new memory group"
            cgroups = Cgroups("none", problem=refused)
        return (
            f"memory: RLIMIT_AS of {limits.memory_mb} MiB per process beyond the template's, "
            f"/tmp {limits.tmp_mb} MiB, /dev/shm {LIMITS.shm_mb} MiB ({cgroups.describe()})"
        )
    cgroup.remove()
    return (
        f"memory: a cgroup ({cgroups.version} {cgroup.limit_file}) per sandbox, "
        f"{cgroups.describe()}: the template's own memory + {limits.memory_mb} MiB + "
        f"/tmp {limits.tmp_mb} MiB + /dev/shm {LIMITS.shm_mb} MiB, shared memory and page cache "
        "included"
    )
