"""An assignment's name and language: `<exercise>` is the exercise in English, `<exercise>-<code>`
the same exercise in a translation whose catalogs it has (grader/exercises.py writes those). Here,
below every layer that asks (the sandbox's preprocessors tell the grader's messages in the
assignment's language), with the standard library and fxcourse.languages only.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


def catalogs_of(course: Path | None = None) -> Path:
    """The translation catalogs of the course at `course`: its own courseware/locale, else the
    installed courseware's (a course copy holds no courseware/: instructor.copy_course)."""
    own = Path(course) / "courseware" / "locale" if course is not None else None
    return own if own is not None and own.is_dir() else installed_catalogs()


@cache
def installed_catalogs() -> Path:
    """courseware.i18n's catalogs, found without importing it (none when it is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("courseware")
    found = spec.submodule_search_locations if spec else None
    return Path(found[0] if found else "courseware") / "locale"


def translated(exercise: str, language: str) -> str:
    """The assignment that is `exercise` in `language` (a translation of fxcourse.languages)."""
    from fxcourse.languages import assignment

    return assignment(exercise, language)


def languages_of(exercise: str, catalogs: Path | None = None) -> list[str]:
    """The translations `exercise` has catalogs for (its notebook's, verify.py's, checks.py's) in
    `catalogs` (catalogs_of a course; the installed ones when not given)."""
    from fxcourse import languages  # standard library only: no nbformat to import, as i18n has

    catalogs = catalogs or installed_catalogs()

    needed = (exercise, f"{exercise}.verify", f"{exercise}.checks")
    return [
        code
        for code in languages.translation_codes()
        if all((catalogs / code / f"{name}.po").is_file() for name in needed)
    ]


def split(assignment: str, catalogs: Path | None = None) -> tuple[str, str]:
    """(exercise, language) of an assignment: language "" for an exercise itself (and for a
    translation that `catalogs`, as languages_of reads them, do not hold)."""
    exercise, _, code = assignment.rpartition("-")
    if (
        exercise
        and translated(exercise, code) == assignment
        and code in languages_of(exercise, catalogs)
    ):
        return exercise, code
    return assignment, ""
