"""The sandbox side: a warm worker that runs inside bubblewrap as PID 1 of its own namespaces.

It imports torch (and what the course's cells import) once, then serves jobs read as JSON lines
on stdin, one submission each. For a job it forks a process that runs the notebook's code cells
in order in an IPython shell (so magics work as in a kernel; an error in one cell does not stop
the next), with each graded test cell replaced by the instructor's probe for it. That process
writes one record per cell (output, error, or the probe's encoded data) to a pipe. The worker
gives the whole submission one wall-clock budget, kills every process left in the namespace,
empties /tmp, and answers with the records as text. It decides nothing: the trusted grader reads
the records as data and runs the checks. Never imports nbgrader.
"""

from __future__ import annotations

import base64
import ctypes
import gc
import importlib
import io
import json
import os
import resource
import selectors
import shutil
import signal
import sys
import time
import types
from contextlib import contextmanager, redirect_stderr, redirect_stdout

from .data import clean_text, decode, encode
from .probing import call_probe

RECORDS_CAP = 16 << 20  # bytes of records one submission may send
OUTPUT_CAP = 20_000  # characters of output kept per cell (and for the process's own fds)
WORK = "/tmp/work"
RUNNER_FAILED = 70  # the exit status of a process whose runner code raised
KEEP: set[str] = set()  # folders bound under /tmp (the Python installation of a checkout there)


class CellTimeout(BaseException):
    """Raised in a cell that runs past the cell timeout (a BaseException, like an interrupt)."""


# ----------------------------------------------------------------------------- the worker


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1 ignores signals it has no handler for
    init = read_message()
    if os.getpid() != 1:  # kill(-1) below must only ever reach this sandbox's processes
        send({"ready": False, "error": "the worker is not PID 1 of its own PID namespace"})
        return
    drop_privileges(init.get("uid"))
    KEEP.update(init.get("keep", []))
    os.umask(0o077)
    started = time.monotonic()
    os.makedirs("/tmp/home", exist_ok=True)
    failed = preimport(init.get("preimport", []))
    shell = make_shell()
    gc.freeze()  # forked processes then leave the worker's objects (and pages) alone
    send({"ready": True, "seconds": round(time.monotonic() - started, 2), "failed": failed})
    while (job := read_message()) is not None:
        send(serve(job, shell))


def read_message() -> dict | None:
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line else None


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def drop_privileges(uid: int | None) -> None:
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    pr_set_dumpable = 4  # not dumpable: the submission's processes cannot read our memory
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
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


# ----------------------------------------------------------------------------- one submission


def serve(job: dict, shell) -> dict:
    limits = job["limits"]
    write_files(job.get("files", {}))
    records_r, records_w = os.pipe()
    output_r, output_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(records_w, 3)
            os.dup2(output_w, 1)
            os.dup2(output_w, 2)
            os.closerange(4, 1 << 16)
            run_submission(job, shell, limits)
        finally:
            os._exit(RUNNER_FAILED)
    os.close(records_w)
    os.close(output_w)
    status, timed_out, (records, output) = supervise(pid, [records_r, output_r], limits["budget"])
    reply = {
        "job": job["job"],
        "records": records.decode("utf-8", "replace"),
        "clean": empty("/tmp") & empty("/dev/shm"),
    }
    reply["output"] = clean_text(output.decode("utf-8", "replace"), OUTPUT_CAP)
    reply["status"] = "" if timed_out else describe_status(status)
    return reply | {"timed_out": timed_out, "seconds": round(time.monotonic() - started, 3)}


