"""What chapter 9's case builders draw (fxcourse.cases makes the seeds, the checkpoints compare).

    loss = draw_loss(make); forward, backward = split_loss(loss)   # try it 9.1
    partitioned_losses(make) -> (forward, backward)                 # 9.1's case builder
    score_graphs(make) -> (graph, inputs)                           # try it 9.2's case builder
    RulePasses().rewritten(answer, graph, inputs)                   # 9.2: the answer's rule run

Try it 9.3's cases (rule sets and the edits that change their key) are in fxcourse.rule_cases.

Every case is Python source written from the maker's generator (operators, names, sizes,
dtypes), so a "Not yet" can describe it and the same seed makes it again. Nothing here holds an
answer: the checkpoints run the reference answer (fxcourse.reference) beside the learner's.
"""

from __future__ import annotations

import copy
import functools
import linecache
import logging
import numbers
import random
from dataclasses import dataclass

import torch
import torch.fx as fx

from fxcourse.messages import _
from fxcourse.quiet import hushed

PARTITIONERS = ("default_partition", "min_cut_rematerialization_partition")


def defined(source: str, filename: str) -> dict:
    """Run `source` as a notebook cell runs: its lines readable by `inspect` under `filename`."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


# ----------------------------------------------------------------------------- try it 9.1

UNARY = ("torch.sin({})", "torch.exp({})", "torch.tanh({})", "torch.sigmoid({})", "torch.relu({})")
ROWWISE = (
    "torch.softmax({}, dim=-1)",
    "torch.log_softmax({}, dim=-1)",
    "({} - {}.amax(-1, keepdim=True))",
    "({} / {}.sum(-1, keepdim=True))",
)
MIXING = ("{} * x", "{} + w", "{} * torch.cos(w)")
# what these save for the backward is not floating point: a bool mask, int64 indices
SELECTING = ("torch.where(x > w, {}, 0.5 * w)", "torch.sort({}, dim=-1).values")
LOSSES = ("({}).sum()", "({} * x).sum()", "({}).pow(2).mean()")
# a loss whose gradient is the loss itself: the backward reads the forward's own output, a
# tensor kept for the backward that the forward also returns (it counts: only inputs do not)
OUTPUT_SAVED = "torch.exp(({}).mean())"


@dataclass(frozen=True)
class Loss:
    """A loss of x (rows, columns) and w (columns,), and the partitioner that splits it."""

    expression: str
    dtype: torch.dtype
    shape: tuple[int, int]
    x_needs_grad: bool
    partition: str


def loss_expression(rng: random.Random, selecting: bool = False, output_saved: bool = False) -> str:
    """A drawn loss; `selecting`: one step (where, sort) saves a value that is not a float;
    `output_saved`: the loss is exp of a mean, which its backward reads again."""
    expression = rng.choice(("x * w", "x + w", "torch.sin(x) * w", "x - torch.tanh(w)"))
    steps = rng.randint(2, 4)
    chosen = rng.randrange(steps) if selecting else -1
    for step in range(steps):
        pick = rng.random()
        template = rng.choice(UNARY if pick < 0.5 else ROWWISE if pick < 0.8 else MIXING)
        template = rng.choice(SELECTING) if step == chosen else template
        expression = template.replace("{}", f"({expression})" if "{}." in template else expression)
    form = rng.choice(LOSSES)
    return (OUTPUT_SAVED if output_saved else form).format(expression)


def draw_loss(make) -> Loss:
    """A loss for `make` (an fxcourse.cases.CaseMaker): every run has each dtype, both
    partitioners, losses that save a bool or int64 value for the backward, and with each
    partitioner a loss that saves its own output (the min-cut one saves it under the output's
    own name)."""
    dtype = make.each([torch.float32, torch.float64, torch.bfloat16])
    partition, output_saved = make.each([(p, saved) for p in PARTITIONERS for saved in (1, 0)])
    selecting = make.each([True, False])
    shape = (make.integer(2, 9), make.integer(3, 17))
    expression = loss_expression(make.rng, selecting, bool(output_saved))
    return Loss(expression, dtype, shape, make.coin(0.4), partition)


@functools.lru_cache(maxsize=32)
def _joint(expression: str, dtype: torch.dtype, shape: tuple, x_needs_grad: bool) -> tuple:
    """AOTAutograd's joint graph of the loss (Inductor's decompositions), with what the
    partitioner is called with; traced once per loss."""
    from functorch.compile import aot_function, default_partition, make_boxed_func
    from torch._inductor.decomposition import select_decomp_table

    joint = {}

    def keep_joint(graph, inputs, **options):
        joint.update(graph=copy.deepcopy(graph), inputs=inputs, options=options)
        return default_partition(graph, inputs, **options)

    def run_as_is(gm, _):
        return make_boxed_func(gm.forward)

    loss = defined(f"def loss(x, w):\n    return {expression}\n", "<a drawn loss>")["loss"]
    x = torch.randn(*shape, dtype=dtype, requires_grad=x_needs_grad)
    w = torch.randn(shape[1], dtype=dtype, requires_grad=True)
    traced = aot_function(
        loss, run_as_is, run_as_is, keep_joint, decompositions=select_decomp_table()
    )
    traced(x, w).backward()
    return joint["graph"], joint["inputs"], joint["options"]


def split_loss(loss: Loss) -> tuple[fx.GraphModule, fx.GraphModule]:
    """(forward, backward): the loss's joint graph split by its partitioner, as Inductor's
    `partition_fn` splits it with min_cut_rematerialization_partition; a copy of its own for each
    caller (the partitioner runs once per loss)."""
    return copy.deepcopy(_split(loss))


@functools.lru_cache(maxsize=32)
def _split(loss: Loss) -> tuple[fx.GraphModule, fx.GraphModule]:
    import functorch.compile as partitioners

    graph, inputs, options = _joint(loss.expression, loss.dtype, loss.shape, loss.x_needs_grad)
    return getattr(partitioners, loss.partition)(copy.deepcopy(graph), inputs, **options)


def partitioned_losses(make) -> tuple[fx.GraphModule, fx.GraphModule]:
    """Try it 9.1's case builder: a drawn loss, described in the case's notes, split by its
    partitioner into (forward, backward)."""
    loss = draw_loss(make)
    kind = str(loss.dtype).removeprefix("torch.")
    grads = _("x and w need gradients") if loss.x_needs_grad else _("only w needs a gradient")
    description = _("loss(x, w) = {expression}, x of {dtype}{shape}, {grads}")
    make.note(
        description.format(
            expression=loss.expression, dtype=kind, shape=list(loss.shape), grads=grads
        )
    )
    make.note(_("split by {partitioner}").format(partitioner=loss.partition))
    return split_loss(loss)


# ----------------------------------------------------------------------------- try it 9.2

OPERANDS = ("u", "v", "2 * u", "u - v", "torch.sin(v)", "0.5 * v", "-u", "v + 1")
FOUND = "torch.log(torch.exp({a}) + torch.exp({b}))"
LEFT_ALONE = (
    "torch.log(torch.exp({a}) + {b})",
    "torch.log(torch.exp({a}) - torch.exp({b}))",
    "torch.exp({a}) + torch.exp({b})",
    "torch.log1p(torch.exp({a}))",
)


@dataclass(frozen=True)
class Scores:
    """A function `scores(u, v)` returning a tuple of terms, and its inputs."""

    source: str
    inputs: tuple[torch.Tensor, torch.Tensor]


# operands that carry lse_inputs' large, close pair (big/2, big/2 + 1) to the expression
CLOSE = (("u", "v"), ("v", "u"), ("u", "v + 1"), ("v + 1", "u"))
# an operand of fewer elements than the other (a row, an entry), which broadcasts against it
BROADCAST = ("u[0]", "v[-1]", "u[:1]", "v[..., :1]")


def lse_source(rng: random.Random) -> str:
    """`scores(u, v)`: four to six terms, one of them the expression of operands that are
    large and close for one pair of inputs, one of them the expression of operands of different
    shapes (broadcast, as a bias row added to a matrix: a replacement must broadcast too)."""
    terms, lines = [], []
    for index in range(rng.randint(2, 4)):
        a, b = rng.sample(OPERANDS, 2)
        pick = rng.random()
        if pick < 0.5:
            terms.append(FOUND.format(a=a, b=b))
        elif pick < 0.65:  # exp(a) is read again outside the expression: nothing to rewrite
            lines.append(f"    e{index} = torch.exp({a})")
            terms.append(f"torch.log(e{index} + torch.exp({b})) * e{index}")
        else:
            terms.append(rng.choice(LEFT_ALONE).format(a=a, b=b))
    a, b = rng.choice(CLOSE)
    terms.insert(rng.randint(0, len(terms)), FOUND.format(a=a, b=b))
    a, b = rng.choice(BROADCAST), rng.choice(("u", "v"))
    a, b = (a, b) if rng.random() < 0.5 else (b, a)
    terms.insert(rng.randint(0, len(terms)), FOUND.format(a=a, b=b))
    body = "\n".join(lines + [f"    return ({', '.join(terms)},)"])
    return f"def scores(u, v):\n{body}\n"


def lse_inputs(
    rng: random.Random, dtype: torch.dtype, matrix: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ordinary values, an equal pair, and values far past exp's range in both directions: a
    pair both large and close, and one both far below 0, where exp gives 0 for each and the
    expression -inf, though its value is the larger plus at most log 2 (a replacement that
    shifts only large positive values keeps that -inf). And 0 beside -g, for a gap g of 9 to 21
    and one of 22.2 to 22.8: log(1 + exp(-g)) is still more than float64's tolerance, so a
    replacement that takes the larger input alone beyond some gap below 22.8 is off there."""
    big = 1000.0 if dtype == torch.float32 else 4000.0
    u = [0.0, -big / 2, big, -3.0, big / 2, rng.uniform(-2, 2), 0.0, 0.0]
    gaps = [rng.uniform(9, 21), rng.uniform(22.2, 22.8)]
    v = [0.0, -big / 2 - 1, -big, 2.0, big / 2 + 1, rng.uniform(-2, 2), *(-g for g in gaps)]
    order = list(range(len(u)))
    rng.shuffle(order)
    u, v = [u[i] for i in order], [v[i] for i in order]
    tensors = torch.tensor(u, dtype=dtype), torch.tensor(v, dtype=dtype)
    return tuple(t.reshape(2, 4) for t in tensors) if matrix else tensors


