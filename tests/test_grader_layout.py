"""The grader package's shape: layers that only point down (safegrade, the sandbox; intake; the
grader's own modules; hub; tools), no import circle among its modules, none too long to read,
and every limit of the grader in one Configurable that each layer reads. Between the top
folders too: the learner's package (fxcourse) imports neither the author's tools (courseware)
nor the grader, courseware imports no grader, and the grader imports fxcourse and courseware
only where it is listed here."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from import_walk import imported_names, unread_import_calls

from fxcourse.validate import ValidateLimits
from fxcourse.workspace import NBGRADER_CONFIG
from grader.safegrade.grading_limits import LIMITS, GradingLimits

ROOT = Path(__file__).resolve().parents[1]
GRADER = ROOT / "grader"
MAX_LINES = 350


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str], root: Path = ROOT) -> set[str]:
    """The `known` modules `path` imports, at its top or inside a function, by import statement
    or by importlib.import_module with a literal name."""
    name, found = module_name(path, root), set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        targets = imported_names(node, package)
        found |= {target for target in targets if target in known and target != name}
    return found


def import_graph(packages: tuple[str, ...] = ("grader",), root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of `packages` it imports, for every module of `packages`."""
    paths = sorted(path for package in packages for path in (root / package).rglob("*.py"))
    known = {module_name(path, root) for path in paths}
    return {module_name(path, root): imported_modules(path, known, root) for path in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of the graph (as a path that ends where it starts), or []."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str]:
        state[node] = "open"
        for child in sorted(graph.get(node, ())):
            if state.get(child) == "open":
                return [*path[path.index(child) :], child]
            if child not in state and (cycle := visit(child, [*path, child])):
                return cycle
        state[node] = "done"
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return []


def test_the_cycle_finder_finds_a_circle_and_the_walker_sees_imports():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "grader.safegrade.grading_limits" in graph["grader.safegrade.batch"]
    assert "grader.intake" in graph["grader.course_grader"]
    # an import inside a function counts as much as one at the top
    assert "grader.tools.bench" in graph["grader.tools.sizing"]
    assert "grader.safegrade.assignments" in graph["grader.safegrade.preprocessors"]


# The grader's folders, bottom up: a module imports its own layer's modules and those below.
LAYERS = ("safegrade", "intake", "", "hub", "tools")  # "": the modules at grader/'s top


def layer_of(module: str) -> int:
    """The layer of a module of grader: its folder's place in LAYERS."""
    parts = module.split(".")
    folder = parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else ""
    return LAYERS.index(folder)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a higher layer. A package's __main__ (`python -m grader.safegrade`) is a
    command line on top of everything, which no module imports: it may import any layer."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if (layer_of(target) > layer_of(module) and not module.endswith(".__main__"))
        or target.endswith(".__main__")
    )


def test_every_import_in_grader_points_down_or_across():
    graph = import_graph()
    assert {layer_of(module) for module in graph} == set(range(len(LAYERS)))  # every folder
    assert upward_imports(graph) == []
    # and the check sees one: the sandbox asking the command line, or the grader asking a tool
    assert upward_imports({"grader.safegrade.batch": {"grader.course_grader"}})
    assert upward_imports({"grader.report": {"grader.tools.bench"}})
    assert upward_imports({"grader.report": {"grader.safegrade.__main__"}})
    assert not upward_imports({"grader.safegrade.__main__": {"grader.course"}})


def test_no_import_circle_in_grader():
    assert find_cycle(import_graph()) == []


def test_no_module_in_grader_is_over_350_lines():
    over = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for path in GRADER.rglob("*.py")
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert not over, over


