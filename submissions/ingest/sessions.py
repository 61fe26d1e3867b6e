"""Run sessions: opening one, admitting a results POST to one, and a job's status
(docs/protocol.md §Routes)."""

import hmac
import secrets
import string
from datetime import timedelta

from django.conf import settings
from django.db import (
    transaction,
)
from django.db.models import Q
from django.utils import timezone

from config.api_errors import Reason
from evidence.signing import (
    canonical_json,
    decode_public_key,
    verify_signature,
)
from submissions import limits
from submissions.ingest.outcomes import Outcome, Refusal, parse_body, token_hash
from submissions.ingest.rate_limits import check_rate_limit
from submissions.models import (
    LIVE_SESSION_STATUSES,
    DeviceKey,
    RunSession,
    SessionStatus,
)
from submissions.schemas import (
    KNOWN_BOARDS,
    OpenRunRequest,
    SchemaError,
    parse_request,
)

# A session untouched this long no longer counts toward the open-run cap (pods bench for days).
STALE_SESSION_AGE = timedelta(days=30)


RUN_ID_ALPHABET = string.ascii_letters + string.digits


RUN_ID_LENGTH = 16  # ≈ 95 bits


def new_run_id() -> str:
    """Letters and digits only: a leading '-' would read as an option on a moderator's command line."""
    return "".join(secrets.choice(RUN_ID_ALPHABET) for _ in range(RUN_ID_LENGTH))


def open_run(body: bytes) -> Outcome:
    try:
        request = parse_request(OpenRunRequest, parse_body(body))
    except SchemaError as exc:
        raise Refusal(Reason.SCHEMA_INVALID, str(exc)) from None
    if decode_public_key(request.public_key) is None:  # also keeps NUL out of the lookup
        raise Refusal(Reason.BAD_SIG, "public_key is not standard base64 of 32 bytes")
    key = DeviceKey.objects.filter(public_key=request.public_key).first()
    if key is None:
        raise Refusal(Reason.UNKNOWN_KEY, "enroll this key first")
    context = {"key_fingerprint": key.fingerprint}
    # Until the signature verifies, the sender is anyone holding the public key: its refusals
    # are logged by address, never on the pod's public record (docs/protocol.md §Evidence and the ingest log).
    claimed = f"(claimed key {key.fingerprint})"
    if key.is_revoked:
        raise Refusal(Reason.REVOKED_KEY, f"this key is revoked {claimed}")
    signed = {
        "action": "open_run",
        "public_key": request.public_key,
        "model": request.model,
        "suite_id": request.suite_id,
        "board": request.board,
    }
    if not verify_signature(request.public_key, request.signature, canonical_json(signed)):
        # Not counted against the key: the public key alone lets anyone send this, and five of
        # them would revoke an honest pod. Forgeries on the results route need the run token.
        raise Refusal(
            Reason.BAD_SIG, f"signature does not verify over the open_run fields {claimed}"
        )
    # Charged only once the signature holds: the public key alone must not spend a pod's budget.
    check_rate_limit(f"key:{key.fingerprint}", settings.AEON_RATE_LIMIT_PER_KEY)
    if request.board not in KNOWN_BOARDS:
        raise Refusal(Reason.SCHEMA_INVALID, f"/board: unknown board {request.board!r}", **context)
    for name in ("model", "suite_id", "board"):
        if "\x00" in (getattr(request, name) or ""):
            raise Refusal(Reason.SCHEMA_INVALID, f"/{name}: NUL character", **context)

    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        locked = DeviceKey.objects.select_for_update().get(pk=key.pk)
        if locked.is_revoked:
            raise Refusal(Reason.REVOKED_KEY, "this key is revoked", **context)
        active_since = timezone.now() - STALE_SESSION_AGE
        live = (
            RunSession.objects.filter(key=locked, status__in=LIVE_SESSION_STATUSES)
            .filter(Q(opened_at__gte=active_since) | Q(last_progress_at__gte=active_since))
            .count()
        )
        if live >= settings.AEON_MAX_OPEN_RUNS_PER_KEY:
            raise Refusal(
                Reason.TOO_MANY_OPEN_RUNS,
                f"{live} runs already open for this key; finish or abandon some",
                retry_after=60,
                **context,
            )
        session = RunSession.objects.create(
            run_id=new_run_id(),
            key=locked,
            model=request.model,
            suite_id=request.suite_id,
            board=request.board,
            nonce=secrets.token_hex(16),
            token_sha256=token_hash(token),
        )
    return Outcome(
        200,
        {"run_id": session.run_id, "run_nonce": session.nonce, "run_token": token},
        run_id=session.run_id,
        **context,
    )


def admit_results(*, run_id: str, token: str | None, ip: str | None) -> RunSession:
    """The session a results POST names, checked before its body is read (docs/protocol.md):
    the request is counted against its IP's rate limit first; then an unknown run or a wrong
    token costs the board one indexed lookup, never a body read, and is never charged to the
    key's rate limit; a key past its daily upload quota is refused then too."""
    check_rate_limit(f"ip:{ip}", settings.AEON_RATE_LIMIT_PER_IP)
    # NUL names no run, and PostgreSQL text cannot even be compared with it.
    session = (
        None
        if "\x00" in run_id
        else RunSession.objects.select_related("key").filter(run_id=run_id).first()
    )
    if session is None:
        raise Refusal(Reason.RUN_NOT_FOUND, "no run with this id", run_id=run_id)
    context = {"run_id": run_id, "key_fingerprint": session.key.fingerprint}
    if not token or not hmac.compare_digest(token_hash(token), session.token_sha256):
        raise Refusal(Reason.TOKEN_MISMATCH, "X-Aeon-Run-Token is missing or wrong", **context)
    check_rate_limit(f"key:{session.key.fingerprint}", settings.AEON_RATE_LIMIT_PER_KEY)
    # The key's daily upload quota, before the body is read: which kind of bundle it is cannot
    # be known yet, so a key past it waits with every results POST (docs/protocol.md §Quotas per
    # key).
    try:
        limits.check_upload_quota(session.key_id)
    except limits.QuotaReached as reached:
        raise Refusal(
            Reason.QUOTA_EXCEEDED, reached.note, retry_after=reached.retry_after, **context
        ) from None
    return session


def job_status(job_sig: str) -> Outcome:
    if not (1 <= len(job_sig) <= 64) or any(c not in "0123456789abcdefABCDEF" for c in job_sig):
        raise Refusal(Reason.SCHEMA_INVALID, "/job_sig: 1 to 64 hex characters")
    session = RunSession.objects.filter(
        job_sig=job_sig.lower(), status=SessionStatus.COMMITTED
    ).first()
    if session is None:
        return Outcome(200, {"exists": False, "run_id": None, "status": None})
    return Outcome(
        200, {"exists": True, "run_id": session.run_id, "status": SessionStatus.COMMITTED.value}
    )
