"""The champion answers are their one definition (board/champion_shapes.py; docs/champions.md
§The champion API, §The champion recipes pods fetch): for every kind of crown — throughput,
single stream, latency and quality, class-wide and per model, the pods' entries with and without
a crown holder — the answer rendered again through its model is the same JSON, number types
included, and it validates against the response schema /api/schema/ publishes for the route."""

import json
import re
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command

from board.champion_shapes import ChampionList, Crown, PodChampionList, PodChampionRecipe
from board.models import Champion
from board.read_models import bump_generation
from demo.loader import prefill_hub_cache
from tests.boardjobs import read_api
from tests.championjobs import (
    GEMMA_12B_QUICK,
    GEMMA_816,
    QWEN_27B_MTP,
    QWEN_35B,
    QWEN_NEXT,
    champions,
    pod_champions,
    submit,
)

pytestmark = pytest.mark.django_db

STOCK = "ghcr.io/aeon-7/aeon-vllm-ultimate:latest"
MODELS = (GEMMA_816, QWEN_NEXT, QWEN_35B, GEMMA_12B_QUICK, QWEN_27B_MTP)


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


@pytest.fixture
def board(pod):
    """A different champion on each axis of the single Spark; Qwen 27B's crown holder on a
    withheld image (pods are handed another recipe of the model), and Gemma 12B on a withheld
    image only (pods are handed none for it)."""
    submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    submit(pod, QWEN_NEXT, "2026-10-04T09:00:00Z")
    submit(pod, QWEN_35B, "2026-10-05T09:00:00Z")
    submit(pod, replace(GEMMA_12B_QUICK, image=QWEN_27B_MTP.image), "2026-10-06T09:00:00Z")
    stock = replace(QWEN_27B_MTP, key="qwen3.6-27b-mtp-stock", image=STOCK, peak_agg_tps=95.0)
    submit(pod, stock, "2026-10-07T09:00:00Z")
    submit(pod, QWEN_27B_MTP, "2026-10-08T09:00:00Z")


def openapi_to_json_schema(node):
    """OpenAPI 3.0's `nullable: true` as JSON Schema says it."""
    if isinstance(node, list):
        return [openapi_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: openapi_to_json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


def response_schema(client, path: str) -> jsonschema.Draft202012Validator:
    """The schema /api/schema/ publishes for a route's 200 answer."""
    answer = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    document = openapi_to_json_schema(answer.json())
    schema = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
    return jsonschema.Draft202012Validator(
        schema["schema"] | {"components": document["components"]}
    )


def rendered_again(model, answer: dict) -> str:
    return json.dumps(model.model_validate(answer).as_json(), sort_keys=True)


def test_every_crown_kind_answers_exactly_its_definition(board, board_url, client):
    answers = [read_api(board_url, "/api/v1/champions?hardware=dgx-spark-x1")]
    answers += [read_api(board_url, f"/api/v1/champions?model={m.hf_repo}") for m in MODELS]
    validator = response_schema(client, "/api/v1/champions")
    crowns = []
    for answer in answers:
        assert answer.status == 200, answer.text
        validator.validate(answer.body)
        assert rendered_again(ChampionList, answer.body) == json.dumps(answer.body, sort_keys=True)
        crowns += answer.body["champions"]

    kinds = {(crown["crown"], crown["axis"]) for crown in crowns}
    axes = {"throughput", "single_stream", "latency", "quality"}
    assert kinds == {(scope, axis) for scope in ("class", "model") for axis in axes}
    for crown in crowns:
        assert rendered_again(Crown, crown) == json.dumps(crown, sort_keys=True)
        assert isinstance(crown["value"], float) and isinstance(crown["reproductions"]["pods"], int)
        # Only a model's throughput crown says what pods are handed.
        offers = crown["crown"] == "model" and crown["axis"] == "throughput"
        assert ("pods_offered" in crown) is offers, crown
    offered = [crown["pods_offered"] for crown in crowns if "pods_offered" in crown]
    assert None in offered and any(offered)  # handed none, and handed one


def test_every_pod_entry_answers_exactly_its_definition(board, board_url, client):
    answer = read_api(board_url, "/api/recipes/champions")

    assert answer.status == 200, answer.text
    response_schema(client, "/api/recipes/champions").validate(answer.body)
    assert rendered_again(PodChampionList, answer.body) == json.dumps(answer.body, sort_keys=True)
    entries = answer.body["champions"]
    holders = [entry["crown_holder"] for entry in entries]
    assert None in holders and any(holders)  # the holder's recipe, and another one
    for entry in entries:
        assert isinstance(entry["peak_agg_tps"], float) and isinstance(entry["started_at"], int)


def test_the_docs_list_the_pod_entry_fields_of_the_definition():
    """docs/champions.md's field table of the pods' entries names the model's fields."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "champions.md").read_text()
    section = text.split("## The champion recipes pods fetch")[1].split("\n## ")[0]
    documented = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            documented |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    assert documented == set(PodChampionRecipe.model_fields)


def test_the_published_schema_is_valid_openapi_without_warnings(tmp_path):
    """The pydantic shapes come out as OpenAPI 3.0 (`nullable`, not JSON Schema's null type),
    and no component name of theirs collides with a serializer's."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", tmp_path / "schema.yml")


def held(answers: list[dict]) -> list[tuple]:
    """Who holds what: a recompute writes the reigns again, with times of its own."""
    return [(a.get("hardware"), a.get("axis"), a["benchmark_id"], a.get("value")) for a in answers]


def test_a_stored_crown_that_no_longer_fits_its_shape_is_left_out_not_answered_500(
    pod, board_url, caplog
):
    # Crowns written by an older build (a key since renamed, one since added) until their class
    # is recomputed: both champion APIs answer 200 without them, with an error logged, and have
    # their class recomputed (inline here: eager tasks), so the next answer holds them again.
    submit(pod, GEMMA_816, "2026-10-01T09:00:00Z")
    submit(pod, QWEN_NEXT, "2026-10-02T09:00:00Z")
    before_crowns = champions(board_url)
    before_pods = pod_champions(pod).body["champions"]
    assert len(before_crowns) >= 2 and len(before_pods) == 2

    old_crown = Champion.objects.filter(model__isnull=True).order_by("pk").first()
    Champion.objects.filter(pk=old_crown.pk).update(
        summary=old_crown.summary | {"renamed_since": 1}
    )
    bump_generation()
    assert len(champions(board_url)) == len(before_crowns) - 1
    assert held(champions(board_url)) == held(before_crowns)
    assert not Champion.objects.filter(summary__has_key="renamed_since").exists()

    old_recipe = Champion.objects.filter(axis="throughput", model__isnull=False).first()
    stale = {k: v for k, v in old_recipe.pod_recipe.items() if k != "peak_agg_tps"}
    Champion.objects.filter(pk=old_recipe.pk).update(pod_recipe=stale)
    bump_generation()
    pods = pod_champions(pod)
    assert pods.status == 200, pods.body
    assert [e["benchmark_id"] for e in pods.body["champions"]] == [
        e["benchmark_id"] for e in before_pods if e["benchmark_id"] != stale["benchmark_id"]
    ]
    assert held(pod_champions(pod).body["champions"]) == held(before_pods)

    logged = [r.getMessage() for r in caplog.records if r.name == "aeon.board"]
    assert any("stored crown" in line and "does not fit" in line for line in logged), logged
    assert any("stored pod recipe" in line for line in logged), logged
