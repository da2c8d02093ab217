"""A memory cgroup per sandbox, where the machine lets this process make one."""

from __future__ import annotations

import secrets
import time
from contextlib import suppress
from pathlib import Path

from .limits import LIMITS


class Cgroup:
    """A memory cgroup for one sandbox: cgroup v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``, made under this process's own cgroup where that is writable."""

    def __init__(self, path: Path, limit_file: str, usage_file: str):
        self.path, self.limit_file, self.usage_file = path, limit_file, usage_file

    @classmethod
    def create(cls) -> Cgroup | None:
        """A new, empty cgroup, or None where the machine does not let this process make one."""
        for base, limit_file, usage_file in cgroup_bases():
            path = base / f"safegrade-{secrets.token_hex(6)}"
            try:
                path.mkdir()
            except OSError:
                continue
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


def cgroup_bases() -> list[tuple[Path, str, str]]:
    """Where this process's cgroups are: (folder, limit file, usage file), v1 memory first."""
    bases = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            folder = Path("/sys/fs/cgroup/memory", path.lstrip("/"))
            bases.insert(0, (folder, "memory.limit_in_bytes", "memory.usage_in_bytes"))
        elif controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            bases.append((Path("/sys/fs/cgroup", path.lstrip("/")), "memory.max", "memory.current"))
    return bases


def memory_limit_in_force(limits) -> str:
    """Which memory limit sandboxes get on this machine, in words (logged by the grader);
    limits: a sandbox.Limits."""
    cgroup = Cgroup.create()
    if cgroup is None:
        return (
            f"memory: RLIMIT_AS of {limits.memory_mb} MiB per process beyond the template's, "
            f"/tmp {limits.tmp_mb} MiB, /dev/shm {LIMITS.shm_mb} MiB "
            "(no writable memory cgroup here)"
        )
    cgroup.remove()
    kind = "v1 memory.limit_in_bytes" if "memory/" in str(cgroup.path) else "v2 memory.max"
    return (
        f"memory: a cgroup ({kind}) per sandbox: the template's own memory + "
        f"{limits.memory_mb} MiB + /tmp {limits.tmp_mb} MiB + /dev/shm {LIMITS.shm_mb} MiB, shared "
        "memory and page cache included"
    )
