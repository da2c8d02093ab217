"""Translations of what learners read, kept as gettext catalogs (fxcourse/locale/<lang>/*.po).

    python -m fxcourse.i18n update   extract the English texts into the catalogs: new texts get
                                     empty entries, changed ones keep their old translation marked
                                     fuzzy (with the previous English), vanished ones are dropped
    python -m fxcourse.i18n check    exit 1 naming every entry that is missing or fuzzy, departs
                                     from the glossary (locale/<lang>/glossary.tsv) or breaks a
                                     line between two CJK characters
    python -m fxcourse.i18n todo NAME [LANG]         what NAME.po still needs, as JSON
    python -m fxcourse.i18n fill NAME F.json [LANG]  set translations from {english: translation}
    python -m fxcourse.i18n join-lines        join msgstr lines broken between two CJK characters

A notebook's texts are its Markdown blocks (a cell split at blank lines, fenced code kept whole),
the comments in its code, the strings its code shows (printed, raised, drawn, hinted: see
fxcourse.shown_strings) and the docstrings of the functions and classes it defines; in exercise
starters also the messages of the visible tests' asserts. Code and identifiers are never
translated. fxcourse's own messages (the "Not yet" box and its friends) are in fxcourse.po, read at
run time by `gettext_for`.
Translators edit the .po files (any PO editor, or by hand) and clear the `fuzzy` flag once an
entry matches its English again. The languages are fxcourse.languages' translations (LANG: the
first of them when not given).
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

from fxcourse import languages, shown_strings, stamps
from fxcourse.messages import _, speaking

ROOT = Path(__file__).resolve().parents[1]
LOCALES = Path(__file__).with_name("locale")
FENCE = re.compile(r"^\s*(```|~~~|:::)")


@dataclass(frozen=True)
class Text:
    """One translatable piece: where it is (cell, kind) and its English text."""

    cell: int
    kind: str  # "markdown", "comment" or "string" (the source of a string literal)
    text: str


# ----------------------------------------------------------------------------- extraction


def markdown_blocks(source: str) -> list[str]:
    """A Markdown cell split at blank lines; a fenced block (code, admonition) stays whole."""
    blocks, current, fence = [], [], None
    for line in source.splitlines():
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence) and line.strip() == fence:
            fence = None
        if not line.strip() and fence is None:
            blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    blocks.append("\n".join(current))
    return [block for block in blocks if block.strip()]


def comments(source: str) -> list[tuple[int, int, str]]:
    """(line, column, text after '# ') of each comment with words in it."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                text = token.string.lstrip("#").strip()
                if re.search(r"[A-Za-z]{2}", text) and not text.startswith(("noqa", "type:")):
                    found.append((*token.start, text))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


DEFINITIONS = ast.FunctionDef | ast.AsyncFunctionDef


def docstring_values(node: ast.AST) -> list[ast.expr]:
    """The docstring of a module, class or function, as its string literal node."""
    body = getattr(node, "body", None)
    is_documented = isinstance(node, ast.Module | ast.ClassDef | DEFINITIONS)
    if is_documented and body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return [value]
    return []


