"""axe-core (bundled in axe-playwright-python: nothing is downloaded) over a page open in
Playwright: the serious and critical violations, one line each, for an assert."""

from __future__ import annotations

BLOCKING = ("serious", "critical")


def serious_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options={"resultTypes": ["violations"]})
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:4]}"
        for v in results.response["violations"]
        if v["impact"] in BLOCKING
    ]
