"""Hostile, broken and honest submissions for the tiny course, each with the score and the text
its one-line reason must contain.

``build_cases(course, port)`` needs the course root (some submissions aim at its real files:
the checks, the gradebook, a sibling's submission) and the port of a listener the test opens on
the host's loopback (the sandbox must not reach it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from tiny_course import (
    ASSIGNMENT,
    CHECKS,
    CORRECT,
    NOTEBOOK,
    PROBES,
    SECRET_MARK,
    release_notebook,
    with_answer,
)

WRONG = "def add_all(xs):\n    return -1\n"


@dataclass
class Case:
    name: str
    submission: object  # a notebook dict, raw bytes, or {relative path: content} (tiny_course)
    score: float
    reason: str  # must appear in the recorded one-line reason


def grade_id(cell: dict) -> str | None:
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


def edited(change, answer: str = CORRECT) -> dict:
    nb = with_answer(answer)
    nb["cells"] = change(nb["cells"])
    return nb


def added_cell(source: str, before: str = "add_all") -> callable:
    """A learner's own code cell, inserted before the cell with grade_id `before`."""
    new = {"cell_type": "code", "metadata": {}, "source": source, "outputs": []}
    new["execution_count"] = None

    def change(cells):
        at = next(i for i, cell in enumerate(cells) if grade_id(cell) == before)
        return cells[:at] + [new] + cells[at:]

    return change


def draft_above(cells: list) -> list:
    """A copy of the answer cell, with a wrong draft in it, above the final answer."""
    draft = "def add_all(xs):\n    return 0  # draft\n"
    at = next(i for i, cell in enumerate(cells) if grade_id(cell) == "add_all")
    return cells[:at] + [dict(cells[at], source=draft)] + cells[at:]


def bytes_not_utf8() -> bytes:
    """A correct notebook whose markdown cell holds two bytes that are not UTF-8."""
    nb = with_answer(CORRECT)
    note = {"cell_type": "markdown", "id": "damaged", "metadata": {}, "source": "Notes: MARK"}
    nb["cells"].insert(0, note)
    return json.dumps(nb).encode().replace(b"MARK", b"caf\xe9 \xff")


