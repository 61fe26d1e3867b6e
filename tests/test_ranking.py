"""What ranks and what the read API shows of it (docs/trust-and-ranking.md §Ranking, docs/recipes.md §Secrets, the read API):
only complete attested benchmarks rank, everything else is stored, shown and badged, and every
speed figure names its cohort."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from board.models import Benchmark
from demo.bundles import DEMO_MODELS, PERF_SUITE_ID, TEXT_SUITE_ID, job_bundles
from demo.loader import prefill_hub_cache
from tests.boardjobs import (
    as_local_run,
    benchmark_of,
    bundles,
    core_job,
    only,
    read_api,
    submit_job,
)

pytestmark = pytest.mark.django_db


MODEL = DEMO_MODELS[0]  # Gemma 4 26B-A4B, DFlash n=11, 816 tok/s on a single DGX Spark
SECRET = "sk-proj-Q7wE9rT2yU4iO6pA8sD0fG3hJ5kL1zX"
COHORT = re.compile(r"^[a-z]+ @ c[1-9][0-9]*$")
SINGLE_STREAM_COHORT = "5 categories @ c1"


@pytest.fixture
def hub_answers():
    """The Hub's answers for the demo models, pre-filled in the cache as the demo does."""
    assert prefill_hub_cache() > 0


def listed_ids(board_url: str, query: str = "") -> list[str]:
    reply = read_api(board_url, f"/api/v1/benchmarks{query}")
    assert reply.status == 200, reply.text
    return [item["id"] for item in reply.body["results"]]


def assert_figures_name_their_cohorts(benchmark: dict) -> None:
    if benchmark["peak_aggregate"] is not None:
        assert COHORT.match(benchmark["peak_aggregate"]["cohort"])
    if benchmark["single_stream"] is not None:
        assert benchmark["single_stream"]["cohort"] == SINGLE_STREAM_COHORT
    if benchmark["latency"] is not None:
        assert benchmark["latency"]["cohort"] == SINGLE_STREAM_COHORT
    for cohort in benchmark.get("cohorts", []):
        assert cohort["label"] == f"{cohort['category']} @ c{cohort['conc']}"


def test_a_complete_attested_comprehensive_job_ranks_with_every_figure_naming_its_cohort(
    pod, hub_answers, board_url
):
    job = job_bundles(MODEL)

    answers = submit_job(pod, job)

    benchmark = benchmark_of(board_url, answers)
    assert (benchmark["trust"], benchmark["complete"], benchmark["ranked"]) == (
        "attested",
        True,
        True,
    )
    assert benchmark["badges"] == []
    assert benchmark["model"] == MODEL.hf_repo.lower()
    assert benchmark["hardware_class"] == {"slug": "dgx-spark-x1", "name": "Single DGX Spark"}
    assert benchmark["peak_aggregate"] == {"tps": 816.0, "cohort": "coding @ c64"}
    assert benchmark["single_stream"] == {
        "tps": pytest.approx(MODEL.single_stream_tps, abs=0.01),
        "cohort": SINGLE_STREAM_COHORT,
    }
    assert benchmark["latency"] == {
        "ttft_ms": pytest.approx(MODEL.ttft_p50_ms, abs=0.01),
        "tpot_ms": pytest.approx(MODEL.tpot_p50_ms, abs=0.01),
        "cohort": SINGLE_STREAM_COHORT,
    }
    assert benchmark["composite"] == pytest.approx(65.7, abs=0.05)
    assert benchmark["coverage"]["label"] == "173/174 cases"
    assert benchmark["context_len"] == 65536
    assert {entry["harness"] for entry in benchmark["agentic"]} == {
        "hermes",
        "openclaw",
        "opencode",
    }
    assert set(benchmark["modalities"]) == {"vision", "video"}
    assert len(benchmark["runs"]) == len(job)
    assert {c["label"] for c in benchmark["cohorts"]} >= {"coding @ c64", "prose @ c1"}
    assert_figures_name_their_cohorts(benchmark)
    assert listed_ids(board_url, "?ranked=true") == [benchmark["id"]]


def test_the_final_answer_names_trust_verification_results_benchmark_and_url(
    pod, hub_answers, board_url
):
    [(board, suite_id, model, bundle)] = only(core_job(MODEL), PERF_SUITE_ID)

    answer = pod.submit_run(model, suite_id, board, bundle)

    assert answer.status == 200
    run_id = answer.body["run_id"]
    assert answer.body == {
        "ok": True,
        "run_id": run_id,
        "trust_tier": "attested",
        "verification": "verified",
        "n_results": len(bundle["results"]),
        "benchmark_id": answer.body["benchmark_id"],
        "url": answer.body["url"],
    }
    assert answer.body["url"].endswith(f"/runs/{run_id}/")
    assert read_api(answer.body["url"], "").status == 200
    assert listed_ids(board_url) == [answer.body["benchmark_id"]]


