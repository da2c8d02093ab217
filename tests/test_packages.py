"""The course's packages: fxcourse, the learner's (what chapters import, shipped whole in the
student edition), imports nothing of the course's other packages (courseware, the author's
tools; grader; tests), found from the import graph of its modules, not from a list of names.
And a language's Python packages (fxcourse/languages.py) are those env/requirements.in holds."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from import_walk import imported_names

from fxcourse import languages

ROOT = Path(__file__).resolve().parents[1]
LEARNER = "fxcourse"
LEARNER_MODULE_MAX_LINES = 400


def first_party() -> set[str]:
    """The top-level packages of this repository: each folder at its root that holds Python."""
    return {
        path.name
        for path in ROOT.iterdir()
        if path.is_dir() and not path.name.startswith(".") and any(path.glob("*.py"))
    }


def imports_of(path: Path, package: str) -> set[str]:
    """Every module `path` (a module of the top-level `package`) imports, at its top or inside a
    function, by import statement or by importlib.import_module with a literal name."""
    folder = path.parent.relative_to(ROOT / package).parts
    own_package = ".".join([package, *folder])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {name for node in ast.walk(tree) for name in imported_names(node, own_package)}


def foreign_imports(package: str) -> list[str]:
    """`module: imported` for each import of a package of this repository other than `package`."""
    others = first_party() - {package}
    return sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / package).rglob("*.py")
        for name in imports_of(path, package)
        if name.split(".")[0] in others
    )


def test_the_learners_package_imports_nothing_of_the_course_s_other_packages():
    assert {"fxcourse", "courseware", "grader", "tests"} <= first_party()
    assert foreign_imports(LEARNER) == []
    # The same search sees the arrows that are allowed: the author's tools build on fxcourse.
    assert any(found.endswith(": fxcourse.messages") for found in foreign_imports("courseware"))


def test_no_module_of_the_learners_package_is_over_400_lines():
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / LEARNER).rglob("*.py")
    }
    assert len(lengths) > 10  # the package's modules were found
    assert {p: n for p, n in lengths.items() if n > LEARNER_MODULE_MAX_LINES} == {}


def test_importing_every_learner_module_loads_no_other_package_of_the_course():
    """What the import statements say, checked by Python itself: each module of fxcourse
    imported, then the course's packages in sys.modules listed."""
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / LEARNER).rglob("*.py")
        if path.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert LEARNER in loaded and len(modules) > 20
    assert (set(loaded) & first_party()) - {LEARNER} == set()


def requirements() -> set[str]:
    lines = (ROOT / "env" / "requirements.in").read_text(encoding="utf-8").splitlines()
    names = (re.split(r"[<>=\[; ]", line.strip())[0].lower() for line in lines)
    return {name for name in names if name and not name.startswith("#")}


def locked(lock_text: str) -> set[str]:
    """The packages a lock (uv pip compile's output) pins, by name."""
    lines = (line for line in lock_text.splitlines() if line[:1].isalnum())
    return {re.split(r"[<>=!~;\[ ]", line)[0].lower().replace("_", "-") for line in lines}


def missing_requirements(
    language: languages.Language, requirements_in: str, lock: str
) -> list[str]:
    """What `language` needs that the environment lacks: a requirement line env/requirements.in
    does not hold, a package the lock does not pin, JupyterLab's pack for its lab_locale."""
    lines = {line.strip() for line in requirements_in.splitlines()}
    missing = [
        f"{line!r}: add it to env/requirements.in"
        for line in language.requirements
        if line not in lines
    ]
    pinned = locked(lock)
    missing += [
        f"{name}: not pinned in env/requirements.lock: run `make lock`"
        for name in language.python_packages()
        if name not in pinned
    ]
    pack = f"jupyterlab-language-pack-{language.lab_locale.lower().replace('_', '-')}"
    if language.lab_locale and pack not in language.python_packages():
        missing.append(f"{pack}: JupyterLab's pack for {language.lab_locale}: add it")
    return missing


def environment_files() -> tuple[str, str]:
    env = ROOT / "env"
    return tuple(
        (env / name).read_text(encoding="utf-8")
        for name in ("requirements.in", "requirements.lock")
    )


def test_each_language_s_requirements_are_in_the_requirements_and_the_lock():
    requirements_in, lock = environment_files()
    for language in languages.all_languages():
        assert missing_requirements(language, requirements_in, lock) == [], language.code
    wanted = {package for lang in languages.all_languages() for package in lang.python_packages()}
    assert "jupyterlab-language-pack-zh-cn" in wanted and "jieba" in wanted
    packs = {name for name in requirements() if name.startswith("jupyterlab-language-pack-")}
    assert packs <= wanted, "a language pack of no language in fxcourse/languages.py"


def test_a_new_language_fails_the_check_until_its_lines_are_added_and_locked():
    """A real third language (Japanese: its lab pack, a word splitter) registered without its
    lines fails; with them in requirements.in but the lock not re-resolved, it still fails; once
    locked, it passes. Without its lab pack among its requirements, it fails too."""
    lines = ("janome", "jupyterlab-language-pack-ja-jp")
    japanese = languages.Language("ja", "日本語", "ja", lab_locale="ja_JP", requirements=lines)
    requirements_in, lock = environment_files()
    found = missing_requirements(japanese, requirements_in, lock)
    assert len(found) == 4 and all("janome" in n or "ja-jp" in n for n in found), found
    added = requirements_in + "janome\njupyterlab-language-pack-ja-jp\n"
    found = missing_requirements(japanese, added, lock)
    assert len(found) == 2 and all("make lock" in note for note in found), found
    relocked = lock + "janome==0.5.0\n    # via -r env/requirements.in\n"
    relocked += "jupyterlab-language-pack-ja-jp==4.5.post1\n"
    assert missing_requirements(japanese, added, relocked) == []
    no_pack = languages.Language("ja", "日本語", "ja", lab_locale="ja_JP", requirements=lines[:1])
    assert ["ja-jp" in n for n in missing_requirements(no_pack, added, relocked)] == [True]
