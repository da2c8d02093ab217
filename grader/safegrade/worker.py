"""The sandbox side: a warm template inside bubblewrap that forks one fresh process per submission.

The template (PID 1 of the sandbox's namespaces) imports torch and what the course's cells import
once, then waits for commands on its control socket. It never reads a submission: a command
brings only the limits and three pipe ends (the job, the records, the output), passed as file
descriptors, which the template hands to a forked child and closes. The child makes its own user,
IPC and mount namespaces (so its SysV objects, /tmp and /dev/shm are its own and vanish with it),
drops every capability, sets its limits and seccomp filter, and only then reads its job from the
trusted grader. It runs the notebook's code cells in order in an IPython shell (magics work; an
error in one cell does not stop the next), each graded test cell replaced by the instructor's
probe, and writes one length-prefixed record per cell, in order, straight to the grader. The
template gives the submission its wall-clock budget, kills every process left in the namespace
and reports how the child ended. It decides nothing. Never imports nbgrader.
"""

from __future__ import annotations

import base64
import ctypes
import gc
import importlib
import io
import json
import os
import platform
import resource
import select
import signal
import socket
import struct
import sys
import time
import types
from contextlib import contextmanager, redirect_stderr, redirect_stdout

from .data import clean_text, decode, encode
from .limits import LIMITS
from .probing import call_probe

FRAME_CAP = LIMITS.frame_bytes  # bytes of one encoded record (a probe's data)
OUTPUT_CAP = LIMITS.cell_output_chars  # characters of output kept per cell
WORK = "/tmp/work"
SHM_MB = LIMITS.shm_mb  # the size of each submission's /dev/shm
RUNNER_FAILED = 70  # the exit status of a process whose runner code raised
NOT_ISOLATED = 71  # the exit status of a child that could not make its own namespaces
KEEP: list[str] = []  # folders bound under /tmp (the Python installation of a checkout there)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 0x2, 0x4, 0x1000, 0x4000
libc = ctypes.CDLL(None, use_errno=True)


class CellTimeout(BaseException):
    """Raised in a cell that runs past the cell timeout (a BaseException, like an interrupt)."""


# ----------------------------------------------------------------------------- the template


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1 ignores signals it has no handler for
    control = socket.socket(fileno=0)
    init, _ = receive(control)
    if os.getpid() != 1:  # kill(-1) below must only ever reach this sandbox's processes
        send(control, {"ready": False, "error": "the worker is not PID 1 of its own namespace"})
        return
    drop_privileges(init.get("uid"))
    KEEP[:] = init.get("keep", [])
    os.umask(0o077)
    started = time.monotonic()
    failed = preimport(init.get("preimport", []))
    shell = make_shell()
    problem = isolation_problem()
    gc.freeze()  # forked processes then leave the template's objects (and pages) alone
    seconds = round(time.monotonic() - started, 2)
    send(control, {"ready": not problem, "error": problem, "seconds": seconds, "failed": failed})
    while (message := receive(control)) is not None:
        command, fds = message
        send(control, serve(command["limits"], fds, shell))


def receive(control: socket.socket) -> tuple[dict, list[int]] | None:
    data, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
    return (json.loads(data), fds) if data else None


def send(control: socket.socket, message: dict) -> None:
    control.sendall(json.dumps(message).encode())


def drop_privileges(uid: int | None) -> None:
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    set_dumpable(0)  # not dumpable: the submission's processes cannot read our memory


