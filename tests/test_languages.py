"""fxcourse/languages.py, the one list of the course's languages: a third language is one entry
plus its catalog folder, and flows from there through `make translations`, `make chapters`, the
site's editions and language switch, the student edition and the workspace (each at the level
of the functions those commands call: the site is never built here)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from courseware import authoring, edition, i18n, website
from courseware.repository import HERE, Repository
from fxcourse import languages, messages, workspace

ROOT = HERE.root
FRENCH = languages.Language("fr", "Français", "fr", lab_locale="fr_FR")
KERNEL_HINT = "this kernel lacks the course's packages: Kernel > Change Kernel > {kernel}"


def test_the_registry_lists_the_source_first_and_each_translation():
    assert languages.codes()[0] == languages.SOURCE.code == "en"
    assert languages.codes()[1:] == languages.translation_codes() and "zh" in languages.codes()
    listed = subprocess.run(
        [sys.executable, "-m", "fxcourse.languages", "codes"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert listed.stdout.split() == languages.codes()


@pytest.mark.parametrize(
    ("locale", "code"),
    [("zh_CN.UTF-8", "zh"), ("zh", "zh"), ("zh-TW", "zh"), ("C.UTF-8", "en"), ("", "en")],
)
def test_a_locale_picks_its_course_language(locale, code):
    assert languages.for_locale(locale) == code


@pytest.fixture
def french(tmp_path, monkeypatch):
    """French registered, with the catalogs (copies of courseware/locale/ and fxcourse/locale/)
    in a temporary folder: the repository's own files are never written."""
    course = Repository(HERE.root, tmp_path / "locale", tmp_path / "runtime-locale")
    shutil.copytree(HERE.locales, course.locales)
    shutil.copytree(HERE.runtime_locales, course.runtime_locales)
    monkeypatch.setattr(languages, "TRANSLATIONS", (*languages.TRANSLATIONS, FRENCH))
    # fxcourse's messages, at run time, read the learner package's catalog (the copy's)
    monkeypatch.setattr(messages, "LOCALES", course.runtime_locales)
    messages._catalog.cache_clear()
    yield course
    messages._catalog.cache_clear()


@pytest.mark.end_to_end
def test_a_third_language_flows_through_translations_and_chapters(french, capsys):
    assert i18n.main(["update"], french) == 0  # `make translations`
    assert (french.locales / "fr" / "01_symbolic_tracing.po").exists()
    assert "fr/fxcourse.po" in capsys.readouterr().out
    assert (french.runtime_locales / "fr" / "fxcourse.po").exists()  # the learner package's
    title = i18n.texts_of(nbformat.read(HERE.sources / "02_fx_ir.ipynb", as_version=4))
    english_title = next(text.text for text in title if text.kind == "markdown")
    i18n.fill("02_fx_ir", "fr", {english_title: "# Chapitre 2 : l'IR de FX"}, french)
    i18n.fill("fxcourse", "fr", {KERNEL_HINT: "il manque au noyau les paquets du cours"}, french)

    derived = authoring.derived_files(french)  # `make chapters`
    chapter = nbformat.reads(derived[HERE.chapters / "fr" / "02_fx_ir.ipynb"], as_version=4)
    assert chapter.cells[0].source.startswith("# Chapitre 2 : l'IR de FX")
    assert "il manque au noyau les paquets du cours" in chapter.cells[1].source
    assert 'use_language("fr")' in chapter.cells[2].source
    answers = json.loads(derived[HERE.answers.with_suffix(".fr.json")])
    assert answers.keys() == json.loads(derived[HERE.answers]).keys()
    starters = [p for p in derived if p.parent.parent == HERE.chapters / "fr" / "exercises"]
    released = {p.parent.name for p in (HERE.chapters / "exercises").glob("*/*.ipynb")}
    assert {p.parent.name for p in starters} == released and released
    assert HERE.chapters / "zh" / "02_fx_ir.ipynb" in derived  # the others still there
    assert any("fr" in problem for problem in i18n.all_problems("fr", french))  # the rest to do


def test_a_third_language_gets_a_site_edition_and_a_place_in_every_switch(french, tmp_path):
    switch = {code: website.language_switch(code) for code in languages.codes()}
    assert [edition["label"] for edition in switch["en"]] == ["English", "中文", "Français"]
    paths = {code: {e["code"]: e["path"] for e in editions} for code, editions in switch.items()}
    assert paths["en"] == {"en": "", "zh": "zh/", "fr": "fr/"}
    assert paths["fr"] == {"en": "../", "zh": "../zh/", "fr": "../fr/"}
    assert [e["code"] for e in switch["fr"] if e["current"]] == ["fr"]
    command = website.sphinx_command(tmp_path / "src", tmp_path / "out", tmp_path / "b", "fr")
    assert "language=fr" in command and "fxcourse_language=fr" in command
    assert not (tmp_path / "b" / "search-words.txt").exists()  # no jieba word list for French


