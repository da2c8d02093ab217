"""Unit tests of the grader's parts that need no sandbox: the data that crosses the boundary,
reading records, judging, staging a submission, and the refusal to start a leaky sandbox."""

from __future__ import annotations

import ast
import json
import math
import os
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from grader.course import Course
from grader.safegrade import (
    checking,
    data,
    files,
    graph_data,
    isolation,
    kernel,
    preprocessors,
    probing,
    result_files,
    runner,
    sandbox,
    staging,
    verdicts,
    visibility,
)
from grader.safegrade.grading_limits import LIMITS
from grader.safegrade.records import read_records

ROOT = Path(__file__).resolve().parents[1]


def crossed(value):
    """value as the checks see it: encoded in the sandbox, sent as JSON, decoded here."""
    return data.decode(json.loads(json.dumps(data.encode(value))))


# ----------------------------------------------------------------------------- data


def test_plain_values_cross_unchanged():
    value = {"a": (1, [2.5, None, True], slice(None, "x", 2)), 3: {"dtype": torch.float64}}
    assert crossed(value) == value
    assert type(crossed((1,))) is tuple and type(crossed([1])) is list
    assert math.isnan(crossed(float("nan"))) and crossed(float("-inf")) == float("-inf")


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool]
)
def test_tensors_cross_as_raw_bytes(dtype):
    for tensor in (
        torch.arange(12).reshape(3, 4).to(dtype),
        torch.tensor(1).to(dtype),
        torch.empty(0, 3, dtype=dtype),
    ):
        got = crossed(tensor)
        assert got.dtype == dtype and got.shape == tensor.shape and torch.equal(got, tensor)


def test_subclasses_remember_their_type():
    class Num(float):
        pass

    class Label(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    got = crossed([Num(2.5), Label("a")])
    assert got == [2.5, "a"] and type(got[0]) is not float and got[0].type_name.endswith("Num")
    assert crossed(Label("a")) != "b", "a str subclass's __eq__ stays in the sandbox"


def test_other_objects_become_opaque():
    class Anything:
        def __eq__(self, other):
            return True

        def __repr__(self):
            return "anything"

    got = crossed(Anything())
    assert isinstance(got, data.Opaque) and repr(got) == "anything"
    assert got != 3 and got != crossed(object()) and got == crossed(Anything())


@pytest.mark.parametrize(
    "bad",
    [
        {"tensor": {"dtype": "object", "shape": [1], "data": ""}},
        {"tensor": {"dtype": "float32", "shape": [2], "data": "AAAAAA=="}},
        {"tensor": {"dtype": "float32", "shape": [1 << 40], "data": ""}},
        {"dict": [[{"list": []}, 1]]},
        {"nonsense": 1},
        [1, 2],
        {"list": [0] * (LIMITS.data_items + 1)},
    ],
)
def test_malformed_or_oversized_data_is_refused(bad):
    with pytest.raises(data.DataError):
        data.decode(bad)


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch calls sparse CSR and nested "beta"
@pytest.mark.parametrize(
    "make, layout",
    [
        (lambda: torch.eye(3).to_sparse(), "sparse_coo"),
        (lambda: torch.eye(3).to_sparse_csr(), "sparse_csr"),
        (lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), "nested"),
        (lambda: torch.ones(2, device="meta"), "meta"),
    ],
)
def test_a_tensor_without_plain_data_is_refused_by_name(make, layout):
    """Not torch's own NotImplementedError or RuntimeError: the probe's value is refused as the
    grader refuses every value it cannot send, saying which kind of tensor it was."""
    with pytest.raises(data.DataError, match=f"{layout} cannot be sent"):
        data.encode([make()])


def test_nesting_is_capped_both_ways():
    deep: list = []
    for _ in range(LIMITS.data_depth + 5):
        deep = [deep]
    with pytest.raises(data.DataError):
        data.encode(deep)
    encoded = 0
    for _ in range(LIMITS.data_depth + 5):
        encoded = {"list": [encoded]}
    with pytest.raises(data.DataError):
        data.decode(encoded)


def test_text_is_made_safe_to_store():
    text = data.clean_text("a\udcffb" + "x" * 50, 10)
    assert text.encode("utf-8") and "\\udcff" in text and "more characters" in text


