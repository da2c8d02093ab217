"""The course website (`make site`) in a real browser, read as a reader would.

Runs in `make test-site` (after the site is built; `make test` skips it, as building executes
every chapter twice). Serves dist/site on loopback and drives Debian's headless Chromium: the start
page's table of contents leads to chapter 1; search finds `replace_all_uses_with` in chapter 3,
each result's snippet taken from the page's text; the language switch goes to the Chinese page
and back, keeping the reader's place in a section and the search made; a chapter with graph
pictures and try-its shows every picture whole and a reference answer, its output too, folded
until clicked. The Chinese site's search finds Chinese terms and English ones. Every page visited
is checked for script errors, missing images, pictures wider than the page, raw markup and
Sphinx's error boxes; every page of both editions is loaded once for script errors, read by
axe-core (experimental rules too) and through the browser's accessibility tree (what a screen
reader is given: pictures named by what they show, controls by their visible label, a Chinese
page's chrome in Chinese), and every chapter is read on a 375 px wide phone.
Screenshots: test-artifacts/site/.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from accessibility_tree import (
    CONTROL_ROLES,
    IMAGE_ROLES,
    controls_named_otherwise,
    images_named_badly,
    named_nodes,
)
from browser_lab import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("FXCOURSE_SITE", ROOT / "dist" / "site"))
ARTIFACTS = ROOT / "test-artifacts" / "site"
RAW_MARKUP = ["```", ":::", "{toctree}", "{admonition}", "\\(", "$$", "<div", "**"]

pytestmark = [
    pytest.mark.xdist_group("site"),
    pytest.mark.skipif(
        not os.environ.get("FXCOURSE_SITE_TEST"), reason="the website is tested by make test-site"
    ),
]

JS_PAGE_PROBLEMS = """
() => {
  const main = document.querySelector('main') || document.body;
  const broken = Array.from(main.querySelectorAll('img'))
    .filter((img) => !img.complete || img.naturalWidth === 0).map((img) => img.src);
  const room = main.querySelector('article, .bd-article') || main;
  const scrolls = (el) => {
    for (let up = el.parentElement; up && up !== room; up = up.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(up).overflowX)) return true;
    }
    return false;
  };
  const wide = Array.from(room.querySelectorAll('img, svg'))
    .filter((el) => el.getBoundingClientRect().width > room.getBoundingClientRect().width + 1)
    .filter((el) => !scrolls(el))
    .map((el) => el.outerHTML.slice(0, 80));
  const errors = Array.from(main.querySelectorAll('.system-message, .problematic'))
    .map((el) => el.textContent.slice(0, 120));
  const text = Array.from(main.querySelectorAll('p, li, h1, h2, h3, td'))
    .map((el) => el.innerText).join('\\n');
  return {broken, wide, errors, text};
}
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site_url():
    assert (SITE / "index.html").exists(), f"no site in {SITE}: run `make site` first"
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    """One browser for the module: Playwright's sync API allows one running instance at a time."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def page(browser, site_url):
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.set_default_timeout(30_000)
    tab.errors = []  # script errors and console errors, of every page since the last look
    tab.on("pageerror", lambda error: tab.errors.append(f"{tab.url}: {error}"))
    tab.on(
        "console",
        lambda message: (
            message.type == "error" and tab.errors.append(f"{tab.url}: console: {message.text}")
        ),
    )
    tab.on(  # the console says only "404"; this says which file
        "response",
        lambda response: (
            response.status >= 400
            and tab.errors.append(f"{tab.url}: {response.status} for {response.url}")
        ),
    )
    tab.goto(site_url + "index.html")
    yield tab
    tab.close()


def looked_at(page, name: str) -> dict:
    """Screenshot the page and return what is wrong with it (asserted by the caller)."""
    page.wait_for_load_state("networkidle")
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=False)
    errors, page.errors = page.errors, []
    assert not errors, f"{name}: errors in the page's scripts: {errors}"
    found = page.evaluate(JS_PAGE_PROBLEMS)
    assert not found["broken"], f"{name}: images that did not load: {found['broken']}"
    assert not found["wide"], f"{name}: pictures wider than the page: {found['wide']}"
    assert not found["errors"], f"{name}: Sphinx error boxes: {found['errors']}"
    raw = [mark for mark in RAW_MARKUP if mark in found["text"]]
    assert not raw, f"{name}: raw markup shown as text: {raw}"
    return found


def test_table_of_contents_leads_to_the_chapters(page, site_url):
    page.goto(site_url + "index.html")
    looked_at(page, "01-start-page")
    page.locator("article a", has_text="Chapter 1").first.click()
    assert page.url.endswith("01_symbolic_tracing.html")
    found = looked_at(page, "02-chapter-1")
    assert "symbolic_trace" in found["text"]
    assert page.locator("a.reference", has_text="Chapter 2").count() > 0, "no link onwards"


def test_search_finds_replace_all_uses_with(page, site_url):
    page.goto(site_url + "search.html?q=replace_all_uses_with")
    results = page.locator("#search-results li a")
    results.first.wait_for()
    looked_at(page, "03-search")
    hrefs = [link.get_attribute("href") for link in results.all()]
    assert any("03_graph_transforms" in href for href in hrefs), hrefs


def test_language_switch_goes_to_chinese_and_back(page, site_url):
    page.goto(site_url + "02_fx_ir.html")
    page.locator(".fxcourse-language a", has_text="中文").click()
    assert page.url.endswith("/zh/02_fx_ir.html"), page.url
    found = looked_at(page, "04-chapter-2-chinese")
    assert "图" in found["text"] and "GraphModule" in found["text"]
    page.locator(".fxcourse-language a", has_text="English").click()
    assert page.url.endswith("/02_fx_ir.html") and "/zh/" not in page.url, page.url
    looked_at(page, "05-chapter-2-english-again")


@pytest.mark.parametrize("language", ["", "zh/"])
def test_graph_pictures_whole_and_answers_folded(page, site_url, language):
    page.goto(site_url + language + "04_operator_fusion.html")
    pictures = page.locator("article .cell_output img")
    assert pictures.count() > 0, "chapter 4 shows no graph picture"
    pictures.first.scroll_into_view_if_needed()
    looked_at(page, f"06-chapter-4-picture{'-zh' if language else ''}")
    answers = page.locator(".tag_hide-cell")
    outputs = answers.locator(".cell_output")
    assert outputs.count() > 0, "chapter 4 shows no reference answer with an output"
    folded = answers.locator("details .cell_output")
    assert folded.count() == outputs.count(), "an answer's output is printed outside its fold"
    answer = page.locator(".tag_hide-cell details:has(.cell_output)").first
    code, output = answer.locator(".cell_input"), answer.locator(".cell_output")
    assert not code.is_visible(), "a reference answer is shown before it is asked for"
    assert not output.is_visible(), "a reference answer's output is shown before it is asked for"
    answer.locator("summary").click()
    code.wait_for(state="visible")
    output.wait_for(state="visible")
    answer.scroll_into_view_if_needed()
    # the theme fades an opened fold in: the screenshot shows it once the fade is over
    answer.evaluate("el => Promise.all(el.getAnimations({subtree: true}).map(a => a.finished))")
    looked_at(page, f"07-chapter-4-answer-open{'-zh' if language else ''}")


@pytest.mark.parametrize(
    "query, chapter",
    [("解释器", "05_interpreter"), ("图中断", "06_torch_compile"), ("guard", "06_torch_compile")],
)
def test_chinese_search_finds_chinese_and_english_terms(page, site_url, query, chapter):
    page.goto(site_url + "zh/search.html?q=" + quote(query))
    results = page.locator("#search-results li a")
    results.first.wait_for()
    looked_at(page, f"08-search-zh-{chapter}-{query.encode().hex()[:8]}")
    hrefs = [link.get_attribute("href") for link in results.all()]
    assert any(chapter in href for href in hrefs), hrefs


def test_the_language_switch_keeps_the_section_both_ways(page, site_url):
    page.goto(site_url + "02_fx_ir.html")
    sections = page.locator("article section[id]")
    english_id = sections.nth(3).get_attribute("id")
    page.goto(site_url + f"02_fx_ir.html#{english_id}")
    page.locator(".fxcourse-language a", has_text="中文").click()
    page.wait_for_url("**/zh/02_fx_ir.html#*")
    chinese_id = page.locator("article section[id]").nth(3).get_attribute("id")
    assert page.url.endswith(f"/zh/02_fx_ir.html#{quote(chinese_id)}"), (page.url, chinese_id)
    looked_at(page, "09-switch-kept-the-section-zh")
    page.locator(".fxcourse-language a", has_text="English").click()
    page.wait_for_url(f"**/02_fx_ir.html#{english_id}")
    assert "/zh/" not in page.url
    looked_at(page, "10-switch-kept-the-section-en")


def test_the_chinese_site_names_itself_in_chinese(page, site_url):
    page.goto(site_url + "zh/02_fx_ir.html")
    found = looked_at(page, "11-chapter-2-chinese-sidebar-title")
    assert page.title().endswith("torch.fx 图捕获"), page.title()
    assert "torch.fx 图捕获" in page.locator(".navbar-brand").first.inner_text()
    page.locator("footer").last.scroll_into_view_if_needed()
    looked_at(page, "12-chapter-2-chinese-footer")
    footer = page.locator("footer").all_inner_texts()
    assert "本课程编写组" in " ".join(footer), footer
    assert not re.search("authors|Copyright|By ", " ".join(footer)), footer
    assert "节点" in found["text"]
    boxes = page.locator(".fxcourse-checkpoint").all_inner_texts()
    assert boxes and all("已通过" in box for box in boxes), boxes  # the checkpoints ran in Chinese
    assert "use_language" not in page.locator("article").inner_text()


def test_the_chinese_timing_verdicts_are_in_chinese(page, site_url):
    page.goto(site_url + "zh/04_operator_fusion.html")
    outputs = " ".join(page.locator("article .cell_output").all_inner_texts())
    # the chapter prints the short report: BatchNorm's share, then the verdict
    assert "结论：" in outputs and "份额" in outputs, outputs[-2000:]
    assert "Verdict" not in outputs and "share of" not in outputs


def test_no_page_has_a_script_error(page, site_url):
    pages = site_pages()
    assert len(pages) > 20, pages
    for name in pages:  # networkidle: a resource fetched late (a 404) is seen on its own page
        page.goto(site_url + name, wait_until="networkidle")
    errors, page.errors = page.errors, []
    assert not errors, errors


def site_pages() -> list[str]:
    skip = {"_static", "_sources", "_images"}
    return sorted(
        str(path.relative_to(SITE))
        for path in SITE.rglob("*.html")
        if not skip & set(path.relative_to(SITE).parts)
    )


def test_every_page_in_both_languages_passes_axe(page, site_url):
    """WCAG 2.x A and AA as axe-core checks it (bundled in axe-playwright-python), its best
    practices and its experimental rules (label-content-name-mismatch: WCAG 2.5.3): no serious
    or critical violation on any page, English and Chinese."""
    from axe_check import serious_violations

    pages = site_pages()
    assert "index.html" in pages and "zh/index.html" in pages, pages
    found = {}
    for name in pages:
        page.goto(site_url + name)
        page.wait_for_load_state("networkidle")
        own = len(page.errors)
        if problems := serious_violations(page):
            found[name] = problems
        # axe-core's CSSOM preload fetches each @import again, resolved against the page's URL
        # instead of the stylesheet's (theme.css's "../basic.css" -> /basic.css, a 404): those
        # failures are axe's; the page's own loads are checked by test_no_page_has_a_script_error
        del page.errors[own:]
    assert not found, "\n".join(f"{name}: {problems}" for name, problems in found.items())


CJK = re.compile(r"[\u4e00-\u9fff]")
# Roles whose name a screen reader announces as the page's furniture: the landmarks and the
# controls and pictures outside the article.
LANDMARK_ROLES = {"navigation", "search", "form", "region", "complementary", "banner", "main"}


def english_on_a_chinese_page(nodes) -> list[str]:
    """What a screen reader would say in English on a Chinese page: a picture whose name holds an
    English sentence; outside the article, a control, picture or landmark whose name has no
    Chinese at all (what is marked as another language, lang="en", aside)."""
    from english_prose import english_sentences

    found = []
    for node in nodes:
        if node.lang and not node.lang.startswith("zh"):
            continue
        if node.role in IMAGE_ROLES and (english := english_sentences(node.name)):
            found.append(f"{node}: {english}")
        chrome = node.role in CONTROL_ROLES | IMAGE_ROLES | LANDMARK_ROLES
        if chrome and not node.in_article and node.name.strip() and not CJK.search(node.name):
            found.append(str(node))
    return found


def test_a_screen_reader_is_told_what_each_page_shows(page, site_url):
    """The accessibility tree of every page in both languages, as the browser gives it to a
    screen reader: no picture named by its file or by "graph picture" alone; no control named
    otherwise than its visible label; on a Chinese page no English; every graph picture's name
    says which box feeds which."""
    problems, names, toggles = {}, {}, {}
    for name in site_pages():
        page.goto(site_url + name)
        page.wait_for_load_state("networkidle")
        nodes = named_nodes(page)
        toggles[name] = {n.name for n in nodes if n.role == "DisclosureTriangle"}
        found = [f"picture: {n}" for n in images_named_badly(nodes)]
        found += [f"control: {n}" for n in controls_named_otherwise(nodes)]
        if name.startswith("zh/"):
            found += [f"English: {n}" for n in english_on_a_chinese_page(nodes)]
        if found:
            problems[name] = found
        for kind in ("graph", "chart"):
            pictures = page.locator(f"article img.fxcourse-{kind}")
            names[kind, name] = pictures.evaluate_all("(all) => all.map((i) => i.alt)")
    assert not problems, "\n".join(f"{n}:\n  " + "\n  ".join(p) for n, p in problems.items())
    assert "Show a reference answer" in toggles["02_fx_ir.html"], toggles["02_fx_ir.html"]
    assert "显示参考答案" in toggles["zh/02_fx_ir.html"], toggles["zh/02_fx_ir.html"]
    english = names["graph", "04_operator_fusion.html"]
    assert english and all(" feeds " in alt for alt in english), english[:2]
    chinese = names["graph", "zh/04_operator_fusion.html"]
    assert chinese and all("输出给" in alt for alt in chinese), chinese[:2]
    charts = [alt for alt in names["chart", "05_interpreter.html"] if alt.startswith("Bar chart, ")]
    listed = [alt for alt in charts if re.search(r": [^:;]+? \d[\d,.]*", alt)]  # a label, a value
    assert len(charts) == 2 and listed == charts, charts
    charts = [alt for alt in names["chart", "zh/05_interpreter.html"] if alt.startswith("条形图：")]
    assert len(charts) == 2, names["chart", "zh/05_interpreter.html"]


def chapter_pages() -> list[str]:
    return [name for name in site_pages() if re.match(r"(zh/)?\d\d_\w+\.html$", name)]


def test_no_chapter_scrolls_sideways_on_a_phone(browser, site_url):
    """375 px, an iPhone's width: long identifiers in text wrap, code, tables and outputs scroll
    inside their own box, never the page."""
    pages = chapter_pages()
    assert len(pages) >= 20, pages
    wider = {}
    phone = browser.new_page(viewport={"width": 375, "height": 812}, device_scale_factor=2)
    try:
        for name in pages:
            phone.goto(site_url + name, wait_until="load")
            found = phone.evaluate(JS_WIDER_THAN_THE_WINDOW)
            if found["page"] > found["window"]:
                wider[name] = found
        shown = "10_compile_and_export_in_depth.html"
        for language in ("", "zh/"):
            phone.goto(site_url + language + shown, wait_until="load")
            identifier = phone.locator("article p code", has_text="accumulated_recompile_limit")
            identifier.first.scroll_into_view_if_needed()
            phone.screenshot(path=ARTIFACTS / f"14-phone-{language.strip('/') or 'en'}.png")
    finally:
        phone.close()
    assert not wider, "\n".join(f"{name}: {found}" for name, found in wider.items())


JS_WIDER_THAN_THE_WINDOW = """
() => {
  const window_ = document.documentElement.clientWidth;
  const page = document.documentElement.scrollWidth;
  const scrolls = (el) => {
    for (let up = el.parentElement; up; up = up.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(up).overflowX)) return true;
    }
    return false;
  };
  const culprits = page <= window_ ? [] : Array.from(document.body.querySelectorAll('*'))
    .filter((el) => el.getBoundingClientRect().right > window_ + 1 && !scrolls(el))
    .slice(0, 5).map((el) => el.outerHTML.slice(0, 120));
  return {window: window_, page, culprits};
}
"""


def reading_place(page, index: int) -> float:
    """How far into section `index` the reading line (80 px under the window's top) is."""
    return page.evaluate(
        """(index) => {
          const box = document.querySelectorAll('article section[id]')[index]
            .getBoundingClientRect();
          return (80 - box.top) / box.height;
        }""",
        index,
    )


def test_the_language_switch_keeps_the_reading_place_inside_a_section(page, site_url):
    """A reader halfway through a long section lands halfway through the same section of the
    other edition (not at its heading, nor at the page's top), both ways."""
    page.goto(site_url + "04_operator_fusion.html")
    page.wait_for_load_state("load")
    heights = page.locator("article section[id]").evaluate_all(
        "(all) => all.map((s) => s.getBoundingClientRect().height)"
    )
    index = max(range(1, len(heights)), key=heights.__getitem__)  # the longest but the page
    page.evaluate(
        """(index) => {
          const box = document.querySelectorAll('article section[id]')[index]
            .getBoundingClientRect();
          window.scrollBy(0, box.top + 0.6 * box.height - 80);
        }""",
        index,
    )
    inner = page.evaluate(  # the innermost section at the reading line: the one the switch carries
        """() => { const all = Array.from(document.querySelectorAll('article section[id]'));
          let found = -1; all.forEach((s, i) => { const b = s.getBoundingClientRect();
            if (b.top <= 80 && b.bottom > 80) found = i; }); return found; }"""
    )
    before = reading_place(page, inner)
    page.locator(".fxcourse-language a", has_text="中文").click()
    page.wait_for_url("**/zh/04_operator_fusion.html#*")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert abs(reading_place(page, inner) - before) < 0.02, (before, reading_place(page, inner))
    looked_at(page, "15-switch-kept-the-reading-place-zh")
    page.locator(".fxcourse-language a", has_text="English").click()
    page.wait_for_url("**/04_operator_fusion.html#*")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert "/zh/" not in page.url
    assert abs(reading_place(page, inner) - before) < 0.04, (before, reading_place(page, inner))


def test_the_language_switch_keeps_the_search(page, site_url):
    page.goto(site_url + "search.html?q=" + quote("replace_all_uses_with"))
    page.locator("#search-results li a").first.wait_for()
    page.locator(".fxcourse-language a", has_text="中文").click()
    page.wait_for_url("**/zh/search.html?q=replace_all_uses_with*")
    page.locator("#search-results li a").first.wait_for()
    looked_at(page, "16-switch-kept-the-search-zh")
    assert page.locator("#search-results li").count() > 0
    page.locator(".fxcourse-language a", has_text="English").click()
    page.wait_for_url("**/search.html?q=replace_all_uses_with*")
    assert "/zh/" not in page.url


@pytest.mark.parametrize(
    "language, query, contents", [("", "torch.fx", "Contents"), ("zh/", "节点", "目录")]
)
def test_search_snippets_start_with_the_page_s_text(page, site_url, language, query, contents):
    """A result's snippet is page text: not the theme's colour-mode menu ("System Settings Light
    Dark"), nor the page's contents ("Contents 1.1 ...") or anything else of its chrome."""
    page.goto(site_url + language + "search.html?q=" + quote(query))
    snippets = page.locator("#search-results li p.context")
    snippets.first.wait_for()
    page.wait_for_function("() => document.querySelectorAll('#search-results .context').length > 4")
    looked_at(page, f"17-search-snippets-{language.strip('/') or 'en'}")
    menu = page.locator(".theme-switch-container .dropdown-item").all_text_contents()
    assert len(menu) == 3, menu
    colour_modes = r"\s*".join(re.escape(word.strip()) for word in menu)
    chrome = re.compile(rf"{colour_modes}|{contents}\s*\d+\.\d")  # the menu, the page's contents
    texts = snippets.all_inner_texts()
    assert texts and not [text for text in texts if chrome.search(text)], texts[:3]
