"""A grading session: what the submissions graded side by side in one ``make autograde`` share.

``batch.autograde`` makes one and hands it to each submission's ``SandboxExecute`` through
nbgrader's configuration (``config.SandboxExecute.session``); plain ``nbgrader autograde`` and
the formgrader's button have none, and each notebook gets a sandbox of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .pool import Pool


class GradingSession:
    """A pool of warm sandboxes; nbgrader's bookkeeping (gradebook, files), which is not
    thread-safe, done one submission at a time; the submissions the grader itself failed on."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.grader_failed: set[tuple[str, str]] = set()
        self._bookkeeping = threading.Lock()

    def __deepcopy__(self, memo):  # traitlets copies configured values: a session is shared
        return self

    @contextmanager
    def bookkeeping(self) -> Iterator[None]:
        """Held while nbgrader grades one submission, except while its sandbox runs."""
        with self._bookkeeping:
            yield

    @contextmanager
    def sandbox(self) -> Iterator[object]:
        """A warm sandbox of the pool, for a submission inside bookkeeping(): the bookkeeping of
        other submissions goes on while it runs, and is this one's again when it returns."""
        self._bookkeeping.release()
        try:
            with self.pool.sandbox() as box:
                yield box
        finally:
            self._bookkeeping.acquire()
            # nbgrader deletes this when a notebook is done; another submission's thread may have.
            os.environ["NBGRADER_EXECUTION"] = "autograde"
