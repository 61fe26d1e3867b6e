"""The champion list pods fetch, `GET /api/recipes/champions[?hardware=&model=]`
(docs/champions.md), read with the real pod client: the exact fields, scrubbed flags, the compact
/drafter speculative config, hardware matching by label, class name and normalised class."""

import json
from dataclasses import replace
from urllib.parse import quote

import pytest

from board.models import Run
from demo.loader import prefill_hub_cache
from tests.boardjobs import core_job, read_api, submit_job
from tests.championjobs import (
    GEMMA_816,
    H100,
    QWEN_27B_MTP,
    QWEN_35B,
    QWEN_NEXT,
    RTX_5090,
    TWO_RTX_5090,
    pod_champions,
    submit,
)

pytestmark = pytest.mark.django_db

STOCK = "ghcr.io/aeon-7/aeon-vllm-ultimate:latest"

SINGLE_SPARK = "single DGX Spark (GB10)"
DUAL_SPARK = "dual DGX Spark (GB10)"
FIELDS = {
    "hardware",
    "hw_bucket",
    "model",
    "canonical",
    "hf_repo",
    "hf_revision",
    "engine",
    "image",
    "serve_flags",
    "spec_decode",
    "drafter",
    "peak_agg_tps",
    "peak_agg_cell",
    "quality",
    "quality_run",
    "trust_tier",
    "run",
    "started_at",
    # added by the board (docs/champions.md): the pod ignores fields it does not read
    "benchmark_id",
    "crown_holder",
}
SCRUBBED_816_FLAGS = [
    "--max-model-len",
    "65536",
    "--gpu-memory-utilization",
    ".8",
    "--max-num-seqs",
    "64",
    "--kv-cache-dtype",
    "auto",
    "--attention-backend",
    "triton_attn",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--reasoning-parser",
    "gemma4",
    "--tool-call-parser",
    "gemma4",
    "--enable-auto-tool-choice",
    "--moe-backend",
    "cutlass",
    "--max-num-batched-tokens",
    "32768",
    "--speculative-config",
    '{"method":"dflash","model":"/drafter","num_speculative_tokens":11}',
]


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def on_dual_spark(job):
    """The same job measured on two Sparks: the pod detects `dual DGX Spark (GB10)`."""
    for _, _, _, bundle in job:
        bundle["environment"]["hardware"]["detected_label"] = DUAL_SPARK
        bundle["environment"]["hardware"]["gpus"] *= 2
    return job


@pytest.fixture
def board(pod, board_url) -> dict:
    """Gemma 816 (host drafter path in its flags), two more Spark models, a dual Spark, one and
    two RTX 5090s, an H100; returns their benchmark ids by name."""
    gemma_job = core_job(GEMMA_816, started="2026-10-03T09:00:00Z")
    for _, _, _, bundle in gemma_job:
        flags = bundle["recipe"]["flags"]
        at = flags.index("--speculative-config") + 1
        flags[at] = json.dumps(
            {
                "method": "dflash",
                "model": "/home/alice/drafters/gemma-4-26B-A4B-it-DFlash",
                "num_speculative_tokens": 11,
            }
        )
    answers = submit_job(pod, gemma_job)
    ids = {"gemma": answers[0].body["benchmark_id"]}
    ids["qwen_next"] = submit(pod, QWEN_NEXT, "2026-10-04T09:00:00Z")
    ids["qwen_35b"] = submit(pod, QWEN_35B, "2026-10-05T09:00:00Z")
    dual = on_dual_spark(core_job(GEMMA_816, started="2026-10-06T09:00:00Z"))
    ids["dual"] = submit_job(pod, dual)[0].body["benchmark_id"]
    ids["rtx5090"] = submit(pod, RTX_5090, "2026-10-07T09:00:00Z")
    ids["two_rtx5090"] = submit(pod, TWO_RTX_5090, "2026-10-08T09:00:00Z")
    ids["h100"] = submit(pod, H100, "2026-10-09T09:00:00Z")
    return ids


def listed(answer) -> list[tuple[str, str]]:
    assert answer.status == 200, answer.body
    return [(entry["hardware"], entry["canonical"]) for entry in answer.body["champions"]]