def honest_cases() -> list[Case]:
    helper = "import math\n\n\ndef total(xs):\n    return math.fsum(xs) if xs else 0\n"
    return [
        Case("correct", with_answer(CORRECT), 10, "all 3 tests passed"),
        Case("starter", release_notebook(), 0, "NotImplementedError"),
        Case("wrong", with_answer("def add_all(xs):\n    return sum(xs) + 1\n"), 0, "should be 3"),
        Case("ints_only", with_answer("def add_all(xs):\n    return int(sum(xs))\n"), 6, "floats"),
        Case(
            "helper_in_added_cell",
            edited(added_cell(helper), "def add_all(xs):\n    return total(xs)\n"),
            10,
            "all 3 tests passed",
        ),
        Case("draft_above_final", edited(draft_above), 10, "all 3 tests passed"),
        Case("bytes_not_utf8_in_markdown", bytes_not_utf8(), 10, "2 byte(s) that are not UTF-8"),
        Case(
            "warnings_and_stderr",
            with_answer(
                "import sys, warnings\nwarnings.simplefilter('error')\n\n\n"
                "def add_all(xs):\n    warnings.warn('this is deprecated', DeprecationWarning)\n"
                "    print('noise on stderr', file=sys.stderr)\n    return sum(xs)\n"
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "magics",
            with_answer("%time x = 1\n!echo hi\n" + CORRECT + "%timeit -n1 -r1 add_all([1])\n"),
            10,
            "all 3 tests passed",
        ),
        Case(
            "test_cells_deleted",
            edited(lambda cells: [c for c in cells if "test" not in (grade_id(c) or "")]),
            10,
            "all 3 tests passed",
        ),
        Case(
            "answer_cell_made_markdown",
            edited(
                lambda cells: [
                    dict(c, cell_type="markdown") if grade_id(c) == "add_all" else c for c in cells
                ]
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "kernel_renamed",
            dict(
                with_answer(CORRECT),
                metadata={"kernelspec": {"name": "julia", "display_name": "Julia"}},
            ),
            10,
            "all 3",
        ),
        Case("sys_exit_after", with_answer(CORRECT + "import sys\nsys.exit(1)\n"), 10, "all 3"),
    ]


def forged_verdicts() -> str:
    """Code that writes passing verdicts and probe records to every inherited pipe."""
    verdicts = [{"done": True, "passed": True, "test": t} for t in ("test_basic", "test_hidden")]
    records = [{"cell": i, "probe": t, "value": -1} for i in range(9) for t in ("test_basic",)]
    return (
        "import json, os\n"
        f"lines = {json.dumps([*verdicts, *records])!r}\n"
        "for fd in range(3, 64):  # every inherited pipe, as the old runner's verdict pipe was\n"
        "    try:\n"
        "        os.write(fd, ('\\n'.join(map(json.dumps, json.loads(lines))) + '\\n').encode())\n"
        "    except OSError:\n        pass\n"
    )


def frame_and_gc_walk() -> str:
    """An answer that looks for the probes' and the checks' text in every frame and object."""
    checks_hash = hashlib.sha256(CHECKS.encode()).hexdigest()  # its text, wherever it might be
    probes_hash = hashlib.sha256(PROBES.encode()).hexdigest()  # in the sandbox: the walk works
    return (
        "import gc, hashlib, sys\n\n\ndef texts():\n    frame = sys._getframe()\n"
        "    while frame is not None:\n"
        "        yield from [repr(frame.f_code.co_consts), *map(repr, frame.f_locals.values())]\n"
        "        frame = frame.f_back\n"
        "    for thing in gc.get_objects():  # every string held by a dict, list or tuple\n"
        "        items = thing.values() if isinstance(thing, dict) else thing\n"
        "        if isinstance(thing, dict | list | tuple):\n"
        "            yield from (item for item in items if isinstance(item, str))\n\n\n"
        "def add_all(xs):\n    found = set()\n    walk = texts()\n    while True:\n        try:\n"
        "            found.add(hashlib.sha256(next(walk).encode('utf-8', 'replace')).hexdigest())\n"
        "        except StopIteration:\n            break\n        except BaseException:\n"
        "            continue\n"
        f"    print('probes', {probes_hash!r} in found, 'checks', {checks_hash!r} in found)\n"
        "    return -1\n"
    )


def checks_reader(course: Path) -> str:
    """An answer that looks for the hidden checks' file on every path it can reach."""
    checks = course / "solutions" / ASSIGNMENT / "checks.py"
    return (
        "import glob, os\n\n\ndef add_all(xs):\n"
        "    found = glob.glob('/opt/**/*.py', recursive=True)\n"
        "    found += glob.glob('/tmp/**', recursive=True)\n"
        f"    for path in [{str(checks)!r}] + found:\n"
        "        try:\n"
        f"            if {SECRET_MARK!r} in open(path).read():\n"
        "                print('read the checks at', path)\n"
        "        except OSError as exc:\n            print('no:', type(exc).__name__)\n"
        "    return -1\n"
    )


def cheating_cases(course: Path) -> list[Case]:
    forged, frames, reader = forged_verdicts(), frame_and_gc_walk(), checks_reader(course)
    return [
        Case(
            "forged_then_exit",  # the forged records are rejected; the real ones never come
            with_answer(WRONG + forged + "os._exit(0)\n"),
            0,
            "exited with status 0",
        ),
        Case("forged_then_wrong", with_answer(WRONG + forged), 0, "should be 3"),
        Case("frame_and_gc_walk", with_answer(frames), 0, "should be 3"),
        Case("reads_the_checks", with_answer(reader), 0, "should be 3"),
        Case(
            "always_equal",
            with_answer(
                "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
                "    def __bool__(self):\n        return True\n\n\n"
                "def add_all(xs):\n    return Anything()\n"
            ),
            0,
            "not a number",
        ),
        Case(
            "float_subclass",
            with_answer(
                "class Num(float):\n    pass\n\n\ndef add_all(xs):\n    return Num(sum(xs))\n"
            ),
            6,
            "floats",
        ),
        Case(
            "patches_math_and_builtins",
            with_answer(
                "import builtins, math\nmath.isclose = lambda *a, **k: True\n"
                "builtins.isinstance = lambda *a: True\n" + WRONG
            ),
            0,
            "were Python's built-ins replaced?",
        ),
        Case(
            "ipython_hooks",
            with_answer(
                "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\n"
                "import sys\nsys.settrace(lambda *a: None)\n" + WRONG
            ),
            0,
            "should be 3",
        ),
    ]


def isolation_case(course: Path, port: int) -> Case:
    """Every probe prints `<label> blocked: <why>` or `<label> SUCCEEDED`."""
    paths = {
        "read-checks": course / "solutions" / ASSIGNMENT / "checks.py",
        "read-source": course / "solutions" / ASSIGNMENT / NOTEBOOK,
        "read-sibling": course / "submitted" / "correct" / ASSIGNMENT / NOTEBOOK,
        "read-gradebook": course / "gradebook.db",
    }
    code = "import ctypes, os, socket\nlibc = ctypes.CDLL(None, use_errno=True)\n\n\n"
    code += (
        "def probe(label, action):\n    try:\n        result = action()\n"
        "    except OSError as exc:\n        print(label, 'blocked:', type(exc).__name__)\n"
        "        return\n    if result == -1:\n"
        "        print(label, 'blocked:', os.strerror(ctypes.get_errno()))\n"
        "    else:\n        print(label, 'SUCCEEDED')\n\n\n"
    )
    for label, path in paths.items():
        code += f"probe({label!r}, lambda: open({str(path)!r}, 'rb').read())\n"
    code += f"probe('write-canary', lambda: open({str(course / 'CANARY')!r}, 'w').write('x'))\n"
    code += (
        f"probe('network', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=3))\n"
    )
    code += "probe('proc-environ', lambda: open('/proc/1/environ', 'rb').read())\n"
    code += "probe('userns', lambda: libc.unshare(0x10000000))\n"
    code += "probe('mount', lambda: libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))\n"
    code += "probe('ptrace', lambda: libc.ptrace(16, 1, None, None))\n"
    return Case("spy", with_answer(code + WRONG), 0, "should be 3")


def runaway_cases() -> list[Case]:
    return [
        Case(
            "loop_in_answer_cell",
            with_answer("while True:\n    pass\n"),
            0,
            "add_all is not defined",
        ),
        Case(
            "loop_in_function",
            with_answer("def add_all(xs):\n    while True:\n        pass\n"),
            0,
            "ran longer than",
        ),
        Case(
            "ignores_interrupts",
            with_answer(
                "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                "while True:\n    pass\n"
            ),
            0,
            "time budget",
        ),
        Case(
            "memory_bomb",
            with_answer("hog = []\nwhile True:\n    hog.append(bytearray(64 << 20))\n" + CORRECT),
            0,
            "add_all is not defined",
        ),
        Case(
            "fork_bomb",
            with_answer(
                "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(60)\n"
                + CORRECT
            ),
            0,
            "add_all is not defined",
        ),
        Case(
            "disk_filler",
            with_answer(
                CORRECT + "for place in ('/tmp/work', '/dev/shm'):\n    try:\n"
                "        for i in range(1000):\n"
                "            with open(f'{place}/f{i}', 'wb') as f:\n"
                "                f.write(b'x' * (8 << 20))\n    except OSError as exc:\n"
                "        print(place, 'full:', exc)\n"
            ),
            10,
            "all 3 tests passed",
        ),
    ]


def tmp_cases() -> list[Case]:
    """What a submission leaves in its /tmp (its own, gone with it) must not stop the next one."""
    deep = CORRECT + (  # the answer first: a slow machine may stop the loop at the cell timeout
        "import os\nos.chdir('/tmp')\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
        "os.chdir('/tmp/work')\n"
    )
    return [
        Case("deep_tree_in_tmp", with_answer(deep), 10, "all 3 tests passed"),
        Case(
            "unremovable_tmp",  # nobody could empty it: it is unmounted with the child
            with_answer(
                CORRECT + "import os\nos.makedirs('/tmp/locked/in')\nos.chmod('/tmp/locked', 0)\n"
            ),
            10,
            "all 3 tests passed",
        ),
    ]


def exit_cases() -> list[Case]:
    return [
        Case(
            "os_exit", with_answer("import os\nos._exit(0)\n" + CORRECT), 0, "exited with status 0"
        ),
        Case(
            "os_exit_in_function",
            with_answer("import os\n\n\ndef add_all(xs):\n    os._exit(3)\n"),
            0,
            "status 3",
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
            "add_all is not defined",
        ),
        Case(
            "keyboard_interrupt",
            with_answer("def add_all(xs):\n    raise KeyboardInterrupt\n"),
            0,
            "KeyboardInterrupt",
        ),
        Case(
            "kills_everything",
            with_answer(
                CORRECT + "import os, signal\nfor target in (1, -1, os.getppid()):\n    try:\n"
                "        os.kill(target, signal.SIGKILL)\n"
                "    except OSError as exc:\n        print(exc)\n"
            ),
            10,
            "all 3 tests passed",
        ),
        Case(
            "leaves_processes",
            with_answer(
                CORRECT + "import os, subprocess\nsubprocess.Popen(['sleep', '4321'])\n"
                "if os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '4322'])\n"
            ),
            10,
            "all 3 tests passed",
        ),
    ]


def output_cases() -> list[Case]:
    return [
        Case(  # 6 MiB of NUL characters: 36 MiB once JSON-escaped, over the 32 MiB cap
            "huge_result_after_escaping",
            with_answer("def add_all(xs):\n    return '\\x00' * (6 << 20)\n"),
            0,
            "DataTooLarge: the data is 36 MiB once encoded",
        ),
        Case(
            "giant_output",
            with_answer(CORRECT + "print('x' * 30_000_000)\n"),
            10,
            "all 3 tests passed",
        ),
        Case(
            "surrogates_everywhere",
            with_answer(
                "print('\\udcff lone')\n\n\ndef add_all(xs):\n    raise ValueError('bad \\udcff')\n"
            ),
            0,
            "ValueError: bad",
        ),
    ]


def file_cases(course: Path) -> list[Case]:
    good = json.dumps(with_answer(CORRECT)).encode()
    reads_secret = (
        "def add_all(xs):\n    try:\n"
        f"        if {SECRET_MARK!r} in open('secret.txt').read():\n            return sum(xs)\n"
        "    except OSError:\n        pass\n    return -1\n"
    )
    tiny_outputs = with_answer(CORRECT)
    for cell in tiny_outputs["cells"]:
        if grade_id(cell) == "add_all":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "y"}] * 600_000
    return [
        Case(
            "symlinks_to_the_checks",
            {
                NOTEBOOK: json.dumps(with_answer(reads_secret)).encode(),
                "secret.txt": ("symlink", str(course / "solutions" / ASSIGNMENT / "checks.py")),
                "gradebook.db": ("symlink", str(course / "gradebook.db")),
            },
            0,
            "secret.txt was left out",
        ),
        Case(
            "fifo_and_dangling_link",
            {NOTEBOOK: good, "pipe": ("fifo",), "gone": ("symlink", "/nope")},
            10,
            "pipe was left out",
        ),
        Case(
            "odd_file_names",
            {NOTEBOOK: good, b"caf\xe9 \x01.txt": b"data", "new\nline.txt": b"x"},
            10,
            "all 3",
        ),
        Case("renamed_non_utf8", {b"t\xffiny copy.ipynb": good}, 10, "in place of tiny.ipynb"),
        Case("many_tiny_outputs", tiny_outputs, 10, "graded without its outputs"),
        Case("invalid_json", b'{"cells": [ {"cell_type": ', 0, "cut off or corrupt: ask for a new"),
        Case("empty_file", b"", 0, "could not be graded: the notebook is cut off or corrupt"),
        Case("deep_json", b"[" * 100_000 + b"]" * 100_000, 0, "left out (100000 JSON values"),
        Case("no_notebook", {"notes.txt": b"I could not do it"}, 0, "holds no notebook of this"),
        Case(
            "null_byte",
            with_answer("def add_all(xs):\n    return sum(xs)\x00\n"),
            0,
            "add_all is not defined",
        ),
    ]


