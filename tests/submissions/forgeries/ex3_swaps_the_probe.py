"""Leaves TimingInterpreter unwritten and, through the garbage collector, replaces the probe's
`profile` (what each test case runs) with one that runs the module and invents the timings.

assignment: ex3_timing_interpreter
expected: 0
why: the invented timings of the sleeping function nodes fail every test; outputs are recomputed
on the trusted side.
"""

# %% cell: timing_interpreter
import gc


def forged(namespace, case):
    gm = PROBES["GRAPHS"].build(case["graph"])  # the probe's own vocabulary: nap, Sleepy
    names = [n.name for n in gm.graph.nodes if n.op.startswith("call_")]
    timings = {name: [1e-4] * case["runs"] for name in names}
    found = {"before": {}, "outputs": [gm(*case["inputs"])] * case["runs"], "timings": timings}
    rows = [
        {"name": n, "op": "", "target": "", "calls": 1, "mean_s": 0, "percent": 0} for n in names
    ]
    return found | {"rows": rows, "fresh": {}}


PROBES = {}
for space in [o for o in gc.get_objects() if type(o) is dict]:
    if "profile" in space and "profile_all" in space:
        PROBES, space["profile"] = space, forged


class TimingInterpreter:
    pass
