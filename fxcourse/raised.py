"""What a checkpoint says when running a learner's answer, or the course's reference beside it,
raised: a missing name, the learner's own line, a None that reached torch (fxcourse.tryit).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from fxcourse import reference
from fxcourse.messages import _


def described(exc: BaseException, tb, cell_file: str = "") -> str:
    """What a checkpoint says when the code it ran raised `exc` (traceback `tb`); `cell_file`: the
    checkpoint cell's file, where a missing name means an unfilled try-it."""
    if isinstance(exc, reference.ReferenceFailed | reference.ReferenceMissing):
        return _(
            "the course's reference answer failed here ({error}): a bug in the course, not in "
            "your answer; please report it"
        ).format(error=exc)
    frames = traceback.extract_tb(tb)
    # a name the checkpoint looked for is missing; one missing inside the learner's own code
    # (a module not imported) is an error of that code, reported as any other
    looked_for = frames and frames[-1].filename in (cell_file, reference.__file__)
    if isinstance(exc, NameError) and looked_for:
        return _("{error}: fill in the try-it cell above and run it first.").format(error=exc)
    where = learners_frame(frames)
    # torch.fx's Interpreter appends the node it ran and a pointer to tlparse: nothing to a learner
    error = str(exc).split("\n\nWhile executing ")[0]
    if isinstance(exc, TypeError | AttributeError) and "NoneType" in error:
        said = _(
            "running your code raised {name}: {error} ({where}): a None reached it where a value "
            "belongs; does each function and override of yours return its value?"
        )
    else:
        said = _("running your code raised {name}: {error} ({where})")
    return said.format(name=type(exc).__name__, error=error, where=where)


def learners_frame(frames: traceback.StackSummary) -> str:
    """Where the learner's own code (a notebook cell, not torch's or Python's files) failed."""
    libraries = {sys.prefix, sys.base_prefix, str(Path(__file__).parent)}
    mine = [f for f in frames if not any(f.filename.startswith(lib) for lib in libraries)]
    frame = (mine or list(frames))[-1]
    shown = _("line {line}").format(line=frame.lineno)
    return f"{shown}: {frame.line}" if frame.line else shown
