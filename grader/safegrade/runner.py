"""One test, one process: the code a forked test process runs inside the sandbox.

The worker (``zygote``) forks a fresh process per hidden test. That process runs, in notebook
order, the instructor's setup and read-only cells, the student's solution cells and the earlier
test cells whose names the test needs, then the test cell itself, and reports what happened as
JSON lines on a pipe. Nothing here trusts the student: exceptions are described without calling
student code, output is capped, and the grading state is checked for tampering before and after
the test. The process ends with ``os._exit``; the worker kills everything it left behind.
"""

from __future__ import annotations

import io
import json
import os
import resource
import sys
import time
import types
import warnings

from . import guard

MAX_MESSAGE = 600
CELL_OUTPUT_CAP = 8_000
WARNINGS_CAP = 30


# ----------------------------------------------------------------------------- plumbing


class CappedText(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int):
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        if type(text) is not str:
            text = "<non-text output>"
        room = self.cap - self.size
        if room > 0:
            kept = text[:room]
            self.parts.append(kept)
            self.size += len(kept)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def value(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more characters]"
        return text


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` without running student code (no ``str()`` on the exception)."""
    name = type(exc).__name__
    if type(name) is not str:
        name = "Exception"
    try:
        args = BaseException.__dict__["args"].__get__(exc)
    except Exception:
        args = ()
    if isinstance(exc, SyntaxError) and len(args) == 2 and type(args[0]) is str:
        where = args[1] if type(args[1]) is tuple else ()
        line = f" (line {where[1]})" if len(where) > 1 and type(where[1]) is int else ""
        return one_line(f"{name}: {args[0]}{line}")
    shown = []
    for arg in args[:3]:
        if type(arg) is str:
            shown.append(arg if len(args) == 1 and name != "KeyError" else repr(arg))
        elif type(arg) in (int, float, bool) or arg is None:
            shown.append(repr(arg))
        else:
            shown.append("<object>")
    message = ", ".join(shown)
    return one_line(f"{name}: {message}" if message else name)


def without_ipython_syntax(source: str) -> str:
    """Turn IPython-only lines (%magics, !shell) into `pass`, only when the cell would not
    compile otherwise; the notebook learners edit accepts them, so they cost nothing here."""
    try:
        compile(source, "<check>", "exec", 0, True)
        return source
    except (SyntaxError, ValueError):
        pass
    lines = source.split("\n")
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            indent = line[: len(line) - len(stripped)]
            lines[i] = f"{indent}pass  # IPython syntax skipped by the grader"
    changed = "\n".join(lines)
    try:
        compile(changed, "<check>", "exec", 0, True)
    except (SyntaxError, ValueError):
        return source
    return changed


class Reporter:
    """Writes JSON lines on the verdict pipe with references taken before student code ran."""

    def __init__(self, fd: int):
        self.fd = fd
        self._write = os.write
        self._dumps = json.dumps

    def send(self, message: dict) -> None:
        data = (self._dumps(message) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = self._write(self.fd, view)
            view = view[written:]


# ----------------------------------------------------------------------------- audit hook


def install_audit_hook(trusted_classes: frozenset = frozenset()) -> None:
    """Refuse the hooks and the introspection that tampering needs, once student code started.

    Frames: student code may not read the tests' or the runner's frames directly (torch.fx
    itself reads frames while it traces, so library code may).

    Activation is one-way (event ``safegrade.activate``); the hook is reachable from no Python
    object, so student code cannot switch it off.
    """
    active = [False]
    busy = [False]
    deny = frozenset(
        {
            "sys.addaudithook",
            "sys.settrace",
            "sys.setprofile",
            "sys._current_frames",
            "gc.get_objects",
            "gc.get_referrers",
            "gc.get_referents",
        }
    )
    func_attrs = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
    frame_attrs = frozenset({"f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame"})
    protected_files = frozenset(
        os.path.abspath(module.__file__) for module in (sys.modules[__name__], guard)
    ) | {os.path.join(os.path.dirname(os.path.abspath(guard.__file__)), "zygote.py")}
    getframe = sys._getframe
    instructor, student = guard.INSTRUCTOR_PREFIX, guard.STUDENT_PREFIX
    _type, _function = type, types.FunctionType

    def student_frame(frame) -> bool:
        return frame is not None and frame.f_code.co_filename.startswith(student)

    def protected(frame) -> bool:
        if frame is None:
            return False
        filename = frame.f_code.co_filename
        return filename.startswith(instructor) or filename in protected_files

    def target_frame(event, args):
        if event == "sys._getframe":
            return args[0]
        obj, name = args[0], args[1]
        return obj if name == "f_code" else getattr(obj, name, None)

    def hook(event: str, args: tuple) -> None:
        if not active[0]:
            if event == "safegrade.activate":
                active[0] = True
            return
        if busy[0]:
            return
        if event in deny or event.startswith("ctypes."):
            raise RuntimeError(f"{event} is not allowed while grading")
        if event == "compile" and str(args[1]).startswith(instructor):
            raise RuntimeError("compiling code under the instructor's cell names is not allowed")
        busy[0] = True
        try:
            if event == "sys._getframe" or (
                event == "object.__getattr__" and args[1] in frame_attrs
            ):
                # Student code may look at its own frames, not at the tests' or the runner's.
                # (Only direct access is refused: torch.fx reads frames while it traces.)
                if student_frame(getframe(1)) and protected(target_frame(event, args)):
                    raise RuntimeError("looking at the grader's frames is not allowed")
            elif event in ("object.__setattr__", "object.__delattr__"):
                obj, name = args[0], args[1]
                if _type(obj) is _function and name in func_attrs:
                    filename = obj.__code__.co_filename
                    generated = filename.startswith("<") and not filename.startswith(instructor)
                    if (
                        name == "__code__"
                        and not filename.startswith(student)
                        or (name != "__code__" and not generated)
                    ):
                        raise RuntimeError(f"changing {name} of this function is not allowed")
                elif _type(obj) is types.ModuleType and name == "__class__":
                    raise RuntimeError("changing a module's class is not allowed while grading")
                elif name in ("__bases__", "__class__") and obj in trusted_classes:
                    raise RuntimeError(f"changing {name} of a class is not allowed while grading")
        finally:
            busy[0] = False

    sys.addaudithook(hook)


# ----------------------------------------------------------------------------- limits


def apply_limits(limits: dict) -> None:
    mb = 1024 * 1024
    wanted = {
        resource.RLIMIT_NPROC: limits["nproc"],
        resource.RLIMIT_DATA: limits["memory_mb"] * mb,
        resource.RLIMIT_FSIZE: limits["fsize_mb"] * mb,
        resource.RLIMIT_NOFILE: limits["nofile"],
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_CPU: int(limits["timeout"]) + 5,
    }
    for kind, value in wanted.items():
        try:
            soft, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass


# ----------------------------------------------------------------------------- the test process


class Warnings:
    def __init__(self):
        self.seen: list[str] = []

    def show(self, message, category, filename, lineno, file=None, line=None):
        try:
            name = category.__name__ if isinstance(category, type) else "Warning"
            if isinstance(message, BaseException):
                text = describe_exception(message)
            else:
                text = f"{name}: {message}"
            entry = one_line(f"{text} ({os.path.basename(str(filename))}:{lineno})", 300)
        except Exception:
            entry = "Warning (unprintable)"
        if entry not in self.seen and len(self.seen) < WARNINGS_CAP:
            self.seen.append(entry)


WARNINGS = Warnings()


def warnings_policy() -> None:
    """Warnings are recorded and shown to the learner; they never fail a test."""
    warnings.resetwarnings()
    warnings.simplefilter("default")
    warnings.showwarning = WARNINGS.show


def run_cells(plan, test_pos: int, solutions: dict, reporter: Reporter, state) -> dict:
    """Run what test ``plan.tests[test_pos]`` needs, then the test. Returns the verdict."""
    ns = state.ns
    cells_report = []
    activated = False
    test_cell = plan.cells[plan.tests[test_pos]]
    for index in plan.prerequisites[test_pos]:
        cell = plan.cells[index]
        reporter.send({"cell": cell.id, "kind": cell.kind})
        stdout, stderr = CappedText(CELL_OUTPUT_CAP), CappedText(CELL_OUTPUT_CAP)
        error = None
        if cell.kind == "solution":
            source = solutions.get(cell.id)
            if source is None:
                error = "this answer cell is missing from the submission"
            else:
                try:
                    source = without_ipython_syntax(source)
                    code = compile(source, guard.STUDENT_PREFIX + cell.id + ">", "exec", 0, True)
                except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
                    code, error = None, describe_exception(exc)
                if code is not None:
                    if not activated:
                        sys.audit("safegrade.activate")
                        activated = True
                    error = execute(code, ns, stdout, stderr)
        else:
            error = execute(cell.code, ns, stdout, stderr, cell.kind == "test")
            guard.pin_cell_bindings(state, cell.binds)
        cells_report.append(
            {"id": cell.id, "error": error, "stdout": stdout.value(), "stderr": stderr.value()}
        )
    if not activated:
        sys.audit("safegrade.activate")
    reporter.send({"test": test_cell.id})
    clock = [time.perf_counter()]
    before = integrity_problems(state)
    clock.append(time.perf_counter())
    stdout, stderr = CappedText(CELL_OUTPUT_CAP), CappedText(CELL_OUTPUT_CAP)
    warnings_policy()
    start = time.perf_counter()
    error = None
    if before:
        error = "not run: " + before[0]
    else:
        error = execute(test_cell.code, ns, stdout, stderr, True)
        clock.append(time.perf_counter())
        after = integrity_problems(state)
        clock.append(time.perf_counter())
        if error is None and after:
            error = "changed while the test ran: " + after[0]
    return {
        "done": True,
        "test": test_cell.id,
        "passed": error is None,
        "error": error,
        "seconds": round(time.perf_counter() - start, 3),
        "stdout": stdout.value(),
        "stderr": stderr.value(),
        "cells": cells_report,
        "warnings": list(WARNINGS.seen),
        "tamper": before,
        "phases": [round(b - a, 4) for a, b in zip(clock, clock[1:], strict=False)],
    }


def execute(code, ns: dict, stdout, stderr, as_function: bool = False) -> str | None:
    """Run one cell; returns None or a one-line description of what it raised."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    try:
        exec(code, ns)
        if as_function:
            cell_locals = ns.pop(guard.CELL_FUNCTION)()
            if type(cell_locals) is dict:
                ns.update(cell_locals)
    except BaseException as exc:  # noqa: BLE001 - every exception is a result here
        return describe_exception(exc)
    finally:
        sys.stdout, sys.stderr = saved
    return None


def integrity_problems(state) -> list[str]:
    problems = []
    if sys.gettrace() is not None:
        problems.append("a trace function (sys.settrace) is installed")
    if sys.getprofile() is not None:
        problems.append("a profile function (sys.setprofile) is installed")
    threading = sys.modules.get("threading")
    if threading is not None and (
        getattr(threading, "_trace_hook", None) or getattr(threading, "_profile_hook", None)
    ):
        problems.append("a threading trace or profile hook is installed")
    problems += [f"student code: {p}" for p in state.snapshot.tampering()]
    return problems


def child_main(plan, test_pos: int, solutions: dict, verdict_fd: int, limits: dict, state) -> None:
    """Entry point of a forked test process (fds 0-2 already redirected by the worker)."""
    reporter = Reporter(verdict_fd)
    try:
        apply_limits(limits)
        install_audit_hook(state.snapshot.classes)
        os.chdir(limits["workdir"])
        sys.path.append(limits["workdir"])
        sys.modules["__main__"] = state.module
        verdict = run_cells(plan, test_pos, solutions, reporter, state)
        reporter.send(verdict)
    except BaseException as exc:  # noqa: BLE001
        try:
            reporter.send({"crash": describe_exception(exc)})
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(0)