def test_a_graph_crosses_as_a_description():
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sigmoid()))
    modules = {torch.nn.Linear: graph_data.linear_arguments, torch.nn.Sigmoid: None}
    got = crossed(probing.describe(gm, graph_data.Vocabulary(modules=modules)))
    assert [node["op"] for node in got["nodes"]] == [
        "placeholder",
        "call_module",
        "call_module",
        "output",
    ]
    assert got["nodes"][2]["module"] == "torch.nn.modules.activation.Sigmoid"
    assert got["nodes"][2]["args"] == (data.Ref(1),) and got["lint"] is None
    assert got["code"] == got["graph_code"]


# ----------------------------------------------------------------------------- records and verdicts


def frames(*sent, nonce="n1") -> bytes:
    """Records framed as the sandbox's runner writes them (a "value" is the frame's body);
    bytes are sent as they are, a str is a header as it is."""
    stream = b""
    for record in sent:
        if isinstance(record, bytes):
            stream += record
            continue
        if isinstance(record, str):
            payload = nonce.encode() + len(record).to_bytes(4, "big") + record.encode()
        else:
            payload = runner.record_payload(record, nonce)
        stream += len(payload).to_bytes(4, "big") + payload
    return stream


def as_sent(found: dict[int, dict]) -> dict[int, dict]:
    """read_records' records with each body (the data, never parsed there) parsed back."""
    return {
        index: {k: v for k, v in record.items() if k != "data"}
        | ({"value": json.loads(bytes(record["data"]))} if "data" in record else {})
        for index, record in found.items()
    }


def test_records_arrive_one_per_cell_in_order():
    stream = frames({"cell": 0, "stdout": "a"}, {"cell": 1, "value": 2}, {"done": True})
    assert as_sent(read_records(stream, 2, "n1")) == {
        0: {"cell": 0, "stdout": "a"},
        1: {"cell": 1, "value": 2},
    }


def rejected(records: dict, index: int) -> bool:
    return records[index].get("error", {}).get("ename") == "GraderError"


FORGED_LINE = b'{"cell": 2, "probe": "t", "value": 4}\n{"cell": 2, "val'


@pytest.mark.parametrize(
    "forged",
    [
        {"cell": 2, "value": 3},  # a later cell's record, ahead of time
        frames({"cell": 1, "value": 3}, nonce="guess"),  # without the job's nonce
        FORGED_LINE,  # the old protocol's lines, then an unterminated one
        (1 << 31).to_bytes(4, "big"),  # a length that would swallow every later record
        "not json",
        "[1]",
        {"cell": "1"},
    ],
    ids=["ahead", "no-nonce", "lines", "huge-length", "not-json", "not-a-dict", "bad-index"],
)
def test_a_forged_record_fails_the_cell_that_wrote_it_and_no_other(forged):
    real = [{"cell": 0, "stdout": ""}, {"cell": 1, "stdout": ""}, {"cell": 2, "value": 4}]
    stream = frames(real[0], forged, real[1], real[2], {"done": True})
    found = as_sent(read_records(stream, 3, "n1"))
    assert rejected(found, 1) and found[0] == real[0] and found[2] == real[2]


def test_a_duplicated_record_fails_that_cell_alone():
    stream = frames({"cell": 0}, {"cell": 1}, {"cell": 0}, {"cell": 2}, {"done": True})
    records = read_records(stream, 4, "n1")
    assert rejected(records, 0) and records[1] == {"cell": 1} and records[2] == {"cell": 2}
    assert 3 not in records


def test_a_forged_record_of_the_running_cell_fails_it_and_not_the_next():
    forged, real = {"cell": 1, "stdout": "forged"}, {"cell": 1, "stdout": ""}
    stream = frames({"cell": 0}, forged, real, {"cell": 2, "value": 4}, {"done": True})
    found = as_sent(read_records(stream, 3, "n1"))
    assert found[0] == {"cell": 0} and rejected(found, 1)
    assert found[2] == {"cell": 2, "value": 4}


