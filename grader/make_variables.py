"""Variables given to `make` on its command line that no makefile of the course reads.

    python3 grader/make_variables.py MAKEFILE ... -- NAME ...

Prints one make statement for the Makefile to evaluate: nothing when every NAME is read somewhere;
`$(error ...)` for a near miss of a name the course reads (`SUBMISSION=` for `SUBMISSIONS=`: make
would otherwise ignore it and grade what is already there); `$(warning ...)` for any other name
(it may be meant for a program make starts). The names the course reads: every upper-case word of
its makefiles and of the settings files that read `make`'s exported variables (FXHUB_*).
Runs on the system's python3 with the standard library only: it guards every target, env too.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

WORD = re.compile(r"\b[A-Z][A-Z0-9_]{1,}\b")
# Read from the environment by what make starts, not by a makefile.
READ_BY_PROGRAMS = ("grader/hub/settings.py", "env/setup.sh")
# Variables of make itself, and ones every shell has.
MAKE_OWN = {"MAKEFLAGS", "MAKEFILES", "MAKECMDGOALS", "SHELL", "MAKE", "MAKELEVEL", "V", "PATH"}


def known_names(makefiles: list[str]) -> set[str]:
    names = set(MAKE_OWN)
    root = Path(__file__).resolve().parents[1]
    for path in [*map(Path, makefiles), *(root / name for name in READ_BY_PROGRAMS)]:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if path.suffix == ".mk" or path.name == "Makefile":  # a comment's example is no variable
            text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        names |= set(WORD.findall(text))
    return names


def verdict(makefiles: list[str], given: list[str]) -> str:
    known = known_names(makefiles)
    errors, warnings = [], []
    for name in given:
        if name in known or not name.isidentifier():
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
        if close:
            errors.append(f"{name} is not a variable of this Makefile; did you mean {close[0]}=?")
        else:
            warnings.append(f"{name} is not read by this Makefile (ignored unless a tool reads it)")
    if errors:
        return f"$(error {'; '.join(errors)})"
    return "".join(f"$(warning {text})" for text in warnings)


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    print(verdict(argv[:split], argv[split + 1 :]).replace("#", "\\#"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
