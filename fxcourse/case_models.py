"""The models a case draws: the ops of the vocabulary in each spelling (`UNARY`, `BINARY`), a
`DrawnModel` that follows drawn steps, and models that call their modules by path (`PathModel`,
`Residual`). `fxcourse.cases.CaseMaker.model` draws the steps; this module holds what it draws."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from fxcourse.messages import _

if TYPE_CHECKING:
    from fxcourse.cases import CaseMaker


@dataclass(frozen=True)
class Spelling:
    """One way to write an op in a model: a function, a tensor method or a module."""

    kind: str  # "function", "method" or "module"
    target: object  # the function, the method's name, or a factory of the module
    keywords: dict = field(default_factory=dict)  # constant keyword arguments
    label: str = ""
    input_keyword: str = ""  # the input passed by this keyword (`torch.relu(input=x)`), if any

    def describe(self) -> str:
        text = self.label or _label(self.kind, self.target)
        return f"{text} ({self.input_keyword}=...)" if self.input_keyword else text


def _label(kind: str, target: object) -> str:
    if kind == "method":
        return f".{target}()"
    if kind == "module":
        return f"nn.{getattr(target, '__name__', 'Module')}"
    module = getattr(target, "__module__", "") or ""
    prefix = {"torch": "torch", "torch.nn.functional": "F", "_operator": "operator"}
    return f"{prefix.get(module, module)}.{getattr(target, '__name__', target)}"


def function(target: Callable, **keywords) -> Spelling:
    return Spelling("function", target, keywords)


def method(name: str, **keywords) -> Spelling:
    return Spelling("method", name, keywords)


def by_keyword(spelling: Spelling, name: str = "input") -> Spelling:
    """`spelling` with its one input passed by keyword: `torch.relu(input=x)`, `act(input=x)`
    (a traced node then holds it in `kwargs`, and `args` is empty). Not for a method."""
    if spelling.kind == "method":
        raise ValueError("a method's tensor is its self, never a keyword")
    return replace(spelling, input_keyword=name)


def module(factory: type[nn.Module], **kwargs) -> Spelling:
    """A module spelling; each use makes a new module (a Linear, or a subclass of it, is sized
    by the model)."""
    if isinstance(factory, type) and issubclass(factory, nn.Linear):
        return Spelling("module", factory, label=f"nn.{factory.__name__}")
    made = lambda: factory(**kwargs)  # noqa: E731
    made.__name__ = factory.__name__
    return Spelling("module", made)


# Each op of the vocabulary, in every spelling a graph may hold. Unary ops keep the shape.
UNARY: dict[str, tuple[Spelling, ...]] = {
    "relu": (function(torch.relu), function(F.relu), method("relu"), module(nn.ReLU)),
    "leaky_relu": (
        function(F.leaky_relu, negative_slope=0.2),
        module(nn.LeakyReLU, negative_slope=0.1),
    ),
    "relu6": (function(F.relu6), module(nn.ReLU6)),
    "sigmoid": (function(torch.sigmoid), method("sigmoid"), module(nn.Sigmoid)),
    "hardsigmoid": (function(F.hardsigmoid), module(nn.Hardsigmoid)),
    "tanh": (function(torch.tanh), method("tanh"), module(nn.Tanh)),
    "gelu": (function(F.gelu), module(nn.GELU)),
    "silu": (function(F.silu), module(nn.SiLU)),
    "neg": (function(torch.neg), function(operator.neg), method("neg")),
    "exp": (function(torch.exp), method("exp")),
    "sin": (function(torch.sin), method("sin")),
    "abs": (function(torch.abs), method("abs")),
    "linear": (module(nn.Linear),),
    "identity": (module(nn.Identity),),
}
BINARY: dict[str, tuple[Spelling, ...]] = {
    "add": (function(operator.add), function(torch.add), method("add")),
    "mul": (function(operator.mul), function(torch.mul), method("mul")),
    "sub": (function(operator.sub), function(torch.sub), method("sub")),
}


@dataclass
class Step:
    """One op of a `DrawnModel`'s forward: what it applies and to which earlier values."""

    op: str
    spelling: Spelling
    inputs: tuple[int, ...]  # indices into the values computed so far (0 is the input)
    module: str | None = None  # the qualified name of the module it calls


