"""A pool of warm sandboxes (sandbox.py), each serving one submission at a time.

``make autograde`` starts its sandboxes before it reads the course's configuration
(``Pool.early``): importing nbgrader to read it takes seconds of CPU, during which each sandbox
imports torch; ``settle`` then gives them the course's own imports and limits, and checks them
against the paths no sandbox may see, before any of them serves a job.
"""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager

from .sandbox import EARLY_IMPORTS, Limits, Sandbox, SandboxError, refuse_to_show
from .visibility import hold_site, release_site


class Pool:
    """Up to `size` warm sandboxes, each serving one submission at a time."""

    def __init__(self, size: int, preimport: list[str], forbidden: list[str], limits: Limits):
        self.idle: queue.Queue = queue.Queue()
        for _ in range(size):
            self.idle.put(None)  # started when first taken, in the thread that takes it
        self.options = (preimport, forbidden, limits)
        self.busy: set[Sandbox] = set()
        self.closed = False
        self.settled: threading.Event | None = None  # Pool.early's, until settle()
        hold_site()  # its sandboxes' copy of this package, removed when the last pool closes

    @classmethod
    def early(cls, size: int) -> Pool:
        """`size` sandboxes started now, before the course's configuration is read (importing
        nbgrader to read it takes seconds of CPU): each imports EARLY_IMPORTS meanwhile, then
        waits, serving nothing, for settle() to give it the course's own imports and limits."""
        pool = cls(size, [], [], Limits())
        pool.settled = threading.Event()
        for _ in range(size):
            pool.idle.get()
            box = Sandbox([], [], Limits())
            box.settled = pool.settled
            box.start_in_background()
            pool.idle.put(box)
        return pool

    def settle(self, size: int, preimport: list[str], forbidden: list[str], limits: Limits):
        """The course's options for the sandboxes early() started: each checked against the
        forbidden paths as a new one is (SandboxError), those past `size` stopped. Returns the
        pool, or None (closed) if the exercises import less than EARLY_IMPORTS."""
        if not set(EARLY_IMPORTS) <= set(preimport):
            self.close()
            return None
        for box in list(self.idle.queue):
            refuse_to_show(box.folders, forbidden)  # as a new sandbox would; close() stops them
        boxes = [self.idle.get() for _ in range(self.idle.qsize())]
        for box in boxes[size:]:
            box.cancel()
        for box in boxes[:size]:
            box.preimport, box.limits = preimport, limits
            self.idle.put(box)
        self.options = (preimport, forbidden, limits)
        self.settled.set()
        for box in boxes[size:]:
            box.starting.join()  # it stops itself at once
        return self

    def warm(self) -> None:
        """Start every sandbox now, side by side, rather than when each is first needed."""
        for _ in range(self.idle.qsize()):
            box = self.idle.get()
            if box is None:  # not started yet (early() started its own)
                box = Sandbox(*self.options)
                box.start_in_background()
            self.idle.put(box)

    @contextmanager
    def sandbox(self):
        box = self.idle.get()
        try:
            if self.closed:
                raise SandboxError("the batch was stopped")
            box = box or Sandbox(*self.options)
            self.busy.add(box)
            yield box
        except BaseException:
            if box is not None:
                box.stop()  # a sandbox that failed once is not trusted to be in a good state
            box = None
            raise
        finally:
            self.busy.discard(box)
            self.idle.put(box)

    def close(self) -> None:
        """Stop every sandbox; the jobs running fail at once, later ones are refused."""
        if not self.closed:
            release_site()  # the sandboxes still busy are killed below
        self.closed = True
        for box in list(self.busy):
            box.cancel()
        if self.settled is not None and not self.settled.is_set():  # waiting for settle()
            for box in list(self.idle.queue):
                if box is not None:
                    box.cancel()
            self.settled.set()
        idle = []
        while not self.idle.empty():
            idle.append(self.idle.get())
        for box in idle:
            if box is not None:
                box.stop()
            self.idle.put(None)  # a thread waiting for a sandbox wakes up and is refused
        for box in idle:  # one still starting stops itself (and removes its cgroup) first
            if box is not None and box.starting is not None:
                box.starting.join()
