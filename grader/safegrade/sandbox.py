"""Start, feed and stop sandboxed workers (the trusted side of the process boundary).

A sandbox is ``bwrap`` running ``worker.main``, a warm template, as PID 1 of new PID, network,
IPC and UTS namespaces. It sees read-only system folders, the Python installation's prefixes and
an installed copy of this package (visibility.py), and nothing of the course or of any checkout:
no sources, no checks, no class data, no other submission (``Sandbox`` refuses to start if a
folder it would show contains one of them). As root, each
sandbox drops to a uid of its own, so that the process limit counts one sandbox and sandboxes
cannot signal each other. Where the machine allows it, each sandbox has a memory cgroup of its own.

The template never receives a submission: for each job this side makes three pipes (the job, the
records, the output) and passes the child's ends to the template with the command to fork; the
forked child isolates itself (isolation.py) and talks to this side alone. Records come back as
length-prefixed frames, which ``preprocessors.read_records`` reads.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import socket
import subprocess
import threading
import time
from collections import deque
from contextlib import suppress

from .cgroup import (
    Cgroup,
    memory_limit_in_force,  # noqa: F401 - the grader's import of it
)
from .grading_limits import LIMITS, GradingLimits
from .runner import write_frame
from .visibility import bwrap_argv, python_folders

# What a sandbox started before the course's configuration is read imports first (Pool.early):
# the import that costs seconds, and that every exercise's probes make.
EARLY_IMPORTS = ["torch"]


class SandboxError(RuntimeError):
    """The sandbox could not be started, or stopped answering: the grader's failure."""


class Limits(GradingLimits):
    """The limits on a running submission: GradingLimits' configurable ones (grading_limits.py), as
    nbgrader's configuration sets them (``Limits(config=...)``, SandboxExecute.limits), as given
    (``Limits(budget=20)``), or their defaults."""

    def values(self) -> dict:
        """name -> value of each configurable limit."""
        return {name: getattr(self, name) for name in self.trait_names(config=True)}

    def for_worker(self, memory_cgroup: bool) -> dict:
        return self.values() | {"memory_cgroup": memory_cgroup}


def _pipe_holding(data: bytes) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    return read_end


def _drain(stream, tail: deque) -> None:
    for line in stream:
        tail.append(line.decode("utf-8", "replace").rstrip()[: LIMITS.log_line_chars])


def _feed(fd: int, frames: list) -> None:
    """Write the job and its blobs to the child's pipe (a child that dies unread ends it:
    EPIPE)."""
    with suppress(OSError):
        for payload in frames:
            write_frame(fd, payload)
    os.close(fd)