def tangled_markup() -> dict:
    """A correct notebook with markdown that bleach and nbconvert take minutes over: 30,000
    nested <div>s, a table of 20,000 rows, and 15 cells that print 20,000 '<' each (each
    escaped on the page)."""
    nb = with_answer(CORRECT)
    deep = "<div>" * 30_000 + "DEEP" + "</div>" * 30_000
    table = "|a|b|\n|-|-|\n" + "|x|y|\n" * 20_000
    markdown = {"cell_type": "markdown", "metadata": {}}
    printing = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    printing["source"] = "print('<' * 20_000)"
    nb["cells"][:0] = [markdown | {"source": deep}, markdown | {"source": table}]
    nb["cells"][3:3] = [printing] * 15
    return nb


def build_cases(course: Path, port: int = 9) -> list[Case]:
    cases = honest_cases() + cheating_cases(course) + [isolation_case(course, port)]
    cases += runaway_cases() + tmp_cases() + exit_cases() + output_cases()
    cases.append(Case("tangled_markup", tangled_markup(), 10, "all 3 tests passed"))
    return cases + file_cases(course)


# ----------------------------------------------------------------------------- one after another

VICTIM_MARK = "VICTIM-ANSWER-TEXT-91c2"  # in the first student's answer only
SHM_KEY, MSG_KEY = 0x5AFE, 0x5AFF
IPC = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.shmat.restype = ctypes.c_void_p\n"
)