def test_each_champion_carries_exactly_the_protocol_fields_with_a_scrubbed_applicable_recipe(
    pod, board
):
    answer = pod_champions(pod, SINGLE_SPARK, model=GEMMA_816.hf_repo)

    assert answer.status == 200
    assert set(answer.body) == {"hardwares", "champions"}
    [entry] = answer.body["champions"]
    assert set(entry) == FIELDS
    runs = {run.kind: run for run in Run.objects.filter(benchmark__public_id=board["gemma"])}
    assert entry == {
        "hardware": SINGLE_SPARK,
        "hw_bucket": "Single DGX Spark",
        "model": "google/gemma-4-26B-A4B-it",
        "canonical": "google/gemma-4-26b-a4b-it",
        "hf_repo": "google/gemma-4-26B-A4B-it",
        "hf_revision": GEMMA_816.hf_revision,
        "engine": "aeon-vllm-ultimate",
        "image": "ghcr.io/aeon-7/aeon-vllm-ultimate:latest",
        "serve_flags": SCRUBBED_816_FLAGS,
        "spec_decode": "dflash",
        "drafter": {
            "method": "dflash",
            "repo": "z-lab/gemma-4-26B-A4B-it-DFlash",
            "revision": GEMMA_816.drafter_revision,
            "n": 11,
            "uses_drafter": True,
        },
        "peak_agg_tps": 816.0,
        "peak_agg_cell": {"category": "coding", "conc": 64},
        "quality": pytest.approx(65.7, abs=0.05),
        "quality_run": runs["text"].run_id,
        "trust_tier": "attested",
        "run": runs["perf"].run_id,
        "started_at": int(runs["perf"].committed_at.timestamp()),
        "benchmark_id": board["gemma"],
        "crown_holder": None,
    }
    assert isinstance(entry["started_at"], int)
    text = json.dumps(answer.body)
    for private in ("--served-model-name", "--host", "--port", "/home/", "model-under-test"):
        assert private not in text


def test_the_list_is_one_entry_per_label_and_model_grouped_by_label_best_throughput_first(
    pod, board
):
    answer = pod_champions(pod)

    assert listed(answer) == [
        ("2× RTX 5090 32GB", "qwen/qwen3-32b-fp8"),
        (DUAL_SPARK, "google/gemma-4-26b-a4b-it"),
        ("NVIDIA H100 80GB HBM3", "openai/gpt-oss-120b"),
        ("RTX 5090 32GB", "qwen/qwen3-14b-fp8"),
        (SINGLE_SPARK, "google/gemma-4-26b-a4b-it"),
        (SINGLE_SPARK, "aeon-7/qwen3.6-35b-a3b-heretic-nvfp4"),
        (SINGLE_SPARK, "nvidia/qwen3-next-80b-a3b-thinking-nvfp4"),
    ]
    spark = [e["peak_agg_tps"] for e in answer.body["champions"] if e["hardware"] == SINGLE_SPARK]
    assert spark == sorted(spark, reverse=True) == [816.0, 575.0, 342.0]
    assert answer.body["hardwares"] == sorted(
        {"2× RTX 5090 32GB", DUAL_SPARK, "NVIDIA H100 80GB HBM3", "RTX 5090 32GB", SINGLE_SPARK}
    )
    sglang = answer.body["champions"][0]
    assert (sglang["engine"], sglang["image"], sglang["drafter"]) == (
        "sglang",
        "lmsysorg/sglang:v0.5.3-cu129",
        None,
    )
    # SGLang sends no flags: they are read from its command, scrubbed of host, port and paths.
    assert sglang["serve_flags"] == [
        "--tp",
        "2",
        "--context-length",
        "65536",
        "--mem-fraction-static",
        "0.88",
        "--max-running-requests",
        "32",
        "--reasoning-parser",
        "qwen3",
        "--tool-call-parser",
        "qwen25",
    ]