class Sandbox:
    """One sandboxed template, started once; a fresh child of it for every submission."""

    def __init__(self, preimport: list[str], forbidden: list[str], limits: Limits):
        self.preimport, self.limits = preimport, limits
        self.folders = python_folders()
        refuse_to_show(self.folders, forbidden)
        # As root: a uid no other sandbox (of this or a concurrent run) has.
        self.uid = 2_000_000 + secrets.randbelow(1 << 24) if os.geteuid() == 0 else None
        self.proc: subprocess.Popen | None = None
        self.cgroup: Cgroup | None = None
        self.cancelled = False
        self.starting: threading.Thread | None = None
        self.settled: threading.Event | None = None  # set: started early, the rest is known
        self.stopping = threading.Lock()

    def start(self) -> None:
        fds, extra = [], []
        uid = self.uid or os.getuid()
        passwd = f"root:x:0:0::/tmp/home:/bin/sh\nsandbox:x:{uid}:{uid}::/tmp/home:/bin/sh\n"
        for name, text in (("passwd", passwd), ("group", f"root:x:0:\nsandbox:x:{uid}:\n")):
            fds.append(_pipe_holding(text.encode()))
            extra += ["--perms", "0644", "--ro-bind-data", str(fds[-1]), f"/etc/{name}"]
        bwrap = shutil.which("bwrap")
        if not bwrap:
            raise SandboxError("bubblewrap is not installed: 'apt-get install bubblewrap'")
        argv = bwrap_argv(bwrap, self.folders, self.uid, extra)
        self.cgroup = Cgroup.create()
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            self.cgroup.wrap(argv) if self.cgroup else argv, stdin=theirs,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=fds, start_new_session=True,
        )  # fmt: skip
        for fd in [*fds, theirs.detach()]:
            os.close(fd)
        if self.cancelled:
            self.cancel()
        self.stderr: deque[str] = deque(maxlen=LIMITS.log_lines)
        threading.Thread(target=_drain, args=(self.proc.stderr, self.stderr), daemon=True).start()
        keep = [folder for folder in self.folders if folder.startswith("/tmp/")]
        init = {"uid": self.uid, "preimport": self.preimport, "keep": keep}
        if self.settled is None:
            self._send(init)
        else:  # started early (Pool.early): the rest of the imports once Pool.settle knows them
            self._send(init | {"preimport": EARLY_IMPORTS, "more": True})
            self.settled.wait()
            if self.cancelled:
                raise SandboxError("the batch was stopped")
            self._send({"preimport": [n for n in self.preimport if n not in EARLY_IMPORTS]})
        reply = self._receive(LIMITS.ready_timeout)
        if not reply.get("ready"):
            raise SandboxError(f"the sandbox did not start: {reply.get('error')}")
        if self.cgroup is not None:  # the template's own memory, and the submission's
            tmpfs = (self.limits.tmp_mb + LIMITS.shm_mb) << 20
            self.cgroup.limit(self.cgroup.usage() + (self.limits.memory_mb << 20) + tmpfs)

    def _send(self, message: dict, fds: list[int] = ()) -> None:
        try:
            socket.send_fds(self.control, [json.dumps(message).encode()], list(fds))
        except OSError as exc:
            raise SandboxError(f"the sandbox is gone ({exc}); {self.log()}") from exc

    def _receive(self, timeout: float) -> dict:
        self.control.settimeout(timeout)
        try:
            data = self.control.recv(1 << 16)
        except TimeoutError:
            raise SandboxError(f"the sandbox gave no answer within {timeout:.0f} s") from None
        except OSError as exc:
            raise SandboxError(f"the sandbox is gone ({exc}); {self.log()}") from exc
        if not data:
            raise SandboxError(f"the sandbox exited; {self.log()}")
        try:
            reply = json.loads(data)
        except ValueError:
            reply = None
        if type(reply) is not dict:
            raise SandboxError("the sandbox sent a malformed reply")
        return reply

    def log(self) -> str:
        return " | ".join(self.stderr) or "it wrote nothing to stderr"

    def start_in_background(self) -> None:
        def start():
            try:
                self.start()
            except (SandboxError, OSError):
                self.stop()  # run() starts it again, and reports what goes wrong

        self.starting = threading.Thread(target=start, daemon=True)
        self.starting.start()

    def run(self, job: dict, blobs: list = ()) -> dict:
        """One submission in a fresh child, given its job and the job's blobs (bytes, sent as
        they are): how it ended, its records (framed bytes) and the output its processes wrote
        to their own file descriptors; SandboxError if the sandbox failed (never the
        submission's doing)."""
        if self.starting is not None:
            self.starting.join()
            self.starting = None
        if self.proc is None:
            self.start()
        job_r, job_w = os.pipe()
        records_r, records_w = os.pipe()
        output_r, output_w = os.pipe()
        try:
            command = {"limits": self.limits.for_worker(self.cgroup is not None)}
            self._send(command, [job_r, records_w, output_w])
        finally:
            for fd in (job_r, records_w, output_w):
                os.close(fd)
        frames = [json.dumps(job | {"blobs": len(blobs)}).encode(), *blobs]
        threading.Thread(target=_feed, args=(job_w, frames), daemon=True).start()
        reply, records, output = self._collect(records_r, output_r)
        if not reply.get("isolated", False):
            self.stop()
            raise SandboxError(f"the submission's process could not be isolated: {output!r}")
        return reply | {"records": records, "output": output.decode("utf-8", "replace")}

    def _collect(self, records_r: int, output_r: int) -> tuple[dict, bytearray, bytes]:
        """The template's reply and both streams (capped), read until the child is gone."""
        streams, caps = (
            {records_r: bytearray(), output_r: bytearray()},
            {records_r: LIMITS.records_bytes},
        )
        selector = selectors.DefaultSelector()
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        selector.register(self.control, selectors.EVENT_READ)
        deadline = (
            time.monotonic() + self.limits.budget + LIMITS.stop_grace
        )  # the template stops at budget
        reply = None
        try:
            while selector.get_map():
                if time.monotonic() > deadline:
                    raise SandboxError("the sandbox did not end the submission within its budget")
                for key, _ in selector.select(1.0):
                    if key.fileobj is self.control:
                        selector.unregister(self.control)
                        reply = self._receive(5)
                    elif data := os.read(key.fd, 1 << 16):
                        room = caps.get(key.fd, LIMITS.fd_output_bytes) - len(streams[key.fd])
                        streams[key.fd] += data[: max(0, room)]
                    else:
                        selector.unregister(key.fd)
        finally:
            selector.close()
            for fd in streams:
                os.close(fd)
        return reply, streams[records_r], bytes(streams[output_r])

    def cancel(self) -> None:
        """Kill the sandbox from another thread: the job it runs fails at once."""
        self.cancelled = True
        if (proc := self.proc) is not None:  # stop() may clear it meanwhile
            proc.kill()

    def stop(self) -> None:
        """End the template, then remove its cgroup: once, whichever threads call it (a pool's
        close() and a sandbox's own start that fails)."""
        with self.stopping:
            proc, self.proc = self.proc, None
            cgroup, self.cgroup = self.cgroup, None
        if proc is not None:
            with suppress(OSError):
                self.control.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if cgroup is not None:
            cgroup.remove()


def refuse_to_show(folders: list[str], forbidden: list[str]) -> None:
    """SandboxError if a sandbox showing `folders` would see a path of `forbidden`."""
    for secret in map(os.path.realpath, forbidden):
        for folder in folders:
            if secret == folder or secret.startswith(folder.rstrip("/") + "/"):
                raise SandboxError(f"refusing to start: the sandbox would see {secret}")