def test_every_limit_has_a_unit_and_help_and_make_autograde_prints_them():
    traits = GradingLimits.class_traits(unit=lambda unit: unit is not None)
    assert len(traits) >= 40
    for name, trait in traits.items():
        assert trait.metadata["unit"] in {"s", "MiB", "bytes", "characters", "count"}, name
        assert len(trait.help) > 10, name
    configurable = {n for n, t in traits.items() if t.metadata.get("config")}
    assert configurable == {"cell_timeout", "budget", "memory_mb", "nproc", "file_mb", "tmp_mb"}
    summary = "\n".join(LIMITS.summary())
    assert all(re.search(rf"\b{name}\b", summary) for name in configurable), summary


def test_nbgrader_config_names_the_limits_and_repeats_no_default():
    """Each configurable limit is named where an instructor sets it; none is set there to its
    default (GradingLimits declares it once), and the sandbox reads the same traits."""
    from grader.safegrade import sandbox

    text = (GRADER / "nbgrader_config.py").read_text()
    configurable = GradingLimits.class_trait_names(config=True)
    for name in configurable:
        assert re.search(rf"\b{name}\b", text), name
        for value in re.findall(rf"^c\.GradingLimits\.{name} = (.+)$", text, re.M):
            assert float(value) != getattr(LIMITS, name), f"{name} repeats its default"
    assert "c.SandboxExecute.budget" not in text and "c.Execute.timeout" not in text
    given = sandbox.Limits(budget=7).for_worker(memory_cgroup=False)
    assert set(given) == {*configurable, "memory_cgroup"} and given["budget"] == 7


def test_layers_that_handle_the_same_thing_read_the_same_limit():
    from grader.safegrade import sandbox

    assert sandbox.Limits().cell_timeout == LIMITS.cell_timeout
    assert LIMITS.records_bytes >= LIMITS.frame_bytes  # a submission may send one whole frame
    assert LIMITS.file_cap("a.ipynb") == LIMITS.notebook_bytes
    assert LIMITS.file_cap("data.csv") == LIMITS.file_bytes
    # a learner's Validate is never stricter than the grader (fxcourse/validate.py declares it)
    assert ValidateLimits().cell_timeout >= LIMITS.cell_timeout


def second_names_of_limits(paths: list[Path], root: Path = ROOT) -> list[str]:
    """`module: NAME = LIMITS.limit` for each module-level name that is a limit under another
    name (a limit derived from one, `8 * LIMITS.data_items`, or a message naming it is not)."""
    found = []
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if not (
                isinstance(node, (ast.Assign, ast.AnnAssign))
                and isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "LIMITS"
            ):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            found += [f"{module_name(path, root)}: {n} = LIMITS.{value.attr}" for n in names]
    return sorted(found)


def test_no_module_gives_a_limit_a_second_name(tmp_path):
    """A limit is read as LIMITS.<its name> where it is used: a module-level alias (TIME_LIMIT_S
    for the report's time in one hub service and the progress reader's in another) is a second
    name for it."""
    assert second_names_of_limits(sorted(GRADER.rglob("*.py"))) == []
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "service.py").write_text("TIME_LIMIT_S = LIMITS.report_time\n")
    found = second_names_of_limits([tmp_path / "grader" / "service.py"], tmp_path)
    assert found == ["grader.service: TIME_LIMIT_S = LIMITS.report_time"]


def test_every_validate_reads_the_one_validate_timeout(tmp_path):
    """A learner's workspace, the student edition and the course's chapters/exercises/ (an
    instructor's Validate, the tests') give nbgrader fxcourse.validate's timeout, and none
    writes a number of its own."""
    from traitlets.config.loader import PyFileConfigLoader

    from fxcourse.workspace import write_nbgrader_config

    write_nbgrader_config(tmp_path, tmp_path / "exchange", "c1")
    edition = ROOT / "env" / "student-edition"
    (tmp_path / "edition").mkdir()
    shutil.copy(edition / "nbgrader_config.py", tmp_path / "edition")
    shutil.copy(ROOT / "course.json", tmp_path / "edition")
    exercises = ROOT / "chapters" / "exercises"
    for folder in (tmp_path, tmp_path / "edition", exercises):
        config = PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()
        assert config.Execute.timeout == ValidateLimits().cell_timeout, folder
    for path in (edition / "nbgrader_config.py", exercises / "nbgrader_config.py"):
        assert "Execute.timeout" not in path.read_text(), path
    assert not re.search(r"Execute\.timeout = \d", NBGRADER_CONFIG)


