"""GET /api/v1/recipes/<id> (docs/recipes.md, "The recipe API"): the recipe JSON pods apply,
who used it, the commands that reproduce it, and the diff against the nearest earlier recipe of
the same model and class; its query count does not grow with the benchmarks using it."""

import hashlib
import json
import shlex
import uuid

import pytest
from django.db import connection
from django.test import Client, TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from board.models import Benchmark
from board.services import record_run
from demo.bundles import DEMO_MODELS, RECIPE_HISTORY, demo_model
from demo.loader import prefill_hub_cache
from recipes.images import NOT_ALLOWED_NOTE
from tests.boardjobs import benchmark_of, core_job, only, read_api, submit_job

GEMMA_816, GEMMA_517 = DEMO_MODELS[0], RECIPE_HISTORY[0]
DRAFTER_CONFIG = '{"method":"dflash","model":"/drafter","num_speculative_tokens":11}'
HF_TOKEN = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3k"


@pytest.fixture
def hub_answers():
    prefill_hub_cache()


def recipe_of(base_url: str, answers) -> dict:
    benchmark = benchmark_of(base_url, answers)
    reply = read_api(base_url, f"/api/v1/recipes/{benchmark['recipe_id']}")
    assert reply.status == 200, reply.text
    return reply.body


@pytest.mark.django_db
def test_a_recipe_shows_its_json_its_users_its_commands_and_the_change_from_the_last_one(
    make_pod, board_url, hub_answers
):
    first_pod, second_pod = make_pod(), make_pod()
    submit_job(first_pod, core_job(GEMMA_517, started="2026-10-10T09:00:00Z"))
    answers = submit_job(first_pod, core_job(GEMMA_816, started="2026-11-01T10:00:00Z"))
    submit_job(second_pod, core_job(GEMMA_816, started="2026-11-02T10:00:00Z"))

    body = recipe_of(board_url, answers)

    recipe = body["recipe"]
    assert body["id"] == recipe["id"]
    assert hashlib.sha256(body["canonical_json"].encode()).hexdigest() == body["id"]
    assert recipe["engine"] == "aeon-vllm-ultimate"
    assert recipe["image"] == "ghcr.io/aeon-7/aeon-vllm-ultimate:latest"
    assert recipe["flags"][recipe["flags"].index("--speculative-config") + 1] == DRAFTER_CONFIG
    assert recipe["drafter"] == {
        "method": "dflash",
        "repo": GEMMA_816.drafter_repo,
        "revision": GEMMA_816.drafter_revision,
        "n": 11,
    }
    assert recipe["context_len"] == 65536
    assert body["used_by"] == {
        "benchmarks": 2,
        "runs": 4,
        "pods": 2,
        "summary": "used by 4 runs on 2 pods",
    }
    assert {b["pod"] for b in body["benchmarks"]} == {
        fingerprint(first_pod),
        fingerprint(second_pod),
    }

    [commands] = body["commands"]
    assert commands["model"] == GEMMA_816.hf_repo.lower()
    assert commands["revision"] == GEMMA_816.hf_revision
    download = shlex.split(commands["hf_download"].replace("\\\n", " "))
    assert download[download.index("--revision") + 1] == GEMMA_816.hf_revision
    assert GEMMA_816.drafter_revision in commands["drafter_download"]
    assert DRAFTER_CONFIG in shlex.split(commands["docker_run"].replace("\\\n", " "))
    assert commands["compose"].startswith("services:")

    [previous] = body["diffs"]["previous"]
    assert previous["model"] == GEMMA_816.hf_repo.lower()
    assert previous["hardware_class"]["slug"] == "dgx-spark-x1"
    diff = previous["diff"]
    assert {"flag": "--max-num-batched-tokens", "from": "8192", "to": "32768"} in diff["changed"]
    assert {"flag": "--enable-chunked-prefill", "value": None} in diff["added"]
    assert diff["fields"] == []
    text = json.dumps(body)
    assert "/home/aeon" not in text and "model-under-test" not in text


def fingerprint(pod) -> str:
    return hashlib.sha256(pod.public_key.encode("ascii")).hexdigest()[:16]


@pytest.mark.django_db
def test_a_recipe_on_an_image_off_the_allowlist_is_offered_without_its_image(
    pod, board_url, hub_answers
):
    model = demo_model("qwen3.6-27b-mtp-spark")
    answers = submit_job(pod, core_job(model))

    body = recipe_of(board_url, answers)

    assert body["recipe"]["image"] is None
    assert body["recipe"]["image_digest"] is None
    assert body["recipe"]["image_note"] == NOT_ALLOWED_NOTE
    assert body["canonical_json"] is None  # it names the image
    assert "spark-lab" not in json.dumps(body)
    docker = shlex.split(body["commands"][0]["docker_run"].replace("\\\n", " "))
    assert "ghcr.io/aeon-7/aeon-vllm-ultimate:latest" in docker
    assert NOT_ALLOWED_NOTE in body["commands"][0]["notes"]


