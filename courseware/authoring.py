"""Learner chapters and reference answers, derived from the instructor's chapter sources.

    python -m courseware.authoring build    write chapters/*.ipynb and fxcourse/answers.json
    python -m courseware.authoring check    exit 1 when they are stale (what `make test` checks)

The instructor edits only solutions/NN_*.ipynb. Each "Try it" there is a run of cells
whose metadata carries {"tryit": {"id": "1.1", "role": ROLE}}, in this order:

    scaffold   what the learner starts from (names, signature, `...`); must run without error
    mistake    one or more plausible wrong answers or shortcuts, each opening with a comment that
               says what is wrong; the checkpoint must reject every one of them. At least one
               is right only for the chapter's own example (names, sizes, one level deep) and
               says so in its metadata: {"tryit": {..., "example_only": true}}
    answer     the reference answer
    check      the checkpoint cell (fxcourse.tryit.checkpoint)

The learner chapter keeps the scaffold and the check and drops the mistakes and the answer; the
answers go to answers.json, which `show_answer` and the "Not yet" box read, and to
references.json, which the checkpoints run beside the learner's answer (every edition ships it,
also one without shown answers). An answer cell builds new objects and never changes one an
earlier cell made: the checkpoint runs it again, in a copy of the learner's namespace.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

import nbformat

from courseware import i18n, reference_solutions
from courseware.notebooks import clean, kernelspec
from courseware.reference_solutions import solution_module
from courseware.repository import HERE, Repository
from fxcourse import languages, stamps
from fxcourse.messages import _, speaking
from fxcourse.reference import defined_names

ROLES = ("scaffold", "mistake", "answer", "check")
LEARNER_ROLES = {"scaffold", "check"}
# A learner chapter's first code cell: a kernel without torch or fxcourse (Jupyter's default
# "Python 3", a kernel of another environment) stops here, saying which kernel to pick.
KERNEL_CHECK = """\
# {comment}
import importlib.util

if not (importlib.util.find_spec("torch") and importlib.util.find_spec("fxcourse")):
    raise ModuleNotFoundError(
        "{hint}"
    )"""


def kernel_check(language: str, repository: Repository = HERE) -> str:
    """The kernel check in `language` (its words from fxcourse/locale/<language>/fxcourse.po),
    naming the kernel of the course in `repository`."""
    with speaking(language):
        comment = _(
            "a kernel without the course's packages stops here, saying which kernel to pick"
        )
        hint = _("this kernel lacks the course's packages: Kernel > Change Kernel > {kernel}")
        hint = hint.format(kernel=kernelspec(repository.root)["display_name"])
    return KERNEL_CHECK.format(comment=comment, hint=hint)


def tryit_of(cell: nbformat.NotebookNode) -> tuple[str, str] | None:
    """(id, role) of a try-it cell, or None for an ordinary cell."""
    marker = cell.metadata.get("tryit")
    return (marker["id"], marker["role"]) if marker else None


def tryits(nb: nbformat.NotebookNode) -> dict[str, dict[str, list[int]]]:
    """id -> role -> the indices of its cells, in notebook order."""
    found: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, cell in enumerate(nb.cells):
        if marker := tryit_of(cell):
            found[marker[0]][marker[1]].append(index)
    return found


def problems(nb: nbformat.NotebookNode, chapter: str) -> list[str]:
    """What is wrong with a source chapter's try-its: roles missing, repeated or out of order."""
    found = []
    prefix = f"{int(chapter[:2])}."
    for tryit_id, roles in tryits(nb).items():
        where = f"{chapter}, try it {tryit_id}"
        if not tryit_id.startswith(prefix):
            found.append(f"{where}: ids in this chapter start with {prefix!r}")
        if unknown := set(roles) - set(ROLES):
            found.append(f"{where}: unknown role(s) {sorted(unknown)}")
        counts = {role: len(roles.get(role, [])) for role in ROLES}
        if counts["mistake"] < 1 or any(counts[r] != 1 for r in ("scaffold", "answer", "check")):
            found.append(f"{where}: want 1 scaffold, 1+ mistake, 1 answer, 1 check; got {counts}")
            continue
        order = [i for role in ROLES for i in roles[role]]
        if order != sorted(order) or order != list(range(order[0], order[0] + len(order))):
            found.append(f"{where}: cells must be adjacent, in the order {', '.join(ROLES)}")
        for index in roles["mistake"]:
            if not nb.cells[index].source.lstrip().startswith("#"):
                found.append(f"{where}: a mistake cell must open with a comment on what is wrong")
        found += [
            f"{where}: {problem}" for problem in check_cell_problems(nb.cells[roles["check"][0]])
        ]
    return found


