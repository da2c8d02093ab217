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
    if isinstance(exc, reference.ReferenceFailed) and isinstance(exc.__cause__, NameError):
        # the reference runs in a copy of the notebook's names: one the chapter defines above
        # is missing when its cell was not run
        return _(
            "{error}: the course's reference answer uses the chapter's names too; run the cells "
            "above this try-it first"
        ).format(error=exc.__cause__)
    for raised in (exc, exc.__cause__):
        if isinstance(raised, reference.ReferenceReadsYourNames):
            return said_for_your_names(raised)
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
    where = learners_frame(frames, cell_file)
    # torch.fx's Interpreter appends the node it ran and a pointer to tlparse: nothing to a learner
    error = str(exc).split("\n\nWhile executing ")[0]
    said = said_for(exc, error, frames, cell_file)
    function = frames[-1].name if frames else ""
    return said.format(name=type(exc).__name__, error=error, where=where, function=function)


def said_for_your_names(failed: reference.ReferenceReadsYourNames) -> str:
    """The reference's own line raised on the notebook's names: ask which holds a value of the
    learner's (the course's answer is not at fault unless those names hold the chapter's)."""
    error = f"{type(failed.__cause__).__name__}: {failed.__cause__}"
    if not failed.names:
        return _(
            "the course's reference answer failed here ({error}): a bug in the course, not in "
            "your answer; please report it"
        ).format(error=error)
    return _(
        "the course's reference answer runs on this notebook's names, and its line `{line}` "
        "raised {error}. That line reads {names}: does any of them hold a value of yours now "
        "instead of the chapter's? Run the chapter's cells that define them again, then this "
        "one; if it still fails, please report it"
    ).format(line=failed.line, error=error, names=", ".join(failed.names))


def said_for(
    exc: BaseException, error: str, frames: traceback.StackSummary, cell_file: str = ""
) -> str:
    """The message, a template of {name}, {error}, {where} and {function}, for what was raised."""
    if isinstance(exc, TypeError | AttributeError) and "NoneType" in error:
        if read_a_none_attribute(frames, error):
            return _(
                "running your code raised {name}: {error} ({where}): inside {function}, a value it "
                "reads from what you handed it is None: does that object hold one? (A BatchNorm "
                "made with affine=False has no weight or bias, a layer made with bias=False no "
                "bias.)"
            )
        if raised_in_the_learners_own_line(frames, cell_file):
            return _(
                "running your code raised {name}: {error} ({where}): a value that line reads is "
                "None. Which one, and where does it come from? A function or override of yours "
                "that returns nothing, an entry a node does not hold (node.meta.get(...) gives "
                "None), or a layer's missing weight or bias (a BatchNorm made with affine=False, "
                "a layer made with bias=False)?"
            )
        return _(
            "running your code raised {name}: {error} ({where}): a None reached it where a value "
            "belongs; does each function and override of yours return its value?"
        )
    # torch's words, matched in pieces (a run of four English words would read as the course's
    # own sentence to the test that finds untranslated English in the Chinese pages)
    if isinstance(exc, TypeError) and "must be Tensor" in error and "not tuple" in error:
        return _(
            "running your code raised {name}: {error} ({where}): a tuple reached it where a "
            "tensor belongs; does an override of yours return `args`, the tuple of a call's "
            "arguments, where one of them (`args[0]`) belongs?"
        )
    if isinstance(exc, AssertionError) and "Expected FunctionType" in error:
        return _(
            "running your code raised {name}: {error} ({where}): replace_pattern traces its "
            "pattern and its replacement, so each must be a Python function (a def or a lambda "
            "that calls F.gelu), not a function of torch's own such as F.gelu itself"
        )
    if traced_a_constant(exc, error, frames):
        return _(
            "running your code raised {name}: {error} ({where}): a search function and its "
            "replacement are traced with example tensors of the pattern matcher's own, so a "
            "tensor made inside them from Python numbers, such as torch.tensor(1.0), cannot be "
            "traced; write the number itself (1.0), or make it from an argument "
            "(torch.ones_like(a))"
        )
    if used_an_operator_for_an_overload(exc, error):
        return _(
            "running your code raised {name}: {error} ({where}): one overload of an operator "
            "belongs here, as a decomposition table's keys are, such as "
            "torch.ops.aten.linear.default, not the operator itself (torch.ops.aten.linear)"
        )
    return _("running your code raised {name}: {error} ({where})")