def test_a_cut_off_or_oversized_frame_fails_its_cell():
    stream = frames({"cell": 0}) + (50).to_bytes(4, "big") + b'n1{"cell": 1'
    records = read_records(stream, 3, "n1")
    assert records[0] == {"cell": 0} and rejected(records, 1) and 2 not in records
    huge = frames({"cell": 0}) + (LIMITS.frame_bytes + 1).to_bytes(4, "big") + b"n1"
    assert rejected(read_records(huge, 2, "n1"), 1)


def test_records_after_the_last_are_ignored():
    stream = frames({"cell": 0}, {"done": True}, {"cell": 1, "value": 1})
    assert as_sent(read_records(stream, 2, "n1")) == {0: {"cell": 0}}


class Checks:
    @staticmethod
    def inputs(grade_id, seed):
        return 3

    @staticmethod
    def test_x(value, wanted):
        assert value == wanted, f"want {wanted}"


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        (b"3", None),
        (b"4", ["AssertionError", "want 3"]),
        (b'{"bogus": 1}', ["DataError", "could not be read"]),
        (b"[3", ["DataError", "could not be read"]),
        (b"[" + b"{}," * 2_000_000 + b"{}]", ["DataError", "over 1600000 JSON values"]),
    ],
    ids=["right", "wrong", "unknown-tag", "not-json", "two-million-values"],
)
def test_verdicts_come_from_the_checks(value, verdict):
    """The probe's data arrives as the bytes it sent, counted before they are parsed."""
    got = checking.judge(Checks, "test_x", value, seed=1)
    assert got == verdict or (verdict and verdict[1] in got[1])


@pytest.mark.parametrize(
    ("record", "verdict"),
    [
        ({"cell": 0, "verdict": None}, None),
        ({"cell": 0, "verdict": ["AssertionError", "want 3"]}, ("AssertionError", "want 3")),
        ({"cell": 0, "verdict": "passed"}, ("GraderError", "malformed verdict")),
        ({"cell": 0, "verdict": ["A", 3]}, ("GraderError", "malformed verdict")),
        ({"cell": 0}, ("GraderError", "malformed verdict")),
        (None, ("CheckNotFinished", "it stopped")),
    ],
)
def test_a_check_processs_verdicts_are_read_as_data(record, verdict):
    got = checking.verdict_of(record, "it stopped")
    assert got == verdict or (verdict and verdict[1] in got[1])


def test_a_check_process_that_reports_the_graders_failure_fails_the_grader():
    with pytest.raises(checking.GraderFailure, match="checks.py could not be loaded"):
        checking.verdict_of({"cell": 0, "grader_error": "checks.py could not be loaded"}, "")


def test_the_kernel_runs_the_same_probe_and_check(tmp_path):
    (tmp_path / "probes.py").write_text("def test_x(ns, x):\n    return ns['f'](x)\n")
    checks = "def inputs(grade_id, seed):\n    return 1\n\n\n"
    checks += "def test_x(value, x):\n    assert value == 3, 'want 3'\n"
    (tmp_path / "checks.py").write_text(checks)
    kernel.run_check(tmp_path.name, "test_x", {"f": lambda x: x + 2}, source=tmp_path.parent)
    with pytest.raises(AssertionError, match="want 3"):
        kernel.run_check(tmp_path.name, "test_x", {"f": lambda x: x}, source=tmp_path.parent)


