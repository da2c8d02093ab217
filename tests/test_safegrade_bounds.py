"""Bounded before parsed: whatever a learner controls (a record's header, a probe's data, a
notebook) is counted as bytes before anything parses it, and what is kept of it is capped. No
sandbox here (tests/test_safegrade_hostile.py grades the same attacks for real)."""

from __future__ import annotations

import json

import nbformat
import pytest

from grader.safegrade import jsontext, runner, staging
from grader.safegrade.grading_limits import LIMITS
from grader.safegrade.records import read_records


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def parsed_values(value) -> int:
    if isinstance(value, dict):
        return 1 + len(value) + sum(map(parsed_values, value.values()))
    if isinstance(value, list):
        return 1 + sum(map(parsed_values, value))
    return 1


def test_json_values_counts_at_least_every_value_and_key_outside_strings():
    text = b'{"a": [1, 2, {"b": "[{,:}]"}], "c": {}, "d": [], "e": "x\\"[,"}'
    found = parsed_values(json.loads(text))
    assert jsontext.json_values(text) == found
    assert jsontext.json_values(json.dumps(json.loads(text), indent=2).encode()) == found
    assert jsontext.json_values(b"[" + b"{}," * 1000 + b"{}]") == 1002
    assert jsontext.json_values(b'["' + b"," * 10_000 + b'"]') < 10  # commas in a string


def test_json_values_stops_counting_over_the_limit():
    many = b"[" + b'"a",' * 100_000 + b'"a"]'
    assert 1000 < jsontext.json_values(many, stop_over=1000) < 1010
    assert jsontext.json_values(many) == 100_002


NOTEBOOK = nbformat.v4.new_notebook(
    cells=[
        nbformat.v4.new_markdown_cell('"outputs": [1, 2] and ] brackets [ in text'),
        nbformat.v4.new_code_cell(
            "print('[outputs]')",
            outputs=[nbformat.v4.new_output("stream", text="[}{]" * 100)] * 3,
            metadata={"outputs": ["a cell's own metadata"], "tags": ["x"]},
        ),
        nbformat.v4.new_code_cell("x = 1", outputs=[]),
    ],
    metadata={"outputs": {"kept": True}},
)


@pytest.mark.parametrize("indent", [None, 1, 4])
def test_outputs_are_cut_out_of_the_bytes_and_nothing_else(indent):
    data = json.dumps(NOTEBOOK, indent=indent).encode()
    cut = json.loads(bytes(jsontext.without_outputs(data)))
    want = json.loads(data)
    for cell in want["cells"]:
        if "outputs" in cell:
            cell["outputs"] = []
    assert cut == want


def test_bytes_that_are_not_utf8_are_replaced_a_chunk_at_a_time(monkeypatch):
    monkeypatch.setattr(jsontext, "CHUNK", 7)  # characters split across chunks
    text = "caf\u00e9 \u4e2d\u6587 \U0001f600 end".encode()
    assert jsontext.as_utf8(text) == (text, 0)
    damaged = text.replace(b"end", b"\xff\xfe end")
    fixed, bad = jsontext.as_utf8(damaged)
    assert bytes(fixed).decode() == "caf\u00e9 \u4e2d\u6587 \U0001f600 \ufffd\ufffd end"
    assert bad == 2


def test_a_notebook_with_too_many_values_is_graded_without_outputs_or_left_out(tmp_path):
    """An 8 MB notebook of two million empty dicts took nbgrader's process to gigabytes: its
    values are counted first. In outputs: graded without them; elsewhere: left out."""
    upload, source = tmp_path / "upload", tmp_path / "source"
    upload.mkdir(), source.mkdir()
    many = [{}] * (LIMITS.notebook_values + 1)
    outputs = json.loads(json.dumps(NOTEBOOK))
    outputs["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": many}]
    (upload / "in_outputs.ipynb").write_text(json.dumps(outputs))
    metadata = json.loads(json.dumps(NOTEBOOK))
    metadata["cells"][2]["metadata"]["bomb"] = many
    (upload / "in_metadata.ipynb").write_text(json.dumps(metadata))
    notes = staging.stage(upload, tmp_path / "staged", source)
    staged = nbformat.read(tmp_path / "staged" / "in_outputs.ipynb", as_version=4)
    assert staged.cells[1].outputs == [] and staged.cells[1].source == "print('[outputs]')"
    assert any("in_outputs.ipynb is" in n and "without its outputs" in n for n in notes), notes
    assert not (tmp_path / "staged" / "in_metadata.ipynb").exists()
    assert any("in_metadata.ipynb was left out" in n and "JSON values" in n for n in notes)


# ----------------------------------------------------------------------------- records


def header(text: bytes) -> bytes:
    """A frame's payload whose header is this text, as a submission could write it."""
    return b"n1" + len(text).to_bytes(4, "big") + text


def test_a_header_over_its_size_or_values_fails_its_cell_unparsed():
    big = json.dumps({"cell": 1, "stdout": "x" * LIMITS.record_header_bytes}).encode()
    values = ",".join(["[]"] * LIMITS.record_header_values)
    crowded = f'{{"cell": 1, "stdout": "", "x": [{values}]}}'.encode()
    for text in (big, crowded):
        stream = framed(runner.record_payload({"cell": 0}, "n1")) + framed(header(text))
        stream += framed(runner.record_payload({"cell": 1}, "n1"))
        found = read_records(stream, 2, "n1")
        assert found[0] == {"cell": 0} and found[1]["error"]["ename"] == "GraderError"


def test_a_probes_data_is_kept_as_the_bytes_it_sent():
    stream = framed(runner.record_payload({"cell": 0, "probe": "t", "value": [1, "x"]}, "n1"))
    record = read_records(stream, 1, "n1")[0]
    assert isinstance(record["data"], memoryview) and bytes(record["data"]) == b'[1, "x"]'
    assert set(record) == {"cell", "probe", "data"}


def test_only_known_fields_of_a_header_are_kept_each_capped():
    sent = {
        "cell": 0,
        "stdout": "o" * (LIMITS.cell_output_chars * 3),
        "error": {"ename": "E" * 10_000, "evalue": 7, "traceback": ["t"] * 100},
        "value": "a forged value in the header",
        "anything": {"else": [1, 2, 3]},
    }
    record = read_records(framed(header(json.dumps(sent).encode())), 1, "n1")[0]
    assert set(record) == {"cell", "stdout", "error"}
    assert len(record["stdout"]) < LIMITS.cell_output_chars + 200
    assert len(record["error"]["ename"]) < LIMITS.name_chars + 200
    assert record["error"]["evalue"] == "7"
    assert len(record["error"]["traceback"]) == LIMITS.traceback_lines


def test_the_text_kept_of_a_submissions_records_has_a_budget(monkeypatch):
    monkeypatch.setattr(LIMITS, "records_text_chars", 50_000)
    text = "y" * LIMITS.cell_output_chars
    stream = b"".join(
        framed(runner.record_payload({"cell": i, "stdout": text}, "n1")) for i in range(5)
    )
    found = read_records(stream, 5, "n1")
    kept = [found[i]["stdout"] for i in range(5)]
    assert kept[:2] == [text, text] and all(k.startswith("[not kept") for k in kept[3:])
    assert sum(map(len, kept)) < 50_000 + 1000
