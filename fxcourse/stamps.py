"""The "generated from X; edit X" stamp every derived file carries (as nbdev stamps its modules).

A notebook carries it in its metadata (`fxcourse_generated`): learners open their own copies of
the chapters and edit them, and a visible "do not edit" line would tell them the opposite; a
contributor who edits a derived notebook by hand is stopped by the staleness tests, whose message
names the command. A Python module carries it as its first lines, a JSON file as its "//" key, a
Markdown file as an HTML comment (not shown when it is rendered). It speaks to the course's
maintainers: a learner who reads it in a released verify.py learns where the file comes from.
"""

from __future__ import annotations

import textwrap

NOTEBOOK_KEY = "fxcourse_generated"
JSON_KEY = "//"
PREFIX = "Generated from "
END = "not this one."


def note(sources: list[str], command: str) -> str:
    edit = "that file" if len(sources) == 1 and "*" not in sources[0] else "those"
    return f"{PREFIX}{' and '.join(sources)} by `{command}`; course maintainers: edit {edit}, {END}"


def stamp_notebook(nb, sources: list[str], command: str):
    nb.metadata[NOTEBOOK_KEY] = note(sources, command)
    return nb


def stamp_python(text: str, sources: list[str], command: str) -> str:
    """The module with its stamp as its first comment lines (within the line length)."""
    lines = textwrap.wrap(note(sources, command), 96, break_on_hyphens=False)
    return "".join(f"# {line}\n" for line in lines) + unstamped_python(text)


def unstamped_python(text: str) -> str:
    """The module without its stamp (what a translation starts from)."""
    if not text.startswith(f"# {PREFIX}"):
        return text
    lines, said = text.split("\n"), ""
    for index, line in enumerate(lines):
        said += " " + line.removeprefix("# ")
        if said.endswith(END):
            return "\n".join(lines[index + 1 :])
    return text


def stamp_json(data: dict, sources: list[str], command: str) -> dict:
    return {JSON_KEY: note(sources, command), **data}


def unstamped_json(data: dict) -> dict:
    return {key: value for key, value in data.items() if key != JSON_KEY}


def stamp_markdown(text: str, sources: list[str], command: str) -> str:
    return f"<!-- {note(sources, command)} -->\n\n{unstamped_markdown(text)}"


def unstamped_markdown(text: str) -> str:
    if text.startswith(f"<!-- {PREFIX}"):
        return text.partition("-->\n")[2].lstrip("\n")
    return text