def test_two_courses_configured_in_one_process_each_tell_their_kernel_their_own(tmp_path):
    """configure() writes a course's source into its own configuration, not into this process's
    environment: the kernel that each configuration's Execute starts gets that course's source,
    whichever course was configured last."""
    from nbconvert.preprocessors import ExecutePreprocessor
    from traitlets.config import Config

    first, second = Course(tmp_path / "a", "a", Path(".")), Course(tmp_path / "b", "b", Path("."))
    configs = {first: Config(), second: Config()}
    for course, config in configs.items():
        preprocessors.configure(config, course)
    assert kernel.SOURCE_VARIABLE not in os.environ
    execute = preprocessors.ResilientExecute(config=configs[first])
    execute._died_in, execute._not_run = None, set()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint(os.environ['SAFEGRADE_SOURCE'])")]
    ExecutePreprocessor.preprocess(execute, nb, {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[0].outputs[0].text.strip() == str(first.source)
    told = preprocessors.ResilientExecute(config=configs[second]).kernel_environment()
    assert told[kernel.SOURCE_VARIABLE] == str(second.source)


def test_checks_that_cannot_make_inputs_are_the_graders_failure(tmp_path):
    class BrokenChecks:
        seed = 7

        @staticmethod
        def inputs(grade_id, seed):
            raise KeyError("a case the instructor forgot")

    with pytest.raises(checking.GraderFailure, match="could not make the inputs of test_x"):
        checking.encoded_inputs(BrokenChecks, "test_x", BrokenChecks.seed)  # the inputs process
    record = {"cell": 0, "grader_error": "checks.py could not make the inputs of test_x (...)"}
    with pytest.raises(checking.GraderFailure, match="could not make the inputs of test_x"):
        checking.inputs_of(record, "test_x")  # what the grading process makes of its record
    (tmp_path / "probes.py").write_text("def test_x(ns, inputs):\n    return 1\n")
    (tmp_path / "checks.py").write_text("def inputs(grade_id, seed):\n    return {}[grade_id]\n")
    with pytest.raises(kernel.GraderError, match="could not make the inputs of test_x"):
        kernel.run_check(tmp_path.name, "test_x", {}, source=tmp_path.parent)


@pytest.mark.parametrize(
    "record", [None, {"cell": 0, "error": {"ename": "DataTooLarge"}}, {"cell": 0, "stdout": "x"}]
)
def test_inputs_that_do_not_arrive_whole_are_the_graders_failure(record):
    with pytest.raises(checking.GraderFailure, match="inputs of test_x"):
        checking.inputs_of(record, "test_x")


def test_the_inputs_process_sends_what_the_trusted_side_would_make():
    class Checks:
        @staticmethod
        def inputs(grade_id, seed):
            return None if grade_id == "none" else {"x": torch.arange(seed), "id": grade_id}

    def sent(grade_id: str, index: int):
        stream = frames({"cell": index} | checking.encoded_inputs(Checks, grade_id, 5))
        return checking.inputs_of(read_records(stream, index + 1, "n1")[index], grade_id)

    made = data.decode(json.loads(bytes(sent("t", 0))))
    assert made["id"] == "t" and torch.equal(made["x"], torch.arange(5))
    assert json.loads(bytes(sent("none", 0))) is None  # inputs of None still travel, as data
    with pytest.raises(checking.GraderFailure, match="did not arrive whole"):
        checking.inputs_of({"cell": 1}, "t")  # every test's record holds its inputs
    cell = nbformat.v4.new_code_cell("assert True")
    cell.metadata.nbgrader = {"grade": True, "grade_id": "t", "points": 1, "locked": True}
    assert verdicts.step(cell, {"t": 3}) == {"probe": "t", "inputs": 3}


def test_the_attack_that_reads_the_checks_would_find_them_where_they_are():
    """tests/hostile/attacks/ex1_reads_the_hidden_checks.py passes only if it finds nothing in
    the sandbox: here, where each exercise's checks.py is a file and is loaded, its search finds
    every one (so the attack cannot go blind when checks.py's own names change)."""
    from submissions.build import read_snippet

    attack = ROOT / "tests" / "hostile" / "attacks" / "ex1_reads_the_hidden_checks.py"
    source = read_snippet(attack).cells["replace_sigmoid_with_tanh"]
    namespace: dict = {}
    exec(source.replace("\nfor path in checks_files():", "\nfor path in []:"), namespace)
    files = sorted((ROOT / "solutions").glob("ex*/checks.py"))
    assert len(files) >= 3
    found = sorted(namespace["checks_files"]([str(ROOT / "solutions")]))
    assert found == [str(path) for path in files]
    checks = [probing.load(path) for path in files]
    found = list(namespace["loaded_checks"]())
    assert all(any(module is seen for seen in found) for module in checks), found
    probes = probing.load(ROOT / "solutions" / "ex1_sigmoid_to_tanh" / "probes.py")
    assert not any(module is probes for module in found)


# ----------------------------------------------------------------------------- staging


def test_walk_leaves_out_links_fifos_and_deep_trees(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "link").symlink_to("/etc/passwd")
    os.mkfifo(tmp_path / "pipe")
    deep = tmp_path.joinpath(*["d"] * (LIMITS.folder_depth + 3))
    deep.mkdir(parents=True)
    (deep / "far.txt").write_text("far")
    found, notes = files.walk(tmp_path)
    assert found == ["a.txt"]
    assert any("link was left out" in n for n in notes) and any(
        "pipe was left out" in n for n in notes
    )
    assert any("d/d/d" in n for n in notes)


def test_staging_finds_a_renamed_notebook_and_strips_a_huge_one(tmp_path, monkeypatch):
    source = tmp_path / "source"
    source.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.cells[0].metadata["nbgrader"] = {"grade_id": "answer", "solution": True}
    (source / "hw.ipynb").write_text(nbformat.writes(nb))
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="y" * 5000)]
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "my copy.ipynb").write_text(nbformat.writes(nb))
    (upload / "secret").symlink_to(source / "hw.ipynb")
    monkeypatch.setattr(LIMITS, "strip_over_bytes", 1000)
    notes = staging.stage(upload, tmp_path / "staged", source)
    staged = nbformat.read(tmp_path / "staged" / "hw.ipynb", as_version=4)
    assert staged.cells[0].source == "x = 1" and staged.cells[0].outputs == []
    assert not (tmp_path / "staged" / "secret").exists()
    assert any("in place of hw.ipynb" in n for n in notes) and any(
        "without its outputs" in n for n in notes
    )


