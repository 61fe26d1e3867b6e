"""The public pages: query counts that do not grow with the rows shown, the page-weight
budget, the exports, the raw bundle download, the CSP, the static pipeline and safe Markdown."""

import csv
import hashlib
import io
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from benchtools.reads import LINES, record_benchmark
from board import services as board_services
from board.methodology import render_markdown
from board.models import Benchmark
from board.views import PAGE_SIZE
from demo.bundles import DEMO_MODELS, PERF_SUITE_ID, TEXT_SUITE_ID, job_bundles
from demo.loader import prefill_hub_cache
from evidence.signing import key_fingerprint
from tests.boardjobs import as_local_run, core_job, read_api, submit_job

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
PAGE_BUDGET_BYTES = 150_000  # HTML + CSS + our JS of one page, plotly.js apart


@pytest.fixture
def client(board_client):
    """Pages read in-process in a rolled-back test, committing as on a live server."""
    return board_client


def queries_of(client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    if response.streaming:  # read to its end: its server-side cursor closes in this transaction
        b"".join(response.streaming_content)
    return len(captured.captured_queries)


def benchmark_id_of(answers) -> str:
    return answers[0].body["benchmark_id"]


def test_page_query_counts_do_not_grow_with_the_rows_shown(pod, make_pod, client):
    prefill_hub_cache()
    model = DEMO_MODELS[0]
    core = submit_job(pod, core_job(model, started="2026-11-01T10:00:00Z"))
    small_id = benchmark_id_of(core)
    text_run, perf_run = core[0].body["run_id"], core[1].body["run_id"]

    def counts(benchmark_id: str, run_id: str) -> dict[str, int]:
        paths = [
            "/",
            "/?hardware=dgx-spark-x1&ranked=1",
            f"/?q={model.hf_repo.split('/')[1][:6]}",
            "/hardware/",
            "/hardware/dgx-spark-x1/",
            "/models/",
            f"/models/{model.hf_repo.lower()}/",
            f"/benchmarks/{benchmark_id}/",
            f"/runs/{run_id}/",
            f"/compare/?a={benchmark_id}&b={small_id}",
            f"/pods/{key_fingerprint(pod.public_key)}/",
            "/methodology/",
            "/recipes/",
            f"/models/{model.hf_repo.lower()}/hardware/dgx-spark-x1/",
            "/lab/",
            "/lab/flags/--max-num-seqs/",
            "/api/v1/benchmarks.csv",
            "/api/v1/benchmarks.json",
        ]
        return {path: queries_of(client, path) for path in paths}

    before = counts(small_id, text_run)
    # More rows everywhere: more benchmarks of the same model and pod, a second pod, and a
    # benchmark with every board (seven runs, more cohorts) whose pages we read next.
    for day in (2, 3):
        submit_job(pod, core_job(model, started=f"2026-11-0{day}T10:00:00Z"))
    submit_job(make_pod(), core_job(DEMO_MODELS[1]))
    full = submit_job(pod, job_bundles(model, started="2026-11-05T10:00:00Z"))
    after = counts(benchmark_id_of(full), full[-1].body["run_id"])
    # The perf run's page against the text run's: 45 rows against 174.
    assert queries_of(client, f"/runs/{perf_run}/") == before[f"/runs/{text_run}/"]
    renamed = {
        path.replace(benchmark_id_of(full), small_id).replace(full[-1].body["run_id"], text_run): n
        for path, n in after.items()
    }
    assert renamed == before


def page_weight(client, path: str, statics: dict[str, int]) -> int:
    """The page's HTML and our CSS and JS it loads (plotly.js apart), in bytes."""
    html = client.get(path).content
    assets = re.findall(rb'(?:src|href)="(/static/[^"]+\.(?:css|js))"', html)
    own = [a.decode() for a in assets if b"/vendor/" not in a]
    for asset in own:
        if asset not in statics:
            found = finders.find(asset.removeprefix("/static/"))
            statics[asset] = Path(found).stat().st_size
    return len(html) + sum(statics[a] for a in own)


def test_a_page_weighs_less_than_150_kb_without_plotly(pod, board_url, client):
    prefill_hub_cache()
    answers = submit_job(pod, job_bundles(DEMO_MODELS[0]))
    benchmark_id = benchmark_id_of(answers)
    statics: dict[str, int] = {}
    recipe_id = read_api(board_url, f"/api/v1/benchmarks/{benchmark_id}").body["recipe_id"]
    for path in (
        "/",
        "/hardware/dgx-spark-x1/",
        f"/benchmarks/{benchmark_id}/",
        f"/runs/{answers[0].body['run_id']}/",
        f"/recipes/{recipe_id}/",
        f"/compare/?a={benchmark_id}&b={benchmark_id}",
        f"/models/{DEMO_MODELS[0].hf_repo.lower()}/",
        f"/pods/{key_fingerprint(pod.public_key)}/",
        "/methodology/",
        f"/models/{DEMO_MODELS[0].hf_repo.lower()}/hardware/dgx-spark-x1/",
        "/lab/",
    ):
        total = page_weight(client, path, statics)
        assert total < PAGE_BUDGET_BYTES, (path, total)
    charted = client.get(f"/benchmarks/{benchmark_id}/").content
    assert b"/static/vendor/plotly.min.js" in charted
    assert b"plotly.min.js" not in client.get("/").content  # loaded only where a chart is


def test_a_model_page_lists_one_page_of_benchmarks_and_counts_them_all(client):
    """More benchmarks of one model than a page holds (the read benchmark's realistic kind): the
    model page shows a page of them under the budget, the true count, and the next page."""
    prefill_hub_cache()
    with board_services.read_models_deferred():
        for n in range(PAGE_SIZE + 3):
            record_benchmark(n * len(LINES))  # the same model line each time
    board_services.recompute_all_read_models()
    model_id = Benchmark.objects.values_list("model__canonical_id", flat=True).distinct().get()
    path = f"/models/{model_id}/"

    first = client.get(path).content.decode()
    assert f"<dt>Benchmarks</dt><dd>{PAGE_SIZE + 3}</dd>" in first
    assert "page 1 of 2" in first and 'href="?page=2" rel="next"' in first
    assert page_weight(client, path, {}) < PAGE_BUDGET_BYTES
    second = client.get(f"{path}?page=2").content.decode()
    listed = re.search(r'<table class="runs sortable">.*?</table>', second, re.S).group(0)
    assert listed.count('<a href="/benchmarks/') == 3
    assert "page 2 of 2" in second and 'rel="prev"' in second


def test_every_page_forbids_inline_and_eval_scripts(client):
    for path in ("/", "/methodology/", "/api/docs/", "/api/v1/hardware-classes"):
        policy = client.get(path)["Content-Security-Policy"]
        script_src = re.search(r"script-src ([^;]+)", policy).group(1)
        assert script_src.strip() == "'self'", (path, policy)
    docs = client.get("/api/docs/").content.decode()
    assert "<script>" not in docs  # the split view: its start-up script comes from ?script
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")


def test_the_exports_carry_the_schema_version_and_every_speed_with_its_cohort(
    pod, make_pod, board_url
):
    prefill_hub_cache()
    ranked = benchmark_id_of(submit_job(pod, core_job(DEMO_MODELS[0])))
    text_only = [e for e in job_bundles(DEMO_MODELS[1]) if e[1] == TEXT_SUITE_ID]
    unranked = benchmark_id_of(submit_job(make_pod(), text_only))

    reply = read_api(board_url, "/api/v1/benchmarks.csv")
    assert reply.status == 200
    rows = list(csv.DictReader(io.StringIO(reply.text)))
    assert [row["id"] for row in rows] == [ranked]
    row = rows[0]
    assert row["schema_version"] == "aeon-board-benchmarks/1"
    assert row["peak_aggregate_cohort"] == "coding @ c64" and float(row["peak_aggregate_tps"]) > 0
    assert row["single_stream_cohort"] == "5 categories @ c1"
    assert row["ranked"] == "true"

    everything = read_api(board_url, "/api/v1/benchmarks.csv?ranked=all").text
    assert unranked in everything

    exported = read_api(board_url, "/api/v1/benchmarks.json")
    assert exported.status == 200
    assert exported.body["schema_version"] == "aeon-board-benchmarks/1"
    assert [b["id"] for b in exported.body["benchmarks"]] == [ranked]
    assert exported.body["benchmarks"][0]["peak_aggregate_cohort"] == "coding @ c64"
    unranked_only = read_api(board_url, "/api/v1/benchmarks.json?ranked=0").body
    assert [b["id"] for b in unranked_only["benchmarks"]] == [unranked]


def test_a_spreadsheet_formula_in_a_model_name_is_exported_as_text(pod, board_url):
    text = [e for e in job_bundles(DEMO_MODELS[0]) if e[1] == TEXT_SUITE_ID][0]
    bundle = as_local_run(text[3])
    answer = pod.submit_run('=HYPERLINK("http://x")', TEXT_SUITE_ID, "text", bundle)
    assert answer.status == 200, answer.body
    reply = read_api(board_url, "/api/v1/benchmarks.csv?ranked=all")
    (row,) = list(csv.DictReader(io.StringIO(reply.text)))
    assert row["model"] == '\'=HYPERLINK("http://x")'


def test_a_raw_bundle_downloads_byte_for_byte_for_moderators_only(pod, board_url, client):
    prefill_hub_cache()
    answers = submit_job(pod, core_job(DEMO_MODELS[0]))
    run_id = answers[1].body["run_id"]
    detail = read_api(board_url, f"/api/v1/runs/{run_id}").body
    # The signed bytes hold job_sig, job_group and raw commands: never public.
    assert read_api(board_url, f"/runs/{run_id}/bundle.json").status == 404
    client.force_login(
        get_user_model().objects.create_user("moderator", password="x" * 12, is_staff=True)
    )
    response = client.get(f"/runs/{run_id}/bundle.json")
    body = response.getvalue()
    assert response.status_code == 200
    assert hashlib.sha256(body).hexdigest() == detail["bundle_sha256"]
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="aeon-run-{run_id}.json"'
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "private" in response["Cache-Control"]
    envelope = json.loads(body)
    assert envelope["bundle"]["run_id"] == run_id and envelope["signature"]
    assert client.get("/runs/nosuchrun/bundle.json").status_code == 404


def test_anyone_downloads_a_scrubbed_copy_of_a_bundle(pod, board_url, client):
    prefill_hub_cache()
    answers = submit_job(pod, core_job(DEMO_MODELS[0]))
    run_id = answers[1].body["run_id"]
    detail = read_api(board_url, f"/api/v1/runs/{run_id}").body
    page = read_api(board_url, f"/benchmarks/{answers[0].body['benchmark_id']}/").text
    assert f'href="/runs/{run_id}/public.json"' in page
    assert f'href="/runs/{run_id}/bundle.json"' not in page  # the signed original: staff only
    response = client.get(f"/runs/{run_id}/public.json")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    assert "sandbox" in response["Content-Security-Policy"]
    text = response.getvalue().decode()
    copy = json.loads(text)
    assert copy["schema"] == "aeon-public-bundle-v1"
    assert copy["signed_bundle_sha256"] == detail["bundle_sha256"]
    assert copy["run"]["results"] and copy["run"]["run_id"] == run_id
    # What the demo pod signed but no public surface shows.
    client.force_login(
        get_user_model().objects.create_user("moderator", password="x" * 12, is_staff=True)
    )
    signed = client.get(f"/runs/{run_id}/bundle.json").getvalue().decode()
    for private in ("job_sig", "job_group", "/home/aeon", "docker_run", '"command"'):
        assert private in signed and private not in text, private


def test_a_withheld_run_offers_no_page_and_no_bundle(pod, board_url):
    entry = [e for e in job_bundles(DEMO_MODELS[0]) if e[1] == PERF_SUITE_ID][0]
    bundle = entry[3]
    bundle["recipe"]["flags"] = [*bundle["recipe"]["flags"], "--api-key", "hf_" + "a1" * 17]
    answer = pod.submit_run(entry[2], PERF_SUITE_ID, "perf", bundle)
    assert answer.status == 200, answer.body
    run_id = answer.body["run_id"]
    assert read_api(board_url, f"/runs/{run_id}/").status == 404
    assert read_api(board_url, f"/runs/{run_id}/bundle.json").status == 404
    assert read_api(board_url, f"/runs/{run_id}/public.json").status == 404
    pod_page = read_api(board_url, f"/pods/{key_fingerprint(pod.public_key)}/").text
    assert f'href="/runs/{run_id}/"' not in pod_page  # listed, not linked
    assert run_id in pod_page


def test_a_pod_page_lists_each_submission_with_its_outcome(pod, board_url):
    prefill_hub_cache()
    submit_job(pod, core_job(DEMO_MODELS[0]))
    refused = pod.submit_run("m", TEXT_SUITE_ID, "text", {"results": "not a list"})
    assert refused.status == 400
    page = read_api(board_url, f"/pods/{key_fingerprint(pod.public_key)}/")
    assert page.status == 200
    assert "SCHEMA_INVALID" in page.text and "broke the schema" in page.text
    assert page.text.count("<code>OK</code>") >= 2
    assert read_api(board_url, "/pods/0000000000000000/").status == 404


def test_pages_say_so_when_there_is_nothing_to_show(client):
    for path, words in (
        ("/", "No benchmarks match"),
        ("/models/", "has a public benchmark yet"),
        ("/recipes/", "No recipe is registered yet"),
        ("/compare/", "Enter two benchmark ids"),
        ("/compare/?a=nope&b=nada", "No public benchmark has the id"),
        ("/hardware/dgx-spark-x2/", "No benchmark on 2× DGX Spark yet"),
        ("/hardware/dgx-spark-x2/", "No crown has been held on 2× DGX Spark yet"),
        ("/", "No hardware class has a champion yet"),
        ("/?hardware=dgx-spark-x2", "No champion on 2× DGX Spark yet"),
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert words in response.content.decode(), path
    for path in (
        "/benchmarks/nope/",
        "/runs/nope/",
        "/runs/nope/public.json",
        "/models/no/such/",
        "/hardware/nope/",
        "/recipes/nope/",
    ):
        assert client.get(path).status_code == 404, path


def test_markdown_from_the_docs_renders_without_raw_html_or_script_links():
    html = render_markdown(
        "# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n\n"
        "<img src=x onerror=alert(1)>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and 'href="javascript:' not in html
    assert "<h2>Title</h2>" in html and "<table>" in html


def test_collectstatic_hashes_and_compresses_plotly_js(tmp_path):
    storages = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    with override_settings(STATIC_ROOT=tmp_path, STORAGES=storages):
        call_command("collectstatic", interactive=False, verbosity=0)
    manifest = json.loads((tmp_path / "staticfiles.json").read_text())["paths"]
    hashed = manifest["vendor/plotly.min.js"]
    assert re.fullmatch(r"vendor/plotly\.min\.[0-9a-f]{12}\.js", hashed)
    assert (tmp_path / (hashed + ".gz")).stat().st_size < (tmp_path / hashed).stat().st_size / 2
    assert "js/charts.js" in manifest and "css/board.css" in manifest
    assert not (tmp_path / "vendor" / "widgetbundle.js").exists()


def test_a_benchmark_page_carries_opengraph_tags_for_sharing(pod, client):
    prefill_hub_cache()
    benchmark_id = benchmark_id_of(submit_job(pod, core_job(DEMO_MODELS[0])))
    html = client.get(f"/benchmarks/{benchmark_id}/").content.decode()
    tags = dict(re.findall(r'<meta property="og:(\w+)" content="([^"]*)"', html))
    assert tags["title"] == f"{DEMO_MODELS[0].hf_repo.lower()} on Single DGX Spark"
    assert "816.0 tok/s aggregate (coding @ c64)" in tags["description"]
    assert tags["url"].endswith(f"/benchmarks/{benchmark_id}/")
    assert '<meta name="twitter:card" content="summary">' in html
    shared = client.get("/hardware/dgx-spark-x1/").content.decode()
    assert '<meta property="og:title" content="Champions on Single DGX Spark">' in shared
    assert '<meta property="og:url" content="http' in shared


def test_an_excluded_cohort_is_drawn_apart_and_explained(pod, client):
    prefill_hub_cache()
    job = core_job(DEMO_MODELS[0])
    perf = job[-1][3]
    cell = next(r for r in perf["results"] if r["case_id"] == "perf.direct.coding.c4")
    cell["evidence"]["n"] = 2  # fewer requests than its four streams
    benchmark_id = benchmark_id_of(submit_job(pod, job))
    html = client.get(f"/benchmarks/{benchmark_id}/").content.decode()
    assert "fewer requests than streams" in html  # the mark, in words, in the cohort table
    assert "too_few_requests" not in html.split("<script")[0]
    assert "The cell completed fewer requests than its concurrency" in html  # explained
    figures = [
        json.loads(block)
        for block in re.findall(
            r'<script id="chart-[\w-]+-figure" type="application/json">(.*?)</script>', html, re.S
        )
    ]
    aggregate = figures[0]
    excluded = [t for t in aggregate["data"] if t["name"] == "excluded (marked)"]
    assert excluded and excluded[0]["x"] == [4]
    coding = next(t for t in aggregate["data"] if t["name"] == "coding")
    assert 4 not in coding["x"]  # off the line
