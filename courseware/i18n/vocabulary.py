"""The glossary (courseware/locale/<code>/glossary.tsv) and typography: a translation says each
term as the glossary does, keeps section references, and breaks no line between two CJK
characters."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from courseware.i18n import catalogs
from courseware.i18n.catalogs import load_catalog
from courseware.repository import HERE, Repository
from fxcourse import languages

CODE_OR_LINK = re.compile(r"```.*?```|`[^`\n]*`|\]\([^)]*\)|https?://\S+", re.S)
BRACKETED = re.compile(r"（[^（）]*）|\([^()]*\)")
CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"
# A line break between two CJK characters shows as a space, also where list indentation follows
# it or an emphasis marker (*, **, _) stands beside it: "中文**\n  中文", "中文\n*中文*".
BREAK_BETWEEN_CJK = re.compile(rf"(?<={CJK})([*_]{{0,3}})\n[ \t]*([*_]{{0,3}})(?={CJK})")
# A space between two Chinese characters shows as a stray space, also where an emphasis marker
# stands beside it: "一个 **图中断**", "**当前这一批** 的". CommonMark needs no space there: a
# marker between two letters opens or closes as it stands. It needs one after punctuation that
# ends the emphasis ("**目标。** 学完"), so only ideographs count. Two spaces pad a column.
HAN = r"[\u3400-\u9fff]"
SPACE_BETWEEN_CJK = re.compile(rf"(?<={HAN})(\*{{0,3}})[ \t](?![ \t])(\*{{0,3}})(?={HAN})")
# Full-width quotes and brackets carry their own spacing: a space between one and a Chinese
# character shows as a gap ("其中的 “Debugging” 两节"), even when the quote holds English.
SPACE_BESIDE_FULL_WIDTH = re.compile(
    rf"(?<={HAN})[ \t](?![ \t])(?=[“‘「『（《])|(?<=[”’」』）》])[ \t](?![ \t])(?={HAN})"
)
CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)
# Words quoted in prose (an English message, a title): "…"; code, links and HTML tags keep theirs.
ASCII_QUOTED = re.compile(r'"([^"\n]*)"')
QUOTES_KEPT = re.compile(f"({CODE_OR_LINK.pattern}|<[^<>\n]+>)", re.S)
FENCED = re.compile(r"(```.*?```)", re.S)
# A line break between code or Latin text and Chinese shows as a space too, where the house style
# has none (before full-width punctuation): "`forward`\n运行", "GraphModule\n（返回",
# "通过\n**Assignments**". After full-width punctuation, before code or Latin text, it shows as a
# gap the punctuation already makes ("、\n`torch` 函数" reads "、 `torch`"): join with no space. A
# break before a list item, table row or heading stays.
NOT_CJK_OR_MARKER = r"[^\s*_\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"
LATIN_START = r"[A-Za-z0-9`$\[\\\"']"
LATIN_THEN_CJK = re.compile(rf"(?<={NOT_CJK_OR_MARKER})([*_]{{0,3}})\n[ \t]*([*_]{{0,3}})(?={CJK})")
NOT_A_BLOCK_START = r"(?!\d+[.)][ \t]|\$\$)"  # a numbered list item, display math
HAN_THEN_LATIN = re.compile(
    rf"(?<={HAN})([*_]{{0,3}})\n[ \t]*([*_]{{0,3}}){NOT_A_BLOCK_START}(?={LATIN_START})"
)
FULL_WIDTH_PUNCTUATION = r"[\u3000-\u303f\uff00-\uffef]"
PUNCTUATION_THEN_LATIN = re.compile(
    rf"(?<={FULL_WIDTH_PUNCTUATION})([*_]{{0,3}})\n[ \t]*([*_]{{0,3}})"
    rf"{NOT_A_BLOCK_START}(?={LATIN_START})"
)


@dataclass(frozen=True)
class Term:
    """A glossary row: English forms, the one translated form, and forms wrong for the term."""

    english: tuple[str, ...]
    translation: str
    wrong: tuple[str, ...]
    catalogs: tuple[str, ...] = ()  # the catalogs where the English has this sense (all if none)

    def holds_in(self, catalog: str) -> bool:
        return not self.catalogs or catalog in self.catalogs

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where the text says one of the term's English forms (a form split across a line
        break counts: it reads as one phrase)."""
        said = [form for form in self.english if form.split()[0] in text]  # a cheap first look
        return [m.span() for form in said for m in form_regex(form).finditer(text)]

    def said_in(self, text: str) -> bool:
        return bool(self.spans(text))

    def in_latin_script(self) -> bool:
        """A term of art kept in English (kernel): its translated form is its English form."""
        return not re.search(CJK, self.translation)


