"""Start and talk to sandboxed workers (grader side).

Each worker is ``bwrap`` running ``zygote.main`` as PID 1 of fresh PID, network, IPC and UTS
namespaces. The sandbox sees read-only system folders, the Python installation and the course's
helper package, and nothing of the course's instructor files: no sources, no gradebook, no other
submission. Its only writable places are two small tmpfs mounts (/tmp and /dev/shm) that vanish
with it. A seccomp filter refuses namespace, mount, ptrace and kernel-module system calls. When
the grader runs as root, the worker drops to an unprivileged uid of its own (so that the process
limit applies and workers cannot signal one another); otherwise bwrap adds a user namespace.
"""

from __future__ import annotations

import json
import os
import platform
import queue
import secrets
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SANDBOX_PACKAGE_ROOT = "/opt/safegrade"
ROOT_MODE_BASE_UID = 2_000_000
READY_TIMEOUT = 180
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "fonts",
    "alternatives",
    "mime.types",
)


class SandboxUnavailable(RuntimeError):
    pass


class WorkerDied(RuntimeError):
    pass


@dataclass
class Limits:
    timeout: float = 60.0  # wall-clock seconds per test process
    memory_mb: int = 3072  # RLIMIT_DATA of a test process (torch alone needs ~800 MB)
    nproc: int = 64  # processes and threads of the sandbox's uid
    fsize_mb: int = 64  # largest file a test process may write
    nofile: int = 256
    tmp_mb: int = 256  # size of the sandbox's /tmp (the work folder lives there)
    shm_mb: int = 64

    def for_worker(self) -> dict:
        return {
            "timeout": self.timeout,
            "memory_mb": self.memory_mb,
            "nproc": self.nproc,
            "fsize_mb": self.fsize_mb,
            "nofile": self.nofile,
        }


# ----------------------------------------------------------------------------- seccomp

# x86_64 system call numbers (asm/unistd_64.h); refused with EPERM.
_DENIED_X86_64 = (
    101,  # ptrace
    103,  # syslog
    155,  # pivot_root
    161,  # chroot
    163,  # acct
    165,  # mount
    166,  # umount2
    167,  # swapon
    168,  # swapoff
    169,  # reboot
    172,  # iopl
    173,  # ioperm
    175,  # init_module
    176,  # delete_module
    179,  # quotactl
    246,  # kexec_load
    248,  # add_key
    249,  # request_key
    250,  # keyctl
    272,  # unshare
    298,  # perf_event_open
    303,  # name_to_handle_at
    304,  # open_by_handle_at
    308,  # setns
    310,  # process_vm_readv
    311,  # process_vm_writev
    313,  # finit_module
    320,  # kexec_file_load
    321,  # bpf
    323,  # userfaultfd
    425,  # io_uring_setup
    426,  # io_uring_enter
    427,  # io_uring_register
    428,  # open_tree
    429,  # move_mount
    430,  # fsopen
    431,  # fsconfig
    432,  # fsmount
    433,  # fspick
    442,  # mount_setattr
)
_CLONE_X86_64, _CLONE3_X86_64 = 56, 435
_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
_NAMESPACE_FLAGS |= 0x20000000 | 0x40000000 | 0x00000080  # NEWNS CGROUP UTS IPC USER PID NET TIME


def seccomp_program() -> bytes | None:
    """A classic-BPF seccomp filter for bwrap's --seccomp (x86_64 only; None elsewhere)."""
    if platform.machine() != "x86_64":
        return None
    ld_abs, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, kill = 0x7FFF0000, 0x80000000
    eperm, enosys = 0x00050000 | 1, 0x00050000 | 38
    prog = [
        (ld_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, 0xC000003E),  # AUDIT_ARCH_X86_64
        (ret, 0, 0, kill),
        (ld_abs, 0, 0, 0),  # seccomp_data.nr
        (0x35, 0, 1, 0x40000000),  # jge: x32 system calls
        (ret, 0, 0, eperm),
    ]
    for number in _DENIED_X86_64:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    prog += [(jeq, 0, 1, _CLONE3_X86_64), (ret, 0, 0, enosys)]
    prog += [
        (jeq, 0, 3, _CLONE_X86_64),
        (ld_abs, 0, 0, 16),  # low half of args[0] (clone flags)
        (jset, 0, 1, _NAMESPACE_FLAGS),
        (ret, 0, 0, eperm),
        (ret, 0, 0, allow),
    ]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


# ----------------------------------------------------------------------------- bwrap command


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailable(
            "bubblewrap is not installed: 'sudo apt-get install bubblewrap' (env/setup.sh does it)"
        )
    return found


