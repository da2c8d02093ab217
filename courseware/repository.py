"""Where the author's tools find the course's folders: one `Repository`, passed to every tool
(`make chapters`, the translations, the site, the student edition), never read from a global.

HERE is this checkout, found from the package's own location; a test builds a Repository of a
temporary tree (a course of one tiny chapter, or this course with catalogs copied elsewhere) and
hands it to the functions it calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Repository:
    """A course checkout: its sources, what is derived from them, and the catalogs."""

    root: Path
    catalogs: Path | None = None  # the author's catalogs, when not <root>/courseware/locale
    runtime_catalogs: Path | None = None  # fxcourse.po's folder, when not <root>/fxcourse/locale

    @property
    def sources(self) -> Path:
        """The instructor's chapter sources (solutions/NN_*.ipynb) and exercise folders."""
        return self.root / "solutions"

    @property
    def chapters(self) -> Path:
        """The learner chapters, derived by `make chapters` (a translation in chapters/<code>/)."""
        return self.root / "chapters"

    @property
    def exercises(self) -> Path:
        """The released exercise starters."""
        return self.chapters / "exercises"

    @property
    def package(self) -> Path:
        """The learner's package, fxcourse/."""
        return self.root / "fxcourse"

    @property
    def answers(self) -> Path:
        """The try-its' reference answers the learner's package shows (fxcourse.tryit)."""
        return self.package / "answers.json"

    @property
    def references(self) -> Path:
        """The reference answers the checkpoints run beside a learner's."""
        return self.package / "references.json"

    @property
    def locales(self) -> Path:
        """The author's catalogs: <code>/<name>.po and <code>/glossary.tsv."""
        return self.catalogs or self.root / "courseware" / "locale"

    @property
    def runtime_locales(self) -> Path:
        """The catalog of the learner's helpers (<code>/fxcourse.po), in the learner's package."""
        return self.runtime_catalogs or self.package / "locale"

    @property
    def edition_templates(self) -> Path:
        """The student edition's own Makefile and READMEs."""
        return self.root / "env" / "student-edition"

    @property
    def build(self) -> Path:
        """Intermediate builds (the site's sources and execution cache)."""
        return self.root / "build"

    @property
    def dist(self) -> Path:
        """What the tools hand out: the site, the student edition."""
        return self.root / "dist"

    def shown(self, path: Path) -> str:
        """`path` as a message or a stamp names it: from the root when it is inside it."""
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


HERE = Repository(Path(__file__).resolve().parents[1])
