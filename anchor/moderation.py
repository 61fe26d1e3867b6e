"""Moderators' actions (docs/trust-anchor.md §Moderation): each one changes the board through the
owning app's service, appends one audit entry (who, when, what, why, what it did) and issues the
new manifest versions the change calls for. The Django admin only calls these.

State and history are kept apart: `board.ModerationFlag` and `board.HoldClearance` say what holds
now (a rebuild re-applies them), a key's status says whether it is revoked; `AuditEntry` is the
history and is only appended to.
"""

from functools import partial

from django.db import transaction
from django.utils import timezone

from anchor import services as anchor_services
from anchor.models import AuditEntry, AuditSubject, ModerationAction
from board import services as board_services
from board.models import Benchmark, Run
from submissions import services as submission_services
from submissions import tasks as submission_tasks
from submissions.models import DeviceKey, QuarantinedBundle


class ModerationError(ValueError):
    """The action cannot be done as asked; `str()` says why (shown to the moderator)."""


def _audit(
    *,
    moderator: str,
    action: ModerationAction,
    target_kind: str,
    target_id: str,
    reason: str,
    benchmarks,
    outcome: dict,
) -> AuditEntry:
    entry = AuditEntry.objects.create(
        at=timezone.now(),
        moderator=moderator[:150],
        action=action,
        target_kind=target_kind,
        target_id=target_id,
        reason=reason,
        outcome=outcome,
    )
    AuditSubject.objects.bulk_create(
        [AuditSubject(entry=entry, benchmark_public_id=pid) for pid in sorted(set(benchmarks))]
    )
    # The benchmark pages show the log: answers cached under the old generation are stale.
    transaction.on_commit(board_services.bump_generation)
    return entry


