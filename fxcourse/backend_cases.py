"""What chapter 6's first checkpoint draws and runs (fxcourse.cases makes the seeds, the check
cell compares the learner's backend with the reference's, fxcourse.reference).

    for case in check.cases(drawn_models, count=5):      # try it 6.1: (model, x)
        (mine, ran), (wanted, ran_wanted) = counted_by_both(case)

Nothing here holds an answer; the cases are drawn so that each run holds every feature an answer
must handle (make.each).
"""

from __future__ import annotations

from itertools import pairwise

import torch
from torch import nn

from fxcourse.capture import unprofiled_guards
from fxcourse.messages import _
from fxcourse.shipped import as_shipped, stance_left

# ----------------------------------------------------------------------------- try it 6.1


class Drawn(nn.Module):
    def __init__(self, body: nn.Sequential):
        super().__init__()
        self.body, self.spare = body, nn.Linear(3, 3)  # spare: a layer forward never calls

    def forward(self, batch):  # not `x`: a placeholder's name does not tell the batch
        return self.body(batch)


class Gain(nn.Module):  # a parameter named neither weight nor bias; width None: a 0-dim one
    def __init__(self, width: int | None):  # and a buffer named as no BatchNorm's: offset
        super().__init__()
        self.gain = nn.Parameter(torch.ones(() if width is None else width))
        self.register_buffer("offset", torch.zeros(() if width is None else width))

    def forward(self, x):
        return x * self.gain + self.offset

    def extra_repr(self) -> str:
        return str(self.gain.numel()) if self.gain.dim() else "scalar"


class Mix(nn.Module):  # a bilinear map of x with itself: a weight of 3 dims (out, in, in)
    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, width, width) / width)

    def forward(self, x):
        return nn.functional.bilinear(x, x, self.weight)

    def extra_repr(self) -> str:
        return "x".join(map(str, self.weight.shape))


def drawn_models(make) -> tuple[nn.Module, torch.Tensor]:
    """A model of linear layers with and without bias; every run has each mix of a layer called
    twice (its weights arrive once) and a BatchNorm (buffers, not parameters), a model whose
    first layer is frozen (requires_grad=False: still parameters, handed over as nn.Parameter),
    a Gain after the first layer (a parameter named neither weight nor bias), one of 0 dims (a
    scalar gain: one element all the same), a Mix there instead (a weight of 3 dims: not its
    first two sizes' product) and a batch x that requires grad (as for a saliency
    map: an input, not a weight), and models in float32 and in float64 (a parameter's elements,
    not its bytes over 4). A Gain also holds a buffer, offset, named as no BatchNorm's, and the
    model's input is called `batch`: an answer that leaves out BatchNorm's statistics and the
    batch by their placeholders' names (running_..., l_x_) counts them (red team redY)."""
    widths = [make.integer(2, 9) for _ in range(make.integer(2, 3))]
    layers = [nn.Linear(a, b, bias=make.coin(0.7)) for a, b in pairwise(widths)]
    gain = make.each(["a gain", "a scalar gain", "no gain", "a mix"])
    if gain == "a mix":
        layers.insert(1, Mix(widths[1]))
    elif gain != "no gain":
        layers.insert(1, Gain(widths[1] if gain == "a gain" else None))
    shared, norm = make.each([(s, n) for s in (True, False) for n in (True, False)])
    if shared:
        twice = nn.Linear(widths[-1], widths[-1])
        layers += [twice, nn.ReLU(), twice]
    if norm:
        layers.append(nn.BatchNorm1d(widths[-1]))
    body = make.sequential(layers)
    frozen = make.each([True, False])
    frozen_note = _("; its first layer frozen (requires_grad=False)") if frozen else ""
    make.note(f"Drawn({', '.join(str(layer) for layer in body)}){frozen_note}")
    model = Drawn(make.parameters_of(body)).eval()
    body[0].requires_grad_(not frozen)
    if norm:
        make.trained_batchnorm(body[-1])
    dtype = make.dtype()
    make.note(str(dtype).removeprefix("torch."))
    model.to(dtype)
    x = make.tensor(make.integer(2, 5), widths[0], dtype=dtype)
    if make.each(["x needs grad", "x plain"]) == "x needs grad":  # a batch, still no weight
        x.requires_grad_()
    return model, x


def handed_over(model: nn.Module, x: torch.Tensor) -> tuple:
    """What Dynamo hands a backend for `model`: its graph and example inputs (one compile)."""
    handed = []

    def keep(gm, inputs):
        handed.append((gm, inputs))
        return gm.forward

    torch.compiler.reset()
    with unprofiled_guards(), as_shipped():  # not a stance an earlier cell left set
        torch.compile(model, backend=keep)(x)
    return handed[0]


def counted(answer, gm, inputs: list) -> tuple:
    """What the answer's backend added to its weight_counts, handed Dynamo's graph and inputs,
    and what the callable it returned computes."""
    before = len(answer.weight_counts)
    try:
        runner = answer.weights_backend(gm, list(inputs))
    finally:
        added = answer.weight_counts[before:]
        del answer.weight_counts[before:]
    return added, runner(*inputs)


def counted_by_both(case) -> tuple:
    """((added, output), (added, output)): the learner's and the reference's backends, each
    handed the graph Dynamo captured from the case's model (captured once)."""
    gm, inputs = handed_over(*case.objects())
    return case.both(lambda answer, *_: counted(answer, gm, inputs))


def one_compile_told(count: int) -> str:
    """6.1's message when weight_counts holds `count` numbers, not one: with none, and a stance
    left set by an earlier cell, what compiled nothing."""
    said = _("weight_counts should hold one number, from one compile; it holds {count}")
    said = said.format(count=count)
    stance = stance_left()
    if count == 0 and stance:
        more = _(
            ': torch.compile runs under the stance "{stance}", left set by an earlier cell: run '
            'torch.compiler.set_stance("default"), then the try-it cell again'
        )
        said += more.format(stance=stance)
    return said


_COUNTS_SEEN_COMPILED: dict[int, list] = {}  # weight_counts lists whose try-it run compiled


def compiled_with(backend, counts: list) -> bool:
    """Whether a frame compiled since the try-it cell's torch.compiler.reset() went to `backend`:
    Dynamo's code it made (convert_frame.output_codes), their original code (utils.orig_code_map)
    and the backend on each cache entry. This check's own cases reset Dynamo again, so a rerun of
    the check cell trusts what an earlier run saw for the same `counts` list."""
    if _COUNTS_SEEN_COMPILED.get(id(counts)) is counts:
        return True
    from torch._dynamo import convert_frame, eval_frame, utils

    for made in filter(None, (ref() for ref in list(convert_frame.output_codes.seen))):
        original = utils.orig_code_map.get(made)
        for entry in eval_frame._debug_get_cache_entry_list(original) if original else ():
            wrapper = entry.backend
            if eval_frame.innermost_backend(getattr(wrapper, "compiler_fn", wrapper)) is backend:
                _COUNTS_SEEN_COMPILED[id(counts)] = counts
                return True
    return False
