"""Keep a cell's expected noise out of the notebook, and change nothing for later cells.

    with hushed("torch.fx.experimental.symbolic_shapes"):
        ...  # stderr and those loggers' warnings are hidden here, restored afterwards

Used where a chapter runs a call that is meant to fail and prints its own report of the error,
so the learner reads one clear message instead of a red wall of diagnostics.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def hushed(*logger_names: str, level: int = logging.ERROR) -> Iterator[io.StringIO]:
    """Hide what the block writes to stderr, and the named loggers' records below `level`.
    Yields what was written to stderr, for a look if wanted."""
    loggers = [logging.getLogger(name) for name in logger_names]
    saved = [logger.level for logger in loggers]
    captured = io.StringIO()
    try:
        for logger in loggers:
            logger.setLevel(level)
        with contextlib.redirect_stderr(captured):
            yield captured
    finally:
        for logger, old_level in zip(loggers, saved, strict=True):
            logger.setLevel(old_level)


@contextlib.contextmanager
def without_structured_trace() -> Iterator[None]:
    """torch's Interpreter writes a node that raised to its structured trace, and the first such
    write imports torch._dynamo (about 5 s): an answer whose Interpreter run raises would make
    its checkpoint that slow once per kernel. A checkpoint's runs write no trace."""
    from torch.fx import interpreter

    kept = interpreter.trace_structured
    interpreter.trace_structured = lambda *args, **kwargs: None
    try:
        yield
    finally:
        interpreter.trace_structured = kept
