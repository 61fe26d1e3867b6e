"""The pages as a visitor sees them, in a real Chromium, against a live board holding demo jobs
uploaded through the real signing pod client.

One browser for the session, one board of demo data for the module (loading it takes seconds,
and no test here writes). Every page is checked in light and dark, at desktop width and on a
390 px phone: status 200, no console error, no CSP violation, no failed request. Screenshots go
to var/screenshots/.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import override_settings, setup_databases, teardown_databases

from board.models import Badge
from board.perf import CohortMark
from demo.bundles import DEMO_MODELS, RECIPE_HISTORY, TEXT_SUITE_ID, job_bundles
from demo.loader import prefill_hub_cache
from demo.podclient import PodClient
from evidence.signing import key_fingerprint
from recipes.scrub import scrub_recipe
from tests.boardjobs import as_local_run, core_job, read_api, submit_job

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "var" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOSTILE_NAME = '<script>alert("pwned")</script> & co'
# Reports every CSP violation as a console error, which the page fixture collects.
CSP_PROBE = (
    "document.addEventListener('securitypolicyviolation', e => console.error("
    "'CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));"
)
DESKTOP = {"width": 1280, "height": 900}
RAW_CODES = [code for code in [*Badge.values, *CohortMark] if "_" in code]
PHONE = {"width": 390, "height": 844}


@dataclass
class DemoBoard:
    url: str
    blob_dir: Path
    flagship: str = ""  # the gemma benchmark with every board: charts, agentic, vision
    retune: str = ""  # the same model and class, an earlier recipe
    queued: str = ""  # rungs above --max-num-seqs
    rtx: str = ""
    rtx_model: str = ""
    recipe: str = ""  # the flagship's recipe id
    retune_recipe: str = ""
    hostile: str = ""
    pod: str = ""
    text_run: str = ""
    differing_flags: set[str] = field(default_factory=set)


def is_test_database(connection) -> bool:
    name = str(connection.settings_dict["NAME"])
    return name.startswith("test_") or "mode=memory" in name or name == ":memory:"


def _flags_by_name(bundle: dict) -> dict[str, str]:
    flags = (scrub_recipe(bundle["recipe"]) or {}).get("flags") or []
    pairs, index = {}, 0
    while index < len(flags):
        name, value = flags[index], ""
        if index + 1 < len(flags) and not flags[index + 1].startswith("--"):
            value = flags[index + 1]
            index += 1
        pairs[name] = value
        index += 1
    return pairs


@pytest.fixture(scope="module")
def demo_board(django_db_setup, django_db_blocker, tmp_path_factory, chromium_path):
    """A live board of its own for the module, loaded once through the pod protocol; the
    database is flushed afterwards like any transactional test's."""
    from pytest_django.live_server_helper import LiveServer

    blob_dir = tmp_path_factory.mktemp("browser-blobs")
    with django_db_blocker.unblock(), override_settings(AEON_BLOB_DIR=blob_dir):
        # The tests here carry no django_db marker (they only browse; a per-test transaction
        # would open a second connection under Playwright that the database teardown trips
        # over), so when only this module runs pytest-django has set up no test database.
        own_database = None
        if not is_test_database(connection):
            own_database = setup_databases(verbosity=0, interactive=False, aliases={"default"})
        server = LiveServer("localhost:0")
        try:
            prefill_hub_cache()
            board = DemoBoard(url=server.url, blob_dir=blob_dir)

            def pod() -> PodClient:
                client = PodClient(server.url, timeout=60)
                assert client.enroll().status == 200
                return client

            spark = pod()
            board.pod = key_fingerprint(spark.public_key)
            flagship = job_bundles(DEMO_MODELS[0], started="2026-11-01T10:00:00Z")
            answers = submit_job(spark, flagship)
            board.flagship = answers[0].body["benchmark_id"]
            board.text_run = answers[0].body["run_id"]
            retune = core_job(RECIPE_HISTORY[0], started="2026-10-10T09:00:00Z")
            board.retune = submit_job(spark, retune)[0].body["benchmark_id"]
            new, old = _flags_by_name(flagship[0][3]), _flags_by_name(retune[0][3])
            board.differing_flags = {n for n in set(new) | set(old) if new.get(n) != old.get(n)}
            queued_model = next(m for m in DEMO_MODELS if "27B" in m.display_name)
            board.queued = submit_job(pod(), core_job(queued_model))[0].body["benchmark_id"]
            rtx_model = next(m for m in DEMO_MODELS if m.detected_label == "RTX 5090 32GB")
            board.rtx = submit_job(pod(), core_job(rtx_model))[0].body["benchmark_id"]
            board.rtx_model = rtx_model.hf_repo.lower()
            flagship_detail = read_api(server.url, f"/api/v1/benchmarks/{board.flagship}").body
            board.recipe = flagship_detail["recipe_id"]
            retune_detail = read_api(server.url, f"/api/v1/benchmarks/{board.retune}").body
            board.retune_recipe = retune_detail["recipe_id"]
            text = [e for e in job_bundles(DEMO_MODELS[2]) if e[1] == TEXT_SUITE_ID][0]
            hostile = pod().submit_run(HOSTILE_NAME, TEXT_SUITE_ID, "text", as_local_run(text[3]))
            assert hostile.status == 200, hostile.body
            board.hostile = hostile.body["benchmark_id"]
            yield board
        finally:
            server.stop()
            call_command("flush", interactive=False, verbosity=0)
            if own_database is not None:
                teardown_databases(own_database, verbosity=0)


