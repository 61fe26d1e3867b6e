"""The weight check of committed runs (docs/trust-and-ranking.md §The weight check), end to end: a pod uploads over HTTP, the
check runs after the commit through the real huggingface_hub client against the local Hub
stand-in, and the verdict shows in the public API."""

import hashlib
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from board.models import BenchModel, Run
from demo.bundles import DEMO_MODELS, PERF_SUITE_ID, weights_for
from submissions.models import WeightCheckCache
from tests.boardjobs import (
    benchmark_of,
    bundles,
    core_job,
    only,
    put_on_hub,
    read_api,
    submit_job,
)

pytestmark = pytest.mark.django_db


MODEL = DEMO_MODELS[0]  # Gemma 4 26B-A4B with a pinned DFlash drafter
PER_FILE, WEIGHTS_HASH = weights_for(MODEL)
SHARDS = sorted(PER_FILE)


def model_info_path(repo: str, commit: str) -> str:
    return f"/api/models/{repo}/revision/{commit}?blobs=true"


def config_path(repo: str, commit: str) -> str:
    return f"/{repo}/resolve/{commit}/config.json"


def perf_job(**options):
    return only(core_job(MODEL, **options), PERF_SUITE_ID)


def run_of(board_url: str, run_id: str) -> dict:
    reply = read_api(board_url, f"/api/v1/runs/{run_id}")
    assert reply.status == 200, reply.text
    return reply.body


def test_a_job_whose_weights_and_drafter_match_the_hub_is_verified_attested_and_ranked(
    pod, hub, board_url
):
    put_on_hub(hub, MODEL)

    answers = submit_job(pod, core_job(MODEL))

    assert [(a.body["verification"], a.body["trust_tier"]) for a in answers] == [
        ("verified", "attested"),
        ("verified", "attested"),
    ]
    benchmark = benchmark_of(board_url, answers)
    assert benchmark["verification"] == {"verdict": "verified", "differences": []}
    assert benchmark["trust"] == "attested"
    assert benchmark["ranked"] is True
    assert benchmark["badges"] == ["agentic_untested"]  # only text and perf were sent
    for answer in answers:
        run = run_of(board_url, answer.body["run_id"])
        assert run["weight_differences"] == []
        assert run["attestation_method"] == "hf_pull_served"
        assert run["drafter_status"] == "pinned_ok"
        assert f"4 weight file(s) match the Hub at {MODEL.hf_revision}" in run["verification_note"]
    # The pinned drafter was looked up at its commit; present, it earns no badge. The verified
    # commit's config.json was read once, for its model facts (docs/cohorts.md §Rooflines).
    assert hub.requests == [
        ("GET", model_info_path(MODEL.hf_repo, MODEL.hf_revision)),
        ("GET", model_info_path(MODEL.drafter_repo, MODEL.drafter_revision)),
        ("GET", config_path(MODEL.hf_repo, MODEL.hf_revision)),
    ]


def test_a_file_whose_hash_differs_on_the_hub_is_a_mismatch_naming_that_file(pod, hub, board_url):
    changed = SHARDS[2]
    hub_sha = hashlib.sha256(b"someone re-uploaded this shard").hexdigest()
    put_on_hub(hub, MODEL, {**PER_FILE, changed: hub_sha})

    [answer] = submit_job(pod, perf_job())

    assert answer.body["verification"] == "mismatch"
    assert answer.body["trust_tier"] == "self_reported"
    difference = {"path": changed, "kind": "hash_differs", "declared": PER_FILE[changed]}
    benchmark = benchmark_of(board_url, [answer])
    assert benchmark["verification"] == {
        "verdict": "mismatch",
        "differences": [{"run_id": answer.body["run_id"], **difference, "hub": hub_sha}],
    }
    assert {"weights_mismatch", "self_reported"} <= set(benchmark["badges"])
    assert benchmark["ranked"] is False
    run = run_of(board_url, answer.body["run_id"])
    assert run["weight_differences"] == [{**difference, "hub": hub_sha}]
    assert changed in run["verification_note"]


def test_an_extra_and_a_missing_shard_on_the_hub_are_both_listed(pod, hub, board_url):
    missing = SHARDS[-1]
    extra = "model-00005-of-00005.safetensors"
    extra_sha = hashlib.sha256(b"a fifth shard").hexdigest()
    on_hub = {path: sha for path, sha in PER_FILE.items() if path != missing}
    put_on_hub(hub, MODEL, {**on_hub, extra: extra_sha})

    [answer] = submit_job(pod, perf_job())

    assert answer.body["verification"] == "mismatch"
    run_id = answer.body["run_id"]
    benchmark = benchmark_of(board_url, [answer])
    missing_shard = {"path": missing, "kind": "missing_on_hub", "declared": PER_FILE[missing]}
    extra_shard = {"path": extra, "kind": "extra_on_hub", "declared": None}
    assert sorted(benchmark["verification"]["differences"], key=lambda d: d["path"]) == [
        {"run_id": run_id, **missing_shard, "hub": None},
        {"run_id": run_id, **extra_shard, "hub": extra_sha},
    ]
    assert {d["path"] for d in run_of(board_url, run_id)["weight_differences"]} == {missing, extra}


