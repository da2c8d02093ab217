"""JSON a learner sent, measured and cut as bytes, before (or instead of) being parsed.

Parsing JSON makes an object per value: 32 MiB of ``{},`` is eleven million dicts, about 1 GB.
So whatever a learner controls is counted first (``json_values``, at C speed, with memory
bounded by its size) and parsed only under a cap; a notebook too big to parse has its outputs
cut out of its bytes (``without_outputs``), and bytes that are not UTF-8 are replaced chunk by
chunk (``as_utf8``). Nothing here decodes a whole text or builds its values.
"""

from __future__ import annotations

import codecs
import re

# A JSON string (its escapes included); with the brackets, the tokens without_outputs walks.
STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
COLON_ARRAY = re.compile(rb"\s*:\s*\[")
CHUNK = 1 << 20
STRUCTURE = (b",", b":", b"[", b"{")  # each adds a value or a key (an opening: its first)
EMPTY = (b"[]", b"{}")  # openings that add none


def json_values(data: bytes | bytearray, stop_over: int | None = None) -> int:
    """The values and keys of a JSON text, counted without parsing it: one, then, outside its
    strings, one per comma and colon and one per container that is not empty (`{ }` with a
    space counts as not empty). For bytes that are not JSON, at least what a parser makes of
    them before it stops. Counting stops once the count, or the strings, pass `stop_over`."""
    total, strings, at = 1, 0, 0
    for string in STRING.finditer(data):
        total += _structure(data, at, string.start())
        strings, at = strings + 1, string.end()
        if stop_over is not None and max(total, strings) > stop_over:
            return max(total, strings)
    return total + _structure(data, at, len(data))


def _structure(data: bytes | bytearray, start: int, end: int) -> int:
    added = sum(data.count(mark, start, end) for mark in STRUCTURE)
    return added - sum(data.count(mark, start, end) for mark in EMPTY)


def without_outputs(data: bytes | bytearray) -> bytearray:
    """The notebook with each cell's outputs emptied: the array under the key "outputs" at a
    cell's depth (top object, "cells" array, cell) cut out of its bytes, found by walking its
    strings and brackets. Never decoded or parsed: memory is the result's size, time the number
    of strings and brackets (bound them first, json_values). Bytes that are not a notebook come
    back cut at the same places, or whole."""
    kept, start, depth, opening = bytearray(), 0, 0, False
    skip_at: int | None = None  # the depth of the outputs array being cut out
    for token in TOKEN.finditer(data):
        at = token.start()
        char = data[at]
        if char == 0x22:  # a string: "outputs" as a key of a cell, its array next
            opening = (
                skip_at is None
                and depth == 3
                and token.end() - at == 9
                and data[at : token.end()] == b'"outputs"'
                and COLON_ARRAY.match(data, token.end()) is not None
            )
            continue
        if char in b"[{":
            depth += 1
            if opening and char == 0x5B:
                skip_at, opening = depth, False
                kept += data[start : at + 1]
            continue
        if skip_at is not None and depth == skip_at:  # the outputs array closes here
            skip_at, start = None, at
        depth -= 1
    return kept + data[start:]


def as_utf8(data: bytes | bytearray) -> tuple[bytes | bytearray, int]:
    """The bytes as UTF-8, and how many were not: each byte that is not part of a UTF-8
    character replaced by U+FFFD, read a chunk at a time (never the whole text at once)."""
    check = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(data), CHUNK):
            check.decode(data[at : at + CHUNK])
        check.decode(b"", final=True)
        return data, 0
    except UnicodeDecodeError:
        pass
    decoder, fixed, bad = codecs.getincrementaldecoder("utf-8")("replace"), bytearray(), 0
    for at in range(0, len(data) + 1, CHUNK):
        text = decoder.decode(data[at : at + CHUNK], final=at + CHUNK > len(data))
        bad += text.count("\ufffd")
        fixed += text.encode("utf-8")
    return fixed, bad
