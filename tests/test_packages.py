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


def test_each_language_s_python_packages_are_in_the_requirements_and_no_other_s():
    wanted = {package for lang in languages.all_languages() for package in lang.python_packages()}
    assert "jupyterlab-language-pack-zh-cn" in wanted and "jieba" in wanted
    assert wanted <= requirements()
    packs = {name for name in requirements() if name.startswith("jupyterlab-language-pack-")}
    assert packs <= wanted, "a language pack of no language in fxcourse/languages.py"
