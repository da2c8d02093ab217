"""The pre-warmed worker: runs inside bubblewrap as PID 1 of the sandbox's PID namespace.

It imports torch (and whatever the instructor cells import) once, captures the library state,
compiles the instructor cells, and then serves jobs read as JSON lines on stdin. For every hidden
test of a submission it writes the submission's files to a fresh work folder, forks a test process
(``runner.child_main``), supervises it with a wall-clock limit, and afterwards kills every process
left in the namespace. It never executes student code itself. Being PID 1 it cannot be signalled
or killed from inside the namespace, and it is not dumpable, so test processes cannot trace it.
"""

from __future__ import annotations

import ast
import base64
import ctypes
import errno
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import stat
import sys
import time
import types

from . import guard, runner

LINE_CAP = 256 * 1024 * 1024
STREAM_CAP = 16_000
VERDICT_CAP = 2 * 1024 * 1024
TMP = "/tmp"
SHM = "/dev/shm"


class Cell:
    def __init__(self, spec: dict, guard_tuple: tuple):
        self.id = spec["id"]
        self.kind = spec["kind"]  # instructor | solution | test
        self.code = None
        self.binds: set[str] = set()
        self.loads: set[str] = set()
        self.compile_error = None
        if self.kind == "solution":
            return
        filename = f"{guard.INSTRUCTOR_PREFIX}{self.id}>"
        source = runner.without_ipython_syntax(spec["source"])
        try:
            tree = ast.parse(source, filename)
            self.binds = guard.module_bindings(tree)
            self.loads = guard.loaded_names(tree)
            code = guard.instrument(source, filename, self.kind == "test")
            self.code = guard.bind_guard(code, guard_tuple)
        except SyntaxError as exc:
            self.compile_error = runner.describe_exception(exc)
            self.code = compile(f"raise SyntaxError({self.compile_error!r})", filename, "exec")


class Plan:
    def __init__(self, spec: dict, guard_tuple: tuple):
        self.name = spec["name"]
        self.cells = [Cell(c, guard_tuple) for c in spec["cells"]]
        self.tests = [i for i, c in enumerate(self.cells) if c.kind == "test"]
        self.prerequisites = []
        for test_index in self.tests:
            needed = self.cells[test_index].loads
            chosen = []
            for i in range(test_index):
                cell = self.cells[i]
                if cell.kind != "test" or cell.binds & needed:
                    chosen.append(i)
            self.prerequisites.append(chosen)


# ----------------------------------------------------------------------------- process handling