def set_dumpable(flag: int) -> None:
    pr_set_dumpable = 4
    if libc.prctl(pr_set_dumpable, flag, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def preimport(names: list[str]) -> list[str]:
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - reported; the cell that needs it will fail
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    torch = sys.modules.get("torch")
    if torch is not None:  # one thread, and its lazy imports done before forking
        torch.set_num_threads(1)
        module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        torch.fx.Interpreter(torch.fx.symbolic_trace(module)).run(torch.zeros(1, 2))
    return failed


def make_shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Shell(InteractiveShell):
        last_error: dict | None = None

        def _showtraceback(self, etype, evalue, stb):
            self.last_error = error_record(evalue, stb)

        def enable_gui(self, gui=None):  # `%matplotlib inline` needs no event loop here
            pass

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    return Shell.instance(config=config)


def isolation_problem() -> str | None:
    """Why a child could not make its own namespaces here (None: it can)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            isolate(1)
        except OSError as exc:
            os.write(write_end, str(exc).encode())
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as pipe:
        problem = pipe.read().decode()
    return f"a submission cannot get namespaces of its own: {problem}" if problem else None


def serve(limits: dict, fds: list[int], shell) -> dict:
    """Fork the child that runs one submission, wait for it within the budget, clean up."""
    started = time.monotonic()
    # The child reports on this pipe that it is isolated, then closes it before it reads its
    # job: an exit status is the submission's to choose (os._exit(NOT_ISOLATED)), this is not.
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        child([*fds, ready_w], limits, shell)
    os.close(ready_w)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    finished, _, _ = select.select([pidfd], [], [], limits["budget"])
    os.close(pidfd)
    if not finished:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    kill_everything()  # every holder of ready_w is gone: this read cannot block
    with os.fdopen(ready_r, "rb") as ready:
        reported = ready.read(1) == b"1"
    reply = {"timed_out": not finished, "seconds": round(time.monotonic() - started, 3)}
    isolated = reported or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != NOT_ISOLATED
    return reply | {"status": describe_status(status), "isolated": isolated}


def describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        hints = {"SIGSEGV": "a segmentation fault", "SIGKILL": "out of memory?"}
        hints |= {"SIGXCPU": "CPU time limit", "SIGXFSZ": "file size limit", "SIGABRT": "aborted"}
        return f"killed by {name}" + (f" ({hints[name]})" if name in hints else "")
    if os.WEXITSTATUS(status) == RUNNER_FAILED:
        return "broke the grader's own code in the sandbox (were Python's built-ins replaced?)"
    return f"exited with status {os.WEXITSTATUS(status)}"


def kill_everything() -> None:
    """SIGKILL every other process in the namespace (we are PID 1) and reap them all."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


# ----------------------------------------------------------------------------- the child


def child(fds: list[int], limits: dict, shell) -> None:
    """The forked process of one submission (never returns)."""
    try:
        job_fd, records_fd, output_fd, ready_fd = fds
        for fd, target in ((job_fd, 0), (records_fd, 3), (output_fd, 1), (output_fd, 2)):
            os.dup2(fd, target)
        os.dup2(ready_fd, 4)  # opened after the others, so no dup2 above closed it
        os.closerange(5, 1 << 16)
        try:
            isolate(limits["tmp_mb"])
        except OSError as exc:
            os.write(2, f"the submission could not be isolated: {exc}\n".encode())
            os._exit(NOT_ISOLATED)
        os.write(4, b"1")
        os.close(4)
        set_limits(limits)
        install_seccomp()
        job = read_job(0)
        if job.get("kind") == "checks":
            run_checks(job, limits)
        run_submission(job, shell, limits)
    finally:
        os._exit(RUNNER_FAILED)


def isolate(tmp_mb: int) -> None:
    """Own user, IPC and mount namespaces; a fresh /tmp and /dev/shm; no capabilities left."""
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNS), "unshare")
    # Opened in the new namespace: a bind mount's source must be a mount of our own namespace.
    kept = [os.open(path, os.O_PATH) for path in KEEP]
    set_dumpable(1)  # our /proc/self files belong to root while we are not dumpable
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    for name, text in (("gid_map", f"{gid} {gid} 1"), ("oom_score_adj", "1000")):
        with open(f"/proc/self/{name}", "w") as handle:  # the OOM killer takes us, not PID 1
            handle.write(text)
    set_dumpable(0)
    for folder, mb in (("/tmp", tmp_mb), ("/dev/shm", SHM_MB)):
        options, flags = f"size={mb}m,mode=1777".encode(), MS_NOSUID | MS_NODEV
        check(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", flags, options), folder)
    for path, fd in zip(KEEP, kept, strict=True):  # bound again over the new /tmp, read-only
        os.makedirs(path, mode=0o755, exist_ok=True)
        source = f"/proc/self/fd/{fd}".encode()
        check(libc.mount(source, path.encode(), None, MS_BIND | MS_REC, None), path)
        os.close(fd)
    drop_capabilities()


def check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def drop_capabilities() -> None:
    """Our capabilities (full, in our new user namespace) all cleared."""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def set_limits(limits: dict) -> None:
    memory = limits["memory_mb"] << 20
    if limits["memory_cgroup"]:  # the cgroup counts everything; this makes a MemoryError first
        memory_limit = (resource.RLIMIT_DATA, memory)
    else:  # no cgroup: address space, which counts shared mappings too
        memory_limit = (resource.RLIMIT_AS, memory + address_space())
    for limit, value in (
        memory_limit,
        (resource.RLIMIT_NPROC, limits["nproc"]),
        (resource.RLIMIT_FSIZE, limits["file_mb"] << 20),
        (resource.RLIMIT_NOFILE, LIMITS.open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, int(limits["budget"]) + 1),
    ):
        resource.setrlimit(limit, (value, value))


def address_space() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmSize:"))
    return int(line.split()[1]) << 10


# x86_64 system calls refused with EPERM: ptrace, syslog, pivot_root, chroot, acct, mount,
# umount2, swapon/off, reboot, iopl, ioperm, (f)init/delete_module, quotactl, kexec, keys,
# unshare, setns, perf_event_open, handles, process_vm_*, bpf, userfaultfd, io_uring, new mount
# API; clone with a namespace flag; clone3 (ENOSYS: libraries fall back to clone).
_DENIED = (101, 103, 155, 161, 163, 165, 166, 167, 168, 169, 172, 173, 175, 176, 179, 246, 248)
_DENIED += (249, 250, 272, 298, 303, 304, 308, 310, 311, 313, 320, 321, 323, 425, 426, 427, 428)
_DENIED += (429, 430, 431, 432, 433, 442)
_CLONE, _CLONE3 = 56, 435
_NEW_NAMESPACES = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME


def seccomp_program() -> bytes | None:
    """A classic-BPF seccomp filter (x86_64 only; None elsewhere)."""
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


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp() -> None:
    program = seccomp_program()
    if program is None:
        return
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.addressof(buffer))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    check(libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0), "no_new_privs")
    check(libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0), "seccomp")