def neighbour_cases() -> list[Case]:
    """Graded in this order by ONE sandbox: a victim, a student who leaves IPC objects and
    files behind, then students who look for what the earlier ones left."""
    victim = (
        f"MARK = {VICTIM_MARK!r}\n\n\ndef victim_only_helper(xs):\n    return sum(xs)\n\n\n"
        "def add_all(xs):\n    return victim_only_helper(xs)\n"
    )
    leaves = (
        CORRECT
        + IPC
        + (
            f"shm = libc.shmget({SHM_KEY}, 1 << 20, 0o1666)\n"
            "ctypes.memmove(libc.shmat(shm, None, 0), b'left by a2', 10)\n"
            f"queue = libc.msgget({MSG_KEY}, 0o1666)\n"
            "message = (ctypes.c_long * 3)(1, int.from_bytes(b'a2 says', 'little'), 0)\n"
            "print('sent', libc.msgsnd(queue, message, 16, 0), shm >= 0, queue >= 0)\n"
            "for place in ('/tmp/left_by_a2', '/dev/shm/left_by_a2'):\n"
            "    open(place, 'w').write('a2')\n"
        )
    )
    return [
        Case("a1_victim", with_answer(victim), 10, "all 3 tests passed"),
        Case("a2_leaves_ipc_and_files", with_answer(leaves), 10, "all 3 tests passed"),
        Case("b1_memory_scan", with_answer(memory_scan() + WRONG), 0, "should be 3"),
        Case("b2_plagiarist", with_answer(plagiarist()), 0, "should be 3"),
        Case("b3_looks_for_leftovers", with_answer(CORRECT + leftovers()), 10, "all 3 tests"),
        Case("b4_shared_mmap_4g", with_answer(CORRECT + shared_mmap()), 10, "all 3 tests"),
    ]