def read_a_none_attribute(frames: traceback.StackSummary, error: str) -> bool:
    """Whether torch.nn's own Python code (its fusion helpers, say) met a None in a module the
    learner handed it, as `bn.weight` of an affine=False BatchNorm, rather than a None the learner
    returned: that one reaches an operator's argument check (`must be Tensor, not NoneType`), the
    Interpreter's call of a node's target, or the compiler's code, none of them in torch.nn."""
    if not frames or "unsupported operand" not in error:  # bn.weight * scale, say
        return False
    last = Path(frames[-1].filename)
    libraries = (Path(sys.prefix), Path(sys.base_prefix))
    inside = any(last.is_relative_to(library) for library in libraries)
    return inside and "torch" in last.parts and "nn" in last.parts[last.parts.index("torch") :]


def raised_in_the_learners_own_line(frames: traceback.StackSummary, cell_file: str) -> bool:
    """Whether the learner's own code (not torch's, Python's, the course's or the checkpoint
    cell's) raised: its line read the None itself (`bn.weight / ...`, `meta.shape`), so the None
    may come from anywhere that line reads, not only from a function that returns nothing."""
    return bool(frames) and frames[-1].filename != cell_file and _learners_file(frames[-1])


def _learners_file(frame: traceback.FrameSummary) -> bool:
    """Whether the frame runs a file of the learner's (a notebook cell), not of torch, Python or
    the course's own package."""
    libraries = (sys.prefix, sys.base_prefix, str(Path(__file__).parent))
    # "<string>": code torch builds and runs with exec (7.4: a lambda of torch.library's that
    # calls a fake kernel), which the learner never wrote: "line 1" named no line of theirs
    return frame.filename != "<string>" and not frame.filename.startswith(libraries)


GENERATED = "<eval_with_key>"  # the file name torch.fx gives a GraphModule's generated code


def learners_frame(frames: traceback.StackSummary, cell_file: str = "") -> str:
    """Where the learner's own code (a notebook cell, not torch's, Python's, the course's or the
    checkpoint cell's) failed; when none of it is running (torch read later a value the learner's
    code returned), the function that raised, not a line of the checkpoint's."""
    mine = [frame for frame in frames if _learners_file(frame) and frame.filename != cell_file]
    if not mine and frames:
        return _("in {function}, run by the checkpoint on what your code gave it").format(
            function=frames[-1].name
        )
    # a GraphModule's forward is code torch.fx wrote: the learner's line that called it, if any,
    # says more than the graph's line (a callable handed a list instead of its tensors)
    written = [frame for frame in mine if not frame.filename.startswith(GENERATED)]
    frame = (written or mine or list(frames))[-1]
    shown = _("line {line}").format(line=frame.lineno)
    return f"{shown}: {frame.line}" if frame.line else shown


def traced_a_constant(exc: BaseException, error: str, frames: traceback.StackSummary) -> bool:
    """Whether Inductor's pattern matcher, tracing a search function or a replacement with meta
    tensors, met a tensor made there from Python numbers (torch's words, matched in pieces)."""
    matcher = any(Path(frame.filename).stem == "pattern_matcher" for frame in frames)
    meta = isinstance(exc, RuntimeError) and 'device "meta"' in error and "storage" in error
    return matcher and meta


def used_an_operator_for_an_overload(exc: BaseException, error: str) -> bool:
    """Whether `exc` comes of an operator with all its overloads (torch.ops.aten.linear) used
    where one overload belongs (torch.ops.aten.linear.default): a table's missing key, or what a
    custom table (torch.export.default_decompositions()) raises looking up the packet's name."""
    if isinstance(exc, AttributeError):
        return "has no overload name" in error
    ops = sys.modules.get("torch._ops")
    key = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
    return ops is not None and isinstance(key, ops.OpOverloadPacket)