@pytest.fixture(autouse=True)
def evidence_of_the_module(demo_board, settings):
    """conftest gives each test a fresh blob folder; this module's bundles live in one."""
    settings.AEON_BLOB_DIR = demo_board.blob_dir


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls around it
    # (loading, flushing) are still synchronous and safe.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Visit:
    """A browser tab that records console errors, CSP violations and failed requests."""

    def __init__(self, browser, *, scheme: str = "light", viewport: dict = DESKTOP, **context):
        self.context = browser.new_context(color_scheme=scheme, viewport=viewport, **context)
        self.context.add_init_script(CSP_PROBE)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.on(
            "console",
            lambda m: self.problems.append(f"console: {m.text}") if m.type == "error" else None,
        )
        self.page.on("requestfailed", self._failed)
        self.page.on(
            "response",
            lambda r: (
                self.problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None
            ),
        )

    def _failed(self, request) -> None:
        # A request the next navigation cancels (the favicon a page was still fetching when a
        # test moved on) fails net::ERR_ABORTED: the tab's own doing, not the board's.
        if request.failure != "net::ERR_ABORTED":
            self.problems.append(f"failed: {request.url} ({request.failure})")

    def open(self, url: str):
        """The page once its load event has fired: its scripts, style sheets and images are in
        and its scripts have run. Not Playwright's "networkidle" (half a second with no request
        on top of that, at every page): the board's pages ask for nothing after their load but
        the API docs' schema, which their tests wait for, and the charts, drawn from data in the
        page (`charts_drawn`)."""
        response = self.page.goto(url)
        assert response.status == 200, (url, response.status)
        return response

    def close(self) -> None:
        self.context.close()
        assert self.problems == []


def test_the_demo_board_holds_ranked_benchmarks_on_two_classes(demo_board):
    ranked = read_api(demo_board.url, "/api/v1/benchmarks?ranked=1").body["results"]
    assert {b["hardware_class"]["slug"] for b in ranked} == {"dgx-spark-x1", "nvidia-rtx-5090-x1"}
    assert demo_board.flagship in {b["id"] for b in ranked}


def page_paths(board: DemoBoard) -> dict[str, str]:
    return {
        "board": "/",
        "board-filtered": "/?hardware=dgx-spark-x1&ranked=1",
        "hardware-index": "/hardware/",
        "hardware": "/hardware/dgx-spark-x1/",
        "hardware-empty": "/hardware/dgx-spark-x2/",
        "recipe": f"/recipes/{board.recipe}/",
        "models": "/models/",
        "model": f"/models/{DEMO_MODELS[0].hf_repo.lower()}/",
        "benchmark": f"/benchmarks/{board.flagship}/",
        "benchmark-queued": f"/benchmarks/{board.queued}/",
        "run": f"/runs/{board.text_run}/",
        "compare": f"/compare/?a={board.flagship}&b={board.retune}",
        "pod": f"/pods/{board.pod}/",
        "recipes": "/recipes/",
        "methodology": "/methodology/",
        "api-docs": "/api/docs/",
    }


