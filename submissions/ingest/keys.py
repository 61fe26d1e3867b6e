"""Device keys: enrolment, revocation, and the forgeries and quarantine that lead to it
(docs/protocol.md §Enrolment)."""

import secrets
from datetime import timedelta
from typing import NoReturn

from django.conf import settings
from django.db import (
    IntegrityError,
    transaction,
)
from django.utils import timezone

from config.api_errors import Reason
from evidence.signing import (
    decode_public_key,
    key_fingerprint,
    verify_signature,
)
from submissions import signals
from submissions.ingest.evidence import Evidence
from submissions.ingest.outcomes import Outcome, Refusal, parse_body
from submissions.models import (
    LIVE_SESSION_STATUSES,
    Challenge,
    DeviceKey,
    ForgeryEvent,
    KeyAuditEntry,
    KeyStatus,
    QuarantinedBundle,
    RunSession,
    SessionStatus,
)
from submissions.schemas import (
    EnrollRequest,
    SchemaError,
    parse_request,
)

FORGERY_WINDOW = timedelta(hours=24)


def revoke_key(key: DeviceKey, *, reason: str) -> bool:
    """Revoke `key`. Call while holding SELECT FOR UPDATE on it. Returns False if already revoked."""
    if key.status == KeyStatus.REVOKED:
        return False
    key.status = KeyStatus.REVOKED
    key.revoked_at = timezone.now()
    key.revoked_reason = reason[:200]
    key.save(update_fields=["status", "revoked_at", "revoked_reason"])
    KeyAuditEntry.objects.create(key=key, action=KeyAuditEntry.Action.REVOKED, note=reason)
    # The manifests of its runs say so (docs/trust-anchor.md §Run manifests), once this commits.
    signals.key_revoked.send(DeviceKey, fingerprint=key.fingerprint)
    return True


def revoke_key_by_moderator(key_id: int, *, reason: str) -> bool:
    with transaction.atomic():
        key = DeviceKey.objects.select_for_update().get(pk=key_id)
        return revoke_key(key, reason=reason)


def mark_quarantine_reviewed(quarantine_id: int) -> None:
    """A moderator reviewed a quarantined bundle; the bundle and its reason stay as they are."""
    QuarantinedBundle.objects.filter(pk=quarantine_id).update(reviewed=True)


def record_forgery(*, key_id: int, reason: Reason, run_id: str) -> bool:
    """Count a forgery-class event; the threshold-th within 24 h revokes the key, exactly once."""
    with transaction.atomic():
        key = DeviceKey.objects.select_for_update().get(pk=key_id)
        ForgeryEvent.objects.create(key=key, reason=reason, run_id=run_id)
        if key.status != KeyStatus.ACTIVE:
            return False
        recent = ForgeryEvent.objects.filter(
            key=key, created_at__gte=timezone.now() - FORGERY_WINDOW
        ).count()
        if recent >= settings.AEON_FORGERY_REVOKE_THRESHOLD:
            return revoke_key(key, reason=f"{recent} forgery-class refusals within 24 h")
    return False


def quarantine(session: RunSession, reason: Reason, note: str, evidence: "Evidence") -> None:
    """Keep a refused signed bundle (once stored) for review."""
    QuarantinedBundle.objects.create(
        raw_id=evidence.stored(),
        run_id=session.run_id,
        key_fingerprint=session.key.fingerprint,
        reason=reason,
        note=note,
    )


def refuse_forgery(
    session: RunSession, reason: Reason, note: str, evidence: "Evidence", *, close: bool
) -> NoReturn:
    """Keep the bundle in quarantine, count the event against the key, maybe close the session;
    always raises the refusal."""
    quarantine(session, reason, note, evidence)
    record_forgery(key_id=session.key_id, reason=reason, run_id=session.run_id)
    if close:
        RunSession.objects.filter(pk=session.pk, status__in=LIVE_SESSION_STATUSES).update(
            status=SessionStatus.QUARANTINED
        )
    raise Refusal(
        reason,
        note,
        run_id=session.run_id,
        key_fingerprint=session.key.fingerprint,
        bundle_sha256=evidence.digest,
    )


def issue_challenge() -> Outcome:
    ttl = settings.AEON_CHALLENGE_TTL_SECONDS
    value = secrets.token_urlsafe(32)
    Challenge.objects.create(value=value, expires_at=timezone.now() + timedelta(seconds=ttl))
    return Outcome(200, {"challenge": value, "ttl": ttl})


def enroll_key(body: bytes) -> Outcome:
    try:
        request = parse_request(EnrollRequest, parse_body(body))
    except SchemaError as exc:
        raise Refusal(Reason.SCHEMA_INVALID, str(exc)) from None
    if decode_public_key(request.public_key) is None:
        raise Refusal(Reason.BAD_SIG, "public_key is not standard base64 of 32 bytes")
    fingerprint = key_fingerprint(request.public_key)
    known = DeviceKey.objects.filter(public_key=request.public_key).first()
    if known is not None and known.is_revoked:
        raise Refusal(Reason.REVOKED_KEY, "this key is revoked", key_fingerprint=fingerprint)
    now = timezone.now()
    # The challenge's claim and the key's writes commit together: a database failure after the
    # claim (answered 503) leaves the challenge unused, so the pod's retry of the same body
    # enrolls (the fault test under load saw such a retry answered CHALLENGE_INVALID). A claimed
    # challenge whose signature does not verify stays used.
    with transaction.atomic():
        # NUL matches no challenge, and PostgreSQL text cannot even be compared with it.
        claimed = (
            0
            if "\x00" in request.challenge
            else Challenge.objects.filter(
                value=request.challenge, used_at__isnull=True, expires_at__gt=now
            ).update(used_at=now)
        )
        if claimed != 1:
            raise Refusal(
                Reason.CHALLENGE_INVALID,
                "unknown, expired or used challenge",
                key_fingerprint=fingerprint,
            )
        signed = verify_signature(
            request.public_key, request.signature, request.challenge.encode("utf-8")
        )
        if signed:
            known = known or _enrolled(request.public_key, fingerprint)
            DeviceKey.objects.filter(pk=known.pk).update(last_seen_at=now)
    if not signed:
        raise Refusal(
            Reason.BAD_SIG,
            "signature does not verify over the challenge",
            key_fingerprint=fingerprint,
        )
    return Outcome(
        200,
        {"ok": True, "fingerprint": fingerprint, "status": known.status},
        key_fingerprint=fingerprint,
    )


def _enrolled(public_key: str, fingerprint: str) -> DeviceKey:
    """A new key's row with its audit entry; the row of the same key enrolled concurrently."""
    try:
        with transaction.atomic():
            known = DeviceKey.objects.create(public_key=public_key, fingerprint=fingerprint)
            KeyAuditEntry.objects.create(key=known, action=KeyAuditEntry.Action.ENROLLED)
    except IntegrityError:  # the same key enrolled concurrently
        known = DeviceKey.objects.get(public_key=public_key)
    return known