def test_a_huge_notebook_with_bytes_that_are_not_utf8_is_still_stripped(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("caf\u00e9")])
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="y" * 5000)]
    upload, source = tmp_path / "upload", tmp_path / "source"
    upload.mkdir(), source.mkdir()
    latin1 = nbformat.writes(nb).encode("utf-8").replace("\u00e9".encode(), b"\xe9")
    (upload / "hw.ipynb").write_bytes(latin1)
    monkeypatch.setattr(LIMITS, "strip_over_bytes", 1000)
    notes = staging.stage(upload, tmp_path / "staged", source)
    staged = nbformat.read(tmp_path / "staged" / "hw.ipynb", as_version=4)
    assert staged.cells[0].source == "caf\ufffd" and staged.cells[1].outputs == [], notes
    assert any("not UTF-8" in n for n in notes) and any("without its outputs" in n for n in notes)


@pytest.mark.parametrize("why", ["source", "cells"])
def test_a_notebook_too_big_without_outputs_is_left_out_before_nbgrader_reads_it(
    tmp_path, monkeypatch, why
):
    """nbgrader parses a notebook under the batch's lock: a huge source or a hundred thousand
    cells would stall every classmate, so such a notebook is not staged (could not grade)."""
    cells = [nbformat.v4.new_code_cell("x = 1" if why == "cells" else "#" * 20_000)]
    nb = nbformat.v4.new_notebook(cells=cells * (30 if why == "cells" else 1))
    upload, source = tmp_path / "upload", tmp_path / "source"
    upload.mkdir(), source.mkdir()
    (upload / "hw.ipynb").write_text(nbformat.writes(nb))
    monkeypatch.setattr(LIMITS, "strip_over_bytes", 10_000)
    monkeypatch.setattr(LIMITS, "notebook_cells", 20)
    notes = staging.stage(upload, tmp_path / "staged", source)
    assert not (tmp_path / "staged" / "hw.ipynb").exists()
    want = "30 cells (at most 20)" if why == "cells" else "even without its outputs"
    assert any("hw.ipynb was left out" in n and want in n for n in notes), notes


def test_files_for_the_sandbox_never_include_probes_or_checks(tmp_path):
    for name in ("probes.py", "checks.py", "data.csv", "hw.ipynb", "verify.py"):
        (tmp_path / name).write_text(name)
    assert list(staging.files_for_sandbox([tmp_path], [])) == ["data.csv", "verify.py"]


def test_preimports_come_from_the_sources(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%matplotlib inline\nimport json\nfrom math import pi")]
    )
    nb.cells.append(nbformat.v4.new_code_cell("from verify import check  # beside the notebook"))
    (tmp_path / "hw.ipynb").write_text(nbformat.writes(nb))
    (tmp_path / "probes.py").write_text("import csv\n")
    (tmp_path / "verify.py").write_text("def check(): pass\n")
    assert sorted(staging.preimports([tmp_path])) == ["csv", "json", "math"]


