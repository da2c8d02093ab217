"""Unit tests of the sandboxed grader's parts that need no sandbox: guards, parsing, scoring."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "hostile"))

import tiny_course  # noqa: E402

from grader.safegrade import assignment, guard, sandbox, store  # noqa: E402

# ----------------------------------------------------------------------------- guards


@pytest.fixture(scope="module")
def snapshot():
    return guard.Snapshot()


def make_runner(snapshot):
    """Instructor code runs instrumented; student code runs plain, as in the test processes."""
    module = types.ModuleType("__main__")
    state = guard.State(snapshot, module.__dict__)
    guards = guard.make_guard(state)

    def instructor(source: str, test: bool = False):
        code = guard.bind_guard(guard.instrument(source, "<safegrade:instructor:t>", test), guards)
        exec(code, state.ns)
        if test:
            state.ns.update(state.ns.pop(guard.CELL_FUNCTION)())
        import ast

        guard.pin_cell_bindings(state, guard.module_bindings(ast.parse(source)))

    def student(source: str):
        exec(compile(source, "<safegrade:solution:a>", "exec"), state.ns)

    return instructor, student, state


def test_honest_instructor_code_behaves_as_plain_python(snapshot):
    instructor, student, state = make_runner(snapshot)
    instructor(
        "import math\n\n\ndef helper(xs, key=len):\n"
        "    return sum(x for x in xs if x > 1) + key(xs)\n\n\n"
        "class Box:\n    size = 3\n\n    def get(self):\n        return self.size\n"
    )
    student("def answer(xs):\n    return sorted(xs)[::-1]\n")
    instructor(
        "data = [3, 1, 2]\nassert answer(data) == [3, 2, 1]\nassert answer(data)[1:] == [2, 1]\n"
        "assert helper(data) == 8 and Box().get() == 3\nassert isinstance(data, list)\n"
        "assert not isinstance(data, dict)\nassert 1 < 2 < 3 and not (3 < 2 < 1)\n"
        "assert {k: v for k, v in zip('ab', (1, 2), strict=True)} == {'a': 1, 'b': 2}\n"
        "assert math.isclose(-(-0.5) * 2, 1.0)\nseen = [x for x in data if x != 1]\n",
        test=True,
    )
    assert state.ns["seen"] == [3, 2]


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (
            "class A:\n    def __eq__(s, o):\n        return True\n\n\nvalue = A()",
            "overrides __eq__",
        ),
        ("class F(float):\n    pass\n\n\nvalue = F(3)", "subclass of a built-in"),
        ("class L(list):\n    pass\n\n\nvalue = L([3])", "subclass of a built-in"),
        (
            "class B:\n    def __bool__(s):\n        return True\n\n\nvalue = B()",
            "overrides __bool__",
        ),
    ],
)
def test_objects_under_student_control_are_rejected(snapshot, answer, why):
    instructor, student, _ = make_runner(snapshot)
    student(answer)
    for check in ("assert value == 3", "assert value", "assert [value] == [3]"):
        with pytest.raises(guard.Rejected, match=why):
            instructor(check, test=True)


def test_isinstance_cannot_be_spoofed(snapshot):
    instructor, student, state = make_runner(snapshot)
    student("class Fake:\n    __class__ = list\n\n\nvalue = Fake()\n")
    assert isinstance(state.ns["value"], list)  # plain isinstance is fooled
    with pytest.raises(AssertionError):
        instructor("assert isinstance(value, list)", test=True)


def test_student_rebinding_a_helper_has_no_effect(snapshot):
    instructor, student, _ = make_runner(snapshot)
    instructor("def check(x):\n    return x == 1\n")
    student("check = lambda x: True\n")
    with pytest.raises(AssertionError):
        instructor("assert check(2)", test=True)


def test_module_attributes_resolve_to_the_snapshot(snapshot):
    import math

    instructor, student, _ = make_runner(snapshot)
    instructor("import math\n")
    baseline = snapshot.tampering()  # (pytest itself changes a few things)
    real = math.isclose
    try:
        student("import math\nmath.isclose = lambda *a, **k: True\n")
        with pytest.raises(AssertionError):
            instructor("assert math.isclose(1.0, 2.0)", test=True)
        assert "math.isclose was replaced" in " ".join(snapshot.tampering())
    finally:
        math.isclose = real
    assert snapshot.tampering() == baseline


def test_patched_library_class_is_noticed_at_the_comparison(snapshot):
    instructor, student, _ = make_runner(snapshot)
    original = Path.__eq__
    try:
        student("from pathlib import Path\nPath.__eq__ = lambda self, other: True\n")
        with pytest.raises(guard.Rejected, match="Path.__eq__ was changed"):
            instructor("from pathlib import Path\nassert Path('a') == Path('b')", test=True)
    finally:
        Path.__eq__ = original


def test_test_cells_compile_to_functions(snapshot):
    code = guard.instrument("x = 1\ny = x + 1\n", "<safegrade:instructor:t>", True)
    names = [c.co_name for c in code.co_consts if isinstance(c, types.CodeType)]
    assert names == [guard.CELL_FUNCTION]
    star = guard.instrument("from math import *\n", "<safegrade:instructor:t>", True)
    assert not any(isinstance(c, types.CodeType) for c in star.co_consts)


# ----------------------------------------------------------------------------- parsing


def test_hidden_tests_are_cut_from_what_learners_see():
    text = "a = 1\n### BEGIN HIDDEN TESTS\nsecret = 2\n### END HIDDEN TESTS\nb = 3\n"
    assert assignment.visible_test_source(text) == "a = 1\nb = 3\n"
    unclosed = "a = 1\n### BEGIN HIDDEN TESTS\nsecret = 2\n"
    assert assignment.visible_test_source(unclosed) == "a = 1\n"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b'{"cells": [', "not valid JSON"),
        (b"[1, 2]", "not an nbformat 4 notebook"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_broken_notebook_files_give_a_problem_not_an_exception(data, problem):
    cells, _, found = assignment.read_notebook_bytes(data)
    assert cells is None and problem in found


def test_non_utf8_bytes_are_replaced_with_a_note():
    cells, notes, problem = assignment.read_notebook_bytes(b'{"cells": [], "x": "\xff"}')
    assert cells == [] and problem is None and "not valid UTF-8" in notes[0]


@pytest.fixture
def tiny(tmp_path) -> assignment.Assignment:
    folder = tmp_path / "source" / "tiny"
    folder.mkdir(parents=True)
    (folder / "tiny.ipynb").write_text(json.dumps(tiny_course.source_notebook()))
    return assignment.load_assignment("tiny", folder)


def test_source_cells_are_classified(tiny):
    nb = tiny.notebooks[0]
    assert [c.id for c in nb.tests] == ["test_basic", "test_helper", "test_hidden"]
    assert nb.solution_ids == ["add_all"] and nb.max_score == 10
    assert [c["kind"] for c in nb.worker_spec()["cells"]] == [
        "instructor",
        "solution",
        "test",
        "test",
        "test",
    ]


def submit(tmp_path, files: dict) -> Path:
    folder = tmp_path / "sub"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def tiny_id(cell: dict) -> str | None:
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


def test_only_answer_cells_come_from_the_submission(tiny, tmp_path):
    nb = tiny_course.with_answer("def add_all(xs):\n    return 0\n")
    nb["cells"].append(json.loads(json.dumps(nb["cells"][3])))  # a duplicated test cell
    nb["cells"] = [c for c in nb["cells"] if tiny_id(c) != "test_hidden"]
    folder = submit(tmp_path, {"tiny.ipynb": json.dumps(nb).encode()})
    parsed = assignment.parse_submission("s", folder, tiny).notebooks["tiny.ipynb"]
    assert parsed.solutions == {"add_all": "def add_all(xs):\n    return 0\n"}
    assert any("test_basic' was duplicated" in n for n in parsed.notes)
    assert any("test_hidden' was deleted" in n for n in parsed.notes)


def test_renamed_and_foreign_notebooks(tiny, tmp_path):
    good = json.dumps(tiny_course.with_answer(tiny_course.CORRECT)).encode()
    renamed = assignment.parse_submission("s", submit(tmp_path, {"mine.ipynb": good}), tiny)
    assert renamed.notebooks["tiny.ipynb"].graded_file == "mine.ipynb"
    foreign = json.loads(good)
    for cell in foreign["cells"]:
        if "nbgrader" in cell["metadata"]:
            cell["metadata"]["nbgrader"]["grade_id"] += "_other"
    folder = tmp_path / "foreign"
    folder.mkdir()
    (folder / "tiny.ipynb").write_text(json.dumps(foreign))
    parsed = assignment.parse_submission("s", folder, tiny).notebooks["tiny.ipynb"]
    assert "none of the 1 answer cells" in parsed.problem


def test_links_in_a_submission_are_not_followed(tiny, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden")
    folder = submit(tmp_path, {"tiny.ipynb": b"{}"})
    (folder / "sym.txt").symlink_to(secret)
    os.link(secret, folder / "hard.txt")
    (folder / "plain.txt").write_text("ok")
    parsed = assignment.parse_submission("s", folder, tiny)
    assert parsed.files == {"plain.txt": b"ok"}


# ----------------------------------------------------------------------------- scoring


def test_points_come_from_the_source_not_from_the_sandbox(tiny, tmp_path):
    folder = submit(tmp_path, {"tiny.ipynb": json.dumps(tiny_course.release_notebook()).encode()})
    submission = assignment.parse_submission("s", folder, tiny)
    reply = {
        "notebooks": {
            "tiny.ipynb": {
                "tests": [
                    {"id": "test_basic", "passed": True, "points": 102},
                    {"id": "test_helper", "passed": "yes"},
                    {"id": "made_up", "passed": True},
                ]
            }
        }
    }
    result = store.build_result(tiny, submission, reply, 1.0, "key")
    assert result["score"] == 3
    tests = {t["id"]: t for t in result["notebooks"]["tiny.ipynb"]["tests"]}
    assert set(tests) == {"test_basic", "test_helper", "test_hidden"}
    assert tests["test_hidden"]["message"] == "the worker reported no result for this test"
    assert result["reason"].startswith("3/10: 2 of 3 tests failed")


def test_results_are_written_atomically(tmp_path):
    path = tmp_path / "student.json"
    store.write_result(path, {"schema": store.SCHEMA, "score": 1})
    store.write_result(path, {"schema": store.SCHEMA, "score": 2})
    assert store.read_result(path)["score"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["student.json"]


def test_seccomp_filter_is_well_formed():
    program = sandbox.seccomp_program()
    if program is None:
        pytest.skip("the seccomp filter is built for x86_64 only")
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
