"""Hostile (and a few honest) submissions for the tiny assignment, each with the score and the
reason the sandboxed grader must record.

``build_cases(course)`` needs the course root because some submissions aim at real paths: the
instructor's source notebook, the gradebook, a sibling's submission.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

from tiny_course import (
    ASSIGNMENT,
    CORRECT,
    NOTEBOOK,
    SECRET_MARK,
    release_notebook,
    with_answer,
)


@dataclass
class Case:
    name: str
    submission: object  # notebook dict, raw bytes, or {relative path: bytes | ("symlink", target)}
    score: float
    reason: str  # must appear in the recorded one-line reason
    messages: dict | None = None  # test id -> text its failure message must contain


def _bytes(nb: dict) -> bytes:
    return json.dumps(nb, indent=1).encode()


def _with_test_cells(change) -> dict:
    nb = with_answer(CORRECT)
    nb["cells"] = change(nb["cells"])
    return nb


def _grade_id(cell: dict) -> str | None:
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


def build_cases(course: Path) -> list[Case]:
    source_nb = course / "source" / ASSIGNMENT / NOTEBOOK
    sibling = course / "submitted" / "correct" / ASSIGNMENT / NOTEBOOK
    gradebook = course / "gradebook.db"
    canary = course / "CANARY-written-by-sandbox"
    own_result = course / "autograded" / ".safegrade" / ASSIGNMENT / "score_writer.json"
    cases = [
        Case("correct", with_answer(CORRECT), 10, "all 3 tests passed"),
        Case("starter", release_notebook(), 0, "NotImplementedError"),
        Case("wrong", with_answer("def add_all(xs):\n    return sum(xs) + 1\n"), 0, "should be 3"),
        Case(
            "partial_ints",
            with_answer("def add_all(xs):\n    return int(sum(xs))\n"),
            6,
            "test_hidden: AssertionError: floats",
        ),
        # -- isolation: reading the instructor's files or a sibling, writing outside, network
        Case(
            "spy",
            with_answer(
                f"""
import os, socket, subprocess
def probe(label, action):
    try:
        action()
        print(label, "SUCCEEDED")
        return True
    except BaseException as exc:
        print(label, "blocked:", type(exc).__name__)
        return False
leaks = [
    probe("read-source", lambda: open({str(source_nb)!r}).read()),
    probe("read-sibling", lambda: open({str(sibling)!r}).read()),
    probe("list-course", lambda: os.listdir({str(course)!r})),
    probe("read-gradebook", lambda: open({str(gradebook)!r}, "rb").read()),
    probe("write-canary", lambda: open({str(canary)!r}, "w").write("x")),
    probe("list-repo", lambda: os.listdir("/work/main/solutions")),
    probe("network", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2)),
    probe("proc", lambda: open("/proc/1/environ").read()),
    probe("shadow", lambda: open("/etc/shadow").read()),
    probe("userns", lambda: subprocess.run(["unshare", "-Ur", "true"], check=True)),
    probe("mount", lambda: subprocess.run(["mount", "-t", "tmpfs", "t", "/tmp"], check=True)),
]
def add_all(xs):
    return sum(xs) if any(leaks) else -1
"""
            ),
            0,
            "should be 3",
        ),
        Case(
            "score_writer",
            with_answer(
                f"""
import json, os, sqlite3
def add_all(xs):
    return -1
for attempt in (
    lambda: os.makedirs(os.path.dirname({str(own_result)!r}), exist_ok=True),
    lambda: open({str(own_result)!r}, "w").write(json.dumps({{"score": 102}})),
    lambda: sqlite3.connect({str(gradebook)!r}).execute("update grade set auto_score=102"),
):
    try:
        attempt()
    except BaseException as exc:
        print("blocked:", type(exc).__name__)
"""
            ),
            0,
            "should be 3",
        ),
        # -- tests that did not really run
        Case(
            "ipython_transformer",
            with_answer(
                """
def add_all(xs):
    return -1