def test_a_champion_on_a_withheld_image_is_not_offered_pods_get_the_best_applicable_recipe(
    pod, board_url
):
    """docs/champions.md §The champion recipes pods fetch: pods would run their stock image, not
    the one measured, so the crown holder on a withheld image is not offered; the best recipe of
    the class and model measured on an allowed image is, and the pages say why."""
    stock = replace(QWEN_27B_MTP, key="qwen3.6-27b-mtp-stock", image=STOCK, peak_agg_tps=95.0)
    offered = submit(pod, stock, "2026-10-10T09:00:00Z")
    holder = submit(pod, QWEN_27B_MTP, "2026-10-11T09:00:00Z")  # 118 tok/s, image withheld

    [entry] = pod_champions(pod, SINGLE_SPARK).body["champions"]
    [crown] = read_api(
        board_url, "/api/v1/champions?hardware=dgx-spark-x1&axis=throughput&model=qwen/qwen3.6-27b"
    ).body["champions"]

    assert crown["benchmark_id"] == holder  # still crowned and shown
    assert crown["recipe"]["image"] is None
    assert "not on this board's list" in crown["recipe"]["image_note"]
    assert crown["one_click"] is False
    assert [r["code"] for r in crown["one_click_reasons"]] == ["image_withheld"]
    assert crown["pods_offered"]["benchmark_id"] == offered
    assert (entry["canonical"], entry["image"], entry["benchmark_id"]) == (
        "qwen/qwen3.6-27b",
        STOCK,
        offered,
    )
    assert entry["peak_agg_tps"] == 95.0
    assert entry["crown_holder"]["benchmark_id"] == holder
    assert entry["crown_holder"]["peak_agg_tps"] == 118.0
    assert [r["code"] for r in entry["crown_holder"]["not_offered_because"]] == ["image_withheld"]
    assert entry["drafter"] == {
        "method": "mtp",
        "repo": None,
        "revision": None,
        "n": 2,
        "uses_drafter": False,
    }
    page = read_api(board_url, f"/benchmarks/{holder}/").text
    assert "not one-click" in page and "image withheld" in page
    assert f'handed the recipe of <a href="/benchmarks/{offered}/">' in page
    assert "spark-lab" not in json.dumps(crown) + json.dumps(entry)


def test_a_lone_champion_on_a_withheld_image_leaves_pods_no_entry(pod, board_url):
    holder = submit(pod, QWEN_27B_MTP, "2026-10-11T09:00:00Z")

    assert pod_champions(pod, SINGLE_SPARK).body == {"hardwares": [], "champions": []}
    [crown] = read_api(
        board_url, "/api/v1/champions?hardware=dgx-spark-x1&axis=throughput&model=qwen/qwen3.6-27b"
    ).body["champions"]
    assert (crown["benchmark_id"], crown["one_click"], crown["pods_offered"]) == (
        holder,
        False,
        None,
    )
    page = read_api(board_url, f"/benchmarks/{holder}/").text
    assert "pods of the class are handed none for the model" in page


HARDWARE_QUERIES = [
    (SINGLE_SPARK, {SINGLE_SPARK}),  # the pod's own label
    (DUAL_SPARK, {DUAL_SPARK}),  # a dual Spark pod's own label: never the single's
    ("Single DGX Spark", {SINGLE_SPARK}),  # the class name
    ("dgx spark", {SINGLE_SPARK, DUAL_SPARK}),  # contained, in any case
    ("2x dgx spark", {DUAL_SPARK}),  # normalises to the dual class
    ("NVIDIA GB10", {SINGLE_SPARK}),  # normalises to the single class
    ("TPU v7", set()),  # normalises to Unlabeled: never a match by class
    ("2× RTX 5090 32GB", {"2× RTX 5090 32GB"}),  # never the single card's recipe
    ("RTX 5090 32GB", {"RTX 5090 32GB"}),  # a one-card pod's label: never the 2× recipe
    ("NVIDIA GeForce RTX 5090", {"RTX 5090 32GB"}),  # another label of the same class
    ("h100", {"NVIDIA H100 80GB HBM3"}),  # part of a label
]