@pytest.mark.parametrize(
    ("options", "badge"),
    [
        pytest.param({"with_perf": False}, "no_perf", id="without-perf"),
        pytest.param({"coverage": 0.8}, "low_coverage", id="coverage-80-percent"),
        pytest.param({"bench_seed": 1234}, "bench_seed", id="seeded"),
    ],
)
def test_an_attested_job_that_falls_short_is_stored_unranked_with_its_badge(
    pod, hub_answers, board_url, options, badge
):
    job = core_job(MODEL, **options)

    answers = submit_job(pod, job)

    assert {a.body["trust_tier"] for a in answers} == {"attested"}
    benchmark = benchmark_of(board_url, answers)
    assert badge in benchmark["badges"]
    assert benchmark["ranked"] is False
    assert listed_ids(board_url, "?ranked=false") == [benchmark["id"]]
    assert listed_ids(board_url, "?ranked=true") == []


def test_a_served_context_below_64k_is_stored_unranked_and_shown_with_its_length(
    pod, hub_answers, board_url
):
    job = core_job(MODEL, context_len=32768)
    assert "32768" in bundles(job)[0]["recipe"]["flags"]  # --max-model-len 32768

    benchmark = benchmark_of(board_url, submit_job(pod, job))

    assert (benchmark["trust"], benchmark["ranked"]) == ("attested", False)
    assert benchmark["context_len"] == 32768
    assert benchmark["badges"] == ["agentic_untested", "below_64k_floor"]


def test_a_self_reported_job_is_unranked_and_badged_self_reported(pod, hub, board_url):
    answers = submit_job(pod, core_job(MODEL))  # the Hub answers 404: unverifiable

    benchmark = benchmark_of(board_url, answers)
    assert benchmark["trust"] == "self_reported"
    assert benchmark["ranked"] is False
    assert {"self_reported", "weights_unverifiable"} <= set(benchmark["badges"])
    assert benchmark["peak_aggregate"] == {"tps": 816.0, "cohort": "coding @ c64"}  # still shown


def test_a_job_without_agentic_bundles_ranks_with_the_agentic_untested_badge(
    pod, hub_answers, board_url
):
    answers = submit_job(pod, core_job(MODEL))

    benchmark = benchmark_of(board_url, answers)
    assert benchmark["ranked"] is True
    assert benchmark["badges"] == ["agentic_untested"]
    assert benchmark["agentic"] == []


def test_claimed_hardware_is_badged_and_classed_by_the_operators_label(pod, hub_answers, board_url):
    job = core_job(MODEL)
    for bundle in bundles(job):
        hardware = bundle["environment"]["hardware"]
        hardware.update(detected_label=None, label="RTX 5090 32GB", hardware_source="probed-remote")

    benchmark = benchmark_of(board_url, submit_job(pod, job))

    assert "claimed_hardware" in benchmark["badges"]
    assert benchmark["hardware_class"] == {"slug": "nvidia-rtx-5090-x1", "name": "NVIDIA RTX 5090"}
    assert benchmark["hardware_label"] == "RTX 5090 32GB"
    assert listed_ids(board_url, "?hardware=nvidia-rtx-5090-x1") == [benchmark["id"]]


def test_a_token_in_the_recipe_withholds_the_benchmark_and_is_never_shown(
    pod, hub_answers, board_url
):
    job = core_job(MODEL)
    for bundle in bundles(job):
        bundle["recipe"]["flags"] += ["--api-key", SECRET]

    answers = submit_job(pod, job)

    benchmark_id = answers[0].body["benchmark_id"]
    stored = Benchmark.objects.get(public_id=benchmark_id)  # stored, not refused
    assert (stored.withheld, stored.ranked) == (True, False)
    assert "secret_detected" in stored.badges
    assert listed_ids(board_url) == []
    replies = [
        read_api(board_url, "/api/v1/benchmarks"),
        read_api(board_url, f"/api/v1/benchmarks/{benchmark_id}"),
        read_api(board_url, "/api/v1/hardware-classes"),
        read_api(board_url, "/"),
    ]
    for answer in answers:
        replies.append(read_api(board_url, f"/api/v1/runs/{answer.body['run_id']}"))
        replies.append(read_api(board_url, f"/runs/{answer.body['run_id']}/"))
    assert [reply.status for reply in replies] == [200, 404, 200, 200] + [404, 404] * len(answers)
    for reply in replies:
        assert SECRET not in reply.text
    assert not any(SECRET in str(answer.body) for answer in answers)


