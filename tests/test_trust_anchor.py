"""The board's trust anchor over HTTP (docs/trust-anchor.md): its key at /.well-known, signed
attestations, and signed run manifests — version 1 at commit, a new version for every later
change, old versions still verifying."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from anchor.models import RunManifest
from anchor.services import issue_manifest
from demo.loader import prefill_hub_cache
from evidence.signing import canonical_json, verify_signature
from submissions.rebuild import rebuild_board
from tests.boardjobs import core_job, read_api, submit_job
from tests.championjobs import GEMMA_816

pytestmark = pytest.mark.django_db

HF_TOKEN = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3k"


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


def board_public_key(board_url: str) -> str:
    reply = read_api(board_url, "/.well-known/aeon-bench.json")
    assert reply.status == 200, reply.text
    assert reply.body["alg"] == "ed25519"
    assert reply.body["attestation_endpoint"] == "/api/attestation"
    return reply.body["public_key"]


def manifest(board_url: str, run_id: str, version: int | None = None):
    query = f"?version={version}" if version else ""
    return read_api(board_url, f"/api/runs/{run_id}/manifest{query}")


def verifies(envelope: dict, public_key: str) -> bool:
    return verify_signature(public_key, envelope["signature"], canonical_json(envelope["manifest"]))


def submit_gemma(pod) -> dict:
    answers = submit_job(pod, core_job(GEMMA_816, started="2026-10-03T09:00:00Z"))
    return {answer.body["run_id"]: answer for answer in answers}


def test_the_well_known_document_names_the_board_key(board_url, board_key_file):
    from anchor.keys import load_board_key

    reply = read_api(board_url, "/.well-known/aeon-bench.json")
    assert reply.status == 200
    assert set(reply.body) >= {
        "name",
        "site",
        "version",
        "alg",
        "public_key",
        "build_hash",
        "attestation_endpoint",
        "verify",
    }
    assert reply.body["public_key"] == load_board_key().public_key_b64
    assert len(reply.body["build_hash"]) == 64


def test_an_attestation_echoes_the_nonce_and_verifies_with_the_published_key(board_url):
    public_key = board_public_key(board_url)
    reply = read_api(board_url, "/api/attestation?nonce=check-me_1.2")
    assert reply.status == 200, reply.text
    body = dict(reply.body)
    signature = body.pop("signature")
    assert set(body) == {"v", "build_hash", "public_key", "alg", "ts", "nonce", "runtime"}
    assert body["nonce"] == "check-me_1.2"
    assert body["public_key"] == public_key
    assert verify_signature(public_key, signature, canonical_json(body))
    # a changed byte no longer verifies
    assert not verify_signature(public_key, signature, canonical_json(body | {"nonce": "other"}))


@pytest.mark.parametrize(
    "query", ["", "?nonce=", "?nonce=a%20b", "?nonce=" + "x" * 129, "?nonce=%3Cscript%3E"]
)
def test_a_bad_nonce_is_a_json_400_with_a_reason_code(board_url, query):
    reply = read_api(board_url, f"/api/attestation{query}")
    assert reply.status == 400
    assert reply.body["reason"] == "BAD_REQUEST"
    assert "nonce" in reply.body["note"]


def test_the_trust_endpoints_are_documented_and_refuse_other_methods_in_json(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()[
        "paths"
    ]
    for path in ("/.well-known/aeon-bench.json", "/api/attestation", "/api/runs/{run_id}/manifest"):
        assert "get" in paths[path], path
    for path in (
        "/.well-known/aeon-bench.json",
        "/api/attestation?nonce=x",
        "/api/runs/r/manifest",
    ):
        refused = client.post(path)
        assert refused.status_code == 405
        assert refused.json()["reason"] == "METHOD_NOT_ALLOWED"


def test_every_committed_run_has_a_signed_manifest_that_verifies(pod, board_url):
    public_key = board_public_key(board_url)
    runs = submit_gemma(pod)
    for run_id, answer in runs.items():
        reply = manifest(board_url, run_id)
        assert reply.status == 200, reply.text
        envelope = reply.body
        assert envelope["alg"] == "ed25519"
        assert envelope["public_key"] == public_key
        assert verifies(envelope, public_key)
        signed = envelope["manifest"]
        assert signed["kind"] == "aeon-bench.run-manifest"
        assert signed["run"]["run_id"] == run_id
        assert signed["run"]["benchmark_id"] == answer.body["benchmark_id"]
        assert signed["weights"]["weights_hash"]
        assert signed["engine"]["recipe"]["id"]
        assert signed["standing"]["pod_key"] == "active"
        assert [v["version"] for v in envelope["versions"]] == list(range(1, signed["version"] + 1))
    text_run = next(
        r
        for r, a in runs.items()
        if manifest(board_url, r).body["manifest"]["run"]["kind"] == "text"
    )
    text = manifest(board_url, text_run).body["manifest"]
    assert text["suite_hash"]
    assert text["quality"]["composite"] == pytest.approx(65.7, abs=0.05)
    assert {c["category"] for c in text["quality"]["categories"]} >= {"Math", "Coding"}
    assert text["environment"]["hardware"]


def test_the_manifest_signed_at_commit_says_what_the_run_read_back_says(pod, board_url):
    # Version 1 is signed from the run as the commit wrote it, in memory. Read back from the
    # database, each run gives the same manifest: nothing to sign again, and a later version
    # (the weight verdict's) names only what the verdict changed.
    runs = submit_gemma(pod)
    later = []
    for run_id in runs:
        assert issue_manifest(run_id, cause={"kind": "test"}) is None
        later += RunManifest.objects.filter(run_id=run_id, version__gt=1)
    assert later  # the eager weight checks signed their verdicts
    changed = {field["field"] for version in later for field in version.change["fields"]}
    verdict = {"standing.trust", "standing.verification", "weights.commit", "engine.drafter_status"}
    assert changed <= verdict, changed


def test_a_manifest_publishes_nothing_the_board_withholds(pod, board_url):
    job = core_job(GEMMA_816, started="2026-10-03T09:00:00Z")
    for _, _, _, bundle in job:
        bundle["recipe"]["command"] = [
            "vllm",
            "serve",
            "/home/alice/models/gemma",
            "--port",
            "8000",
        ]
        bundle["environment"]["workdir"] = "/home/alice/aeon/runs"
        bundle["started_at"] = "2026-10-03T09:00:00Z"
    answers = submit_job(pod, job)
    for answer in answers:
        run_id = answer.body["run_id"]
        stored = list(RunManifest.objects.filter(run_id=run_id).values_list("document", flat=True))
        assert len(stored) == 2  # signed at commit, then the weight verdict
        for text in [*stored, manifest(board_url, run_id).text]:
            assert "job_sig" not in text and "job_group" not in text
            assert "/home/alice" not in text
            assert "started_at" not in text
            assert '"command"' not in text
            for _, _, _, bundle in job:
                assert bundle["job_sig"] not in text and bundle["job_group"] not in text


def test_a_held_run_has_no_public_manifest_and_its_token_is_never_signed(pod, board_url):
    job = core_job(GEMMA_816, started="2026-10-03T09:00:00Z")
    job[0][3]["environment"]["note"] = f"token {HF_TOKEN}"
    answers = submit_job(pod, job)
    held = answers[0].body["run_id"]
    assert manifest(board_url, held).status == 404
    stored = RunManifest.objects.get(run_id=held, version=1)
    assert HF_TOKEN not in stored.document
    assert json.loads(stored.document)["standing"]["hold"] == "held"


def test_after_a_flag_the_old_manifest_still_verifies_and_the_new_version_says_what_changed(
    pod, board_url
):
    from anchor.moderation import flag_run

    public_key = board_public_key(board_url)
    runs = submit_gemma(pod)
    run_id = next(iter(runs))
    before = manifest(board_url, run_id)
    first_version = before.body["manifest"]["version"]

    flag_run(moderator="mod", run_id=run_id, flagged=True, reason="doctored cohort evidence")

    after = manifest(board_url, run_id)
    assert after.body["manifest"]["version"] == first_version + 1
    assert verifies(after.body, public_key)
    change = after.body["manifest"]["change"]
    assert change["cause"]["action"] == "flag_run"
    assert change["cause"]["reason"] == "doctored cohort evidence"
    assert {"field": "standing.run_flagged", "from": False, "to": True} in change["fields"]
    assert after.body["manifest"]["previous"]["version"] == first_version
    # the earlier version is served byte for byte as signed, and still verifies
    old = manifest(board_url, run_id, version=first_version)
    assert old.body["manifest"] == before.body["manifest"]
    assert verifies(old.body, public_key)
    assert (
        after.body["manifest"]["previous"]["sha256"]
        == old.body["versions"][first_version - 1]["sha256"]
    )
    assert manifest(board_url, run_id, version=99).status == 404


def test_a_run_committed_without_a_key_keeps_its_run_and_is_signed_later(pod, board_url, settings):
    settings.AEON_BOARD_KEY_FILE = str(settings.AEON_BLOB_DIR.parent / "not-yet.pem")
    runs = submit_gemma(pod)
    assert all(answer.status == 200 for answer in runs.values())
    assert not RunManifest.objects.exists()
    assert read_api(board_url, "/.well-known/aeon-bench.json").status == 503

    call_command("create_board_key", stdout=StringIO())
    call_command("sign_manifests", stdout=StringIO())

    public_key = board_public_key(board_url)
    for run_id in runs:
        assert verifies(manifest(board_url, run_id).body, public_key)


def test_a_rebuild_signs_runs_that_had_no_manifest_and_keeps_the_others(pod, board_url):
    runs = submit_gemma(pod)
    first, *others = runs
    RunManifest.objects.filter(run_id__in=others).delete()  # as if recorded before manifests
    kept = list(RunManifest.objects.filter(run_id=first).values_list("document", flat=True))

    rebuild_board()

    assert list(RunManifest.objects.filter(run_id=first).values_list("document", flat=True)) == kept
    public_key = board_public_key(board_url)
    for run_id in others:
        reply = manifest(board_url, run_id)
        assert reply.body["manifest"]["version"] == 1
        assert verifies(reply.body, public_key)


def test_a_key_revoked_by_its_forgery_count_is_named_in_new_manifest_versions(
    pod, board_url, settings
):
    from submissions.models import DeviceKey
    from submissions.services import record_forgery

    runs = submit_gemma(pod)
    key = DeviceKey.objects.get(public_key=pod.public_key)
    for _ in range(settings.AEON_FORGERY_REVOKE_THRESHOLD):
        record_forgery(key_id=key.pk, reason="BAD_SIG", run_id="forged")

    public_key = board_public_key(board_url)
    for run_id in runs:
        reply = manifest(board_url, run_id)
        assert verifies(reply.body, public_key)
        signed = reply.body["manifest"]
        assert signed["standing"]["pod_key"] == "revoked"
        assert signed["change"]["cause"] == {"kind": "key_revoked"}
        assert signed["change"]["fields"] == [
            {"field": "standing.pod_key", "from": "active", "to": "revoked"}
        ]


def test_verify_manifests_checks_every_stored_version_and_finds_tampering(pod, board_url):
    from anchor.moderation import flag_run

    runs = submit_gemma(pod)
    run_id = next(iter(runs))
    flag_run(moderator="mod", run_id=run_id, flagged=True, reason="check")
    out = StringIO()
    call_command("verify_manifests", stdout=out)
    assert f"{RunManifest.objects.count()} manifest version(s) verified" in out.getvalue()
    call_command("verify_manifests", "--sample", "1", stdout=StringIO())

    # A silent rewrite of a stored version is caught: the signature no longer verifies.
    first = RunManifest.objects.get(run_id=run_id, version=1)
    RunManifest.objects.filter(pk=first.pk).update(
        document=first.document.replace('"run_flagged":false', '"run_flagged":true')
    )
    # A removed version breaks the chain.
    RunManifest.objects.filter(run_id=run_id, version=2).delete()
    errors = StringIO()
    with pytest.raises(CommandError):
        call_command("verify_manifests", stdout=StringIO(), stderr=errors)
    assert f"{run_id} v1: signature does not verify" in errors.getvalue()
    assert f"{run_id} v3: version chain has a gap" in errors.getvalue()
