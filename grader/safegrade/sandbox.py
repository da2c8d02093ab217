"""Start, feed and stop sandboxed workers (the trusted side of the process boundary).

A sandbox is ``bwrap`` running ``worker.main`` as PID 1 of new PID, network, IPC and UTS
namespaces. It sees read-only system folders, the Python installation and this package, and
nothing of the course: no sources, no checks, no gradebook, no other submission (``Sandbox``
refuses to start if a folder it would show contains one of them). Its only writable places are
two small tmpfs mounts (/tmp, /dev/shm). A seccomp filter refuses namespace, mount, ptrace and
kernel-module system calls. As root, each sandbox drops to a uid of its own, so that the process
limit counts one sandbox and sandboxes cannot signal each other.
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
from collections import deque
from contextlib import contextmanager
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE_IN_SANDBOX = "/opt/safegrade/grader/safegrade"
READY_TIMEOUT = 300  # seconds to import torch in a fresh sandbox on a very busy machine
REPLY_CAP = 64 << 20
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "fonts")
ENV = dict(PATH="/usr/local/bin:/usr/bin:/bin", HOME="/tmp/home", TMPDIR="/tmp", USER="sandbox")
ENV |= dict(LANG="C.UTF-8", PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
ENV |= dict(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLCONFIGDIR="/tmp/home/.mpl")


class SandboxError(RuntimeError):
    """The sandbox could not be started, or stopped answering."""


# x86_64 system calls refused with EPERM: ptrace, syslog, pivot_root, chroot, acct, mount,
# umount2, swapon/off, reboot, iopl, ioperm, (f)init/delete_module, quotactl, kexec, keys,
# unshare, perf_event_open, handles, process_vm_*, bpf, userfaultfd, io_uring, new mount API.
_DENIED = (101, 103, 155, 161, 163, 165, 166, 167, 168, 169, 172, 173, 175, 176, 179, 246, 248)
_DENIED += (249, 250, 272, 298, 303, 304, 308, 310, 311, 313, 320, 321, 323, 425, 426, 427, 428)
_DENIED += (429, 430, 431, 432, 433, 442)
_CLONE, _CLONE3 = 56, 435
_NEW_NAMESPACES = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME


def seccomp_program() -> bytes | None:
    """A classic-BPF filter for bwrap's --seccomp (x86_64 only; None elsewhere)."""
    if platform.machine() != "x86_64":
        return None
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, kill, eperm, enosys = 0x7FFF0000, 0x80000000, 0x00050001, 0x00050026
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, 0xC000003E), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    prog += [(0x35, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # x32 system calls
    for number in _DENIED:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    prog += [(jeq, 0, 1, _CLONE3), (ret, 0, 0, enosys), (jeq, 0, 3, _CLONE), (ld, 0, 0, 16)]
    prog += [(jset, 0, 1, _NEW_NAMESPACES), (ret, 0, 0, eperm), (ret, 0, 0, allow)]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in prog)


def python_folders() -> list[str]:
    """The folders this interpreter needs: its prefixes and editable installs."""
    query = (
        "import json, sys, sysconfig; print(json.dumps([sys.prefix, sys.base_prefix, "
        "sys.exec_prefix, sysconfig.get_paths()['purelib']]))"
    )
    python = sys.executable
    done = subprocess.run([python, "-I", "-c", query], capture_output=True, text=True, check=True)
    *prefixes, purelib = json.loads(done.stdout)
    folders = {os.path.realpath(p) for p in prefixes}
    for finder in Path(purelib).glob("__editable__*finder.py"):
        for line in finder.read_text().splitlines():  # MAPPING = {'pkg': '/path/to/pkg'}
            if line.startswith("MAPPING"):
                folders.update(
                    p for p in json.loads(line.split("=", 1)[1].replace("'", '"')).values()
                )
    ordered = sorted(folders)
    return [f for f in ordered if not any(f.startswith(o.rstrip("/") + "/") for o in ordered)]


def bwrap_argv(folders: list[str], uid: int | None, tmp_mb: int, extra: list[str]) -> list[str]:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise SandboxError("bubblewrap is not installed: 'apt-get install bubblewrap'")
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--as-pid-1", "--die-with-parent", "--new-session"]
    argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if uid else ["--unshare-user"]
    argv += ["--hostname", "sandbox", "--clearenv"]
    for key, value in ENV.items():
        argv += ["--setenv", key, value]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            argv += ["--ro-bind", f"/{name}", f"/{name}"]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--dev", "/dev", "--proc", "/proc"]
    # tmpfs first, binds after: a venv that lives under /tmp is then mounted over the new /tmp.
    argv += ["--perms", "1777", "--size", str(tmp_mb << 20), "--tmpfs", "/tmp"]
    argv += ["--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm"]
    made = {"/tmp", "/dev", "/dev/shm", "/etc", "/proc"}
    for dest in [*folders, PACKAGE_IN_SANDBOX]:
        for parent in reversed(Path(dest).parents):  # bwrap would create them as 0700
            if str(parent) not in made and str(parent) != "/":
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
    for folder in folders:
        argv += ["--ro-bind", folder, folder]
    argv += ["--ro-bind", str(PACKAGE_DIR), PACKAGE_IN_SANDBOX, *extra, "--remount-ro", "/"]
    # The interpreter through real folders, not resolved: a venv's python links to its base.
    python = os.path.join(os.path.realpath(os.path.dirname(sys.executable)), "python3")
    start = "import sys; sys.path.insert(0, '/opt/safegrade'); from grader.safegrade import worker"
    return argv + [
        "--chdir",
        "/tmp",
        "--",
        python,
        "-I",
        "-X",
        "utf8",
        "-c",
        f"{start}; worker.main()",
    ]


def _pipe_holding(data: bytes) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    return read_end


def _read(stream, lines: queue.Queue) -> None:
    while line := stream.readline(REPLY_CAP):
        lines.put(line)
    lines.put(None)


def _drain(stream, tail: deque) -> None:
    for line in stream:
        tail.append(line.decode("utf-8", "replace").rstrip()[:300])


class Sandbox:
    """One sandboxed worker: started once, then one submission at a time."""

    def __init__(self, preimport: list[str], forbidden: list[str], tmp_mb: int = 256):
        self.preimport, self.tmp_mb = preimport, tmp_mb
        self.folders = python_folders()
        for secret in map(os.path.realpath, forbidden):
            for folder in self.folders + [str(PACKAGE_DIR)]:
                if secret == folder or secret.startswith(folder.rstrip("/") + "/"):
                    raise SandboxError(f"refusing to start: the sandbox would see {secret}")
        # As root: a uid no other sandbox (of this or a concurrent run) has.
        self.uid = 2_000_000 + secrets.randbelow(1 << 24) if os.geteuid() == 0 else None
        self.proc: subprocess.Popen | None = None
        self.jobs = 0
        self.cancelled = False
        self.starting: threading.Thread | None = None

    def start(self) -> None:
        fds, extra = [], []
        uid = self.uid or os.getuid()
        passwd = f"root:x:0:0::/tmp/home:/bin/sh\nsandbox:x:{uid}:{uid}::/tmp/home:/bin/sh\n"
        for name, text in (("passwd", passwd), ("group", f"root:x:0:\nsandbox:x:{uid}:\n")):
            fds.append(_pipe_holding(text.encode()))
            extra += ["--perms", "0644", "--ro-bind-data", str(fds[-1]), f"/etc/{name}"]
        argv = bwrap_argv(self.folders, self.uid, self.tmp_mb, extra)
        if (program := seccomp_program()) is not None:
            fds.append(_pipe_holding(program))
            argv[1:1] = ["--seccomp", str(fds[-1])]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=fds, start_new_session=True,
        )  # fmt: skip
        for fd in fds:
            os.close(fd)
        if self.cancelled:
            self.cancel()
        self.lines: queue.Queue = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=10)
        # Each reader holds on to this process's queue: one left from a stopped process must not
        # announce its end into the queue of the next.
        threading.Thread(target=_read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=_drain, args=(self.proc.stderr, self.stderr), daemon=True).start()
        keep = [folder for folder in self.folders if folder.startswith("/tmp/")]
        self._send({"uid": self.uid, "preimport": self.preimport, "keep": keep})
        reply = self._receive(READY_TIMEOUT)
        if not reply.get("ready"):
            raise SandboxError(f"the sandbox did not start: {reply.get('error')}")

    def _send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise SandboxError(f"the sandbox is gone ({exc}); {self.log()}") from exc

    def _receive(self, timeout: float) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise SandboxError(f"the sandbox gave no answer within {timeout:.0f} s") from None
        if line is None:
            raise SandboxError(f"the sandbox exited; {self.log()}")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if type(reply) is not dict:
            raise SandboxError("the sandbox sent a malformed reply")
        return reply

    def log(self) -> str:
        return " | ".join(self.stderr) or "it wrote nothing to stderr"

    def start_in_background(self) -> None:
        def start():
            try:
                self.start()
            except (SandboxError, OSError):
                self.stop()  # run() starts it again, and reports what goes wrong

        self.starting = threading.Thread(target=start, daemon=True)
        self.starting.start()

    def run(self, job: dict, budget: float) -> dict:
        """Send one submission's job; its reply (records as text) or SandboxError."""
        if self.starting is not None:
            self.starting.join()
            self.starting = None
        if self.proc is None:
            self.start()
        self.jobs += 1
        self._send(dict(job, job=self.jobs))
        reply = self._receive(budget + 60)  # the worker itself stops the job at `budget`
        if reply.get("job") != self.jobs:
            raise SandboxError("the sandbox answered another job")
        if reply.get("clean") is not True:  # its /tmp is not empty: a fresh one for the next job
            self.stop()
        return reply

    def cancel(self) -> None:
        """Kill the sandbox from another thread: the job it runs fails at once."""
        self.cancelled = True
        if self.proc is not None:
            self.proc.kill()

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self.proc = None


