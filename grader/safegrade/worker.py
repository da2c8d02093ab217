"""The sandbox side: a warm template inside bubblewrap that forks one fresh process per job.

The template (PID 1 of the sandbox's namespaces) imports torch and what the course's cells import
once, then waits for commands on its control socket. It never reads a submission: a command
brings only the limits and three pipe ends (the job, the records, the output), passed as file
descriptors, which the template hands to a forked child and closes. The child shuts itself in
(isolation.py) and only then reads its job from the trusted grader and runs it (runner.py). The
template gives the job its wall-clock budget, kills every process left in the namespace and
reports how the child ended. It decides nothing. Never imports nbgrader.

Forked children share nothing writable with the template or with one another: a page mapped
shared and writable (a multiprocessing lock's semaphore, an anonymous shared map, SysV memory)
would be inherited by every child, a channel from one submission to the next and a lock one could
hold forever. The template makes tqdm's write lock process-local before its warm-up, and refuses
to serve while /proc/self/smaps lists any mapping a child could write and another see.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import re
import select
import signal
import socket
import sys
import time

from . import runner
from .isolation import KEEP, install_seccomp, isolate, set_dumpable, set_limits
from .wording import _

RUNNER_FAILED = 70  # the exit status of a process whose runner code raised
NOT_ISOLATED = 71  # the exit status of a child that could not make its own namespaces
MAPPING = re.compile(r"[0-9a-f]+-[0-9a-f]+ ")  # the first line of a mapping in /proc/PID/smaps


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
    if init.get("more"):  # the rest of its imports, once the grader has read the course's config
        if (more := receive(control)) is None:
            os._exit(0)
        failed += preimport(more[0].get("preimport", []))
    if (torch := sys.modules.get("torch")) is not None:
        process_local_tqdm_lock()
        warm_up(torch)
    problem = isolation_problem() or sharing_problem()
    gc.freeze()  # forked processes then leave the template's objects (and pages) alone
    seconds = round(time.monotonic() - started, 2)
    send(control, {"ready": not problem, "error": problem, "seconds": seconds, "failed": failed})
    while (message := receive(control)) is not None:
        command, fds = message
        send(control, serve(command["limits"], fds, shell))
    os._exit(0)  # the grader is done with us: no teardown of torch's modules to wait for


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


def preimport(names: list[str]) -> list[str]:
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - reported; the cell that needs it will fail
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    return failed


def warm_up(torch) -> None:
    """One thread, and what every process forked from here would otherwise do first, done once:
    torch.fx's lazy imports, and torch's table of overridable functions, which tracing a torch
    function or method on a proxy builds on first use (about 15 ms of CPU, in each of the three
    processes a submission forks; a table, never a shared mapping)."""
    torch.set_num_threads(1)
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    torch.fx.Interpreter(torch.fx.symbolic_trace(module)).run(torch.zeros(1, 2))
    torch.fx.symbolic_trace(lambda x: torch.relu(x).sigmoid() * 2)


def process_local_tqdm_lock() -> None:
    """tqdm (torch.fx's Interpreter shows its progress through it) makes its write lock, on
    first use, a multiprocessing RLock: a semaphore in a shared page that every forked child
    would inherit, and that one submission could hold for the next. Without that part (tqdm's
    own fallback where multiprocessing has no locks) the lock is a thread lock, which each child
    has a copy of."""
    tqdm = sys.modules.get("tqdm.std")
    if tqdm is not None and not hasattr(tqdm.TqdmDefaultWriteLock, "mp_lock"):
        tqdm.TqdmDefaultWriteLock.mp_lock = None


def shared_writable_mappings() -> list[str]:
    """This process's mappings that are shared and writable, or could be made writable
    (mprotect): their /proc/self/maps lines. A forked child inherits each one, so what one child
    writes there the next would read."""
    found, mapping = [], ""
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            if line.startswith("VmFlags:"):
                flags = set(line.split()[1:])
                if "sh" in flags and flags & {"wr", "mw"}:
                    found.append(" ".join(mapping.split()))
            elif MAPPING.match(line):  # an address range starts each mapping's lines
                mapping = line
    return found


def sharing_problem() -> str | None:
    """Why this template must not fork submissions (None: nothing writable is shared)."""
    found = shared_writable_mappings()
    if not found:
        return None
    shown = "; ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return (
        "the template holds a shared writable mapping that every submission's process would "
        f"inherit (a channel between students, and a lock one could hold): {shown}"
    )


def make_shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Shell(InteractiveShell):
        last_error: dict | None = None

        def _showtraceback(self, etype, evalue, stb):
            self.last_error = runner.error_record(evalue, stb)

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
        hints = {"SIGSEGV": _("a segmentation fault"), "SIGKILL": _("out of memory?")}
        hints |= {"SIGXCPU": _("CPU time limit"), "SIGXFSZ": _("file size limit")}
        hints |= {"SIGABRT": _("aborted")}
        if name in hints:
            return _("killed by {signal} ({why})").format(signal=name, why=hints[name])
        return _("killed by {signal}").format(signal=name)
    if os.WEXITSTATUS(status) == RUNNER_FAILED:
        return _("broke the grader's own code in the sandbox (were Python's built-ins replaced?)")
    return _("exited with status {code}").format(code=os.WEXITSTATUS(status))


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
        job = runner.read_job(0)
        if job.get("kind") in ("checks", "inputs"):
            runner.run_checks(job, limits)
        runner.run_submission(job, shell, limits)
    finally:
        os._exit(RUNNER_FAILED)