def message_strings(source: str, asserts: bool, names: frozenset[str] = frozenset()) -> list[str]:
    """Source text of the learner-facing strings (fxcourse.shown_strings: what is printed, drawn,
    raised or hinted, and the literals that reach it), and the docstrings of the functions and
    classes the code defines (a learner reads them in the cell and in `help()`); in exercise
    code (asserts) also assert messages and a module's docstring. `names`: names shown by the
    notebook's other cells."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = shown_strings.shown_literals(tree, names)
    for node in ast.walk(tree):
        if asserts and isinstance(node, ast.Assert) and node.msg is not None:
            found.append(node.msg)
        if asserts or isinstance(node, ast.ClassDef | DEFINITIONS):
            found.extend(docstring_values(node))
    found += printed_choices(tree, found)
    strings = [
        ast.get_source_segment(source, n)
        for n in found
        if isinstance(n, ast.JoinedStr | ast.Constant)
    ]
    return list(dict.fromkeys(s for s in strings if s and re.search(r"[A-Za-z]{2}", s)))


def printed_choices(tree: ast.AST, printed: list[ast.expr]) -> list[ast.expr]:
    """The words of `name = "faster" if ... else "slower"` when a printed f-string shows
    {name}: only then, since a word the code compares or returns must stay as it is."""
    shown = {
        inner.id
        for literal in printed
        if isinstance(literal, ast.JoinedStr)
        for inner in ast.walk(literal)
        if isinstance(inner, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in shown
            and isinstance(node.value, ast.IfExp)
            and shown_strings.is_words(node.value.body)
            and shown_strings.is_words(node.value.orelse)
        ):
            found += [node.value.body, node.value.orelse]
    return found


def python_messages(package: Path) -> list[Text]:
    """The messages a package shows through `_("...")` (fxcourse.messages), in file order."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "_"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append(Text(node.lineno, "message", node.args[0].value))
    return found


def texts_of(nb: nbformat.NotebookNode, asserts: bool = False) -> Iterator[Text]:
    """Every translatable text of a notebook, in order (mistake cells are not learner-facing)."""
    names = notebook_shown_names(nb)
    for index, cell in enumerate(nb.cells):
        if cell.metadata.get("tryit", {}).get("role") == "mistake":
            continue
        if cell.cell_type == "markdown":
            for block in markdown_blocks(cell.source):
                yield Text(index, "markdown", block)
        elif cell.cell_type == "code":
            for _, _, text in comments(cell.source):
                yield Text(index, "comment", text)
            for text in message_strings(cell.source, asserts, names):
                yield Text(index, "string", text)


