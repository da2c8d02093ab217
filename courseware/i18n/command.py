"""`python -m courseware.i18n`: the commands (see the package's docstring)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from courseware import i18n
from courseware.i18n.catalogs import export_todo, fill
from courseware.i18n.documents import all_problems, update
from courseware.i18n.vocabulary import join_lines, line_break_problems, vocabulary_problems
from courseware.repository import HERE, Repository
from fxcourse import languages


def main(argv: list[str], repository: Repository = HERE) -> int:
    command = argv[0] if argv else ""
    translated = languages.translation_codes()
    if command == "todo" and len(argv) in (2, 3):  # todo NAME [LANG]: what is left, as JSON
        language = argv[2] if len(argv) == 3 else translated[0]
        print(json.dumps(export_todo(argv[1], language, repository), ensure_ascii=False, indent=1))
        return 0
    if command == "fill" and len(argv) in (3, 4):  # fill NAME FILE.json [LANG]
        translations = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        language = argv[3] if len(argv) == 4 else translated[0]
        print(f"{fill(argv[1], language, translations, repository)} entries set in {argv[1]}.po")
        return 0
    if command == "update":  # update [NAME ...]: all catalogs, or the ones named
        for language in translated:
            update(language, argv[1:], repository)
        return 0
    if command == "join-lines":  # join lines broken between two CJK characters
        joined = sum(join_lines(language, repository) for language in translated)
        print(f"{joined} entries joined")
        return 0
    if command == "check":
        found = [
            p
            for language in translated
            for check in (all_problems, vocabulary_problems, line_break_problems)
            for p in check(language, repository)
        ]
        print("\n".join(found) or "every translation is present and current")
        if found:
            print(f"{len(found)} entries to translate: edit courseware/locale/*/ (see its README)")
        return 1 if found else 0
    print(i18n.__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