class DrawnModel(nn.Module):
    """A model whose forward follows a drawn list of steps; `fx.symbolic_trace` unrolls it into
    an ordinary graph (the loop over steps is Python data, not a tensor)."""

    def __init__(self, steps: list[Step], modules: dict[str, nn.Module], outputs: tuple[int, ...]):
        super().__init__()
        self.steps, self.outputs = steps, outputs
        for path, module in modules.items():
            _register(self, path, module)

    def forward(self, x):
        values = [x]
        for step in self.steps:
            args = [values[i] for i in step.inputs]
            values.append(_apply(self, step, args))
        picked = [values[i] for i in self.outputs]
        return picked[0] if len(picked) == 1 else tuple(picked)

    def values(self, x) -> list:
        """Every value forward computes from `x`, in order (0 is `x`), without autograd."""
        values = [x]
        with torch.no_grad():
            for step in self.steps:
                values.append(_apply(self, step, [values[i] for i in step.inputs]))
        return values

    def extend(self, steps: Sequence[Step]) -> None:
        """Append `steps` (function and method spellings only); the outputs become, again, every
        value no later step reads."""
        self.steps = [*self.steps, *steps]
        self.outputs = _unread(self.steps)


def _unread(steps: Sequence[Step]) -> tuple[int, ...]:
    """The values (1 on: 0 is the input) that no step reads."""
    read = {i for step in steps for i in step.inputs}
    return tuple(i for i in range(1, len(steps) + 1) if i not in read)


def _register(root: nn.Module, path: str, module: nn.Module) -> None:
    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        if not hasattr(owner, part):
            owner.add_module(part, nn.Module())
        owner = owner.get_submodule(part)
    owner.add_module(leaf, module)


def _apply(root: nn.Module, step: Step, args: list):
    spelling = step.spelling
    if spelling.input_keyword:  # a unary op whose input goes by keyword
        args, keyword = [], {spelling.input_keyword: args[0]}
    else:
        keyword = {}
    if spelling.kind == "module":
        return root.get_submodule(step.module)(*args, **keyword)
    if spelling.kind == "method":
        return getattr(args[0], spelling.target)(*args[1:], **spelling.keywords)
    return spelling.target(*args, **keyword, **spelling.keywords)


def input_width(model: nn.Module) -> int:
    for module in model.modules():
        if isinstance(module, nn.Linear):
            return module.in_features
    raise ValueError("pass the input's width: the model holds no Linear to read it from")


