"""The grammar a graph description must pass before graph_data.build makes anything of it.

A description is a learner's claim. Before anything is built, it must pass a grammar: names and
placeholder targets are ASCII identifiers, module and tensor paths dotted segments (identifiers
without a leading underscore, or digits) naming no attribute of a GraphModule, constants plain
values (None, bool, int, float, str, dtype, and tuples, lists, dicts and slices of them), all
bounded. So no text of the learner's reaches the code torch.fx generates, no attribute is looked
up or set along a learner's path outside a fresh container, and the work is bounded up front.
"""

from __future__ import annotations

import builtins
import keyword
import re

import torch
import torch.fx
import torch.nn as nn

from .data import DataError, Ref
from .grading_limits import LIMITS
from .wording import _

_isinstance, _type = isinstance, type  # as they were before any learner's cell

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


def shown(value: object) -> str:
    """A learner's value, quoted for a message: its repr, at most 60 characters."""
    text = repr(value) if _type(value) in _PLAIN else f"a {_type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def identifier(value: object, what: str) -> str:
    if not (
        _type(value) is str and len(value) <= LIMITS.graph_name_chars and NAME.fullmatch(value)
    ):
        said = _("{what} must be a Python identifier of at most {cap} characters, not {value}")
        raise DataError(said.format(what=what, cap=LIMITS.graph_name_chars, value=shown(value)))
    if keyword.iskeyword(value):
        said = _("{what} may not be the Python keyword {value}")
        raise DataError(said.format(what=what, value=repr(value)))
    return value


def path(value: object) -> str:
    """A module or tensor path: at most graph_path_parts parts of at most graph_path_part_chars
    characters (GradingLimits), each an identifier without a leading underscore, or digits, and
    none a GraphModule's own."""
    parts = value.split(".") if _type(value) is str and len(value) <= 600 else None
    if not parts or len(parts) > LIMITS.graph_path_parts:
        said = _("a module or tensor path must have 1 to {cap} parts, not {value}")
        raise DataError(said.format(cap=LIMITS.graph_path_parts, value=shown(value)))
    for part in parts:
        if (
            len(part) > LIMITS.graph_path_part_chars
            or not SEGMENT.fullmatch(part)
            or part in RESERVED
        ):
            said = _(
                "the path {path} has the part {part}: each part is letters, digits and _ (not "
                "first), at most {cap} characters, and names nothing a GraphModule already has"
            )
            raise DataError(
                said.format(path=shown(value), part=shown(part), cap=LIMITS.graph_path_part_chars)
            )
    return value


def check_arguments(op: str, target, args, kwargs) -> None:
    if _type(args) not in (tuple, list) or _type(kwargs) is not dict:
        raise DataError(_("a node's args must be a list and its kwargs a dict"))
    for key in kwargs:
        identifier(key, _("a keyword argument's name"))
    if op == "placeholder" and (kwargs or len(args) > 1):
        raise DataError(_("a placeholder has at most one argument, its default value"))
    if op == "output" and (kwargs or len(args) != 1):
        raise DataError(_("an output node has exactly one argument"))
    if op == "call_function" and target is builtins.getattr:
        name = args[1] if len(args) > 1 else None
        if _type(name) is not str or name.startswith("_") or not NAME.fullmatch(name):
            said = _("getattr of {name}: only public attribute names")
            raise DataError(said.format(name=shown(name)))


def check_placeholders(nodes: list) -> None:
    targets = [node.target for node in nodes if node.op == "placeholder"]
    if len(set(targets)) != len(targets):
        raise DataError(_("two placeholders have the same target"))


def link(value, nodes: list, budget: list[int], depth: int = 0):
    """value with every Ref replaced by the node at its position; anything but plain constants
    (None, bool, int, float, str, dtype, and tuples, lists, dicts and slices of them) refused."""
    budget[0] -= 1
    if budget[0] < 0 or depth > LIMITS.graph_nesting:
        said = _("a graph's arguments hold over {cap} values or nest over {depth} deep")
        raise DataError(said.format(cap=LIMITS.graph_constants, depth=LIMITS.graph_nesting))
    if _isinstance(value, Ref):
        if not 0 <= value.position < len(nodes):
            said = _("a node refers to node {number}, not made before it")
            raise DataError(said.format(number=value.position))
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
    said = _(
        "the graph holds a constant of type {kind}; only None, bool, int, float, str, a dtype "
        "and tuples, lists, dicts and slices of them"
    )
    raise DataError(said.format(kind=kind))


def constant(value):
    if _type(value) not in _PLAIN:
        said = _("a dict key of type {kind}: only plain values")
        raise DataError(said.format(kind=_type(value).__name__))
    if _type(value) is str and len(value) > LIMITS.graph_text_chars:
        said = _("a string constant of {size} characters (at most {cap})")
        raise DataError(said.format(size=len(value), cap=LIMITS.graph_text_chars))
    return value
