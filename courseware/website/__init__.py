"""The course as a static website, built with Sphinx and MyST-NB from the same sources.

    python -m courseware.website build [--out dist/site]

Sources are generated into build/site/src (chapters from solutions/, with each try-it shown as its
task, its reference answer folded away and its checkpoint run; the exercises' task text from the
released starters, never executed; a start page with the table of contents), then Sphinx builds
them with warnings as errors. Executed outputs are cached in build/site/cache, keyed by each
notebook's code: a rebuild after one chapter changed re-runs that chapter only. Each language of
fxcourse.languages is an edition (the source at the site's root, a translation in <code>/), and
every page's language switch names them all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import polib

from courseware import i18n
from courseware.authoring import tryit_of
from courseware.notebooks import clean
from courseware.repository import HERE, Repository
from fxcourse import languages
from fxcourse.messages import LANGUAGE_VARIABLE, _, speaking, use_language
from fxcourse.workspace import course_kernel

CONF = Path(__file__).with_name("conf.py").parent  # the site's Sphinx configuration: code, here
# The themes' message catalogs that the editions' own words replace (courseware.website.conf).
THEME_CATALOGS = ("sphinx", "booktheme")


def how_to_run() -> str:
    note = _(
        "This page was executed on the course's pinned PyTorch. To run and edit it: clone the "
        "course and run `make lab` (it sets everything up and opens JupyterLab in your own "
        "`workspace/`), or unpack the student edition your instructor gives you and run "
        "`make lab` there, or open it on your class hub. The download button at the top gives "
        "this page as a notebook."
    )
    return f":::{{admonition}} {_('Run this page yourself')}\n:class: tip\n{note}\n:::"


def start_page(chapters: list[str], exercises: list[str]) -> str:
    intro = _(
        "A hands-on course on how PyTorch turns Python programs into graphs and what you can do "
        "with them: symbolic tracing, the FX IR, graph transforms, operator fusion, the "
        "Interpreter, graph capture with TorchDynamo and `torch.export`, and FX in practice. "
        "Every output on these pages was produced by running the code on the course's pinned "
        "PyTorch."
    )
    read = _(
        '**Read** the chapters here, in order. Each "Try it" shows its task; the reference '
        "answer is folded under it (try first!), followed by the checkpoint that judges it."
    )
    run = _(
        "**Run** the course: clone it and run `make lab` (set-up included), or use the student "
        "edition or your class hub. The graded exercises are submitted through nbgrader "
        "in a class."
    )
    tocs = [toctree(_("Chapters"), chapters), toctree(_("Graded exercises"), exercises)]
    title = _("torch.fx graph capture")
    return "\n\n".join([f"# {title}", intro, read, run, *tocs]) + "\n"


def toctree(caption: str, pages: list[str]) -> str:
    return f"```{{toctree}}\n:caption: {caption}\n:maxdepth: 1\n\n" + "\n".join(pages) + "\n```"


def exercises_page(exercises: list[str]) -> str:
    """exercises/index: what chapters link to as `exercises/`."""
    text = _(
        "The exercises are graded by nbgrader with hidden tests: the task text is here; fetch "
        "and submit them through your class, or open them with `make lab` and press Validate."
    )
    return f"# {_('Graded exercises')}\n\n{text}\n\n" + toctree(_("Exercises"), exercises) + "\n"


def with_page_links(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Links to the exercises folder point at its page."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace("](exercises/)", "](exercises/index.md)")
    return nb


def helpers_digest(language: str, repository: Repository = HERE) -> str:
    """What a chapter's outputs depend on besides its code: the course's helpers (fxcourse's
    modules, the reference answers a checkpoint box shows) and their messages in `language`."""
    package = repository.package  # the learner's package: the site's own code is not in it
    files = sorted(package.rglob("*.py"))
    files += sorted(package.glob("answers*.json"))
    files += sorted((package / "locale" / language).glob("fxcourse.po"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def site_chapter(
    nb: nbformat.NotebookNode, digest: str = "", repository: Repository = HERE
) -> nbformat.NotebookNode:
    """A chapter source as a site page: mistakes dropped, answers folded, a how-to-run note.
    The execution cache is keyed by the code: a hidden cell holding the helpers' digest re-runs
    the page when a helper changes what it shows (a picture's text alternative, a message)."""
    page = clean(nbformat.reads(nbformat.writes(nb), as_version=4), repository.root)
    cells = [page.cells[0], nbformat.v4.new_markdown_cell(how_to_run(), id="fxcourse-how-to-run")]
    if digest:
        helpers = nbformat.v4.new_code_cell(f"# fxcourse {digest}", id="fxcourse-helpers")
        helpers.metadata["tags"] = ["remove-cell"]
        cells.append(helpers)
    for cell in page.cells[1:]:
        marker = tryit_of(cell)
        role = marker[1] if marker else None
        if role == "mistake":
            continue
        if role == "answer":
            cell.metadata.setdefault("tags", []).append("hide-cell")  # its output too
            cell.metadata["mystnb"] = {
                "code_prompt_show": _("Show a reference answer"),
                "code_prompt_hide": _("Hide the reference answer"),
            }
        cells.append(cell)
    page.cells = cells
    return page


def site_exercise(
    nb: nbformat.NotebookNode, repository: Repository = HERE
) -> nbformat.NotebookNode:
    """An exercise starter as task text: shown as released, with the how-to-run note. The
    starter lives in exercises/<assignment>/, its page in exercises/: links one folder up."""
    page = clean(nbformat.reads(nbformat.writes(nb), as_version=4), repository.root)
    for cell in page.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace("](../../", "](../")
        if cell.get("id", "").startswith("fxcourse-language-"):  # set-up, not the task's text
            cell.metadata["tags"] = ["remove-cell"]
    page.cells.insert(1, nbformat.v4.new_markdown_cell(how_to_run(), id="fxcourse-how-to-run"))
    return page


def write_if_changed(path: Path, text: str) -> None:
    """Unchanged pages keep their time stamps, so Sphinx re-reads only what changed."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def chapter_sources(
    language: str, repository: Repository = HERE
) -> dict[str, nbformat.NotebookNode]:
    """Chapter sources (answers included) in `language`, by file name."""
    sources = repository.sources
    if language == languages.SOURCE.code:
        return {p.name: nbformat.read(p, as_version=4) for p in sources.glob("[0-9][0-9]_*.ipynb")}
    return {
        document.path.name: in_language(document.translated(language), language)
        for document in i18n.documents(repository)
        if document.path.parent == sources and document.path.suffix == ".ipynb"
    }


def in_language(nb: nbformat.NotebookNode, language: str) -> nbformat.NotebookNode:
    """A translated chapter that also runs in its language (checkpoints, timing verdicts): the
    learner chapter's language cell, run but not shown on the page."""
    i18n.add_language_cell(nb, language)
    nb.cells[1].metadata["tags"] = ["remove-cell"]
    return nb


def write_sources(src: Path, language: str, repository: Repository = HERE) -> list[Path]:
    """Every page of the site in `language` under src; returns the pages written."""
    use_language(language)
    source = language == languages.SOURCE.code
    starters = repository.exercises if source else repository.chapters / language / "exercises"
    pages: dict[Path, str] = {}
    chapters = dict(sorted(chapter_sources(language, repository).items()))
    digest = helpers_digest(language, repository)
    for name, nb in chapters.items():
        pages[src / name] = (
            nbformat.writes(with_page_links(site_chapter(nb, digest, repository))) + "\n"
        )
    exercises = sorted(starters.glob("*/*.ipynb"))
    for starter in exercises:
        page = site_exercise(nbformat.read(starter, as_version=4), repository)
        pages[src / "exercises" / starter.name] = nbformat.writes(page) + "\n"
    pages[src / "exercises" / "index.md"] = exercises_page([p.stem for p in exercises])
    pages[src / "index.md"] = start_page(
        [Path(name).stem for name in chapters], ["exercises/index"]
    )
    for stale in set(src.rglob("*.ipynb")) | set(src.rglob("*.md")):
        if stale not in pages:
            stale.unlink()
    for path, text in pages.items():
        write_if_changed(path, text)
    use_language(languages.SOURCE.code)
    return list(pages)


def site_names(language: str) -> dict[str, str]:
    """The site's title (sidebar, every page's title suffix) and authors (footer) in language."""
    with speaking(language):
        title, authors = _("torch.fx graph capture"), _("the course's authors")
    return {"project": title, "html_title": title, "author": authors, "copyright": authors}


def page_words(language: str) -> dict[str, str]:
    """The words of the site's own templates (courseware/website/_templates) in language."""
    with speaking(language):
        return {
            "fxcourse_language": language,
            # The language switch from this process's registry: Sphinx's own reads no other.
            "fxcourse_editions": json.dumps(language_switch(language), ensure_ascii=False),
            "fxcourse_copyright": _("© Copyright {authors}.").format(
                authors=_("the course's authors")
            ),
            "fxcourse_toggle_label": _("Show or hide the pages of this part"),
            "fxcourse_language_label": _("Language"),
            "fxcourse_pages_label": _("Course pages"),
        }


def theme_words() -> list[str]:
    """The themes' words on every page that their own catalogs leave in English on a Chinese page
    (pydata_sphinx_theme's colour-mode menu, sphinx_book_theme's search field, the buttons and
    the print-only contents' label of courseware/website/_templates) or word for Taiwan
    (列印成 PDF), in the current language."""
    return [
        _("Color mode"),
        _("System Settings"),
        _("Search"),
        _("Print to PDF"),
        _("Toggle primary sidebar"),
        _("Toggle secondary sidebar"),
        _("Contents of this page"),
    ]


def theme_catalogs(build_dir: Path, language: str) -> Path | None:
    """Message catalogs (.mo) holding the themes' words in `language`, for Sphinx's locale_dirs:
    they come before the themes' own (conf.py). None for the source language."""
    if language == languages.SOURCE.code:
        return None
    with speaking(languages.SOURCE.code):
        english = theme_words()
    with speaking(language):
        translated = theme_words()
    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": language}
    for msgid, msgstr in zip(english, translated, strict=True):
        catalog.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    folder = build_dir / "locale"
    messages = folder / languages.get(language).sphinx / "LC_MESSAGES"
    messages.mkdir(parents=True, exist_ok=True)
    for domain in THEME_CATALOGS:
        catalog.save_as_mofile(str(messages / f"{domain}.mo"))
    return folder


def language_switch(language: str) -> list[dict]:
    """Every edition of the site, as the language switch of a page in `language` links them:
    the path from this edition's root to the other's (the page's own name follows it)."""
    to_top = "" if language == languages.SOURCE.code else "../"
    return [
        {
            "code": other.code,
            "label": other.label,
            "path": to_top + other.site_folder,
            "current": other.code == language,
        }
        for other in languages.all_languages()
    ]


def search_words(build_dir: Path, language: str, repository: Repository = HERE) -> Path:
    """A word list for jieba, which splits the Chinese pages into the words search finds: the
    glossary's terms stay whole (else 图中断 is indexed only as 图 and 中断, and a reader who
    searches for it finds nothing)."""
    words = sorted({term.translation for term in i18n.glossary(language, repository)})
    path = build_dir / "search-words.txt"
    write_if_changed(path, "".join(f"{word} 100000\n" for word in words))
    return path


def sphinx_command(
    src: Path, out: Path, build_dir: Path, language: str, repository: Repository = HERE
) -> list[str]:
    """Sphinx with warnings as errors; conf.py links every edition from every page."""
    options = {
        "language": languages.get(language).sphinx,
        "nb_execution_cache_path": str(build_dir / "cache"),
        # every notebook runs in the kernel of this repository's course (conf.py reads no course)
        "nb_kernel_rgx_aliases..*": course_kernel(repository.root)["name"],
        **site_names(language),
    }
    if languages.get(language).search_words:
        options["html_search_options.dict"] = str(search_words(build_dir, language, repository))
    if catalogs := theme_catalogs(build_dir, language):
        options["locale_dirs"] = str(catalogs)
    defines = [arg for key, value in options.items() for arg in ("-D", f"{key}={value}")]
    defines += [
        arg for key, value in page_words(language).items() for arg in ("-A", f"{key}={value}")
    ]
    return [
        *(sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n", "-q"),
        *("-c", str(CONF), "-d", str(build_dir / "doctrees"), *defines, str(src), str(out)),
    ]


def build(out: Path, repository: Repository = HERE) -> int:
    """The English site in out, each translation in out/<code>; returns the first failing
    Sphinx's exit status, else 0. The editions build side by side, each in its own Sphinx with
    its own execution cache (build/site/<code>): executing the chapters is most of the time, one
    kernel at a time."""
    commands = []
    for language in languages.codes():
        folder = repository.build / "site" / language
        target = out / languages.get(language).site_folder
        write_sources(folder / "src", language, repository)  # one at a time: switches language
        commands.append(sphinx_command(folder / "src", target, folder, language, repository))
    builds = [
        subprocess.Popen(
            command, cwd=repository.root, env={**os.environ, LANGUAGE_VARIABLE: language}
        )
        for language, command in zip(languages.codes(), commands, strict=True)
    ]
    statuses = [sphinx.wait() for sphinx in builds]
    return next((status for status in statuses if status), 0)


def main(argv: list[str] | None = None, repository: Repository = HERE) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["build"])
    parser.add_argument("--out", type=Path, default=repository.dist / "site")
    args = parser.parse_args(argv)
    status = build(args.out, repository)
    if status == 0:
        print(f"wrote {args.out}: open {args.out / 'index.html'} in a browser")
    return status
