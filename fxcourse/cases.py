"""Fresh cases for the checkpoints: small models, graphs and inputs drawn from a seed.

A checkpoint (fxcourse.tryit) judges a learner's answer on cases made at the moment it runs, not
only on the chapter's example, and runs the reference answer on the same cases. Each case is
built by a function of the try-it's own (its *case builder*), which receives a `CaseMaker`:

    def relu_graphs(make: CaseMaker):
        model = make.model(ops=["relu", "leaky_relu", "add", "linear"], must=["relu"])
        return model, make.input_for(model)

A builder decides what its cases may contain; the maker decides the rest at random from the case's
seed: names (words, numeric `nn.Sequential` indices), sizes, depths, dtypes, which spelling an op
takes (`torch.relu`, `F.relu`, `.relu()`, `nn.ReLU`, positional or keyword arguments), a module
called twice or registered under two names. The same seed gives the same case, so a "Not yet"
names its seed and `fxcourse.tryit.replay` shows the same case again.

`make.each(options)` spreads choices over a run's cases: among `len(options)` consecutive cases
each option appears once (in an order drawn from the run's seed), so a feature the answer must
handle is in every run, not only in lucky ones.
"""

from __future__ import annotations

import contextlib
import copy
import operator
import random
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from fxcourse.messages import _

# Names a case gives to modules and functions: plain words, so that no rule can key on the
# chapter's own names and still pass.
WORDS = (
    "act", "block", "body", "branch", "cell", "core", "edge", "feat", "gate", "head", "hidden",
    "inner", "layer", "left", "lift", "mix", "neck", "node", "outer", "path", "proj", "right",
    "scale", "shift", "stage", "stem", "step", "tail", "trunk", "unit", "wing", "zone",
)  # fmt: skip


@dataclass(frozen=True)
class Spelling:
    """One way to write an op in a model: a function, a tensor method or a module."""

    kind: str  # "function", "method" or "module"
    target: object  # the function, the method's name, or a factory of the module
    keywords: dict = field(default_factory=dict)  # constant keyword arguments
    label: str = ""

    def describe(self) -> str:
        return self.label or _label(self.kind, self.target)


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


def module(factory: type[nn.Module], **kwargs) -> Spelling:
    """A module spelling; each use makes a new module (a Linear is sized by the model)."""
    if factory is nn.Linear:
        return Spelling("module", nn.Linear, label="nn.Linear")
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
    if spelling.kind == "module":
        return root.get_submodule(step.module)(*args)
    if spelling.kind == "method":
        return getattr(args[0], spelling.target)(*args[1:], **spelling.keywords)
    return spelling.target(*args, **spelling.keywords)


