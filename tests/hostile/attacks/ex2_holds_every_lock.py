"""Holds every lock and semaphore its process can reach and writes into every shared page it
has (tqdm's write lock, which torch.fx's Interpreter takes, among them), then answers correctly.

assignment: ex2_node_dump
expected: 10
why: each submission runs in a fresh child of the sandbox's template, which holds no shared
writable page (it refuses to serve with one): what this process holds or writes is its own and
ends with it, so the classmate graded next by the same worker keeps full marks
(tests/test_grading.py, tests/test_safegrade_sharing.py).
"""

# %% before: dump_nodes
import ctypes
import fcntl
import gc
import os

import tqdm

MARK = b"SHARED-PAGE-MARK-7f3a"
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def mappings():
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(part, 16) for part in fields[0].split("-"))
            yield start, end, fields[1], fields[5] if len(fields) > 5 else ""


def write_shared_pages():
    written = []
    for start, end, perms, name in mappings():
        if perms[3] != "s":
            continue
        if perms[1] == "w" or libc.mprotect(start, end - start, perms.count("x") * 4 | 3) == 0:
            ctypes.memmove(start, MARK, len(MARK))
            written.append(name or hex(start))
    return written


def hold_locks():
    held = 0
    tqdm.tqdm.get_lock().acquire()
    for thing in gc.get_objects():
        if type(thing).__module__ == "multiprocessing.synchronize" and hasattr(thing, "acquire"):
            held += bool(thing.acquire(False))
    return held


def lock_mapped_files():
    locked = 0
    for name in sorted({name for *_, name in mappings() if name.startswith("/")}):
        try:
            fd = os.open(name, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked += 1
        except OSError:
            pass
    return locked


print("wrote", write_shared_pages(), "held", hold_locks(), "flocked", lock_mapped_files() > 0)