def write_files(files: dict) -> None:
    os.makedirs(WORK, exist_ok=True)
    os.makedirs("/tmp/home", exist_ok=True)
    for name, payload in files.items():
        parts = name.split("/")
        if ".." in parts or name.startswith("/"):
            continue
        target = os.path.join(WORK, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(os.fsencode(target), "wb") as handle:
            handle.write(base64.b64decode(payload))


def supervise(pid: int, fds: list[int], budget: float) -> tuple[int, bool, list[bytes]]:
    """Collect the process's records and output until it exits or the budget is spent."""
    caps = [RECORDS_CAP, 4 * OUTPUT_CAP]
    streams = [bytearray(), bytearray()]
    selector = selectors.DefaultSelector()
    for index, fd in enumerate(fds):
        selector.register(fd, selectors.EVENT_READ, index)
    deadline = time.monotonic() + budget
    status, timed_out = None, False
    while status is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 and not timed_out:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
        for key, _ in selector.select(min(max(remaining, 0.05), 0.5)):
            data = os.read(key.fd, 65536)
            if not data:
                selector.unregister(key.fd)
            streams[key.data] += data[: max(0, caps[key.data] - len(streams[key.data]))]
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
    kill_everything()  # nothing can write any more: read what is left, then close
    for key in list(selector.get_map().values()):
        while data := os.read(key.fd, 65536):
            streams[key.data] += data[: max(0, caps[key.data] - len(streams[key.data]))]
    for fd in fds:
        os.close(fd)
    return status, timed_out, [bytes(s) for s in streams]


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


def empty(folder: str) -> bool:
    """Remove what the submission left in folder (but the bound folders of a checkout in /tmp,
    and their parents); False when something is left, a tree too deep to remove, say: the grader
    then replaces this worker with a fresh one."""
    clean = True
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if any(kept == path or kept.startswith(path + "/") for kept in KEEP):
            clean &= path in KEEP or empty(path)
            continue
        try:
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(
                path
            )
        except (OSError, RecursionError):
            clean = False
    return clean


# ----------------------------------------------------------------------------- the forked process


def run_submission(job: dict, shell, limits: dict) -> None:
    for limit, value in (
        (resource.RLIMIT_DATA, limits["memory_mb"] << 20),
        (resource.RLIMIT_NPROC, limits["nproc"]),
        (resource.RLIMIT_FSIZE, limits["file_mb"] << 20),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, int(limits["budget"]) + 1),
    ):
        resource.setrlimit(limit, (value, value))
    os.chdir(WORK)
    signal.signal(signal.SIGALRM, _cell_timed_out)
    probes = types.ModuleType("probes")
    exec(compile(job["probes"], "probes.py", "exec"), probes.__dict__)
    records = os.fdopen(3, "w", encoding="utf-8")
    for index, cell in enumerate(job["cells"]):
        try:
            if "probe" in cell:
                record = run_probe(probes, cell, shell.user_ns, limits["cell_timeout"])
            else:
                record = run_code(shell, cell["code"], limits["cell_timeout"])
        except CellTimeout:  # the alarm went off between the cell and the record
            record = {"error": timeout_error(limits["cell_timeout"])}
        records.write(json.dumps(dict(record, cell=index)) + "\n")
        records.flush()
    records.write('{"done": true}\n')
    records.flush()
    os._exit(0)


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
    out, err = Capture(), Capture()
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
            inputs = decode(cell["inputs"]) if "inputs" in cell else None
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
        "ename": clean_text(type(exc).__name__, 200),
        "evalue": clean_text(evalue, 2000),
        "traceback": [clean_text(line, 4000) for line in traceback[-30:]],
    }


class Capture(io.StringIO):
    """A text stream that keeps the first OUTPUT_CAP characters written to it."""

    dropped = 0

    def write(self, text) -> int:
        text = text if isinstance(text, str) else str(text)
        room = max(0, OUTPUT_CAP - self.tell())
        self.dropped += max(0, len(text) - room)
        super().write(text[:room])
        return len(text)

    def text(self) -> str:
        tail = f"\n[output truncated: {self.dropped} more characters]" if self.dropped else ""
        return clean_text(self.getvalue() + tail, OUTPUT_CAP + 100)
