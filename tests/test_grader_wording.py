"""The grader's own messages to a learner (grader/safegrade/wording.py): made in English where
they happen, told in Chinese in the outputs of a submission of an exercise in Chinese
(preprocessors.in_language_of), from the catalog courseware/locale/zh/safegrade.po. The exchange
test (test_exchange_languages.py) shows one in a real Chinese learner's feedback; here every
message the grader's code makes is told, with its values kept.
"""

from __future__ import annotations

import json
import re
import signal
import types
from unittest import mock

import pytest
from english_prose import english_sentences
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_code_cell, new_output
from nbgrader.preprocessors import Execute

from courseware.i18n import lookup_of
from grader import exercises
from grader.safegrade import checking, data, probing, records, runner, verdicts, wording, worker
from grader.safegrade.grading_limits import LIMITS
from grader.safegrade.preprocessors import ResilientExecute, in_language_of

EX1 = "ex1_sigmoid_to_tanh"
LOOKUP = lookup_of("safegrade", "zh")
CJK = re.compile(r"[\u4e00-\u9fff]")
CELL_START = "'a, b = {1}, 2'"  # as verdicts.first_line shows a cell
NONCE = "n" * 32


def graded_cell(grade_id: str = "test_in_place"):
    grade = {"grade": True, "solution": False, "grade_id": grade_id, "points": 1}
    return new_code_cell("check()", metadata={"nbgrader": grade})


def statuses() -> list[str]:
    """How the submission's process can end (worker.describe_status on real wait statuses)."""
    signals = (signal.SIGKILL, signal.SIGSEGV, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGABRT)
    ended = [int(number) for number in (*signals, signal.SIGTERM)]  # SIGTERM: no hint
    ended += [code << 8 for code in (3, worker.RUNNER_FAILED)]  # exited with a status
    return [worker.describe_status(status) for status in ended]


def stopping_places() -> list[tuple[dict, list]]:
    """(records, cells) for each place a submission can stop: a test, a cell, an empty cell,
    after the last cell."""
    tested, plain, empty = (
        graded_cell("test_graph_hygiene"),
        new_code_cell(CELL_START.strip("'")),
        new_code_cell(" "),
    )
    return [({}, [tested]), ({}, [plain]), ({}, [empty]), ({0: {}}, [plain])]


def made_messages() -> list[str]:
    """Every message the grader's code makes for a learner, by calling that code."""
    found = [verdicts.stopped({"timed_out": True}, *place)[1] for place in stopping_places()]
    found += [
        verdicts.stopped({"status": status}, *place)[1]
        for status in statuses()
        for place in stopping_places()
    ]
    found.append(runner.timeout_error(60.0)["evalue"])
    found.append(checking.judge(None, "test_in_place", b"[3", 0)[1])
    (no_data,) = verdicts.outputs(graded_cell(), {"probe": "test_other"}, ("", ""), None)
    found.append(no_data.evalue)
    with pytest.raises(NameError) as undefined:
        probing.learner({}, "replace_sigmoid_with_tanh")
    found += [*rejected_records(), *dead_kernel(), *unsendable_data(), *malformed_data()]
    found.append(checking.judge(types.SimpleNamespace(), "test_in_place", b"1", 0)[1])
    found.append(checking.judge(None, "test_in_place", b"[" + b"0," * 2_000_000 + b"0]", 0)[1])
    found.append(checking.verdict_of({"verdict": 3}, "")[1])
    return [*found, str(undefined.value), *refused_graphs(), *refused_descriptions()]


def raised(kind: type, calls: list) -> list[str]:
    """The message of the `kind` error each call raises."""
    said = []
    for call in calls:
        with pytest.raises(kind) as error:
            call()
        said.append(str(error.value))
    return said


def framed(header: dict) -> bytes:
    payload = records.frame_payload(header, b"", NONCE)
    return len(payload).to_bytes(4, "big") + payload


def rejected_records() -> list[str]:
    """What the grader says of a cell whose records the submission's code wrote to."""
    streams = [
        (b"not a frame", 1),
        (framed({"cell": 1}), 1),
        (framed({"cell": 0}) + framed({"cell": 0}), 2),
    ]
    return [records.read_records(s, n, NONCE)[0]["error"]["evalue"] for s, n in streams]


def dead_kernel() -> list[str]:
    """Plain nbgrader's (unsandboxed) messages for a kernel that died: in its cell, and in a
    later cell, named by where it died."""
    executor = ResilientExecute()
    executor._died_in, executor._not_run = None, set()

    def dies(*_args):
        raise DeadKernelError("dead")

    said = []
    with mock.patch.object(Execute, "preprocess_cell", dies):
        for source in (CELL_START.strip("'"), "after = 1"):
            cell, _ = executor.preprocess_cell(new_code_cell(source), {}, 0)
            said.append(cell.outputs[-1].evalue)
    return said