# ----------------------------------------------------------------------------- result files


def graded_cell(grade_id: str, points: int, *outputs) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("check()", outputs=list(outputs))
    cell.metadata["nbgrader"] = {
        "grade": True, "solution": False, "locked": True, "grade_id": grade_id, "points": points,
        "schema_version": 3,
    }  # fmt: skip
    return cell


def test_a_result_file_holds_typed_tests_and_tells_earned_0_from_not_graded(tmp_path):
    failed = nbformat.v4.new_output("error", ename="AssertionError", evalue="Not yet: 3 != 4")
    forged = nbformat.v4.new_output("error", ename="TimeoutError", evalue="not run: budget")
    stopped = nbformat.v4.new_output("error", ename="TimeoutError", evalue="not run: budget")
    cells = [graded_cell("test_a", 2), graded_cell("test_b", 3, failed)]
    cells += [graded_cell("test_c", 5, stopped), graded_cell("test_d", 1, forged)]
    course = Course(tmp_path, "c", Path("."))  # its results: autograded/.safegrade
    # test_c has no record (the submission stopped first); test_d printed "not run" itself
    tests = [result_files.tested(cell, ran=cell is not cells[2]) for cell in cells]
    result_files.save_tests(course.results, "ann", "hw", tests)
    got = result_files.read_result(course.results, "ann", "hw", [], ["a note"])
    assert (got.status, got.score, got.max_score) == (result_files.GRADED, 2.0, 11.0)
    assert [(t.name, t.points, t.max_points, t.status) for t in got.tests] == [
        ("test_a", 2.0, 2.0, result_files.PASSED),
        ("test_b", 0.0, 3.0, result_files.FAILED),
        ("test_c", 0.0, 5.0, result_files.NOT_RUN),
        ("test_d", 0.0, 1.0, result_files.FAILED),
    ]
    assert got.tests[1].message == "AssertionError: Not yet: 3 != 4"
    assert got.reason.startswith("2/11: 3 of 4 tests failed: test_b: AssertionError")
    path = result_files.result_path(course.results, "ann", "hw")
    assert path == tmp_path / "autograded" / ".safegrade" / "hw" / "ann.json"
    plain = result_files.recorded(path.parent.parent, "ann", "hw")  # graded without make autograde
    assert (plain.status, plain.score, plain.tests) == (result_files.GRADED, 2.0, tests)
    result_files.save(got, path)
    assert result_files.load(path) == got  # the file round-trips, typed
    assert result_files.recorded(path.parent.parent, "ann", "hw") == got
    failure = result_files.grader_failed(got, ["SandboxError: bubblewrap is missing"])
    assert failure.status == result_files.GRADER_FAILED and failure.score is None
    assert failure.max_score == 11.0 and "the grader failed" in failure.reason
    result_files.save(failure, path)
    assert json.loads(path.read_text())["score"] is None  # never a 0 the submission did not earn
    unreadable = result_files.read_result(course.results, "ann", "hw", ["NotJSONError: bad"], [])
    assert (unreadable.status, unreadable.score, unreadable.tests) == (
        result_files.NOT_GRADABLE,
        0,
        [],
    )


def test_a_grading_after_make_autograde_supersedes_its_could_not_be_graded(tmp_path):
    """An upload make autograde could not grade, graded afterwards by the formgrader's button
    (which records its tests and writes no result file): the report, the export and the intake
    read the later grade, not the stale "could not be graded"; a later make autograde that
    fails again (its result file newer) is read as failed again."""
    from dataclasses import asdict

    results_dir = tmp_path / ".safegrade"
    failed = result_files.SubmissionResult(
        "ann", "hw", result_files.NOT_GRADABLE, 0, 2.0, "could not be"
    )
    result_files.save(failed, results_dir / "hw" / "ann.json")
    assert [r.student for r in result_files.not_graded(results_dir, ["hw"])] == ["ann"]
    record = results_dir / ".tests" / "hw" / "ann.json"
    record.parent.mkdir(parents=True)
    tests = [result_files.TestResult("test_a", 2.0, 2.0, result_files.PASSED, "")]
    record.write_text(json.dumps([asdict(t) for t in tests]))
    later = (results_dir / "hw" / "ann.json").stat().st_mtime_ns + 10**9
    os.utime(record, ns=(later, later))
    got = result_files.recorded(results_dir, "ann", "hw")
    assert (got.status, got.score, got.tests) == (result_files.GRADED, 2.0, tests)
    assert result_files.not_graded(results_dir, ["hw"]) == []
    os.utime(results_dir / "hw" / "ann.json", ns=(later + 10**9, later + 10**9))
    assert result_files.recorded(results_dir, "ann", "hw").status == result_files.NOT_GRADABLE


