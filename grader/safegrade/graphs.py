"""Graphs as data, on both sides of the boundary: `describe` turns a GraphModule into data and
`build` turns such data back into a GraphModule (README.md, "Writing an exercise").

The functions and module types a graph may use are captured here when this module is first
imported: in the sandbox that is before any learner's cell runs (the worker imports what probes
import before it takes a job), so a learner who rebinds `torch.sigmoid` or `nn.Sigmoid` changes
neither what a probe builds nor how it names what it finds. The same tables resolve a returned
graph's targets on the trusted side: a description names functions and types, it never brings
code.
"""

from __future__ import annotations

import builtins
import operator
import time

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from .data import DataError, Ref

MAX_NODES = 500
# call_method targets a rebuilt graph may call (all pure tensor methods or their in-place forms)
METHODS = frozenset(
    "sigmoid sigmoid_ tanh tanh_ relu relu_ sum mean mul add sub neg to size view reshape".split()
)


def nap(x, seconds: float):
    """x, after sleeping `seconds`: a function node whose cost the grader knows."""
    time.sleep(seconds)
    return x


class Sleepy(nn.Module):
    """Sleeps naps[i] seconds on its i-th call (the last nap repeats), then returns its input."""

    def __init__(self, *naps: float):
        super().__init__()
        self.naps, self.calls = tuple(float(n) for n in naps), 0

    def forward(self, x):
        nap(x, self.naps[min(self.calls, len(self.naps) - 1)])
        self.calls += 1
        return x


def target_name(target: object) -> str:
    """A node's target as text: strings as they are, functions as `print(graph)` names them."""
    if isinstance(target, str):
        return target
    try:
        return torch.fx.Node._pretty_print_target(target)
    except Exception:  # noqa: BLE001 - an odd callable: its repr will do
        return repr(target)


def _functions() -> dict[str, object]:
    special = (torch.special.expit, F.sigmoid, F.relu, operator.getitem, builtins.getattr, nap)
    plain = (torch.sigmoid, torch.tanh, torch.relu, torch.cat, torch.add, torch.mul, torch.neg)
    ops = (operator.add, operator.mul, operator.sub, torch.matmul, torch.flatten)
    tanhs = (F.tanh, torch.Tensor.tanh)  # spellings of torch.tanh a pass may write
    return {target_name(f): f for f in (*plain, *special, *ops, *tanhs)}


def _type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


FUNCTIONS = _functions()
FUNCTION_NAMES = {id(f): name for name, f in FUNCTIONS.items()}
MODULE_TYPES = {_type_name(k): k for k in (nn.Linear, nn.Sigmoid, nn.Tanh, nn.ReLU, nn.Identity)}
MODULE_TYPES[_type_name(Sleepy)] = Sleepy
MODULE_NAMES = {id(kind): name for name, kind in MODULE_TYPES.items()}
PARAMETERLESS = {name for name, kind in MODULE_TYPES.items() if kind is not nn.Linear}
_isinstance, _type, _id = isinstance, type, id  # as they were before any learner's cell


# ----------------------------------------------------------------------------- describing


def function_name(target: object) -> str:
    """A call_function target named through the captured table, never by its own attributes."""
    return FUNCTION_NAMES.get(_id(target)) or f"<not allowed: {target_name(target)[:200]}>"


def module_name(module: object) -> str:
    kind = _type(module)
    return MODULE_NAMES.get(_id(kind)) or f"<not allowed: {kind.__qualname__[:200]}>"


def module_spec(module: nn.Module) -> dict:
    spec = {"type": module_name(module), "state": dict(module.state_dict())}
    if _type(module) is Sleepy:
        spec["naps"] = list(module.naps)
    return spec


def describe(gm, state: bool = False) -> dict:
    """A GraphModule as data: its nodes (targets named, other nodes as Refs by position, users
    as positions in the order they were added, the type of a call_module's submodule), its code
    and the code its graph would generate now; with `state`, also its submodules' types and
    weights and its get_attr tensors (what `build` needs)."""
    if not _isinstance(gm, torch.fx.GraphModule):
        return {"type": _type(gm).__qualname__}
    nodes = list(gm.graph.nodes)
    position = {node: index for index, node in enumerate(nodes)}
    described, modules, attrs = [], {}, {}
    for node in nodes:
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: Ref(position[n]))
        target = function_name(node.target) if node.op == "call_function" else node.target
        row = {"name": node.name, "op": node.op, "target": target, "args": args}
        row.update(kwargs=kwargs, users=[position[user] for user in node.users])
        if node.op == "call_module":
            module = gm.get_submodule(node.target)
            row["module"] = module_name(module)
            modules[node.target] = module_spec(module)
        elif node.op == "get_attr":
            attrs[node.target] = getattr_path(gm, node.target)
        described.append(row)
    found = {"type": "GraphModule", "nodes": described, "lint": lint(gm)}
    if state:
        return found | {"modules": modules, "attrs": attrs}
    return found | {"code": gm.code, "graph_code": gm.graph.python_code("self").src}