def notebook_shown_names(nb: nbformat.NotebookNode) -> frozenset[str]:
    """The names any code cell of nb shows (a cell may set a label another prints)."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            try:
                names |= shown_strings.shown_names(ast.parse(cell.source))
            except SyntaxError:
                continue
    return frozenset(names)


# ----------------------------------------------------------------------------- applying


def translate_markdown(source: str, lookup: dict[str, str]) -> str:
    for block in markdown_blocks(source):
        if lookup.get(block):
            source = source.replace(block, lookup[block], 1)
    return source


def translate_code(
    source: str, lookup: dict[str, str], asserts: bool, shared: list[str] = ()
) -> str:
    """Comments and shown strings translated; `shared` are literals shown elsewhere in the same
    notebook, translated here too, so that a label defined in one cell and read in another stays
    one value."""
    lines = source.split("\n")
    for line, column, text in comments(source):
        if lookup.get(text):
            lines[line - 1] = lines[line - 1][:column] + "# " + lookup[text]
    source = "\n".join(lines)
    texts = dict.fromkeys([*message_strings(source, asserts), *shared])
    for text in sorted(texts, key=len, reverse=True):
        if lookup.get(text):
            source = source.replace(text, lookup[text])
    return source


def translate_notebook(
    nb: nbformat.NotebookNode, lookup: dict[str, str], asserts: bool = False
) -> nbformat.NotebookNode:
    """A copy of nb with every text that has a translation replaced; code stays as it is."""
    translated = nbformat.reads(nbformat.writes(nb), as_version=4)
    code = [cell for cell in translated.cells if cell.cell_type == "code"]
    names = notebook_shown_names(translated)
    shared = [text for cell in code for text in message_strings(cell.source, asserts, names)]
    for cell in translated.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, lookup)
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, lookup, asserts, shared)
    return translated


LANGUAGE_CELL = '# {comment}\nfrom fxcourse.messages import use_language\n\nuse_language("{code}")'


def language_cell(language: str) -> str:
    with speaking(language):
        comment = _("the checkpoints below give their hints in this chapter's language")
    return LANGUAGE_CELL.format(comment=comment, code=language)


def add_language_cell(nb: nbformat.NotebookNode, language: str) -> None:
    """A translated chapter's first code cell switches fxcourse's messages to its language."""
    cell = nbformat.v4.new_code_cell(language_cell(language), id=f"fxcourse-language-{language}")
    nb.cells.insert(1, cell)  # a fixed id: the derived chapter is the same on every build


def refresh_checksums(nb: nbformat.NotebookNode) -> None:
    """nbgrader's checksums of a translated exercise's cells, so `validate` accepts them."""
    from nbgrader.utils import compute_checksum

    for cell in nb.cells:
        if "checksum" in cell.metadata.get("nbgrader", {}):
            cell.metadata.nbgrader["checksum"] = compute_checksum(cell)


# ----------------------------------------------------------------------------- catalogs


def catalog_path(name: str, language: str) -> Path:
    return LOCALES / language / f"{name}.po"


def load_catalog(name: str, language: str):
    import polib

    path = catalog_path(name, language)
    if path.exists():
        return polib.pofile(str(path), wrapwidth=0)
    catalog = polib.POFile(wrapwidth=0)
    catalog.metadata = {
        "Content-Type": "text/plain; charset=UTF-8",
        "Language": language,
        "Project-Id-Version": "fxcourse",
    }
    return catalog


def lookup_of(name: str, language: str) -> dict[str, str]:
    """English -> translation for the entries that are translated and not fuzzy."""
    return {
        entry.msgid: entry.msgstr
        for entry in load_catalog(name, language)
        if entry.msgstr and "fuzzy" not in entry.flags and not entry.obsolete
    }


KIND_NOTES = {
    "markdown": "Markdown: keep markup, code spans, links; in code blocks translate comments only",
    "comment": "a comment in code: one line",
    "string": "a Python string literal: keep its quotes, prefix and every {...} exactly",
    "message": "a message of fxcourse's helpers: keep every {placeholder} exactly",
}


def translation_memory(language: str) -> dict:
    """Every translated entry of every catalog of the language, so a text that moves to another
    chapter keeps its translation."""
    import polib

    memory = {}
    for path in sorted((LOCALES / language).glob("*.po")):
        for entry in polib.pofile(str(path), wrapwidth=0):
            if entry.msgstr and "fuzzy" not in entry.flags and not entry.obsolete:
                memory.setdefault(entry.msgid, entry)
    return memory


def merged_catalog(name: str, language: str, texts: list[Text]):
    """The catalog for texts: translations kept, changed texts fuzzy with the old translation."""
    import polib

    old = load_catalog(name, language)
    done = translation_memory(language) | {e.msgid: e for e in old if e.msgstr and not e.obsolete}
    catalog = polib.POFile(wrapwidth=0)
    catalog.metadata = old.metadata
    seen: dict[str, polib.POEntry] = {}
    for text in texts:
        if text.text in seen:
            seen[text.text].occurrences.append((name, str(text.cell)))
            continue
        entry = polib.POEntry(msgid=text.text, msgstr="", occurrences=[(name, str(text.cell))])
        entry.comment = KIND_NOTES[text.kind]
        if text.text in done:
            entry.msgstr, entry.flags = done[text.text].msgstr, list(done[text.text].flags)
        elif close := difflib.get_close_matches(text.text, list(done), n=1, cutoff=0.6):
            entry.msgstr, entry.flags = done[close[0]].msgstr, ["fuzzy"]
            entry.previous_msgid = close[0]
        seen[text.text] = entry
        catalog.append(entry)
    return catalog


def problems(name: str, language: str, texts: list[Text]) -> list[str]:
    """Entries missing or stale (fuzzy), and translated strings that would break the code."""
    catalog = {e.msgid: e for e in load_catalog(name, language) if not e.obsolete}
    found = []
    for text in dict.fromkeys(texts):
        entry = catalog.get(text.text)
        short = text.text.replace("\n", " ")[:70]
        if entry is None or not entry.msgstr:
            found.append(f"{name}.po: missing ({text.kind}, cell {text.cell}): {short!r}")
        elif "fuzzy" in entry.flags:
            found.append(f"{name}.po: its English changed (fuzzy), cell {text.cell}: {short!r}")
        elif text.kind == "string" and not same_literal_shape(text.text, entry.msgstr):
            found.append(f"{name}.po: not a string literal with the same {{...}}: {short!r}")
        elif text.kind == "message" and not same_placeholders(text.text, entry.msgstr):
            found.append(f"{name}.po: the translation lost or added a {{placeholder}}: {short!r}")
        elif text.kind == "comment" and "\n" in entry.msgstr:
            found.append(f"{name}.po: a comment's translation must be one line: {short!r}")
    return found


def same_literal_shape(english: str, translated: str) -> bool:
    """A translated string literal parses, and keeps the English one's {placeholders}."""
    try:
        ast.parse(translated, mode="eval")
    except SyntaxError:
        return False
    return same_placeholders(english, translated)


