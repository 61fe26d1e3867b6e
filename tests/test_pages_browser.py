"""The pages as a visitor sees them, in a real Chromium."""

import pytest

from submissions.demo.bundles import DEMO_MODELS
from submissions.demo.loader import prefill_hub_cache
from tests.boardjobs import core_job, submit_job

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.fixture
def browser(chromium_path, monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls
    # (set-up, flush) are still synchronous and safe.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    yield page
    assert errors == []


def test_a_visitor_finds_a_ranked_benchmark_and_its_cohorts(page, pod, board_url):
    prefill_hub_cache()
    model = DEMO_MODELS[0]
    submit_job(pod, core_job(model))

    page.goto(f"{board_url}/?hardware=dgx-spark-x1")
    row = page.locator("table.runs tbody tr").first
    assert model.hf_repo.lower() in row.inner_text()
    assert "816.0 tok/s" in row.inner_text() and "coding @ c64" in row.inner_text()
    assert "Attested" in row.inner_text()

    row.locator("a").first.click()
    page.wait_for_url(f"{board_url}/benchmarks/**")
    assert page.locator("h1").inner_text().startswith(model.hf_repo.lower())
    cohorts = page.locator("table").filter(has_text="Aggregate tok/s").inner_text()
    assert "coding @ c64" in cohorts and "816.0" in cohorts


def test_filters_live_in_the_url_and_an_empty_result_says_so(page, board_url):
    page.goto(f"{board_url}/")
    page.select_option("select[name=hardware]", "nvidia-h100-80gb-x1")
    page.click("button[type=submit]")
    page.wait_for_url("**hardware=nvidia-h100-80gb-x1**")
    assert "No benchmarks match" in page.locator("main").inner_text()


def test_the_api_docs_render_from_our_own_origin(page, board_url):
    page.goto(f"{board_url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=15000)
    assert "AEON Board API" in page.locator(".swagger-ui .info .title").inner_text()
