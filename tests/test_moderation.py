"""Moderation in the Django admin (docs/trust-anchor.md §Moderation): each action asks
for a reason, goes through the moderation services, writes one audit row shown on the benchmark
page, recomputes what it changes (crowns, reproductions, the cache generation) and issues a new
manifest version; evidence is never deleted or edited from the admin."""

import json

import pytest
from django.contrib.auth import get_user_model

from anchor.models import AuditEntry, ModerationAction, RunManifest
from board.models import Benchmark, BoardGeneration, HoldClearance, ModerationFlag, Run
from demo.loader import prefill_hub_cache
from submissions.models import (
    DeviceKey,
    IngestLogEntry,
    KeyAuditEntry,
    KeyStatus,
    QuarantinedBundle,
    RunSession,
)
from submissions.rebuild import rebuild_board
from tests.boardjobs import core_job, read_api, submit_job
from tests.championjobs import GEMMA_816, crown, submit, submit_seed_line
from tests.inprocess import Client

pytestmark = pytest.mark.django_db

SPARK = "dgx-spark-x1"
HF_TOKEN = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bD1fH3k"


@pytest.fixture
def staff(board_client):
    get_user_model().objects.create_superuser("mod", "mod@example.org", "a-long-password-1")
    assert board_client.login(username="mod", password="a-long-password-1")
    return board_client


def act(staff, changelist: str, action: str, pks, reason: str = "checked the evidence"):
    """Choose the action, then confirm it with a reason, as a moderator does."""
    form = staff.post(changelist, {"action": action, "_selected_action": list(pks)})
    assert form.status_code == 200
    assert b'name="reason"' in form.content
    done = staff.post(
        changelist,
        {"action": action, "_selected_action": list(pks), "reason": reason, "apply": "1"},
        follow=True,
    )
    assert done.status_code == 200
    return done


def benchmark_pk(public_id: str) -> int:
    return Benchmark.objects.get(public_id=public_id).pk


def latest_manifest(run_id: str) -> dict:
    return json.loads(RunManifest.objects.filter(run_id=run_id).order_by("-version")[0].document)


def generation() -> int:
    return BoardGeneration.objects.get(pk=1).number


def log_on_page(staff, public_id: str) -> str:
    """The benchmark page as any visitor sees it (not the moderator's session)."""
    page = Client().get(f"/benchmarks/{public_id}/")
    assert page.status_code == 200
    return page.content.decode()


def test_flagging_and_unflagging_a_benchmark_moves_the_crown_with_an_audit_row(
    pod, board_url, staff
):
    prefill_hub_cache()
    _, b517, b816 = submit_seed_line(pod)
    before = generation()
    changelist = "/admin/board/benchmark/"

    act(staff, changelist, "flag_benchmarks", [benchmark_pk(b816)], "mis-wired drafter")

    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b517
    assert generation() > before
    assert ModerationFlag.objects.filter(target="benchmark", target_id=b816).exists()
    entry = AuditEntry.objects.get()
    assert (entry.moderator, entry.action, entry.target_id, entry.reason) == (
        "mod",
        ModerationAction.FLAG_BENCHMARK,
        b816,
        "mis-wired drafter",
    )
    runs = list(Run.objects.filter(benchmark__public_id=b816).values_list("run_id", flat=True))
    assert set(entry.outcome["manifest_versions"]) == set(runs)
    for run_id in runs:
        change = latest_manifest(run_id)["change"]
        assert change["cause"]["audit_id"] == entry.pk
        assert {"field": "standing.benchmark_flagged", "from": False, "to": True} in change[
            "fields"
        ]
    page = log_on_page(staff, b816)
    assert "flagged a benchmark" in page and "mis-wired drafter" in page

    act(staff, changelist, "unflag_benchmarks", [benchmark_pk(b816)], "drafter fixed upstream")

    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b816
    assert not ModerationFlag.objects.exists()
    assert list(AuditEntry.objects.values_list("action", flat=True)) == [
        ModerationAction.UNFLAG_BENCHMARK,
        ModerationAction.FLAG_BENCHMARK,
    ]
    assert "unflagged a benchmark" in log_on_page(staff, b816)


def test_flagging_and_unflagging_a_run_unranks_its_benchmark_and_back(pod, board_url, staff):
    prefill_hub_cache()
    _, b517, b816 = submit_seed_line(pod)
    perf_run = Run.objects.get(benchmark__public_id=b816, kind="perf")
    changelist = "/admin/board/run/"

    act(staff, changelist, "flag_runs", [perf_run.pk], "cohort evidence doctored")

    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b517
    assert Benchmark.objects.get(public_id=b816).ranked is False
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target_kind, entry.target_id) == (
        "flag_run",
        "run",
        perf_run.run_id,
    )
    assert list(entry.subjects.values_list("benchmark_public_id", flat=True)) == [b816]
    assert latest_manifest(perf_run.run_id)["standing"]["run_flagged"] is True

    act(staff, changelist, "unflag_runs", [perf_run.pk], "re-measured, evidence holds")

    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b816
    assert latest_manifest(perf_run.run_id)["standing"]["run_flagged"] is False
    assert AuditEntry.objects.count() == 2


