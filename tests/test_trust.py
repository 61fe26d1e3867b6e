"""Who ranks (docs/trust-and-ranking.md §Trust): a run is attested only when its weights verified, the serving is
bound to those weights, and it is neither a local nor a frontier run. Every branch is driven by
a real upload whose bundle was edited before signing."""

import pytest

from board.models import BenchModel
from demo.bundles import DEMO_MODELS, PERF_SUITE_ID, TEXT_SUITE_ID, weights_for
from tests.boardjobs import (
    as_frontier_run,
    as_local_run,
    benchmark_of,
    bundles,
    core_job,
    only,
    put_on_hub,
    read_api,
    submit_job,
)

pytestmark = pytest.mark.django_db


MODEL = DEMO_MODELS[0]
_, WEIGHTS_HASH = weights_for(MODEL)
OTHER_HASH = "0" * 64

FINGERPRINT = {"match": True, "status": "match", "weights_hash": WEIGHTS_HASH}
INTEGRITY = {"ok": True, "weights_verified": True, "status": "match", "weights_hash": WEIGHTS_HASH}


@pytest.fixture
def verified_hub(hub):
    """The Hub holds the demo model's weights: every upload of it verifies."""
    put_on_hub(hub, MODEL)
    return hub


def endpoint_perf_run(**evidence) -> list:
    """The perf bundle of a run against an endpoint the pod did not start, with `evidence`."""
    job = only(core_job(MODEL), PERF_SUITE_ID)
    [bundle] = bundles(job)
    bundle["recipe"]["serve_mode"] = "endpoint"
    bundle.update(evidence)
    return job


def run_of(board_url: str, run_id: str) -> dict:
    reply = read_api(board_url, f"/api/v1/runs/{run_id}")
    assert reply.status == 200, reply.text
    return reply.body


def test_a_pod_served_run_with_verified_weights_is_attested_as_hf_pull_served(
    pod, verified_hub, board_url
):
    answers = submit_job(pod, core_job(MODEL))

    assert {(a.body["verification"], a.body["trust_tier"]) for a in answers} == {
        ("verified", "attested")
    }
    assert {run_of(board_url, a.body["run_id"])["attestation_method"] for a in answers} == {
        "hf_pull_served"
    }
    benchmark = benchmark_of(board_url, answers)
    assert (benchmark["trust"], benchmark["ranked"]) == ("attested", True)


def test_an_endpoint_run_with_a_matching_fingerprint_is_attested_by_that_fingerprint(
    pod, verified_hub, board_url
):
    [answer] = submit_job(pod, endpoint_perf_run(endpoint_fingerprint=FINGERPRINT))

    assert (answer.body["verification"], answer.body["trust_tier"]) == ("verified", "attested")
    run = run_of(board_url, answer.body["run_id"])
    assert run["attestation_method"] == "endpoint_fingerprint"


def test_an_endpoint_run_with_verified_serving_integrity_is_attested_as_endpoint_verified(
    pod, verified_hub, board_url
):
    [answer] = submit_job(pod, endpoint_perf_run(serving_integrity=INTEGRITY))

    assert (answer.body["verification"], answer.body["trust_tier"]) == ("verified", "attested")
    run = run_of(board_url, answer.body["run_id"])
    assert run["attestation_method"] == "endpoint_verified"


@pytest.mark.parametrize(
    "evidence",
    [
        pytest.param({}, id="no-evidence"),
        pytest.param(
            {"endpoint_fingerprint": FINGERPRINT | {"match": False, "status": "mismatch"}},
            id="fingerprint-not-matching",
        ),
        pytest.param(
            {"endpoint_fingerprint": FINGERPRINT | {"weights_hash": OTHER_HASH}},
            id="fingerprint-of-other-weights",
        ),
        pytest.param(
            {"serving_integrity": INTEGRITY | {"weights_verified": False}},
            id="integrity-without-verified-weights",
        ),
        pytest.param(
            {"serving_integrity": INTEGRITY | {"weights_hash": OTHER_HASH}},
            id="integrity-of-other-weights",
        ),
    ],
)
def test_an_endpoint_run_without_binding_evidence_is_self_reported_though_its_weights_verify(
    pod, verified_hub, board_url, evidence
):
    [answer] = submit_job(pod, endpoint_perf_run(**evidence))

    assert (answer.body["verification"], answer.body["trust_tier"]) == (
        "verified",
        "self_reported",
    )
    assert run_of(board_url, answer.body["run_id"])["attestation_method"] == ""
    benchmark = benchmark_of(board_url, [answer])
    assert benchmark["trust"] == "self_reported"
    assert "self_reported" in benchmark["badges"]


def test_a_local_run_is_self_reported_and_its_weights_are_not_checked(pod, hub, board_url):
    job = [
        ("text", TEXT_SUITE_ID, "my-gemma-finetune-q4", as_local_run(bundle))
        for bundle in bundles(only(core_job(MODEL), TEXT_SUITE_ID))
    ]

    [answer] = submit_job(pod, job)

    assert (answer.body["verification"], answer.body["trust_tier"]) == (
        "not_applicable",
        "self_reported",
    )
    benchmark = benchmark_of(board_url, [answer])
    assert benchmark["model"] == "my-gemma-finetune-q4"
    assert benchmark["verification"]["verdict"] == "not_applicable"
    assert {"self_reported", "local_weights"} <= set(benchmark["badges"])
    assert benchmark["ranked"] is False
    assert hub.requests == []


def test_a_frontier_run_is_self_reported_never_ranked_and_flagged_frontier(pod, hub, board_url):
    name = "Frontier-Model-X (API)"
    job = [
        (board, suite_id, name, as_frontier_run(bundle, "frontier-model-x"))
        for board, suite_id, _, bundle in core_job(MODEL)
    ]

    answers = submit_job(pod, job)

    assert {(a.body["verification"], a.body["trust_tier"]) for a in answers} == {
        ("not_applicable", "self_reported")
    }
    benchmark = benchmark_of(board_url, answers)
    assert benchmark["model"] == name
    assert benchmark["ranked"] is False
    assert {"frontier", "self_reported"} <= set(benchmark["badges"])
    assert BenchModel.objects.get(canonical_id=name).is_frontier is True
    listed = read_api(board_url, "/api/v1/benchmarks?ranked=true").body
    assert listed["count"] == 0
    assert hub.requests == []


def test_a_run_whose_weight_check_is_pending_is_pending_and_not_ranked(pod, board_url):
    # conftest points the Hub at a closed port: the check defers and the runs stay pending.
    answers = submit_job(pod, core_job(MODEL))

    assert {(a.body["verification"], a.body["trust_tier"]) for a in answers} == {
        ("pending", "pending")
    }
    benchmark = benchmark_of(board_url, answers)
    assert (benchmark["trust"], benchmark["ranked"], benchmark["complete"]) == (
        "pending",
        False,
        False,
    )
    assert "weights_pending" in benchmark["badges"]
    assert "self_reported" not in benchmark["badges"]