class ModelDraft:
    """The steps and modules of a DrawnModel while they are drawn."""

    def __init__(self, make: CaseMaker, width: int, nested: bool, decoys: Sequence[str]):
        self.make, self.width, self.nested, self.decoys = make, width, nested, list(decoys)
        self.steps: list[Step] = []
        self.modules: dict[str, nn.Module] = {}
        self.described: list[str] = []
        self.containers = make.words(2) if nested else []

    def add(self, op: str, spellings: Sequence[Spelling], binary: bool) -> None:
        make = self.make
        spelling = make.choice(list(spellings))
        latest = len(self.steps)
        first = latest if make.coin(0.75) else make.integer(0, latest)
        inputs = (first, make.integer(0, latest)) if binary else (first,)
        path, text = None, spelling.describe()
        if spelling.kind == "module":
            path, text = self._module_for(op, spelling)
        self.steps.append(Step(op, spelling, inputs, path))
        self.described.append(text)

    def _module_for(self, op: str, spelling: Spelling) -> tuple[str, str]:
        make = self.make
        same_kind = [p for p, m in self.modules.items() if _op_of(m) == op]
        if same_kind and make.coin(0.3):  # the same module object, called again
            path = make.choice(same_kind)
            return path, _("{op} '{path}' called again").format(op=spelling.describe(), path=path)
        if isinstance(spelling.target, type) and issubclass(spelling.target, nn.Linear):
            linear = spelling.target(self.width, self.width, bias=make.coin(0.8))
            module = make.parameters_of(linear)
        else:
            module = spelling.target()
        module.fxcourse_op = op
        path = self._fresh_path()
        self.modules[path] = module
        if make.coin(0.15):  # one module under two names
            alias = self._fresh_path()
            self.modules[alias] = module
            text = _("{op} '{path}' (also registered as '{alias}')")
            return path, text.format(op=spelling.describe(), path=path, alias=alias)
        return path, f"{spelling.describe()} '{path}'"

    def _fresh_path(self) -> str:
        make = self.make
        taken = set(self.modules) | {p.split(".")[0] for p in self.modules}
        for _attempt in range(100):
            name = str(len(self.modules)) if make.coin(0.4) else make.word()
            if self.decoys and make.coin(0.5):
                name = make.choice(self.decoys)
            if self.containers and make.coin(0.6):
                name = f"{make.choice(self.containers)}.{name}"
            if name not in taken and name not in self.containers:
                return name
        return f"m{len(self.modules)}"

    def finish(self) -> DrawnModel:
        """The model; every value no later step reads is an output, so every op counts."""
        model = DrawnModel(self.steps, self.modules, _unread(self.steps))
        model.width = self.width
        return model


def _op_of(module: nn.Module) -> str | None:
    return getattr(module, "fxcourse_op", None)


# --- models that call their modules by path (tracers' leaves, module paths, unused modules) ---


class Residual(nn.Module):
    """`x + inner(x)`: a module type of the cases' own (no chapter names it), with a child."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return x + self.inner(x)


class PathModel(nn.Module):
    """Holds `modules` at their dotted paths; its forward follows `plan`, a list of (kind, path):
    ("call", path) calls the module at `path` on the running value, which may be a grandchild
    called straight from the root; ("call input=", path) the same with the value by keyword
    (`module(input=x)`: the traced node's args are empty); ("read", path) adds the sum of the
    parameter at `path` (a `get_attr` node once traced; the default tracer bakes a buffer in as
    a constant instead). Modules the plan never names stay unused."""

    def __init__(self, modules: dict[str, nn.Module], plan: Sequence[tuple[str, str]]):
        super().__init__()
        for path, module in modules.items():
            _register(self, path, module)
        kinds = ("call", "call input=", "read")
        unknown = [(kind, path) for kind, path in plan if kind not in kinds]
        if unknown:
            raise ValueError(f"a plan step is (one of {kinds}, path), not {unknown}")
        self.plan = list(plan)

    def forward(self, x):
        for kind, path in self.plan:
            owner, _, name = path.rpartition(".")
            if kind == "call":
                x = self.get_submodule(path)(x)
            elif kind == "call input=":
                x = self.get_submodule(path)(input=x)
            else:  # the tracer records a parameter it meets as a get_attr node
                x = x + getattr(self.get_submodule(owner), name).sum()
        return x


def trace_with_leaves(model: nn.Module, leaves: Sequence[str]) -> torch.fx.GraphModule:
    """`model` traced with the modules at `leaves` (qualified names) kept whole, as a custom
    tracer would keep them (their children are then used through them), and the default rule
    for every other module."""
    keep = set(leaves)

    class KeepsSome(torch.fx.Tracer):
        def is_leaf_module(self, m: nn.Module, qualified_name: str) -> bool:
            return qualified_name in keep or super().is_leaf_module(m, qualified_name)

    return torch.fx.GraphModule(model, KeepsSome().trace(model))