@pytest.mark.django_db
def test_sglang_and_llama_cpp_recipes_carry_the_flags_of_their_command(pod, board_url, hub_answers):
    sglang = recipe_of(
        board_url, submit_job(pod, core_job(demo_model("qwen3-32b-fp8-sglang-2x-rtx5090")))
    )
    llama = recipe_of(
        board_url, submit_job(pod, core_job(demo_model("qwen3-4b-instruct-q4km-llamacpp-cpu")))
    )

    assert sglang["recipe"]["flags"][:4] == ["--tp", "2", "--context-length", "65536"]
    assert "--served-model-name" not in sglang["recipe"]["flags"]
    assert "python3 -m sglang.launch_server" in sglang["commands"][0]["bare_metal"]
    assert llama["recipe"]["flags"] == ["-c", "65536", "-np", "4", "-t", "64", "--jinja"]
    docker = shlex.split(llama["commands"][0]["docker_run"].replace("\\\n", " "))
    assert docker[docker.index("-m") + 1] == "/model/Qwen3-4B-Instruct-2507-Q4_K_M.gguf"


@pytest.mark.django_db
def test_an_unknown_recipe_and_one_used_only_by_a_withheld_run_are_not_found(
    pod, board_url, hub_answers
):
    [(board, suite, model, perf)] = only(core_job(GEMMA_816), "aeon-perf-v1")
    perf["recipe"]["flags"] += ["--max-num-batched-tokens", "4096"]  # a recipe of its own
    perf["serve_log"] = f"export HF_TOKEN={HF_TOKEN}"
    answer = pod.submit_run(model, suite, board, perf)
    assert answer.status == 200
    withheld = Benchmark.objects.get(public_id=answer.body["benchmark_id"])
    assert withheld.withheld is True

    assert read_api(board_url, f"/api/v1/recipes/{withheld.recipe_id}").status == 404
    assert read_api(board_url, "/api/v1/recipes/" + "0" * 64).status == 404
    assert read_api(board_url, "/api/v1/recipes/nonsense").body["error"]


def load_benchmarks(count: int) -> str:
    """`count` benchmarks of one recipe from as many pods, recorded through the service layer."""
    [(board, suite, model, bundle)] = only(core_job(GEMMA_816), "aeon-perf-v1")
    # Commits bump the board's generation (cached answers) once they commit: run those hooks.
    with TestCase.captureOnCommitCallbacks(execute=True):
        for _ in range(count):
            _record_one(board, suite, model, bundle)
    return Benchmark.objects.values_list("recipe_id", flat=True).distinct().get()


def _record_one(board, suite, model, bundle) -> None:
    record_run(
        run_id=uuid.uuid4().hex[:16],
        key_fingerprint=uuid.uuid4().hex[:16],
        model=model,
        board=board,
        suite_id=suite,
        bundle=bundle | {"job_group": uuid.uuid4().hex[:24]},
        rows=bundle["results"],
        bundle_sha256="0" * 64,
        committed_at=timezone.now(),
    )


@pytest.mark.django_db
def test_the_recipe_api_query_count_does_not_grow_with_its_benchmarks():
    recipe_id = load_benchmarks(10)
    client = Client()
    with CaptureQueriesContext(connection) as few:
        assert client.get(f"/api/v1/recipes/{recipe_id}").status_code == 200
    load_benchmarks(100)  # beyond the 100 benchmarks an answer lists
    with CaptureQueriesContext(connection) as many:
        reply = client.get(f"/api/v1/recipes/{recipe_id}")
    assert reply.status_code == 200
    assert reply.json()["used_by"]["benchmarks"] == 110
    assert len(reply.json()["benchmarks"]) == 100
    assert len(many) == len(few) <= 10, [q["sql"] for q in many.captured_queries]


@pytest.mark.django_db
def test_a_recipe_holding_nul_is_stored_and_served(pod, board_url, hub_answers):
    [(board, suite, model, perf)] = only(core_job(GEMMA_816), "aeon-perf-v1")
    perf["recipe"]["engine"] = "aeon-vllm-ultimate\x00"
    perf["recipe"]["flags"] += ["--override-pooler-config", "a\x00b"]

    answer = pod.submit_run(model, suite, board, perf)

    assert answer.status == 200, answer.body
    body = recipe_of(board_url, [answer])
    assert body["recipe"]["engine"] == "aeon-vllm-ultimate\ufffd"
    assert body["recipe"]["flags"][-2:] == ["--override-pooler-config", "a\ufffdb"]