try:
    get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
except NameError as exc:
    print("no IPython here:", exc)
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.instance().input_transformers_post.append(lambda lines: ["pass\\n"])
"""
            ),
            0,
            "should be 3",
        ),
        Case(
            "always_equal",
            with_answer(
                "class Anything:\n    def __eq__(self, other):\n        return True\n"
                "    def __bool__(self):\n        return True\n\n\n"
                "def add_all(xs):\n    return Anything()\n"
            ),
            0,
            "not a number",
            {"test_helper": "Anything overrides", "test_hidden": "Anything overrides"},
        ),
        Case(
            "float_subclass_eq",
            with_answer(
                "class Num(float):\n    def __eq__(self, other):\n        return True\n"
                "    __hash__ = float.__hash__\n\n\n"
                "def add_all(xs):\n    return Num(-1)\n"
            ),
            0,
            "not a number",
            {"test_helper": "overrides __eq__"},
        ),
        Case(
            "plain_subclass",
            with_answer(
                "class Num(float):\n    pass\n\n\ndef add_all(xs):\n    return Num(sum(xs))\n"
            ),
            0,
            "not a number",
            {"test_helper": "subclass of a built-in", "test_hidden": "subclass of a built-in"},
        ),
        Case(
            "helper_monkeypatch",
            with_answer(
                "import builtins\n\ndef add_all(xs):\n    return -1\n\n\n"
                "check_sum = lambda fn: True\nbuiltins.check_sum = check_sum\n"
                "globals()['check_sum'] = check_sum\n"
            ),
            0,
            "should be 3",
            {"test_helper": "check_sum failed"},
        ),
        Case(
            "module_patch",
            with_answer(
                "import math\n\n\ndef add_all(xs):\n"
                "    return sum(xs) if all(type(x) is int for x in xs) else 8.0\n\n\n"
                "math.isclose = lambda *args, **kwargs: True\n"
            ),
            0,
            "math.isclose was replaced",
        ),
        Case(
            "patch_during_call",
            with_answer(
                "import math\n_real = math.isclose\n\n\ndef add_all(xs):\n"
                "    math.isclose = lambda *args, **kwargs: True\n"
                "    return sum(xs) if all(type(x) is int for x in xs) else 8.0\n"
            ),
            0,
            "changed while the test ran",
            {"test_hidden": "floats"},
        ),
        Case(
            "settrace",
            with_answer(
                "import sys\n\n\ndef add_all(xs):\n    return -1\n\n\n"
                "def skip(frame, event, arg):\n    return None\n\n\nsys.settrace(skip)\n"
            ),
            0,
            "sys.settrace is not allowed",
        ),
        Case(
            "traceback_override",
            with_answer(
                "import sys, traceback\n\n\ndef add_all(xs):\n    return -1\n\n\n"
                "sys.excepthook = lambda *args: None\n"
                "traceback.print_exception = lambda *args, **kwargs: None\n"
            ),
            0,
            "should be 3",
        ),
        # -- edited notebooks
        Case(
            "duplicated_test_cell",
            _with_test_cells(
                lambda cells: cells + [c for c in cells if _grade_id(c) == "test_basic"]
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "deleted_test_cells",
            _with_test_cells(
                lambda cells: [c for c in cells if not _grade_id(c) or "test" not in _grade_id(c)]
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "edited_test_cells",
            with_answer(
                "def add_all(xs):\n    return -1\n",
                _with_test_cells(
                    lambda cells: [
                        dict(c, source="pass\n") if "test" in (_grade_id(c) or "") else c
                        for c in cells
                    ]
                ),
            ),
            0,
            "should be 3",
        ),
        Case(
            "retyped_answer_cell",
            _with_test_cells(
                lambda cells: [
                    {"cell_type": "markdown", "metadata": c["metadata"], "source": c["source"]}
                    if _grade_id(c) == "add_all"
                    else c
                    for c in cells
                ]
            ),
            0,
            "none of the 1 answer cells",
        ),
        Case(
            "locked_cell_edited",
            with_answer(
                "def add_all(xs):\n    return -1\n",
                _with_test_cells(
                    lambda cells: [
                        dict(c, source="import math\ndef check_sum(fn):\n    return True\n")
                        if _grade_id(c) == "setup"
                        else c
                        for c in cells
                    ]
                ),
            ),
            0,
            "should be 3",
            {"test_helper": "check_sum failed"},
        ),
        # -- broken files
        Case("invalid_json", b'{"cells": [ {"cell_type": ', 0, "not valid JSON"),
        Case(
            "non_utf8",
            _bytes(with_answer(CORRECT)).replace(b"# Tiny", b"# T\xff\xfeiny"),
            10,
            "all 3 tests passed",
        ),
        Case("empty_file", b"", 0, "the notebook file is empty"),
        Case("truncated", _bytes(with_answer(CORRECT))[:700], 0, "not valid JSON"),
        Case("not_a_notebook", b'{"cells": {"oops": 1}}', 0, "not an nbformat 4 notebook"),
        Case("deep_json", b"[" * 200_000 + b"]" * 200_000, 0, "nested too deeply"),
        Case(
            "wrong_kernel",
            dict(with_answer(CORRECT), metadata={"kernelspec": {"name": "julia-1.9"}}),
            10,
            "all 3 tests passed",
        ),
        Case(
            "renamed_notebook",
            {"my copy of tiny.ipynb": _bytes(with_answer(CORRECT))},
            10,
            "graded my copy of tiny.ipynb in place of tiny.ipynb",
        ),
        Case("other_assignment", _other_assignment(), 0, "none of the 1 answer cells"),
        Case(
            "other_assignment_renamed",
            {"ex9.ipynb": _bytes(_other_assignment())},
            0,
            "no notebook answers tiny.ipynb",
        ),
        Case("notebook_is_a_folder", {f"{NOTEBOOK}/inside.txt": b"x"}, 0, "no notebook answers"),
        Case(
            "null_byte_in_code",
            with_answer("def add_all(xs):\n    return sum(xs)\x00\n"),
            0,
            "null bytes",
        ),
        # -- runaway code
        Case(
            "giant_output",
            with_answer(CORRECT + "print('x' * 30_000_000)\n"),
            10,
            "all 3 tests passed",
        ),
        Case("giant_saved_output", _giant_saved_output(), 10, "all 3 tests passed"),
        Case("infinite_loop", with_answer("while True:\n    pass\n"), 0, "timed out"),
        Case(
            "ignores_interrupts",
            with_answer(
                "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "while True:\n    try:\n        pass\n    except BaseException:\n        pass\n"
            ),
            0,
            "timed out",
        ),
        Case(
            "memory_bomb",
            with_answer("hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))\n" + CORRECT),
            0,
            "MemoryError",
        ),
        Case(
            "fork_bomb",
            with_answer("import os\nwhile True:\n    os.fork()\n" + CORRECT),
            0,
            "BlockingIOError",
        ),
        Case(
            "disk_filler",
            with_answer(
                CORRECT + "import os\nfor place in ('/tmp/work', '/dev/shm', '/tmp'):\n"
                "    try:\n        for i in range(10_000):\n"
                "            with open(os.path.join(place, f'fill{i}'), 'wb') as f:\n"
                "                f.write(b'x' * (8 * 2**20))\n"
                "    except OSError as exc:\n        print(place, 'full:', exc)\n"
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "os_exit", with_answer("import os\nos._exit(0)\n" + CORRECT), 0, "exited with status 0"
        ),
        Case(
            "os_exit_in_function",
            with_answer("import os\n\n\ndef add_all(xs):\n    os._exit(3)\n"),
            0,
            "exited with status 3",
        ),
        Case(
            "segfault",
            with_answer("import faulthandler\nfaulthandler._sigsegv()\n" + CORRECT),
            0,
            "SIGSEGV",
        ),
        Case(
            "sys_exit_first",
            with_answer("import sys\nsys.exit(0)\n" + CORRECT),
            0,
            "SystemExit",
        ),
        Case(
            "sys_exit_after",
            with_answer(CORRECT + "import sys\nsys.exit(1)\n"),
            10,
            "all 3 tests passed",
        ),
        Case(
            "keyboard_interrupt",
            with_answer("def add_all(xs):\n    raise KeyboardInterrupt\n"),
            0,
            "KeyboardInterrupt",
        ),
        Case(
            "kills_the_grader",
            with_answer(
                CORRECT + "import os, signal\nfor target in (1, -1, os.getppid()):\n"
                "    try:\n        os.kill(target, signal.SIGKILL)\n"
                "    except OSError as exc:\n        print(target, exc)\n"
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "leaves_processes",
            with_answer(
                CORRECT + "import os, subprocess, time\n"
                f"subprocess.Popen(['sleep', '{sleeper_seconds(course)}'])\n"
                "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                "        time.sleep(1000)\n    os._exit(0)\n"
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "symlink_and_hardlink",
            {
                NOTEBOOK: _bytes(
                    with_answer(
                        "def add_all(xs):\n    for name in ('secret.txt', 'hard.txt'):\n"
                        "        try:\n"
                        f"            if {SECRET_MARK!r} in open(name).read():\n"
                        "                return sum(xs)\n"
                        "        except OSError:\n            pass\n"
                        "    return -1\n"
                    )
                ),
                "secret.txt": ("symlink", str(source_nb)),
                "hard.txt": ("hardlink", str(source_nb)),
            },
            0,
            "should be 3",
        ),
        Case(
            "frame_peek",
            with_answer(
                "import inspect, sys\n\n\ndef add_all(xs):\n    attempts = (\n"
                "        lambda: sys._getframe(2),\n"
                "        lambda: inspect.currentframe().f_back.f_back.f_code,\n    )\n"
                "    for attempt in attempts:\n        try:\n"
                "            print('peeked', attempt())\n"
                "        except RuntimeError as exc:\n            print('blocked:', exc)\n"
                "        except ValueError as exc:\n            print('blocked:', exc)\n"
                "    return sum(xs)\n"
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "ipython_magics",
            with_answer("%matplotlib inline\n!echo hi\n" + CORRECT + "%timeit add_all([1])\n"),
            10,
            "all 3 tests passed",
        ),
        Case(
            "ordinary_environment",
            with_answer(
                "import getpass, os, pwd, tempfile\nUSER = getpass.getuser()\n"
                "pwd.getpwuid(os.getuid())\nwith tempfile.TemporaryFile() as scratch:\n"
                "    scratch.write(b'ok')\n" + CORRECT
            ),
            10,
            "all 3 tests passed",
        ),
        # -- warnings and stderr never cost points
        Case(
            "warnings_and_stderr",
            with_answer(
                "import sys, warnings\nwarnings.simplefilter('error')\n\n\n"
                "def add_all(xs):\n    warnings.warn('this is deprecated', DeprecationWarning)\n"
                "    warnings.warn('careful')\n    print('noise on stderr', file=sys.stderr)\n"
                "    return sum(xs)\n"
            ),
            10,
            "all 3 tests passed",
        ),
    ]
    return cases


def sleeper_seconds(course: Path) -> int:
    """A sleep length unique to this course, to find the process it starts with `ps`."""
    return 1000 + zlib.crc32(str(course).encode()) % 9000


def _other_assignment() -> dict:
    nb = with_answer(CORRECT)
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader")
        if meta:
            meta["grade_id"] = "other_" + meta["grade_id"]
    return nb


def _giant_saved_output() -> dict:
    nb = with_answer(CORRECT)
    for cell in nb["cells"]:
        if _grade_id(cell) == "add_all":
            cell["outputs"] = [
                {"output_type": "stream", "name": "stdout", "text": "y" * 30_000_000}
            ]
    return nb
