"""Accessible pages (issue 22 point 5): axe-core, the accessibility engine from npm, runs in a
real Chromium on every page type of a live demo board, in the light and the dark theme, at
desktop width and on a 390 px phone, and finds nothing; and a visitor who only has a keyboard
gets from the board to a benchmark to a copied serve command.

axe-core is pinned in the repository's package.json / package-lock.json and installed by
`make test` (`npm ci`, into node_modules/, never committed). Every rule axe runs by default is
on (WCAG 2 A and AA, and its best practices); none is disabled.
"""

from pathlib import Path

import pytest

from demo.bundles import DEMO_MODELS
from tests import test_pages_browser as pages
from tests.conftest import missing_service
from tests.test_pages_browser import DESKTOP, PHONE, Visit, charts_drawn, page_paths

# The page tests' fixtures, shared: one browser, and one demo board for this module.
browser = pages.browser
demo_board = pages.demo_board
evidence_of_the_module = pages.evidence_of_the_module

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# The dark theme both ways a visitor gets it: from the system setting, and picked with the
# toggle (stored, applied as html[data-theme] by js/theme.js) while the system says light.
PICKED_DARK = "window.localStorage.setItem('aeon-theme', 'dark');"
# Every page type in every look; the other states of a page only in the first (their markup is
# the same templates', and each page costs seconds of axe's time).
LOOKS = {
    "light-desktop": ("light", DESKTOP, ""),
    "dark-desktop": ("dark", DESKTOP, ""),
    "light-phone": ("light", PHONE, ""),
    "dark-picked-phone": ("light", PHONE, PICKED_DARK),
}
NOT_FOUND = "/no-such-page/"


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        missing_service(f"needs axe-core ({AXE}): npm ci (make test runs it)")
    return AXE.read_text()


def page_types(board) -> dict[str, str]:
    """One page of each type the board serves (board/urls.py, submissions/urls.py; anchor/urls.py
    serves JSON only), and the 404 page."""
    model = DEMO_MODELS[0].hf_repo.lower()
    paths = page_paths(board)
    return {
        **{
            name: paths[name]
            for name in (
                "board",
                "hardware-index",
                "hardware",
                "models",
                "model",
                "benchmark",
                "run",
                "recipes",
                "recipe",
                "pod",
                "compare",
                "methodology",
                "api-docs",
            )
        },
        "model-class": f"/models/{model}/hardware/dgx-spark-x1/",
        "lab": "/lab/",
        "lab-flag": f"/lab/flags/{sorted(board.differing_flags)[0]}/",
        "datasheet": "/data/",
        "not-found": NOT_FOUND,
    }


def page_variants(board) -> dict[str, str]:
    """The same types in their other states: filtered, empty, queued rungs, self-reported, a
    later page of cases, nothing chosen to compare."""
    paths = page_paths(board)
    return {
        **{n: paths[n] for n in ("board-filtered", "hardware-empty", "benchmark-queued")},
        "benchmark-self-reported": f"/benchmarks/{board.hostile}/",
        "run-page-2": f"/runs/{board.text_run}/?page=2",
        "compare-nothing-chosen": "/compare/",
    }


# A function, not an expression string: the board's CSP refuses eval. Started in every look's tab
# before any is read, so that the tabs (each its own renderer process) run axe at the same time.
START_AXE = """() => {
    window.aeonAxeViolations = axe.run(document, {resultTypes: ['violations']}).then(
        result => result.violations.map(v => ({
            rule: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' :: '
                + n.failureSummary.replace(/\\s+/g, ' ').slice(0, 240)),
            count: v.nodes.length,
        })));
}"""
AXE_VIOLATIONS = "() => window.aeonAxeViolations"


def axe_violations(page) -> list[dict]:
    page.evaluate(START_AXE)
    return page.evaluate(AXE_VIOLATIONS)


def open_every_operation(page) -> list[dict]:
    operations = page.locator(".opblock-summary-control")
    assert operations.count() >= 5
    for index in range(operations.count()):
        operations.nth(index).click()
    page.wait_for_function(
        "n => document.querySelectorAll('.opblock.is-open .responses-table').length === n",
        arg=operations.count(),
    )
    schemas = page.locator(".models.is-open .model-box-control[aria-expanded=false]")
    for _ in range(min(schemas.count(), 4)):
        schemas.first.click()
    page.wait_for_function(
        "() => document.querySelectorAll('.models .model-box-control[aria-expanded=true]')"
        ".length >= 4"
    )
    try_out = page.locator(".try-out__btn:not(.cancel)")  # pressed, it becomes "Cancel"
    for _ in range(try_out.count()):
        try_out.first.click()
    assert try_out.count() == 0
    page.wait_for_selector(".btn.execute")
    return axe_violations(page)