class Pool:
    """Up to `size` warm sandboxes, each serving one submission at a time."""

    def __init__(self, size: int, preimport: list[str], forbidden: list[str], tmp_mb: int = 256):
        self.idle: queue.Queue = queue.Queue()
        for _ in range(size):
            self.idle.put(None)  # started when first taken, in the thread that takes it
        self.options = (preimport, forbidden, tmp_mb)
        self.busy: set[Sandbox] = set()
        self.closed = False

    def warm(self) -> None:
        """Start every sandbox now, side by side, rather than when each is first needed."""
        for _ in range(self.idle.qsize()):
            box = self.idle.get() or Sandbox(*self.options)
            box.start_in_background()
            self.idle.put(box)

    @contextmanager
    def sandbox(self):
        box = self.idle.get()
        try:
            if self.closed:
                raise SandboxError("the batch was stopped")
            box = box or Sandbox(*self.options)
            self.busy.add(box)
            yield box
        except BaseException:
            if box is not None:
                box.stop()  # a sandbox that failed once is not trusted to be in a good state
            box = None
            raise
        finally:
            self.busy.discard(box)
            self.idle.put(box)

    def close(self) -> None:
        """Stop every sandbox; the jobs running fail at once, later ones are refused."""
        self.closed = True
        for box in list(self.busy):
            box.cancel()
        idle = []
        while not self.idle.empty():
            idle.append(self.idle.get())
        for box in idle:
            if box is not None:
                box.stop()
            self.idle.put(None)  # a thread waiting for a sandbox wakes up and is refused
