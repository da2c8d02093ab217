"""`make student-edition`: a learner's copy of the course with nothing secret inside, that sets
itself up and runs a chapter on its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from courseware import authoring, edition
from courseware.repository import HERE

ROOT = Path(__file__).resolve().parents[1]
MARKED_REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.DOTALL)


def secrets(answers_allowed: bool) -> dict[str, str]:
    """Text that must not appear in the edition -> where it comes from. An exercise's verify.py
    (the tests' checks, released beside its notebook) is no secret."""
    found = {}
    for source in sorted((ROOT / "solutions").rglob("*")):
        skipped = ".ipynb_checkpoints" in source.parts or "__pycache__" in source.parts
        if not source.is_file() or skipped or source.name == "verify.py":
            continue
        where = str(source.relative_to(ROOT))
        if source.suffix != ".ipynb":
            found[source.read_text(errors="replace").strip()] = where
            continue
        for index, cell in enumerate(nbformat.read(source, as_version=4).cells):
            for _, region in MARKED_REGION.findall(cell.source):
                if region.strip():
                    found[region.strip()] = f"{where}, cell {index}"
            marker = authoring.tryit_of(cell)
            if marker and (
                marker[1] == "mistake" or (marker[1] == "answer" and not answers_allowed)
            ):
                found[cell.source.strip()] = f"{where}, try it {marker[0]} ({marker[1]})"
    return {text: where for text, where in found.items() if len(text) > 20}


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def edition_texts(out: Path) -> dict[str, str]:
    texts = {}
    for path in out.rglob("*"):
        if path.is_file() and ".venv" not in path.relative_to(out).parts:
            raw = path.read_text(errors="replace")
            # JSON escapes strings: search notebooks' cell sources and JSON values decoded too.
            if path.suffix == ".ipynb":
                raw += "\n".join(c.source for c in nbformat.reads(raw, as_version=4).cells)
            elif path.suffix == ".json":
                raw += "\n".join(_strings(json.loads(raw)))
            texts[str(path.relative_to(out))] = raw
    return texts


@pytest.mark.parametrize("answers", [True, False], ids=["with-answers", "no-answers"])
def test_edition_holds_the_learner_course_and_nothing_secret(tmp_path, answers):
    out = tmp_path / "edition"
    edition.build(out, answers=answers)
    top = sorted(p.name for p in out.iterdir())
    assert top == sorted(
        [
            ".gitignore",
            "Makefile",
            "README.md",
            "README.zh.md",
            "chapters",
            "course.json",
            "env",
            "environment.yml",
            "fxcourse",
            "nbgrader_config.py",
            "pyproject.toml",
        ]
    )
    chapters = sorted(p.name for p in (out / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert chapters == sorted(p.name for p in HERE.sources.glob("[0-9][0-9]_*.ipynb"))
    assert (out / "fxcourse" / "answers.json").exists() == answers
    assert (out / "fxcourse" / "answers.zh.json").exists() == answers
    zh = sorted(p.name for p in (out / "chapters" / "zh").glob("[0-9][0-9]_*.ipynb"))
    assert zh == chapters and (out / "fxcourse" / "locale" / "zh" / "fxcourse.po").exists()
    for exercise in (ROOT / "chapters").glob("**/exercises/*/verify.py"):  # beside the notebook
        copy = out / exercise.relative_to(ROOT)  # the Chinese copy has its messages in Chinese
        assert copy.read_text() == exercise.read_text(), copy
    # The learner's package whole (its answers aside in a no-answers edition), nothing else's.
    package = {n for n in edition.course_files() if n.startswith("fxcourse/")}
    shipped = {str(p.relative_to(out)) for p in (out / "fxcourse").rglob("*") if p.is_file()}
    assert shipped == package - (set() if answers else set(edition.answer_files()))
    readme = (out / "README.md").read_text()
    assert ("Show a reference answer" in readme) == answers
    assert ".venv/bin/nbgrader validate" in readme and "`nbgrader validate" not in readme
    texts = edition_texts(out)
    # The checkpoints run the reference answers (fxcourse.reference): every edition carries them,
    # there and nowhere else; a no-answers edition has nothing that shows them to the learner.
    references = texts.pop("fxcourse/references.json")
    leaks = [
        f"{name} contains text of {where}"
        for secret, where in secrets(answers_allowed=answers).items()
        for name, text in texts.items()
        if secret in text
    ]
    assert not leaks, "\n".join(leaks)
    allowed = secrets(answers_allowed=False).keys() - secrets(answers_allowed=True).keys()
    assert allowed and all(answer in references for answer in allowed)
    if answers:  # the same search does find the answers, where they are allowed
        assert all(answer in texts["fxcourse/answers.json"] for answer in allowed)
    else:
        assert "show_answer" not in "".join(texts[n] for n in texts if n.startswith("README"))


@pytest.mark.parametrize("answers", [True, False], ids=["with-answers", "no-answers"])
def test_a_chinese_edition_opens_with_the_chinese_readme(tmp_path, answers):
    out = tmp_path / "edition"
    edition.build(out, answers=answers, language="zh")
    readme, english = (out / "README.md").read_text(), (out / "README.en.md").read_text()
    assert "动手试试" in readme and "make lab LANG=zh" in readme
    assert "How the course works" in english
    assert ("显示参考答案" in readme) == answers and ("不附带参考答案" in readme) != answers


@pytest.mark.xdist_group("student-edition")
@pytest.mark.whole_chapter  # a minute or more: handed out before the short tests (conftest.py)
@pytest.mark.end_to_end
def test_edition_sets_itself_up_and_runs_a_chapter_without_instructor_tools(tmp_path):
    out = tmp_path / "edition"
    edition.build(out, answers=False)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "JUPYTER_PATH")}
    # Compiling the new environment's bytecode (about 40 s here) is setup's speed-up, not the
    # edition's: this one chapter runs without it. Python then writes the bytecode of what it
    # imports as a learner's does, unless the machine running the tests forbids it (CI images
    # often set PYTHONDONTWRITEBYTECODE): then each of setup's three `jupyter` commands and the
    # chapter's kernel compiled their imports again (about 10 s of CPU each instead of 4.5).
    env["UV_COMPILE_BYTECODE"] = "0"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(["make", "env"], cwd=out, env=env, check=True, timeout=900)
    python = out / ".venv" / "bin" / "python"
    # `jupyter server ...` runs the `jupyter-server` found on PATH: the edition's, as for a
    # learner who activated it, not one of whatever environment runs the tests.
    env["PATH"] = os.pathsep.join([str(python.parent), env["PATH"]])

    def edition_python(*args: str, cwd: Path = out, check: bool = True):
        return subprocess.run(
            [python, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=check,
            timeout=600,
        )

    extensions = edition_python("-m", "jupyter", "server", "extension", "list")
    listing = re.sub(r"\x1b\[[0-9;]*m", "", extensions.stdout + extensions.stderr)
    assert "nbgrader.server_extensions.formgrader disabled" in listing
    assert "nbgrader.server_extensions.assignment_list enabled" in listing
    page_config = out / ".venv" / "etc" / "jupyter" / "labconfig" / "page_config.json"
    assert '"@jupyter/nbgrader:formgrader": true' in page_config.read_text()
    assert '"@jupyter/nbgrader:create-assignment": true' in page_config.read_text()
    chapter = out / "chapters" / "01_symbolic_tracing.ipynb"
    run = edition_python("-m", "fxcourse.selfcheck", str(chapter), check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "01_symbolic_tracing.ipynb: ok" in run.stdout
    # The edition's kernel and helpers are its own, not the course's it was built from.
    kernels = edition_python("-m", "jupyter", "kernelspec", "list", "--json").stdout
    assert str(out / ".venv") in kernels
    code = "import fxcourse; print(fxcourse.__file__)"
    where = edition_python("-c", code, cwd=tmp_path).stdout
    assert where.startswith(str(out / "fxcourse"))