def test_revoking_a_key_refuses_its_uploads_and_every_manifest_says_so(pod, board_url, staff):
    prefill_hub_cache()
    *_, b816 = submit_seed_line(pod)
    key = DeviceKey.objects.get(public_key=pod.public_key)

    act(staff, "/admin/submissions/devicekey/", "revoke_keys", [key.pk], "key leaked on a forum")

    key.refresh_from_db()
    assert key.status == KeyStatus.REVOKED
    assert KeyAuditEntry.objects.filter(key=key, action="revoked").count() == 1
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target_id) == ("revoke_key", key.fingerprint)
    benchmarks = set(Benchmark.objects.values_list("public_id", flat=True))
    assert set(entry.subjects.values_list("benchmark_public_id", flat=True)) == benchmarks
    for run_id in Run.objects.values_list("run_id", flat=True):
        manifest = latest_manifest(run_id)
        assert manifest["standing"]["pod_key"] == "revoked"
        assert manifest["change"]["cause"]["action"] == "revoke_key"
    # What it committed keeps its rank (a flag is the tool for that); new uploads are refused.
    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == b816
    refused = pod.post_json(
        "/api/v1/runs", pod.open_run_request(GEMMA_816.hf_repo, "aeon-perf-v1", "perf")
    )
    assert (refused.status, refused.reason) == (403, "REVOKED_KEY")
    assert "revoked a device key" in log_on_page(staff, b816)
    # A second revoke is refused with a message, and writes nothing.
    act(staff, "/admin/submissions/devicekey/", "revoke_keys", [key.pk], "again")
    assert AuditEntry.objects.count() == 1


def test_a_quarantined_bundle_is_reviewed_with_its_reason_code(pod, staff):
    answer = pod.submit_run(
        GEMMA_816.hf_repo,
        "aeon-suite-v4",
        "text",
        {
            "results": [
                {"case_id": "v4.math.easy.01", "category": "Math", "status": "scored", "score": 5}
            ]
        },
    )
    assert (answer.status, answer.reason) == (400, "SCHEMA_INVALID")
    item = QuarantinedBundle.objects.get()

    listing = staff.get("/admin/submissions/quarantinedbundle/")
    assert b"SCHEMA_INVALID" in listing.content
    detail = staff.get(f"/admin/submissions/quarantinedbundle/{item.pk}/change/").content.decode()
    assert "the bundle broke the schema or a board rule" in detail
    assert "v4.math.easy.01" in detail  # the bundle itself, to review
    assert 'name="_save"' not in detail

    act(staff, "/admin/submissions/quarantinedbundle/", "review_quarantined", [item.pk], "pod bug")

    item.refresh_from_db()
    assert item.reviewed is True
    assert item.reason == "SCHEMA_INVALID"  # the evidence is as it was
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target_id, entry.outcome["reason_code"]) == (
        "review_quarantine",
        str(item.pk),
        "SCHEMA_INVALID",
    )


def test_rerunning_a_weight_check_ranks_a_benchmark_once_the_hub_answers(pod, board_url, staff):
    benchmark = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")  # the Hub is unreachable
    assert Benchmark.objects.get(public_id=benchmark).ranked is False
    assert (
        read_api(board_url, f"/api/v1/champions?hardware={SPARK}&axis=throughput").body["champions"]
        == []
    )
    prefill_hub_cache()  # the Hub answers now
    runs = Run.objects.filter(benchmark__public_id=benchmark)

    act(
        staff, "/admin/board/run/", "recheck_weights", runs.values_list("pk", flat=True), "Hub back"
    )

    assert set(runs.values_list("verification", flat=True)) == {"verified"}
    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == benchmark
    entries = AuditEntry.objects.filter(action="recheck_weights")
    assert entries.count() == 2
    assert {e.outcome["verification_before"] for e in entries} == {"pending"}
    for run in runs:
        change = latest_manifest(run.run_id)["change"]
        assert change["cause"] == {"kind": "weight_check", "verdict": "verified"}
        assert {"field": "standing.verification", "from": "pending", "to": "verified"} in change[
            "fields"
        ]


