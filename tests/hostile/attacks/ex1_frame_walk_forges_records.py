"""The issue's attack, aimed at this grader: from inside the probe's call, walk the frames to
the runner, find the stream it writes records to, write "passed" verdicts and records for every
cell, and exit before the real records are written.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: a verdict is nothing the sandbox can write; the forged records are data, and their data
(an empty graph) fails every check.
"""

# %% cell: replace_sigmoid_with_tanh
import json
import os
import sys


def replace_sigmoid_with_tanh(gm):
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if hasattr(value, "write") and hasattr(value, "fileno"):
                for cell in range(40):
                    record = {"cell": cell, "done": True, "passed": True, "value": {"dict": []}}
                    try:
                        value.write(json.dumps(record) + "\n")
                        value.flush()
                    except Exception:
                        pass
        frame = frame.f_back
    os._exit(0)