def unsendable_data() -> list[str]:
    """What a probe's value that cannot travel to the checks makes the test say."""
    import torch

    nested: list = []
    for _ in range(LIMITS.data_depth + 2):
        nested = [nested]
    values = [
        nested,
        torch.zeros(2, dtype=torch.uint16),
        torch.empty(LIMITS.tensor_bytes + 1, dtype=torch.uint8),
    ]
    return raised(data.DataError, [lambda value=value: data.encode(value) for value in values])


def malformed_data() -> list[str]:
    """What the checks' side says of data that is not what encode makes (a forged record)."""
    forged = [
        [1],
        {"what": 1},
        {"dict": [[1]]},
        {"dict": [[{"list": []}, 1]]},
        {"int": "1"},
        {"tensor": {}},
        {"tensor": {"dtype": "float32", "shape": [-1], "data": ""}},
        {"tensor": {"dtype": "float32", "shape": [1], "data": 7}},
        {"tensor": {"dtype": "float32", "shape": [1], "data": "AAAA"}},
    ]
    nested: dict = {"list": []}
    for _ in range(LIMITS.data_depth + 2):
        nested = {"list": [nested]}
    forged.append(nested)
    return [checking.judge(None, "test_in_place", json.dumps(f).encode(), 0)[1] for f in forged]


def refused_graphs() -> list[str]:
    """What the trusted side says of a graph a learner's pass returned that it will not run."""
    import torch
    import torch.nn as nn

    from grader.safegrade import graph_data
    from grader.safegrade.data import DataError

    words = graph_data.Vocabulary(
        functions=(torch.relu,), methods=("sum",), modules={nn.Linear: graph_data.linear_arguments}
    )
    (linear,) = words.module_types
    refused = [
        lambda: graph_data.resolve_function("torch.relu6", words),
        lambda: graph_data.node_fields({"op": "call_method", "target": "relu", "name": "x"}, words),
        lambda: graph_data.make_module("fc", "torch.nn.Bilinear", {}, words),
        lambda: graph_data.make_module("fc", linear, {}, words),
        lambda: graph_data.attribute("scale", {}),
    ]
    return raised(DataError, refused)


def refused_descriptions() -> list[str]:
    """What the trusted side says of a graph description it will not build (the rarer forms)."""
    import torch
    import torch.nn as nn

    from grader.safegrade import grammar, graph_data
    from grader.safegrade.data import DataError, Ref

    words = graph_data.Vocabulary(functions=(torch.relu,), methods=(), modules={})
    module = nn.Module()
    module.register_buffer("w", torch.zeros(1))
    refused = [
        lambda: graph_data.build({"nodes": 3}, words),
        lambda: graph_data.node_fields(3, words),
        lambda: graph_data.node_fields({"op": "call", "target": "x", "name": "x"}, words),
        lambda: graph_data.node_fields({"op": "placeholder", "target": "x", "name": "1x"}, words),
        lambda: graph_data.node_fields(
            {"op": "placeholder", "target": "class", "name": "x"}, words
        ),
        lambda: graph_data.node_fields({"op": "output", "target": "out", "name": "x"}, words),
        lambda: grammar.path("a." * 40 + "a"),
        lambda: grammar.path("a._b"),
        lambda: grammar.check_arguments("call_function", torch.relu, 1, {}),
        lambda: grammar.check_arguments("call_function", torch.relu, [], {"1": 1}),
        lambda: grammar.check_arguments("placeholder", "x", [1, 2], {}),
        lambda: grammar.check_arguments("output", "output", [], {}),
        lambda: grammar.check_arguments("call_function", getattr, [1, "_x"], {}),
        lambda: grammar.check_placeholders(
            [types.SimpleNamespace(op="placeholder", target="x")] * 2
        ),
        lambda: grammar.link([[]], [], [1]),
        lambda: grammar.link(Ref(3), [], [9]),
        lambda: grammar.link(object(), [], [9]),
        lambda: grammar.link({(1,): 1}, [], [9]),
        lambda: grammar.link("x" * 10_000, [], [9]),
        lambda: graph_data.container({"a": torch.zeros(1), "a.b": nn.Module()}),
        lambda: graph_data.container({"a": nn.Linear(1, 1), "a.b": nn.Module()}),
        lambda: graph_data.container({"a": module, "a.w": torch.zeros(1)}),
    ]
    return raised(DataError, refused)


