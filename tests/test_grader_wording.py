"""The grader's own messages to a learner (grader/safegrade/wording.py): made in English where
they happen, told in Chinese in the outputs of a submission of an exercise in Chinese
(preprocessors.in_language_of), from the catalog courseware/locale/zh/safegrade.po. The exchange
test (test_exchange_languages.py) shows one in a real Chinese learner's feedback; here every
message the grader's code makes is told, with its values kept.
"""

from __future__ import annotations

import re
import signal

import pytest
from english_prose import english_sentences
from nbformat.v4 import new_code_cell, new_output

from courseware.i18n import lookup_of
from grader import exercises
from grader.safegrade import checking, probing, runner, verdicts, wording, worker
from grader.safegrade.preprocessors import in_language_of

EX1 = "ex1_sigmoid_to_tanh"
LOOKUP = lookup_of("safegrade", "zh")
CJK = re.compile(r"[\u4e00-\u9fff]")
CELL_START = "'a, b = {1}, 2'"  # as verdicts.first_line shows a cell


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
    return [*found, str(undefined.value), *refused_graphs()]


def refused_graphs() -> list[str]:
    """What the trusted side says of a graph a learner's pass returned that it will not run."""
    import torch
    import torch.nn as nn

    from grader.safegrade import graphs
    from grader.safegrade.data import DataError

    words = graphs.Vocabulary(
        functions=(torch.relu,), methods=("sum",), modules={nn.Linear: graphs.linear_arguments}
    )
    (linear,) = words.module_types
    refused = [
        lambda: graphs.resolve_function("torch.relu6", words),
        lambda: graphs.node_fields({"op": "call_method", "target": "relu", "name": "x"}, words),
        lambda: graphs.make_module("fc", "torch.nn.Bilinear", {}, words),
        lambda: graphs.make_module("fc", linear, {}, words),
        lambda: graphs.attribute("scale", {}),
    ]
    said = []
    for build in refused:
        with pytest.raises(DataError) as error:
            build()
        said.append(str(error.value))
    return said


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
