"""Build the student edition: a self-contained learner copy of the course, nothing secret inside.

    python -m courseware.edition [--out dist/student-edition] [--no-answers] [--language CODE]

It holds the learner chapters, the exercise starters, the learner's package fxcourse/ whole, the
pinned environment and a learner's Makefile and README (from env/student-edition/), and nothing of
solutions/, grader/, tests/ or the author's tools (courseware/). With --no-answers the try-its'
reference answers (fxcourse/answers*.json) stay out too. Its set-up enables only the learner's parts
of nbgrader (no formgrader, no create-assignment). Every translation of fxcourse.languages comes
along (its chapters, answers, messages and README); --language puts that language's README first.
The output folder is replaced as a whole.
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import subprocess
import sys
from pathlib import Path

from courseware.i18n import lookup_of
from courseware.repository import HERE, Repository
from fxcourse import languages
from fxcourse.messages import _, speaking

INCLUDE = [
    "chapters/[0-9][0-9]_*.ipynb",
    "chapters/exercises/*.ipynb",
    "chapters/exercises/*/verify.py",
    "chapters/exercises/nbgrader_config.py",
    "fxcourse/*",  # the learner's package whole (fnmatch's * crosses folders)
    "course.json",  # the course id (fxcourse.workspace, nbgrader_config.py)
    "env/requirements.in",
    "env/requirements.lock",
    "env/setup.sh",
    "env/environment_yml.py",
    "env/learner.mk",
    "env/jupyter-learner/*",
    "environment.yml",
    "pyproject.toml",
]
# The README's answer paragraph (a paragraph of its own, also in the translations).
README_ANSWERS = (
    'Stuck? Click **Stuck? Show a reference answer** under the "Not yet" message (your own '
    "cell is\nnever changed), or run "
    '`from fxcourse.tryit import show_answer; show_answer("1.2")` in a new cell.'
)


def readme_no_answers() -> str:
    """What a --no-answers edition's README says instead of README_ANSWERS."""
    return _(
        "This edition ships without reference answers: when stuck, reread the section the goal "
        "names or ask your instructor."
    )


# A translation's chapters (its answers and messages are fxcourse's files, shipped with it).
TRANSLATED = ["chapters/{code}/*.ipynb", "chapters/{code}/exercises/*/verify.py"]


def translated_patterns() -> list[str]:
    return [p.format(code=code) for code in languages.translation_codes() for p in TRANSLATED]


def answer_files() -> list[str]:
    return ["fxcourse/answers.json"] + [
        f"fxcourse/answers.{code}.json" for code in languages.translation_codes()
    ]


def readme_name(language: str) -> str:
    return "README.md" if language == languages.SOURCE.code else f"README.{language}.md"


def course_files(repository: Repository = HERE) -> list[str]:
    """Files git knows (tracked, or new and not ignored), relative to the course root."""
    root = repository.root
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [name for name in listed if (root / name).is_file()]


def selected(names: list[str], answers: bool) -> list[str]:
    """The course files an edition ships: the learner's package whole, the chapters and their
    translations, the environment; without answers, the try-its' reference answers stay out
    (data, not modules: the package's code is the same in both editions)."""
    patterns = INCLUDE + translated_patterns()
    left_out = set() if answers else set(answer_files())

    def wanted(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns) and name not in left_out

    return sorted(name for name in names if wanted(name))


def without_answers(readme: Path, language: str, repository: Repository = HERE) -> None:
    """Replace the README's answer paragraph (in its language) by what a no-answers edition says."""
    source = language == languages.SOURCE.code
    lookup = {} if source else lookup_of("README", language, repository)
    paragraph = README_ANSWERS if source else lookup[README_ANSWERS]
    text = readme.read_text(encoding="utf-8")
    if paragraph not in text:  # the template was reworded: keep the two in step
        raise SystemExit(f"{readme.name} lost the answers paragraph")
    with speaking(language):
        readme.write_text(text.replace(paragraph, readme_no_answers()), encoding="utf-8")


def build(
    out: Path,
    answers: bool = True,
    repository: Repository = HERE,
    language: str = languages.SOURCE.code,
) -> list[str]:
    """Write the edition to `out` (replacing it); returns the files copied from the course."""
    files = selected(course_files(repository), answers)
    if out.exists():
        shutil.rmtree(out)
    for name in files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repository.root / name, out / name)
    for template in repository.edition_templates.iterdir():
        shutil.copy2(template, out / template.name)
    if not answers:
        for readme_language in languages.codes():
            readme = out / readme_name(readme_language)
            without_answers(readme, readme_language, repository)
    if language != languages.SOURCE.code:  # the learner's language first, the English beside it
        (out / "README.md").rename(out / f"README.{languages.SOURCE.code}.md")
        (out / readme_name(language)).rename(out / "README.md")
    return files


def main(argv: list[str] | None = None, repository: Repository = HERE) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=repository.dist / "student-edition")
    parser.add_argument("--no-answers", action="store_true", help="leave out the try-it answers")
    parser.add_argument(
        "--language", choices=languages.codes(), default=languages.SOURCE.code, help="README.md's"
    )
    args = parser.parse_args(argv)
    files = build(args.out, not args.no_answers, repository, args.language)
    kind = "without" if args.no_answers else "with"
    print(f"wrote {args.out}: {len(files)} course files, {kind} the try-its' reference answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
