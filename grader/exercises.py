"""The course's exercises, found in its `solutions/` folder: an exercise is a folder
`solutions/<name>/` that holds nbgrader's source notebook `<name>.ipynb` (with its solutions),
beside it `verify.py` (the checks learners read), `probes.py`, `checks.py` and `solution.py` (the
grader's, never released; grader/safegrade/README.md, "Writing an exercise"; solution.py is the
notebook's solution cells, written by `make chapters`). Nothing outside that folder names
an exercise: adding one is adding its folder, then `make release`.

Each exercise with a translation (its catalogs in courseware/locale/<code>/) is also an assignment
of its own in that language, `<name>-<code>` (`translated`): a source folder `make release` writes
from the English one and the catalogs (git-ignored), whose notebook, verify.py and checks.py speak
that language. It has its own gradebook entries (the translated cells, their checksums) and is
graded by the same hidden tests (the same probes.py, checks.py's code with its messages
translated); the export and the report count it as its exercise (`exercise_of`). A class has the
translations its configuration names (`ClassLanguages.languages`, grader/nbgrader_config.py):
English only unless the instructor adds one, so `make release` writes and generates no other.

`make release` (and the formgrader's Generate) writes the hidden part of each test cell from its
`grade_id` (WriteHiddenTests, set up by `configure`): the source notebooks hold none.

    python -m grader.exercises generate [NBGRADER-OPTIONS] NAME...
        nbgrader generate_assignment --force for each exercise, in one process
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from traitlets import List, TraitError, Unicode, validate
from traitlets.config import Config, Configurable

from grader.safegrade.assignments import catalogs_of, languages_of, split, translated

SOURCE = Path("solutions")  # solutions/<name>/<name>.ipynb: nbgrader's source layout
HIDDEN_TESTS = """### BEGIN HIDDEN TESTS
from grader.safegrade.kernel import run_check

run_check({assignment}, {grade_id}, globals())
### END HIDDEN TESTS"""


def names(course: Path) -> tuple[str, ...]:
    """The exercises of the course at `course`, sorted: each folder of its solutions/ that holds
    a notebook of the folder's own name, except the translations make release writes there."""
    folder = course / SOURCE
    found = (path.name for path in folder.iterdir() if path.is_dir()) if folder.is_dir() else ()
    found = [name for name in found if (folder / name / f"{name}.ipynb").is_file()]
    catalogs = catalogs_of(course)
    return tuple(sorted(name for name in found if split(name, catalogs)[0] == name))


def of_course(course: Path) -> tuple[str, ...]:
    """The exercises of the course at `course`, found in its solutions/ (none without one)."""
    return names(course)


def translations_of(exercise: str, catalogs: Path | None = None) -> tuple[str, ...]:
    """The assignments that are `exercise` in another language (of `catalogs`: catalogs_of the
    course)."""
    return tuple(translated(exercise, code) for code in languages_of(exercise, catalogs))


class ClassLanguages(Configurable):
    """The languages of the class (grader/nbgrader_config.py: `c.ClassLanguages.languages`)."""

    languages = List(
        Unicode(),
        default_value=["en"],
        help=(
            "The languages the class's learners read, codes of fxcourse/languages.py: each "
            "exercise is released in each (`make release`: `<exercise>-<code>` for a "
            "translation, with its notebook and test messages in that language). English, the "
            "exercise itself, is always released; the default is English only."
        ),
    ).tag(config=True)

    @validate("languages")
    def _known(self, proposal):
        from fxcourse import languages

        if unknown := [code for code in proposal.value if code not in languages.codes()]:
            raise TraitError(
                f"ClassLanguages.languages: no language {', '.join(map(repr, unknown))} in "
                f"fxcourse/languages.py (there are {', '.join(languages.codes())})"
            )
        return proposal.value


def class_languages(course: Path) -> tuple[str, ...]:
    """The translations the class at `course` is given (ClassLanguages in the nbgrader
    configuration of the course; none for a folder without one)."""
    from traitlets.config.loader import PyFileConfigLoader

    from fxcourse.languages import translation_codes

    if (course / "nbgrader_config.py").is_file():
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    else:  # a scratch folder of submissions only: a class that reads English
        config = Config()
    try:
        named = ClassLanguages(config=config).languages
    except TraitError as error:  # a slip in the instructor's configuration: say it, no traceback
        raise SystemExit(f"{course / 'nbgrader_config.py'}: {error}") from error
    return tuple(code for code in translation_codes() if code in named)


