"""Graphs as data, on both sides of the boundary: `describe` turns a GraphModule into data and
`build` turns such data back into a GraphModule (README.md, "Writing an exercise").

What a graph may call is an exercise's own declaration, a `Vocabulary` in its probes.py: the
functions, methods and module types its tests' graphs use, captured when the vocabulary is made.
In the sandbox that is before any learner's cell runs (the probes run first in a fresh process),
so a learner who rebinds `torch.sigmoid` or `nn.Sigmoid` changes neither what a probe builds nor
how it names what it finds (by identity, never by the object's own names). The trusted side
resolves a returned graph's targets through the instructor's copy of the same vocabulary: a
description names functions and types, it never brings code. This module names none.
"""

from __future__ import annotations

import builtins
import copy
import operator
from collections.abc import Callable, Iterable, Mapping

import torch
import torch.fx
import torch.nn as nn

from .data import DataError, Ref
from .grading_limits import LIMITS
from .grammar import (
    OPS,
    check_arguments,
    check_placeholders,
    identifier,
    link,
    path,
    shown,
)
from .wording import _

# What tracing makes of `x[i]` and `x.shape`: every vocabulary allows them.
STRUCTURAL = (operator.getitem, builtins.getattr)
LOCAL = "exercise"  # the module name of an exercise's own functions and types, on both sides
_isinstance, _type, _id = isinstance, type, id  # as they were before any learner's cell


def target_name(target: object) -> str:
    """A node's target as text: strings as they are, functions as `print(graph)` names them."""
    if isinstance(target, str):
        return target
    try:
        return torch.fx.Node._pretty_print_target(target)
    except Exception:  # noqa: BLE001 - an odd callable: its repr will do
        return repr(target)


def type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def linear_arguments(module: nn.Linear) -> tuple:
    """nn.Linear's constructor arguments, for `Vocabulary(modules={nn.Linear: ...})`."""
    return module.in_features, module.out_features, module.bias is not None


class Vocabulary:
    """What an exercise's graphs may use: `functions` (besides STRUCTURAL), `methods` (names of
    call_method targets) and `modules`, module types, each with a function giving the plain
    constructor arguments of one of its modules (None: made without arguments, so a graph may
    add one of its own). `local` holds functions and module types the exercise defines itself:
    they are given the module name LOCAL, so that they are named alike on both sides (the sandbox
    runs probes.py as `probes`, the trusted side loads it under a name of its own).
    Made in probes.py, so that it is made before any learner's cell runs in the sandbox."""

    def __init__(
        self,
        functions: Iterable[Callable] = (),
        methods: Iterable[str] = (),
        modules: Mapping[type, Callable | None] | None = None,
        local: Iterable[object] = (),
    ):
        local, kinds = tuple(local), dict(modules or {})
        for thing in local:
            thing.__module__ = LOCAL
        kinds |= {kind: None for kind in local if _isinstance(kind, type) and kind not in kinds}
        own = (thing for thing in local if not _isinstance(thing, type))
        named = [(target_name(f), f) for f in (*functions, *own, *STRUCTURAL)]
        types = [(type_name(kind), kind) for kind in kinds]
        for what, pairs in (("function", named), ("module type", types)):
            if len(dict(pairs)) != len({_id(thing) for _, thing in pairs}):
                names = sorted(name for name, _ in pairs)
                raise ValueError(f"two {what}s of the vocabulary have one name: {names}")
        self.functions, self.methods = dict(named), frozenset(methods)
        self.function_names = {_id(f): name for name, f in self.functions.items()}
        self.module_types = dict(types)
        self.module_names = {_id(kind): name for name, kind in self.module_types.items()}
        self.arguments = {name: kinds[kind] for name, kind in self.module_types.items()}

    def describe(self, gm, state: bool = False) -> dict:
        return describe(gm, self, state)

    def build(self, description: dict, source: dict | None = None, *, codegen: bool = False):
        return build(description, self, source, codegen=codegen)


# ----------------------------------------------------------------------------- describing


def function_name(target: object, vocabulary: Vocabulary) -> str:
    """A call_function target named through the captured table, never by its own attributes."""
    found = vocabulary.function_names.get(_id(target))
    return found or f"<not allowed: {target_name(target)[:200]}>"


def module_name(module: object, vocabulary: Vocabulary) -> str:
    kind = _type(module)
    found = vocabulary.module_names.get(_id(kind))
    return found or f"<not allowed: {kind.__qualname__[:200]}>"


def module_spec(module: nn.Module, vocabulary: Vocabulary) -> dict:
    name = module_name(module, vocabulary)
    spec = {"type": name, "state": dict(module.state_dict())}
    arguments = vocabulary.arguments.get(name)
    return spec | ({"arguments": list(arguments(module))} if arguments else {})


def describe(gm, vocabulary: Vocabulary, state: bool = False) -> dict:
    """A GraphModule as data, named through the vocabulary: its nodes (targets named, other nodes
    as Refs by position, users as positions in the order they were added, the type of a
    call_module's submodule), its code and the code its graph would generate now; with `state`,
    also its submodules' types, arguments and weights and its get_attr tensors (what `build`
    needs)."""
    if not _isinstance(gm, torch.fx.GraphModule):
        return {"type": _type(gm).__qualname__}
    nodes = list(gm.graph.nodes)
    position = {node: index for index, node in enumerate(nodes)}
    described, modules, attrs = [], {}, {}
    for node in nodes:
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: Ref(position[n]))
        call = node.op == "call_function"
        target = function_name(node.target, vocabulary) if call else node.target
        row = {"name": node.name, "op": node.op, "target": target, "args": args}
        row.update(kwargs=kwargs, users=[position[user] for user in node.users])
        if node.op == "call_module":
            module = gm.get_submodule(node.target)
            row["module"] = module_name(module, vocabulary)
            modules[node.target] = module_spec(module, vocabulary)
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
# A description is a learner's claim: it passes grammar.py's checks before anything is built.


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


