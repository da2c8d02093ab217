"""axe-core (bundled in axe-playwright-python: nothing is downloaded) over a page open in
Playwright: the serious and critical violations, one line each, for an assert.

The rules run are WCAG 2.0, 2.1 and 2.2 A and AA, axe's best practices, and axe's experimental
rules, which a default run skips: among them label-content-name-mismatch (WCAG 2.5.3, Label in
Name: a control's accessible name holds its visible label).
"""

from __future__ import annotations

BLOCKING = ("serious", "critical")
RULE_TAGS = [
    "wcag2a",
    "wcag2aa",
    "wcag21a",
    "wcag21aa",
    "wcag22aa",
    "best-practice",
    "experimental",
]


def violations(page) -> list[dict]:
    """axe's violations on the page: its rule (id), impact, help and the nodes it found."""
    from axe_playwright_python.sync_playwright import Axe

    options = {"runOnly": {"type": "tag", "values": RULE_TAGS}, "resultTypes": ["violations"]}
    return Axe().run(page, options=options).response["violations"]


def serious_violations(page) -> list[str]:
    return [
        f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']} at "
        f"{[n['target'] for n in v['nodes']][:4]}"
        for v in violations(page)
        if v["impact"] in BLOCKING
    ]