def assignments_of(course: Path) -> tuple[str, ...]:
    """Every nbgrader assignment of the class at `course`: each exercise, then its translations
    into the class's languages (class_languages)."""
    chosen, catalogs = class_languages(course), catalogs_of(course)
    return tuple(
        name
        for exercise in of_course(course)
        for name in (
            exercise,
            *(translated(exercise, c) for c in languages_of(exercise, catalogs) if c in chosen),
        )
    )


def possible_assignments(course: Path) -> tuple[str, ...]:
    """Every assignment the course can have, whatever its class's languages: each exercise and
    each translation its catalogs hold (the names an LMS download may carry)."""
    catalogs = catalogs_of(course)
    return tuple(
        name
        for exercise in of_course(course)
        for name in (exercise, *translations_of(exercise, catalogs))
    )


def near_name(name: str, course: Path) -> str:
    """'; did you mean 'X'?' for a slip of an assignment's name: the closest assignment, else the
    one exercise it starts like (the exercise, not its translation), else ''."""
    from grader.intake.names import near_match

    return near_match(name, assignments_of(course)) or near_match(name, of_course(course))


def exercise_of(assignment: str, catalogs: Path | None = None) -> str:
    """The exercise an assignment is (itself, or the exercise it translates; `catalogs`:
    catalogs_of the course)."""
    return split(assignment, catalogs)[0]


def write_translations(course: Path) -> tuple[str, ...]:
    """The source folder of each exercise's translation into the class's languages written, and
    those of the languages the class no longer has removed; returns the class's assignments."""
    import shutil

    chosen, catalogs = class_languages(course), catalogs_of(course)
    for exercise in of_course(course):
        for language in languages_of(exercise, catalogs):
            if language in chosen:
                write_translation(course, exercise, language)
            else:  # the formgrader lists every source folder as an assignment
                shutil.rmtree(course / SOURCE / translated(exercise, language), ignore_errors=True)
    return assignments_of(course)


def write_translation(course: Path, exercise: str, language: str) -> Path:
    """The source folder of `exercise` in `language`, from the English one and the catalogs:
    the notebook (solutions and tests' messages translated, nbgrader metadata as it is), verify.py
    and checks.py (messages translated, code the same), probes.py and solution.py as they are; the
    notebook's second cell sets fxcourse's messages to the language (i18n.add_language_cell)."""
    import shutil

    import nbformat

    from courseware.i18n import Document, add_language_cell, lookup_of, translate_notebook

    repository = repository_of(course)
    source, name = course / SOURCE / exercise, translated(exercise, language)
    target = course / SOURCE / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for module in ("probes.py", "solution.py"):  # code only: the same in every language
        if (source / module).is_file():
            shutil.copy(source / module, target)
    # The catalog holds the released notebook's text, whose links are one folder deeper.
    notebook = one_folder_deeper(nbformat.read(source / f"{exercise}.ipynb", as_version=4))
    notebook = translate_notebook(notebook, lookup_of(exercise, language, repository), asserts=True)
    add_language_cell(notebook, language, exercise=True)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace("](../../", "](../")
    nbformat.write(notebook, target / f"{name}.ipynb")
    for module, grader in (("verify", False), ("checks", True)):
        document = Document(
            f"{exercise}.{module}",
            source / f"{module}.py",
            True,
            grader=grader,
            repository=repository,
        )
        (target / f"{module}.py").write_text(document.translated(language), encoding="utf-8")
    return target


def repository_of(course: Path):
    """courseware's Repository of the course at `course`, reading its catalogs (catalogs_of)."""
    from courseware.repository import Repository

    return Repository(course, catalogs=catalogs_of(course))


def is_test_cell(cell) -> bool:
    """An autograded test cell: graded, and not a cell the learner answers in."""
    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    return cell.cell_type == "code" and nbgrader.get("grade") and not nbgrader.get("solution")


def hidden_tests(assignment: str, grade_id: str) -> str:
    """The hidden part of a test cell: in the sandbox the cell is replaced by its probe and
    check; under plain nbgrader this runs the same probe and check in the kernel."""
    return HIDDEN_TESTS.format(assignment=json.dumps(assignment), grade_id=json.dumps(grade_id))


def with_hidden_tests(nb, assignment: str, folder: Path | None = None):
    """The source notebook `nb` with each test cell's hidden part written after its visible
    part (in place; returned). A test cell that already has one is refused: the part is written
    here, from the grade_id, and nowhere else; so is one without a probe and a check in `folder`."""
    if folder is not None:
        from grader.release_checks import refuse_untested

        refuse_untested(assignment, folder, [c for c in nb.cells if is_test_cell(c)])
    for cell in (cell for cell in nb.cells if is_test_cell(cell)):
        grade_id = cell.metadata.nbgrader["grade_id"]
        if "BEGIN HIDDEN TESTS" in cell.source:
            raise ValueError(
                f"{assignment}: the test cell {grade_id} has a hidden part; remove it: make "
                "release writes it from the cell's grade_id"
            )
        cell.source = f"{cell.source.rstrip()}\n{hidden_tests(assignment, grade_id)}"
    return nb


