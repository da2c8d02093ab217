"""A pass's edits to a traced graph, drawn for a case: readers in odd places (inside a list, by
keyword), users out of graph order, calls erased, inputs renamed. Each takes the case's
`CaseMaker` where it draws, and says what it did in the case's description."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from fxcourse.messages import _

if TYPE_CHECKING:
    from fxcourse.cases import CaseMaker


def _outputs_with(gm: torch.fx.GraphModule, extra: Sequence[object]) -> None:
    output = gm.graph.output_node()
    returned = output.args[0] if isinstance(output.args[0], tuple) else (output.args[0],)
    output.args = ((*returned, *extra),)
    gm.recompile()


def extra_readers(make: CaseMaker, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Four more outputs of `gm` (whose values share one shape, as a DrawnModel's do) that read
    drawn values where a loop over `node.args` does not look: inside a list (`torch.cat([a, b])`),
    by keyword (`torch.add(a, other=b)`), a traced size inside a slice (`a[..., :b.size(-1)]`,
    as tracing `x[:, :n]` records it), and a value inside a dict (`{"held": h}`, as a model that
    returns a dict holds its values: the output node reads h there only)."""
    values = [node for node in gm.graph.nodes if node.op != "output"]
    first, second = make.choice(values), make.choice(values)
    with gm.graph.inserting_before(gm.graph.output_node()):
        listed = gm.graph.call_function(torch.cat, ([first, second],))
        keyword = gm.graph.call_function(torch.add, (first,), {"other": second})
        width = gm.graph.call_method("size", (make.choice(values), -1))
        sliced = gm.graph.call_function(operator.getitem, (first, (..., slice(None, width))))
        held = gm.graph.call_function(torch.abs, (make.choice(values),))
    _outputs_with(gm, [listed, keyword, sliced, {"held": held}])
    said = _(
        "{first} and {second} read inside a list and by keyword; {width} inside a slice; "
        "{held} inside a dict"
    )
    make.note(said.format(first=first.name, second=second.name, width=width.name, held=held.name))
    return gm


def early_reader(
    make: CaseMaker, gm: torch.fx.GraphModule, recompile: bool = True
) -> torch.fx.GraphModule:
    """A pass's edit: a new node (`torch.neg`) placed just before one reader of a value takes
    over that reader's input. The value's `users` then lists the new node last, though a later
    reader comes after it in graph order. `gm` needs a value with two readers. With
    `recompile=False` the pass has not recompiled yet: `gm.code` shows the graph before the edit."""
    order = {node: index for index, node in enumerate(gm.graph.nodes)}
    pairs = [
        (reader, value)
        for reader in gm.graph.nodes
        for value in reader.all_input_nodes
        if any(order[user] > order[reader] for user in value.users)
    ]
    if not pairs:
        raise ValueError("early_reader needs a value that two nodes read")
    reader, value = make.choice(pairs)
    with gm.graph.inserting_before(reader):
        negated = gm.graph.call_function(torch.neg, (value,))
    reader.replace_input_with(value, negated)
    if recompile:
        gm.recompile()
        said = _("a pass put neg({value}) before {reader}, which now reads it")
    else:
        said = _("a pass put neg({value}) before {reader}, which now reads it; not recompiled yet")
    make.note(said.format(value=value.name, reader=reader.name))
    return gm


def erase_calls(
    gm: torch.fx.GraphModule, paths: Sequence[str], recompile: bool = True
) -> torch.fx.GraphModule:
    """A pass's edit: every call of the modules at `paths` is erased, its input going on in its
    place; the modules stay registered, unused. With `recompile=False` the pass has not
    recompiled yet: `gm.code` still calls them (the nodes are the truth, the code is behind)."""
    for node in list(gm.graph.find_nodes(op="call_module")):
        if node.target in paths:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    if recompile:
        gm.recompile()
    return gm


def moved_into_a_block(make: CaseMaker, gm: torch.fx.GraphModule, path: str) -> str:
    """The module at `path`, a child of gm's root, moved into a new block: its calls now name
    it by a dotted target, `block.path`, which no rule for the root's children reaches."""
    target = f"{make.word(avoid=[name for name, _module in gm.named_children()])}.{path}"
    gm.add_submodule(target, gm.get_submodule(path))
    for node in gm.graph.find_nodes(op="call_module", target=path):
        node.target = target
    delattr(gm, path)
    gm.recompile()
    make.note(
        _("'{path}' sits in a block: its target is '{target}'").format(path=path, target=target)
    )
    return target


def names_that_mislead(
    make: CaseMaker, gm: torch.fx.GraphModule, is_kind, kind: str
) -> torch.fx.GraphModule:
    """A pass's edit: node names that say the wrong thing, as the nodes a pass makes may have.
    One node that `is_kind` renamed after a plain word, and a torch.tanh of the first output,
    named `kind` and added to it: a rule that knows a node by its name, not its op and target,
    misses the one and rewrites the other."""
    graph, output = gm.graph, gm.graph.output_node()
    found = [node for node in graph.nodes if is_kind(node)]
    if found:
        renamed = make.choice(found)
        old = renamed.name
        renamed._rename(make.word(avoid=[node.name for node in graph.nodes]))
        note = _("a pass renamed the {kind} node {old} to {new}")
        make.note(note.format(kind=kind, old=old, new=renamed.name))
    returned = output.args[0]
    first = returned[0] if isinstance(returned, tuple) else returned
    with graph.inserting_before(output):
        liar = graph.create_node("call_function", torch.tanh, (first,), name=kind)
        total = graph.call_function(torch.add, (first, liar))
    output.args = ((total, *returned[1:]) if isinstance(returned, tuple) else total,)
    gm.recompile()
    make.note(_("a node named {liar} computes a tanh").format(liar=liar.name))
    return gm


def rename_inputs(make: CaseMaker, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The placeholders of `gm` under drawn words (a trace names them after forward's
    parameters, `x` for a DrawnModel), so no rule can key on an input's name."""
    for node in list(gm.graph.find_nodes(op="placeholder")):
        node._rename(make.word(avoid=[n.name for n in gm.graph.nodes]))
        node.target = node.name
    gm.recompile()
    return gm