def test_a_result_file_of_another_shape_is_not_read(tmp_path):
    path = tmp_path / "hw" / "ann.json"
    path.parent.mkdir()
    bad_test = '{"name": "t", "points": 1, "max_points": 1, "status": "not run"}'
    for text in (
        "not json", "[]", '{"status": "done"}', '{"status": "graded", "tests": [{}]}',
        '{"status": "waiting"}', f'{{"status": "graded", "tests": [{bad_test}]}}',
    ):  # fmt: skip
        path.write_text(text)
        assert result_files.load(path) is None, text
    path.write_text('{"status": "error"}')  # what older files held: read, with defaults
    old = result_files.load(path)
    assert (old.student, old.assignment, old.score, old.tests) == ("ann", "hw", None, [])


# ----------------------------------------------------------------------------- the sandbox


def test_a_sandbox_that_would_see_the_course_refuses_to_start():
    with pytest.raises(sandbox.SandboxError, match="would see"):
        sandbox.Sandbox([], [os.path.join(sys.prefix, "course")], sandbox.Limits())


def editable_sources() -> list[str]:
    """The folders this venv's editable installs map packages to (a checkout's)."""
    import sysconfig

    mapped = []
    for finder in Path(sysconfig.get_paths()["purelib"]).glob("__editable__*finder.py"):
        for line in finder.read_text().splitlines():  # MAPPING: dict[...] = {'pkg': '/path'}
            if line.startswith("MAPPING"):
                mapped += ast.literal_eval(line.split("=", 1)[1].strip()).values()
    return mapped


def test_the_sandbox_shows_the_installation_never_a_checkout():
    """The test venv is an editable install of a checkout (fxcourse and grader). The sandbox
    binds the interpreter's prefixes and an installed copy of safegrade, never a folder the
    editable install points into (the checkout, with its class data), so make autograde at the
    repository root starts."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    folders, mapped = visibility.python_folders(), editable_sources()
    assert mapped, "the test venv is expected to be an editable install of a checkout"
    for source in map(Path, mapped):
        assert not any(
            source.is_relative_to(f) or Path(f).is_relative_to(source) for f in folders
        ), (source, folders)
    site = Path(visibility.site_folder())
    assert not any(site.is_relative_to(source) for source in map(Path, mapped))
    installed = sorted(p.name for p in (site / "grader" / "safegrade").glob("*.py"))
    assert installed == sorted(p.name for p in visibility.PACKAGE_DIR.glob("*.py"))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    course = CourseDirectory(config=config)
    assert Path(course.root) == ROOT
    sandbox.Sandbox([], staging.forbidden_paths(course), sandbox.Limits())  # no refusal


def test_the_memory_limit_in_force_is_named():
    text = sandbox.memory_limit_in_force(sandbox.Limits(memory_mb=100))
    assert "100 MiB" in text and ("cgroup" in text or "RLIMIT_AS" in text)


def test_every_limit_comes_from_the_configuration():
    from traitlets.config import Config

    config = Config()
    config.GradingLimits.cell_timeout = 7
    config.GradingLimits.budget = 30
    config.GradingLimits.tmp_mb = 99
    execute = preprocessors.SandboxExecute(config=config)
    limits = execute.limits()
    assert (limits.cell_timeout, limits.budget, limits.tmp_mb) == (7, 30, 99)
    assert execute.timeout == 7  # nbgrader's own per-cell timeout, for the unsandboxed path


def test_the_seccomp_filter_is_well_formed():
    program = isolation.seccomp_program()
    if program is None:
        pytest.skip("the seccomp filter is built for x86_64 only")
    assert len(program) % 8 == 0 and len(program) // 8 < 4096


# ----------------------------------------------------------------------------- catalogs

EX1 = "ex1_sigmoid_to_tanh"
KERNEL_DIED = "the kernel died in this cell"  # one of the grader's messages safegrade.po tells


def own_catalogs(course: Path, names: tuple[str, ...]) -> Path:
    """The installed Chinese catalogs `names` copied into the course's own courseware/locale."""
    import shutil

    from grader.safegrade import assignments

    own = course / "courseware" / "locale" / "zh"
    own.mkdir(parents=True)
    for name in names:
        shutil.copy(assignments.installed_catalogs() / "zh" / f"{name}.po", own)
    return own.parent


