"""torch.compile as torch ships it, for the compiles a checkpoint makes itself (chapters 6, 10).

    with as_shipped():    # the default stance, and Dynamo's defaults for SHIPPED
        torch.compile(fn, backend=keep)(x)

An earlier cell may leave torch.compile changed for the rest of the kernel:
`torch.compiler.set_stance("force_eager")` run as a statement (the chapter shows it as a `with`
block) stops every compile, the reference answer's too; `torch._dynamo.config.suppress_errors =
True` runs a crashing stage eagerly, on both sides; a lowered recompile_limit runs later frames
eagerly. The checkpoints' own compiles (6.1's capture, 6.2's explain, 6.3's climb, and 10.1's
measurement of the chapter's batches, in its check cell, not inside what_each_call_compiled,
which a rule that measures must still find switched off) run under as_shipped, so that both
answers are judged as torch runs by default (the red team's redR); each setting is as it was again
after the block. 10.2's serve_run restores settings of its own (fxcourse.serve_cases).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

SHIPPED = ("suppress_errors", "disable", "recompile_limit", "accumulated_recompile_limit")
SHIPPED += ("automatic_dynamic_shapes", "assume_static_by_default", "error_on_recompile")


@contextlib.contextmanager
def as_shipped() -> Iterator[None]:
    """For the block: the default stance, and Dynamo's defaults for the settings in SHIPPED."""
    table = torch._dynamo.config._config  # private: each setting's entry, its default included
    defaults = {name: table[name].default for name in SHIPPED if name in table}
    with torch.compiler.set_stance("default"), torch._dynamo.config.patch(defaults):
        yield


def stance_left() -> str | None:
    """The stance torch.compile runs under now, when a cell left it other than "default" (a
    `set_stance` run as a statement); the private `_stance` is what set_stance sets."""
    stance = torch._dynamo.eval_frame._stance.stance
    return None if stance == "default" else stance