def test_a_third_language_reaches_the_student_edition_and_the_workspace(french):
    assert "chapters/fr/*.ipynb" in edition.translated_patterns()
    names = ["chapters/fr/01_symbolic_tracing.ipynb", "fxcourse/answers.fr.json", "solutions/x"]
    assert edition.selected(names, answers=True) == names[:2]
    assert edition.selected(names, answers=False) == names[:1]
    assert workspace.chapters_in(ROOT, "fr") == ROOT / "chapters" / "fr"
    assert workspace.chapters_in(ROOT, "en") == ROOT / "chapters"


def test_jupyterlab_speaks_a_translations_locale(french, tmp_path):
    workspace.write_lab_language(tmp_path, "fr")
    setting = tmp_path / workspace.LAB_SETTINGS / "@jupyterlab" / "translation-extension"
    assert json.loads((setting / "plugin.jupyterlab-settings").read_text()) == {"locale": "fr_FR"}
    workspace.write_lab_language(tmp_path / "en", "en")
    assert not (tmp_path / "en").exists()


# A throw-away language: one registry entry and one catalog, both made here, on a course of one
# tiny chapter, reach a learner's workspace (`make chapters`, `make lab`) and a built site.
TESTISH = languages.Language("xx", "Testish", "xx")
TINY_TITLE, TINY_PRINTED = "# A tiny chapter", '"a graph of two nodes"'
TESTISH_WORDS = {TINY_TITLE: "# Ze tiny chapter", TINY_PRINTED: '"ze graph of two nodes"'}


@pytest.fixture
def testish(tmp_path, monkeypatch):
    """A course of one chapter in tmp_path/course (and its README), the throw-away language in
    the registry, empty catalog folders: the tools read these instead of the repository's."""
    course = Repository(tmp_path / "course")
    chapter = nbformat.v4.new_notebook()
    chapter.cells = [
        nbformat.v4.new_markdown_cell(TINY_TITLE),
        nbformat.v4.new_code_cell(f"print({TINY_PRINTED})"),
    ]
    course.sources.mkdir(parents=True)
    nbformat.write(chapter, course.sources / "01_tiny.ipynb")
    for folder in (course.exercises, course.package, course.root / "courseware"):
        folder.mkdir(parents=True)
    (course.root / "grader" / "safegrade").mkdir(parents=True)
    course.edition_templates.mkdir(parents=True)
    (course.edition_templates / "README.md").write_text("# The course\n")
    monkeypatch.setattr(languages, "TRANSLATIONS", (*languages.TRANSLATIONS, TESTISH))
    # fxcourse's messages, at run time, read the learner package's catalog (the course's)
    monkeypatch.setattr(messages, "LOCALES", course.runtime_locales)
    messages._catalog.cache_clear()
    yield course
    messages._catalog.cache_clear()
    messages.use_language(languages.SOURCE.code)


def test_a_throwaway_language_gets_a_workspace_and_a_site(testish, tmp_path):
    document = i18n.Document("01_tiny", testish.sources / "01_tiny.ipynb", repository=testish)
    catalog = i18n.merged_catalog(document.name, "xx", document.texts(), testish)  # its one
    assert {entry.msgid for entry in catalog} == set(TESTISH_WORDS)
    for entry in catalog:
        entry.msgstr = TESTISH_WORDS[entry.msgid]
    path = i18n.catalog_path(document.name, "xx", testish)
    path.parent.mkdir(parents=True)
    catalog.save(str(path))

    authoring.build(testish)  # `make chapters`
    mine = tmp_path / "workspace-xx"
    # `make lab LANG=xx`
    workspace.sync(mine, testish.root, language="xx", exchange=tmp_path / "exchange")
    chapter = nbformat.read(mine / "01_tiny.ipynb", as_version=4)
    assert chapter.cells[0].source == "# Ze tiny chapter"
    assert 'use_language("xx")' in chapter.cells[2].source
    assert 'print("ze graph of two nodes")' in chapter.cells[3].source

    build, out = tmp_path / "build", tmp_path / "site"  # `make site`, the new edition
    website.write_sources(build / "src", "xx", testish)
    command = website.sphinx_command(build / "src", out, build, "xx", testish)
    env = {**os.environ, messages.LANGUAGE_VARIABLE: "xx"}
    done = subprocess.run(command, cwd=testish.root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (out / "01_tiny.html").read_text(encoding="utf-8")
    assert "Ze tiny chapter" in page and 'lang="xx"' in page
    assert "ze graph of two nodes" in page.replace('"', "")  # executed: the output is there
    assert "Testish" in page and "中文" in page  # every edition in its language switch
