"""The record protocol between the sandbox's child and the grader: length-prefixed frames, each
with the job's nonce, one per cell in order, then a final one. Everything in them is the
submission's claim; this module reads them as data, bounded before anything is parsed, and never
parses a learner's value.

A frame's payload is the nonce, then a header (a small JSON object: the cell, the probe's name,
the output, the error, a verdict) prefixed by its length, then the body: the probe's data (or a
test's inputs) as the child encoded it. The grading process parses only the header, after
checking its size and counting its JSON values; it keeps only the fields it knows, each capped,
within a budget of text per submission. The body stays bytes: it goes on to a check process as
it came (``record["data"]``, a view of the stream), so no submission can make this process build
millions of objects.
"""

from __future__ import annotations

import json

from .data import clean_text
from .grading_limits import LIMITS
from .jsontext import json_values
from .wording import _

_MARGIN = 100  # characters past each cap kept here; the notebook's writer cuts to the cap


def frame_payload(header: dict, body: bytes, nonce: str) -> bytes:
    """What follows a frame's length: the nonce, the header's length and JSON, the body."""
    text = json.dumps(header, ensure_ascii=False).encode("utf-8", "backslashreplace")
    return nonce.encode() + len(text).to_bytes(4, "big") + text + body


def read_records(stream: bytes | bytearray, count: int, nonce: str) -> dict[int, dict]:
    """cell index -> its record, from the child's frames: a length, this job's nonce, a header
    and a body. The runner sends one frame per cell, in order, then a final one. Bytes that are
    not such a frame (written by the submission's code) are skipped to the next frame with the
    nonce; they, and a frame that is not the next cell's (out of order, malformed), fail the
    cell that was running when they came, never another. A second record for a cell already
    read fails that cell alone: one of its two records is forged, and a forgery of an earlier
    cell's record can only cost points, never earn them."""
    records: dict[int, dict] = {}
    view, expected, at, mark = memoryview(stream), 0, 0, nonce.encode()
    budget = [LIMITS.records_text_chars]
    while expected < count and at < len(stream):
        size = int.from_bytes(view[at : at + 4], "big")
        frame = view[at + 4 : at + 4 + size]
        if not (
            len(mark) <= size <= LIMITS.frame_bytes
            and len(frame) == size
            and frame[: len(mark)] == mark
        ):
            records[expected] = rejected(_("bytes that are not a record arrived while it ran"))
            found = stream.find(mark, at + 5)
            at = found - 4 if found >= 4 else len(stream)
            continue
        at += 4 + size
        record = parse_frame(frame[len(mark) :], budget)
        if record is not None and record.get("done") is True:
            break
        index = record.get("cell") if record is not None else None
        if index == expected:
            records.setdefault(expected, record)  # a cell failed by a forged frame stays failed
            expected += 1
            continue
        if type(index) is int and 0 <= index < expected:  # which of the two is forged is unknown
            records[index] = rejected(_("a second record for this cell arrived later"))
            continue
        records[expected] = rejected(_("a record that is not this cell's arrived while it ran"))
    return records


def parse_frame(payload: memoryview, budget: list[int]) -> dict | None:
    """The record in a frame's payload (after the nonce); None if it is malformed. Its header is
    parsed only when small enough, with few enough values; its body is kept unparsed."""
    size = int.from_bytes(payload[:4], "big")
    if len(payload) < 4 or not 2 <= size <= min(LIMITS.record_header_bytes, len(payload) - 4):
        return None
    text = bytes(payload[4 : 4 + size])
    if json_values(text) > LIMITS.record_header_values:
        return None
    try:
        header = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if type(header) is not dict:
        return None
    record = kept(header, budget)
    if record.get("done") is not True and type(record.get("cell")) is not int:
        return None
    body = payload[4 + size :]
    return record | {"data": body} if len(body) else record


def kept(header: dict, budget: list[int]) -> dict:
    """The header's known fields, each of its type and capped; text within the budget of the
    submission's records (what is over it is dropped, with a note)."""
    record = {"cell": header["cell"]} if type(header.get("cell")) is int else {}
    record |= {"done": True} if header.get("done") is True else {}
    if type(header.get("probe")) is str:
        record["probe"] = clean_text(header["probe"], LIMITS.name_chars)
    for name in ("stdout", "stderr", "grader_error"):
        if type(header.get(name)) is str:
            record[name] = text(header[name], LIMITS.cell_output_chars, budget)
    if type(error := header.get("error")) is dict:
        lines = error.get("traceback") if type(error.get("traceback")) is list else []
        record["error"] = {
            "ename": text(error.get("ename"), LIMITS.name_chars, budget),
            "evalue": text(error.get("evalue"), LIMITS.error_chars, budget),
            "traceback": [
                text(line, LIMITS.traceback_line_chars, budget)
                for line in lines[-LIMITS.traceback_lines :]
            ],
        }
    if "verdict" in header:
        record["verdict"] = verdict(header["verdict"], budget)
    return record


def verdict(sent: object, budget: list[int]) -> list[str] | str | None:
    """A check process's verdict: None (passed), [ename, message], or "malformed"."""
    if sent is None:
        return None
    if type(sent) is list and len(sent) == 2 and all(type(part) is str for part in sent):
        return [text(part, LIMITS.error_chars, budget) for part in sent]
    return "malformed"


def text(value: object, cap: int, budget: list[int]) -> str:
    """value as capped text, charged to the budget; past the budget, only a note."""
    shown = clean_text(value if type(value) is str else str(value), cap + _MARGIN)
    if len(shown) > budget[0]:
        shown = "[not kept: this submission's records already held "
        shown += f"{LIMITS.records_text_chars} characters of output]"
        budget[0] = 0
        return shown
    budget[0] -= len(shown)
    return shown


def rejected(why: str) -> dict:
    """The record of a cell whose records were tampered with (by the submission's own code)."""
    message = _(
        "the grader rejected this cell's result: {why} (the submission wrote to the records)"
    )
    message = message.format(why=why)
    return {"error": {"ename": "GraderError", "evalue": message, "traceback": []}}
