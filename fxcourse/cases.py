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

`make.each(options)` spreads choices over a run's cases, so that a feature the answer must handle
is in every run, not only in lucky ones: among `len(options)` consecutive cases each option appears
once (in an order drawn from the run's seed). Two options follow a pattern of their own instead
(each option within any 4 consecutive cases), so that up to ten two-way features of a builder
meet in every pairing among 6 cases, and the first four asked meet every option of a three-way
`each` both ways (one order a run would join two two-way features the same way in every case).
An options list is one feature, asked from one place of a builder (`each` refuses a second).

The drawn models live in `fxcourse.case_models`, the edits a case makes to a traced graph in
`fxcourse.case_edits`, and what a checkpoint inspects beside outputs in `fxcourse.case_checks`;
their names are importable from here too, as the chapters' case modules import them.
"""

from __future__ import annotations

import copy
import random
import sys
from collections import OrderedDict
from collections.abc import Callable, Sequence

import torch
from torch import nn

from fxcourse.case_checks import (
    apply_weights,
    hooked_or_overridden,
    hooks_on,
    modules_run,
    modules_swapped,
    none_reached,
    record_calls,
    rounding,
    run_by_weights,
    same_state,
    shared_state,
    tag_modules,
    tolerances,
)
from fxcourse.case_edits import early_reader, erase_calls, extra_readers, rename_inputs
from fxcourse.case_models import (
    BINARY,
    UNARY,
    DrawnModel,
    ModelDraft,
    PathModel,
    Residual,
    Spelling,
    Step,
    by_keyword,
    function,
    input_width,
    method,
    module,
    trace_with_leaves,
)
from fxcourse.measure import one_thread
from fxcourse.messages import _, listing

__all__ = [
    "BINARY", "LAYOUTS", "UNARY", "WORDS", "CaseMaker", "DrawnModel", "PathModel", "Residual",
    "Spelling", "Step", "apply_weights", "built_once", "by_keyword", "case_of", "early_reader",
    "erase_calls", "extra_readers", "function", "hooked_or_overridden", "hooks_on", "laid_out",
    "method", "module", "modules_run", "modules_swapped", "none_reached", "one_thread",
    "record_calls", "rename_inputs", "rounding", "run_by_weights", "same_state", "seeds_of",
    "shared_state", "side_by_side", "tag_modules", "tolerances", "trace_with_leaves",
]  # fmt: skip

# `one_thread` (from fxcourse.measure) is for checkpoints too: their cases are tiny, and on a busy
# machine threads that hand each small op to each other spend more CPU waiting than computing
# (checkpoint 4.2: 0.8 s CPU a run on two threads, 0.2 s on one, at load 7).

# Names a case gives to modules and functions: plain words, so that no rule can key on the
# chapter's own names and still pass.
WORDS = (
    "act", "block", "body", "branch", "cell", "core", "edge", "feat", "gate", "head", "hidden",
    "inner", "layer", "left", "lift", "mix", "neck", "node", "outer", "path", "proj", "right",
    "scale", "shift", "stage", "stem", "step", "tail", "trunk", "unit", "wing", "zone",
)  # fmt: skip


# The patterns two-way features follow (CaseMaker._two_way): the binary words of length 6 with three
# ones, none the complement of another. Any two take all four pairings (a covering array: a case
# where both are 0 comes first); the first four also take the other option three cases after each
# case (a, b, c, not a, not b, not c), so each option meets every option of a three-way `each`.
TWO_WAY_PATTERNS = (
    (0, 0, 0, 1, 1, 1), (0, 0, 1, 1, 1, 0), (0, 1, 0, 1, 0, 1), (0, 1, 1, 1, 0, 0),
    (0, 0, 1, 0, 1, 1), (0, 0, 1, 1, 0, 1), (0, 1, 0, 0, 1, 1),
    (0, 1, 0, 1, 1, 0), (0, 1, 1, 0, 0, 1), (0, 1, 1, 0, 1, 0),
)  # fmt: skip


class CaseMaker:
    """Draws one case's contents from its seed; see the module docstring."""

    def __init__(self, seed: int, index: int = 0, run_seed: int | None = None):
        self.seed, self.index = seed, index
        self.run_seed = seed if run_seed is None else run_seed
        self.rng = random.Random(seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.notes: list[str] = []
        self._two_ways: dict[str, int] = {}  # a two-way feature's place, in the order asked
        self._sites: dict[str, tuple] = {}  # where each options list was asked: one feature each

    # --- plain choices ---------------------------------------------------------------------
    def note(self, text: str) -> None:
        """Add to the case's description (what a "Not yet" says about the case)."""
        self.notes.append(text)

    def describe(self) -> str:
        return _("; ").join(self.notes) if self.notes else _("a drawn case")

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def choice(self, options: Sequence):
        return options[self.rng.randrange(len(options))]

    def each(self, options: Sequence):
        """options[k] for this case, each option once per len(options) consecutive cases."""
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        if self._sites.setdefault(repr(options), site) != site:
            raise ValueError(f"two features of a case builder ask each({options!r}): {site}")
        return self.each_of_case(options, self.index)

    def each_of_case(self, options: Sequence, index: int):
        """What `each(options)` gives the case `index` of this run."""
        if len(options) == 2:
            return options[self._two_way(repr(options), index)]
        order = list(range(len(options)))
        random.Random(f"{self.run_seed}:{len(options)}:{options!r}").shuffle(order)
        return options[order[index % len(options)]]

    def _two_way(self, key: str, index: int) -> int:
        """Which of two options the case `index` takes for the feature `key`: a pattern of
        TWO_WAY_PATTERNS, repeated, chosen by the feature's place among the case's two-way
        features (one of the first four for the first four), flipped or not by the run's seed."""
        place = self._two_ways.setdefault(key, len(self._two_ways))
        rng = random.Random(f"{self.run_seed}:two-way patterns")
        first, rest = list(TWO_WAY_PATTERNS[:4]), list(TWO_WAY_PATTERNS[4:])
        rng.shuffle(first), rng.shuffle(rest)
        pattern = (first + rest)[place % len(TWO_WAY_PATTERNS)]
        flip = random.Random(f"{self.run_seed}:{key}").randrange(2)
        return pattern[index % 6] ^ flip

    def word(self, avoid: Sequence[str] = ()) -> str:
        return self.choice([w for w in WORDS if w not in avoid])

    def words(self, count: int) -> list[str]:
        return self.rng.sample(WORDS, count)

    def dtype(self, options: Sequence[torch.dtype] = (torch.float32, torch.float64)) -> torch.dtype:
        """One of `options`, each in every run: they follow the case index two cases at a time
        (float32, float32, float64, float64, ...), out of step with a two-way `each`, which
        alternates. A coin per case left a run of 6 cases all of one dtype once in 32."""
        self.choice(options)  # drawn as before, so that the case's later draws stay the same
        if len(options) == 2:
            return options[self._two_way(f"dtype {options!r}", self.index)]
        order = list(range(len(options)))
        random.Random(f"{self.run_seed}:dtype:{options!r}").shuffle(order)
        return options[order[self.index // 2 % len(options)]]

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

    def eps_that_matters(self, module: nn.Module, large: bool) -> nn.Module:
        """`module`, a trained BatchNorm (`trained_batchnorm`), with an eps of its own. `large`:
        eps in [0.05, 0.5] and running variances in [0.02, 0.5], so that sqrt(var + eps) and
        sqrt(var) differ by 4% or more (a fold that forgets eps is far off in any dtype; one that
        adds eps outside the root, sqrt(var) + eps, is right for one variance at most);
        otherwise torch's default 1e-5 or up to 1e-3."""
        with torch.no_grad():
            if large:
                module.eps = 0.05 + 0.45 * self.rng.random()
                var = torch.rand(module.num_features, generator=self.generator) * 0.48 + 0.02
                module.running_var.copy_(var)
            else:
                module.eps = self.choice([1e-5, 1e-4, 1e-3])
        return module

    def conv_settings(self, setting: str, channels: int) -> dict:
        """Keyword arguments of a conv of `channels` channels in and out whose `setting`
        ("stride", "groups", "dilation", "padding_mode"; "" for none) a copy rebuilt from its
        channels, kernel and padding alone loses: other values or shapes (noted)."""
        drawn = {"stride": {"stride": 2}, "groups": {"groups": channels}, "": {}}
        drawn |= {"dilation": {"dilation": 2, "padding": 2}}
        modes = ["reflect", "replicate", "circular"]
        drawn["padding_mode"] = {"padding_mode": self.choice(modes)}
        if setting:
            said = ", ".join(f"{name}={value!r}" for name, value in drawn[setting].items())
            self.note(_("the first conv: {settings}").format(settings=said))
        return drawn[setting]

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
        drawn = ModelDraft(self, width, self.coin(0.4) if nested is None else nested, decoys)
        for op in chosen:
            drawn.add(op, table[op], binary=op in BINARY)
        model = drawn.finish()
        ops = listing(drawn.described)
        self.note(_("a model of {count} ops: {ops}").format(count=len(chosen), ops=ops))
        return model

    def input_for(self, model: nn.Module, batch: int | None = None, dtype=torch.float32):
        width = getattr(model, "width", None) or input_width(model)
        return self.tensor(batch or self.integer(1, 5), width, dtype=dtype)


def seeds_of(run_seed: int, count: int) -> list[int]:
    """The seeds of a run's cases: one per case, drawn from the run's seed."""
    rng = random.Random(run_seed)
    return [rng.randrange(10**9) for _ in range(count)]


def makers_of(run_seed: int, count: int) -> list[CaseMaker]:
    """The makers of a checkpoint run's `count` cases, as Checkpoint.cases draws them (its
    Case.objects makes each again from the same seed, index and run seed)."""
    return [
        CaseMaker(seed, index, run_seed) for index, seed in enumerate(seeds_of(run_seed, count))
    ]


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


# --- layouts (used by chapter 3's and 4's checkpoints) -------------------------------------------
LAYOUTS = ("contiguous", "transposed", "strided", "sliced", "channels_last")


def laid_out(make: CaseMaker, shape: Sequence[int], layout: str, dtype=torch.float32):
    """A tensor of `shape` whose memory is laid out as `layout` (one of LAYOUTS): contiguous, the
    last two dimensions transposed, every second element of a wider tensor (a strided slice), the
    first columns of a wider tensor (a slice whose last stride is 1, yet not contiguous), or
    channels-last (4-D shapes only). The values are drawn from the case's generator."""
    *front, rows, cols = shape
    if layout == "contiguous":
        return make.tensor(*shape, dtype=dtype)
    if layout == "transposed":
        return make.tensor(*front, cols, rows, dtype=dtype).transpose(-1, -2)
    if layout == "strided":
        return make.tensor(*front, rows, 2 * cols, dtype=dtype)[..., ::2]
    if layout == "sliced":
        return make.tensor(*front, rows, cols + make.integer(1, 3), dtype=dtype)[..., :cols]
    if layout == "channels_last" and len(shape) == 4:
        return make.tensor(*shape, dtype=dtype).contiguous(memory_format=torch.channels_last)
    raise ValueError(f"no layout {layout!r} for shape {tuple(shape)}; known: {LAYOUTS}")
