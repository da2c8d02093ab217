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
import copy
import keyword
import operator
import re
import time

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from .data import DataError, Ref
from .limits import LIMITS

MAX_NODES = LIMITS.graph_nodes
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
# A description is a learner's claim. Before anything is built, it must pass a grammar: names and
# placeholder targets are ASCII identifiers, module and tensor paths dotted segments (identifiers
# without a leading underscore, or digits) naming no attribute of a GraphModule, constants plain
# values (None, bool, int, float, str, dtype, and tuples, lists, dicts and slices of them), all
# bounded. So no text of the learner's reaches the code torch.fx generates, no attribute is looked
# up or set along a learner's path outside a fresh container, and the work is bounded up front.

MAX_NAME = LIMITS.graph_name_chars
MAX_SEGMENT, MAX_SEGMENTS = LIMITS.graph_path_part_chars, LIMITS.graph_path_parts
MAX_TEXT = LIMITS.graph_text_chars
MAX_CONSTANTS, MAX_NESTING = LIMITS.graph_constants, LIMITS.graph_nesting
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SEGMENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*|[0-9]+")
OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
_PLAIN = (type(None), bool, int, float, str)


def _reserved() -> frozenset[str]:
    """Names a path may not use: what a GraphModule or a module already has (graph, forward,
    training, state_dict, ...), and Python's keywords."""
    made = torch.fx.GraphModule(nn.Module(), torch.fx.Graph())
    return frozenset(dir(made)) | frozenset(keyword.kwlist)


RESERVED = _reserved()


class DescribedGraphModule(torch.fx.GraphModule):
    """A GraphModule rebuilt from a description on the trusted side: it never compiles the code
    torch.fx generates for its graph (its `code` is that text, for reading); calling it runs the
    graph node by node with torch.fx's Interpreter."""

    def recompile(self):
        self._code = self.graph.python_code(root_module="self").src

    def forward(self, *args):
        return torch.fx.Interpreter(self).run(*args)

    def __copy__(self):  # GraphModule's own makes a GraphModule, which compiles its code
        copied = DescribedGraphModule(self, self.graph)
        copied.meta = copy.copy(self.meta)
        return copied


def build(description: dict, source: dict | None = None, *, codegen: bool = False):
    """The GraphModule a description describes, with targets from the captured tables. Its
    submodules and tensors come from `source` (a description made with state; by default the
    description itself): a call_module of a path and type `source` has gets its weights, a new
    one only a parameterless type. Raises DataError for anything else, before building. With
    `codegen` (a probe, which hands the graph to the learner's code in the sandbox) it is an
    ordinary GraphModule, its code generated and compiled as a traced one's; without it, a
    DescribedGraphModule, which runs its graph without compiling code (the trusted side)."""
    source = source if source is not None else description
    rows = description.get("nodes") if _isinstance(description, dict) else None
    if not _isinstance(rows, list) or len(rows) > MAX_NODES:
        raise DataError(f"a graph description needs a list of at most {MAX_NODES} nodes")
    graph, nodes, owned, budget = torch.fx.Graph(), [], {}, [MAX_CONSTANTS]
    for row in rows:
        op, target, name = node_fields(row)
        if op == "call_module":
            owned[target] = make_module(target, row.get("module"), source)
        elif op == "get_attr":
            owned[target] = attribute(target, source)
        elif op == "call_function":
            target = resolve_function(target)
        args = link(row.get("args", ()), nodes, budget)
        kwargs = link(row.get("kwargs", {}), nodes, budget)
        check_arguments(op, target, args, kwargs)
        nodes.append(graph.create_node(op, target, tuple(args), dict(kwargs), name=name))
    check_placeholders(nodes)
    order_users(nodes, rows)
    kind = torch.fx.GraphModule if codegen else DescribedGraphModule
    return kind(container(owned), graph)