class CaseMaker:
    """Draws one case's contents from its seed; see the module docstring."""

    def __init__(self, seed: int, index: int = 0, run_seed: int | None = None):
        self.seed, self.index = seed, index
        self.run_seed = seed if run_seed is None else run_seed
        self.rng = random.Random(seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.notes: list[str] = []

    # --- plain choices ---------------------------------------------------------------------
    def note(self, text: str) -> None:
        """Add to the case's description (what a "Not yet" says about the case)."""
        self.notes.append(text)

    def describe(self) -> str:
        return "; ".join(self.notes) if self.notes else "a drawn case"

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def choice(self, options: Sequence):
        return options[self.rng.randrange(len(options))]

    def each(self, options: Sequence):
        """options[k] for this case, each option once per len(options) consecutive cases."""
        order = list(range(len(options)))
        random.Random(f"{self.run_seed}:{len(options)}:{options!r}").shuffle(order)
        return options[order[self.index % len(options)]]

    def word(self, avoid: Sequence[str] = ()) -> str:
        return self.choice([w for w in WORDS if w not in avoid])

    def words(self, count: int) -> list[str]:
        return self.rng.sample(WORDS, count)

    def dtype(self, options: Sequence[torch.dtype] = (torch.float32, torch.float64)) -> torch.dtype:
        return self.choice(options)

    # --- tensors and modules ---------------------------------------------------------------
    def tensor(self, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0):
        return torch.randn(*shape, generator=self.generator, dtype=dtype) * scale

    def parameters_of(self, module: nn.Module) -> nn.Module:
        """Draw every parameter and buffer of `module` again from the case's generator (a module
        made by a case holds the same numbers whenever the same seed makes it)."""
        with torch.no_grad():
            for value in [*module.parameters(), *module.buffers()]:
                if value.is_floating_point():
                    value.copy_(torch.randn(value.shape, generator=self.generator) * 0.5)
        return module

    def trained_batchnorm(self, module: nn.Module) -> nn.Module:
        """A BatchNorm with running statistics and affine values that are not the identity."""
        with torch.no_grad():
            channels = module.num_features
            module.running_mean.copy_(torch.randn(channels, generator=self.generator) * 0.5)
            var = torch.rand(channels, generator=self.generator) * 1.5 + 0.25
            module.running_var.copy_(var)
            if module.affine:
                module.weight.copy_(torch.rand(channels, generator=self.generator) + 0.5)
                module.bias.copy_(torch.randn(channels, generator=self.generator) * 0.3)
        return module

    def sequential(self, layers: Sequence[nn.Module], numeric: bool | None = None) -> nn.Sequential:
        """An nn.Sequential of `layers`, named 0, 1, ... or with drawn words."""
        numeric = self.coin() if numeric is None else numeric
        if numeric:
            return nn.Sequential(*layers)
        names = self.words(len(layers))
        return nn.Sequential(OrderedDict(zip(names, layers, strict=True)))

    # --- drawn models ------------------------------------------------------------------------
    def model(
        self,
        ops: Sequence[str],
        must: Sequence[str] = (),
        length: tuple[int, int] = (3, 7),
        width: int | None = None,
        spellings: dict[str, Sequence[Spelling]] | None = None,
        nested: bool | None = None,
        decoys: Sequence[str] = (),
    ) -> DrawnModel:
        """A model of `length` steps over the ops named (keys of UNARY and BINARY), holding every
        op of `must` at least once, in drawn spellings (`spellings` narrows or adds some); modules
        sit at drawn names (nested in containers when `nested`; often one of `decoys`, names
        that a rule keyed on names would misread), one is sometimes called twice or registered
        twice."""
        table = {**UNARY, **BINARY, **(spellings or {})}
        unknown = sorted((set(ops) | set(must)) - set(table))
        if unknown:
            raise ValueError(f"no spellings for {unknown}; known: {sorted(table)}")
        width = width or self.integer(3, 8)
        count = max(self.integer(*length), len(must))
        chosen = list(must) + [self.choice(list(ops)) for _ in range(count - len(must))]
        self.rng.shuffle(chosen)
        drawn = _ModelDraft(self, width, self.coin(0.4) if nested is None else nested, decoys)
        for op in chosen:
            drawn.add(op, table[op], binary=op in BINARY)
        model = drawn.finish()
        ops = ", ".join(drawn.described)
        self.note(_("a model of {count} ops: {ops}").format(count=len(chosen), ops=ops))
        return model

    def input_for(self, model: nn.Module, batch: int | None = None, dtype=torch.float32):
        width = getattr(model, "width", None) or _first_width(model)
        return self.tensor(batch or self.integer(1, 5), width, dtype=dtype)


def _first_width(model: nn.Module) -> int:
    for module in model.modules():
        if isinstance(module, nn.Linear):
            return module.in_features
    raise ValueError("pass the input's width: the model holds no Linear to read it from")


class _ModelDraft:
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
        if spelling.target is nn.Linear:
            module = make.parameters_of(nn.Linear(self.width, self.width, bias=make.coin(0.8)))
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
        read = {i for step in self.steps for i in step.inputs}
        outputs = tuple(i for i in range(1, len(self.steps) + 1) if i not in read)
        model = DrawnModel(self.steps, self.modules, outputs)
        model.width = self.width
        return model


def _op_of(module: nn.Module) -> str | None:
    return getattr(module, "fxcourse_op", None)


def seeds_of(run_seed: int, count: int) -> list[int]:
    """The seeds of a run's cases: one per case, drawn from the run's seed."""
    rng = random.Random(run_seed)
    return [rng.randrange(10**9) for _ in range(count)]


def side_by_side(models: Sequence[nn.Module], arguments: Sequence[str] = ()) -> nn.Module:
    """One module holding `models` as `case1`, `case2`, ...: its forward takes one input per
    model, named by `arguments` (a name taken twice gets the case's number; `x1`, `x2`, ... by
    default), and returns their outputs as a tuple. A checkpoint whose every case pays a fixed
    cost per program (`run_decompositions` lists all of torch's composite operators each call)
    exports this once for all its cases; `case_of` tells which case a name or node belongs to."""
    names: list[str] = []
    for number in range(1, len(models) + 1):
        name = arguments[number - 1] if len(arguments) >= number else f"x{number}"
        if not name.isidentifier() or name in names or name == "self":
            name = f"{name}{number}" if name.isidentifier() else f"x{number}"
        names.append(name)
    calls = ", ".join(f"self.case{n}({name})" for n, name in enumerate(names, 1))
    scope: dict = {}
    exec(f"def forward(self, {', '.join(names)}):\n    return ({calls},)", scope)  # noqa: S102
    joined = type("Cases", (nn.Module,), {"forward": scope["forward"]})()
    for number, model in enumerate(models, 1):
        joined.add_module(f"case{number}", model)
    joined.arguments = names
    return joined


def case_of(joined: nn.Module, name: str | torch.fx.Node) -> int | None:
    """The number of the case in `side_by_side`'s module that `name` belongs to: a state's
    qualified name (`case2.running_mean`), an argument's name, or a node of its exported
    graph (by the module stack it was traced under); None for anything else."""
    if isinstance(name, torch.fx.Node):
        stack = name.meta.get("nn_module_stack") or {}
        paths = [path for path, _kind in stack.values() if path]
        name = paths[0] if paths else ""
    if name in joined.arguments:
        return joined.arguments.index(name) + 1
    head = name.split(".")[0]
    number = head.removeprefix("case")
    return int(number) if head.startswith("case") and number.isdigit() else None


def built_once(builder: Callable[[CaseMaker], object]) -> Callable[[CaseMaker], object]:
    """`builder`, run once per case: a later call for the same case gets a deep copy of what the
    first call made, with the same description. Each side of `case.both` still gets objects of
    its own; only the making (an export, a calibration, a model's initialisation) is not done
    twice. Wrap the builder inside the check cell, so each run of the checkpoint starts empty."""
    made: dict[tuple[int, int, int], tuple[object, list[str]]] = {}

    def build(make: CaseMaker):
        key = (make.seed, make.index, make.run_seed)
        if key not in made:
            objects = builder(make)
            made[key] = (copy.deepcopy(objects), list(make.notes))
            return objects
        objects, notes = made[key]
        make.notes.extend(notes)
        return copy.deepcopy(objects)

    build.__name__ = getattr(builder, "__name__", "build")
    return build


# --- layouts and inspection (used by chapter 3's and 4's checkpoints) ---------------------------
LAYOUTS = ("contiguous", "transposed", "strided", "channels_last")


def laid_out(make: CaseMaker, shape: Sequence[int], layout: str, dtype=torch.float32):
    """A tensor of `shape` whose memory is laid out as `layout` (one of LAYOUTS): contiguous, the
    last two dimensions transposed, every second element of a wider tensor (a strided slice), or
    channels-last (4-D shapes only). The values are drawn from the case's generator."""
    *front, rows, cols = shape
    if layout == "contiguous":
        return make.tensor(*shape, dtype=dtype)
    if layout == "transposed":
        return make.tensor(*front, cols, rows, dtype=dtype).transpose(-1, -2)
    if layout == "strided":
        return make.tensor(*front, rows, 2 * cols, dtype=dtype)[..., ::2]
    if layout == "channels_last" and len(shape) == 4:
        return make.tensor(*shape, dtype=dtype).contiguous(memory_format=torch.channels_last)
    raise ValueError(f"no layout {layout!r} for shape {tuple(shape)}; known: {LAYOUTS}")


def hooks_on(module: nn.Module) -> list[str]:
    """Where `module` runs other code than its modules' own forward: the names of (sub)modules
    with forward hooks or pre-hooks or a `forward` set on the instance, and "global" when a
    module hook is registered for every module. Empty for a module that runs what it says."""
    from torch.nn.modules import module as module_globals

    found = [
        name or "(the module itself)"
        for name, sub in module.named_modules(remove_duplicate=False)
        if sub._forward_hooks or sub._forward_pre_hooks or "forward" in vars(sub)
    ]
    if module_globals._global_forward_hooks or module_globals._global_forward_pre_hooks:
        found.append("global")
    return found


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
    called straight from the root; ("read", path) adds the sum of the parameter at `path` (a
    `get_attr` node once traced; the default tracer bakes a buffer in as a constant instead).
    Modules the plan never names stay unused."""

    def __init__(self, modules: dict[str, nn.Module], plan: Sequence[tuple[str, str]]):
        super().__init__()
        for path, module in modules.items():
            _register(self, path, module)
        unknown = [(kind, path) for kind, path in plan if kind not in ("call", "read")]
        if unknown:
            raise ValueError(f"a plan step is ('call', path) or ('read', path), not {unknown}")
        self.plan = list(plan)

    def forward(self, x):
        for kind, path in self.plan:
            owner, _, name = path.rpartition(".")
            if kind == "call":
                x = self.get_submodule(path)(x)
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


# --- a pass's edits to a traced graph (readers in odd places, users out of graph order) ------


def _outputs_with(gm: torch.fx.GraphModule, extra: Sequence[torch.fx.Node]) -> None:
    output = gm.graph.output_node()
    returned = output.args[0] if isinstance(output.args[0], tuple) else (output.args[0],)
    output.args = ((*returned, *extra),)
    gm.recompile()


def extra_readers(make: CaseMaker, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Two more outputs of `gm` (whose values share one shape, as a DrawnModel's do) that read
    drawn values where a loop over `node.args` does not look: inside a list (`torch.cat([a, b])`)
    and by keyword (`torch.add(a, other=b)`)."""
    values = [node for node in gm.graph.nodes if node.op != "output"]
    first, second = make.choice(values), make.choice(values)
    with gm.graph.inserting_before(gm.graph.output_node()):
        listed = gm.graph.call_function(torch.cat, ([first, second],))
        keyword = gm.graph.call_function(torch.add, (first,), {"other": second})
    _outputs_with(gm, [listed, keyword])
    said = _("{first} and {second} read inside a list and by keyword")
    make.note(said.format(first=first.name, second=second.name))
    return gm


def early_reader(make: CaseMaker, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A pass's edit: a new node (`torch.neg`) placed just before one reader of a value takes
    over that reader's input. The value's `users` then lists the new node last, though a later
    reader comes after it in graph order. `gm` needs a value with two readers."""
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
    gm.recompile()
    said = _("a pass put neg({value}) before {reader}, which now reads it")
    make.note(said.format(value=value.name, reader=reader.name))
    return gm


def erase_calls(gm: torch.fx.GraphModule, paths: Sequence[str]) -> torch.fx.GraphModule:
    """A pass's edit: every call of the modules at `paths` is erased, its input going on in its
    place; the modules stay registered, unused."""
    for node in list(gm.graph.find_nodes(op="call_module")):
        if node.target in paths:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


# --- a fold's artifact: its layers' weights applied by hand (chapter 4) ----------------------

_CONVS = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}
_DECONVS = {
    nn.ConvTranspose1d: F.conv_transpose1d,
    nn.ConvTranspose2d: F.conv_transpose2d,
    nn.ConvTranspose3d: F.conv_transpose3d,
}
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
_LAYERS = (nn.Linear, *_CONVS, *_DECONVS)


def hooked_or_overridden(module: nn.Module) -> list[str]:
    """The modules under `module` (by qualified name, "" for itself) that carry a hook or a
    `forward` of their own (set on the object, not the class): what a fold must not add."""
    found = []
    for name, sub in module.named_modules(remove_duplicate=False):
        hooks = sub._forward_hooks or sub._forward_pre_hooks or sub._backward_hooks
        if hooks or "forward" in vars(sub):
            found.append(name)
    return found


def apply_weights(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`module(x)` computed from its parameters with `torch.nn.functional`, never calling the
    module (so no hook and no overridden forward runs): for exact nn.Linear, Conv*d,
    ConvTranspose*d and eval-mode BatchNorm*d."""
    kind = type(module)
    if kind is nn.Linear:
        return F.linear(x, module.weight, module.bias)
    if kind in _CONVS:
        padding = module.padding
        if module.padding_mode != "zeros":
            x = F.pad(x, module._reversed_padding_repeated_twice, mode=module.padding_mode)
            padding = 0
        args = (module.stride, padding, module.dilation, module.groups)
        return _CONVS[kind](x, module.weight, module.bias, *args)
    if kind in _DECONVS:
        args = (module.stride, module.padding, module.output_padding, module.groups)
        return _DECONVS[kind](x, module.weight, module.bias, *args, module.dilation)
    if _fixed_norm(module):
        return F.batch_norm(
            x, module.running_mean, module.running_var, module.weight, module.bias,
            training=False, eps=module.eps,
        )  # fmt: skip
    raise TypeError(f"apply_weights knows Linear, Conv, ConvTranspose, eval BatchNorm: {kind}")


def _fixed_norm(module: nn.Module) -> bool:
    """An exact BatchNorm*d that normalizes with its running statistics (eval, tracked)."""
    fixed = not module.training and getattr(module, "running_mean", None) is not None
    return type(module) in _NORMS and fixed


def run_by_weights(gm: torch.fx.GraphModule, *args):
    """Run `gm`'s graph node by node, each call of a layer `apply_weights` knows computed from
    its weights; other modules (a BatchNorm on batch statistics too) and functions run as usual:
    what a folded graph computes by its weights, whatever its modules' hooks or `forward`s do."""

    class ByWeights(torch.fx.Interpreter):
        def call_module(self, target, args, kwargs):
            module = self.fetch_attr(target)
            if (type(module) in _LAYERS or _fixed_norm(module)) and not kwargs:
                return apply_weights(module, *args)
            return super().call_module(target, args, kwargs)

    return ByWeights(gm).run(*args)


def same_state(module: nn.Module, fresh: nn.Module) -> bool:
    """Whether `module` still holds what `fresh`, made again from the same seed, holds: the same
    parameter and buffer names, each equal (what a fold that returns a copy must leave alone)."""
    mine, made = module.state_dict(), fresh.state_dict()
    return mine.keys() == made.keys() and all(torch.equal(mine[k], made[k]) for k in mine)


def rounding(expected: torch.Tensor, per_unit: float = 1e-5) -> float:
    """An absolute tolerance for values that differ from `expected` by rounding only: `per_unit`
    for each unit of its largest magnitude (a folded network rounds differently in each layer,
    and a value near zero among large ones keeps the large ones' absolute error)."""
    return per_unit * (1.0 + expected.detach().abs().max().item())


# --- what ran: modules and nodes a run called, inputs under drawn names ----------------------


def tag_modules(model: nn.Module) -> nn.Module:
    """Mark each module of `model` with its qualified name (`fxcourse_path`), which a copy
    (`copy.deepcopy`) keeps: `modules_run` then names a module however it was reached."""
    for path, module in model.named_modules():
        if path:
            module.fxcourse_path = path
    return model


@contextlib.contextmanager
def modules_run() -> Iterator[list[str]]:
    """A list that fills, inside the block, with the `fxcourse_path` of every tagged module
    that runs (a module called twice appears twice), whoever calls it."""
    ran: list[str] = []

    def note(module, args, output):
        if (path := getattr(module, "fxcourse_path", None)) is not None:
            ran.append(path)

    handle = nn.modules.module.register_module_forward_hook(note)
    try:
        yield ran
    finally:
        handle.remove()


def record_calls(gm: torch.fx.GraphModule, ran: list[str]) -> torch.fx.GraphModule:
    """Each call_function and call_method node of `gm` becomes a call of a function that
    appends the node's name to `ran`, then computes what the node computed; call_module nodes
    stay (see `modules_run`). So `ran` says which of these nodes a run computed, however it ran
    the graph (an Interpreter, the generated code, a copy)."""
    for node in list(gm.graph.nodes):
        if node.op in ("call_function", "call_method"):
            node.target = _recorded(node.name, node.op, node.target, ran)
            node.op = "call_function"
    gm.recompile()
    return gm


def _recorded(name: str, op: str, target, ran: list[str]) -> Callable:
    def call(*args, **kwargs):
        ran.append(name)
        if op == "call_method":
            return getattr(args[0], target)(*args[1:], **kwargs)
        return target(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"{name}_recorded"
    return call


def rename_inputs(make: CaseMaker, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The placeholders of `gm` under drawn words (a trace names them after forward's
    parameters, `x` for a DrawnModel), so no rule can key on an input's name."""
    for node in list(gm.graph.find_nodes(op="placeholder")):
        node._rename(make.word(avoid=[n.name for n in gm.graph.nodes]))
        node.target = node.name
    gm.recompile()
    return gm


def none_reached(fn: Callable, *args, **kwargs) -> tuple[object, str | None]:
    """(fn(*args, **kwargs), None); or, when it failed because an op received `None` where a
    value belongs (a TypeError or AttributeError that names NoneType, as an override that
    returns nothing causes), (None, the error's first line): what a checkpoint turns into a
    question rather than a traceback."""
    try:
        return fn(*args, **kwargs), None
    except (TypeError, AttributeError) as error:
        if "NoneType" not in str(error):
            raise
        return None, str(error).strip().splitlines()[0]
