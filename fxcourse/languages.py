"""The course's languages, one entry each: everything that differs by language reads this list.

    python -m fxcourse.languages codes             every language, the source (English) first
    python -m fxcourse.languages translations      the languages translated from it
    python -m fxcourse.languages for-locale LANG   the course language for a locale such as
                                                   zh_CN.UTF-8 or zh (`make lab LANG=...`)
    python -m fxcourse.languages fonts             "CODE PACKAGE" for each language whose script
                                                   needs a font installed (env/setup.sh)

A translation is an entry here plus its catalogs, courseware/locale/<code>/ (*.po, glossary.tsv) and
fxcourse/locale/<code>/fxcourse.po (`make translations` creates them): `make chapters` then writes
chapters/<code>/ and fxcourse/answers.<code>.json, the site gets a <code>/ edition and a place in
the language switch, `make lab LANG=<code>` a workspace-<code>/ with JupyterLab's interface in that
language. The texts that tell a learner something (the kernel check, the site's labels) are messages
of fxcourse/locale/<code>/fxcourse.po, not fields here.

Standard library only: the makefiles ask this module before the course's environment exists.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str  # folders and file names: courseware/locale/<code>/, chapters/<code>/, site <code>/
    label: str  # the language's own name, as the site's language switch shows it
    sphinx: str  # Sphinx's `language` (its search and its theme's own words)
    lab_locale: str = ""  # JupyterLab's interface (a language pack in env/); "": its English
    search_words: bool = False  # Sphinx's search splits words with jieba: keep glossary terms whole
    # Sphinx's search for it names a stemmer it lacks (sphinx#14229): the site uses English's.
    english_stemmer: bool = False
    font_package: str = ""  # a Debian font for its script, when the usual fonts lack it (tests)
    font_family: str = ""  # that font's family name, for the pictures drawn in Python (charts)
    quotes: str = ""  # its prose's quotation marks (opening, closing) where ASCII's '"' is wrong
    # Its lines of env/requirements.in: JupyterLab's language pack for lab_locale, the word
    # splitter Sphinx's search uses (search_words). A test fails until env/requirements.in has
    # each and the lock pins it (`make lock` re-resolves it).
    requirements: tuple[str, ...] = ()

    @property
    def site_folder(self) -> str:
        """Where its edition of the site is, under the site's root: "" for the source."""
        return "" if self is SOURCE else f"{self.code}/"

    @property
    def search_code(self) -> str:
        """The key of its search in Sphinx's sphinx.search.languages (zh for zh_CN)."""
        return self.sphinx.split("_")[0]

    def python_packages(self) -> list[str]:
        """The names of the packages its requirement lines ask for (lower case)."""
        return [re.split(r"[<>=!~;\[ ]", line.strip())[0].lower() for line in self.requirements]


SOURCE = Language("en", "English", "en")
TRANSLATIONS = (
    Language(
        "zh",
        "中文",
        "zh_CN",
        lab_locale="zh_CN",
        search_words=True,
        english_stemmer=True,
        font_package="fonts-wqy-microhei",
        font_family="WenQuanYi Micro Hei",
        quotes="“”",
        requirements=("jieba", "jupyterlab-language-pack-zh-cn"),
    ),
)


def all_languages() -> tuple[Language, ...]:
    return (SOURCE, *TRANSLATIONS)


def codes() -> list[str]:
    return [language.code for language in all_languages()]


def translation_codes() -> list[str]:
    return [language.code for language in TRANSLATIONS]


def get(code: str) -> Language:
    for language in all_languages():
        if language.code == code:
            return language
    raise KeyError(f"no language {code!r} in fxcourse/languages.py (there are {codes()})")


def for_locale(locale: str) -> str:
    """The course language for a POSIX locale (zh_CN.UTF-8) or a bare code (zh): English unless
    the locale names a translation."""
    wanted = locale.split(".")[0].replace("-", "_").lower()
    for language in TRANSLATIONS:
        if wanted == language.code or wanted.startswith(f"{language.code}_"):
            return language.code
    return SOURCE.code


def assignment(exercise: str, code: str) -> str:
    """The nbgrader assignment that is `exercise` in the language `code` (grader/exercises.py):
    the exercise itself in the source language, `<exercise>-<code>` in a translation."""
    return exercise if code == SOURCE.code else f"{exercise}-{code}"


def main(argv: list[str]) -> int:
    if argv == ["codes"]:
        print(" ".join(codes()))
    elif argv == ["translations"]:
        print(" ".join(translation_codes()))
    elif argv == ["fonts"]:  # env/setup.sh: "code package" for each language that needs a font
        print("\n".join(f"{x.code} {x.font_package}" for x in all_languages() if x.font_package))
    elif len(argv) in (1, 2) and argv[0] == "for-locale":
        print(for_locale(argv[1] if len(argv) == 2 else ""))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
