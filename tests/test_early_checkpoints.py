"""Checkpoints of chapters 1, 2, 3 and 5, run outside the notebook on many seeds, against answers
an independent red team wrote: each wrong one is refused in every run, each honest one passes.
(test_tryits runs every mistake and the answer in the chapter; `make test-checkpoints` the answer
on 20 seeds.) `FXCOURSE_CHECK_SEEDS=20` runs each answer here on 20 seeds (default 1).
"""

from __future__ import annotations

import ast
import json
import linecache
import os
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import check_cells
import nbformat
import pytest
import torch

from courseware import authoring
from fxcourse import reference, tryit

ROOT = Path(__file__).resolve().parents[1]
SEEDS = list(range(1, 1 + int(os.environ.get("FXCOURSE_CHECK_SEEDS", "1"))))
CHAPTERS = {
    "1": "01_symbolic_tracing",
    "2": "02_fx_ir",
    "3": "03_graph_transforms",
    "5": "05_interpreter",
}


@cache
def before_the_check(tryit_id: str) -> tuple[dict, str]:
    """The namespace the chapter's cells leave before `tryit_id`'s checkpoint (its mistakes and
    every checkpoint skipped), and the check cell's source."""
    nb = nbformat.read(ROOT / "solutions" / f"{CHAPTERS[tryit_id.split('.')[0]]}.ipynb", 4)
    (check,) = authoring.tryits(nb)[tryit_id]["check"]
    namespace: dict = {"__name__": "__main__"}
    cwd = os.getcwd()
    os.chdir(ROOT / "chapters")
    try:
        for cell in nb.cells[:check]:
            role = (authoring.tryit_of(cell) or ("", ""))[1]
            if cell.cell_type == "code" and role not in ("mistake", "check"):
                exec(compile(cell.source, "cell", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(cwd)
    return namespace, nb.cells[check].source


def verdict(tryit_id: str, answer: str, seed: int, monkeypatch) -> str | None:
    """The checkpoint's problem with `answer` on the cases of run seed `seed` (None: passed)."""
    base, check = before_the_check(tryit_id)
    namespace = dict(base)
    exec(compile(answer, "answer", "exec"), namespace)  # noqa: S102
    tryit.replay(tryit_id, seed)
    result = check_cells.judged(check, namespace, monkeypatch)
    assert result.cases_run >= tryit.MIN_CASES or not result.passed
    return result.problem


# 3.3's answers differ in how they decide that a .contiguous() hands its input on (drop)
PASS_THROUGHS = """
from torch.fx.passes.shape_prop import ShapeProp


def remove_pass_throughs(gm, example):
    ShapeProp(gm).propagate({propagated})
    for node in list(gm.graph.nodes):
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        if node.op == "call_method" and node.target == "contiguous":
            meta, source = node.args[0].meta["tensor_meta"], node.args[0]
            drop = {drop}
        else:
            drop = isinstance(module, nn.Identity) or (
                isinstance(module, nn.Dropout) and not module.training
            )
        if drop:
            node.replace_all_uses_with(node.all_input_nodes[0])
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
"""

# a 3.5 rule that gives `value` where `where` holds, sigmoid from exp elsewhere
SIGMOID_ROUNDED_WHERE = """
def sigmoid_from_exp(x):
    return torch.where({where}, {value}, 1 / (1 + torch.exp(-x)))


rules_with_sigmoid = {{**RULES, torch.sigmoid: sigmoid_from_exp}}
"""

# a ReluToGelu whose every ReLU form goes through its gelu(args, kwargs) = {gelu}
RELU_TO_GELU_BY = """
class ReluToGelu(Interpreter):
    def gelu(self, args, kwargs):
        return {gelu}

    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            return self.gelu(args, kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return self.gelu(args, kwargs)
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        if isinstance(self.fetch_attr(target), nn.ReLU):
            return self.gelu(args, kwargs)
        return super().call_module(target, args, kwargs)
"""

WRONG = {
    "1.3 a child kept a leaf only when its name is a word (red team redK)": """
class TopLevelTracer(fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return module_qualified_name.isidentifier()


top_level = fx.GraphModule(gated_net, TopLevelTracer().trace(gated_net))
""",
    "2.2 the root, a module without children, listed (red team redK)": """
def unused_modules(gm):
    targets = [node.target for node in gm.graph.nodes if node.op in ("call_module", "get_attr")]

    def used(name):
        inside = [t.startswith(name + ".") or name.startswith(t + ".") for t in targets]
        return name in targets or any(inside)

    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(name for name in leaves if not used(name))
""",
    "5.1 the input handed on detached: no gradient flows back through it (red team redM)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def call_module(self, target, args, kwargs):
        if target == self.skip:
            return (args[0] if args else kwargs["input"]).detach()
        return super().call_module(target, args, kwargs)
""",
    "5.1 the ablated run under torch.no_grad() (red team redM)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def run(self, *args, **kwargs):
        with torch.no_grad():
            return super().run(*args, **kwargs)

    def call_module(self, target, args, kwargs):
        if target == self.skip:
            return args[0] if args else kwargs["input"]
        return super().call_module(target, args, kwargs)
""",
    "5.3 every GELU detached: the model no longer trains (red team redM)": RELU_TO_GELU_BY.format(
        gelu='F.gelu(args[0] if args else kwargs["input"]).detach()'
    ),
    "5.2 a tuple's top level only: nn.LSTM's (h, c) left out (red team redM)": """
class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        values = result if isinstance(result, (tuple, list)) else [result]
        tensors = [value for value in values if isinstance(value, torch.Tensor)]
        if node.op not in ("placeholder", "get_attr") and tensors:
            self.bytes_by_node[node.name] = sum(t.numel() * t.element_size() for t in tensors)
        return result
""",
    "5.3 GELU computed on a float32 copy of the input (red team redK)": RELU_TO_GELU_BY.format(
        gelu='F.gelu((args[0] if args else kwargs["input"]).float())'
    ),
    "2.3 itemsize from a table of five dtypes, 1 byte for any other (red team redK)": """
from torch.fx.passes.shape_prop import TensorMetadata

SIZES = {torch.float32: 4, torch.float64: 8, torch.float16: 2, torch.bfloat16: 2, torch.int64: 8}


def activation_bytes(gm, example):
    ShapeProp(gm).propagate(example)
    total = 0
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op.startswith("call_") and isinstance(meta, TensorMetadata):
            total += meta.shape.numel() * SIZES.get(meta.dtype, 1)
    return total
""",
    "1.1 the differences squeezed at the last dimension (red team redK)": """
def row_steps(x):
    return (x[1:] - x[:-1]).squeeze(-1)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "3.5 a rule with torch.relu in a table without RULES' own rules (red team redC)": """
def sigmoid_from_exp(x):
    return torch.exp(-torch.relu(-x)) / (1 + torch.exp(-x.abs()))


rules_with_sigmoid = {torch.sigmoid: sigmoid_from_exp}
""",
    "1.1 rows differenced in float64, cast back to x's dtype (red team redC)": """
def row_steps(x):
    return (x[1:].double() - x[:-1].double()).to(x.dtype)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "2.2 leaves listed by their type, Linear or Tanh (red team redC)": """
def unused_modules(gm):
    leaves = [name for name, m in gm.named_modules() if isinstance(m, (nn.Linear, nn.Tanh))]
    targets = [n.target for n in gm.graph.nodes if n.op in ("call_module", "get_attr")]

    def used(leaf):
        inside = [t for t in targets if t.startswith(leaf + ".") or leaf.startswith(t + ".")]
        return leaf in targets or bool(inside)

    return sorted(leaf for leaf in leaves if not used(leaf))
""",
    "2.2 a parameter read below the top level not counted as a use (red team redC)": """
def unused_modules(gm):
    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    used = {n.target for n in gm.graph.nodes if n.op == "call_module"}
    reads = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    used |= {target.split(".")[0] for target in reads if target.count(".") == 1}  # top level only

    def uses(leaf):
        return any(leaf == u or leaf.startswith(u + ".") for u in used)

    return sorted(leaf for leaf in leaves if not uses(leaf))
""",
    "2.3 the output node counted when the graph returns one tensor (red team redC)": """
from torch.fx.passes.shape_prop import TensorMetadata


def activation_bytes(gm, example):
    ShapeProp(gm).propagate(example)
    kept = [n for n in gm.graph.nodes if n.op not in ("placeholder", "get_attr")]
    metas = [n.meta.get("tensor_meta") for n in kept]
    return sum(m.shape.numel() * m.dtype.itemsize for m in metas if isinstance(m, TensorMetadata))
""",
    "2.4 every path that ends with the path asked about (red team redC)": """
def nodes_inside(gm, path):
    return [
        node.name
        for node in gm.graph.nodes
        if any(p.endswith(path) for p, _ in node.meta.get("nn_module_stack", {}).values())
    ]
""",
    "1.2 concrete_args on a function of one's own that only calls F.gelu (red team redA)": """
def gelu_only(x, act, scale=None):
    return F.gelu(x)


plain_gelu = fx.symbolic_trace(gelu_only, concrete_args={"act": "gelu", "scale": None})
""",
    "1.2 a function of one's own traced by a Tracer, in a GraphModule named scaled_act": """
def gelu_only(x, act, scale=None):
    return F.gelu(x)


tracer = fx.Tracer()
graph = tracer.trace(gelu_only, concrete_args={"act": "gelu", "scale": None})
plain_gelu = fx.GraphModule(tracer.root, graph, class_name="scaled_act")
""",
    "3.2 each Linear wrapped in an nn.Sequential(nn.Hardtanh(), linear) (red team redA)": """
def clamp_linear_inputs(gm):
    for node in gm.graph.find_nodes(op="call_module"):
        linear = gm.get_submodule(node.target)
        if isinstance(linear, nn.Linear):
            name = node.target.replace(".", "_") + "_clamped"
            gm.add_submodule(name, nn.Sequential(nn.Hardtanh(), linear))
            node.target = name
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "1.1 rows differenced in float32, cast back to x's dtype (red team redA)": """
def row_steps(x):
    return (x[1:].float() - x[:-1].float()).to(x.dtype)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "1.2 torch._assert guards written by hand, not concrete_args (red team redA)": """
def gelu_guarded(x, act, scale=None):
    torch._assert(act == "gelu", "act")
    torch._assert(scale is None, "scale")
    return F.gelu(x)


plain_gelu = fx.symbolic_trace(gelu_guarded, concrete_args={"scale": None})
""",
    "2.1 nodes nothing reads listed with None (red team redA)": """
def last_reader(gm):
    found = {node.name: None for node in gm.graph.nodes}
    for node in gm.graph.nodes:
        for read in node.all_input_nodes:
            found[read.name] = node.name
    return found
""",
    "2.2 a leaf counted used when its name starts with a used one, no dot (red team redA)": """
def unused_modules(gm):
    used = [
        n.target if n.op == "call_module" else n.target.rpartition(".")[0]
        for n in gm.graph.nodes
        if n.op in ("call_module", "get_attr")
    ]
    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(name for name in leaves if not any(name.startswith(u) for u in used))
""",
    "2.2 a get_attr's owner taken as the first part of its path (red team redA)": """
def unused_modules(gm):
    used = {n.target for n in gm.graph.nodes if n.op == "call_module"}
    used |= {n.target.split(".")[0] for n in gm.graph.nodes if n.op == "get_attr"}
    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(
        name for name in leaves if not any(name == u or name.startswith(u + ".") for u in used)
    )
""",
    "2.2 containers whose leaves are all unused listed too (red team redA)": """
def unused_modules(gm):
    used = {n.target for n in gm.graph.nodes if n.op == "call_module"}
    used |= {n.target.rpartition(".")[0] for n in gm.graph.nodes if n.op == "get_attr"}

    def related(name, other):
        return name == other or name.startswith(other + ".") or other.startswith(name + ".")

    names = [name for name, _ in gm.named_modules() if name]
    return sorted(name for name in names if not any(related(name, u) for u in used))
""",
    "2.5 a keyword bound of 0 lost to `or` (red team redA)": """
def clamp_bounds(gm):
    found = []
    for node in gm.graph.nodes:
        if (node.op, node.target) in (("call_function", torch.clamp), ("call_method", "clamp")):
            given = [*node.args[1:], None, None]
            found.append((node.kwargs.get("min") or given[0], node.kwargs.get("max") or given[1]))
    return found
""",
    "5.1 nn.Identity swapped into gm for the run, then put back (red team redA)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def run(self, *args, **kwargs):
        parent, _, name = self.skip.rpartition(".")
        owner = self.module.get_submodule(parent)
        kept = getattr(owner, name)
        setattr(owner, name, nn.Identity())
        try:
            return super().run(*args, **kwargs)
        finally:
            setattr(owner, name, kept)
""",
    "5.4 a placeholder the output does not need is skipped too (red team redA)": """
def run_from(gm, known, *inputs):
    needed, stack = set(), [gm.graph.output_node()]
    while stack:
        node = stack.pop()
        if node not in needed and node.name not in known:
            needed.add(node)
            stack.extend(node.all_input_nodes)
    env = {node: known[node.name] for node in gm.graph.nodes if node.name in known}
    env.update({node: None for node in gm.graph.nodes if node not in needed and node not in env})
    return Interpreter(gm).run(*inputs, initial_env=env)
""",
    "1.1 forward swapped for the loop on an identity graph": """
traced_row_steps = fx.symbolic_trace(lambda x: x)
traced_row_steps.forward = row_steps_loop
""",
    "2.2 a fresh GraphModule(gm, gm.graph) keeps only what is used": """
def unused_modules(gm):
    leaves = {name for name, m in gm.named_modules() if not list(m.children())}
    kept = {name for name, _ in fx.GraphModule(gm, gm.graph).named_modules()}
    return sorted(leaves - kept)
""",
    "1.1 the loop in a module whose class claims torch.nn, a default leaf (red team s7)": """
class Steps(nn.Module):
    def forward(self, x):
        return torch.stack([x[i + 1] - x[i] for i in range(x.shape[0] - 1)])


Steps.__module__ = "torch.nn.modules.steps"


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = Steps()

    def forward(self, x):
        return self.steps(x)


traced_row_steps = fx.symbolic_trace(Holder())
""",
    "1.1 the loop in a function that claims to be torch's, kept a leaf (red team s7)": """
def steps(x):
    return torch.stack([x[i + 1] - x[i] for i in range(x.shape[0] - 1)])


steps.__module__ = "torch"
graph = fx.Graph()
graph.output(graph.call_function(steps, (graph.placeholder("x"),)))
traced_row_steps = fx.GraphModule(nn.Module(), graph)
""",
    "2.1 readers ordered by where gm.code assigns them (red team s7)": """
def last_reader(gm):
    code = gm.code

    def place(user):
        at = code.find(f"    {user.name} = ")
        return at if at >= 0 else len(code)  # the return line comes last

    return {n.name: max(n.users, key=place).name for n in gm.graph.nodes if n.users}
""",
    "2.2 gm.code searched for each leaf's attribute path (red team s7)": """
def unused_modules(gm):
    code = gm.code

    def spelled(parts):
        text = "self"
        for part in parts:
            text = f'getattr({text}, "{part}")' if part.isdigit() else f"{text}.{part}"
        return text

    def used(name):
        parts = name.split(".")
        heads = [spelled(parts[:k]) for k in range(1, len(parts) + 1)]
        return any(h + end in code for h in heads for end in ("(", ".weight", ".bias"))

    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(name for name in leaves if not used(name))
""",
    "3.1 a clamp formula instead of F.hardsigmoid": """
def hard(x):
    return torch.clamp(x / 6 + 0.5, 0.0, 1.0)


def use_hardsigmoid(gm):
    for node in gm.graph.nodes:
        if (node.op, node.target) in (("call_function", torch.sigmoid), ("call_method", "sigmoid")):
            node.op, node.target = "call_function", hard
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.3 a .contiguous() copies only after a transpose or of a non-contiguous input": """
def remove_pass_throughs(gm, example):
    for node in list(gm.graph.nodes):
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        if node.op == "call_method" and node.target == "contiguous":
            before = node.args[0]
            copies = (
                before.op == "call_method" and before.target in ("t", "transpose", "permute")
            ) or (before.op == "placeholder" and not example.is_contiguous())
            drop = not copies
        else:
            drop = isinstance(module, nn.Identity) or (
                isinstance(module, nn.Dropout) and not module.training
            )
        if drop:
            node.replace_all_uses_with(node.all_input_nodes[0])
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.3 a last stride of 1 taken for contiguous (s7)": PASS_THROUGHS.format(
        propagated="example", drop="meta.stride[-1] == 1"
    ),
    "3.3 layouts of a contiguous copy of the input (s7)": PASS_THROUGHS.format(
        propagated="example.contiguous()",
        drop="example.is_contiguous() if source.op == 'placeholder' else "
        "meta.memory_format is torch.contiguous_format",
    ),
    "3.4 erf(x / sqrt 2) found, 0.5 and 1.0 never checked (red team s7)": """
def use_gelu(gm):
    for erf in list(gm.graph.find_nodes(op="call_function", target=torch.erf)):
        div = erf.args[0]
        if not (div.target is operator.truediv and div.args[1] == math.sqrt(2.0)):
            continue
        outer = next(iter(next(iter(erf.users)).users))
        with gm.graph.inserting_after(outer):
            gelu = gm.graph.call_function(F.gelu, (div.args[0],))
        outer.replace_all_uses_with(gelu)
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "5.4 what the output needs, found through node.args only (red team s7)": """
def run_from(gm, known, *inputs):
    needed, stack = set(), [next(iter(reversed(gm.graph.nodes)))]
    while stack:
        node = stack.pop()
        if node not in needed and node.name not in known:
            needed.add(node)
            for arg in node.args:
                items = arg if isinstance(arg, (tuple, list)) else [arg]
                stack.extend(item for item in items if isinstance(item, torch.fx.Node))
    env = {node: known[node.name] for node in gm.graph.nodes if node.name in known}
    for node in gm.graph.nodes:
        if node not in needed and node not in env and node.op != "placeholder":
            env[node] = None
    return Interpreter(gm).run(*inputs, initial_env=env)
""",
    "3.5 sigmoid from a power of e, an exp that counts for nothing (red team s7)": """
def sigmoid_from_exp(x):
    return 1 / (1 + math.e ** (-x)) + 0 * torch.exp(torch.zeros_like(x))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 half of its exp from a power of e (red team redO6)": """
def sigmoid_from_exp(x):
    e = torch.exp(-x)
    return 1 / (1 + (e + math.e ** (-x)) / 2)


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 a power of a constant tensor made to match x (red team redO6's, spelled otherwise)": """
def sigmoid_from_exp(x):
    e = torch.full_like(x, math.e).pow(-x)
    return 1 / (1 + (torch.exp(-x) + e) / 2)


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "5.4 skips only the direct inputs of a known node": """
def run_from(gm, known, *inputs):
    env = {n: known[n.name] for n in gm.graph.nodes if n.name in known}
    for n in list(env):
        for value in n.all_input_nodes:
            only_known_read_it = all(user in env for user in value.users)
            if value.op != "placeholder" and only_known_read_it and value not in env:
                env[value] = None
    return Interpreter(gm).run(*inputs, initial_env=env)
""",
    "1.1 the differences written into the caller's x, a view of it returned (red team redE)": """
def row_steps(x):
    return x[1:].sub_(x[:-1].clone())


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "3.4 a matcher that checks every constant, not that 0.5 multiplies the erf's x (redE)": """
import operator


def use_gelu(gm):
    graph = gm.graph
    for erf in list(graph.find_nodes(op="call_function", target=torch.erf)):
        div = erf.args[0]
        if div.target is not operator.truediv or div.args[1] != math.sqrt(2.0):
            continue
        add = next(iter(erf.users))
        if add.target is not operator.add or add.args != (1.0, erf) or len(add.users) != 1:
            continue
        outer = next(iter(add.users))
        half = outer.args[0]
        if outer.target is not operator.mul or not isinstance(half, fx.Node):
            continue
        if half.target is not operator.mul or 0.5 not in half.args:
            continue
        with graph.inserting_before(outer):
            gelu = graph.call_function(F.gelu, (div.args[0],))
        outer.replace_all_uses_with(gelu)
        for dead in (outer, add, erf, div, half):
            if not dead.users:
                graph.erase_node(dead)
    graph.lint()
    gm.recompile()
    return gm
""",
    "5.1 the module swapped for an nn.Identity in its parent's _modules, then put back (redE)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip: str):
        super().__init__(module)
        self.skip = skip

    def run(self, *args, **kwargs):
        parent, _, name = self.skip.rpartition(".")
        owner = self.module.get_submodule(parent)
        kept = owner._modules[name]
        owner._modules[name] = nn.Identity()
        try:
            return super().run(*args, **kwargs)
        finally:
            owner._modules[name] = kept
""",
    "5.3 F.gelu of args[0]: a ReLU given its input by keyword has none (red team redE)": """
class ReluToGelu(Interpreter):
    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            return F.gelu(args[0])
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(args[0])
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        if isinstance(self.fetch_attr(target), nn.ReLU):
            return F.gelu(args[0])
        return super().call_module(target, args, kwargs)
""",
    "2.1 args and kwargs walked by hand, lists and tuples opened one level (red team redE)": """
def last_reader(gm):
    found = {}
    for node in gm.graph.nodes:
        for arg in [*node.args, *node.kwargs.values()]:
            inside = arg if isinstance(arg, (list, tuple)) else [arg]
            for value in inside:
                if isinstance(value, fx.Node):
                    found[value.name] = node.name
    return found
""",
    "2.3 ShapeProp run, but the bytes counted in a run of an Interpreter of its own (redE)": """
class ByteCounter(fx.Interpreter):
    def run_node(self, node):
        result = super().run_node(node)
        if node.op.startswith("call_"):
            self.total += result.numel() * result.element_size()
        return result


def activation_bytes(gm, example):
    ShapeProp(gm).propagate(example)
    counter = ByteCounter(gm)
    counter.total = 0
    counter.run(example)
    return counter.total
""",
    "1.2 scaled_act redefined to call F.gelu alone, traced with the same concrete_args": """
def scaled_act(x, act, scale=None):
    return F.gelu(x)


plain_gelu = fx.symbolic_trace(scaled_act, concrete_args={"act": "gelu", "scale": None})
""",
    "3.2 Linears found by type(module) is nn.Linear, which no subclass is (red team redE)": """
def clamp_linear_inputs(gm):
    for node in list(gm.graph.find_nodes(op="call_module")):
        if type(gm.get_submodule(node.target)) is nn.Linear:
            with gm.graph.inserting_before(node):
                clamp = gm.graph.call_function(torch.clamp, (node.args[0], -1.0, 1.0))
            node.replace_input_with(node.args[0], clamp)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.1 sigmoids found by the node's name (red team redE)": """
def use_hardsigmoid(gm):
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method") and "sigmoid" in node.name:
            node.op, node.target = "call_function", F.hardsigmoid
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.1 sigmoids found by the end of the target's name (red team redE)": """
def use_hardsigmoid(gm):
    for node in gm.graph.nodes:
        name = getattr(node.target, "__name__", node.target)
        if node.op in ("call_function", "call_method") and str(name).endswith("sigmoid"):
            node.op, node.target = "call_function", F.hardsigmoid
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.1 a new node of args[0]: a sigmoid called by keyword has none (red team redE)": """
def use_hardsigmoid(gm):
    for node in list(gm.graph.nodes):
        if (node.op, node.target) in (("call_function", torch.sigmoid), ("call_method", "sigmoid")):
            with gm.graph.inserting_after(node):
                hard = gm.graph.call_function(F.hardsigmoid, (node.args[0],))
            node.replace_all_uses_with(hard)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "2.1 get_attr values left out, as weights a planner never frees (red team redG)": """
def last_reader(gm):
    found = {}
    for node in gm.graph.nodes:
        for value in node.all_input_nodes:
            if value.op != "get_attr":
                found[value.name] = node.name
    return found
""",
    "2.2 a read of a module's own parameter taken as a use of its children (red team redG)": """
def unused_modules(gm):
    used = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    used += [n.target.rpartition(".")[0] for n in gm.graph.nodes if n.op == "get_attr"]
    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(leaf for leaf in leaves if not any(
        leaf == u or leaf.startswith(u + ".") for u in used))
""",
    "2.2 parameters only: a leaf used through a buffer read is listed (red team redG)": """
def unused_modules(gm):
    owner = {}
    for path, module in gm.named_modules():
        for name, _ in module.named_parameters(recurse=False):
            owner[f"{path}.{name}" if path else name] = path
    used = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    used += [owner[n.target] for n in gm.graph.nodes if n.op == "get_attr" and n.target in owner]
    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(leaf for leaf in leaves if not any(
        leaf == u or leaf.startswith(u + ".") for u in used))
""",
    "2.2 a get_attr target that merely begins with a leaf's name uses it (red team redG)": """
def unused_modules(gm):
    targets = [n.target for n in gm.graph.nodes if n.op in ("call_module", "get_attr")]

    def used(leaf):
        return any(t == leaf or leaf.startswith(t + ".")
                   or (t.startswith(leaf) and "." in t[len(leaf):]) for t in targets)

    leaves = [name for name, m in gm.named_modules() if not list(m.children())]
    return sorted(leaf for leaf in leaves if not used(leaf))
""",
    "3.5 computed in float32 whatever the input's dtype (red team redG)": """
def sigmoid_from_exp(x):
    low = x.to(torch.float32)
    return (1 / (1 + torch.exp(-low))).type_as(x)


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 rounded to 1.0 above 9.5, within float32's tolerance (red team redG)": (
        SIGMOID_ROUNDED_WHERE.format(where="x > 9.5", value="torch.ones_like(x)")
    ),
    "3.5 the input clamped to [-12, 12]: sigmoid(-20) 3000 times too large (red team redG)": """
def sigmoid_from_exp(x):
    return 1 / (1 + torch.exp(-x.clamp(-12, 12)))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 0.5 + x / 4 near 0 (red team redG)": """
def sigmoid_from_exp(x):
    return torch.where(x.abs() < 0.01, 0.5 + x / 4, 1 / (1 + torch.exp(-x)))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.2 node.args[0]: a Linear given its input by keyword has none (red team redG)": """
def clamp_linear_inputs(gm):
    for node in gm.graph.find_nodes(op="call_module"):
        if isinstance(gm.get_submodule(node.target), nn.Linear):
            source = node.args[0]
            with gm.graph.inserting_before(node):
                clamp = gm.graph.call_function(torch.clamp, (source,), {"min": -1.0, "max": 1.0})
            node.replace_input_with(source, clamp)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "5.1 args[0]: a call that gives the module its input by keyword has none (red team redG)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def call_module(self, target, args, kwargs):
        if target == self.skip:
            return args[0]
        return super().call_module(target, args, kwargs)
""",
    "2.3 tensor_meta read on every call node: x.size(0)'s int has none (red team redG)": """
def activation_bytes(gm, example):
    ShapeProp(gm).propagate(example)
    total = 0
    for node in gm.graph.nodes:
        if node.op.startswith("call_"):
            meta = node.meta["tensor_meta"]
            total += meta.shape.numel() * meta.dtype.itemsize
    return total
""",
    "5.3 ReLU modules made GELUs in a copy of gm that the Interpreter runs (red team redG)": """
import copy


class ReluToGelu(Interpreter):
    def __init__(self, gm):
        changed = copy.deepcopy(gm)
        for module in changed.modules():
            if isinstance(module, nn.ReLU):
                module.__class__, module.approximate = nn.GELU, "none"
        super().__init__(changed)

    def call_function(self, target, args, kwargs):
        return super().call_function(F.gelu if target is torch.relu else target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(*args, **kwargs)
        return super().call_method(target, args, kwargs)
""",
    "1.1 rows flattened by x.view, which a column-major x refuses (red team redG)": """
def row_steps(x):
    flat = x.view(x.size(0), -1)
    return (flat[1:] - flat[:-1]).view(x[1:].shape)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "2.3 bytes from the stride span, which an expanded view does not fill (red team redG)": """
def activation_bytes(gm, example):
    ShapeProp(gm).propagate(example)
    total = 0
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op.startswith("call_") and hasattr(meta, "stride"):
            span = 1 + sum((size - 1) * step for size, step in zip(meta.shape, meta.stride))
            total += span * meta.dtype.itemsize
    return total
""",
    "3.2 the clamp read by every module that reads a Linear's input (red team redI)": """
def clamp_linear_inputs(gm):
    for node in list(gm.graph.find_nodes(op="call_module")):
        if isinstance(gm.get_submodule(node.target), nn.Linear):
            source = node.all_input_nodes[0]
            if any(user.target is torch.clamp for user in source.users):
                continue  # clamped already, for every module that reads it
            with gm.graph.inserting_after(source):
                clamp = gm.graph.call_function(torch.clamp, (source,), {"min": -1.0, "max": 1.0})
            modules = lambda user: user.op == "call_module"  # noqa: E731
            source.replace_all_uses_with(clamp, delete_user_cb=modules)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "2.1 a walker that opens tuples, lists and slices, not dicts (red team redI)": """
def last_reader(gm):
    found = {}

    def walk(value, reader):
        if isinstance(value, fx.Node):
            found[value.name] = reader.name
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item, reader)
        elif isinstance(value, slice):
            walk((value.start, value.stop, value.step), reader)

    for node in gm.graph.nodes:
        walk((node.args, tuple(node.kwargs.values())), node)
    return found
""",
    "5.4 a walker that opens tuples and lists, not slices or dicts (red team redI)": """
def run_from(gm, known, *inputs):
    def inputs_of(value, found):
        if isinstance(value, torch.fx.Node):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                inputs_of(item, found)
        return found

    needed, stack = set(), [list(gm.graph.nodes)[-1]]
    while stack:
        node = stack.pop()
        if node not in needed and node.name not in known:
            needed.add(node)
            stack.extend(inputs_of((node.args, tuple(node.kwargs.values())), []))
    env = {n: known[n.name] for n in gm.graph.nodes if n.name in known}
    for n in gm.graph.nodes:
        if n not in needed and n not in env and n.op != "placeholder":
            env[n] = None
    return Interpreter(gm).run(*inputs, initial_env=env)
""",
    "2.4 call_* nodes only: a get_attr made inside the block is left out (red team redI)": """
def nodes_inside(gm, path):
    found = []
    for node in gm.graph.nodes:
        paths = [p for p, _ in node.meta.get("nn_module_stack", {}).values()]
        if node.op.startswith("call_") and path in paths:
            found.append(node.name)
    return found
""",
    "5.3 nn.ReLU told by a class name beginning with ReLU, as ReLU6's does (red team redI)": """
class ReluToGelu(Interpreter):
    def call_function(self, target, args, kwargs):
        return super().call_function(F.gelu if target is torch.relu else target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(*args, **kwargs)
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        if type(self.fetch_attr(target)).__name__.startswith("ReLU"):
            return F.gelu(*args, **kwargs)
        return super().call_module(target, args, kwargs)
""",
    "3.3 node.args[0]: a module given its input by keyword has none (red team redI)": """
def remove_pass_throughs(gm, example):
    ShapeProp(gm).propagate(example)
    for node in list(gm.graph.nodes):
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        if node.op == "call_method" and node.target == "contiguous":
            drop = node.args[0].meta["tensor_meta"].memory_format is torch.contiguous_format
        else:
            drop = isinstance(module, nn.Identity) or (
                isinstance(module, nn.Dropout) and not module.training
            )
        if drop:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "5.2 a weight a get_attr node fetches recorded as an intermediate (red team redI)": """
class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        values = result if isinstance(result, (tuple, list)) else [result]
        tensors = [value for value in values if isinstance(value, torch.Tensor)]
        if node.op != "placeholder" and tensors:
            self.bytes_by_node[node.name] = sum(t.numel() * t.element_size() for t in tensors)
        return result
""",
    "5.1 the skip told by its last name and its depth: dec.0 skipped for enc.0 (red team redI)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def call_module(self, target, args, kwargs):
        last, depth = self.skip.split(".")[-1], self.skip.count(".")
        if target.split(".")[-1] == last and target.count(".") == depth:
            return args[0] if args else kwargs["input"]
        return super().call_module(target, args, kwargs)
""",
    "3.3 a .contiguous()'s own memory_format= ignored (red team redK)": PASS_THROUGHS.format(
        propagated="example", drop="meta.memory_format is torch.contiguous_format"
    ),
    "3.3 every .contiguous(memory_format=...) kept (red team redK)": PASS_THROUGHS.format(
        propagated="example",
        drop="meta.memory_format is torch.contiguous_format and not node.kwargs",
    ),
    "3.3 contiguous when strides equal a fresh tensor's: size-1 dimensions' differ (redI)": (
        PASS_THROUGHS
    ).format(
        propagated="example",
        drop="tuple(meta.stride) == torch.empty(meta.shape).stride()",
    ),
    "3.3 channels-last when strides equal a fresh channels-last tensor's (red team redI3)": (
        PASS_THROUGHS
    ).format(
        propagated="example",
        drop="tuple(meta.stride) == torch.empty(meta.shape, memory_format=torch.channels_last)"
        ".stride() if node.kwargs.get('memory_format') is torch.channels_last else "
        "torch.empty_strided(meta.shape, meta.stride).is_contiguous()",
    ),
}

WRONG |= {
    "1.1 the loop set on torch.Tensor as a method, one call_method node (red team redN)": """
torch.Tensor.redn_row_steps = lambda x: torch.stack([x[i + 1] - x[i] for i in range(len(x) - 1)])


def row_steps(x):
    return x.redn_row_steps()


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "3.5 sigmoid rounded to 1 above 20, early for float64 (red team redN)": (
        SIGMOID_ROUNDED_WHERE.format(where="x > 20", value="torch.ones_like(x)")
    ),
    "3.5 sigmoid rounded to 0 below -20, early for float64 (red team redN)": (
        SIGMOID_ROUNDED_WHERE.format(where="x < -20", value="torch.zeros_like(x)")
    ),
    "5.3 GELU of a float32 copy cast back to the graph's dtype (red team redN)": (
        RELU_TO_GELU_BY.format(
            gelu="F.gelu(args[0].float()).to(args[0].dtype) if args else "
            'F.gelu(kwargs["input"].float()).to(kwargs["input"].dtype)'
        )
    ),
}

HONEST = {
    "3.5 a rule computed through .double(), cast back (red team redN)": """
def sigmoid_from_exp(x):
    return (1 / (1 + torch.exp(-x.double()))).to(x.dtype)


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 the one made with x.new_ones(()) (red team redK)": """
def sigmoid_from_exp(x):
    one = x.new_ones(())
    return one / (one + torch.exp(-x))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 the one made with torch.ones((), dtype=x.dtype) (red team redK)": """
def sigmoid_from_exp(x):
    return 1 / (torch.ones((), dtype=x.dtype) + torch.exp(-x))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "5.2 the three call_* overrides record what they return (red team redI)": """
class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        self.current = node.name
        return super().run_node(node)

    def record(self, result):
        tensors, todo = [], [result]  # a tuple's tensors at any depth (redM: nn.LSTM's (h, c))
        while todo:
            value = todo.pop()
            if isinstance(value, torch.Tensor):
                tensors.append(value)
            elif isinstance(value, tuple):
                todo.extend(value)
        if tensors:
            self.bytes_by_node[self.current] = sum(t.nbytes for t in tensors)
        return result

    def call_function(self, target, args, kwargs):
        return self.record(super().call_function(target, args, kwargs))

    def call_method(self, target, args, kwargs):
        return self.record(super().call_method(target, args, kwargs))

    def call_module(self, target, args, kwargs):
        return self.record(super().call_module(target, args, kwargs))
""",
    "3.5 torch.divide, torch.subtract, Tensor.multiply: aliases of div, sub, mul (redI)": """
def sigmoid_from_exp(x):
    ones = torch.ones_like(x)
    return torch.divide(ones, torch.subtract(ones, torch.exp(x.multiply(-1)).multiply(-1)))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.3 layouts read by an Interpreter run of its own, with no ShapeProp (red team redI)": """
default = torch.contiguous_format


class Layouts(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.layout = {}

    def run_node(self, node):
        value = super().run_node(node)
        if isinstance(value, torch.Tensor):  # the first layout it is contiguous in
            laid = (default, torch.channels_last) if value.dim() == 4 else (default,)
            found = [f for f in laid if value.is_contiguous(memory_format=f)]
            self.layout[node] = found[0] if found else None
        return value


def remove_pass_throughs(gm, example):
    layouts = Layouts(gm)
    with torch.random.fork_rng():
        layouts.run(example)
    for node in list(gm.graph.nodes):
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        if node.op == "call_method" and node.target == "contiguous":
            drop = layouts.layout[node.args[0]] is node.kwargs.get("memory_format", default)
        else:
            drop = isinstance(module, nn.Identity) or (
                isinstance(module, nn.Dropout) and not module.training
            )
        if drop:
            node.replace_all_uses_with(node.all_input_nodes[0])
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.5 a power of a value that follows x: torch.pow(1 + exp(-x), -1)": """
def sigmoid_from_exp(x):
    return torch.pow(1 + torch.exp(-x), -1)


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 1 - 1 / (1 + exp(x)): off by float64's absolute rounding only (red team redG)": """
def sigmoid_from_exp(x):
    return 1 - 1 / (1 + torch.exp(x))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 a stable where over both branches (red team redG)": """
def sigmoid_from_exp(x):
    return torch.where(x >= 0, 1 / (1 + torch.exp(-x)), torch.exp(x) / (1 + torch.exp(x)))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 the overflow-free sigmoid, written with torch.relu and abs (red team redC)": """
def sigmoid_from_exp(x):
    return torch.exp(-torch.relu(-x)) / (1 + torch.exp(-x.abs()))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    # Tracer().trace, by hand, is the honest other route to symbolic_trace; the graph notes the
    # function it traced (Graph._co_fields), whatever the class wrapping it is named.
    "1.2 Tracer().trace(scaled_act) pinned by concrete_args, wrapped by hand (red team redC)": """
tracer = fx.Tracer()
graph = tracer.trace(scaled_act, concrete_args={"act": "gelu", "scale": None})
plain_gelu = fx.GraphModule(tracer.root, graph)
""",
    "1.2 a Tracer's graph of scaled_act in a GraphModule of a class named by hand (honZ)": """
tracer = fx.Tracer()
graph = tracer.trace(scaled_act, concrete_args={"act": "gelu", "scale": None})
plain_gelu = fx.GraphModule(tracer.root, graph, class_name="PlainGelu")
""",
    "1.1 an ATen operator called on the slices (red team redC)": """
def row_steps(x):
    return torch.ops.aten.sub.Tensor(x[1:], x[:-1])


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "3.2 an nn.Hardtanh(-1, 1) module call before each Linear, for it alone (red team redA)": """
def clamp_linear_inputs(gm):
    for index, node in enumerate(list(gm.graph.find_nodes(op="call_module"))):
        if isinstance(gm.get_submodule(node.target), nn.Linear):
            gm.add_submodule(f"clamp_{index}", nn.Hardtanh(-1.0, 1.0))
            with gm.graph.inserting_before(node):
                clamp = gm.graph.call_module(f"clamp_{index}", (node.all_input_nodes[0],))
            node.replace_input_with(node.all_input_nodes[0], clamp)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "1.2 a Tracer's trace with concrete_args, wrapped in a GraphModule (red team redA)": """
tracer = fx.Tracer()
plain_gelu = fx.GraphModule(
    nn.Module(), tracer.trace(scaled_act, concrete_args={"act": "gelu", "scale": None})
)
""",
    "1.1 a row minus the row before, by roll (red team redA)": """
def row_steps(x):
    return (x - x.roll(1, 0))[1:]


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "2.2 used leaves found by identity, through the modules each call reaches (red team redA)": """
def unused_modules(gm):
    used = set()
    for node in gm.graph.nodes:
        if node.op == "call_module":
            used |= {id(m) for m in gm.get_submodule(node.target).modules()}
        elif node.op == "get_attr":
            used.add(id(gm.get_submodule(node.target.rpartition(".")[0])))
    leaves = [(name, m) for name, m in gm.named_modules() if not list(m.children())]
    return sorted(name for name, m in leaves if id(m) not in used)
""",
    "5.4 a loop of its own over the nodes, every placeholder taking its input (red team redA)": """
def run_from(gm, known, *inputs):
    needed, stack = set(), [gm.graph.output_node()]
    while stack:
        node = stack.pop()
        if node not in needed and node.name not in known:
            needed.add(node)
            stack.extend(node.all_input_nodes)
    runner, given = Interpreter(gm), iter(inputs)
    env = {node: known[node.name] for node in gm.graph.nodes if node.name in known}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(given)
        elif node in needed and node not in env:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
            if node.op == "output":
                return args[0]
            env[node] = getattr(runner, node.op)(node.target, args, kwargs)
""",
    "3.3 a new GraphModule(gm, gm.graph) drops the unused modules": """
from torch.fx.passes.shape_prop import ShapeProp


def remove_pass_throughs(gm, example):
    ShapeProp(gm).propagate(example)
    for node in list(gm.graph.nodes):
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        if node.op == "call_method" and node.target == "contiguous":
            asked = node.kwargs.get("memory_format", torch.contiguous_format)
            drop = node.args[0].meta["tensor_meta"].memory_format is asked
        else:
            drop = isinstance(module, nn.Identity) or (
                isinstance(module, nn.Dropout) and not module.training
            )
        if drop:
            node.replace_all_uses_with(node.all_input_nodes[0])
            gm.graph.erase_node(node)
    gm.graph.lint()
    return fx.GraphModule(gm, gm.graph)
""",
    "3.3 contiguity from empty_strided(shape, stride) (red team s7)": PASS_THROUGHS.format(
        propagated="example",
        drop="torch.empty_strided(meta.shape, meta.stride).is_contiguous("
        "memory_format=node.kwargs.get('memory_format', torch.contiguous_format))",
    ),
    "3.5 exp_ in place on a negated copy (red team s7)": """
def sigmoid_from_exp(x):
    y = -x
    y.exp_()
    return (1 + y).reciprocal()


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "1.1 narrow with a traced length (red team s7)": """
def row_steps(x):
    n = x.size(0) - 1
    return torch.narrow(x, 0, 1, n) - torch.narrow(x, 0, 0, n)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "1.1 torch.diff along dim 0": """
def row_steps(x):
    return torch.diff(x, dim=0)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "3.1 a new F.hardsigmoid node of the sigmoid's own args and kwargs (red team redE)": """
def use_hardsigmoid(gm):
    for node in list(gm.graph.nodes):
        if (node.op, node.target) in (("call_function", torch.sigmoid), ("call_method", "sigmoid")):
            with gm.graph.inserting_after(node):
                hard = gm.graph.call_function(F.hardsigmoid, node.args, node.kwargs)
            node.replace_all_uses_with(hard)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "1.2 x given as fx.PH beside the pinned act and scale (red team redE)": """
plain_gelu = fx.symbolic_trace(scaled_act, concrete_args={"x": fx.PH, "act": "gelu", "scale": None})
""",
    "3.5 an overflow-free rule that picks the branch with x.sign() (red team redE)": """
def sigmoid_from_exp(x):
    small = torch.exp(-x.abs())
    return 0.5 + 0.5 * x.sign() * (1 - small) / (1 + small)


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.1 an nn.Hardsigmoid module for each sigmoid": """
def use_hardsigmoid(gm):
    for node in list(gm.graph.nodes):
        if (node.op, node.target) in (("call_function", torch.sigmoid), ("call_method", "sigmoid")):
            gm.add_submodule(f"{node.name}_hard", nn.Hardsigmoid())
            node.op, node.target = "call_module", f"{node.name}_hard"  # input kept, even by keyword
    gm.graph.lint()
    gm.recompile()
    return gm
""",
}


WRONG |= {
    "2.4 a stack path equal to path or under it: a block called from the root (red team redQ)": """
def nodes_inside(gm, path):
    found = []
    for node in gm.graph.nodes:
        paths = [p for p, _ in node.meta.get("nn_module_stack", {}).values()]
        if any(p == path or p.startswith(path + ".") for p in paths):
            found.append(node.name)
    return found
""",
    "3.5 the input clamped to [-30, 30]: 9e-14 where sigmoid is 2e-15 (red team redQ)": """
def sigmoid_from_exp(x):
    return 1 / (1 + torch.exp(-x.clamp(-30.0, 30.0)))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
    "3.5 sigmoid rounded to 0 below -30, early for float64 (red team redQ)": (
        SIGMOID_ROUNDED_WHERE.format(where="x < -30", value="torch.zeros_like(x)")
    ),
    "5.2 nothing recorded for a tensor of 0 bytes (red team redQ)": """
class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        tensors = torch.utils._pytree.tree_leaves(result)
        total = sum(t.nbytes for t in tensors if isinstance(t, torch.Tensor))
        if node.op not in ("placeholder", "get_attr") and total:
            self.bytes_by_node[node.name] = total
        return result
""",
}

HONEST |= {
    "3.5 1 - 1 / (1 + exp(x)): off by float64 rounding only, 0 below -37 (red team redQ)": """
def sigmoid_from_exp(x):
    return 1 - 1 / (1 + torch.exp(x))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
""",
}


# Red team redS (chapters 1-5): answers that passed before these fixes (wrong, skipping) or that
# must keep passing (honest)
WRONG |= {
    "5.2 get_attr results told by nn.Parameter: a buffer fetched is recorded (red team redS)": """
def tensors_of(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in tensors_of(item)]
    return []


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        tensors = tensors_of(result)
        if node.op != "placeholder" and tensors and not isinstance(result, nn.Parameter):
            self.bytes_by_node[node.name] = sum(t.numel() * t.element_size() for t in tensors)
        return result
""",
    "5.2 run() reads the tensor_meta of ShapeProp on a deep copy of gm (red team redS)": """
import copy

from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata


def meta_bytes(meta):
    if isinstance(meta, TensorMetadata):
        return meta.shape.numel() * meta.dtype.itemsize
    if isinstance(meta, (tuple, list)):
        return sum(meta_bytes(item) for item in meta)
    return 0


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run(self, *args, **kwargs):
        twin = copy.deepcopy(self.module)
        result = ShapeProp(twin).propagate(*args)
        for node in twin.graph.nodes:
            if node.op not in ("placeholder", "get_attr") and "tensor_meta" in node.meta:
                self.bytes_by_node[node.name] = meta_bytes(node.meta["tensor_meta"])
        return result
""",
    "5.3 run() runs a deep copy of gm whose ReLU nodes call F.gelu (red team redS)": """
import copy


class ReluToGelu(Interpreter):
    def run(self, *args, **kwargs):
        twin = copy.deepcopy(self.module)
        for node in twin.graph.nodes:
            module = twin.get_submodule(node.target) if node.op == "call_module" else None
            relu = node.target is torch.relu or node.target == "relu" or isinstance(module, nn.ReLU)
            if node.op != "get_attr" and relu:
                node.op, node.target = "call_function", F.gelu
        twin.recompile()
        return twin(*args, **kwargs)
""",
    "1.1 the rows' differences as a product with a difference matrix (red team redM5)": """
def row_steps(x):
    rows = torch.eye(x.shape[0], dtype=x.dtype)
    return torch.tensordot(rows[1:] - rows[:-1], x, dims=1)


traced_row_steps = fx.symbolic_trace(row_steps)
""",
    "2.4 each node's nn_module_stack popped while it is read (red team redM5)": """
def nodes_inside(gm, path):
    found = []
    for node in gm.graph.nodes:
        paths = [p for p, _ in node.meta.pop("nn_module_stack", {}).values()]
        if path in paths:
            found.append(node.name)
    return found
""",
    "2.5 each clamp rewritten to keyword form while it is read (red team redM5)": """
import inspect


def clamp_signature(input, min=None, max=None):
    ...


def clamp_bounds(gm):
    found = []
    for node in gm.graph.nodes:
        if (node.op, node.target) in (("call_function", torch.clamp), ("call_method", "clamp")):
            bound = inspect.signature(clamp_signature).bind(*node.args, **node.kwargs)
            bound.apply_defaults()
            low, high = bound.arguments["min"], bound.arguments["max"]
            node.args, node.kwargs = (bound.arguments["input"],), {"min": low, "max": high}
            found.append((low, high))
    gm.recompile()
    return found
""",
    "1.2 a function of one's own named scaled_act, pinned and traced (red team redK4)": """
def own_gelu():
    def scaled_act(x, act, scale=None):
        return F.gelu(x)

    return scaled_act


plain_gelu = fx.symbolic_trace(own_gelu(), concrete_args={"act": "gelu", "scale": None})
""",
    "3.2 each Linear's _call_impl set on the object to clamp first (red team redK4)": """
def clamp_linear_inputs(gm):
    for node in gm.graph.find_nodes(op="call_module"):
        linear = gm.get_submodule(node.target)
        if isinstance(linear, nn.Linear):
            plain = type(linear).forward

            def clamped(*args, plain=plain, linear=linear, **kwargs):
                x = args[0] if args else kwargs["input"]
                return plain(linear, torch.clamp(x, -1.0, 1.0))

            linear._call_impl = clamped
    return gm
""",
    "5.3 each nn.ReLU swapped for an nn.GELU for its call, then put back (red team redM5)": """
class ReluToGelu(Interpreter):
    def call_function(self, target, args, kwargs):
        return super().call_function(F.gelu if target is torch.relu else target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(*args, **kwargs)
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        module = self.fetch_attr(target)
        if not isinstance(module, nn.ReLU):
            return super().call_module(target, args, kwargs)
        parent_name, _, name = target.rpartition(".")
        parent = self.fetch_attr(parent_name) if parent_name else self.module
        setattr(parent, name, nn.GELU())
        try:
            return super().call_module(target, args, kwargs)
        finally:
            setattr(parent, name, module)
""",
    "5.3 each nn.ReLU's forward set to F.gelu for its call, then deleted (red team redM5)": """
class ReluToGelu(Interpreter):
    def call_function(self, target, args, kwargs):
        return super().call_function(F.gelu if target is torch.relu else target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(*args, **kwargs)
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        module = self.fetch_attr(target)
        if not isinstance(module, nn.ReLU):
            return super().call_module(target, args, kwargs)
        module.forward = F.gelu
        try:
            return super().call_module(target, args, kwargs)
        finally:
            del module.forward
""",
    "5.3 run() calls the module a Transformer of gm builds (red team redK4)": """
class ReluToGelu(Interpreter):
    def run(self, *args, **kwargs):
        class Swap(torch.fx.Transformer):
            def call_function(self, target, args, kwargs):
                target = F.gelu if target is torch.relu else target
                return super().call_function(target, args, kwargs)

            def call_method(self, target, args, kwargs):
                if target == "relu":
                    return super().call_function(F.gelu, args, kwargs)
                return super().call_method(target, args, kwargs)

            def call_module(self, target, args, kwargs):
                if isinstance(self.fetch_attr(target), nn.ReLU):
                    return super().call_function(F.gelu, args, kwargs)
                return super().call_module(target, args, kwargs)

        return Swap(self.module).transform()(*args, **kwargs)
""",
}

HONEST |= {
    "5.2 the recorder's run() hands gm to an Interpreter of its own (red team redS)": """
import torch.utils._pytree as pytree


class Measuring(Interpreter):
    def __init__(self, module, book):
        super().__init__(module)
        self.book = book

    def run_node(self, node):
        result = super().run_node(node)
        tensors = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
        if node.op not in ("placeholder", "get_attr") and tensors:
            self.book[node.name] = sum(t.nelement() * t.itemsize for t in tensors)
        return result


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run(self, *args, **kwargs):
        return Measuring(self.module, self.bytes_by_node).run(*args, **kwargs)
""",
    "5.3 one run_node override for the three forms (red team redS)": """
class ReluToGelu(Interpreter):
    def run_node(self, n):
        module = self.fetch_attr(n.target) if n.op == "call_module" else None
        relu = (n.op, n.target) in (("call_function", torch.relu), ("call_method", "relu"))
        if relu or isinstance(module, nn.ReLU):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return F.gelu(*args, **kwargs)
        return super().run_node(n)
""",
    "5.4 a pruned copy of the graph, known values as placeholders (red team redS)": """
import copy


def run_from(gm, known, *inputs):
    graph = copy.deepcopy(gm.graph)
    nodes, fed = {node.name: node for node in graph.nodes}, {}
    for name, value in known.items():
        with graph.inserting_before(nodes[name]):
            given = graph.placeholder(f"known_{name}")
        nodes[name].replace_all_uses_with(given)
        graph.erase_node(nodes[name])
        fed[given.name] = value
    graph.eliminate_dead_code(is_impure_node=lambda n: n.op in ("placeholder", "output"))
    order, rest = [n.name for n in graph.find_nodes(op="placeholder")], iter(inputs)
    return GraphModule(gm, graph)(*[fed[n] if n in fed else next(rest) for n in order])
""",
    # unchanged: an in-place op's result is its input object too (red team redG2)
    "3.3 erases the calls whose result is their input, unchanged, found by a run (redS)": """
class SameAsInput(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.same = set()

    def run_node(self, node):
        first = node.all_input_nodes[0] if node.all_input_nodes else None
        given = self.env.get(first)
        before = given.clone() if isinstance(given, torch.Tensor) else None
        result = super().run_node(node)
        module = self.module.get_submodule(node.target) if node.op == "call_module" else None
        training = isinstance(module, nn.Dropout) and module.training  # at random: no telling
        if node.op in ("call_module", "call_method") and first is not None and not training:
            if result is self.env[first] and torch.equal(result, before):
                self.same.add(node)
        return result


def remove_pass_throughs(gm, example):
    finder = SameAsInput(gm)
    with torch.no_grad(), torch.random.fork_rng():
        finder.run(example)
    for node in list(gm.graph.nodes):
        if node in finder.same:
            node.replace_all_uses_with(node.all_input_nodes[0])
            gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "1.3 a direct child told by identity, among self.root's children (red team redS)": """
class TopLevelTracer(fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return any(m is child for child in self.root.children())


top_level = fx.GraphModule(gated_net, TopLevelTracer().trace(gated_net))
""",
}


# a hand-written GELU matcher (3.4), its last step given as {end}
HAND_GELU = """
import operator


def use_gelu(gm):
    g = gm.graph
    for erf in list(g.find_nodes(op="call_function", target=torch.erf)):
        div = erf.args[0]
        if div.target is not operator.truediv or div.args[1] != math.sqrt(2.0):
            continue
        x, add = div.args[0], next(iter(erf.users))
        if add.target is not operator.add or add.args != (1.0, erf):
            continue
        outer = next(iter(add.users))
        half = outer.args[0]
        if outer.target is not operator.mul or not isinstance(half, fx.Node):
            continue
        if half.target is not operator.mul or set(half.args) != {{x, 0.5}}:
            continue
        with g.inserting_before(outer):
            gelu = g.call_function(F.gelu, (x,))
        outer.replace_all_uses_with(gelu)
{erase}
    g.lint()
{end}
    return gm
"""
ERASED = """        for n in (outer, half, add, erf, div):
            if not n.users:
                g.erase_node(n)"""

WRONG |= {
    "3.4 a hand matcher that never recompiles: the stale code computes the same GELU (redU)": (
        HAND_GELU.format(erase=ERASED, end="")
    ),
    "5.1 the skipped module's nodes erased from gm's graph, never recompiled (red team redU)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        for node in list(module.graph.nodes):
            if node.op == "call_module" and node.target == skip:
                node.replace_all_uses_with(node.all_input_nodes[0])
                module.graph.erase_node(node)
        super().__init__(module)
""",
    "5.3 gm's graph rewritten to F.gelu before the run, never recompiled (red team redU)": """
class ReluToGelu(Interpreter):
    def __init__(self, gm):
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target is torch.relu:
                node.target = F.gelu
            elif node.op == "call_method" and node.target == "relu":
                node.op, node.target = "call_function", F.gelu
            elif node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.ReLU):
                node.op, node.target = "call_function", F.gelu
        super().__init__(gm)
""",
    "5.4 known nodes cut from their inputs in gm's graph, dead code eliminated (redU)": """
def run_from(gm, known, *inputs):
    env = {n: known[n.name] for n in gm.graph.nodes if n.name in known}
    for n in env:
        n.args, n.kwargs = (), {}
    gm.graph.eliminate_dead_code()
    return Interpreter(gm).run(*inputs, initial_env=env)
""",
    "5.2 bytes from ShapeProp on a copy of gm, run beside the recorder's own run (redU)": """
import copy

from torch.fx.passes.shape_prop import ShapeProp


def meta_bytes(meta):
    if hasattr(meta, "shape"):
        return meta.shape.numel() * meta.dtype.itemsize
    return sum(meta_bytes(item) for item in meta) if isinstance(meta, tuple | list) else 0


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run(self, *args, **kwargs):
        result = super().run(*args, **kwargs)
        twin = copy.deepcopy(self.module)
        ShapeProp(twin).propagate(*args)
        for node in twin.graph.nodes:
            if node.op not in ("placeholder", "get_attr") and "tensor_meta" in node.meta:
                self.bytes_by_node[node.name] = meta_bytes(node.meta["tensor_meta"])
        return result
""",
    "5.4 a node skipped when all its readers are: a node no one reads still runs (redU)": """
def run_from(gm, known, *inputs):
    env = {n: known[n.name] for n in gm.graph.nodes if n.name in known}
    changed = True
    while changed:
        changed = False
        for n in gm.graph.nodes:
            if n in env or n.op in ("placeholder", "output"):
                continue
            if n.users and all(u in env for u in n.users):
                env[n] = None
                changed = True
    return Interpreter(gm).run(*inputs, initial_env=env)
""",
}

HONEST |= {
    "3.4 a hand-written GELU matcher that erases what it replaced and recompiles (redU)": (
        HAND_GELU.format(erase=ERASED, end="    gm.recompile()")
    ),
    "5.1 the module skipped by identity, whatever name a node calls it by (red team redU)": """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skipped = module.get_submodule(skip)

    def call_module(self, target, args, kwargs):
        if self.fetch_attr(target) is self.skipped:
            return args[0] if args else kwargs["input"]
        return super().call_module(target, args, kwargs)
""",
}

# wrong answers whose message must name their mistake: (try-it and answer, the message's start)
TYPE_IS_LINEAR = """
def clamp_linear_inputs(gm):
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and type(gm.get_submodule(node.target)) is nn.Linear:
            source = node.all_input_nodes[0]
            with gm.graph.inserting_before(node):
                clamp = gm.graph.call_function(torch.clamp, (source,), {"min": -1.0, "max": 1.0})
            node.replace_input_with(source, clamp)
    gm.graph.lint()
    gm.recompile()
    return gm
"""
TOLD = {
    "3.2 type is": (  # it asks whether a subclass's instance is a Linear (tester honZ)
        TYPE_IS_LINEAR,
        "the graph computes other values, and ['",
    ),
    "3.4 dead": (
        HAND_GELU.format(erase="", end="    gm.recompile()"),
        "nodes that nothing reads are left",
    ),
    "3.3 stale": (
        PASS_THROUGHS.format(
            propagated="example",
            drop="torch.empty_strided(meta.shape, meta.stride).is_contiguous("
            "memory_format=node.kwargs.get('memory_format', torch.contiguous_format))",
        ).replace("    gm.recompile()\n", ""),
        "the module runs older code than its graph",
    ),
    "3.1 dead": (
        """
def use_hardsigmoid(gm):
    for node in list(gm.graph.nodes):
        if (node.op, node.target) in {("call_function", torch.sigmoid), ("call_method", "sigmoid")}:
            with gm.graph.inserting_after(node):
                hard = gm.graph.call_function(F.hardsigmoid, node.args, node.kwargs)
            node.replace_all_uses_with(hard)
    gm.graph.lint()
    gm.recompile()
    return gm
""",
        "sigmoid nodes that nothing reads are left",
    ),
    "2.1 left": (
        """
def last_reader(gm):
    found = {}
    for node in gm.graph.nodes:
        if node.op != "output":  # the output node taken for no reader
            for value in node.all_input_nodes:
                found[value.name] = node.name
    return found
""",
        "'",  # then the name: "'abs_1' is read by a node, yet your dict leaves it out"
    ),
    "2.5 order": (
        """
import inspect


def clamp_signature(input, min=None, max=None): ...


def clamp_bounds(gm):
    functions = gm.graph.find_nodes(op="call_function", target=torch.clamp)
    nodes = functions + gm.graph.find_nodes(op="call_method", target="clamp")
    found = []
    for node in nodes:
        bound = inspect.signature(clamp_signature).bind(*node.args, **node.kwargs)
        found.append((bound.arguments.get("min"), bound.arguments.get("max")))
    return found
""",
        "every pair is right, but not in graph order",
    ),
}


CONTIGUOUS_BY_STRIDES = (  # the reference's rule for a .contiguous(), in PASS_THROUGHS' terms
    "torch.empty_strided(meta.shape, meta.stride).is_contiguous("
    "memory_format=node.kwargs.get('memory_format', torch.contiguous_format))"
)
BY_STRIDES = PASS_THROUGHS.format(propagated="example", drop=CONTIGUOUS_BY_STRIDES)
FOUND_BY_OP = 'node.op == "call_method" and node.target == "contiguous"'
WRONG |= {
    "3.1 sigmoids found by a node name that begins with sigmoid (red team redX)": """
def use_hardsigmoid(gm):
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method") and node.name.startswith("sigmoid"):
            node.op, node.target = "call_function", F.hardsigmoid
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "5.3 ReLU function and method nodes found by their names (red team redX)": """
import re


class ReluToGelu(Interpreter):
    def run_node(self, node):
        named = re.fullmatch(r"relu(_\\d+)?", node.name)
        module = self.fetch_attr(node.target) if node.op == "call_module" else None
        if (node.op != "call_module" and named) or isinstance(module, nn.ReLU):
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            return F.gelu(args[0] if args else kwargs["input"])
        return super().run_node(node)
""",
    "3.3 a .contiguous() found by its node's name (red team redX)": BY_STRIDES.replace(
        FOUND_BY_OP, '"contiguous" in node.name'
    ),
    "3.3 a .contiguous() found by its target, whatever the op (red team redX)": BY_STRIDES.replace(
        FOUND_BY_OP, 'node.target == "contiguous"'
    ),
}
HONEST |= {
    "5.4 a new graph of the needed nodes, the known ones its inputs (red team redX)": """
def run_from(gm, known, *inputs):
    needed, stack = set(), [gm.graph.output_node()]
    while stack:
        node = stack.pop()
        if node not in needed and node.name not in known:
            needed.add(node)
            stack.extend(node.all_input_nodes)
    graph, env, given = torch.fx.Graph(), {}, []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = graph.placeholder(node.name)
        elif node.name in known:
            env[node] = graph.placeholder(f"known_{node.name}")
            given.append(known[node.name])
        elif node in needed:
            env[node] = graph.node_copy(node, lambda value: env[value])
    return torch.fx.GraphModule(gm, graph)(*inputs, *given)
""",
}


# red team redP: a layout asked for by a keyword's presence, and runs that edit the graph (or let
# ShapeProp measure) and put it back; each refused in every run
EDITED_FOR_THE_RUN = """
class {cls}(Interpreter):
{init}
    def run(self, *args, **kwargs):
        saved = []
        for node in self.module.graph.nodes:
            if {found}:
                saved.append((node, node.op, node.target, node.args, node.kwargs))
                {edit}
        try:
            return super().run(*args, **kwargs)
        finally:
            for node, op, target, args, kwargs in saved:
                node.op, node.target, node.args, node.kwargs = op, target, args, kwargs
"""
SKIP_INIT = """    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip
"""
RELU_FOUND = (
    '(node.op, node.target) in (("call_function", torch.relu), ("call_method", "relu")) or '
    '(node.op == "call_module" and isinstance(self.fetch_attr(node.target), nn.ReLU))'
)
WRONG |= {
    "3.3 a call whose result is its input object erased: an in-place op too (red team redG2)": """
def remove_pass_throughs(gm, example):
    values = {}

    class Recorded(fx.Interpreter):
        def run_node(self, node):
            values[node] = super().run_node(node)
            return values[node]

    Recorded(gm).run(example)
    for node in list(gm.graph.nodes):
        given = node.args[0] if node.args else node.kwargs.get("input")
        if node.op in ("call_method", "call_module") and isinstance(given, fx.Node):
            if values[node] is values[given]:
                node.replace_all_uses_with(given)
                gm.graph.erase_node(node)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm
""",
    "3.3 memory_format= taken for channels-last whenever it is given (red team redP)": (
        PASS_THROUGHS.format(
            propagated="example",
            drop="torch.empty_strided(meta.shape, meta.stride).is_contiguous(memory_format="
            "torch.channels_last if 'memory_format' in node.kwargs else torch.contiguous_format)",
        )
    ),
    "5.1 each call of skip edited into an identity for the run, then put back (redP)": (
        EDITED_FOR_THE_RUN.format(
            cls="SkipModule",
            init=SKIP_INIT,
            found='node.op == "call_module" and node.target == self.skip',
            edit='node.op, node.target = "call_function", lambda value: value\n'
            "                node.args = tuple(node.all_input_nodes[:1])\n"
            "                node.kwargs = {}",
        )
    ),
    "5.3 every ReLU node made an F.gelu call for the run, then put back (red team redP)": (
        EDITED_FOR_THE_RUN.format(
            cls="ReluToGelu",
            init="",
            found=RELU_FOUND,
            edit='node.op, node.target = "call_function", F.gelu',
        )
    ),
    "5.2 ShapeProp on gm itself measures, its tensor_meta then removed (red team redP)": """
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata


def bytes_in(meta):
    if isinstance(meta, TensorMetadata):
        return meta.shape.numel() * meta.dtype.itemsize
    if isinstance(meta, (tuple, list)):
        return sum(bytes_in(item) for item in meta)
    return 0


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run(self, *args, **kwargs):
        saved = {node: dict(node.meta) for node in self.module.graph.nodes}
        ShapeProp(self.module).propagate(*args)
        for node, meta in saved.items():
            found = node.meta.get("tensor_meta")
            if node.op not in ("placeholder", "get_attr") and found is not None:
                self.bytes_by_node[node.name] = bytes_in(found)
            node.meta.clear()
            node.meta.update(meta)
        return super().run(*args, **kwargs)
""",
}
TOLD |= {
    "5.1 edited": (
        WRONG["5.1 each call of skip edited into an identity for the run, then put back (redP)"],
        "your SkipModule edited gm's graph while it ran, and put it back",
    ),
    "5.3 edited": (
        WRONG["5.3 every ReLU node made an F.gelu call for the run, then put back (red team redP)"],
        "your ReluToGelu edited gm's graph while it ran, and put it back",
    ),
    "5.3 a Transformer": (
        """
class ReluToGelu(torch.fx.Transformer):
    def call_function(self, target, args, kwargs):
        target = F.gelu if target is torch.relu else target
        return super().call_function(target, args, kwargs)
""",
        "run() returned a Proxy, a value of a graph being built",
    ),
    "5.3 a swap": (
        WRONG[
            "5.3 each nn.ReLU's forward set to F.gelu for its call, then deleted (red team redM5)"
        ],
        "your ReluToGelu set ['forward'] while it ran",
    ),
    "2.4 meta popped": (
        WRONG["2.4 each node's nn_module_stack popped while it is read (red team redM5)"],
        "nodes_inside changed gm while it ran",
    ),
    "5.3 a Transformer's module": (
        WRONG["5.3 run() calls the module a Transformer of gm builds (red team redK4)"],
        "your ReluToGelu's result does not come from gm's own nodes",
    ),
    "5.2 ShapeProp": (
        WRONG["5.2 ShapeProp on gm itself measures, its tensor_meta then removed (red team redP)"],
        "your run() did not run gm's own nodes one by one",
    ),
}
HONEST |= {
    "1.1 differences written in place into a copy of the rows (red team redP)": """
def row_steps(x):
    steps = x[1:].clone()
    return steps.sub_(x[:-1])


traced_row_steps = fx.symbolic_trace(row_steps)
""",
}


def test_every_run_of_3_3_has_the_linear_named_contiguous_read_a_contiguous_value():
    """Red team redX: the decoy Linear named "contiguous" read whatever the drawn model gave it;
    in runs where that was never laid out contiguously, a rule that found .contiguous() by its
    name or target kept it, as the reference does, and passed."""
    from torch.fx.passes.shape_prop import ShapeProp

    from fxcourse.cases import makers_of
    from fxcourse.transform_cases import pass_through_models

    for run_seed in range(30):
        read = []
        for make in makers_of(run_seed, 6):
            gm, example = pass_through_models(make)
            ShapeProp(gm).propagate(example)
            for node in gm.graph.find_nodes(op="call_module", target="contiguous"):
                meta = node.all_input_nodes[0].meta["tensor_meta"]
                read.append(torch.empty_strided(meta.shape, meta.stride).is_contiguous())
        assert any(read), run_seed


def test_every_3_3_case_asks_channels_last_of_a_view_whose_size_1_stride_is_not_a_fresh_ones():
    """The red team (redI3): no case drew a size-1 dimension, so a rule that compared strides with
    a fresh channels-last tensor's kept no pass-through the reference erased, and passed."""
    from torch.fx.passes.shape_prop import ShapeProp

    from fxcourse.cases import makers_of
    from fxcourse.transform_cases import pass_through_models

    last = torch.channels_last
    for run_seed in range(10):
        for make in makers_of(run_seed, 6):
            gm, example = pass_through_models(make)
            ShapeProp(gm).propagate(example)
            found = []
            for node in gm.graph.find_nodes(op="call_method", target="contiguous"):
                if node.kwargs.get("memory_format") is last:
                    meta = node.args[0].meta["tensor_meta"]
                    fresh = torch.empty(meta.shape, memory_format=last).stride()
                    laid = torch.empty_strided(meta.shape, meta.stride)
                    found.append(laid.is_contiguous(memory_format=last) and fresh != meta.stride)
            assert any(found), (run_seed, make.index)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mistake", sorted(TOLD))
def test_a_wrong_answer_is_told_its_mistake(mistake, seed, monkeypatch):
    """A dead node left (3.1, 3.4) was told to look at keyword forms or spellings, a pass that
    never recompiled (3.3) was shown a line of its stale code, right pairs out of order (2.5)
    were asked where a bound can sit, a node left out (2.1) was said to be given None (red team
    redU): each is now told what it did."""
    answer, told = TOLD[mistake]
    problem = verdict(mistake.split()[0], answer, seed, monkeypatch)
    if mistake == "2.1 left" and problem is not None and problem.startswith("for '"):
        # a value read by a node and then by the output comes first by name: the answer gave
        # that node as its last reader, and is asked so (runs 10 and 15 of 20, red team redX)
        assert "is that the last node, in graph order, that reads it?" in problem, problem
        return
    assert problem is not None and problem.startswith(told), problem
    if mistake == "2.1 left":
        assert "is read by a node, yet your dict leaves it out" in problem, problem


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", sorted(WRONG))
def test_a_wrong_answer_is_refused_in_every_run(answer, seed, monkeypatch):
    assert verdict(answer.split()[0], WRONG[answer], seed, monkeypatch) is not None


SIGMOIDS_BY_NAME = """
def use_hardsigmoid(gm):
    for node in gm.graph.nodes:
        if "sigmoid" in node.name:
            node.op, node.target = "call_function", F.hardsigmoid
    gm.graph.lint()
    gm.recompile()
    return gm
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_sigmoids_found_by_name_are_told_that_a_name_is_a_label(seed, monkeypatch):
    """3.1: a pass that finds sigmoids by node name heard, when the renamed one was given its
    input by keyword, to look for keyword forms (known from red team redX's round)."""
    problem = verdict("3.1", SIGMOIDS_BY_NAME, seed, monkeypatch)
    assert problem is not None and "a name is a label" in problem, problem


@pytest.mark.parametrize("seed", sorted({*SEEDS, 11}))
def test_a_pass_that_forgets_the_method_form_is_not_told_of_names(seed, monkeypatch):
    """3.1 (red team redC): a pass that forgot the method form left a renamed method node
    beside a named one, and heard "a name is a label" on run 11; names are spoken of only where
    every node left was renamed (then a pass that found sigmoids by name is as likely)."""
    problem = verdict("3.1", WRONG_SIGMOID_NODES, seed, monkeypatch)
    assert problem is not None and problem.startswith("sigmoid nodes are left ("), problem
    left = ast.literal_eval(problem[len("sigmoid nodes are left (") : problem.index("])") + 1])
    named = any("sigmoid" in name for name in left)
    assert not named or "a name is a label" not in problem, problem
    assert named or "what do their op and target say?" in problem, problem


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", sorted(HONEST))
def test_an_honest_answer_passes(answer, seed, monkeypatch):
    assert verdict(answer.split()[0], HONEST[answer], seed, monkeypatch) is None


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tryit_id", sorted({answer.split()[0] for answer in WRONG}))
def test_the_reference_answer_passes_the_runs_the_wrong_ones_fail(tryit_id, seed, monkeypatch):
    assert verdict(tryit_id, "", seed, monkeypatch) is None  # the namespace holds the reference


def test_an_interpreter_run_that_raises_in_a_checkpoint_writes_no_structured_trace(monkeypatch):
    """torch's Interpreter writes a node that raised to its structured trace, whose first write
    imports torch._dynamo (about 5 s in a kernel): 5.1's checkpoint took 5 s on an answer that
    returned None. Inside a checkpoint the trace is off, and it is back after the block."""
    import torch
    from torch import fx
    from torch.fx import interpreter

    written = []
    monkeypatch.setattr(interpreter, "trace_structured", lambda *args, **kwargs: written.append(1))
    monkeypatch.setattr(tryit, "_display", lambda result: None)
    monkeypatch.setattr(tryit, "record_tryit", lambda *args: None)
    gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    with tryit.checkpoint("5.1", "a run that raises"):
        fx.Interpreter(gm).run(None)  # torch.relu(None) raises
    with pytest.raises(TypeError):
        fx.Interpreter(gm).run(None)
    assert len(written) == 1  # only the run outside the checkpoint wrote to the trace


def test_a_recorder_keyed_by_node_is_told_to_key_it_by_name(monkeypatch):
    """5.2 compared the keys itself, and said its own line raised a TypeError (red team redC)."""
    answer = """
class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        values = result if isinstance(result, tuple) else (result,)
        tensors = [value for value in values if isinstance(value, torch.Tensor)]
        if node.op != "placeholder" and tensors:
            self.bytes_by_node[node] = sum(t.numel() * t.element_size() for t in tensors)
        return result
"""
    problem = verdict("5.2", answer, 1, monkeypatch)
    assert "['Node']" in problem and "node.name" in problem


def test_a_rule_that_makes_a_tensor_of_its_own_is_told_why_its_graph_fails(monkeypatch):
    """The code decompose generates cannot name a tensor made inside a rule: 3.5 said the
    checkpoint's own line raised a NameError (red team redC)."""
    answer = """
def sigmoid_from_exp(x):
    return 1 / (1 + torch.exp(-x) * torch.tensor(1.0))


rules_with_sigmoid = {**RULES, torch.sigmoid: sigmoid_from_exp}
"""
    problem = verdict("3.5", answer, 1, monkeypatch)
    assert "torch.tensor(1.0)" in problem and "NameError" in problem


# answers whose values are right but of another type: the message names the type (red team redE)
OF_ANOTHER_TYPE = {
    "2.1": (
        """
def last_reader(gm):
    return {v: n for n in gm.graph.nodes for v in n.all_input_nodes}
""",
        "Node",
    ),
    "2.2": (
        """
def unused_modules(gm):
    targets = [node.target for node in gm.graph.nodes if node.op in ("call_module", "get_attr")]

    def used(name):
        return any(t == name or t.startswith(name + ".") or name.startswith(t + ".") for t in
                   targets)

    return {name for name, m in gm.named_modules() if not list(m.children()) and not used(name)}
""",
        "set",
    ),
    "2.4": (
        """
def nodes_inside(gm, path):
    stacks = [(n, n.meta.get("nn_module_stack", {}).values()) for n in gm.graph.nodes]
    return [n for n, stack in stacks if path in [p for p, _ in stack]]
""",
        "Node",
    ),
    "2.5": (
        """
def clamp_bounds(gm):
    clamps = [("call_function", torch.clamp), ("call_method", "clamp")]
    return [None for n in gm.graph.nodes if (n.op, n.target) in clamps]
""",
        "None",
    ),
}


@pytest.mark.parametrize("tryit_id", sorted(OF_ANOTHER_TYPE))
def test_an_answer_of_another_type_is_told_the_type(tryit_id, monkeypatch):
    answer, named = OF_ANOTHER_TYPE[tryit_id]
    problem = verdict(tryit_id, answer, 1, monkeypatch)
    assert named in problem and "raised" not in problem


@pytest.mark.parametrize(
    "rule, told",
    [
        ("return x.neg_().exp_().add_(1).reciprocal_()", "writes into its input"),
        ("y = 1 / (1 + torch.exp(-x))", "returned NoneType"),
    ],
)
def test_a_rule_that_writes_into_its_input_or_returns_nothing_is_told_so(rule, told, monkeypatch):
    """3.5 said such a rule 'does not change with its exp', or that decompose's own line raised
    an AttributeError about NoneType (red team redE)."""
    answer = f"""
def sigmoid_from_exp(x):
    {rule}


rules_with_sigmoid = {{**RULES, torch.sigmoid: sigmoid_from_exp}}
"""
    assert told in verdict("3.5", answer, 1, monkeypatch)


def test_an_override_that_returns_nothing_is_asked_about_its_return(monkeypatch):
    """5.2's run_node without `return`: the next node got None, and the message was torch's
    TypeError with the Interpreter's node dump and a pointer to tlparse (red team redE)."""
    answer = """
class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        if node.op != "placeholder" and isinstance(result, torch.Tensor):
            self.bytes_by_node[node.name] = result.nbytes
"""
    problem = verdict("5.2", answer, 1, monkeypatch)
    assert "return its value" in problem
    assert "While executing" not in problem and "tlparse" not in problem


def test_a_skip_that_returns_the_args_tuple_is_told_to_return_one_argument(monkeypatch):
    """5.1's skip handing on `args` itself: the next module raised 'must be Tensor, not tuple' at
    the answer's super() line, with no word about the tuple returned (red team redI)."""
    answer = """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def call_module(self, target, args, kwargs):
        if target == self.skip:
            return args
        return super().call_module(target, args, kwargs)
"""
    problem = verdict("5.1", answer, 1, monkeypatch)
    assert "a tuple reached it" in problem and "args[0]" in problem


def test_f_gelu_itself_as_a_replacement_is_told_to_be_a_python_function(monkeypatch):
    """3.4: replace_pattern(gm, pattern, F.gelu) raised torch's bare 'Expected FunctionType'
    (red team redI)."""
    answer = """
def gelu_by_hand(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def use_gelu(gm):
    subgraph_rewriter.replace_pattern(gm, gelu_by_hand, F.gelu)
    return gm
"""
    problem = verdict("3.4", answer, 1, monkeypatch)
    assert "Expected FunctionType" in problem and "a def or a lambda" in problem


def test_a_none_read_in_the_learners_own_line_names_where_a_none_comes_from(monkeypatch):
    """2.3's tensor_meta of an int result (None) read as `meta.shape` in the answer's own line:
    the message asked only whether each function returns its value (red team redK)."""
    answer = """
def activation_bytes(gm, example):
    ShapeProp(gm).propagate(example)
    total = 0
    for node in gm.graph.nodes:
        if node.op.startswith("call_"):
            meta = node.meta.get("tensor_meta")
            total += meta.shape.numel() * meta.dtype.itemsize
    return total
"""
    problem = verdict("2.3", answer, 1, monkeypatch)
    assert "NoneType" in problem and "node.meta.get" in problem, problem


def test_a_sigmoid_left_in_its_keyword_form_is_named_so(monkeypatch):
    """3.1 by replace_pattern: its patterns match torch.sigmoid(x), not torch.sigmoid(input=x);
    the message asked which node kinds call a sigmoid (red team redK)."""
    answer = """
from torch.fx import subgraph_rewriter


def use_hardsigmoid(gm):
    for pattern in (lambda x: torch.sigmoid(x), lambda x: x.sigmoid()):
        subgraph_rewriter.replace_pattern(gm, pattern, lambda x: F.hardsigmoid(x))
    gm.graph.lint()
    gm.recompile()
    return gm
"""
    problems = [verdict("3.1", answer, seed, monkeypatch) for seed in (1, 2, 3)]
    assert all(p and "by keyword" in p for p in problems), problems


def test_a_missing_return_in_the_other_branch_is_not_blamed_on_the_skipped_module(monkeypatch):
    """5.1: an override that returns nothing for the modules it does not skip was asked what it
    returns in place of the skipped module's output, the branch that was right (red team redN)."""
    answer = """
class SkipModule(Interpreter):
    def __init__(self, module, skip):
        super().__init__(module)
        self.skip = skip

    def call_module(self, target, args, kwargs):
        if target == self.skip:
            return args[0] if args else kwargs["input"]
        super().call_module(target, args, kwargs)
"""
    assert "each branch" in verdict("5.1", answer, 1, monkeypatch)


def test_a_run_from_that_returns_nothing_is_told_so(monkeypatch):
    """5.4: run_from returning None was asked whether every placeholder ran (red team redN)."""
    right = tryit.load_answers()["5.4"]["code"].split("\nwith torch.no_grad():")[0]
    answer = right.replace("return Interpreter(gm).run(", "Interpreter(gm).run(")
    assert answer != right
    assert "run_from returned None" in verdict("5.4", answer, 1, monkeypatch)


def test_the_right_leaves_unsorted_are_told_to_sort_them(monkeypatch):
    """2.2: the right names in module order were asked which leaves count (red team redN)."""
    answer = """
def unused_modules(gm):
    targets = [n.target for n in gm.graph.nodes if n.op in ("call_module", "get_attr")]
    leaves = [n for n, m in gm.named_modules() if n and not list(m.children())]
    unused = [n for n in leaves if not any(
        t == n or t.startswith(n + ".") or n.startswith(t + ".") for t in targets)]
    return sorted(unused, reverse=True)
"""
    problems = [verdict("2.2", answer, seed, monkeypatch) for seed in SEEDS]
    assert all(p and "another order" in p for p in problems), problems


def cell_ran(source: str) -> SimpleNamespace:
    """What IPython hands a post_run_cell callback for a cell that ran cleanly."""
    info = SimpleNamespace(raw_cell=source)
    return SimpleNamespace(info=info, error_in_exec=None, error_before_exec=None)


def answer_ran_in_a_kernel(answer: str, namespace: dict, monkeypatch) -> None:
    """Run the learner's answer cell in `namespace` with the CellLog a kernel keeps."""
    log = reference.CellLog(namespace)
    log.before_cell(cell_ran(answer).info)
    exec(compile(answer, "answer", "exec"), namespace)  # noqa: S102
    log(cell_ran(answer))
    monkeypatch.setattr(reference, "cell_log", lambda: log)


def as_a_cell_ran(check: str, monkeypatch) -> None:
    """The check cell's source where linecache finds it under "check", as IPython leaves it."""
    lines = check.splitlines(True)
    monkeypatch.setitem(linecache.cache, "check", (len(check), None, lines, "check"))


def verdict_in_a_kernel(tryit_id: str, answer: str, monkeypatch) -> tuple[str | None, dict]:
    """verdict() with the CellLog a kernel keeps: the answer's cell logged, the check cell's
    source where linecache finds it, as IPython leaves it. Also the namespace after the check."""
    base, check = before_the_check(tryit_id)
    namespace = dict(base)
    answer_ran_in_a_kernel(answer, namespace, monkeypatch)
    as_a_cell_ran(check, monkeypatch)
    tryit.replay(tryit_id, 1)
    return check_cells.judged(check, namespace, monkeypatch).problem, namespace


WRONG_SIGMOID_NODES = """
SIGMOID_NODES = {("call_function", torch.sigmoid)}  # the method form forgotten


def use_hardsigmoid(gm):
    for node in gm.graph.nodes:
        if (node.op, node.target) in SIGMOID_NODES:
            node.op, node.target = "call_function", F.hardsigmoid
    gm.graph.lint()
    gm.recompile()
    return gm
"""
LINEAR_HELPER = """
def {name}(node, gm):
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Linear)


def clamp_linear_inputs(gm):
    for node in list(gm.graph.nodes):
        if {name}(node, gm):
            source = node.all_input_nodes[0]
            with gm.graph.inserting_before(node):
                clamp = gm.graph.call_function(torch.clamp, (source,), {{"min": -1.0, "max": 1.0}})
            node.replace_input_with(source, clamp)
    gm.graph.lint()
    gm.recompile()
    return gm
"""


def test_a_learners_helper_named_as_a_check_cell_helper_once_was_is_their_own(monkeypatch):
    """3.1 and 3.2 (red team redN): the check cells defined SIGMOID_NODES and is_linear at their
    top level, which replaced the learner's before their pass ran (a wrong SIGMOID_NODES passed,
    an is_linear(node, gm) failed, then each was named and refused). Now the check cells import
    their helpers from fxcourse.transform_cases: the learner's names stay the learner's, a wrong
    one is judged as what it is and a right one passes."""
    problem, namespace = verdict_in_a_kernel("3.1", WRONG_SIGMOID_NODES, monkeypatch)
    assert "sigmoid nodes are left" in problem, problem
    assert namespace["SIGMOID_NODES"] == {("call_function", torch.sigmoid)}
    both_forms = '{("call_function", torch.sigmoid), ("call_method", "sigmoid")}'
    right = WRONG_SIGMOID_NODES.replace('{("call_function", torch.sigmoid)}', both_forms)
    assert right != WRONG_SIGMOID_NODES
    problem, namespace = verdict_in_a_kernel("3.1", right, monkeypatch)
    assert problem is None, problem
    assert namespace["SIGMOID_NODES"] == {
        ("call_function", torch.sigmoid),
        ("call_method", "sigmoid"),
    }
    for name in ("is_linear", "my_is_linear"):
        answer = LINEAR_HELPER.format(name=name)
        problem, namespace = verdict_in_a_kernel("3.2", answer, monkeypatch)
        assert problem is None, problem
        assert namespace[name].__code__.co_varnames[:2] == ("node", "gm")


HELPERS_NAMED_AS_THE_CHECK_CELLS_NAMES = """
goal = F.hardsigmoid  # what each sigmoid becomes


def check(node):  # a sigmoid, as a function or a method?
    is_function = node.op == "call_function" and node.target is torch.sigmoid
    return is_function or (node.op == "call_method" and node.target == "sigmoid")


def unread_nodes(gm):  # the check cell imports a helper of this name too
    return [node for node in gm.graph.nodes if check(node)]


def use_hardsigmoid(gm):
    for node in unread_nodes(gm):
        node.op, node.target = "call_function", goal
    gm.graph.lint()
    gm.recompile()
    return gm
"""


def test_a_learners_helpers_named_check_goal_or_as_a_check_cell_import_are_their_own(monkeypatch):
    """The tester's (honZ) helper named `check`: the check cell's `with checkpoint(...) as check`
    replaced it, and the answer crashed with "checkpoint.__call__() missing 1 required positional
    argument: 'hint'"; `goal` and the cell's imported helpers were refused with "give yours
    another name". While the answers run they are the learner's, and they are theirs after."""
    answer = HELPERS_NAMED_AS_THE_CHECK_CELLS_NAMES
    problem, namespace = verdict_in_a_kernel("3.1", answer, monkeypatch)
    assert problem is None, problem
    assert namespace["goal"] is namespace["F"].hardsigmoid, namespace["goal"]
    assert namespace["check"].__code__.co_varnames[:1] == ("node",), namespace["check"]
    wrong = answer.replace('or (node.op == "call_method" and node.target == "sigmoid")', "")
    assert wrong != answer
    problem, _ = verdict_in_a_kernel("3.1", wrong, monkeypatch)
    assert problem and "sigmoid nodes are left" in problem, problem


TRACED_A_MODEL_OF_THEIR_OWN = """
gated_net = torch.nn.Sequential(torch.nn.Linear(4, 4))  # bound again beside the answer


class TopLevelTracer(fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return "." not in module_qualified_name


top_level = fx.GraphModule(gated_net, TopLevelTracer().trace(gated_net))
"""


def test_chapter_names_bound_again_in_the_try_it_cell_reach_the_check_as_the_chapter_left_them(
    monkeypatch,
):
    """7.6's tiny_model bound again in the try-it cell (red team redR) made the cases, and the
    reference, run in a copy of the learner's names, agreed with whatever that model gave. Now
    the check cell and the reference read what the chapter's cells left under a name the
    try-it cell bound again (one the reference's own cell does not bind): 1.3's top_level traced
    from a gated_net of the learner's own is not the chapter's; names of the learner's own that
    the check reads (x, model: its lambdas' parameters) leave a right answer right, and every
    name holds the learner's object after the check."""
    problem, namespace = verdict_in_a_kernel("1.3", TRACED_A_MODEL_OF_THEIR_OWN, monkeypatch)
    assert problem and "calls the modules" in problem, problem
    assert isinstance(namespace["gated_net"], torch.nn.Sequential)
    right = tryit.load_answers()["1.3"]["code"] + '\nx, model, goal = "mine", None, "mine"\n'
    problem, namespace = verdict_in_a_kernel("1.3", right, monkeypatch)
    assert problem is None, problem
    assert (namespace["x"], namespace["model"]) == ("mine", None)


def test_a_demonstration_line_of_the_reference_does_not_fail_on_the_learners_own_names(
    monkeypatch,
):
    """5.2's reference runs its recorder on the chapter's `images`; a learner who tried theirs
    on images of their own was told that the course's reference failed (red team redN)."""
    answer = tryit.load_answers()["5.2"]["code"] + "\nimages = torch.randn(2, 7)\n"
    assert verdict("5.2", answer, 1, monkeypatch) is None


# 2.5's and 5.4's reference answers, each reading a global of the learner's named as a helper the
# check cell once defined at its top level (LAYOUTS, a list of labels; only_for(node))
CLAMPS_IN_LAYOUTS = (
    tryit.load_answers()["2.5"]["code"]
    .replace(
        "def clamp_bounds(",
        'LAYOUTS = {("call_function", torch.clamp), ("call_method", "clamp")}\n\ndef clamp_bounds(',
    )
    .replace('in (("call_function", torch.clamp), ("call_method", "clamp")):', "in LAYOUTS:")
)
NEEDED_BY_ONLY_FOR = (
    tryit.load_answers()["5.4"]["code"]
    .replace("def needed_nodes(gm: GraphModule, known: dict)", "def only_for(gm, known)")
    .replace("needed = needed_nodes(gm, known)", "needed = only_for(gm, known)")
)


@pytest.mark.parametrize(
    ("tryit_id", "answer", "helper"),
    [("2.5", CLAMPS_IN_LAYOUTS, "LAYOUTS"), ("5.4", NEEDED_BY_ONLY_FOR, "only_for")],
)
def test_a_learner_global_named_as_a_former_check_cell_helper_is_the_learners_own(
    tryit_id, answer, helper, monkeypatch
):
    """The check cells of chapters 1, 2 and 5 import their helpers from fxcourse modules: a
    learner's LAYOUTS or only_for(gm, known) is no longer replaced by the check cell's (a list
    of labels, a function of one node) before the learner's answer reads it."""
    assert answer.count(helper) == 2  # defined, then read
    problem, namespace = verdict_in_a_kernel(tryit_id, answer, monkeypatch)
    assert problem is None, problem
    learners_own = {
        "LAYOUTS": lambda value: isinstance(value, set),
        "only_for": lambda value: value.__code__.co_varnames[:2] == ("gm", "known"),
    }
    assert learners_own[helper](namespace[helper]), namespace[helper]


# a learner's helper named as one of the check block's own loop variables (red team redQ;
# chapter 4's: test_fusion_checkpoints)
PAIR_HELPER = """
def pair(node):  # the check block's loop binds `pair` too
    args = list(node.args) if "input" in node.kwargs else list(node.args)[1:]
    args += [None, None]
    return (node.kwargs.get("min", args[0]), node.kwargs.get("max", args[1]))


def clamp_bounds(gm):
    kinds = (("call_function", torch.clamp), ("call_method", "clamp"))
    return [pair(node) for node in gm.graph.nodes if (node.op, node.target) in kinds]
"""
FOUND_HELPER = """
def found(value):  # the check block binds `found` too
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        sizes = [size for size in map(found, value) if size is not None]
        return sum(sizes) if sizes else None
    return None


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, node):
        result = super().run_node(node)
        if node.op not in ("placeholder", "get_attr") and found(result) is not None:
            self.bytes_by_node[node.name] = found(result)
        return result
"""
KIND_HELPER = """
def kind(module):  # the check block binds `kind` too
    return isinstance(module, nn.ReLU)


class ReluToGelu(Interpreter):
    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            return F.gelu(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(*args, **kwargs)
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        if kind(self.fetch_attr(target)):
            return F.gelu(*args, **kwargs)
        return super().call_module(target, args, kwargs)
"""


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("tryit_id", "answer", "helper"),
    [
        ("2.5", PAIR_HELPER, "pair"),
        ("5.2", FOUND_HELPER, "found"),
        ("5.3", KIND_HELPER, "kind"),
    ],
)
def test_a_learner_helper_named_as_a_loop_variable_of_the_check_block_is_theirs(
    tryit_id, answer, helper, seed, monkeypatch
):
    """A check block binds its loop variables (pair, found, kind...) at the notebook's top level:
    from the second case on (5.3: the first, whose block runs ReluToGelu itself) they replaced a
    learner's helper of the same name, and a right answer was told "'tuple' object is not
    callable" (red team redQ). The answers now run with the learner's names as the block found
    them."""
    problem = verdict(tryit_id, answer, seed, monkeypatch)
    assert problem is None, problem


def test_the_reference_for_3_3_erases_every_pass_through_the_cases_do_not_draw():
    """A (N, C, 1, 1) input is contiguous and channels-last at once (ShapeProp's memory_format
    names only the first), and a training Dropout with p=0 zeroes nothing: both hand their
    input on, so the reference erases them (a learner's answer that does so is right too)."""
    code = json.loads((ROOT / "fxcourse" / "answers.json").read_text())["3.3"]["code"]
    namespace = {"torch": torch, "fx": torch.fx, "nn": torch.nn}
    exec(compile(code.rsplit("\n\nprint(", 1)[0], "reference", "exec"), namespace)  # noqa: S102

    class Squeezed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(0.0)

        def forward(self, x):
            return self.drop(x.contiguous(memory_format=torch.channels_last)).contiguous() + 1

    gm = namespace["remove_pass_throughs"](
        torch.fx.symbolic_trace(Squeezed().train()), torch.randn(2, 3, 1, 1)
    )
    assert [node.op for node in gm.graph.nodes] == ["placeholder", "call_function", "output"]


def test_a_learners_helper_named_check_is_theirs_where_the_check_cell_calls_their_code(
    monkeypatch,
):
    """The reviewer's (revA) 8.4: a right rule whose helper is named check heard "give yours
    another name": its check cell calls the learner's function itself, outside case.both, where
    the block's `as check` stood for the learner's helper. Called from the learner's code, the
    checkpoint is now the learner's check; called from the check cell, it checks."""
    answer = "def check(value):\n    return value * 2\n\n\n"
    answer += "def doubled(value):\n    return check(value)\n"
    namespace = {"__name__": "chapter", "checkpoint": tryit.checkpoint}
    answer_ran_in_a_kernel(answer, namespace, monkeypatch)
    for wanted, problem in ((6, None), (7, "doubled(3) should be 7")):
        cell = 'goal = "g"\nwith checkpoint("1.1", goal) as check:\n'
        cell += f'    check(doubled(3) == {wanted}, "doubled(3) should be {wanted}")\n'
        as_a_cell_ran(cell, monkeypatch)
        assert check_cells.judged(cell, namespace, monkeypatch).problem == problem
        assert namespace["check"](5) == 10  # theirs again after the check


def test_a_learners_helper_named_goal_is_theirs_where_the_check_cell_calls_their_code(
    monkeypatch,
):
    """The reviewer's (revA) 12.2: a while_loop's condition named goal, called through
    check.mine outside case.both, read the check cell's goal string; now the learner's."""
    answer = "def goal(value):\n    return value * 2\n\n\n"
    answer += "def doubled(value):\n    return goal(value)\n"
    namespace = {"__name__": "chapter", "checkpoint": tryit.checkpoint}
    answer_ran_in_a_kernel(answer, namespace, monkeypatch)
    cell = 'goal = "g"\nwith checkpoint("1.1", goal) as check:\n'
    cell += '    check(check.mine(check.learner.doubled, 3) == 6, "doubled(3) should be 6")\n'
    as_a_cell_ran(cell, monkeypatch)
    assert check_cells.judged(cell, namespace, monkeypatch).problem is None
    assert namespace["goal"](5) == 10  # theirs again after the check


HELPER_NAMED_GRAPH = """
def graph(value):  # the bytes of the tensors in value, or None
    tensors = [t for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]
    return sum(t.nbytes for t in tensors) if tensors else None


class MemoryRecorder(Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.bytes_by_node = {}

    def run_node(self, n):
        value = super().run_node(n)
        if n.op not in ("placeholder", "get_attr") and graph(value) is not None:
            self.bytes_by_node[n.name] = graph(value)
        return value
"""


def test_a_learners_helper_named_as_an_attribute_the_checks_read_is_theirs(monkeypatch):
    """The tester's (honK) 5.2 recorder with a helper named graph: the check block binds
    `graph` too, and the learner's was put back while the answers ran except where the function
    the checkpoint ran "read" it, which counted `gm.graph`, an attribute, in fxcourse's own
    helper ("'Graph' object is not callable"). Only a check cell's own code, and only its global
    loads, keep the block's names now."""
    problem, namespace = verdict_in_a_kernel("5.2", HELPER_NAMED_GRAPH, monkeypatch)
    assert problem is None, problem
    assert namespace["graph"].__code__.co_varnames[:1] == ("value",), namespace["graph"]
    wrong = HELPER_NAMED_GRAPH.replace("sum(t.nbytes for t in tensors)", "t.nbytes")
    problem, _ = verdict_in_a_kernel("5.2", wrong, monkeypatch)
    assert problem is not None, "a recorder that counts one tensor of a tuple passed"


def test_names_as_found_keeps_the_blocks_name_only_for_a_global_load_of_the_check_cells():
    names = {"graph": "the learner's", "__name__": "chapter"}
    before = dict(names)
    exec("reads = lambda answer: graph\nattribute = lambda gm: gm.graph", names)  # noqa: S102
    names["graph"] = "the block's"
    own = {"graph": "the learner's"}
    seen = {}
    for fn in (names["reads"], names["attribute"], reference.global_loads):
        with reference.names_as_found(names, before, None, fn, own):
            seen[fn] = names["graph"]
    assert list(seen.values()) == ["the block's", "the learner's", "the learner's"]
    assert names["graph"] == "the block's"


@pytest.mark.parametrize("seed", SEEDS)
def test_an_in_place_op_on_a_slice_of_x_is_told_so_without_torchs_node_line(seed, monkeypatch):
    """x[1:].sub_(x[:-1]) raised inside torch's Interpreter, and 1.1 printed the whole error:
    its node line ("While executing %sub_ ..."), "Original traceback: None", a pointer to
    tlparse, then asked for how many rows the graph was made (red team redP)."""
    answer = """
def row_steps(x):
    return x[1:].sub_(x[:-1])


traced_row_steps = fx.symbolic_trace(row_steps)
"""
    problem = verdict("1.1", answer, seed, monkeypatch)
    assert problem is not None and "While executing" not in problem, problem
    assert "tlparse" not in problem and "Original traceback" not in problem, problem
    told = ("the graph wrote into its input", "the graph raised")
    assert problem.startswith(told), problem
    if problem.startswith("the graph raised"):
        assert "it writes in place (['sub_'])" in problem, problem
