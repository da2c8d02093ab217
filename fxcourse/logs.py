"""Hide known, harmless log warnings inside one block, and put the loggers back afterwards.

    with quiet_logs("torch.utils.cpp_extension"):
        compiled(x)

Only the named loggers change, only below `level`, and only inside the block: a cell that uses it
leaves logging exactly as it found it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_logs(*names: str, level: int = logging.ERROR) -> Iterator[None]:
    """Drop records below `level` from the named loggers while the block runs."""
    loggers = [logging.getLogger(name) for name in names]
    saved = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, old_level in zip(loggers, saved, strict=True):
            logger.setLevel(old_level)