def same_placeholders(english: str, translated: str) -> bool:
    placeholders = re.compile(r"\{[^{}]*\}")
    return sorted(placeholders.findall(english)) == sorted(placeholders.findall(translated))


# ------------------------------------------------------------------- vocabulary, typography

CODE_OR_LINK = re.compile(r"```.*?```|`[^`\n]*`|\]\([^)]*\)|https?://\S+", re.S)
BRACKETED = re.compile(r"（[^（）]*）|\([^()]*\)")
CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"
# A line break between two CJK characters shows as a space, also where list indentation follows
# it or an emphasis marker (*, **, _) stands beside it: "中文**\n  中文", "中文\n*中文*".
BREAK_BETWEEN_CJK = re.compile(rf"(?<={CJK})([*_]{{0,3}})\n[ \t]*([*_]{{0,3}})(?={CJK})")


@dataclass(frozen=True)
class Term:
    """A glossary row: English forms, the one Chinese form, and forms wrong for the term."""

    english: tuple[str, ...]
    chinese: str
    wrong: tuple[str, ...]

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where the text says one of the term's English forms (a form split across a line
        break counts: it reads as one phrase)."""
        return [
            m.span()
            for form in self.english
            for m in re.finditer(rf"(?<![\w.]){form_pattern(form)}(?![\w(]|\.\w)", text)
        ]

    def said_in(self, text: str) -> bool:
        return bool(self.spans(text))

    def in_latin_script(self) -> bool:
        """A term of art kept in English (kernel): its Chinese form is its English form."""
        return not re.search(CJK, self.chinese)


def form_pattern(form: str) -> str:
    """A glossary form as a pattern: any run of spaces and line breaks between its words."""
    return r"\s+".join(re.escape(word) for word in form.split())


def terms_said(english: str, terms: list[Term]) -> list[Term]:
    """The terms the English says, each where no longer term of the glossary covers it: "this
    kernel" (the Jupyter kernel) hides "kernel" (the compute kernel), "batch size" hides
    "batch"."""
    spans = {term: term.spans(english) for term in terms}
    covered = [(term, span) for term, found in spans.items() for span in found]

    def hidden(term: Term, span: tuple[int, int]) -> bool:
        start, end = span
        return any(
            other is not term and o[0] <= start and end <= o[1] and o[1] - o[0] > end - start
            for other, o in covered
        )

    return [term for term, found in spans.items() if any(not hidden(term, s) for s in found)]


def glossary(language: str) -> list[Term]:
    """fxcourse/locale/<language>/glossary.tsv: one translation per English term (none yet for a
    language that has no glossary)."""
    path = LOCALES / language / "glossary.tsv"
    if not path.exists():
        return []
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            english, chinese, wrong = (line.split("\t") + [""])[:3]
            split = lambda forms: tuple(f for f in forms.split("|") if f)  # noqa: E731
            terms.append(Term(split(english), chinese, split(wrong)))
    return terms


ENGLISH_TITLE = re.compile(r"\*[^*]+\*|\"[^\"\n]+\"")


def prose(text: str) -> str:
    """What a reader reads as words: code spans, fenced code, link targets and the titles of
    papers and pages (italic or quoted text with no CJK character in it) taken out."""
    text = CODE_OR_LINK.sub(" ", text)
    return ENGLISH_TITLE.sub(lambda m: m[0] if re.search(CJK, m[0]) else " ", text)


STRING_LITERAL = re.compile(r"[rRuUfFbB]{0,2}(\"\"\"|\'\'\'|\"|\')(.*)\1", re.S)


def literal_words(text: str) -> str:
    """A string literal's words, as a reader sees them: inside its quotes, {placeholders} left
    out (else a quoted literal would read as a title, and `{batch}` as the word)."""
    if literal := STRING_LITERAL.fullmatch(text.strip()):
        return re.sub(r"\{[^{}]*\}", " ", literal[2])
    return text


def term_problems(english: str, translated: str, terms: list[Term]) -> list[str]:
    """How a translation departs from the glossary (empty when it follows it)."""
    english, translated = (
        prose(literal_words(english)),
        joined_lines(prose(literal_words(translated))),
    )
    unbracketed = BRACKETED.sub(" ", translated)
    said, left_in_english = terms_said(english, terms), terms_said(unbracketed, terms)
    found = reference_problems(english, translated)
    for term in said:
        if term.chinese not in translated:
            found.append(f"{term.english[0]!r} is not translated as {term.chinese!r}")
        if not term.in_latin_script() and term in left_in_english:
            found.append(f"{term.english[0]!r} left in English outside a bracketed gloss")
        others = {other.chinese for other in said if other is not term}
        for wrong in term.wrong:
            if wrong in translated and not any(wrong in chinese for chinese in others):
                found.append(f"{term.english[0]!r} translated as {wrong!r}")
    return found


SECTION_REFERENCE = re.compile(r"\((?:see )?sections? ([\d.]+(?:(?:,| and|, and) [\d.]+)*)\)")


def reference_problems(english: str, translated: str) -> list[str]:
    """A reference "(section 7.5)" reads "（见 7.5 节）" in every catalog, "(sections 4.2 and
    4.4)" "（见 4.2、4.4 节）"."""
    found = []
    for match in SECTION_REFERENCE.finditer(english):
        numbers = re.findall(r"\d+(?:\.\d+)*", match[1])
        wanted = f"（见 {'、'.join(numbers)} 节）"
        if wanted not in translated:
            found.append(f"{match[0]!r} is not written {wanted!r}")
    return found


