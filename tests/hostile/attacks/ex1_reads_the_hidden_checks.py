"""Looks for the hidden checks everywhere it can think of (the course's source folder as the
kernel's environment names it, relative paths, every module and frame), prints what it finds,
and returns the module unchanged.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: the checks never enter the sandbox; the pass does nothing.
"""

import glob
import os
import sys


# %% cell: replace_sigmoid_with_tanh
def replace_sigmoid_with_tanh(gm):
    places = [os.environ.get("SAFEGRADE_SOURCE", "/nowhere"), "..", "../..", "/opt", "/tmp"]
    for place in places:
        for path in glob.glob(os.path.join(place, "**", "checks.py"), recursive=True):
            print("FOUND", path, open(path).read()[:200])
    for module in list(sys.modules.values()):
        if "TANH_MODELS" in vars(module):
            print("FOUND the checks module", module)
    return gm