def kill_everything() -> None:
    """SIGKILL every other process in the namespace (we are PID 1) and reap them all."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _force_remove(path: str) -> None:
    def fix(func, target, _info):
        try:
            os.chmod(os.path.dirname(target) or "/", 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    for name in os.listdir(path):
        target = os.path.join(path, name)
        try:
            mode = os.lstat(target).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            shutil.rmtree(target, onerror=fix)
        else:
            try:
                os.unlink(target)
            except OSError:
                pass


def prepare_workdir(files: dict) -> str:
    for area in (TMP, SHM):
        if os.path.isdir(area):
            _force_remove(area)
    work = os.path.join(TMP, "work")
    os.makedirs(work)
    os.makedirs(os.path.join(TMP, "home"), exist_ok=True)
    for rel, payload in files.items():
        target = os.path.join(work, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(base64.b64decode(payload))
    return work


class Capture:
    def __init__(self, cap: int):
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.cap - self.size
        if room > 0:
            self.chunks.append(data[:room])
            self.size += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        text = b"".join(self.chunks).decode("utf-8", "replace")
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes]"
        return text


def run_one_test(plan: Plan, test_pos: int, solutions: dict, files: dict, limits: dict, state):
    """Fork, supervise and clean up one test process. Returns (verdict or None, info)."""
    limits = dict(limits, workdir=prepare_workdir(files))
    pipes = [os.pipe() for _ in range(3)]  # stdout, stderr, verdict
    pid = os.fork()
    if pid == 0:  # the test process
        try:
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(pipes[0][1], 1)
            os.dup2(pipes[1][1], 2)
            verdict_fd = pipes[2][1]
            os.closerange(3, verdict_fd)
            os.closerange(verdict_fd + 1, 1 << 16)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            runner.child_main(plan, test_pos, solutions, verdict_fd, limits, state)
        finally:
            os._exit(70)
    for _, write_end in pipes:
        os.close(write_end)
    captures = [Capture(STREAM_CAP), Capture(STREAM_CAP), Capture(VERDICT_CAP)]
    selector = selectors.DefaultSelector()
    for index, (read_end, _) in enumerate(pipes):
        os.set_blocking(read_end, False)
        selector.register(read_end, selectors.EVENT_READ, index)
    pidfd = os.pidfd_open(pid)
    selector.register(pidfd, selectors.EVENT_READ, "exit")
    deadline = time.monotonic() + limits["timeout"]
    status, timed_out = None, False
    start = time.monotonic()
    while status is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
            _, status = os.waitpid(pid, 0)
            break
        for key, _ in selector.select(min(remaining, 1.0)):
            if key.data == "exit":
                _, status = os.waitpid(pid, 0)
            else:
                _drain(key.fd, captures[key.data], selector)
    selector.unregister(pidfd)
    os.close(pidfd)
    kill_everything()
    for key in list(selector.get_map().values()):
        _drain_all(key.fd, captures[key.data])
        selector.unregister(key.fd)
    for read_end, _ in pipes:
        try:
            os.close(read_end)
        except OSError:
            pass
    info = {
        "seconds": round(time.monotonic() - start, 3),
        "timed_out": timed_out,
        "status": status,
        "stdout": captures[0].text(),
        "stderr": captures[1].text(),
    }
    return parse_verdict(captures[2]), info


def _drain(fd: int, capture: Capture, selector) -> None:
    try:
        data = os.read(fd, 65536)
    except BlockingIOError:
        return
    if data:
        capture.add(data)
    else:
        selector.unregister(fd)


def _drain_all(fd: int, capture: Capture) -> None:
    while True:
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            return
        if not data:
            return
        capture.add(data)


def parse_verdict(capture: Capture) -> dict:
    """Progress markers and the final verdict, read as data (never trusted to be well-formed)."""
    last_place, verdict, crash = None, None, None
    for raw in b"".join(capture.chunks).split(b"\n"):
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if type(message) is not dict:
            continue
        if "cell" in message or "test" in message and "done" not in message:
            last_place = message
        if message.get("done") is True:
            verdict = message
        if "crash" in message:
            crash = message
    return {"place": last_place, "verdict": verdict, "crash": crash}


# ----------------------------------------------------------------------------- results


def where(place: dict | None) -> tuple[str, str | None]:
    if not place:
        return "while starting", None
    if "test" in place and "cell" not in place:
        return f"while running test {place['test']!r}", None
    kind = {"solution": "answer cell", "test": "test cell"}.get(place.get("kind"), "setup cell")
    return f"while running {kind} {place.get('cell')!r}", place.get("cell")


def describe_death(info: dict, place: dict | None, limits: dict) -> tuple[str, str | None]:
    location, cell = where(place)
    if info["timed_out"]:
        return f"timed out after {limits['timeout']:g} s {location}", cell
    status = info["status"]
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        hint = {
            "SIGSEGV": " (segmentation fault)",
            "SIGKILL": " (killed; memory limit?)",
            "SIGXCPU": " (CPU time limit)",
            "SIGXFSZ": " (file size limit)",
            "SIGABRT": " (aborted; out of memory?)",
        }.get(name, "")
        return f"the process was killed by {name}{hint} {location}", cell
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return f"the process exited with status {code} (os._exit?) {location}", cell


def test_record(plan: Plan, test_pos: int, outcome: dict, info: dict, limits: dict) -> dict:
    test_id = plan.cells[plan.tests[test_pos]].id
    verdict = outcome["verdict"]
    record = {"id": test_id, "seconds": info["seconds"], "fatal_cell": None}
    if verdict is not None and verdict.get("test") == test_id:
        passed = verdict.get("passed") is True
        error = verdict.get("error")
        kind = "passed" if passed else "failed"
        if isinstance(error, str) and error.startswith(("not run:", "changed while")):
            kind = "tamper"
        record.update(
            passed=passed,
            kind=kind,
            message="" if passed else runner.one_line(error or "failed"),
            cells=verdict.get("cells") if isinstance(verdict.get("cells"), list) else [],
            warnings=verdict.get("warnings") if isinstance(verdict.get("warnings"), list) else [],
            stdout=str(verdict.get("stdout", ""))[: runner.CELL_OUTPUT_CAP * 2],
            phases=verdict.get("phases") if isinstance(verdict.get("phases"), list) else [],
        )
    else:
        message, cell = describe_death(info, outcome["place"], limits)
        if outcome["crash"] is not None:
            message = f"{message}: {runner.one_line(str(outcome['crash'].get('crash')))}"
        kind = "timeout" if info["timed_out"] else "crash"
        record.update(passed=False, kind=kind, message=message, cells=[], warnings=[], stdout="")
        if cell is not None and cell != test_id:
            record["fatal_cell"] = cell
    record["fd_output"] = (info["stdout"] + info["stderr"])[: 2 * STREAM_CAP]
    return record


def run_job(job: dict, plans: dict, limits: dict, state) -> dict:
    files = job.get("files", {})
    notebooks = {}
    for name, solutions in job["notebooks"].items():
        plan = plans[name]
        fatal: dict[str, str] = {}
        tests = []
        for pos in range(len(plan.tests)):
            blocked = [c for c in plan.prerequisites[pos] if plan.cells[c].id in fatal]
            if blocked:
                cell_id = plan.cells[blocked[0]].id
                tests.append(
                    {
                        "id": plan.cells[plan.tests[pos]].id,
                        "passed": False,
                        "kind": "skipped",
                        "message": f"not run: {fatal[cell_id]} (in an earlier test process)",
                        "seconds": 0.0,
                        "cells": [],
                        "warnings": [],
                        "stdout": "",
                        "fd_output": "",
                        "fatal_cell": cell_id,
                    }
                )
                continue
            outcome, info = run_one_test(plan, pos, solutions, files, limits, state)
            record = test_record(plan, pos, outcome, info, limits)
            if record["fatal_cell"]:
                fatal[record["fatal_cell"]] = record["message"]
            tests.append(record)
        notebooks[name] = {"tests": tests}
    return {"job": job.get("job"), "notebooks": notebooks}


# ----------------------------------------------------------------------------- main loop


def drop_privileges(uid: int | None) -> None:
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_dumpable = 4
    if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def warm_up_torch(torch) -> None:
    """Run what tests commonly use once, so that its lazy imports happen before the snapshot
    (and not again, slowly, in every test process)."""
    import torch.fx
    import torch.testing

    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    traced = torch.fx.symbolic_trace(module)
    x = torch.zeros(1, 2)
    torch.testing.assert_close(traced(x), module(x))
    torch.fx.Interpreter(traced).run(x)


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read_message() -> dict | None:
    line = sys.stdin.buffer.readline(LINE_CAP)
    if not line:
        return None
    return json.loads(line)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    init = read_message()
    if os.getpid() != 1:  # kill(-1) below must only ever reach this sandbox's processes
        send({"ready": False, "error": "the worker is not PID 1 of its own PID namespace"})
        return
    drop_privileges(init.get("drop_uid"))
    os.umask(0o077)
    started = time.perf_counter()
    os.makedirs(os.path.join(TMP, "home"), exist_ok=True)
    runner.warnings_policy()
    imported, failed = [], []
    for name in init.get("preimport", []):
        try:
            importlib.import_module(name)
            imported.append(name)
        except BaseException as exc:  # noqa: BLE001 - an instructor import may fail; report it
            failed.append(f"{name}: {runner.describe_exception(exc)}")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
        warm_up_torch(torch)
    module = types.ModuleType("__main__")
    snapshot = guard.Snapshot()
    state = guard.State(snapshot, module.__dict__)
    state.module = module
    guard_tuple = guard.make_guard(state)
    plans = {nb["name"]: Plan(nb, guard_tuple) for nb in init.pop("notebooks")}
    gc.freeze()  # forked test processes then leave the worker's objects (and pages) alone
    compile_errors = [
        f"{name}: cell {cell.id}: {cell.compile_error}"
        for name, plan in plans.items()
        for cell in plan.cells
        if cell.compile_error
    ]
    send(
        {
            "ready": True,
            "seconds": round(time.perf_counter() - started, 3),
            "imported": imported,
            "failed_imports": failed,
            "compile_errors": compile_errors,
            "uid": os.getuid(),
        }
    )
    limits = init["limits"]
    while True:
        job = read_message()
        if job is None:
            return
        try:
            send(run_job(job, plans, limits, state))
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                return
            send({"job": job.get("job"), "worker_error": runner.describe_exception(exc)})


if __name__ == "__main__":
    main()