def charts_drawn(page) -> int:
    # Functions, not expression strings: Playwright evaluates those with eval, which our
    # CSP rightly refuses.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.chart')].every(c => c.querySelector('.main-svg'))",
        timeout=20000,
    )
    return page.locator(".chart").count()


@pytest.mark.parametrize(
    ("scheme", "viewport"),
    [("light", DESKTOP), ("dark", PHONE)],
    ids=["light-desktop", "dark-phone"],
)
def test_every_page_loads_clean(browser, demo_board, scheme, viewport):
    visit = Visit(browser, scheme=scheme, viewport=viewport)
    for name, path in page_paths(demo_board).items():
        visit.open(demo_board.url + path)
        if name == "api-docs":
            visit.page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
            continue
        if visit.page.locator(".chart").count():
            charts_drawn(visit.page)
        # Badges and cohort marks read in words: no raw code is shown unexplained (the
        # methodology names the codes on purpose, beside what they mean).
        text = visit.page.locator("main").inner_text()
        shown = [code for code in RAW_CODES if code in text and name != "methodology"]
        assert shown == [], (name, shown)
        # Usable on a phone: the page itself never scrolls sideways (wide tables scroll in
        # their own box), and the background follows the theme.
        overflow = visit.page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, (name, overflow)
        background = visit.page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == ("rgb(13, 17, 23)" if scheme == "dark" else "rgb(255, 255, 255)")
    visit.close()


def test_screenshots_of_the_main_pages_in_both_themes(browser, demo_board):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    paths = page_paths(demo_board)
    for scheme in ("light", "dark"):
        visit = Visit(browser, scheme=scheme)
        for name in ("board", "hardware", "benchmark", "recipe", "compare", "run", "model"):
            visit.open(demo_board.url + paths[name])
            if visit.page.locator(".chart").count():
                charts_drawn(visit.page)
            target = SCREENSHOTS / f"{name}-{scheme}.png"
            visit.page.screenshot(path=str(target), full_page=name != "run")
            assert target.stat().st_size > 10_000
        visit.close()
    phone = Visit(browser, scheme="dark", viewport=PHONE)
    for name in ("board", "hardware", "benchmark", "recipe"):
        phone.open(demo_board.url + paths[name])
        if phone.page.locator(".chart").count():
            charts_drawn(phone.page)
        phone.page.screenshot(path=str(SCREENSHOTS / f"{name}-dark-phone.png"))
    phone.close()


def test_a_benchmark_draws_its_five_charts_and_explains_its_marks(browser, demo_board):
    visit = Visit(browser)
    visit.open(f"{demo_board.url}/benchmarks/{demo_board.flagship}/")
    assert charts_drawn(visit.page) == 5
    visit.open(f"{demo_board.url}/benchmarks/{demo_board.queued}/")
    assert charts_drawn(visit.page) == 5
    # Queued rungs: labelled in the table in plain words, drawn as their own trace, explained.
    marks = visit.page.locator("#cohorts .mark").all_inner_texts()
    assert marks and set(marks) == {"queued beyond max-num-seqs"}
    assert "queued_beyond_max_num_seqs" not in visit.page.locator("main").inner_text()
    legend = visit.page.locator("#chart-aggregate .legendtext").evaluate_all(
        "texts => texts.map(t => t.textContent)"
    )
    assert "queued beyond max-num-seqs" in legend
    explained = visit.page.locator("ul.explain").last.inner_text()
    assert "--max-num-seqs" in explained
    visit.close()


def test_charts_follow_the_theme_toggle_and_the_choice_is_remembered(browser, demo_board):
    visit = Visit(browser, scheme="light")
    url = f"{demo_board.url}/benchmarks/{demo_board.flagship}/"
    visit.open(url)
    charts_drawn(visit.page)
    title_colour = "getComputedStyle(document.querySelector('#chart-aggregate .xtitle')).fill"
    light = visit.page.evaluate(title_colour)
    toggle = visit.page.locator(".theme-toggle")
    assert toggle.inner_text() == "Theme: system"
    toggle.click()  # system → light
    toggle.click()  # light → dark
    assert toggle.inner_text() == "Theme: dark"
    visit.page.wait_for_function(f"() => {title_colour} !== {light!r}")
    assert visit.page.evaluate("document.documentElement.dataset.theme") == "dark"
    visit.open(url)
    # Set by the blocking head script, before the body was parsed: no flash of light.
    assert visit.page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert visit.page.evaluate("getComputedStyle(document.body).backgroundColor") == (
        "rgb(13, 17, 23)"
    )
    visit.close()