def check_cell_problems(cell: nbformat.NotebookNode) -> list[str]:
    """A check cell runs in the learner's namespace, so whatever it binds at its top level
    replaces the learner's object of that name before the learner's code runs (a learner's own
    is_linear or SIGMOID_NODES). It binds only `goal`, the checkpoint block, and functions it
    imports from fxcourse by their own lowercase names (helpers live in fxcourse modules)."""
    found = []
    for statement in ast.parse(cell.source).body:
        if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith(
            "fxcourse."
        ):
            found += [
                f"the check cell imports {ast.unparse(alias)}: import a function by its own "
                "lowercase name"
                for alias in statement.names
                if alias.asname or alias.name != alias.name.lower()
            ]
        elif not _is_goal_or_checkpoint(statement):
            line = ast.unparse(statement).splitlines()[0]
            found.append(f"the check cell binds {line!r} at its top level: move it into fxcourse")
    return found


def _is_goal_or_checkpoint(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assign):
        return [ast.unparse(target) for target in statement.targets] == ["goal"]
    return isinstance(statement, ast.With) and ast.unparse(statement.items[0]).startswith(
        "checkpoint("
    )


def learner_version(
    nb: nbformat.NotebookNode,
    language: str = languages.SOURCE.code,
    repository: Repository = HERE,
) -> nbformat.NotebookNode:
    """The chapter as learners get it: no answers, no mistakes, no outputs, the kernel check
    first."""
    learner = nbformat.reads(nbformat.writes(nb), as_version=4)
    learner.cells = [
        cell
        for cell in learner.cells
        if (marker := tryit_of(cell)) is None or marker[1] in LEARNER_ROLES
    ]
    check = kernel_check(language, repository)
    first_code = next(i for i, cell in enumerate(learner.cells) if cell.cell_type == "code")
    # a fixed id: the derived chapter is the same on every build
    learner.cells.insert(first_code, nbformat.v4.new_code_cell(check, id="fxcourse-kernel-check"))
    return clean(learner, repository.root)


def answers_of(nb: nbformat.NotebookNode, chapter: str) -> dict[str, dict[str, str]]:
    return {
        marker[0]: {"chapter": chapter, "code": cell.source.strip()}
        for cell in nb.cells
        if (marker := tryit_of(cell)) and marker[1] == "answer"
    }


def references_of(nb: nbformat.NotebookNode) -> dict[str, dict]:
    """Per try-it: the answer's code (run by the checkpoint) and the names its scaffold defines
    (whose defining cell the checkpoint asks about first)."""
    found: dict[str, dict] = {}
    for cell in nb.cells:
        if marker := tryit_of(cell):
            entry = found.setdefault(marker[0], {"code": "", "defines": []})
            if marker[1] == "answer":
                entry["code"] = cell.source.strip()
            elif marker[1] == "scaffold":
                entry["defines"] = defined_names(cell.source)
    return found


def answers_text(answers: dict, sources: list[str]) -> str:
    stamped = stamps.stamp_json(answers, sources, "make chapters")
    return json.dumps(stamped, indent=1, ensure_ascii=False) + "\n"