def changed_translation(catalog: Path, english: str, said: str) -> None:
    import polib

    po = polib.pofile(str(catalog), wrapwidth=0)
    po.find(english).msgstr = said
    po.save()


def a_message_of(module: Path) -> str:
    """A translated message of the exercise's module (its catalog beside the installed ones)."""
    from courseware.i18n import lookup_of

    text = module.read_text(encoding="utf-8")
    return next(english for english in lookup_of(f"{EX1}.{module.stem}", "zh") if english in text)


def test_a_course_names_its_assignments_from_its_own_catalogs(tmp_path, class_languages):
    """A course's translations are those of its own courseware/locale (assignments.catalogs_of),
    not the installed courseware's: without its notebook's catalog, a class given Chinese has
    no Chinese assignment of the exercise, and the export counts none."""
    from grader import exercises, grades_export, instructor
    from grader.safegrade import assignments

    course = class_languages(instructor.copy_course(tmp_path / "course", [EX1]), "en", "zh")
    assert assignments.catalogs_of(course) == assignments.installed_catalogs()  # a copy has none
    assert exercises.assignments_of(course) == (EX1, exercises.translated(EX1, "zh"))
    catalogs = own_catalogs(course, (f"{EX1}.verify", f"{EX1}.checks", "safegrade"))
    assert assignments.catalogs_of(course) == catalogs
    assert exercises.assignments_of(course) == (EX1,)
    assert exercises.split(exercises.translated(EX1, "zh"), catalogs)[1] == ""
    where = grades_export.Where("", "", (EX1,), course, course / "solutions", catalogs)
    assert where.of(EX1) == (EX1,)


def test_a_course_is_released_and_graded_with_its_own_changed_catalog(tmp_path, class_languages):
    """A changed translation in the course's own catalogs is what its Chinese release says (its
    verify.py) and what its grading tells a Chinese submission (the catalogs ResilientExecute
    gets from preprocessors.configure)."""
    from traitlets.config import Config

    from grader import exercises, instructor

    course = class_languages(instructor.copy_course(tmp_path / "course", [EX1]), "en", "zh")
    catalogs = own_catalogs(course, (EX1, f"{EX1}.verify", f"{EX1}.checks", "safegrade"))
    verify_po = catalogs / "zh" / f"{EX1}.verify.po"
    changed_translation(
        verify_po, a_message_of(course / "solutions" / EX1 / "verify.py"), "这门课自己的译文"
    )
    changed_translation(catalogs / "zh" / "safegrade.po", KERNEL_DIED, "这门课自己的说法")
    written = exercises.write_translation(course, EX1, "zh") / "verify.py"
    assert "这门课自己的译文" in written.read_text(encoding="utf-8")

    config = Config()
    preprocessors.configure(config, Course.configured(course))
    execute = preprocessors.ResilientExecute(config=config)
    assert Path(execute.catalogs) == catalogs

    def died():
        return [nbformat.v4.new_output("error", ename="DeadKernelError", evalue=KERNEL_DIED)]

    in_chinese = exercises.translated(EX1, "zh")
    told = preprocessors.in_language_of(in_chinese, execute.catalogs)(died())
    assert told[0].evalue == "这门课自己的说法"
    installed = preprocessors.in_language_of(in_chinese)(died())  # the installed catalogs'
    assert installed[0].evalue not in (KERNEL_DIED, "这门课自己的说法")