def vocabulary_problems(language: str) -> list[str]:
    """Every catalog entry whose translation uses another word than the glossary's."""
    terms = glossary(language)
    found = []
    for path in sorted((LOCALES / language).glob("*.po")):
        for entry in load_catalog(path.stem, language):
            if entry.msgstr and not entry.obsolete:
                short = entry.msgid.replace("\n", " ")[:60]
                for problem in term_problems(entry.msgid, entry.msgstr, terms):
                    found.append(f"{path.name}: {problem}: {short!r}")
    return found


def joined_lines(text: str) -> str:
    """A line break between two CJK characters shows as a stray space: join those lines."""
    return BREAK_BETWEEN_CJK.sub(r"\1\2", text)


def line_break_problems(language: str) -> list[str]:
    found = []
    for path in sorted((LOCALES / language).glob("*.po")):
        for entry in load_catalog(path.stem, language):
            if BREAK_BETWEEN_CJK.search(entry.msgstr):
                short = entry.msgid.replace("\n", " ")[:60]
                found.append(f"{path.name}: a line break between two CJK characters: {short!r}")
    return found


def join_lines(language: str) -> int:
    """Join every line broken between two CJK characters in the language's catalogs."""
    count = 0
    for path in sorted((LOCALES / language).glob("*.po")):
        catalog = load_catalog(path.stem, language)
        changed = [e for e in catalog if BREAK_BETWEEN_CJK.search(e.msgstr)]
        for entry in changed:
            entry.msgstr = joined_lines(entry.msgstr)
        if changed:
            catalog.save(str(path))
        count += len(changed)
    return count


