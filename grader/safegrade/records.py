"""The record protocol between the sandbox's child and the grader: length-prefixed frames, each
with the job's nonce, one per cell in order, then a final one. Everything in them is the
submission's claim; this module reads them as data and never decodes a learner's value.
"""

from __future__ import annotations

import json

from .limits import LIMITS


def read_records(stream: bytes, count: int, nonce: str) -> dict[int, dict]:
    """cell index -> its record, from the child's frames: a length, this job's nonce, a JSON
    record. The runner sends one frame per cell, in order, then a final one. Bytes that are not
    such a frame (written by the submission's code) are skipped to the next frame with the
    nonce; they, and a frame that is not the next cell's (out of order, malformed), fail the
    cell that was running when they came, never another. A second record for a cell already
    read fails that cell alone: one of its two records is forged, and a forgery of an earlier
    cell's record can only cost points, never earn them."""
    records: dict[int, dict] = {}
    expected, at, mark = 0, 0, nonce.encode()
    while expected < count and at < len(stream):
        size = int.from_bytes(stream[at : at + 4], "big")
        frame = stream[at + 4 : at + 4 + size]
        if not (
            len(mark) <= size <= LIMITS.frame_bytes
            and len(frame) == size
            and frame.startswith(mark)
        ):
            records[expected] = rejected("bytes that are not a record arrived while it ran")
            found = stream.find(mark, at + 5)
            at = found - 4 if found >= 4 else len(stream)
            continue
        at += 4 + size
        record = parse_frame(frame[len(mark) :])
        if record is not None and record.get("done") is True:
            break
        index = record.get("cell") if record is not None else None
        if index == expected:
            records.setdefault(expected, record)  # a cell failed by a forged frame stays failed
            expected += 1
            continue
        if type(index) is int and 0 <= index < expected:  # which of the two is forged is unknown
            records[index] = rejected("a second record for this cell arrived later")
            continue
        records[expected] = rejected("a record that is not this cell's arrived while it ran")
    return records


def parse_frame(payload: bytes) -> dict | None:
    """The record in a frame; None if it is malformed."""
    try:
        record = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if type(record) is not dict:
        return None
    return record if record.get("done") is True or type(record.get("cell")) is int else None


def rejected(why: str) -> dict:
    """The record of a cell whose records were tampered with (by the submission's own code)."""
    message = f"the grader rejected this cell's result: {why} (the submission wrote to the records)"
    return {"error": {"ename": "GraderError", "evalue": message, "traceback": []}}