def look_visit(browser, look: str, axe_source: str) -> Visit:
    scheme, viewport, init = LOOKS[look]
    visit = Visit(browser, scheme=scheme, viewport=viewport)
    if init:
        visit.context.add_init_script(init)
    # Injected like the CSP probe, before any page script: a <script> tag would be refused by
    # the board's own policy, as it should be.
    visit.context.add_init_script(axe_source)
    return visit


def test_axe_finds_no_violation_on_any_page_in_any_look(browser, demo_board, axe_source):
    """Every page in every look, one tab a look, the looks side by side: each page is opened in
    every tab at once, and axe runs in all of them at once, so that one tab's load and its axe
    run overlap the others'."""
    visits = {look: look_visit(browser, look, axe_source) for look in LOOKS}
    first = next(iter(LOOKS))
    every, variants = page_types(demo_board), page_variants(demo_board)
    found = {}
    for name, path in (every | variants).items():
        url = demo_board.url + path
        looks = {look: v for look, v in visits.items() if name in every or look == first}
        answers = {look: v.page.goto(url, wait_until="commit") for look, v in looks.items()}
        for look, visit in looks.items():
            visit.page.wait_for_load_state("load")  # as Visit.open waits
            if path == NOT_FOUND:
                assert answers[look].status == 404, look
                # The one answer meant to fail, and the console line Chromium logs for it.
                visit.problems.remove(f"HTTP 404: {url}")
                visit.problems.remove(
                    "console: Failed to load resource: the server responded with a status of 404"
                    " (Not Found)"
                )
            else:
                assert answers[look].status == 200, (look, url, answers[look].status)
            if name == "api-docs":
                visit.page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
            elif visit.page.locator(".chart").count():
                charts_drawn(visit.page)
            if LOOKS[look][2] and name != "api-docs":  # Swagger UI has one theme, its own
                assert visit.page.evaluate("document.documentElement.dataset.theme") == "dark"
            visit.page.evaluate(START_AXE)
        for look, visit in looks.items():
            if violations := visit.page.evaluate(AXE_VIOLATIONS):
                found[f"{look} {name}"] = violations
            if name == "api-docs":
                # Swagger UI draws more as it is used: every operation opened, a few schemas
                # opened, "Try it out" pressed on each operation.
                if opened := open_every_operation(visit.page):
                    found[f"{look} {name}-opened"] = opened
    assert found == {}, found
    for visit in visits.values():
        visit.close()


FOCUSED = """() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const style = getComputedStyle(e);
    return {
        tag: e.tagName.toLowerCase(), href: e.getAttribute('href') || '',
        copies: e.getAttribute('data-copy') || '', text: e.textContent.trim().slice(0, 60),
        outline: style.outlineStyle, outlineWidth: parseFloat(style.outlineWidth),
        visible: e.matches(':focus-visible'),
    };
}"""


def tab_to(page, wanted, *, limit: int = 400) -> list[dict]:
    """Presses Tab until the focused element is `wanted`; every element on the way shows its
    focus (a visible outline: :focus-visible, outline-style not none, wider than nothing)."""
    passed = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused is None:
            continue
        assert focused["visible"], focused
        assert focused["outline"] != "none" and focused["outlineWidth"] >= 2, focused
        passed.append(focused)
        if wanted(focused):
            return passed
    raise AssertionError(f"not reached in {limit} Tab presses: {passed[-5:]}")


def test_a_keyboard_alone_goes_from_the_board_to_a_benchmark_to_a_copied_command(
    browser, demo_board
):
    visit = Visit(browser, permissions=["clipboard-read", "clipboard-write"])
    page = visit.page
    visit.open(demo_board.url + "/")
    target = f"/benchmarks/{demo_board.flagship}/"
    on_the_way = tab_to(page, lambda f: f["tag"] == "a" and f["href"] == target)
    # The first stop is the skip link, shown when focused.
    assert on_the_way[0]["href"] == "#main" and on_the_way[0]["text"] == "Skip to content"
    # Shift+Tab goes back one stop and Tab returns: the order is the same both ways.
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED)["href"] == on_the_way[-2]["href"]
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED)["href"] == target
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{target}")
    page.wait_for_load_state("networkidle")

    command = page.locator("#cmd-docker").inner_text()
    assert command.startswith("docker run") and "--max-num-seqs" in command, command
    tab_to(page, lambda f: f["tag"] == "button" and f["copies"] == "cmd-docker")
    page.keyboard.press("Space")
    page.wait_for_function(
        "() => document.activeElement.textContent === 'Copied'"
        " && document.querySelector('[role=status]').textContent !== ''"
    )
    assert page.evaluate("navigator.clipboard.readText()") == command
    # Told to a screen reader too, not only shown on the button.
    assert "Copied" in page.locator("[role=status]").inner_text()
    # Enter works on the button as well.
    page.wait_for_function("() => document.activeElement.textContent === 'Copy'", timeout=5000)
    page.evaluate("navigator.clipboard.writeText('')")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.activeElement.textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == command
    visit.close()