def test_a_copy_button_puts_the_serve_flags_on_the_clipboard(browser, demo_board):
    visit = Visit(browser, permissions=["clipboard-read", "clipboard-write"])
    visit.open(f"{demo_board.url}/benchmarks/{demo_board.flagship}/")
    expected = visit.page.locator("#recipe-flags").inner_text()
    assert "--max-num-seqs" in expected and "--host" not in expected
    visit.page.locator("button.copy[data-copy=recipe-flags]").click()
    visit.page.wait_for_function(
        "() => document.querySelector('button.copy').textContent === 'Copied'"
    )
    assert visit.page.evaluate("navigator.clipboard.readText()") == expected
    visit.close()


def test_a_copy_button_puts_the_docker_run_command_on_the_clipboard(browser, demo_board):
    visit = Visit(browser, permissions=["clipboard-read", "clipboard-write"])
    for path, element in (
        (f"/recipes/{demo_board.recipe}/", "cmd-1-docker"),
        (f"/benchmarks/{demo_board.flagship}/", "cmd-docker"),
    ):
        visit.open(demo_board.url + path)
        command = visit.page.locator(f"#{element}").inner_text()
        assert command.startswith("docker run") and "--max-num-seqs" in command, command
        button = visit.page.locator(f"button.copy[data-copy={element}]")
        button.click()
        visit.page.wait_for_function(
            f"() => document.querySelector('button.copy[data-copy={element}]').textContent"
            " === 'Copied'"
        )
        assert visit.page.evaluate("navigator.clipboard.readText()") == command
    visit.close()


def test_a_recipe_page_shows_its_json_commands_benchmarks_and_diff(browser, demo_board):
    visit = Visit(browser)
    visit.open(f"{demo_board.url}/recipes/{demo_board.recipe}/")
    recipe = json.loads(visit.page.locator("#recipe-json").inner_text())
    assert recipe["id"] == demo_board.recipe and "--max-num-seqs" in recipe["flags"]
    assert visit.page.locator("#cmd-1-hf").inner_text().startswith("huggingface-cli download")
    benchmarks = visit.page.locator("table.runs tbody tr")
    assert benchmarks.count() >= 1
    # The retune's recipe against the flagship's, which holds the class's throughput crown:
    # the diff names the flags that differ.
    visit.open(f"{demo_board.url}/recipes/{demo_board.retune_recipe}/")
    diff = visit.page.locator(".diff-box ul.diff").first.inner_text()
    assert demo_board.differing_flags & set(diff.split()), diff
    visit.close()


def test_the_class_selector_changes_the_champions(browser, demo_board):
    visit = Visit(browser)
    visit.open(demo_board.url + "/")
    heading = visit.page.locator("h2#champions")
    assert heading.inner_text() == "Champions on Single DGX Spark"
    throughput = visit.page.locator(".card.crown[data-axis=throughput]")
    assert DEMO_MODELS[0].hf_repo.lower() in throughput.inner_text()
    assert "@ c" in throughput.locator(".cohort").inner_text()  # every speed names its cohort
    assert visit.page.locator(".card.crown").count() == 4
    visit.page.locator("ul.class-picker").get_by_role(
        "link", name="NVIDIA RTX 5090", exact=True
    ).click()
    visit.page.wait_for_url("**hardware=nvidia-rtx-5090-x1**")
    assert heading.inner_text() == "Champions on NVIDIA RTX 5090"
    assert demo_board.rtx_model in throughput.inner_text()
    assert DEMO_MODELS[0].hf_repo.lower() not in throughput.inner_text()
    recipe_link = throughput.locator("a.recipe-link")
    recipe_link.click()
    visit.page.wait_for_load_state("networkidle")
    assert visit.page.locator("h1").inner_text().startswith("Recipe ")
    visit.close()


def test_a_hardware_class_draws_its_crown_history_per_axis(browser, demo_board):
    visit = Visit(browser)
    visit.open(f"{demo_board.url}/hardware/dgx-spark-x1/")
    assert charts_drawn(visit.page) == 4  # throughput, single stream, latency, quality
    assert visit.page.locator(".card.crown").count() == 4
    history = visit.page.locator("#history-throughput tbody tr")
    assert history.count() >= 1
    assert "holds it" in history.last.inner_text()
    visit.close()