def test_the_limits_command_lists_every_limit(capsys, monkeypatch):
    from grader.safegrade.__main__ import main

    monkeypatch.chdir(ROOT)
    assert main(["limits", "--GradingLimits.budget=33"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"budget\s+33 s\s+configurable", out), out
    assert re.search(r"zip_entries\s+50000\s+fixed", out), out


# The top folders, bottom up: the learner's package, the author's tools, the grader.
PACKAGES = ("fxcourse", "courseware", "grader")
# Every import of a lower top folder by the grader, as the grader needs them today: a new one is
# a decision, made here, not a slip.
GRADER_USES_BELOW = {
    "grader.course -> fxcourse",
    "grader.course -> fxcourse.course_file",
    "grader.exercises -> courseware.i18n",
    "grader.exercises -> courseware.repository",  # the Repository of the course graded
    "grader.exercises -> fxcourse",
    "grader.exercises -> fxcourse.languages",
    "grader.exercises -> fxcourse.results",
    "grader.hub.jupyterhub_config -> fxcourse.workspace",
    "grader.hub.progress_service -> fxcourse.progress",
    "grader.hub.progress_service -> fxcourse.workspace",
    "grader.instructor -> courseware.notebooks",
    "grader.instructor -> fxcourse.stamps",
    "grader.report_model -> fxcourse.tryit",
    "grader.safegrade.assignments -> fxcourse",
    "grader.safegrade.assignments -> fxcourse.languages",
    "grader.safegrade.feedback_summary -> courseware.i18n",  # the grader's words, translated
    "grader.safegrade.feedback_summary -> courseware.repository",
    "grader.tools.sizing -> fxcourse.workspace",
}


def top_of(module: str) -> int:
    return PACKAGES.index(module.split(".")[0])


def imports_between_top_folders(graph: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """(upward, unlisted): imports of a higher top folder (fxcourse -> courseware, anything ->
    grader, ...), and the grader's imports of a lower one that GRADER_USES_BELOW does not list."""
    crossing = [
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if top_of(target) != top_of(module)
    ]
    upward = sorted(f"{m} -> {t}" for m, t in crossing if top_of(t) > top_of(m))
    down = {f"{m} -> {t}" for m, t in crossing if top_of(t) < top_of(m) and m.startswith("grader")}
    return upward, sorted(down - GRADER_USES_BELOW)


def test_the_top_folders_import_only_downward_and_the_grader_only_where_listed():
    graph = import_graph(PACKAGES)
    assert {top_of(module) for module in graph} == set(range(len(PACKAGES)))
    upward, unlisted = imports_between_top_folders(graph)
    assert upward == [], "the learner's package or the author's tools import a higher folder"
    assert unlisted == [], "new imports of fxcourse/courseware by the grader: list them"
    crossing = {
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if module.startswith("grader") and not target.startswith("grader")
    }
    assert crossing == GRADER_USES_BELOW, "a listed import is gone: take it off the list"


def test_an_upward_import_between_top_folders_fails_the_check(tmp_path):
    """The walker and the check on files of their own: the learner's package importing the
    grader (at the top) or the author's tools (inside a function), the author's tools importing
    the grader, and the grader reaching for an unlisted learner module are each caught."""
    files = {
        "fxcourse/__init__.py": "",
        "fxcourse/tryit.py": "from grader.course import Course\n",
        "fxcourse/cases.py": "def f():\n    from courseware import i18n\n",
        "courseware/__init__.py": "",
        "courseware/i18n.py": "import grader.report\nimport fxcourse.cases\n",
        "grader/course.py": "",
        "grader/report.py": "from fxcourse import cases\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    upward, unlisted = imports_between_top_folders(import_graph(PACKAGES, tmp_path))
    assert upward == [
        "courseware.i18n -> grader.report",
        "fxcourse.cases -> courseware",
        "fxcourse.cases -> courseware.i18n",
        "fxcourse.tryit -> grader.course",
    ]
    assert unlisted == ["grader.report -> fxcourse", "grader.report -> fxcourse.cases"]


def test_an_import_by_import_module_counts_as_an_import(tmp_path):
    """importlib.import_module("name") (also relative, with its package) and __import__("name")
    import as much as an import statement: the sandbox reaching up for the command line that way,
    or the author's tools for the grader, fail."""
    files = {
        "grader/__init__.py": "",
        "grader/course_grader.py": "",
        "grader/course.py": "",
        "grader/safegrade/__init__.py": "",
        "grader/safegrade/cgroup.py": (
            "import importlib\n\n\ndef sneak():\n"
            '    return importlib.import_module("grader.course_grader")\n'
        ),
        "grader/safegrade/kernel.py": '__import__("grader.course_grader")\n',
        "grader/safegrade/sandbox.py": (
            'import importlib\n\nimportlib.import_module(".course", "grader")\n'
        ),
        "courseware/__init__.py": "",
        "courseware/notebooks.py": (
            'from importlib import import_module\n\nimport_module("grader.course")\n'
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(("courseware", "grader"), tmp_path)
    assert upward_imports({m: t for m, t in graph.items() if m.startswith("grader")}) == [
        "grader.safegrade.cgroup -> grader.course_grader",
        "grader.safegrade.kernel -> grader.course_grader",
        "grader.safegrade.sandbox -> grader.course",
    ]
    upward, _ = imports_between_top_folders(graph)
    assert upward == ["courseware.notebooks -> grader.course"]


# Imports by a name computed at run time, which the import graph cannot see, each with its why.
COMPUTED_IMPORTS = {
    # the sandbox worker preloads the modules the grading limits list, before the submission
    # runs (what it may import is the sandbox's business, not the layering's)
    "grader/safegrade/worker.py": "preimport",
}


def test_every_import_of_the_course_names_its_module_literally():
    """An import_module(name) with a computed name would hide an import from the layering test
    above; only the listed functions may compute theirs."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            if lines := unread_import_calls(tree):
                found[path.relative_to(ROOT).as_posix()] = enclosing_functions(tree, lines)
    assert found == {path: {name} for path, name in COMPUTED_IMPORTS.items()}


def enclosing_functions(tree: ast.AST, lines: list[int]) -> set[str]:
    """The names of the functions holding `lines` ("<module>" for a line at the top)."""
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return {
        next((f.name for f in functions if f.lineno <= line <= f.end_lineno), "<module>")
        for line in lines
    }


def test_a_computed_import_is_seen():
    tree = ast.parse("import importlib\n\ndef load(n):\n    return importlib.import_module(n)\n")
    assert enclosing_functions(tree, unread_import_calls(tree)) == {"load"}
    assert unread_import_calls(ast.parse('__import__("os")\n')) == []


# File names Jupyter and Python fix (one per folder that needs it).
SHARED_NAMES = {"__init__.py", "__main__.py", "jupyter_server_config.py", "nbgrader_config.py"}


def test_no_two_modules_of_the_course_share_a_name():
    """Two modules of one name (graphs.py drawing graphs for learners and graphs.py decoding
    them for the grader) read as one in a traceback, a search or an import: each says its job."""
    paths = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
    names = [path.name for path in paths if path.name not in SHARED_NAMES]
    assert sorted({name for name in names if names.count(name) > 1}) == []


# The modules that write grades while grading (the sandbox's bookkeeping) may use nbgrader's
# gradebook; everything that reads a learner's result (export, report, feedback, the hub, the
# bench) reads the typed record grader/standings.py builds from the gradebook and the grader's
# result file. Raw database access (sqlite3, SQLAlchemy) counts as opening the gradebook.
GRADEBOOK_READERS = {"grader.standings"}
GRADEBOOK_WRITERS = {"grader.safegrade.bookkeeping", "grader.safegrade.gradebook"}
GRADEBOOK_MODULES = ("nbgrader.api", "sqlite3", "sqlalchemy")


def gradebook_users(paths: list[Path], root: Path = ROOT) -> set[str]:
    """The modules among `paths` that import nbgrader's gradebook (nbgrader.api) or a database
    driver, by import statement or import_module/__import__, at the top or in a function."""
    found = set()
    for path in paths:
        package = module_name(path, root).rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            for name in imported_names(node, package):
                if any(name == m or name.startswith(f"{m}.") for m in GRADEBOOK_MODULES):
                    found.add(module_name(path, root))
    return found


def test_export_and_report_read_results_only_through_the_typed_record(tmp_path):
    users = gradebook_users(sorted(GRADER.rglob("*.py")))
    assert users == GRADEBOOK_READERS | GRADEBOOK_WRITERS
    (tmp_path / "grader").mkdir()  # the check sees a reader that opens the gradebook itself
    (tmp_path / "grader" / "report.py").write_text("def f():\n    from nbgrader.api import X\n")
    assert gradebook_users([tmp_path / "grader" / "report.py"], tmp_path) == {"grader.report"}


def test_raw_sql_on_a_gradebook_outside_the_standings_fails_the_check(tmp_path):
    """The bench once summed the gradebook's points with its own SQL (sqlite3): each way a
    module can reach the database without nbgrader's API is caught."""
    (tmp_path / "grader" / "tools").mkdir(parents=True)
    raw = {
        "bench": "import sqlite3\n",
        "sizing": "def f():\n    from sqlite3 import connect\n",
        "load": "import importlib\nimportlib.import_module('sqlite3')\n",
        "engine": "from sqlalchemy import create_engine\n",
    }
    for name, source in raw.items():
        (tmp_path / "grader" / "tools" / f"{name}.py").write_text(source)
    paths = sorted((tmp_path / "grader" / "tools").glob("*.py"))
    assert gradebook_users(paths, tmp_path) == {f"grader.tools.{name}" for name in raw}


# What reads one submission's result files (safegrade/result_files.py): the grader's own layer,
# and above it only grader/standings.py, which every reader of a learner's result goes through.
RESULT_FILE_READS = {"load", "load_tests", "recorded", "read_result", "result_path", "tests_path"}


def result_file_readers(paths: list[Path], root: Path = ROOT) -> set[str]:
    """The modules among `paths`, outside safegrade, that use result_files' readers."""
    found = set()
    for path in paths:
        module = module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text())):
            used = set()
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("result_files"):
                used = {alias.name for alias in node.names}
            elif (
                isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "result_files"
            ):
                used = {node.attr}
            if used & RESULT_FILE_READS and not module.startswith("grader.safegrade"):
                found.add(module)
    return found


def test_only_the_standings_read_a_submissions_result_files(tmp_path):
    assert result_file_readers(sorted(GRADER.rglob("*.py"))) == {"grader.standings"}
    (tmp_path / "grader").mkdir()  # the check sees a reader with its own path and load
    own = "from grader.safegrade.result_files import load\n"
    (tmp_path / "grader" / "similarity.py").write_text(own)
    assert result_file_readers([tmp_path / "grader" / "similarity.py"], tmp_path) == {
        "grader.similarity"
    }


# Where the author's tools and the grader find a folder from a module's own location, at import:
# "this checkout" once per side (the default every function's Repository or Course falls back to),
# and folders of code beside the module (not the course's folders). Anything else takes a
# Repository (courseware/repository.py) or a Course (grader/course.py).
LOCATED_AT_IMPORT = {
    "courseware.repository": {"HERE"},  # this checkout, for the author's tools
    "courseware.website": {"CONF"},  # the site's Sphinx configuration, beside its code
    "grader.course": {"REPOSITORY"},  # this checkout, for the grader
    "grader.nbgrader_config": {"course"},  # nbgrader's configuration: the Course it is loaded in
    "grader.hub.settings": {"HUB_DIR"},  # the hub's own configuration files
    "grader.safegrade.visibility": {"PACKAGE_DIR"},  # the sandbox's own modules
    # a Jupyter configuration file, loaded by path (it imports nothing of the course)
    "grader.hub.jupyter.common.jupyter_server_config": {"COURSE"},
}


def top_level_names_set(paths: list[Path], root: Path, sets_them) -> dict[str, set[str]]:
    """module -> the names its top level assigns in a statement for which sets_them(node)."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, ast.AnnAssign) else []
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names and sets_them(node):
                found.setdefault(module_name(path, root), set()).update(names)
    return found


def located_at_import(paths: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the names its top level sets from its own file's location (__file__)."""

    def uses_file(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node))

    return top_level_names_set(paths, root, uses_file)


# Functions of the author's tools and the grader that find a folder from their own file: the
# command line's default course (the course its script is in), a script that runs itself, the
# code's own makefiles. Not a course's exercises or configuration: those come from the Course.
LOCATED_IN_FUNCTIONS = {
    "grader.course_grader.course_root",
    "grader.hub.classroom.refresh_course_folder",
    "grader.make_variables.known_names",
}


def located_in_functions(paths: list[Path], root: Path = ROOT) -> set[str]:
    """module.function for each function that uses its module's own location (__file__)."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node)
            ):
                found.add(f"{module_name(path, root)}.{node.name}")
    return found


def test_no_function_falls_back_to_this_checkouts_course(tmp_path):
    """A course's exercises and class languages are its own: a folder without solutions/ or
    nbgrader_config.py has none, not this checkout's."""
    paths = sorted(
        p for package in ("courseware", "grader") for p in (ROOT / package).rglob("*.py")
    )
    assert located_in_functions(paths) == LOCATED_IN_FUNCTIONS
    (tmp_path / "grader").mkdir()
    fallback = "def of_course(course):\n    return names(Path(__file__).resolve().parents[1])\n"
    (tmp_path / "grader" / "exercises.py").write_text(fallback)
    found = located_in_functions([tmp_path / "grader" / "exercises.py"], tmp_path)
    assert found == {"grader.exercises.of_course"}


# What reads a course's identity or folders (its course.json, its solutions/, its catalogs): called
# at a module's top level, it fixes one course (this checkout's) for every caller.
COURSE_READS = {
    "course_kernel", "settings", "configured", "of_course", "assignments_of", "catalogs_of",
    "installed_catalogs", "classdata", "shared_exchange", "course_notebooks", "exchange_root",
}  # fmt: skip


def course_read_at_import(paths: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the names its top level sets by calling one of COURSE_READS."""

    def reads_course(node: ast.AST) -> bool:
        calls = [n.func for n in ast.walk(node) if isinstance(n, ast.Call)]
        return bool({getattr(f, "attr", getattr(f, "id", "")) for f in calls} & COURSE_READS)

    return top_level_names_set(paths, root, reads_course)


# The learner's package finds its own checkout (the learner's course) and files of its own.
LEARNER_LOCATED_AT_IMPORT = {
    "fxcourse.course_file": {"THIS_COURSE"},  # the learner's checkout, the default of each reader
    "fxcourse.workspace": {"ROOT"},
    "fxcourse.selfcheck": {"ROOT"},
    "fxcourse.messages": {"LOCALES"},  # the package's own catalogs and answers
    "fxcourse.reference": {"REFERENCES_FILE"},
    "fxcourse.shown_answers": {"ANSWERS_FILE"},
}


def test_no_module_of_the_tools_or_the_grader_finds_the_courses_folders_in_a_global(tmp_path):
    paths = sorted(
        p for package in ("courseware", "grader") for p in (ROOT / package).rglob("*.py")
    )
    assert located_at_import(paths) == LOCATED_AT_IMPORT
    learners = sorted((ROOT / "fxcourse").rglob("*.py"))
    assert located_at_import(learners) == LEARNER_LOCATED_AT_IMPORT
    # nor reads a course's identity at import (only nbgrader's configuration, loaded in one)
    assert course_read_at_import([*paths, *learners]) == {"grader.nbgrader_config": {"course"}}
    (tmp_path / "courseware").mkdir()  # the check sees the globals the tools had
    old = 'ROOT = Path(__file__).resolve().parents[1]\nSOURCES = ROOT / "solutions"\n'
    (tmp_path / "courseware" / "authoring.py").write_text(old)
    found = located_at_import([tmp_path / "courseware" / "authoring.py"], tmp_path)
    assert found == {"courseware.authoring": {"ROOT"}}
    kernel = 'KERNELSPEC = {**course_kernel(), "language": "python"}\n'
    (tmp_path / "courseware" / "notebooks.py").write_text(kernel)
    found = course_read_at_import([tmp_path / "courseware" / "notebooks.py"], tmp_path)
    assert found == {"courseware.notebooks": {"KERNELSPEC"}}


# The functions that may take this checkout's course without being told (Course.configured() with
# no folder, or this checkout's Repository/REPOSITORY used in a body, not as a visible default):
# the command lines and services whose course is the one they were started in. Every other
# function is given its course (or the folders it reads) by its caller.
THIS_CHECKOUT = {"HERE", "REPOSITORY", "THIS_COURSE"}
CHECKOUT_READERS = {
    "grader.report.main",  # --course, default: the course it is run in
    "grader.similarity.main",
    "grader.instructor.copy_course",  # origin: default, this code's course
    "grader.hub.progress_service.course_shape",  # the service's own course
    "grader.hub.settings.from_environ",  # the hub's settings: the checkout it runs in, unless given
    "grader.hub.classroom.service_unit",  # the checkout the unit runs `make hub` in
    "grader.tools.bench.main",  # the bench and the sizing measure this code's grader
    "grader.tools.sizing.grading_cost",
}


def hidden_checkout_reads(paths: list[Path], root: Path = ROOT) -> set[str]:
    """module.function for each function whose body takes this checkout's course unasked: calls
    `configured()` with no argument, or names one of THIS_CHECKOUT (a default parameter is seen
    by every caller and is not counted)."""
    found = set()
    for path in paths:
        module = module_name(path, root)
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in (n for statement in function.body for n in ast.walk(statement)):
                bare_call = (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", getattr(node.func, "id", "")) == "configured"
                    and not node.args
                    and not any(k.arg == "root" for k in node.keywords)
                )
                if bare_call or (isinstance(node, ast.Name) and node.id in THIS_CHECKOUT):
                    found.add(f"{module}.{function.name}")
    return found


def test_no_function_reads_this_checkouts_course_behind_its_callers_back(tmp_path):
    """similarity once counted this checkout's published starters and chapters as given code in
    any course it compared (a folder of LMS submissions, another course): the course it reads is
    its caller's. Both ways it was written are caught."""
    paths = sorted(
        p for package in ("courseware", "grader") for p in (ROOT / package).rglob("*.py")
    )
    assert hidden_checkout_reads(paths) == CHECKOUT_READERS
    (tmp_path / "grader").mkdir()
    old = (
        "def starters(course, assignment):\n    home = Course.configured()\n"
        "def boilerplate(course):\n    return Course.configured().source.glob('*')\n"
        "def sources(course):\n    return REPOSITORY / 'solutions'\n"
        "def told(course=Course.configured(), root=REPOSITORY):\n    return course\n"
    )
    (tmp_path / "grader" / "similarity.py").write_text(old)
    found = hidden_checkout_reads([tmp_path / "grader" / "similarity.py"], tmp_path)
    assert found == {f"grader.similarity.{f}" for f in ("starters", "boilerplate", "sources")}