def getattr_path(root, path: str):
    for part in path.split("."):
        root = getattr(root, part)
    return root.detach().clone() if _isinstance(root, torch.Tensor) else root


def lint(gm) -> str | None:
    try:
        gm.graph.lint()
    except Exception as exc:  # noqa: BLE001 - reported as data
        return f"{type(exc).__name__}: {exc}"
    return None


# ----------------------------------------------------------------------------- rebuilding


def build(description: dict, source: dict | None = None) -> torch.fx.GraphModule:
    """The GraphModule a description describes, with targets from the captured tables. Its
    submodules and tensors come from `source` (a description made with state; by default the
    description itself): a call_module of a path and type `source` has gets its weights, a new
    one only a parameterless type. Raises DataError for anything else."""
    source = source or description
    rows = description.get("nodes") if _isinstance(description, dict) else None
    if not _isinstance(rows, list) or len(rows) > MAX_NODES:
        raise DataError(f"a graph description needs a list of at most {MAX_NODES} nodes")
    graph, nodes, owned = torch.fx.Graph(), [], {}
    for row in rows:
        op, target = row["op"], row["target"]
        if op == "call_module":
            owned[target] = make_module(target, row.get("module"), source)
        elif op == "get_attr":
            owned[target] = attribute(target, source)
        elif op == "call_function":
            target = resolve_function(target)
        elif op == "call_method":
            if target not in METHODS:
                raise DataError(f"the graph calls the method {str(target)[:200]!r}: not allowed")
        elif op not in ("placeholder", "output"):
            raise DataError(f"unknown node op {op!r}")
        args, kwargs = link(row["args"], nodes), link(row["kwargs"], nodes)
        nodes.append(graph.create_node(op, target, tuple(args), dict(kwargs), name=row["name"]))
    for node, row in zip(nodes, rows, strict=True):
        order = [nodes[i] for i in row.get("users", []) if type(i) is int and 0 <= i < len(nodes)]
        if set(order) == set(node.users) and len(order) == len(node.users):
            node.users.clear()  # the order in which uses were made, as the description says
            node.users.update(dict.fromkeys(order))
    return torch.fx.GraphModule(owned, graph)


def resolve_function(name: object):
    if name not in FUNCTIONS:
        raise DataError(f"the graph calls {str(name)[:200]}, which the grader never runs")
    return FUNCTIONS[name]


def make_module(path: str, kind: str, source: dict) -> nn.Module:
    spec = source.get("modules", {}).get(path)
    if spec is None or spec.get("type") != kind:
        if kind not in PARAMETERLESS or kind == _type_name(Sleepy):
            raise DataError(f"{path}: a {kind} module the grader did not make cannot be run")
        spec = {"type": kind, "state": {}}
    cls = MODULE_TYPES[spec["type"]]
    weight = spec["state"].get("weight")
    if cls is nn.Linear:
        module = nn.Linear(weight.shape[1], weight.shape[0], bias="bias" in spec["state"])
    else:
        module = cls(*spec.get("naps", ()))
    module.load_state_dict(spec["state"])
    return module


def attribute(path: str, source: dict):
    if path not in source.get("attrs", {}):
        raise DataError(f"{path}: a tensor the grader did not make")
    return source["attrs"][path].clone()


def link(value, nodes: list):
    """value with every Ref replaced by the node at its position."""
    if _isinstance(value, Ref):
        if not 0 <= value.position < len(nodes):
            raise DataError(f"a node refers to node {value.position}, not made before it")
        return nodes[value.position]
    if _isinstance(value, tuple | list):
        return _type(value)(link(item, nodes) for item in value)
    if _isinstance(value, dict):
        return {key: link(item, nodes) for key, item in value.items()}
    if _isinstance(value, slice):
        return slice(*(link(v, nodes) for v in (value.start, value.stop, value.step)))
    return value