def test_the_benchmark_list_filters_by_hardware_model_trust_and_ranked_and_pages(
    pod, hub_answers, board_url
):
    ranked = benchmark_of(board_url, submit_job(pod, core_job(MODEL)))
    claimed_job = only(core_job(MODEL, started="2026-11-05T10:00:00Z"), PERF_SUITE_ID)
    for bundle in bundles(claimed_job):
        bundle["environment"]["hardware"].update(detected_label=None, label="RTX 5090 32GB")
    claimed = benchmark_of(board_url, submit_job(pod, claimed_job))
    local_job = [
        ("text", TEXT_SUITE_ID, "My-Local-Model", as_local_run(bundle))
        for bundle in bundles(only(core_job(MODEL, started="2026-11-06T10:00:00Z"), TEXT_SUITE_ID))
    ]
    local = benchmark_of(board_url, submit_job(pod, local_job))
    other = benchmark_of(board_url, submit_job(pod, only(core_job(DEMO_MODELS[1]), PERF_SUITE_ID)))
    everything = {ranked["id"], claimed["id"], local["id"], other["id"]}
    assert len(everything) == 4

    def ids(query: str) -> set[str]:
        found = listed_ids(board_url, query)
        assert len(found) == len(set(found))
        return set(found)

    assert ids("") == everything
    assert ids("?hardware=dgx-spark-x1") == {ranked["id"], local["id"], other["id"]}
    assert ids("?hardware=nvidia-rtx-5090-x1") == {claimed["id"]}
    assert ids("?model=GOOGLE/Gemma-4-26B-A4B-it") == {ranked["id"], claimed["id"]}
    assert ids("?model=my-local-model") == {local["id"]}  # case-insensitive, as documented
    assert ids("?trust=self_reported") == {local["id"]}
    assert ids("?trust=attested") == {ranked["id"], claimed["id"], other["id"]}
    assert ids("?ranked=true") == {ranked["id"]}
    assert ids("?ranked=false") == {claimed["id"], local["id"], other["id"]}
    assert ids("?hardware=dgx-spark-x1&ranked=false&trust=attested") == {other["id"]}
    assert ids("?hardware=no-such-class") == set()

    first = read_api(board_url, "/api/v1/benchmarks?page_size=3").body
    assert (first["count"], len(first["results"]), first["previous"]) == (4, 3, None)
    second = read_api(board_url, "/api/v1/benchmarks?page_size=3&page=2").body
    assert (second["count"], len(second["results"]), second["next"]) == (4, 1, None)
    assert "page=2" in first["next"]
    paged = [item["id"] for item in first["results"] + second["results"]]
    assert paged == listed_ids(board_url)  # newest first, each once
    assert read_api(board_url, "/api/v1/benchmarks?page_size=3&page=3").status == 404

    for item in read_api(board_url, "/api/v1/benchmarks").body["results"]:
        assert_figures_name_their_cohorts(item)
        assert_figures_name_their_cohorts(benchmark_of_id(board_url, item["id"]))


def benchmark_of_id(board_url: str, benchmark_id: str) -> dict:
    reply = read_api(board_url, f"/api/v1/benchmarks/{benchmark_id}")
    assert reply.status == 200
    return reply.body


def test_the_hardware_classes_list_the_presets_with_their_facts(board_url):
    reply = read_api(board_url, "/api/v1/hardware-classes")

    assert reply.status == 200
    classes = {item["slug"]: item for item in reply.body["items"]}
    facts = {
        slug: (item["memory_bandwidth_gbs"], item["memory_gb"], item["unified_memory"])
        for slug, item in classes.items()
    }
    assert facts["dgx-spark-x1"] == (273.0, 128.0, True)
    assert facts["dgx-spark-x2"] == (273.0, 256.0, True)
    assert facts["nvidia-rtx-5090-x1"] == (1792.0, 32.0, False)
    assert facts["nvidia-rtx-4090-x1"] == (1008.0, 24.0, False)
    assert facts["nvidia-rtx-pro-6000-blackwell-x1"] == (1792.0, 96.0, False)
    assert facts["nvidia-a100-80gb-x1"][0] == 2039.0
    assert facts["nvidia-h100-80gb-x1"][0] == 3350.0
    assert facts["nvidia-h200-141gb-x1"][0] == 4800.0
    assert facts["apple-m4-max-x1"][0] == 546.0
    assert facts["apple-m3-ultra-x1"][0] == 819.0
    assert facts["amd-instinct-mi300x-x1"][:2] == (5300.0, 192.0)
    assert classes["dgx-spark-x2"] | {"memory_gb": None} == {
        "slug": "dgx-spark-x2",
        "name": "2× DGX Spark",
        "family": "dgx_spark",
        "device_count": 2,
        "memory_bandwidth_gbs": 273.0,
        "memory_gb": None,
        "unified_memory": True,
        "preset": True,
    }
    assert "unlabeled" in classes
    assert all(item["preset"] for item in classes.values())


def test_the_benchmark_list_costs_the_same_queries_for_two_or_six_benchmarks(
    pod, hub_answers, client
):
    def perf_of(model):
        return only(core_job(model), PERF_SUITE_ID)

    def queries_of_the_list(expected: int) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/v1/benchmarks")
        assert response.status_code == 200
        assert response.json()["count"] == expected
        return len(queries)

    for model in DEMO_MODELS[:2]:
        submit_job(pod, perf_of(model))
    with_two = queries_of_the_list(2)
    for model in DEMO_MODELS[2:6]:
        submit_job(pod, perf_of(model))
    with_six = queries_of_the_list(6)

    assert with_six == with_two
    assert with_two <= 3
