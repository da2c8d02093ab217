"""An assignment's name and language: `<exercise>` is the exercise in English, `<exercise>-<code>`
the same exercise in a translation whose catalogs it has (grader/exercises.py writes those). Here,
below every layer that asks (the sandbox's preprocessors tell the grader's messages in the
assignment's language), with the standard library and fxcourse.languages only.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def catalogs() -> Path:
    """courseware.i18n's catalogs, found without importing it: the installed course's, so that a
    course copy (which holds no courseware/: instructor.copy_course) reads the same ones."""
    import importlib.util

    spec = importlib.util.find_spec("courseware")
    found = spec.submodule_search_locations if spec else None
    return (
        Path(found[0] if found else Path(__file__).resolve().parents[2] / "courseware") / "locale"
    )


def translated(exercise: str, language: str) -> str:
    """The assignment that is `exercise` in `language` (a translation of fxcourse.languages)."""
    from fxcourse.languages import assignment

    return assignment(exercise, language)


def languages_of(exercise: str) -> list[str]:
    """The translations `exercise` has catalogs for (its notebook's, verify.py's, checks.py's)."""
    from fxcourse import languages  # standard library only: no nbformat to import, as i18n has

    needed = (exercise, f"{exercise}.verify", f"{exercise}.checks")
    return [
        code
        for code in languages.translation_codes()
        if all((catalogs() / code / f"{name}.po").is_file() for name in needed)
    ]


def split(assignment: str) -> tuple[str, str]:
    """(exercise, language) of an assignment: language "" for an exercise itself."""
    exercise, _, code = assignment.rpartition("-")
    if exercise and translated(exercise, code) == assignment and code in languages_of(exercise):
        return exercise, code
    return assignment, ""
