"""Looks for the hidden checks everywhere it can think of: files (the course's source folder as
the kernel's environment names it, the folders above, /opt, /tmp) and every loaded module, prints
what it finds, and returns the module unchanged. A file or module is the checks when it has what
every checks.py has (`inputs(grade_id, seed)` and a `test_...` function per test cell);
tests/test_safegrade.py shows that the search finds the checks where they are.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the checks never enter the sandbox; the pass does nothing.
"""

# %% cell: replace_sigmoid_with_tanh
import os
import sys

PLACES = [os.environ.get("SAFEGRADE_SOURCE", "/nowhere"), "..", "../..", "/opt", "/tmp"]


def checks_files(places=PLACES, most_folders=20_000):
    """Every checks.py under places that defines inputs(grade_id, ...); a bounded walk."""
    for place in places:
        for folder, _, files in os.walk(place):
            most_folders -= 1
            if most_folders < 0:
                return
            if "checks.py" in files:
                try:
                    text = open(os.path.join(folder, "checks.py")).read()
                except OSError:
                    continue
                if "def inputs(grade_id" in text:
                    yield os.path.join(folder, "checks.py")


def loaded_checks():
    """Every loaded module that looks like an exercise's checks.py."""
    for module in list(sys.modules.values()):
        names = vars(module) if module is not None else {}
        tests = [name for name in names if name.startswith("test_") and callable(names[name])]
        if callable(names.get("inputs")) and tests:
            yield module


for path in checks_files():
    print("FOUND", path)


def replace_sigmoid_with_tanh(gm):
    for module in loaded_checks():
        print("FOUND the checks module", module)
    return gm