def python_paths(python: str) -> list[str]:
    """Folders the sandboxed interpreter needs: its prefixes and editable installs."""
    query = (
        "import sys, sysconfig, json; print(json.dumps([sys.prefix, sys.base_prefix, "
        "sys.exec_prefix, sysconfig.get_paths()['purelib']]))"
    )
    out = subprocess.run([python, "-I", "-c", query], capture_output=True, text=True, check=True)
    prefix, base, exec_prefix, purelib = json.loads(out.stdout)
    paths = {prefix, base, exec_prefix, os.path.realpath(python)}
    for pth in Path(purelib).glob("*.pth"):
        for line in pth.read_text(errors="replace").splitlines():
            if line.startswith("/") and os.path.isdir(line.strip()):
                paths.add(line.strip())
    for finder in Path(purelib).glob("__editable__*finder.py"):
        paths.update(_editable_mapping(finder))
    return sorted(_minimal(paths))


def _editable_mapping(finder: Path) -> list[str]:
    import ast

    for node in ast.walk(ast.parse(finder.read_text())):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == "MAPPING" for t in targets) and node.value:
                try:
                    mapping = ast.literal_eval(node.value)
                except ValueError:
                    return []
                return [p for p in mapping.values() if os.path.exists(p)]
    return []


def _minimal(paths: set[str]) -> list[str]:
    """Drop paths already inside another one."""
    real = sorted({os.path.realpath(p) if not os.path.isfile(p) else p for p in paths})
    kept: list[str] = []
    for path in real:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