def test_compare_highlights_the_flags_that_differ(browser, demo_board):
    assert demo_board.differing_flags  # the demo's retune changed at least one flag
    visit = Visit(browser)
    visit.open(f"{demo_board.url}/compare/?a={demo_board.flagship}&b={demo_board.retune}")
    highlighted = visit.page.locator("table.recipe-diff tr.differs th").all_inner_texts()
    assert demo_board.differing_flags <= set(highlighted), highlighted
    same = visit.page.locator("table.recipe-diff tr:not(.differs) th").all_inner_texts()
    assert "--max-model-len" in same
    charts_drawn(visit.page)
    visit.close()


def test_a_hostile_model_name_renders_as_text(browser, demo_board):
    visit = Visit(browser)
    dialogs = []
    visit.page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    # A local run is self-reported: listed on the board behind its filter, and its model is not on
    # the public model list (docs/website.md §Pages); its own pages show the name as text.
    for path in ("/?ranked=&self_reported=1", f"/benchmarks/{demo_board.hostile}/"):
        visit.open(demo_board.url + path)
        assert HOSTILE_NAME in visit.page.locator("main").inner_text(), path
    visit.page.locator("main a", has_text="<script>").first.click()
    visit.page.wait_for_load_state("networkidle")
    assert visit.page.locator("h1").inner_text() == HOSTILE_NAME
    assert dialogs == []
    visit.close()


def test_the_class_selector_lists_the_spark_presets_and_filters_in_the_url(browser, demo_board):
    visit = Visit(browser)
    visit.open(demo_board.url + "/")
    picker = visit.page.locator("ul.class-picker")
    for name in ("Single DGX Spark", "2× DGX Spark", "3× DGX Spark", "4× DGX Spark"):
        assert picker.get_by_text(name, exact=True).count() == 1, name
    assert picker.locator("span[aria-disabled=true]", has_text="2× DGX Spark").count() == 1
    picker.get_by_role("link", name="NVIDIA RTX 5090", exact=True).click()
    visit.page.wait_for_url("**hardware=nvidia-rtx-5090-x1**")
    rows = visit.page.locator("table.runs tbody tr")
    assert rows.count() == 1 and "NVIDIA RTX 5090" in rows.first.inner_text()
    visit.page.fill("input[name=q]", "no-such-model")
    visit.page.click("button[type=submit]")
    visit.page.wait_for_url("**q=no-such-model**")
    assert "No benchmarks match" in visit.page.locator("main").inner_text()
    visit.close()


def test_tables_sort_by_their_headers_and_read_without_javascript(browser, demo_board):
    visit = Visit(browser)
    visit.open(demo_board.url + "/")
    header = visit.page.locator("table.runs th", has_text="Peak aggregate")
    header.locator("button").click()
    header.locator("button").click()  # descending
    assert header.get_attribute("aria-sort") == "descending"
    cells = visit.page.locator("table.runs tbody td:nth-child(4)").evaluate_all(
        "cells => cells.map(c => c.dataset.sort).filter(v => v !== '').map(Number)"
    )
    assert cells == sorted(cells, reverse=True) and len(cells) >= 3
    visit.close()

    plain = Visit(browser, java_script_enabled=False)
    plain.open(f"{demo_board.url}/benchmarks/{demo_board.flagship}/")
    assert "coding @ c64" in plain.page.locator("#cohorts").inner_text()
    assert plain.page.locator("button.copy").first.is_hidden()
    plain.close()


def test_keyboard_focus_is_visible(browser, demo_board):
    visit = Visit(browser)
    visit.open(demo_board.url + "/")
    visit.page.keyboard.press("Tab")  # skip link
    visit.page.keyboard.press("Tab")  # brand
    outline = visit.page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), outline
    visit.close()


def test_the_api_docs_render_from_our_own_origin_under_the_strict_policy(browser, demo_board):
    visit = Visit(browser)
    visit.open(demo_board.url + "/api/docs/")
    visit.page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
    assert "AEON Board API" in visit.page.locator(".swagger-ui .info .title").inner_text()
    visit.close()