# ----------------------------------------------------------------------------- the documents


@dataclass(frozen=True)
class Document:
    """Something learners read, its catalog's name, and whether assert messages count."""

    name: str
    path: Path
    asserts: bool = False
    # The grader's (checks.py): only its messages, translated into a copy the grader alone uses
    # (course_grader.release), never into chapters/.
    grader: bool = False

    def read(self) -> nbformat.NotebookNode | str:
        """The document, without the stamp of a derived file (a released verify.py's)."""
        if self.path.suffix == ".ipynb":
            return nbformat.read(self.path, as_version=4)
        text = self.path.read_text(encoding="utf-8")
        return stamps.unstamped_python(text) if self.path.suffix == ".py" else text

    def texts(self) -> list[Text]:
        if self.path.is_dir():
            return python_messages(self.path)
        content = self.read()
        if self.grader:
            return grader_messages(content)
        if self.path.suffix == ".py":
            return python_file_texts(content)
        if isinstance(content, str):
            return [Text(0, "markdown", block) for block in markdown_blocks(content)]
        return list(texts_of(content, self.asserts))

    def translated(self, language: str) -> nbformat.NotebookNode | str:
        content, lookup = self.read(), lookup_of(self.name, language)
        if self.path.suffix == ".py":
            for text in dict.fromkeys(t.text for t in self.texts()):
                if lookup.get(text):
                    content = content.replace(text, lookup[text])
            return content
        if isinstance(content, str):
            return translate_markdown(content, lookup)
        return translate_notebook(content, lookup, self.asserts)


def sentence_literals(source: str) -> list[str]:
    """Source text of every string literal that holds words (outside its {placeholders}): the
    messages a module builds before it asserts or returns them."""
    tree = ast.parse(source)
    inner = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr | ast.FormattedValue)
        for child in ast.walk(node)
        if child is not node
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, ast.JoinedStr | ast.Constant):
            continue
        text = ast.get_source_segment(source, node)
        if text and isinstance(getattr(node, "value", ""), str):
            words = re.sub(r"\{[^{}]*\}", "", text)
            if re.search(r"[A-Za-z]{2,}[ ,:]+[A-Za-z(]", words):
                found.append(text)
    return found


def python_file_texts(source: str) -> list[Text]:
    """What a learner reads in a module beside an exercise (verify.py): its comments, docstrings
    and the messages its checks fail with."""
    found = [Text(line, "comment", text) for line, _, text in comments(source)]
    strings = message_strings(source, asserts=True) + sentence_literals(source)
    return found + [Text(0, "string", text) for text in dict.fromkeys(strings)]


def grader_messages(source: str) -> list[Text]:
    """What the grader's checks.py tells a learner: the messages its checks fail with and the
    names of its cases (`what`, even of two words: "a chain"); its docstrings and comments are
    the instructor's."""
    strings = message_strings(source, asserts=True) + sentence_literals(source)
    strings += [s for s in string_literals(source) if re.search(r"[A-Za-z]+ [A-Za-z]{2,}", s)]
    # raw strings are its patterns (code), not messages
    kept = (s for s in dict.fromkeys(strings) if not s.startswith(('"""', "r", "R")))
    return [Text(0, "string", s) for s in kept]