@functools.cache
def form_regex(form: str) -> re.Pattern:
    """A form said as a whole phrase (re's own cache is too small for a glossary's forms)."""
    return re.compile(rf"(?<![\w.]){form_pattern(form)}(?![\w(]|\.\w)")


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


def glossary(language: str, repository: Repository = HERE) -> list[Term]:
    """courseware/locale/<language>/glossary.tsv: one translation per English term (none yet for a
    language that has no glossary)."""
    path = repository.locales / language / "glossary.tsv"
    if not path.exists():
        return []
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            english, translation, wrong, where = (line.split("\t") + ["", ""])[:4]
            split = lambda forms: tuple(f for f in forms.split("|") if f)  # noqa: E731
            terms.append(Term(split(english), translation, split(wrong), split(where)))
    return terms


ENGLISH_TITLE = re.compile(r"(?<!\*)\*[^*]+\*(?!\*)|\"[^\"\n]+\"|“[^”\n]+”")


def prose(text: str) -> str:
    """What a reader reads as words: code spans, fenced code, link targets and the titles of
    papers and pages, and quoted messages (italic or quoted text with no CJK character in it)
    taken out."""
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
        if term.translation not in translated:
            found.append(f"{term.english[0]!r} is not translated as {term.translation!r}")
        if not term.in_latin_script() and term in left_in_english:
            found.append(f"{term.english[0]!r} left in English outside a bracketed gloss")
        others = {other.translation for other in said if other is not term}
        rest = translated.replace(term.translation, " ")  # 单元 is wrong, 单元格 is not
        for wrong in term.wrong:
            if wrong in rest and not any(wrong in said for said in others):
                found.append(f"{term.english[0]!r} translated as {wrong!r}")
    return found


SECTION_REFERENCE = re.compile(
    r"\((?:see )?(?:chapter \d+, )?sections? ([\d.]+(?:(?:,| and|, and) [\d.]+)*)\)"
)


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


def vocabulary_problems(language: str, repository: Repository = HERE) -> list[str]:
    """Every catalog entry whose translation uses another word than the glossary's."""
    terms = glossary(language, repository)
    found = []
    for path in catalogs.catalog_paths(language, repository):
        held = [term for term in terms if term.holds_in(path.stem)]
        for entry in load_catalog(path.stem, language, repository):
            if entry.msgstr and not entry.obsolete:
                short = entry.msgid.replace("\n", " ")[:60]
                for problem in term_problems(entry.msgid, entry.msgstr, held):
                    found.append(f"{path.name}: {problem}: {short!r}")
    return found


def joined_lines(text: str, beside_latin: bool = True) -> str:
    """A line break between two CJK characters shows as a stray space: join those lines. In
    prose (`beside_latin`) one between code or Latin text and Chinese becomes a space (none
    before or after full-width punctuation). Fenced code keeps its lines."""
    parts = FENCED.split(text)
    return "".join(p if i % 2 else joined_prose_lines(p, beside_latin) for i, p in enumerate(parts))


def joined_prose_lines(text: str, beside_latin: bool) -> str:
    text = BREAK_BETWEEN_CJK.sub(r"\1\2", text)
    if not beside_latin:
        return text
    text = LATIN_THEN_CJK.sub(lambda m: m[1] + spaced_before(m.string, m.end()) + m[2], text)
    text = PUNCTUATION_THEN_LATIN.sub(r"\1\2", text)
    return HAN_THEN_LATIN.sub(r"\1 \2", text)