def _required(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ModerationError("a moderator's action needs a reason")
    return reason


def _cause(action: ModerationAction, reason: str) -> dict:
    return {"kind": "moderation", "action": str(action), "reason": reason}


def _record_manifests(entry: AuditEntry, run_ids, cause: dict) -> None:
    """New manifest versions for the runs the action touched, named in the audit entry."""
    issued = anchor_services.reissue_manifests(run_ids, cause=cause | {"audit_id": entry.pk})
    entry.outcome = entry.outcome | {"manifest_versions": issued}
    AuditEntry.objects.filter(pk=entry.pk).update(outcome=entry.outcome)


def flag_benchmark(*, moderator: str, public_id: str, flagged: bool, reason: str) -> AuditEntry:
    """Flag or unflag a benchmark: public, never ranked nor champion while flagged; the crowns
    and reproductions it touches are recomputed."""
    reason = _required(reason)
    action = ModerationAction.FLAG_BENCHMARK if flagged else ModerationAction.UNFLAG_BENCHMARK
    with transaction.atomic():
        try:
            benchmark = board_services.flag_benchmark(
                public_id=public_id, flagged=flagged, note=reason
            )
        except Benchmark.DoesNotExist:
            raise ModerationError(f"no benchmark {public_id}") from None
        entry = _audit(
            moderator=moderator,
            action=action,
            target_kind="benchmark",
            target_id=public_id,
            reason=reason,
            benchmarks=[public_id],
            outcome={"flagged": benchmark.flagged, "ranked": benchmark.ranked},
        )
        run_ids = list(benchmark.runs.values_list("run_id", flat=True))
        _record_manifests(entry, run_ids, _cause(action, reason))
    return entry


def flag_run(*, moderator: str, run_id: str, flagged: bool, reason: str) -> AuditEntry:
    """Flag or unflag one run: shown, never counted; its benchmark may lose completeness and
    rank, and the crowns it touches are recomputed."""
    reason = _required(reason)
    action = ModerationAction.FLAG_RUN if flagged else ModerationAction.UNFLAG_RUN
    with transaction.atomic():
        try:
            run = board_services.flag_run(run_id=run_id, flagged=flagged, note=reason)
        except Run.DoesNotExist:
            raise ModerationError(f"no run {run_id}") from None
        benchmark = run.benchmark
        entry = _audit(
            moderator=moderator,
            action=action,
            target_kind="run",
            target_id=run_id,
            reason=reason,
            benchmarks=[benchmark.public_id] if benchmark else [],
            outcome={
                "flagged": run.flagged,
                "benchmark_ranked": benchmark.ranked if benchmark else None,
            },
        )
        _record_manifests(entry, [run_id], _cause(action, reason))
    return entry


def clear_secret_hold(*, moderator: str, run_id: str, reason: str) -> AuditEntry:
    """A moderator reviewed a run withheld for a detected secret: publish it (its benchmark too,
    once none of its runs is held) and recompute the read models."""
    reason = _required(reason)
    action = ModerationAction.CLEAR_SECRET_HOLD
    with transaction.atomic():
        try:
            run = board_services.clear_secret_hold(run_id=run_id, note=reason)
        except Run.DoesNotExist:
            raise ModerationError(f"no run {run_id}") from None
        except ValueError as exc:
            raise ModerationError(str(exc)) from None
        benchmark = Benchmark.objects.filter(pk=run.benchmark_id).first()
        entry = _audit(
            moderator=moderator,
            action=action,
            target_kind="run",
            target_id=run_id,
            reason=reason,
            benchmarks=[benchmark.public_id] if benchmark else [],
            outcome={
                "secret_pointers": run.secret_pointers,
                "benchmark_published": bool(benchmark and not benchmark.withheld),
            },
        )
        _record_manifests(entry, [run_id], _cause(action, reason))
    return entry


def revoke_key(*, moderator: str, key_id: int, reason: str) -> AuditEntry:
    """Revoke a pod's device key: its uploads are refused from now on (REVOKED_KEY). What it
    already committed stays as it was ranked; a moderator flags it when it should not count.
    Every manifest of the key's runs says the key is revoked in a new version."""
    reason = _required(reason)
    action = ModerationAction.REVOKE_KEY
    with transaction.atomic():
        key = DeviceKey.objects.filter(pk=key_id).first()
        if key is None:
            raise ModerationError(f"no key {key_id}")
        revoked = submission_services.revoke_key_by_moderator(
            key_id, reason=f"revoked by moderator {moderator}: {reason}"
        )
        if not revoked:
            raise ModerationError(f"key {key.fingerprint} is already revoked")
        benchmarks = Benchmark.objects.filter(key_fingerprint=key.fingerprint)
        entry = _audit(
            moderator=moderator,
            action=action,
            target_kind="key",
            target_id=key.fingerprint,
            reason=reason,
            benchmarks=benchmarks.values_list("public_id", flat=True),
            outcome={"status": "revoked"},
        )
        run_ids = Run.objects.filter(key_fingerprint=key.fingerprint).values_list(
            "run_id", flat=True
        )
        _record_manifests(entry, list(run_ids), _cause(action, reason))
    return entry


def review_quarantined(*, moderator: str, quarantine_id: int, reason: str) -> AuditEntry:
    """A moderator reviewed a quarantined bundle (the evidence stays as it is)."""
    reason = _required(reason)
    with transaction.atomic():
        item = QuarantinedBundle.objects.select_for_update().filter(pk=quarantine_id).first()
        if item is None:
            raise ModerationError(f"no quarantined bundle {quarantine_id}")
        if item.reviewed:
            raise ModerationError(f"quarantined bundle {quarantine_id} is already reviewed")
        submission_services.mark_quarantine_reviewed(item.pk)
        run = Run.objects.select_related("benchmark").filter(run_id=item.run_id).first()
        return _audit(
            moderator=moderator,
            action=ModerationAction.REVIEW_QUARANTINE,
            target_kind="quarantine",
            target_id=str(item.pk),
            reason=reason,
            benchmarks=[run.benchmark.public_id] if run and run.benchmark else [],
            outcome={
                "reason_code": item.reason,
                "run_id": item.run_id,
                "key": item.key_fingerprint,
                "bundle_sha256": item.raw_id,
            },
        )


def recheck_weights(*, moderator: str, run_id: str, reason: str) -> AuditEntry:
    """Run a run's weight check again, whatever its verdict (a gated repo opened since, the Hub
    down for a day). The check runs on the worker once this commits; its verdict rewrites the
    benchmark and the read models, and issues a manifest version if it changed anything."""
    reason = _required(reason)
    with transaction.atomic():
        run = Run.objects.select_related("benchmark").filter(run_id=run_id).first()
        if run is None:
            raise ModerationError(f"no run {run_id}")
        if not run.hf_repo or run.verification == "not_applicable":
            raise ModerationError(f"run {run_id} has no weights to check")
        entry = _audit(
            moderator=moderator,
            action=ModerationAction.RECHECK_WEIGHTS,
            target_kind="run",
            target_id=run_id,
            reason=reason,
            benchmarks=[run.benchmark.public_id] if run.benchmark else [],
            outcome={"verification_before": run.verification},
        )
        transaction.on_commit(partial(submission_tasks.verify_weights.delay, run_id, force=True))
    return entry
