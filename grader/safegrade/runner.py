"""What a submission's (or a check's) process runs once it is isolated: its job, read from the
grader, then one length-prefixed record per cell, in order, written straight to the grader.

A submission's job runs the notebook's code cells in order in an IPython shell (magics work; an
error in one cell does not stop the next), each graded test cell replaced by the instructor's
probe. A check job (checking.py) runs the instructor's checks on one submission's data; an
inputs job makes each test's inputs from checks.py and the submission's seed.

A job is a JSON frame, then the frames it names by number ("blobs": files, a test's inputs, a
probe's data), as bytes: what the grader forwards it never parses. A record's data goes back the
same way, as its frame's body (records.py).
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import types
from contextlib import contextmanager, redirect_stderr, redirect_stdout

from .data import clean_text, decode, encode
from .grading_limits import LIMITS
from .probing import call_probe
from .records import frame_payload
from .wording import _

WORK = "/tmp/work"


class CellTimeout(BaseException):
    """Raised in a cell that runs past the cell timeout (a BaseException, like an interrupt)."""


def read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes:
    return read_exactly(fd, int.from_bytes(read_exactly(fd, 4), "big"))


def read_job(fd: int) -> dict:
    """The job, with its blobs (the frames after it) in place of their number."""
    job = json.loads(read_frame(fd))
    job["blobs"] = [read_frame(fd) for _ in range(job.get("blobs", 0))]
    return job


def write_frame(fd: int, payload: bytes | memoryview) -> None:
    """One length-prefixed frame (the job and its blobs to the child, a record to the grader),
    written from the payload itself (no copy of it is made)."""
    for part in (len(payload).to_bytes(4, "big"), payload):
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


def write_files(files: dict, blobs: list[bytes]) -> None:
    """The job's files (name -> the number of the blob holding it) into the work folder."""
    for folder in (WORK, "/tmp/home"):
        os.makedirs(folder, exist_ok=True)
    for name, blob in files.items():
        parts = name.split("/")
        if ".." in parts or name.startswith("/"):
            continue
        target = os.path.join(WORK, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(os.fsencode(target), "wb") as handle:
            handle.write(blobs[blob])


def run_submission(job: dict, shell, limits: dict) -> None:
    write_files(job.get("files", {}), job["blobs"])
    os.chdir(WORK)
    sys.path.insert(0, "")  # as in a kernel: modules beside the notebook (or %%writefile) import
    signal.signal(signal.SIGALRM, _cell_timed_out)
    probes = types.ModuleType("probes")
    exec(compile(job["probes"], "probes.py", "exec"), probes.__dict__)
    nonce, timeout = job["nonce"], limits["cell_timeout"]
    for index, cell in enumerate(job["cells"]):
        try:
            if "probe" in cell:
                inputs = job["blobs"][cell["inputs"]]
                record = run_probe(probes, cell["probe"], inputs, shell.user_ns, timeout)
            else:
                record = run_code(shell, cell["code"], timeout)
        except CellTimeout:  # the alarm went off between the cell and the record
            record = {"error": timeout_error(timeout)}
        send_record(dict(record, cell=index), nonce)
    send_record({"done": True}, nonce)
    os._exit(0)


def run_checks(job: dict, limits: dict) -> None:
    """A check process (checking.py): the instructor's checks on one submission's data, one
    verdict record per test, in order; or, for an inputs job, each test's inputs. The grader's
    own failure ends it with a record saying so."""
    from .checking import GraderFailure, load_checks

    write_files(job.get("files", {}), job["blobs"])
    os.chdir(WORK)
    signal.signal(signal.SIGALRM, _cell_timed_out)  # else the alarm ends the process, not the check
    nonce, timeout, index = job["nonce"], limits["cell_timeout"], 0
    make = inputs_record if job.get("kind") == "inputs" else verdict_record
    try:
        checks = load_checks(WORK)
        for index, test in enumerate(job["tests"]):
            record = make(checks, test, job["seed"], timeout, job["blobs"])
            send_record({"cell": index} | record, nonce)
    except GraderFailure as exc:
        send_record({"cell": index, "grader_error": str(exc)}, nonce)
    send_record({"done": True}, nonce)
    os._exit(0)


def verdict_record(checks, test: dict, seed: int, timeout: float, blobs: list[bytes]) -> dict:
    from .checking import judge

    try:
        with time_limit(timeout):
            return {"verdict": judge(checks, test["grade_id"], blobs[test["value"]], seed)}
    except CellTimeout:
        took = _("checking your result took over {seconds} s").format(seconds=f"{timeout:g}")
        return {"verdict": ["CheckTimeout", took]}


def inputs_record(checks, grade_id: str, seed: int, timeout: float, _blobs) -> dict:
    from .checking import GraderFailure, encoded_inputs

    try:
        with time_limit(timeout):
            return encoded_inputs(checks, grade_id, seed)
    except CellTimeout:
        why = f"checks.py took over {timeout:g} s to make the inputs of {grade_id}"
        raise GraderFailure(why) from None


def send_record(record: dict, nonce: str) -> None:
    write_frame(3, record_payload(record, nonce))


def record_payload(record: dict, nonce: str) -> bytes:
    """The record as a frame's payload, starting with this job's nonce: its data (a probe's
    "value", a test's "inputs") encoded as the frame's body, the rest as its header, capped
    after encoding (data over the cap becomes an error)."""
    record = dict(record)
    body = b"".join(json.dumps(record.pop(k)).encode() for k in ("value", "inputs") if k in record)
    payload = frame_payload(record, body, nonce)
    if len(payload) > LIMITS.frame_bytes or len(payload) - len(body) > LIMITS.record_header_bytes:
        message = _("the data is {size} MiB once encoded; at most {cap} MiB").format(
            size=len(payload) >> 20, cap=LIMITS.frame_bytes >> 20
        )
        error = {"ename": "DataTooLarge", "evalue": message, "traceback": []}
        kept = {key: record[key] for key in ("cell", "probe") if key in record}
        payload = frame_payload(dict(kept, error=error), b"", nonce)
    return payload


def _cell_timed_out(_signum, _frame):
    raise CellTimeout


@contextmanager
def time_limit(seconds: float):
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def timeout_error(seconds: float) -> dict:
    message = _("the cell ran longer than {seconds} s and was interrupted")
    message = message.format(seconds=f"{seconds:g}")
    return {"ename": "CellTimeoutError", "evalue": message, "traceback": []}


def run_code(shell, source: str, timeout: float) -> dict:
    out, err = Capture(1), Capture(2)
    shell.last_error = None
    with redirect_stdout(out), redirect_stderr(err), time_limit(timeout):
        shell.run_cell(source, store_history=True)
    record = {"stdout": out.text(), "stderr": err.text()}
    error = shell.last_error
    if error is not None and error["ename"] == "CellTimeout":
        error = timeout_error(timeout)
    return dict(record, error=error) if error else record


def run_probe(probes, name: str, inputs: bytes, namespace: dict, timeout: float) -> dict:
    """The instructor's probe `name`, on the inputs the grader sent (data, decoded here): its
    data, or the error it raised."""
    out = Capture()
    record = {"probe": name}
    try:
        with redirect_stdout(out), redirect_stderr(Capture()), time_limit(timeout):
            inputs = decode(json.loads(inputs))
            record["value"] = encode(call_probe(probes, name, namespace, inputs))
    except CellTimeout:
        record["error"] = timeout_error(timeout)
    except BaseException as exc:  # noqa: BLE001 - the learner's code may raise anything
        record["error"] = error_record(exc, [])
    record["stdout"] = out.text()
    return record


def error_record(exc: BaseException, traceback: list) -> dict:
    try:
        evalue = str(exc)
    except BaseException:  # noqa: BLE001 - a learner's __str__ may raise
        evalue = "<the exception's message could not be read>"
    return {
        "ename": clean_text(type(exc).__name__, LIMITS.name_chars),
        "evalue": clean_text(evalue, LIMITS.error_chars),
        "traceback": [
            clean_text(line, LIMITS.traceback_line_chars)
            for line in traceback[-LIMITS.traceback_lines :]
        ],
    }


class Capture(io.StringIO):
    """A text stream that keeps the first cell_output_chars characters (GradingLimits) written to
    it. Like a kernel's stream, it has a file descriptor (what is written there goes to the
    process's output)."""

    dropped = 0

    def __init__(self, fd: int = 1):
        super().__init__()
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def write(self, text) -> int:
        text = text if isinstance(text, str) else str(text)
        room = max(0, LIMITS.cell_output_chars - self.tell())
        self.dropped += max(0, len(text) - room)
        super().write(text[:room])
        return len(text)

    def text(self) -> str:
        tail = f"\n[output truncated: {self.dropped} more characters]" if self.dropped else ""
        return clean_text(self.getvalue() + tail, LIMITS.cell_output_chars + 100)