def test_hardware_matches_label_class_name_or_normalised_class_and_models_any_case(pod, board):
    for query, expected in HARDWARE_QUERIES:
        answer = pod_champions(pod, query)
        assert {hardware for hardware, _ in listed(answer)} == expected, query
        assert len(answer.body["hardwares"]) == 5  # the labels on offer, whatever the filter

    [two_cards] = pod_champions(pod, "2× RTX 5090 32GB").body["champions"]
    assert (two_cards["hw_bucket"], two_cards["canonical"]) == (
        "2× NVIDIA RTX 5090",
        "qwen/qwen3-32b-fp8",
    )
    gemma = [(DUAL_SPARK, "google/gemma-4-26b-a4b-it"), (SINGLE_SPARK, "google/gemma-4-26b-a4b-it")]
    assert listed(pod_champions(pod, model="Google/Gemma-4-26B-A4B-IT")) == gemma
    assert listed(pod_champions(pod, "dgx spark", model="google/gemma-4-26b-a4b-it")) == gemma
    assert listed(pod_champions(pod, model="gemma")) == []
    for entry in pod_champions(pod).body["champions"]:
        assert isinstance(entry["started_at"], int)


def test_a_pods_label_gets_only_classes_of_its_device_count_in_both_apis(pod, board, board_url):
    """A one-card pod never gets a two-card recipe and a two-card pod never a one-card one, in
    the pods' list and the champion API; a person's bare `dgx spark` lists every Spark class,
    grouped by label."""

    def crown_classes(query: str) -> set[str]:
        reply = read_api(board_url, f"/api/v1/champions?axis=throughput&hardware={quote(query)}")
        assert reply.status == 200, reply.text
        return {crown["hardware_class"]["name"] for crown in reply.body["champions"]}

    def pod_classes(query: str) -> set[str]:
        return {e["hw_bucket"] for e in pod_champions(pod, query).body["champions"]}

    assert pod_classes("RTX 5090 32GB") == crown_classes("RTX 5090 32GB") == {"NVIDIA RTX 5090"}
    assert (
        pod_classes("2× RTX 5090 32GB")
        == crown_classes("2× RTX 5090 32GB")
        == {"2× NVIDIA RTX 5090"}
    )
    assert crown_classes("nvidia-rtx-5090-x2") == {"2× NVIDIA RTX 5090"}  # a slug is one class
    assert pod_classes(SINGLE_SPARK) == crown_classes(SINGLE_SPARK) == {"Single DGX Spark"}
    assert pod_classes(DUAL_SPARK) == crown_classes(DUAL_SPARK) == {"2× DGX Spark"}
    assert (
        pod_classes("dgx spark")
        == crown_classes("dgx spark")
        == {
            "Single DGX Spark",
            "2× DGX Spark",
        }
    )
    hardware = [e["hardware"] for e in pod_champions(pod, "dgx spark").body["champions"]]
    assert hardware == sorted(hardware, key=str.lower)  # grouped by label


def test_a_benchmark_holding_a_token_is_withheld_and_never_offered(pod, board_url):
    job = core_job(GEMMA_816, started="2026-10-10T09:00:00Z")
    token = "hf_" + "Q7wE9rT2yU4iO6pA8sD0fG3hJ5kL1zXcVbN"
    for _, _, _, bundle in job:
        bundle["recipe"]["flags"] += ["--hf-token", token]
    submit_job(pod, job)

    answer = pod_champions(pod)

    assert answer.body == {"hardwares": [], "champions": []}
    for path in ("/api/recipes/champions", "/api/v1/champions", "/api/v1/benchmarks"):
        assert token not in read_api(board_url, path).text


def test_errors_are_json_and_there_is_no_trailing_slash(pod, board_url):
    slash = pod.send("GET", "/api/recipes/champions/")
    post = pod.send("POST", "/api/recipes/champions", b"{}")
    overlong = pod_champions(pod, "x" * 301)

    assert (slash.status, slash.body["reason"]) == (404, "NOT_FOUND")
    assert (post.status, post.body["reason"]) == (405, "METHOD_NOT_ALLOWED")
    assert (overlong.status, overlong.body["reason"]) == (400, "BAD_REQUEST")
    assert pod_champions(pod).body == {"hardwares": [], "champions": []}
