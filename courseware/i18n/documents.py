"""The documents learners read, each with its catalog: chapters, exercise starters and the modules
beside them, the learner README, the helpers' messages, the grader's messages to a learner."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from courseware.i18n.apply import translate_markdown, translate_notebook
from courseware.i18n.catalogs import catalog_path, lookup_of, merged_catalog, problems
from courseware.i18n.extract import (
    Text,
    grader_messages,
    markdown_blocks,
    python_file_texts,
    python_messages,
    shown_source_texts,
    texts_of,
)
from courseware.repository import HERE, Repository
from fxcourse import stamps


@dataclass(frozen=True)
class Document:
    """Something learners read, its catalog's name, and whether assert messages count."""

    name: str
    path: Path
    asserts: bool = False
    # The grader's (checks.py): only its messages, translated into a copy the grader alone uses
    # (course_grader.release), never into chapters/.
    grader: bool = False
    # More packages whose `_()` messages share the catalog (the author's tools speak through
    # fxcourse.messages too: the site's labels, the student edition's README note).
    also: tuple[Path, ...] = ()
    repository: Repository = HERE  # where its catalog is

    def read(self) -> nbformat.NotebookNode | str:
        """The document, without the stamp of a derived file (a released verify.py's)."""
        if self.path.suffix == ".ipynb":
            return nbformat.read(self.path, as_version=4)
        text = self.path.read_text(encoding="utf-8")
        return stamps.unstamped_python(text) if self.path.suffix == ".py" else text

    def texts(self) -> list[Text]:
        if self.path.is_dir():
            packages = (self.path, *self.also)
            shown = shown_source_texts(self.path)
            return [text for path in packages for text in python_messages(path)] + shown
        content = self.read()
        if self.grader:
            return grader_messages(content)
        if self.path.suffix == ".py":
            return python_file_texts(content)
        if isinstance(content, str):
            return [Text(0, "markdown", block) for block in markdown_blocks(content)]
        return list(texts_of(content, self.asserts))

    def translated(self, language: str) -> nbformat.NotebookNode | str:
        content, lookup = self.read(), lookup_of(self.name, language, self.repository)
        if self.path.suffix == ".py":
            for text in dict.fromkeys(t.text for t in self.texts()):
                if lookup.get(text):
                    content = content.replace(text, lookup[text])
            return content
        if isinstance(content, str):
            return translate_markdown(content, lookup)
        return translate_notebook(content, lookup, self.asserts)


def documents(repository: Repository = HERE) -> list[Document]:
    """Chapter sources (answers included, mistakes not), exercise starters and the modules beside
    them (verify.py), the learner README, the messages of fxcourse and courseware, the messages of
    each exercise's hidden tests (its checks.py: grader=True) and the grader's own messages to a
    learner (grader/safegrade/wording.py)."""
    root, sources = repository.root, repository.sources
    chapters = sorted(sources.glob("[0-9][0-9]_*.ipynb"))
    starters = sorted(repository.exercises.glob("*/*.ipynb"))
    beside = [path for starter in starters for path in sorted(starter.parent.glob("*.py"))]
    checks = [sources / starter.parent.name / "checks.py" for starter in starters]
    found = (
        [Document(path.stem, path) for path in chapters]
        + [Document(path.stem, path, asserts=True) for path in starters]
        + [Document(f"{path.parent.name}.{path.stem}", path, asserts=True) for path in beside]
        + [Document("README", repository.edition_templates / "README.md")]
        + [Document("fxcourse", repository.package, also=(root / "courseware",))]
        + [Document(f"{p.parent.name}.checks", p, True, grader=True) for p in checks if p.is_file()]
        + [Document("safegrade", root / "grader" / "safegrade")]
    )
    return [replace(document, repository=repository) for document in found]


def update(language: str, names: list[str] | None = None, repository: Repository = HERE) -> None:
    for document in documents(repository):
        if names and document.name not in names:
            continue
        catalog = merged_catalog(document.name, language, document.texts(), repository)
        path = catalog_path(document.name, language, repository)
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog.save(str(path))
        todo = sum(1 for e in catalog if not e.msgstr or "fuzzy" in e.flags)
        print(f"{repository.shown(path)}: {len(catalog)} entries, {todo} to translate")


def all_problems(language: str, repository: Repository = HERE) -> list[str]:
    return [
        problem
        for doc in documents(repository)
        for problem in problems(doc.name, language, doc.texts(), repository)
    ]