def spaced_before(text: str, at: int) -> str:
    """The space that joins Latin text to the Chinese at `at`: none before full-width
    punctuation."""
    return "" if re.match(r"[*_]*[\u3000-\u303f\uff00-\uffef]", text[at:]) else " "


def read_as_prose(entry) -> bool:
    """Whether a line break in the entry's translation is read as a space beside Latin text too:
    Markdown, or a helper's message whose English has none (a docstring's lines are lines)."""
    notes = catalogs.KIND_NOTES
    return entry.comment == notes["markdown"] or (
        entry.comment == notes["message"] and not drawn_lines(entry)
    )


def drawn_lines(entry) -> bool:
    """A helper's message whose English has line breaks is a diagram label: its lines are drawn
    as lines, also between two CJK characters ("你的模型\n（Python 代码）")."""
    return entry.comment == catalogs.KIND_NOTES["message"] and "\n" in entry.msgid


def entry_lines_joined(entry) -> str:
    """The entry's translation with its lines joined where they show as a stray space or break
    the house style (see joined_lines)."""
    if drawn_lines(entry):
        return entry.msgstr
    return joined_lines(entry.msgstr, read_as_prose(entry))


def joined_entry(entry, quotes: str = "") -> str:
    """entry_lines_joined, with the spaces between Chinese characters closed too, and the
    language's quotation marks (`quotes`) around words a Markdown entry quotes."""
    return closed_spaces(quoted_prose(entry, entry_lines_joined(entry), quotes))


def quoted_prose(entry, text: str, quotes: str) -> str:
    """`text` with quoted_as applied when the entry is Markdown and the language has `quotes`."""
    if quotes and entry.comment == catalogs.KIND_NOTES["markdown"]:
        return quoted_as(text, quotes)
    return text


def quoted_as(text: str, quotes: str) -> str:
    """ASCII-quoted words in prose ("Data dependent operator") in the language's marks."""
    opening, closing = quotes
    parts = QUOTES_KEPT.split(text)
    return "".join(
        p if i % 2 else ASCII_QUOTED.sub(rf"{opening}\1{closing}", p) for i, p in enumerate(parts)
    )


def closed_spaces(text: str) -> str:
    """A space between two Chinese characters, or between one and a full-width quote or
    bracket, outside code, shows as a stray space: drop it."""
    parts = CODE.split(text)
    return "".join(p if i % 2 else closed_prose_spaces(p) for i, p in enumerate(parts))


def closed_prose_spaces(text: str) -> str:
    return SPACE_BESIDE_FULL_WIDTH.sub("", SPACE_BETWEEN_CJK.sub(r"\1\2", text))


def line_break_problems(language: str, repository: Repository = HERE) -> list[str]:
    """Entries with a line break, or a space, that shows as a stray space between two CJK
    characters, or prose quoted with ASCII quotes where the language has its own."""
    quotes = languages.get(language).quotes
    found = []
    for path in catalogs.catalog_paths(language, repository):
        for entry in load_catalog(path.stem, language, repository):
            short = entry.msgid.replace("\n", " ")[:60]
            if entry_lines_joined(entry) != entry.msgstr:
                found.append(f"{path.name}: a line break beside Chinese text: {short!r}")
            if closed_spaces(entry.msgstr) != entry.msgstr:
                found.append(f"{path.name}: a stray space beside Chinese text: {short!r}")
            if quoted_prose(entry, entry.msgstr, quotes) != entry.msgstr:
                found.append(f"{path.name}: ASCII quotes in prose (use {quotes}): {short!r}")
    return found


def join_lines(language: str, repository: Repository = HERE) -> int:
    """Join every line broken, and close every space, between two CJK characters in the
    language's catalogs, and quote prose with the language's quotation marks."""
    quotes = languages.get(language).quotes
    count = 0
    for path in catalogs.catalog_paths(language, repository):
        catalog = load_catalog(path.stem, language, repository)
        changed = [e for e in catalog if joined_entry(e, quotes) != e.msgstr]
        for entry in changed:
            entry.msgstr = joined_entry(entry, quotes)
        if changed:
            catalog.save(str(path))
        count += len(changed)
    return count
