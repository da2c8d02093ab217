"""Every derived file says what it is generated from and by which command (fxcourse/stamps.py),
and the files it names exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from courseware import authoring
from courseware.repository import HERE
from fxcourse import stamps

ROOT = HERE.root
NOTE = re.compile(
    r"Generated from (.+?) by `(make [a-z.-]+)`; course maintainers: edit (?:that file|those), not"
)


def stamp_of(path: Path, text: str) -> str:
    if path.suffix == ".ipynb":
        return nbformat.reads(text, as_version=4).metadata[stamps.NOTEBOOK_KEY]
    if path.suffix == ".json":
        return json.loads(text)[stamps.JSON_KEY]
    head = text.split("\n\n")[0] if path.suffix == ".md" else text.split('"""')[0]
    return " ".join(line.removeprefix("# ") for line in head.splitlines())


def named_sources(note: str) -> list[str]:
    found = NOTE.search(note)
    assert found, note
    return found.group(1).split(" and ")


def assert_names_existing_sources(path: Path, text: str, command: str) -> None:
    note = stamp_of(path, text)
    assert f"`{command}`" in note, (path, note)
    for source in named_sources(note):
        assert list(ROOT.glob(source.replace("NN_*", "[0-9][0-9]_*"))), (path, source)


def test_every_file_make_chapters_writes_is_stamped():
    derived = authoring.derived_files()
    kinds = {path.suffix for path in derived}
    assert kinds == {".ipynb", ".json", ".py", ".md"}, kinds
    for path, text in derived.items():
        assert_names_existing_sources(path, text, "make chapters")


def test_every_released_exercise_file_is_stamped():
    released = [p for p in (ROOT / "chapters" / "exercises").glob("*/*") if p.is_file()]
    assert {p.suffix for p in released} == {".ipynb", ".py"}, released
    for path in released:
        assert_names_existing_sources(path, path.read_text(), "make release")


def test_environment_yml_is_stamped():
    first = (ROOT / "environment.yml").read_text().splitlines()[0]
    assert first.startswith("# Generated from env/requirements.lock by `make environment.yml`")


@pytest.mark.parametrize("module", ["", "x = 1\n", "# a comment of its own\nx = 1\n"])
def test_a_stamp_comes_off_whole_and_goes_on_once(module):
    long_name = "chapters/exercises/an_exercise_with_a_long_name/verify.py"
    stamped = stamps.stamp_python(module, [long_name, "courseware/locale/zh/x.verify.po"], "make x")
    assert all(len(line) <= 100 for line in stamped.splitlines())
    assert stamps.unstamped_python(stamped) == module
    assert stamps.stamp_python(stamped, ["a.py"], "make y") == stamps.stamp_python(
        module, ["a.py"], "make y"
    )
    markdown = stamps.stamp_markdown("# Title\n", ["README.md"], "make x")
    assert stamps.unstamped_markdown(markdown) == "# Title\n"
    assert stamps.unstamped_json(stamps.stamp_json({"1.1": {}}, ["a"], "make x")) == {"1.1": {}}


def test_the_answers_stamp_is_no_try_it():
    from fxcourse import tryit

    answers = tryit.load_answers()
    assert stamps.JSON_KEY not in answers and answers
    assert all(set(answer) == {"chapter", "code"} for answer in answers.values())