def read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_job(fd: int) -> dict:
    size = int.from_bytes(read_exactly(fd, 4), "big")
    return json.loads(read_exactly(fd, size))


def write_frame(fd: int, payload: bytes) -> None:
    """One length-prefixed frame (the job to the child, a record to the grader)."""
    view = memoryview(len(payload).to_bytes(4, "big") + payload)
    while view:
        view = view[os.write(fd, view) :]


def write_files(files: dict) -> None:
    for folder in (WORK, "/tmp/home"):
        os.makedirs(folder, exist_ok=True)
    for name, payload in files.items():
        parts = name.split("/")
        if ".." in parts or name.startswith("/"):
            continue
        target = os.path.join(WORK, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(os.fsencode(target), "wb") as handle:
            handle.write(base64.b64decode(payload))


def run_submission(job: dict, shell, limits: dict) -> None:
    write_files(job.get("files", {}))
    os.chdir(WORK)
    sys.path.insert(0, "")  # as in a kernel: modules beside the notebook (or %%writefile) import
    signal.signal(signal.SIGALRM, _cell_timed_out)
    probes = types.ModuleType("probes")
    exec(compile(job["probes"], "probes.py", "exec"), probes.__dict__)
    nonce, timeout = job["nonce"], limits["cell_timeout"]
    for index, cell in enumerate(job["cells"]):
        try:
            if "probe" in cell:
                record = run_probe(probes, cell, shell.user_ns, timeout)
            else:
                record = run_code(shell, cell["code"], timeout)
        except CellTimeout:  # the alarm went off between the cell and the record
            record = {"error": timeout_error(timeout)}
        send_record(dict(record, cell=index), nonce)
    send_record({"done": True}, nonce)
    os._exit(0)


def run_checks(job: dict, limits: dict) -> None:
    """A check process (checking.py): the instructor's checks on one submission's data, one
    verdict record per test, in order; the grader's own failure ends it with a record saying so."""
    from .checking import GraderFailure, judge, load_checks

    write_files(job.get("files", {}))
    os.chdir(WORK)
    signal.signal(signal.SIGALRM, _cell_timed_out)  # else the alarm ends the process, not the check
    nonce, timeout, index = job["nonce"], limits["cell_timeout"], 0
    try:
        checks = load_checks(WORK)
        for index, test in enumerate(job["tests"]):
            try:
                with time_limit(timeout):
                    verdict = judge(checks, test["grade_id"], test["value"], job["seed"])
            except CellTimeout:
                verdict = ["CheckTimeout", f"checking your result took over {timeout:g} s"]
            send_record({"cell": index, "verdict": verdict}, nonce)
    except GraderFailure as exc:
        send_record({"cell": index, "grader_error": str(exc)}, nonce)
    send_record({"done": True}, nonce)
    os._exit(0)


def send_record(record: dict, nonce: str) -> None:
    """The record, encoded, capped after encoding (data over the cap becomes an error), in a
    frame that starts with this job's nonce."""
    payload = json.dumps(record).encode()
    if len(payload) > FRAME_CAP:
        message = f"the data is {len(payload) >> 20} MiB once encoded; at most {FRAME_CAP >> 20}"
        error = {"ename": "DataTooLarge", "evalue": message, "traceback": []}
        kept = {key: record[key] for key in ("cell", "probe") if key in record}
        payload = json.dumps(dict(kept, error=error)).encode()
    write_frame(3, nonce.encode() + payload)


def _cell_timed_out(_signum, _frame):
    raise CellTimeout


@contextmanager
def time_limit(seconds: float):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def timeout_error(seconds: float) -> dict:
    message = f"the cell ran longer than {seconds:g} s and was interrupted"
    return {"ename": "CellTimeoutError", "evalue": message, "traceback": []}


def run_code(shell, source: str, timeout: float) -> dict:
    out, err = Capture(1), Capture(2)
    shell.last_error = None
    with redirect_stdout(out), redirect_stderr(err), time_limit(timeout):
        shell.run_cell(source, store_history=True)
    record = {"stdout": out.text(), "stderr": err.text()}
    error = shell.last_error
    if error is not None and error["ename"] == "CellTimeout":
        error = timeout_error(timeout)
    return dict(record, error=error) if error else record


def run_probe(probes, cell: dict, namespace: dict, timeout: float) -> dict:
    """The instructor's probe for the cell, on the inputs the grader sent (data, decoded here):
    its data, or the error it raised."""
    out = Capture()
    record = {"probe": cell["probe"]}
    try:
        with redirect_stdout(out), redirect_stderr(Capture()), time_limit(timeout):
            inputs = decode(cell["inputs"])
            record["value"] = encode(call_probe(probes, cell["probe"], namespace, inputs))
    except CellTimeout:
        record["error"] = timeout_error(timeout)
    except BaseException as exc:  # noqa: BLE001 - the learner's code may raise anything
        record["error"] = error_record(exc, [])
    record["stdout"] = out.text()
    return record


def error_record(exc: BaseException, traceback: list) -> dict:
    try:
        evalue = str(exc)
    except BaseException:  # noqa: BLE001 - a learner's __str__ may raise
        evalue = "<the exception's message could not be read>"
    return {
        "ename": clean_text(type(exc).__name__, LIMITS.name_chars),
        "evalue": clean_text(evalue, LIMITS.error_chars),
        "traceback": [
            clean_text(line, LIMITS.traceback_line_chars)
            for line in traceback[-LIMITS.traceback_lines :]
        ],
    }


class Capture(io.StringIO):
    """A text stream that keeps the first OUTPUT_CAP characters written to it. Like a kernel's
    stream, it has a file descriptor (what is written there goes to the process's output)."""

    dropped = 0

    def __init__(self, fd: int = 1):
        super().__init__()
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def write(self, text) -> int:
        text = text if isinstance(text, str) else str(text)
        room = max(0, OUTPUT_CAP - self.tell())
        self.dropped += max(0, len(text) - room)
        super().write(text[:room])
        return len(text)

    def text(self) -> str:
        tail = f"\n[output truncated: {self.dropped} more characters]" if self.dropped else ""
        return clean_text(self.getvalue() + tail, OUTPUT_CAP + 100)
