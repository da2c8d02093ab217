"""Nothing writable is shared between the sandbox's children: a template holding a shared
writable page refuses to serve, and what one submission's process writes into any shared page,
or holds there, the next submission's process neither sees nor waits for."""

from __future__ import annotations

import mmap
import re
from pathlib import Path

import pytest
from submissions.build import read_snippet

from grader.safegrade import sandbox, worker
from grader.safegrade.records import read_records

ROOT = Path(__file__).resolve().parents[1]
LOCKER = read_snippet(ROOT / "tests" / "hostile" / "attacks" / "ex2_holds_every_lock.py")
LIMITS = sandbox.Limits(budget=30, cell_timeout=15, memory_mb=1024)
PLANTS = {
    "anonymous shared map": "import mmap; planted = mmap.mmap(-1, 4096)",
    "multiprocessing lock": "import multiprocessing; planted = multiprocessing.RLock()",
    "SysV shared memory": (
        "import ctypes; libc = ctypes.CDLL(None); libc.shmat.restype = ctypes.c_void_p; "
        "planted = libc.shmat(libc.shmget(0, 4096, 0o1600), None, 0)"
    ),
}
READER = """
import ctypes, torch
from grader.safegrade.worker import shared_writable_mappings

marks = 0
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split()
        if fields[1][3] == "s":
            start, end = (int(part, 16) for part in fields[0].split("-"))
            marks += MARK in ctypes.string_at(start, end - start)
torch.fx.Interpreter(torch.fx.symbolic_trace(torch.nn.ReLU())).run(torch.zeros(2))
print("marks", marks, "writable", shared_writable_mappings(), "interpreter ran")
"""


def run_cell(box: sandbox.Sandbox, code: str) -> tuple[dict, str]:
    reply = box.run({"cells": [{"code": code}], "files": {}, "nonce": "n", "probes": ""})
    record = read_records(reply["records"], 1, "n").get(0, {})
    return reply, str(record.get("stdout"))


def test_shared_writable_mappings_lists_a_shared_page_and_no_private_one():
    before = worker.shared_writable_mappings()
    shared = mmap.mmap(-1, mmap.PAGESIZE)
    private = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE)
    try:
        found = worker.shared_writable_mappings()
    finally:
        shared.close()
        private.close()
    assert len(found) == len(before) + 1, (before, found)
    assert all(line.split()[1][3] == "s" for line in found), found


@pytest.mark.parametrize("plant", PLANTS, ids=lambda name: name.replace(" ", "-"))
def test_a_template_holding_a_shared_writable_page_refuses_to_serve(monkeypatch, tmp_path, plant):
    """The real template, started as every sandbox is, with one line run before it: a page
    every child would share. It says why and never serves."""
    bwrap_argv = sandbox.bwrap_argv

    def planted(*args, **kwargs):
        argv = bwrap_argv(*args, **kwargs)
        return [*argv[:-1], f"{PLANTS[plant]}; {argv[-1]}"]

    monkeypatch.setattr(sandbox, "bwrap_argv", planted)
    box = sandbox.Sandbox([], [str(tmp_path)], LIMITS)
    try:
        with pytest.raises(sandbox.SandboxError, match="shared writable mapping"):
            box.start()
    finally:
        box.stop()


def test_what_one_child_writes_or_holds_the_next_never_sees():
    """One template warmed up as for the course's exercises (torch.fx's Interpreter has run,
    which makes tqdm's lock). The first child holds every lock it can reach and writes a mark
    into every shared page it can make writable; the next child finds no mark, no shared
    writable page, and runs an Interpreter (which takes tqdm's lock) at once."""
    ((_, _, holder),) = LOCKER.added
    box = sandbox.Sandbox(["torch", "torch.fx", "tqdm"], [str(ROOT)], LIMITS)
    try:
        reply, first = run_cell(box, holder)
        assert reply["status"] == "exited with status 0" and "held" in first, (reply, first)
        mark = re.search(r"^MARK = .*$", holder, re.MULTILINE).group(0)
        reply, second = run_cell(box, f"{mark}\n{READER}")
    finally:
        box.stop()
    assert not reply["timed_out"], "the next child waited for a lock the first one held"
    assert second.strip() == "marks 0 writable [] interpreter ran", (reply, first, second)
