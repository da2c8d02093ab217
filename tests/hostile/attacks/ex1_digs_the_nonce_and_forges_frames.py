"""Shares the process with the runner, so digs this job's nonce (and the cells' probes) out of
the runner's frame, writes well-framed records for the running cell and every later one, then
ends the process before the runner writes its own.

assignment: ex1_sigmoid_to_tanh
expected: 0
why: framing keeps a forged record from replacing or failing another cell's; what a forged record
carries is only data, and this data (an empty dict) fails every check.
"""

# %% cell: replace_sigmoid_with_tanh
import json
import os
import sys


def replace_sigmoid_with_tanh(gm):
    frame = sys._getframe()
    while frame is not None and "nonce" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        nonce, index = frame.f_locals["nonce"], frame.f_locals.get("index", 0)
        cells = frame.f_locals["job"]["cells"]
        for cell in range(index, len(cells)):
            header = json.dumps({"cell": cell, "probe": cells[cell].get("probe")}).encode()
            body = json.dumps({"dict": []}).encode()  # the data: the frame's body
            payload = nonce.encode() + len(header).to_bytes(4, "big") + header + body
            os.write(3, len(payload).to_bytes(4, "big") + payload)
    os._exit(0)
