"""Rebuilding the board from the stored raw bundles (docs/champions.md §Read models, docs/protocol.md §Evidence and the ingest log): every
public answer comes back identical, again and again, without asking Hugging Face again."""

import hashlib
import io

import pytest
from django.core.management import call_command

from board.models import Benchmark
from board.services import bump_generation
from demo.bundles import (
    DEMO_MODELS,
    PERF_SUITE_ID,
    TEXT_SUITE_ID,
    job_bundles,
    text_checkpoints,
    weights_for,
)
from tests.boardjobs import (
    as_local_run,
    bundles,
    core_job,
    only,
    put_on_hub,
    read_api,
)

pytestmark = pytest.mark.django_db


VERIFIED = DEMO_MODELS[0]  # on the Hub as declared
MISMATCHED = DEMO_MODELS[1]  # one shard differs on the Hub
UNKNOWN = DEMO_MODELS[2]  # the Hub answers 404


def submit(pod, job, *, checkpoints_every: int | None = None) -> list[str]:
    run_ids = []
    for board, suite_id, model, bundle in job:
        checkpoints = (
            text_checkpoints(bundle, every=checkpoints_every)
            if checkpoints_every and suite_id == TEXT_SUITE_ID
            else None
        )
        answer = pod.submit_run(model, suite_id, board, bundle, checkpoints)
        assert answer.status == 200, answer.body
        run_ids.append(answer.body["run_id"])
    return run_ids


def snapshot(board_url: str, run_ids: list[str]) -> dict[str, dict]:
    """Every public answer about the board: the list, each benchmark, each run."""
    answers = {"/api/v1/benchmarks": read_api(board_url, "/api/v1/benchmarks")}
    for item in answers["/api/v1/benchmarks"].body["results"]:
        path = f"/api/v1/benchmarks/{item['id']}"
        answers[path] = read_api(board_url, path)
    for run_id in run_ids:
        path = f"/api/v1/runs/{run_id}"
        answers[path] = read_api(board_url, path)
    assert {reply.status for reply in answers.values()} == {200}
    return {path: reply.body for path, reply in answers.items()}


def rebuild() -> str:
    out = io.StringIO()
    call_command("rebuild_board", stdout=out)
    return out.getvalue().strip()


def changes(before: dict[str, dict], after: dict[str, dict]) -> dict[str, dict]:
    """The fields whose answer differs, per path: {} when the board came back identical."""
    differing = {}
    for path in before.keys() | after.keys():
        old, new = before.get(path, {}), after.get(path, {})
        fields = {key: (old.get(key), new.get(key)) for key in old.keys() | new.keys()}
        fields = {key: pair for key, pair in fields.items() if pair[0] != pair[1]}
        if fields:
            differing[path] = fields
    return differing


@pytest.fixture
def submitted(make_pod, hub, board_url) -> list[str]:
    """Three pods' jobs with every verdict a cached Hub answer can give, plus a local run."""
    put_on_hub(hub, VERIFIED)
    per_file, _ = weights_for(MISMATCHED)
    shard = sorted(per_file)[0]
    put_on_hub(hub, MISMATCHED, {**per_file, shard: hashlib.sha256(b"re-upload").hexdigest()})

    first, second, third = make_pod(), make_pod(), make_pod()
    run_ids = submit(first, job_bundles(VERIFIED), checkpoints_every=40)
    run_ids += submit(second, core_job(MISMATCHED))
    run_ids += submit(third, only(core_job(UNKNOWN), PERF_SUITE_ID))
    local = [
        ("text", TEXT_SUITE_ID, "my-local-model", as_local_run(bundle))
        for bundle in bundles(
            only(core_job(UNKNOWN, started="2026-11-07T08:00:00Z"), TEXT_SUITE_ID)
        )
    ]
    run_ids += submit(third, local)
    return run_ids


def test_a_rebuild_run_once_or_twice_gives_back_every_public_answer_without_asking_the_hub(
    submitted, hub, board_url
):
    before = snapshot(board_url, submitted)
    verdicts = {before[f"/api/v1/runs/{run_id}"]["verification"] for run_id in submitted}
    assert verdicts == {"verified", "mismatch", "unverifiable", "not_applicable"}
    assert before["/api/v1/benchmarks"]["count"] == 4
    ranked = [item for item in before["/api/v1/benchmarks"]["results"] if item["ranked"]]
    assert [item["model"] for item in ranked] == [VERIFIED.hf_repo.lower()]
    asked = hub.requests
    Benchmark.objects.all().delete()  # the read models and runs are gone: only evidence is left
    bump_generation()  # a write behind the services' back says so itself: cached answers go
    assert read_api(board_url, "/api/v1/benchmarks").body["count"] == 0

    assert rebuild() == f"rebuilt {len(submitted)} runs from their bundles"

    assert changes(before, snapshot(board_url, submitted)) == {}

    assert rebuild() == f"rebuilt {len(submitted)} runs from their bundles"

    assert changes(before, snapshot(board_url, submitted)) == {}
    assert hub.requests == asked