def draw_scores(make) -> Scores:
    """Scores for `make`: every run has float32 and float64 inputs, each in one and in two
    dimensions."""
    source = lse_source(make.rng)
    dtype, matrix = make.each([(d, m) for d in (torch.float32, torch.float64) for m in (0, 1)])
    return Scores(source, lse_inputs(make.rng, dtype, matrix=bool(matrix)))


def traced_scores(scores: Scores) -> fx.GraphModule:
    """The ATen graph of the scores, with fake tensors in meta["val"], as Inductor's passes get."""
    from torch.fx.experimental.proxy_tensor import make_fx

    function = defined(scores.source, "<drawn scores>")["scores"]
    return make_fx(function, tracing_mode="fake")(*scores.inputs)


def score_graphs(make) -> tuple[fx.GraphModule, tuple[torch.Tensor, torch.Tensor]]:
    """9.2's case builder: drawn scores, traced, and their inputs (noted as the source)."""
    scores = draw_scores(make)
    u = scores.inputs[0]
    kind = str(u.dtype).removeprefix("torch.")
    make.note(f"{scores.source.strip()}  # u, v: {kind}{list(u.shape)}")
    return traced_scores(scores), scores.inputs


class RulePasses:
    """For one checkpoint run: each (search, replace) pair registered once, in a
    PatternMatcherPass of its own, as Inductor's `register_replacement` registers a rule.

    At every place that matches loosely, the matcher traces the search function again with the
    place's shapes, and then the replacement (`check_fn` in torch/_inductor/pattern_matcher.py):
    about a tenth of a second each. The same function traced with the same input types in the
    same graph (one fake mode) gives the same graph, so each is traced once per run and copied."""

    def __init__(self):
        self.passes: dict[tuple, object] = {}
        self.traced: dict[tuple, fx.GraphModule] = {}

    def trace(self, fn, args, **options) -> fx.GraphModule:
        from torch._dynamo.utils import detect_fake_mode
        from torch._inductor.pattern_matcher import fwd_only

        if not all(isinstance(a, torch.Tensor) for a in args) or any(
            isinstance(size, torch.SymInt) for a in args for size in (*a.shape, *a.stride())
        ):
            return fwd_only(fn, args, **options)
        types = tuple((a.shape, a.stride(), a.dtype, a.device, a.requires_grad) for a in args)
        key = (fn, types, detect_fake_mode(args), tuple(sorted(options.items())))
        if key not in self.traced:
            self.traced[key] = fwd_only(fn, args, **options)
        return copy.deepcopy(self.traced[key])  # the matcher may edit what it gets

    def rewritten(self, answer, graph: fx.GraphModule, inputs) -> tuple[int, object]:
        """(places rewritten by the answer's rule, the rewritten graph's outputs on `inputs`)."""
        from torch._inductor.pattern_matcher import PatternMatcherPass, register_replacement

        pair = (answer.search_lse, answer.replace_lse)
        if pair not in self.passes:
            self.passes[pair] = PatternMatcherPass()
            example = [torch.empty(4), torch.empty(4)]
            register_replacement(*pair, example, self.trace, self.passes[pair])
        # a replacement that raises at a place (one that cannot broadcast) raises here, after
        # fake tensors logged the error at length: the checkpoint tells it in one line
        with hushed("torch._subclasses.fake_tensor", level=logging.CRITICAL):
            found = self.passes[pair].apply(graph.graph)
        graph.recompile()
        return found, graph(*inputs)


def lse_rule_passes() -> RulePasses:
    """9.2: the rule passes of one checkpoint run."""
    return RulePasses()


def same_byte_count(mine, wanted) -> bool:
    """9.1: whether the answer's saved bytes is a number equal to the reference's."""
    return isinstance(mine, numbers.Real | torch.Tensor) and bool(mine == wanted)