def test_a_repo_the_hub_does_not_know_is_unverifiable_and_self_reported(pod, hub, board_url):
    answers = submit_job(pod, core_job(MODEL))  # nothing on the Hub: 404 RepoNotFound

    assert {(a.body["verification"], a.body["trust_tier"]) for a in answers} == {
        ("unverifiable", "self_reported")
    }
    benchmark = benchmark_of(board_url, answers)
    assert benchmark["verification"]["verdict"] == "unverifiable"
    assert benchmark["trust"] == "self_reported"
    assert benchmark["ranked"] is False
    assert {"weights_unverifiable", "self_reported"} <= set(benchmark["badges"])
    # The refusal is an answer about a commit: the second run did not ask again.
    assert hub.requests == [("GET", model_info_path(MODEL.hf_repo, MODEL.hf_revision))]


def test_a_hub_outage_leaves_the_run_pending_until_check_weights_retries_it(pod, hub, board_url):
    put_on_hub(hub, MODEL)
    hub.fail_next(MODEL.hf_repo, 503)

    [answer] = submit_job(pod, perf_job())

    assert (answer.body["verification"], answer.body["trust_tier"]) == ("pending", "pending")
    run_id = answer.body["run_id"]
    pending = run_of(board_url, run_id)
    assert pending["verification"] == "pending"
    assert "503" in pending["verification_note"]
    assert "weights_pending" in benchmark_of(board_url, [answer])["badges"]

    call_command("check_weights", "--pending")

    run = run_of(board_url, run_id)
    assert (run["verification"], run["trust_tier"]) == ("verified", "attested")
    benchmark = benchmark_of(board_url, [answer])
    assert benchmark["verification"]["verdict"] == "verified"
    assert "weights_pending" not in benchmark["badges"]
    assert len(hub.requests) == 4  # the 503, the retry, the drafter, then config.json


def test_a_branch_name_is_checked_at_the_commit_the_manifest_names(pod, hub, board_url):
    put_on_hub(hub, MODEL)  # the stand-in has no `main` branch: only the commit can answer
    job = perf_job()
    [bundle] = bundles(job)
    bundle["hf_revision"] = "main"
    assert bundle["deployment_manifest"]["verification"]["revision"] == MODEL.hf_revision

    [answer] = submit_job(pod, job)

    assert (answer.body["verification"], answer.body["trust_tier"]) == ("verified", "attested")
    assert ("GET", model_info_path(MODEL.hf_repo, MODEL.hf_revision)) in hub.requests
    assert MODEL.hf_revision in run_of(board_url, answer.body["run_id"])["verification_note"]


def test_a_branch_name_without_a_commit_in_the_manifest_is_unverifiable(pod, hub, board_url):
    put_on_hub(hub, MODEL)
    job = perf_job()
    [bundle] = bundles(job)
    bundle["hf_revision"] = "main"
    del bundle["deployment_manifest"]["verification"]["revision"]

    [answer] = submit_job(pod, job)

    assert (answer.body["verification"], answer.body["trust_tier"]) == (
        "unverifiable",
        "self_reported",
    )
    assert hub.requests == []


def test_a_second_job_of_the_same_commit_is_verified_from_the_cache(make_pod, hub, board_url):
    put_on_hub(hub, MODEL)
    [first] = submit_job(make_pod(), perf_job())
    asked = hub.requests
    assert len(asked) == 3  # the weights, the drafter, then config.json

    [second] = submit_job(make_pod(), perf_job(started="2026-11-02T10:00:00Z"))

    assert second.body["benchmark_id"] != first.body["benchmark_id"]
    assert (second.body["verification"], second.body["trust_tier"]) == ("verified", "attested")
    assert hub.requests == asked


def test_a_weights_hash_that_does_not_recompute_is_a_mismatch_without_asking_the_hub(
    pod, hub, board_url
):
    put_on_hub(hub, MODEL)
    job = perf_job()
    [bundle] = bundles(job)
    bundle["weights_hash"] = hashlib.sha256(b"not what the files hash to").hexdigest()

    [answer] = submit_job(pod, job)

    assert (answer.body["verification"], answer.body["trust_tier"]) == (
        "mismatch",
        "self_reported",
    )
    run = run_of(board_url, answer.body["run_id"])
    assert "weights_hash does not recompute" in run["verification_note"]
    assert hub.requests == []