def memory_scan() -> str:
    """Reads every writable mapping of its own process, looking for the victim's mark."""
    prefix = VICTIM_MARK[:-4]  # the suffix after it is the victim's alone
    return (
        "import ctypes, re\nfound, scanned = set(), 0\n"
        f"pattern = re.escape({prefix!r}.encode()) + rb'(\\w\\w\\w\\w)'\n"
        "for line in open('/proc/self/maps'):\n"
        "    parts = line.split()\n"
        "    if parts[1].startswith('rw') and (len(parts) < 6 or parts[5][0] == '['):\n"
        "        if parts[-1] in ('[vvar]', '[vsyscall]', '[vvar_vclock]'):\n"
        "            continue\n"
        "        start, end = (int(x, 16) for x in parts[0].split('-'))\n"
        "        data = ctypes.string_at(start, end - start)\n"
        "        scanned += len(data)\n"
        "        found.update(re.findall(pattern, data))\n"
        "print('scanned MiB', scanned >> 20, 'suffixes', sorted(found))\n"
    )


def plagiarist() -> str:
    """No code of its own: runs any add_all it finds among the process's objects."""
    return (
        "import gc\n\nfor text in [o for o in gc.get_objects() if isinstance(o, dict)]:\n"
        "    for value in list(text.values()):\n"
        "        if isinstance(value, str) and 'victim_only_helper' + '(xs)' in value:\n"
        "            exec(value, globals())\n"
        "print('copied' if 'victim_only_helper' in globals() else 'nothing to copy')\n"
        "if 'add_all' not in globals():\n" + "\n".join("    " + line for line in WRONG.split("\n"))
    )


def leftovers() -> str:
    """Looks for the SysV objects and files an earlier student left."""
    return IPC + (
        "import os\n"
        f"print('shm', libc.shmget({SHM_KEY}, 0, 0), 'msg', libc.msgget({MSG_KEY}, 0))\n"
        "for kind in ('shm', 'msg', 'sem'):\n"
        "    print(kind, 'objects', len(open(f'/proc/sysvipc/{kind}').readlines()) - 1)\n"
        "print('files', os.listdir('/tmp'), os.listdir('/dev/shm'))\n"
    )