def build(description: dict, vocabulary: Vocabulary, source: dict | None = None, *, codegen=False):
    """The GraphModule a description describes, with targets from the vocabulary. Its submodules
    and tensors come from `source` (a description made with state; by default the description
    itself): a call_module of a path and type `source` has gets its weights and arguments, a new
    one only a type made without arguments. Raises DataError for anything else, before building.
    With `codegen` (a probe, which hands the graph to the learner's code in the sandbox) it is an
    ordinary GraphModule, its code generated and compiled as a traced one's; without it, a
    DescribedGraphModule, which runs its graph without compiling code (the trusted side)."""
    source = source if source is not None else description
    rows = description.get("nodes") if _isinstance(description, dict) else None
    if not _isinstance(rows, list) or len(rows) > LIMITS.graph_nodes:
        said = _("a graph description needs a list of at most {cap} nodes")
        raise DataError(said.format(cap=LIMITS.graph_nodes))
    graph, nodes, owned, budget = torch.fx.Graph(), [], {}, [LIMITS.graph_constants]
    for row in rows:
        op, target, name = node_fields(row, vocabulary)
        if op == "call_module":
            owned[target] = make_module(target, row.get("module"), source, vocabulary)
        elif op == "get_attr":
            owned[target] = attribute(target, source)
        elif op == "call_function":
            target = resolve_function(target, vocabulary)
        args = link(row.get("args", ()), nodes, budget)
        kwargs = link(row.get("kwargs", {}), nodes, budget)
        check_arguments(op, target, args, kwargs)
        nodes.append(graph.create_node(op, target, tuple(args), dict(kwargs), name=name))
    check_placeholders(nodes)
    order_users(nodes, rows)
    kind = torch.fx.GraphModule if codegen else DescribedGraphModule
    return kind(container(owned), graph)


def node_fields(row, vocabulary: Vocabulary) -> tuple[str, object, str]:
    """A row's op, target and name, each checked against the grammar."""
    if not _isinstance(row, dict):
        raise DataError(_("a node of the description is not a dict"))
    op, target, name = row.get("op"), row.get("target"), row.get("name")
    if op not in OPS:
        raise DataError(_("unknown node op {op}").format(op=shown(op)))
    identifier(name, _("a node's name"))
    if op == "placeholder":
        identifier(target, _("a placeholder's target"))
    elif op in ("call_module", "get_attr"):
        path(target)
    elif op == "call_method" and (_type(target) is not str or target not in vocabulary.methods):
        raise DataError(
            _("the graph calls the method {name}: not allowed").format(name=shown(target))
        )
    elif op == "output" and target != "output":
        said = _("an output node's target is 'output', not {target}")
        raise DataError(said.format(target=shown(target)))
    return op, target, name


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
                said = _("{path}: {part} is a tensor, not a module")
                raise DataError(said.format(path=dotted, part=part))
            if child is None:
                child = nn.Module()
                holder.add_module(part, child)
            if _type(child) is not nn.Module:
                said = _("{path}: a path into a {kind} module")
                raise DataError(said.format(path=dotted, kind=_type(child).__name__))
            holder = child
        if taken(holder, leaf):
            raise DataError(_("{path}: two different things at one path").format(path=dotted))
        if _isinstance(value, torch.Tensor):
            holder.register_buffer(leaf, value)
        else:
            holder.add_module(leaf, value)
    return root


def taken(module: nn.Module, name: str) -> bool:
    return name in module._modules or name in module._buffers or name in module._parameters


def resolve_function(name: object, vocabulary: Vocabulary):
    if _type(name) is not str or name not in vocabulary.functions:
        raise DataError(
            _("the graph calls {name}, which the grader never runs").format(name=shown(name))
        )
    return vocabulary.functions[name]


def make_module(target: str, kind: object, source: dict, vocabulary: Vocabulary) -> nn.Module:
    """The module of a call_module node: of a type the vocabulary has, with the arguments and
    weights `source` gives it at that path, or new, of a type made without arguments."""
    if _type(kind) is not str or kind not in vocabulary.module_types:
        said = _("{target}: a module of type {kind}, which the grader never runs")
        raise DataError(said.format(target=target, kind=shown(kind)))
    modules = source.get("modules") if _isinstance(source, dict) else None
    spec = modules.get(target) if _isinstance(modules, dict) else None
    if not _isinstance(spec, dict) or spec.get("type") != kind:
        if vocabulary.arguments[kind] is not None:
            said = _("{target}: a {kind} module the grader did not make cannot be run")
            raise DataError(said.format(target=target, kind=kind))
        spec = {"type": kind, "state": {}}
    arguments = link(spec.get("arguments", []), [], [LIMITS.graph_constants])
    try:
        module = vocabulary.module_types[kind](*arguments)
        module.load_state_dict(spec["state"])
    except (TypeError, ValueError, RuntimeError, KeyError, AttributeError) as exc:
        said = _("{target}: a {kind} module that cannot be made: {error}")
        raise DataError(said.format(target=target, kind=kind, error=exc)) from None
    return module


def attribute(target: str, source: dict):
    attrs = source.get("attrs") if _isinstance(source, dict) else None
    if not _isinstance(attrs, dict) or target not in attrs:
        raise DataError(_("{target}: a tensor the grader did not make").format(target=target))
    return attrs[target].clone()