def test_an_unpinned_drafter_is_badged_and_still_ranked(pod, hub, board_url):
    put_on_hub(hub, MODEL)
    job = core_job(MODEL)
    for bundle in bundles(job):
        bundle["recipe"]["drafter_revision"] = "main"

    answers = submit_job(pod, job)

    benchmark = benchmark_of(board_url, answers)
    assert "drafter_unpinned" in benchmark["badges"]
    assert (benchmark["trust"], benchmark["ranked"]) == ("attested", True)
    assert run_of(board_url, answers[0].body["run_id"])["drafter_status"] == "unpinned"
    assert not any(MODEL.drafter_repo in path for _, path in hub.requests)


def test_a_drafter_missing_on_the_hub_is_badged_and_still_ranked(pod, hub, board_url):
    put_on_hub(hub, MODEL, drafter=False)

    answers = submit_job(pod, core_job(MODEL))

    benchmark = benchmark_of(board_url, answers)
    assert "drafter_missing" in benchmark["badges"]
    assert (benchmark["trust"], benchmark["ranked"]) == ("attested", True)
    assert run_of(board_url, answers[-1].body["run_id"])["drafter_status"] == "missing"


def test_a_moderator_check_again_succeeds_once_a_refused_repo_is_opened(pod, hub, board_url):
    answers = submit_job(pod, core_job(MODEL))  # nothing on the Hub yet: refused, cached
    assert {a.body["verification"] for a in answers} == {"unverifiable"}

    put_on_hub(hub, MODEL)  # the owner opens the repo
    call_command("check_weights", *[a.body["run_id"] for a in answers])

    benchmark = benchmark_of(board_url, answers)
    assert benchmark["verification"]["verdict"] == "verified"
    assert benchmark["trust"] == "attested"


def test_a_hub_refusal_is_remembered_for_a_bounded_time_then_asked_again(
    make_pod, hub, board_url, settings
):
    settings.AEON_HF_REFUSED_CACHE_SECONDS = 600
    hub.gate(MODEL.hf_repo, 401)  # e.g. the board's token expired
    [first] = submit_job(make_pod(), perf_job())
    assert first.body["verification"] == "unverifiable"
    asked = len([path for _, path in hub.requests if MODEL.hf_repo in path])

    [within] = submit_job(make_pod(), perf_job())  # inside the window: the cached refusal
    assert within.body["verification"] == "unverifiable"
    assert len([path for _, path in hub.requests if MODEL.hf_repo in path]) == asked

    hub.ungate(MODEL.hf_repo)  # access granted again (a new token)
    put_on_hub(hub, MODEL)
    WeightCheckCache.objects.filter(repo=MODEL.hf_repo).update(
        fetched_at=timezone.now() - timedelta(seconds=601)
    )
    [after] = submit_job(make_pod(), perf_job())
    assert after.body["verification"] == "verified"
    assert WeightCheckCache.objects.get(repo=MODEL.hf_repo, commit=MODEL.hf_revision).found


def test_a_hub_unavailable_for_24_hours_leaves_the_run_unverifiable(pod, hub, board_url):
    put_on_hub(hub, MODEL)
    hub.fail_next(MODEL.hf_repo, 429, times=10)
    [answer] = submit_job(pod, perf_job())
    run_id = answer.body["run_id"]
    assert answer.body["verification"] == "pending"

    Run.objects.filter(run_id=run_id).update(committed_at=timezone.now() - timedelta(hours=25))
    call_command("check_weights", "--pending")

    run = run_of(board_url, run_id)
    assert (run["verification"], run["trust_tier"]) == ("unverifiable", "self_reported")
    assert "24 h" in run["verification_note"]


def test_a_verified_model_is_named_as_the_hub_spells_its_repository(pod, hub, board_url):
    """docs/trust-and-ranking.md §Models: the Hub finds a repository whatever the case it is
    asked in and answers with its own spelling; the verified model takes that spelling, not the
    one the pod typed."""
    put_on_hub(hub, MODEL)
    typed = MODEL.hf_repo.upper()
    job = core_job(MODEL)
    for _, _, _, bundle in job:
        bundle["hf_repo"] = typed

    answers = submit_job(pod, job)

    assert [a.body["verification"] for a in answers] == ["verified", "verified"]
    assert benchmark_of(board_url, answers)["model"] == MODEL.hf_repo.lower()  # its id
    model = BenchModel.objects.get(canonical_id=MODEL.hf_repo.lower())
    assert (model.display_name, model.hf_repo) == (MODEL.hf_repo, MODEL.hf_repo) != (typed, typed)
    assert WeightCheckCache.objects.get(repo=typed).repo_id == MODEL.hf_repo