@pytest.mark.parametrize("message", made_messages())
def test_each_message_the_grader_makes_is_told_in_chinese(message):
    told = wording.translated(message, LOOKUP)
    assert CJK.search(told) and english_sentences(told) == [], (message, told)
    for value in re.findall(
        rf"SIG[A-Z]+|{re.escape(CELL_START)}|\b\d+\b|\w+_\w+|'[\w.]+'", message
    ):
        assert value in told, (value, told)  # names, numbers and the cell's start kept


@pytest.mark.parametrize("template", sorted(LOOKUP))
def test_each_template_of_the_catalog_reads_back_with_its_values(template):
    values = {name: f"V{n}" for n, name in enumerate(wording.PLACEHOLDER.findall(template))}
    told = wording.translated(template.format(**values), LOOKUP)
    assert told == LOOKUP[template].format(**values)


def test_a_value_is_put_in_as_data_never_read_as_a_format():
    cell = new_code_cell("print('{0.__class__}', {x})")
    message = verdicts.stopped({"timed_out": True}, {}, [cell])[1]
    told = wording.translated(message, LOOKUP)
    assert verdicts.first_line(cell.source) in told and "未运行" in told


def test_only_a_translation_is_told_and_only_the_graders_messages():
    """The English exercise keeps every message; the Chinese one tells the grader's (its error
    value and the traceback's line that repeats it), never the learner's own or a check's."""
    with pytest.raises(NameError) as undefined:
        probing.learner({}, "replace_sigmoid_with_tanh")
    english = str(undefined.value)

    def outputs():
        return [
            new_output(
                "error", ename="NameError", evalue=english, traceback=[f"NameError: {english}"]
            ),
            new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[]),
            new_output("stream", name="stdout", text=english),
        ]

    assert in_language_of(EX1)(outputs()) == outputs()
    told = in_language_of(exercises.translated(EX1, "zh"))(outputs())
    assert told[0].evalue == wording.translated(english, LOOKUP) != english
    assert told[0].traceback == [f"NameError: {told[0].evalue}"]
    assert told[1:] == outputs()[1:]


def test_a_learners_value_and_a_learners_own_error_are_never_told():
    """Only the grader's words are told: a value the learner chose (a graph's target) stays as
    it is even when it reads like one of the grader's messages, and so does the learner's own
    error (another name than the grader's) whose text is one of them word for word."""
    from grader.safegrade import graph_data
    from grader.safegrade.data import DataError

    with pytest.raises(DataError) as error:
        graph_data.attribute("aborted", {})
    assert wording.translated(str(error.value), LOOKUP).startswith("aborted：")
    grader_says = "the kernel died in this cell"
    found = [
        new_output("error", ename="RuntimeError", evalue=grader_says, traceback=[]),
        new_output("error", ename="DeadKernelError", evalue=grader_says, traceback=[]),
    ]
    told = in_language_of(exercises.translated(EX1, "zh"))(found)
    assert told[0].evalue == grader_says
    assert told[1].evalue == LOOKUP[grader_says]


def test_unsandboxed_grading_tells_the_graders_messages_too():
    """Plain nbgrader's run (SandboxExecute.unsandboxed) tells a kernel's death in Chinese for a
    Chinese submission, in the notebook and in the tests' record the report reads, and the
    learner's own output as it is."""
    from grader.safegrade import preprocessors, result_files
    from grader.safegrade.preprocessors import SandboxExecute

    cell = graded_cell()
    died = new_output("error", ename="DeadKernelError", evalue="the kernel died in this cell")
    died.traceback = ["DeadKernelError: the kernel died in this cell"]
    cell.outputs = [new_output("stream", name="stdout", text="the kernel died in this cell"), died]
    nb = types.SimpleNamespace(cells=[cell])
    resources = {"nbgrader": {"assignment": exercises.translated(EX1, "zh")}}
    recorded = []

    def record(config, resources, nb, not_run):
        recorded.extend(result_files.tested(cell, True) for cell in nb.cells)

    with (
        mock.patch.object(Execute, "preprocess", lambda self, nb, res, km=None: (nb, res)),
        mock.patch.object(preprocessors, "record_tests", record),
    ):
        SandboxExecute(unsandboxed=True).preprocess(nb, resources)
    said = LOOKUP["the kernel died in this cell"]
    assert cell.outputs[1].evalue == said and cell.outputs[1].traceback == [
        f"DeadKernelError: {said}"
    ]
    assert cell.outputs[0].text == "the kernel died in this cell"
    assert [test.message for test in recorded] == [f"DeadKernelError: {said}"]