def node_fields(row) -> tuple[str, object, str]:
    """A row's op, target and name, each checked against the grammar."""
    if not _isinstance(row, dict):
        raise DataError("a node of the description is not a dict")
    op, target, name = row.get("op"), row.get("target"), row.get("name")
    if op not in OPS:
        raise DataError(f"unknown node op {shown(op)}")
    identifier(name, "a node's name")
    if op == "placeholder":
        identifier(target, "a placeholder's target")
    elif op in ("call_module", "get_attr"):
        path(target)
    elif op == "call_method" and target not in METHODS:
        raise DataError(f"the graph calls the method {shown(target)}: not allowed")
    elif op == "output" and target != "output":
        raise DataError(f"an output node's target is 'output', not {shown(target)}")
    return op, target, name


def shown(value: object) -> str:
    """A learner's value, quoted for a message: its repr, at most 60 characters."""
    text = repr(value) if _type(value) in _PLAIN else f"a {_type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def identifier(value: object, what: str) -> str:
    if not (_type(value) is str and len(value) <= MAX_NAME and NAME.fullmatch(value)):
        raise DataError(f"{what} must be a Python identifier of at most {MAX_NAME} characters, "
                        f"not {shown(value)}")  # fmt: skip
    if keyword.iskeyword(value):
        raise DataError(f"{what} may not be the Python keyword {value!r}")
    return value


def path(value: object) -> str:
    """A module or tensor path: at most MAX_SEGMENTS parts of at most MAX_SEGMENT characters,
    each an identifier without a leading underscore, or digits, and none a GraphModule's own."""
    parts = value.split(".") if _type(value) is str and len(value) <= 600 else None
    if not parts or len(parts) > MAX_SEGMENTS:
        raise DataError(f"a module or tensor path must have 1 to {MAX_SEGMENTS} parts, not "
                        f"{shown(value)}")  # fmt: skip
    for part in parts:
        if len(part) > MAX_SEGMENT or not SEGMENT.fullmatch(part) or part in RESERVED:
            raise DataError(
                f"the path {shown(value)} has the part {shown(part)}: each part is letters, digits "
                f"and _ (not first), at most {MAX_SEGMENT} characters, and names nothing a "
                "GraphModule already has"
            )
    return value


def check_arguments(op: str, target, args, kwargs) -> None:
    if _type(args) not in (tuple, list) or _type(kwargs) is not dict:
        raise DataError("a node's args must be a list and its kwargs a dict")
    for key in kwargs:
        identifier(key, "a keyword argument's name")
    if op == "placeholder" and (kwargs or len(args) > 1):
        raise DataError("a placeholder has at most one argument, its default value")
    if op == "output" and (kwargs or len(args) != 1):
        raise DataError("an output node has exactly one argument")
    if op == "call_function" and target is builtins.getattr:
        name = args[1] if len(args) > 1 else None
        if _type(name) is not str or name.startswith("_") or not NAME.fullmatch(name):
            raise DataError(f"getattr of {shown(name)}: only public attribute names")


def check_placeholders(nodes: list) -> None:
    targets = [node.target for node in nodes if node.op == "placeholder"]
    if len(set(targets)) != len(targets):
        raise DataError("two placeholders have the same target")


def order_users(nodes: list, rows: list) -> None:
    """Each node's users in the order in which the uses were made, as the description says."""
    for node, row in zip(nodes, rows, strict=True):
        given = row.get("users", [])
        positions = given if _type(given) is list and len(given) <= len(nodes) else []
        order = [nodes[i] for i in positions if _type(i) is int and 0 <= i < len(nodes)]
        if set(order) == set(node.users) and len(order) == len(node.users):
            node.users.clear()
            node.users.update(dict.fromkeys(order))