def write_hidden_tests_step():
    """nbgrader's preprocessor class that runs with_hidden_tests (imports nbgrader)."""
    from nbgrader.preprocessors import NbGraderPreprocessor

    class WriteHiddenTests(NbGraderPreprocessor):
        """Writes each test cell's hidden part from its grade_id, before nbgrader saves the
        cells to the gradebook (the autograder runs them) and clears them from the release."""

        def preprocess(self, nb, resources):
            folder = Path(resources["metadata"]["path"])  # the source notebook's folder
            return with_hidden_tests(nb, resources["nbgrader"]["assignment"], folder), resources

    return WriteHiddenTests


class RecordingVerify:
    """GenerateAssignment's post_convert_hook: the released verify.py of the exercise ends in
    fxcourse.results.RECORDING, so that a learner's test cells, which import it, are recorded
    for `make progress` (an exercise's own verify.py does not repeat it)."""

    def __init__(self, release: Path):
        self.release = Path(release)

    def __call__(self, assignment: str, student: str, notebooks: list[str]) -> None:
        from fxcourse.results import with_recording

        for folder in {Path(notebook).parent.name for notebook in notebooks}:
            verify = self.release / folder / "verify.py"
            try:  # nbgrader logs a hook's exception at INFO only: say it here
                if verify.is_file():
                    text = with_recording(verify.read_text(encoding="utf-8"))
                    verify.write_text(text, encoding="utf-8")
            except OSError as error:
                print(f"{verify}: the recording not written ({error})", file=sys.stderr)
                raise


def configure(c, release: Path) -> None:
    """The course configuration's part: GenerateAssignment writes the hidden tests first, and
    the recording at the end of each verify.py it releases into `release`."""
    from nbgrader.converters import GenerateAssignment

    steps = GenerateAssignment.class_traits()["preprocessors"].default()
    c.GenerateAssignment.preprocessors = [write_hidden_tests_step(), *steps]
    c.GenerateAssignment.post_convert_hook = RecordingVerify(release)


def code_stub(exercise: str, language: str, course: Path) -> dict[str, str]:
    """nbgrader's stubs of answer cells with their comment in `language` (the exercise's
    catalog of the course at `course` translates it, as it does in the practice copy)."""
    from nbgrader.preprocessors import ClearSolutions

    from courseware.i18n import lookup_of

    stub = ClearSolutions.class_traits()["code_stub"].default()["python"]
    comment = stub.partition("\n")[0].lstrip("# ")
    said = lookup_of(exercise, language, repository_of(course)).get(comment) or comment
    return {"python": stub.replace(comment, said)}


def generate(argv: list[str]) -> int:
    """nbgrader generate_assignment for each NAME in argv (options apply to all), in this one
    process: starting nbgrader costs seconds, and one glob cannot name exactly the exercises."""
    from nbgrader.apps import GenerateAssignmentApp

    options = [arg for arg in argv if arg.startswith("-")]
    for name in (arg for arg in argv if not arg.startswith("-")):
        app = GenerateAssignmentApp()
        app.initialize([name, "--force", *options])
        course = Path(app.coursedir.root)
        exercise, language = split(name, catalogs_of(course))
        if language:  # the stub in an answer cell ("YOUR CODE HERE") in the notebook's language
            app.config.ClearSolutions.code_stub = code_stub(exercise, language, course)
        try:
            app.start()
        except SystemExit as stop:
            if stop.code:
                return int(stop.code) if isinstance(stop.code, int) else 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["generate"]:
        sys.exit(__doc__.split("\n\n")[-1])
    sys.exit(generate(sys.argv[2:]))


def one_folder_deeper(notebook):
    """The notebook's relative links to the chapters (`../NN_….ipynb`, written for
    solutions/<assignment>/) as seen from chapters/exercises/<assignment>/, with nbgrader's
    checksums of the cells that changed made again (so `nbgrader validate` accepts them)."""
    from nbgrader.utils import compute_checksum

    for cell in notebook.cells:
        if cell.cell_type == "markdown" and "](../" in cell.source:
            cell.source = cell.source.replace("](../", "](../../")
            if "checksum" in cell.metadata.get("nbgrader", {}):
                cell.metadata.nbgrader["checksum"] = compute_checksum(cell)
    return notebook