def test_clearing_a_secret_hold_publishes_the_run_and_survives_a_rebuild(pod, board_url, staff):
    prefill_hub_cache()
    job = core_job(GEMMA_816, started="2026-10-03T09:00:00Z")
    job[0][3]["environment"]["note"] = f"token {HF_TOKEN}"
    answers = submit_job(pod, job)
    held = Run.objects.get(run_id=answers[0].body["run_id"])
    public_id = held.benchmark.public_id
    assert read_api(board_url, f"/api/v1/benchmarks/{public_id}").status == 404
    assert read_api(board_url, f"/api/runs/{held.run_id}/manifest").status == 404
    assert read_api(board_url, f"/api/v1/champions?hardware={SPARK}").body["champions"] == []

    act(staff, "/admin/board/run/", "clear_secret_holds", [held.pk], "a test key, revoked already")

    assert read_api(board_url, f"/api/v1/benchmarks/{public_id}").status == 200
    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == public_id
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target_id) == ("clear_secret_hold", held.run_id)
    served = read_api(board_url, f"/api/runs/{held.run_id}/manifest")
    assert served.status == 200
    assert HF_TOKEN not in served.text  # the token is never shown, even once published
    assert {"field": "standing.hold", "from": "held", "to": "cleared"} in served.body["manifest"][
        "change"
    ]["fields"]
    assert "cleared a secret-detected hold" in log_on_page(staff, public_id)

    rebuild_board()

    assert HoldClearance.objects.filter(run_id=held.run_id).exists()
    assert read_api(board_url, f"/api/v1/benchmarks/{public_id}").status == 200
    # Clearing again is refused: nothing is held.
    act(staff, "/admin/board/run/", "clear_secret_holds", [Run.objects.get(run_id=held.run_id).pk])
    assert AuditEntry.objects.count() == 1


def test_clearing_the_holds_of_a_benchmark_publishes_it(pod, board_url, staff):
    prefill_hub_cache()
    job = core_job(GEMMA_816, started="2026-10-03T09:00:00Z")
    for _, _, _, bundle in job:
        bundle["environment"]["note"] = f"token {HF_TOKEN}"
    answers = submit_job(pod, job)
    public_id = Run.objects.get(run_id=answers[0].body["run_id"]).benchmark.public_id
    assert Run.objects.filter(secret_detected=True, secret_cleared=False).count() == 2

    act(staff, "/admin/board/benchmark/", "clear_benchmark_holds", [benchmark_pk(public_id)])

    assert not Run.objects.filter(secret_detected=True, secret_cleared=False).exists()
    assert read_api(board_url, f"/api/v1/benchmarks/{public_id}").status == 200
    assert crown(board_url, SPARK, "throughput")["benchmark_id"] == public_id
    assert AuditEntry.objects.filter(action="clear_secret_hold").count() == 2
    page = log_on_page(staff, public_id)
    assert page.count("cleared a secret-detected hold") == 2
    assert HF_TOKEN not in page


def test_an_action_without_a_reason_does_nothing(pod, staff):
    prefill_hub_cache()
    benchmark = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    response = staff.post(
        "/admin/board/benchmark/",
        {
            "action": "flag_benchmarks",
            "_selected_action": [benchmark_pk(benchmark)],
            "reason": "  ",
            "apply": "1",
        },
    )
    assert response.status_code == 200 and b'name="reason"' in response.content
    assert not AuditEntry.objects.exists()
    assert not ModerationFlag.objects.exists()


EVIDENCE = {
    "/admin/board/run/": Run,
    "/admin/board/benchmark/": Benchmark,
    "/admin/board/moderationflag/": ModerationFlag,
    "/admin/submissions/devicekey/": DeviceKey,
    "/admin/submissions/runsession/": RunSession,
    "/admin/submissions/quarantinedbundle/": QuarantinedBundle,
    "/admin/submissions/ingestlogentry/": IngestLogEntry,
    "/admin/anchor/auditentry/": AuditEntry,
    "/admin/anchor/runmanifest/": RunManifest,
}


def test_the_admin_never_deletes_or_edits_evidence(pod, staff):
    prefill_hub_cache()
    benchmark = submit(pod, GEMMA_816, "2026-10-03T09:00:00Z")
    act(staff, "/admin/board/benchmark/", "flag_benchmarks", [benchmark_pk(benchmark)], "check")
    pod.submit_run(GEMMA_816.hf_repo, "aeon-suite-v4", "text", {"results": [{"case_id": "x"}]})
    counts = {url: model.objects.count() for url, model in EVIDENCE.items()}
    assert all(counts.values()), counts

    for url, model in EVIDENCE.items():
        obj = model.objects.first()
        listing = staff.get(url)
        assert listing.status_code == 200, url
        assert b'value="delete_selected"' not in listing.content, url
        assert staff.get(f"{url}{obj.pk}/delete/").status_code == 403, url
        assert staff.post(f"{url}{obj.pk}/delete/", {"post": "yes"}).status_code == 403, url
        staff.post(url, {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"})
        change = staff.get(f"{url}{obj.pk}/change/")
        assert change.status_code == 200, url
        assert b'name="_save"' not in change.content, url
        assert staff.get(f"{url}add/").status_code == 403, url

    assert {url: model.objects.count() for url, model in EVIDENCE.items()} == counts
