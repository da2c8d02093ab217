"""What instructors' probes and checks use, on both sides of the boundary (README.md, "Writing
an exercise"). A probe runs beside the learner's code and returns data; a check judges that data
in a trusted process. Never imports nbgrader.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import warnings
from pathlib import Path

from .data import Ref


def load(path: str | Path):
    """The module in the file at path, imported once per process under a name of its own."""
    path = Path(path).resolve()
    name = "safegrade_" + hashlib.sha256(str(path).encode()).hexdigest()[:16] + "_" + path.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def sibling(file: str, stem: str):
    """The module <stem>.py beside `file` (checks.py uses it to reach its probes.py)."""
    return load(Path(file).resolve().with_name(f"{stem}.py"))


def call_probe(probes, grade_id: str, namespace: dict):
    """Run one probe; warnings are recorded, never raised or printed (they never cost points)."""
    probe = getattr(probes, grade_id, None)
    if probe is None:
        raise LookupError(f"probes.py has no probe for {grade_id!r}")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        return probe(namespace)


def learner(namespace: dict, name: str):
    """The learner's definition of `name`, or a clear NameError."""
    if name not in namespace:
        raise NameError(f"{name} is not defined: run the cell that defines it")
    return namespace[name]


def target_name(target: object) -> str:
    """A node's target as text: strings as they are, functions as `print(graph)` names them."""
    if isinstance(target, str):
        return target
    import torch.fx

    try:
        return torch.fx.Node._pretty_print_target(target)
    except Exception:  # noqa: BLE001 - an odd callable: its repr will do
        return repr(target)


def describe(gm) -> dict:
    """A GraphModule as data: its nodes (targets named, other nodes as Refs by position, and the
    type of a call_module's submodule), its code, and the code its graph would generate now."""
    import torch.fx

    if not isinstance(gm, torch.fx.GraphModule):
        return {"type": type(gm).__qualname__}
    nodes = list(gm.graph.nodes)
    position = {node: index for index, node in enumerate(nodes)}
    described = []
    for node in nodes:
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: Ref(position[n]))
        row = {"name": node.name, "op": node.op, "target": target_name(node.target)}
        row.update(args=args, kwargs=kwargs)
        if node.op == "call_module":
            module = gm.get_submodule(node.target)
            row["module"] = f"{type(module).__module__}.{type(module).__qualname__}"
        described.append(row)
    try:
        gm.graph.lint()
        lint = None
    except Exception as exc:  # noqa: BLE001 - reported as data
        lint = f"{type(exc).__name__}: {exc}"
    code = {"code": gm.code, "graph_code": gm.graph.python_code("self").src}
    return {"type": "GraphModule", "nodes": described, "lint": lint, **code}