@dataclass
class SandboxConfig:
    python: str = sys.executable
    limits: Limits = field(default_factory=Limits)
    forbidden: list[str] = field(default_factory=list)  # must stay invisible (sources, gradebook)
    extra_ro: list[str] = field(default_factory=list)

    def __post_init__(self):
        # The interpreter as reached through real folders (a symlinked venv folder is not
        # mounted), but not the binary resolved: a venv's python is a symlink to its base.
        self.python = os.path.join(
            os.path.realpath(os.path.dirname(self.python)), os.path.basename(self.python)
        )
        self.root_mode = os.geteuid() == 0
        self.readable = python_paths(self.python) + [os.path.realpath(p) for p in self.extra_ro]
        self.readable = [p for p in self.readable if not p.startswith(("/usr/", "/etc/"))]
        for path in self.readable:
            for secret in self.forbidden:
                secret = os.path.realpath(secret)
                if secret == path or secret.startswith(path.rstrip("/") + "/"):
                    raise SandboxUnavailable(
                        f"refusing to start: the sandbox would see {secret} (inside {path})"
                    )
        # Root mode: every worker gets a uid no other worker (of this or a concurrent run) has,
        # so that the process limit counts one sandbox and workers cannot signal each other.
        self.uid_base = ROOT_MODE_BASE_UID + secrets.randbelow(1_000_000) * 256

    def argv(self, uid: int, passwd_fd: int, group_fd: int) -> list[str]:
        """The bwrap command; /etc/passwd and /etc/group are read from the two pipes."""
        args = [bwrap_path()]
        if self.root_mode:
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-user"]
        args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--as-pid-1", "--die-with-parent", "--new-session"]
        args += ["--hostname", "sandbox", "--clearenv"]
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp/home",
            "TMPDIR": "/tmp",
            "USER": "sandbox",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": "/tmp/home/.mpl",
            "TORCHINDUCTOR_CACHE_DIR": "/tmp/home/.inductor",
        }
        if os.environ.get("SAFEGRADE_TAG"):  # a label to find this run's sandboxes with `ps`
            env["SAFEGRADE_TAG"] = os.environ["SAFEGRADE_TAG"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--ro-bind", "/usr", "/usr"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = f"/{name}"
            if os.path.islink(host):
                args += ["--symlink", os.readlink(host), host]
            elif os.path.isdir(host):
                args += ["--ro-bind", host, host]
        args += ["--perms", "0755", "--dir", "/etc"]  # bwrap would make it 0700
        for name in ETC_ENTRIES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += ["--perms", "0644", "--ro-bind-data", str(passwd_fd), "/etc/passwd"]
        args += ["--perms", "0644", "--ro-bind-data", str(group_fd), "/etc/group"]
        # The writable tmpfs mounts come before the read-only binds, so that a checkout (and its
        # venv) that lives under /tmp is mounted on top of the fresh /tmp instead of hidden by it.
        args += ["--dev", "/dev"]
        lim = self.limits
        args += ["--perms", "1777", "--size", str(lim.tmp_mb << 20), "--tmpfs", "/tmp"]
        args += ["--perms", "1777", "--size", str(lim.shm_mb << 20), "--tmpfs", "/dev/shm"]
        package_dest = f"{SANDBOX_PACKAGE_ROOT}/grader/safegrade"
        made: set[str] = {"/tmp", "/dev", "/dev/shm"}
        for dest in [*self.readable, package_dest]:
            for parent in reversed(Path(dest).parents):  # bwrap would create them as 0700
                if str(parent) != "/" and str(parent) not in made:
                    made.add(str(parent))
                    args += ["--perms", "0755", "--dir", str(parent)]
        for path in self.readable:
            args += ["--ro-bind", path, path]
        args += ["--ro-bind", str(PACKAGE_DIR), package_dest]
        args += ["--remount-ro", "/", "--chdir", "/tmp"]
        bootstrap = (
            f"import sys; sys.path.insert(0, {SANDBOX_PACKAGE_ROOT!r}); "
            "from grader.safegrade.zygote import main; main()"
        )
        return args + ["--", self.python, "-I", "-X", "utf8", "-c", bootstrap]

    def identity(self, uid: int) -> tuple[bytes, bytes]:
        """Contents of the sandbox's /etc/passwd and /etc/group."""
        passwd = f"root:x:0:0::/tmp/home:/bin/sh\nsandbox:x:{uid}:{uid}::/tmp/home:/bin/sh\n"
        return passwd.encode(), f"root:x:0:\nsandbox:x:{uid}:\n".encode()

    def cleanup(self) -> None:
        """Nothing to remove: the sandbox's files come through pipes."""


# ----------------------------------------------------------------------------- workers


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe holding data (small: it must fit the pipe buffer)."""
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    return read_end


class Worker:
    """One sandboxed zygote, serving one job at a time."""

    def __init__(self, index: int, config: SandboxConfig, init: dict):
        self.index = index
        self.config = config
        self.uid = config.uid_base + index if config.root_mode else os.getuid()
        self.init = dict(init, limits=config.limits.for_worker(), drop_uid=None)
        if config.root_mode:
            self.init["drop_uid"] = self.uid
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=40)
        self.ready_info: dict = {}

    def start(self) -> dict:
        seccomp = seccomp_program()
        passwd, group = self.config.identity(self.uid)
        passwd_fd, group_fd = _pipe_with(passwd), _pipe_with(group)
        argv = self.config.argv(self.uid, passwd_fd, group_fd)
        pass_fds: tuple[int, ...] = (passwd_fd, group_fd)
        if seccomp is not None:
            seccomp_fd = _pipe_with(seccomp)
            argv = argv[:1] + ["--seccomp", str(seccomp_fd)] + argv[1:]
            pass_fds += (seccomp_fd,)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            start_new_session=True,
        )
        for fd in pass_fds:
            os.close(fd)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self._send(self.init)
        reply = self._receive(READY_TIMEOUT)
        if not reply.get("ready"):
            raise WorkerDied(f"worker did not start: {reply.get('error')}")
        self.ready_info = reply
        return reply

    def _read_stdout(self) -> None:
        stream = self.proc.stdout
        while True:
            line = stream.readline(256 * 1024 * 1024)
            if not line:
                self.lines.put(None)
                return
            self.lines.put(line)

    def _read_stderr(self) -> None:
        for raw in self.proc.stderr:
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip()[:500])

    def _send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(f"worker is gone ({exc}); {self._tail()}") from exc

    def _receive(self, timeout: float) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise WorkerDied(f"worker gave no answer within {timeout:.0f} s") from None
        if line is None:
            self.proc.wait(timeout=10)
            raise WorkerDied(f"worker exited ({self.proc.returncode}); {self._tail()}")
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise WorkerDied("worker sent a malformed reply") from exc
        if not isinstance(message, dict):
            raise WorkerDied("worker sent a malformed reply")
        return message

    def _tail(self) -> str:
        return " | ".join(list(self.stderr_tail)[-3:]) or "no error output"

    def grade(self, job: dict, timeout: float) -> dict:
        self._send(job)
        started = time.monotonic()
        reply = self._receive(timeout)
        if reply.get("job") != job.get("job"):
            raise WorkerDied("worker answered a different job")
        if "worker_error" in reply:
            raise WorkerDied(f"worker error: {reply['worker_error']}")
        reply["wall_seconds"] = round(time.monotonic() - started, 3)
        return reply

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def check_bwrap() -> None:
    """Fail early with a clear message when bubblewrap cannot create a sandbox here."""
    probe = subprocess.run(
        [bwrap_path(), "--ro-bind", "/", "/", "--unshare-all", "--as-pid-1", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise SandboxUnavailable(f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}")