def shared_mmap() -> str:
    """A child process touches a 4 GiB shared mapping, noting its progress in a file."""
    return (
        "import mmap, os, time\npid = os.fork()\nif pid == 0:\n    try:\n"
        "        area = mmap.mmap(-1, 4 << 30, flags=mmap.MAP_SHARED)\n"
        "        chunk = b'x' * (64 << 20)\n        for mib in range(64, 4097, 64):\n"
        "            area.write(chunk)\n            open('progress', 'w').write(str(mib))\n"
        "    finally:\n        os._exit(0)\n"
        # a second of wall time, however loaded the machine: the cell ends well within its
        # 2 s timeout and prints what the child reached
        "deadline = time.monotonic() + 1.0\n"
        "while time.monotonic() < deadline:\n    done, status = os.waitpid(pid, os.WNOHANG)\n"
        "    if done:\n        break\n    time.sleep(0.01)\n"
        "touched = open('progress').read() if os.path.exists('progress') else 0\n"
        "print('child', 'ended' if done else 'running', status, 'touched MiB', touched)\n"
    )


def honest_style_cases() -> list[Case]:
    """Valid ways to write the answer that a kernel (plain nbgrader) accepts."""
    module = {"helper_mod.py": CORRECT.encode()}
    package = {"mypkg/__init__.py": b"", "mypkg/sums.py": CORRECT.encode()}
    writefile = "%%writefile written_mod.py\n" + CORRECT
    faults = "import faulthandler\nfaulthandler.enable()\n" + CORRECT
    return [
        Case("h_module_beside", beside("from helper_mod import add_all\n", module), 10, "all 3"),
        Case("h_package_beside", beside("from mypkg.sums import add_all\n", package), 10, "all 3"),
        Case(
            "h_writefile",
            edited(added_cell(writefile), "from written_mod import add_all\n"),
            10,
            "all 3",
        ),
        Case("h_faulthandler", with_answer(faults), 10, "all 3"),
    ]


def beside(answer: str, files: dict) -> dict:
    return {NOTEBOOK: json.dumps(with_answer(answer)).encode(), **files}


# ----------------------------------------------------------------------------- at the caps

FRAMES_AT_THE_CAPS = """import json, os, sys


def add_all(xs):
    frame = sys._getframe()
    while frame is not None and "nonce" not in frame.f_locals:
        frame = frame.f_back
    nonce, index = frame.f_locals["nonce"], frame.f_locals["index"]
    cells = frame.f_locals["job"]["cells"]
    for cell in (index, index + 1):  # two frames of eleven million values: the records' cap
        record = {"cell": cell, "probe": cells[cell].get("probe"), "stdout": TEXT}
        header = json.dumps(record, ensure_ascii=False).encode()
        room = FRAME - len(nonce) - 4 - len(header)
        body = b"[" + b"{}," * (room // 3 - 1) + b"{}"
        body += b" " * (room - len(body) - 1) + b"]"
        payload = nonce.encode() + len(header).to_bytes(4, "big") + header + body
        view = memoryview(len(payload).to_bytes(4, "big") + payload)
        while view:
            view = view[os.write(3, view):]
    os._exit(0)
"""


def memory_cases() -> list[Case]:
    """Submissions that send the grading process as much as its caps let through: two record
    frames at the frame cap (eleven million values each) with headers of about the header cap,
    a flood of output in 400 cells of its own, and two notebooks at the size and value caps."""
    from grader.safegrade.grading_limits import LIMITS

    text = chr(0x1F600) * (LIMITS.record_header_bytes // 4 - 1000)
    frames = f"TEXT = {text!r}\nFRAME = {(LIMITS.frame_bytes - 4)}\n" + FRAMES_AT_THE_CAPS
    flood = with_answer(CORRECT)
    printing = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    printing["source"] = f"print(chr(0x1F600) * {LIMITS.cell_output_chars})"
    flood["cells"][1:1] = [printing] * 400
    big = with_answer(CORRECT)
    big["cells"][0]["metadata"]["values"] = [{}] * (LIMITS.notebook_values - 1000)
    big["cells"][0]["source"] = chr(0x1F600) + "x" * (LIMITS.strip_over_bytes - 100_000)
    at_the_caps = json.dumps(big, ensure_ascii=False).encode()
    return [
        Case("m_frames_at_the_caps", with_answer(frames), 0, "JSON values"),
        Case("m_output_flood", flood, 10, "all 3 tests passed"),
        Case("m_notebook_at_the_caps", at_the_caps, 10, "all 3 tests passed"),
        Case("m_notebook_at_the_caps_too", at_the_caps, 10, "all 3 tests passed"),
    ]