def string_literals(source: str) -> list[str]:
    """Source text of every plain string literal (not part of an f-string)."""
    tree = ast.parse(source)
    inner = {id(c) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for c in ast.walk(n)}
    return [
        ast.get_source_segment(source, node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner
    ]


def documents(root: Path = ROOT) -> list[Document]:
    """Chapter sources (answers included, mistakes not), exercise starters and the modules beside
    them (verify.py), the learner README, fxcourse's own messages, the messages of each
    exercise's hidden tests (its checks.py: grader=True) and the grader's own messages to a
    learner (grader/safegrade/wording.py)."""
    chapters = sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb"))
    starters = sorted((root / "chapters" / "exercises").glob("*/*.ipynb"))
    beside = [path for starter in starters for path in sorted(starter.parent.glob("*.py"))]
    checks = [root / "solutions" / starter.parent.name / "checks.py" for starter in starters]
    return (
        [Document(path.stem, path) for path in chapters]
        + [Document(path.stem, path, asserts=True) for path in starters]
        + [Document(f"{path.parent.name}.{path.stem}", path, asserts=True) for path in beside]
        + [Document("README", root / "env" / "student-edition" / "README.md")]
        + [Document("fxcourse", root / "fxcourse")]
        + [Document(f"{p.parent.name}.checks", p, True, grader=True) for p in checks if p.is_file()]
        + [Document("safegrade", root / "grader" / "safegrade")]
    )


def update(language: str, names: list[str] | None = None) -> None:
    for document in documents():
        if names and document.name not in names:
            continue
        catalog = merged_catalog(document.name, language, document.texts())
        path = catalog_path(document.name, language)
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog.save(str(path))
        todo = sum(1 for e in catalog if not e.msgstr or "fuzzy" in e.flags)
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{shown}: {len(catalog)} entries, {todo} to translate")


def all_problems(language: str) -> list[str]:
    return [p for doc in documents() for p in problems(doc.name, language, doc.texts())]


def export_todo(name: str, language: str) -> list[dict]:
    """The entries of one catalog still to translate (missing or fuzzy), as JSON-able dicts."""
    return [
        {"english": e.msgid, "kind": e.comment, "draft": e.msgstr}
        for e in load_catalog(name, language)
        if not e.msgstr or "fuzzy" in e.flags
    ]


def fill(name: str, language: str, translations: dict[str, str]) -> int:
    """Set translations (English -> text) in one catalog, clearing their fuzzy flag."""
    catalog = load_catalog(name, language)
    count = 0
    for entry in catalog:
        if translations.get(entry.msgid):
            entry.msgstr = translations[entry.msgid]
            entry.flags = [flag for flag in entry.flags if flag != "fuzzy"]
            entry.previous_msgid = None
            count += 1
    catalog.save(str(catalog_path(name, language)))
    return count


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    translated = languages.translation_codes()
    if command == "todo" and len(argv) in (2, 3):  # todo NAME [LANG]: what is left, as JSON
        language = argv[2] if len(argv) == 3 else translated[0]
        print(json.dumps(export_todo(argv[1], language), ensure_ascii=False, indent=1))
        return 0
    if command == "fill" and len(argv) in (3, 4):  # fill NAME FILE.json [LANG]
        translations = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        language = argv[3] if len(argv) == 4 else translated[0]
        print(f"{fill(argv[1], language, translations)} entries set in {argv[1]}.po")
        return 0
    if command == "update":  # update [NAME ...]: all catalogs, or the ones named
        for language in translated:
            update(language, argv[1:])
        return 0
    if command == "join-lines":  # join lines broken between two CJK characters
        print(f"{sum(join_lines(language) for language in translated)} entries joined")
        return 0
    if command == "check":
        found = [
            p
            for language in translated
            for check in (all_problems, vocabulary_problems, line_break_problems)
            for p in check(language)
        ]
        print("\n".join(found) or "every translation is present and current")
        if found:
            print(f"{len(found)} entries to translate: edit fxcourse/locale/*/ (see its README)")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