def derived_files(repository: Repository = HERE) -> dict[Path, str]:
    """Every derived file (path -> text), each stamped with what it comes from (fxcourse.stamps):
    the learner chapters and answers.json, and the same in each translation (chapters/<lang>/,
    answers.<lang>.json, the exercise starters, the README)."""
    sources, shown = repository.sources, repository.shown
    derived: dict[Path, str] = {}
    answers: dict[str, dict[str, str]] = {}
    references: dict[str, dict] = {}
    errors = []
    for source in sorted(sources.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(source, as_version=4)
        errors += problems(nb, source.stem)
        learner = stamps.stamp_notebook(
            learner_version(nb, repository=repository), [shown(source)], "make chapters"
        )
        derived[repository.chapters / source.name] = nbformat.writes(learner) + "\n"
        answers.update(answers_of(nb, source.stem))
        references.update(references_of(nb))
    if errors:
        raise SystemExit("fix the chapter sources:\n  " + "\n  ".join(errors))
    derived[repository.answers] = answers_text(answers, [f"{shown(sources)}/NN_*.ipynb"])
    derived[repository.references] = answers_text(references, [f"{shown(sources)}/NN_*.ipynb"])
    derived.update(exercise_solutions(repository))
    for language in languages.translation_codes():
        derived.update(translated_files(language, repository))
    return derived


def exercise_solutions(repository: Repository = HERE) -> dict[Path, str]:
    """Each exercise's reference solution as the grader's checks import it (solution.py),
    from its notebook's solution cells (courseware.reference_solutions)."""
    derived = {}
    for folder in sorted(path for path in repository.sources.iterdir() if path.is_dir()):
        notebook, code = folder / f"{folder.name}.ipynb", folder.name.rpartition("-")[2]
        if not notebook.is_file() or code in languages.translation_codes():
            continue  # not an exercise, or a translation make release writes (git-ignored)
        module = solution_module(nbformat.read(notebook, as_version=4), folder.name)
        text = stamps.stamp_python(module, [repository.shown(notebook)], "make chapters")
        derived[folder / reference_solutions.FILE] = text
    return derived


def translated_files(language: str, repository: Repository = HERE) -> dict[Path, str]:
    """The learner's files in `language`, from the English ones and the catalogs."""
    derived: dict[Path, str] = {}
    answers: dict[str, dict[str, str]] = {}
    folder, shown = repository.chapters / language, repository.shown
    for document in i18n.documents(repository):
        if document.path.is_dir() or document.grader:  # checks.py: the grader's (release)
            continue
        translated = document.translated(language)
        exercise = folder / "exercises" / document.path.parent.name
        catalog = i18n.catalog_path(document.name, language, repository)
        origin = [shown(document.path), shown(catalog)]
        if document.path.suffix == ".py":  # a module beside an exercise (verify.py)
            text = stamps.stamp_python(translated, origin, "make chapters")
            derived[exercise / document.path.name] = text
        elif isinstance(translated, str):
            text = stamps.stamp_markdown(translated, origin, "make chapters")
            derived[document.path.with_suffix(f".{language}.md")] = text
        elif document.path.parent == repository.sources:
            i18n.add_language_cell(translated, language)
            learner = stamps.stamp_notebook(
                learner_version(translated, language, repository), origin, "make chapters"
            )
            derived[folder / document.path.name] = nbformat.writes(learner)
            answers.update(answers_of(translated, document.name))
        else:  # an exercise starter
            i18n.add_language_cell(translated, language, exercise=True)
            i18n.refresh_checksums(translated)
            stamps.stamp_notebook(translated, origin, "make chapters")
            derived[exercise / document.path.name] = nbformat.writes(translated)
    derived = {path: text if text.endswith("\n") else text + "\n" for path, text in derived.items()}
    catalogs = shown(i18n.catalog_path("NN_*", language, repository))
    derived[repository.answers.with_suffix(f".{language}.json")] = answers_text(
        answers, [f"{shown(repository.sources)}/NN_*.ipynb", catalogs]
    )
    return derived


def stale_files(repository: Repository = HERE) -> list[Path]:
    """Derived files missing or different from what the sources give, plus learner chapters
    that no source produces any more."""
    derived = derived_files(repository)
    stale = [p for p, text in derived.items() if not p.exists() or p.read_text() != text]
    chapters = repository.chapters.glob("**/[0-9][0-9]_*.ipynb")
    return stale + [p for p in chapters if p not in derived]


def build(repository: Repository = HERE) -> None:
    derived = derived_files(repository)
    for orphan in set(repository.chapters.glob("**/[0-9][0-9]_*.ipynb")) - set(derived):
        orphan.unlink()
        print(f"removed {repository.shown(orphan)} (no source)")
    for path, text in derived.items():
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {repository.shown(path)}")


def main(argv: list[str], repository: Repository = HERE) -> int:
    if argv == ["build"]:
        build(repository)
        return 0
    if argv == ["check"]:
        if stale := stale_files(repository):
            names = ", ".join(repository.shown(p) for p in stale)
            print(f"stale: {names}; run `make chapters`")
            return 1
        print("learner chapters and answers are up to date")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