def container(owned: dict[str, object]) -> nn.Module:
    """A fresh module holding each owned submodule or tensor at its path. Only containers made
    here are walked or added to (through their _modules, never getattr); a path through a module
    or tensor that is not such a container, or met twice, is refused."""
    root = nn.Module()
    for dotted, value in owned.items():
        *parents, leaf = dotted.split(".")
        holder = root
        for part in parents:
            child = holder._modules.get(part)
            if child is None and taken(holder, part):
                raise DataError(f"{dotted}: {part} is a tensor, not a module")
            if child is None:
                child = nn.Module()
                holder.add_module(part, child)
            if _type(child) is not nn.Module:
                raise DataError(f"{dotted}: a path into a {_type(child).__name__} module")
            holder = child
        if taken(holder, leaf):
            raise DataError(f"{dotted}: two different things at one path")
        if _isinstance(value, torch.Tensor):
            holder.register_buffer(leaf, value)
        else:
            holder.add_module(leaf, value)
    return root


def taken(module: nn.Module, name: str) -> bool:
    return name in module._modules or name in module._buffers or name in module._parameters


def resolve_function(name: object):
    if _type(name) is not str or name not in FUNCTIONS:
        raise DataError(f"the graph calls {shown(name)}, which the grader never runs")
    return FUNCTIONS[name]


def make_module(target: str, kind: object, source: dict) -> nn.Module:
    if _type(kind) is not str or kind not in MODULE_TYPES:
        raise DataError(f"{target}: a module of type {shown(kind)}, which the grader never runs")
    modules = source.get("modules") if _isinstance(source, dict) else None
    spec = modules.get(target) if _isinstance(modules, dict) else None
    if not _isinstance(spec, dict) or spec.get("type") != kind:
        if kind not in PARAMETERLESS or kind == _type_name(Sleepy):
            raise DataError(f"{target}: a {kind} module the grader did not make cannot be run")
        spec = {"type": kind, "state": {}}
    cls = MODULE_TYPES[spec["type"]]
    weight = spec["state"].get("weight")
    if cls is nn.Linear:
        module = nn.Linear(weight.shape[1], weight.shape[0], bias="bias" in spec["state"])
    else:
        module = cls(*spec.get("naps", ()))
    module.load_state_dict(spec["state"])
    return module


def attribute(target: str, source: dict):
    attrs = source.get("attrs") if _isinstance(source, dict) else None
    if not _isinstance(attrs, dict) or target not in attrs:
        raise DataError(f"{target}: a tensor the grader did not make")
    return attrs[target].clone()


def link(value, nodes: list, budget: list[int], depth: int = 0):
    """value with every Ref replaced by the node at its position; anything but plain constants
    (None, bool, int, float, str, dtype, and tuples, lists, dicts and slices of them) refused."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_NESTING:
        raise DataError(f"a graph's arguments hold over {MAX_CONSTANTS} values or nest over "
                        f"{MAX_NESTING} deep")  # fmt: skip
    if _isinstance(value, Ref):
        if not 0 <= value.position < len(nodes):
            raise DataError(f"a node refers to node {value.position}, not made before it")
        return nodes[value.position]
    if value is None or _type(value) is bool:
        return value
    for kind in (int, float, str):  # TypedInt and the like become the plain value they hold
        if _isinstance(value, kind):
            return constant(kind(value))
    if _isinstance(value, torch.dtype):
        return value
    # torch.fx's immutable_list and immutable_dict (a trusted description) become plain ones
    for kind in (tuple, list):
        if _isinstance(value, kind):
            return kind(link(item, nodes, budget, depth + 1) for item in value)
    if _isinstance(value, dict):
        return {constant(k): link(v, nodes, budget, depth + 1) for k, v in value.items()}
    if _type(value) is slice:
        parts = (value.start, value.stop, value.step)
        return slice(*(link(part, nodes, budget, depth + 1) for part in parts))
    kind = _type(value).__name__
    raise DataError(f"the graph holds a constant of type {kind}; only None, bool, int, float, "
                    "str, a dtype and tuples, lists, dicts and slices of them")  # fmt: skip


def constant(value):
    if _type(value) not in _PLAIN:
        raise DataError(f"a dict key of type {_type(value).__name__}: only plain values")
    if _type(value) is str and len(value) > MAX_TEXT:
        raise DataError(f"a string constant of {len(value)} characters (at most {MAX_TEXT})")
    return value
