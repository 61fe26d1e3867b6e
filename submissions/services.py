"""Writes of the pod channel: enrolment, sessions, checkpoints and commits (docs/protocol.md §Routes).

Each public function takes the raw request body and returns an `Outcome` or raises `Refusal`;
the views only read bodies and write answers. Evidence (the raw body) is stored before anything
derived from it, and a commit is one transaction.
"""

import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import string
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import NoReturn

from django.conf import settings
from django.db import (
    DataError,
    IntegrityError,
    transaction,
)
from django.db.models import F, Q
from django.utils import timezone

from anchor import services as anchor_services
from anchor import tasks as anchor_tasks
from board import selectors as board_selectors
from board import services as board_services
from board.jsonsafe import storable
from board.models import Run, Verification
from config.after_answer import publish_after_answer
from config.api_errors import Reason
from recipes.secret_scan import json_may_hold_token
from submissions import tasks
from submissions.blobstore import blob_store
from submissions.jsonbody import MalformedJson, ReceivedBody, parse_json
from submissions.models import (
    LIVE_SESSION_STATUSES,
    Challenge,
    CheckpointRow,
    DeviceKey,
    ForgeryEvent,
    IngestLogEntry,
    KeyAuditEntry,
    KeyStatus,
    QuarantinedBundle,
    RateCounter,
    RawBundle,
    RunSession,
    SessionBundle,
    SessionStatus,
)
from submissions.schemas import (
    KNOWN_BOARDS,
    EnrollRequest,
    OpenRunRequest,
    ResultsEnvelope,
    SchemaError,
    normalise_bundle,
    parse_request,
)
from submissions.signing import (
    canonical_json,
    canonical_json_with_items,
    canonical_text,
    decode_public_key,
    key_fingerprint,
    verify_signature,
)

REFUSAL_STATUS = {
    Reason.CHALLENGE_INVALID: 400,
    Reason.BAD_SIG: 400,
    Reason.MALFORMED_JSON: 400,
    Reason.SCHEMA_INVALID: 400,
    Reason.BAD_REQUEST: 400,
    Reason.UNKNOWN_KEY: 403,
    Reason.REVOKED_KEY: 403,
    Reason.TOKEN_MISMATCH: 403,
    Reason.RUN_NOT_FOUND: 404,
    Reason.REPLAY_NONCE: 409,
    Reason.RUN_ID_MISMATCH: 409,
    Reason.NONCE_MISMATCH: 409,
    Reason.RUN_CLOSED: 409,
    Reason.SIZE_EXCEEDED: 413,
    Reason.UNSUPPORTED_ENCODING: 415,
    Reason.RATE_LIMITED: 429,
    Reason.TOO_MANY_OPEN_RUNS: 429,
    Reason.UNAVAILABLE: 503,
}

DUPLICATE_MESSAGE = "job already submitted and available on the Mothership"
# A session untouched this long no longer counts toward the open-run cap (pods bench for days).
STALE_SESSION_AGE = timedelta(days=30)
FORGERY_WINDOW = timedelta(hours=24)
HEX_SIG = re.compile(r"[0-9a-fA-F]{1,64}")

logger = logging.getLogger("aeon.ingest")


@dataclass
class Outcome:
    status: int
    body: dict
    reason: str = Reason.OK
    run_id: str = ""
    key_fingerprint: str = ""
    bundle_sha256: str = ""
    note: str = ""


class Refusal(Exception):
    def __init__(self, reason: Reason, note: str, *, retry_after: int | None = None, **context):
        super().__init__(f"{reason}: {note}")
        self.reason = reason
        self.note = note
        self.status = REFUSAL_STATUS[reason]
        self.retry_after = retry_after
        self.context = context  # run_id, key_fingerprint, bundle_sha256 for the ingest log


def _parse(body: bytes | bytearray):
    try:
        return parse_json(body)
    except MalformedJson as exc:
        raise Refusal(Reason.MALFORMED_JSON, str(exc)) from None


RUN_ID_ALPHABET = string.ascii_letters + string.digits
RUN_ID_LENGTH = 16  # ≈ 95 bits


def new_run_id() -> str:
    """Letters and digits only: a leading '-' would read as an option on a moderator's command line."""
    return "".join(secrets.choice(RUN_ID_ALPHABET) for _ in range(RUN_ID_LENGTH))


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# --- rate limits -------------------------------------------------------------------------------


def check_rate_limit(scope: str, limit: int) -> None:
    """Count this request in the current window; refuse past `limit`."""
    window_start, now = _rate_window()
    _refuse_past_limit(scope, _counted(scope, window_start), limit, window_start, now)


def _counted(scope: str, window_start: int) -> int:
    """This request counted in its window, and the window's count: an increment of the window's
    row (whose lock, held to the end of this transaction, orders concurrent counts: each reads
    its own), or the row itself when this is the window's first request (a concurrent first
    request that created it meanwhile makes the create fail: the increment is made then)."""
    counter = RateCounter.objects.filter(scope=scope, window_start=window_start)
    with transaction.atomic():
        if not counter.update(count=F("count") + 1):
            try:
                with transaction.atomic():
                    RateCounter.objects.create(scope=scope, window_start=window_start, count=1)
                return 1
            except IntegrityError:
                counter.update(count=F("count") + 1)
        return counter.values_list("count", flat=True).get()


def _rate_window() -> tuple[int, float]:
    """The start of the current rate window, and now."""
    window = settings.AEON_RATE_WINDOW_SECONDS
    now = time.time()
    return int(now // window) * window, now


def _refuse_past_limit(scope: str, count: int, limit: int, window_start: int, now: float) -> None:
    window = settings.AEON_RATE_WINDOW_SECONDS
    if count == 1:  # first hit of a window: forget the windows before the previous one
        RateCounter.objects.filter(scope=scope, window_start__lt=window_start - window).delete()
    if count > limit:
        retry_after = max(1, math.ceil(window_start + window - now))
        raise Refusal(
            Reason.RATE_LIMITED,
            f"more than {limit} requests in {window} s",
            retry_after=retry_after,
        )


# --- evidence, forgery, revocation -------------------------------------------------------------


def store_evidence_row(digest: str, size: int, content: bytes | None = None) -> None:
    """The index row of a body (`content`: a small body's bytes, kept in the row; else the body
    is in the blob store already). Idempotent by content: a row already there (inline or not) is
    left as it is."""
    RawBundle.objects.bulk_create(
        [RawBundle(sha256=digest, size=size, content=content)], ignore_conflicts=True
    )


_writers: tuple[int, ThreadPoolExecutor] | None = None
_writers_lock = threading.Lock()
# A body up to this size may stay in memory while the bundle is checked (its write to the blob
# store overlaps that); a bigger one is stored, and let go, once the secret scan is done: its
# bytes next to the bundle's canonical copy would raise the worker's peak by the body's size
# (docs/protocol.md §Ingest cost).
HELD_WHILE_WRITTEN_BYTES = 8 * 1024 * 1024


def _evidence_writers() -> ThreadPoolExecutor:
    """This process's threads that write bodies to the blob store. Made after a fork, never
    inherited from it."""
    global _writers
    with _writers_lock:
        if _writers is None or _writers[0] != os.getpid():
            _writers = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix="evidence"))
        return _writers[1]


class _Evidence:
    """A results body on its way to being stored. A body of at most AEON_INLINE_EVIDENCE_BYTES
    goes into its RawBundle row (no thread, no file); a bigger one goes to the blob store, whose
    write (and disk flush) runs on another thread while the request checks the parsed bundle,
    which no longer reads the bytes. `stored()` writes the row (after waiting for the blob
    write): called before anything refers to the body (a quarantine, a checkpoint, a commit) and
    before any answer, outside the commit's transaction, so evidence comes before anything
    derived from it (docs/protocol.md §Evidence and the ingest log)."""

    def __init__(self, body: ReceivedBody):
        self.body, self.digest = body, body.sha256
        self.inline = 0 < body.size <= settings.AEON_INLINE_EVIDENCE_BYTES
        self._write = None
        if not self.inline:
            self._write = _evidence_writers().submit(
                blob_store().put, body.data, digest=self.digest
            )
            # Nothing reads the bytes after this: a big body is not held while it is worked on.
            self._write.add_done_callback(lambda _write: body.release())
        self._row_written = False

    def stored(self) -> str:
        if not self._row_written:
            if self._write is not None:
                self._write.result()  # BlobStoreUnavailable as the write raised it
                store_evidence_row(self.digest, self.body.size)
            else:
                store_evidence_row(self.digest, self.body.size, bytes(self.body.data))
                self.body.release()
            self._row_written = True
        return self.digest


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
    transaction.on_commit(partial(anchor_tasks.key_revoked.delay, key.fingerprint))
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


def _quarantine(session: RunSession, reason: Reason, note: str, evidence: "_Evidence") -> None:
    """Keep a refused signed bundle (once stored) for review."""
    QuarantinedBundle.objects.create(
        raw_id=evidence.stored(),
        run_id=session.run_id,
        key_fingerprint=session.key.fingerprint,
        reason=reason,
        note=note,
    )


def _refuse_forgery(
    session: RunSession, reason: Reason, note: str, evidence: "_Evidence", *, close: bool
) -> NoReturn:
    """Keep the bundle in quarantine, count the event against the key, maybe close the session;
    always raises the refusal."""
    _quarantine(session, reason, note, evidence)
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


# --- enrolment ---------------------------------------------------------------------------------


def issue_challenge() -> Outcome:
    ttl = settings.AEON_CHALLENGE_TTL_SECONDS
    value = secrets.token_urlsafe(32)
    Challenge.objects.create(value=value, expires_at=timezone.now() + timedelta(seconds=ttl))
    return Outcome(200, {"challenge": value, "ttl": ttl})


def enroll_key(body: bytes) -> Outcome:
    try:
        request = parse_request(EnrollRequest, _parse(body))
    except SchemaError as exc:
        raise Refusal(Reason.SCHEMA_INVALID, str(exc)) from None
    if decode_public_key(request.public_key) is None:
        raise Refusal(Reason.BAD_SIG, "public_key is not standard base64 of 32 bytes")
    fingerprint = key_fingerprint(request.public_key)
    known = DeviceKey.objects.filter(public_key=request.public_key).first()
    if known is not None and known.is_revoked:
        raise Refusal(Reason.REVOKED_KEY, "this key is revoked", key_fingerprint=fingerprint)
    now = timezone.now()
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
    if not verify_signature(
        request.public_key, request.signature, request.challenge.encode("utf-8")
    ):
        raise Refusal(
            Reason.BAD_SIG,
            "signature does not verify over the challenge",
            key_fingerprint=fingerprint,
        )
    if known is None:
        try:
            with transaction.atomic():
                known = DeviceKey.objects.create(
                    public_key=request.public_key, fingerprint=fingerprint
                )
                KeyAuditEntry.objects.create(key=known, action=KeyAuditEntry.Action.ENROLLED)
        except IntegrityError:  # the same key enrolled concurrently
            known = DeviceKey.objects.get(public_key=request.public_key)
    DeviceKey.objects.filter(pk=known.pk).update(last_seen_at=now)
    return Outcome(
        200,
        {"ok": True, "fingerprint": fingerprint, "status": known.status},
        key_fingerprint=fingerprint,
    )


# --- sessions ----------------------------------------------------------------------------------


def open_run(body: bytes) -> Outcome:
    try:
        request = parse_request(OpenRunRequest, _parse(body))
    except SchemaError as exc:
        raise Refusal(Reason.SCHEMA_INVALID, str(exc)) from None
    if decode_public_key(request.public_key) is None:  # also keeps NUL out of the lookup
        raise Refusal(Reason.BAD_SIG, "public_key is not standard base64 of 32 bytes")
    key = DeviceKey.objects.filter(public_key=request.public_key).first()
    if key is None:
        raise Refusal(Reason.UNKNOWN_KEY, "enroll this key first")
    context = {"key_fingerprint": key.fingerprint}
    # Until the signature verifies, the sender is anyone holding the public key: its refusals
    # are logged by address, never on the pod's public record (docs/protocol.md §Ingest log).
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
            token_sha256=_token_hash(token),
        )
    return Outcome(
        200,
        {"run_id": session.run_id, "run_nonce": session.nonce, "run_token": token},
        run_id=session.run_id,
        **context,
    )


# --- results -----------------------------------------------------------------------------------


def admit_results(*, run_id: str, token: str | None, ip: str | None) -> RunSession:
    """The session a results POST names, checked before its body is read (docs/protocol.md):
    the request is counted against its IP's rate limit first; then an unknown run or a wrong
    token costs the board one indexed lookup, never a body read, and is never charged to the
    key's rate limit."""
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
    if not token or not hmac.compare_digest(_token_hash(token), session.token_sha256):
        raise Refusal(Reason.TOKEN_MISMATCH, "X-Aeon-Run-Token is missing or wrong", **context)
    check_rate_limit(f"key:{session.key.fingerprint}", settings.AEON_RATE_LIMIT_PER_KEY)
    return session


@dataclass
class _Submission:
    """A bundle whose signature verified, for its session."""

    session: RunSession
    bundle: dict  # as the schema normalised it
    evidence: _Evidence  # stored before anything refers to it
    job_sig: str | None
    context: dict
    # Whether its text holds no prefixed token (recipes/secret_scan.py).
    model_output_clean: bool
    # The canonical JSON text of each of the bundle's rows, made with its signed bytes.
    row_texts: list[str] | None

    @property
    def digest(self) -> str:
        return self.evidence.digest


def submit_results(
    *, session: RunSession, body: ReceivedBody, client_ip: str | None = None
) -> Outcome:
    """A checkpoint or final bundle for an admitted session (docs/protocol.md), checked in the
    order the status table implies: syntax, key, signature, identity, duplicate, schema; then a
    checkpoint is recorded (`_record_checkpoint`) or a final committed (`_commit_final`)."""
    context = {"run_id": session.run_id, "key_fingerprint": session.key.fingerprint}
    big = body.size > HELD_WHILE_WRITTEN_BYTES
    data = body.data  # the bytes parsed and scanned here (a big body's write lets go of its own)
    # A big body starts its write to the blob store before it is parsed (the write overlaps the
    # parse and the secret scan); it is kept as evidence even when it does not parse. Any other
    # body is kept from the envelope's parse on.
    evidence = _Evidence(body) if big else None
    try:
        envelope_data = _parse(data)
        try:
            envelope = parse_request(ResultsEnvelope, envelope_data)
        except SchemaError as exc:
            raise Refusal(Reason.SCHEMA_INVALID, str(exc), **context) from None
        del envelope_data
        # Every answer from here on keeps the bundle as evidence (at the latest when this
        # returns).
        evidence = evidence or _Evidence(body)
        # A final's secret scan reads its model output in one pass over the text.
        clean = envelope.bundle.get("final") is True and not json_may_hold_token(data)
        del data
        if big:
            evidence.stored()
        return _submit_signed(session, evidence, envelope, context, clean)
    finally:
        if evidence is not None:
            evidence.stored()


def _submit_signed(
    session: RunSession, evidence: _Evidence, envelope, context: dict, model_output_clean: bool
) -> Outcome:
    run_id, bundle = session.run_id, envelope.bundle
    context["bundle_sha256"] = evidence.digest

    if session.key.is_revoked:
        _quarantine(session, Reason.REVOKED_KEY, "", evidence)
        RunSession.objects.filter(pk=session.pk, status__in=LIVE_SESSION_STATUSES).update(
            status=SessionStatus.QUARANTINED
        )
        raise Refusal(Reason.REVOKED_KEY, "this key is revoked", **context)
    signed, row_texts = _signature_check(
        session.key.public_key,
        envelope.signature,
        bundle,
        splice=evidence.body.size <= HELD_WHILE_WRITTEN_BYTES,
    )
    if not signed:
        _refuse_forgery(
            session,
            Reason.BAD_SIG,
            "signature does not verify with the run's key",
            evidence,
            close=True,
        )
    if bundle.get("run_id") != run_id:
        _refuse_forgery(
            session,
            Reason.RUN_ID_MISMATCH,
            "bundle.run_id differs from the path",
            evidence,
            close=True,
        )
    if bundle.get("run_nonce") != session.nonce:
        _refuse_forgery(
            session,
            Reason.NONCE_MISMATCH,
            "bundle.run_nonce is not this run's",
            evidence,
            close=True,
        )
    job_sig = bundle.get("job_sig")
    # Only a well-formed job_sig can name a committed run (and only such text reaches a query).
    job_sig = job_sig.lower() if isinstance(job_sig, str) and HEX_SIG.fullmatch(job_sig) else None
    duplicate_of = job_sig and _committed_run_for(session.key_id, job_sig)
    if duplicate_of:
        evidence.stored()
        return _duplicate(duplicate_of, context)
    try:
        submission = _Submission(
            session,
            _validated(session.board, bundle),
            evidence,
            job_sig,
            context,
            model_output_clean,
            row_texts,
        )
        if bundle.get("final") is True:
            return _commit_final(submission)
        return _record_checkpoint(submission)
    except (SchemaError, board_services.BundleRuleError) as exc:
        # Kept for review but never counted against the key: a format bug of one pod release
        # must not revoke every honest pod running it (docs/protocol.md).
        _quarantine(session, Reason.SCHEMA_INVALID, str(exc), evidence)
        raise Refusal(Reason.SCHEMA_INVALID, str(exc), **context) from None
    except Refusal as refusal:
        if refusal.reason == Reason.REPLAY_NONCE:
            _refuse_forgery(session, Reason.REPLAY_NONCE, refusal.note, evidence, close=False)
        raise
    except (DataError, IntegrityError) as exc:
        # A value the database cannot hold got past the schema: a bug to fix, but the bundle
        # can never commit, so the pod is told not to retry (400, kept for review).
        logger.exception("the database refused a validated bundle of run %s", run_id)
        note = f"the database cannot store a value of this bundle ({_first_line(exc)})"
        _quarantine(session, Reason.SCHEMA_INVALID, note, evidence)
        raise Refusal(Reason.SCHEMA_INVALID, note, **context) from None


def _validated(board: str, bundle: dict) -> dict:
    """The bundle as the schema normalises it, once it passes the schema and the board's rules
    (SchemaError, BundleRuleError otherwise)."""
    _parsed, bundle = normalise_bundle(bundle, board=board)
    board_services.check_bundle(board=board, bundle=bundle)
    return bundle


def _signature_check(
    public_key: str, signature, bundle: dict, *, splice: bool
) -> tuple[bool, list[str] | None]:
    """Whether the signature verifies over the bundle's canonical bytes, and the canonical text
    of each of its rows: made with those bytes (`splice`), or apart from them for a big body,
    whose rows are a small part of it and whose spliced copy would raise the worker's peak
    memory by the body's size."""
    if splice:
        message, row_texts = canonical_json_with_items(bundle, "results")
    else:
        message = canonical_json(bundle)
        rows = bundle.get("results")
        row_texts = [canonical_text(row) for row in rows] if isinstance(rows, list) else None
    return verify_signature(public_key, signature, message), row_texts


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


def _committed_run_for(key_id: int, job_sig: str) -> str | None:
    """The run id of the key's committed session of this job, if any."""
    return (
        RunSession.objects.filter(key_id=key_id, job_sig=job_sig, status=SessionStatus.COMMITTED)
        .values_list("run_id", flat=True)
        .first()
    )


def _duplicate(run_id: str, context: dict) -> Outcome:
    return Outcome(
        200,
        {"ok": True, "duplicate": True, "run_id": run_id, "message": DUPLICATE_MESSAGE},
        note=f"duplicate of {run_id}",
        **context,
    )


def _answer_closed_session(current: RunSession, submission: _Submission) -> Outcome:
    """A bundle for a session that is no longer live: the same final again is answered as
    before, anything else is a replay."""
    if current.status == SessionStatus.COMMITTED:
        if submission.job_sig and current.job_sig == submission.job_sig:
            return _duplicate(current.run_id, submission.context)
        if current.final_bundle_sha256 == submission.digest:
            return _committed_answer(current.run_id, submission.context)
        raise Refusal(
            Reason.REPLAY_NONCE,
            "this run is already committed with another bundle",
            **submission.context,
        )
    raise Refusal(
        Reason.RUN_CLOSED, f"this run is {current.status}; open a new run", **submission.context
    )


def _record_checkpoint(submission: _Submission) -> Outcome:
    """Store the cases not stored yet (first write wins), under the session's row lock."""
    session = submission.session
    # The column holds the storable id (no NUL), as board results do; row_json the original, in
    # its canonical text (made with the signed bytes).
    rows = submission.bundle["results"]
    texts = submission.row_texts or [canonical_text(row) for row in rows]
    sent = {storable(row["case_id"]): text for row, text in zip(rows, texts, strict=True)}
    submission.evidence.stored()
    now = timezone.now()
    with transaction.atomic():
        locked = RunSession.objects.select_for_update().get(pk=session.pk)
        if locked.status not in LIVE_SESSION_STATUSES:
            return _answer_closed_session(locked, submission)
        stored = set(CheckpointRow.objects.filter(session=locked).values_list("case_id", flat=True))
        new_ids = [case_id for case_id in sent if case_id not in stored]
        CheckpointRow.objects.bulk_create(
            [
                CheckpointRow(
                    session=locked,
                    case_id=case_id,
                    position=len(stored) + i,
                    row_json=sent[case_id],
                )
                for i, case_id in enumerate(new_ids)
            ]
        )
        SessionBundle.objects.create(session=locked, raw_id=submission.digest, final=False)
        locked.status = SessionStatus.RUNNING
        locked.job_sig = locked.job_sig or submission.job_sig
        locked.last_progress_at = now
        locked.checkpoints += 1
        locked.save(update_fields=["status", "job_sig", "last_progress_at", "checkpoints"])
    return Outcome(
        200,
        {
            "ok": True,
            "run_id": locked.run_id,
            "final": False,
            "n_results": len(stored) + len(new_ids),
        },
        **submission.context,
    )


def checkpointed_text(session: RunSession) -> str | None:
    """The session's checkpointed rows as stored: their JSON texts joined as one array's items
    (None: no row)."""
    texts = list(
        CheckpointRow.objects.filter(session_id=session.pk)
        .order_by("position")
        .values_list("row_json", flat=True)
    )
    return ", ".join(texts) if texts else None


def merged_rows(session: RunSession, final_rows: list[dict]) -> list[dict]:
    """Checkpointed rows first (first write per case wins), then the final's new cases."""
    joined = checkpointed_text(session) if session.checkpoints else None
    return merge_rows(joined, final_rows)[0]


def merge_rows(
    joined: str | None, final_rows: list[dict], final_texts: list[str] | None = None
) -> tuple[list[dict], bool]:
    """The final's rows merged after the checkpointed ones (`joined`: their stored texts joined,
    `checkpointed_text`), first write of a case winning; and whether the checkpointed ones hold
    no prefixed token the final's own text scan did not read (each one the final sent again
    unchanged, or one pass over their stored text finds none: recipes/secret_scan.py).
    `final_texts`: the canonical text of each of the final's rows."""
    if not joined:
        return final_rows, True
    # The final resends its checkpointed rows first, unchanged (as pods do): their stored texts
    # are then the start of the final's, up to a separator between two rows. Both are sequences
    # of whole JSON values, so the stored ones are exactly the final's first rows, and the
    # merged rows are the final's own (no row is parsed again).
    sent = ", ".join(final_texts) if final_texts is not None else None
    if (
        sent is not None
        and sent.startswith(joined)
        and sent[len(joined) : len(joined) + 2] in ("", ", ")
    ):
        return final_rows, True
    # Each row_json is the board's own JSON text of one row: joined as json.dumps joins list
    # items, they are the array's text.
    rows = json.loads(f"[{joined}]")
    seen = {row["case_id"] for row in rows}
    # The final resends its checkpointed rows: unchanged, their strings are the final's own.
    final_by_case = {row["case_id"]: row for row in final_rows}
    resent = all(final_by_case.get(row["case_id"]) == row for row in rows)
    rows.extend(row for row in final_rows if row["case_id"] not in seen)
    return rows, resent or not json_may_hold_token(joined)


def _commit_final(submission: _Submission) -> Outcome:
    """A final, committed in one transaction read top to bottom: its evidence is stored first
    (outside it); then the session's row is locked (a checkpoint or another final of it waits),
    a session no longer live is answered as it stands, the final's rows are merged with the
    checkpointed ones, the run is prepared (scores, perf cohorts, secret scan), the session
    claimed, the run written with its rows, benchmark and summary (`board_services.commit_run`)
    and its signed manifest; the weight check is queued once it commits. A concurrent commit of
    the same job from another session makes the claim fail: that final's run is the answer."""
    session = submission.session
    digest = submission.evidence.stored()  # the bundle is stored before the run refers to it
    try:
        with transaction.atomic():
            locked = RunSession.objects.select_for_update().get(pk=session.pk)
            locked.key = session.key
            if locked.status not in LIVE_SESSION_STATUSES:
                return _answer_closed_session(locked, submission)
            now = timezone.now()
            joined = checkpointed_text(locked) if locked.checkpoints else None
            rows, checkpoints_clean = merge_rows(
                joined, submission.bundle["results"], submission.row_texts
            )
            prepared = board_services.prepare_run(
                run_id=locked.run_id,
                key_fingerprint=session.key.fingerprint,
                model=locked.model,
                board=locked.board,
                suite_id=locked.suite_id,
                rows=rows,
                bundle_sha256=digest,
                bundle=submission.bundle,
                model_output_clean=checkpoints_clean and submission.model_output_clean,
            )
            _claim(locked, digest, submission.job_sig or locked.job_sig, now)
            run = board_services.commit_run(prepared, committed_at=now)
            # The board's signed manifest, version 1, commits with the run.
            anchor_services.sign_at_commit(run.run_id, benchmark=run.benchmark)
            if run.verification == Verification.PENDING:
                transaction.on_commit(
                    partial(publish_after_answer, tasks.verify_weights, run.run_id)
                )
    except IntegrityError:
        # A concurrent final of this job from another session won (one committed run per key
        # and job_sig).
        current = RunSession.objects.get(pk=session.pk)
        if current.status not in LIVE_SESSION_STATUSES:
            return _answer_closed_session(current, submission)
        existing = submission.job_sig and _committed_run_for(session.key_id, submission.job_sig)
        if existing:
            return _duplicate(existing, submission.context)
        raise
    return _committed_answer(run.run_id, submission.context, run=run)


def _claim(locked: RunSession, digest: str, job_sig: str | None, now) -> None:
    """The locked session's final: the session is committed with its final bundle, and its job's
    other live sessions are superseded. The (key, job_sig) constraint makes a concurrent commit
    of the same job from another session fail (IntegrityError)."""
    locked.status = SessionStatus.COMMITTED
    locked.job_sig = job_sig
    locked.committed_at = locked.last_progress_at = now
    locked.final_bundle_sha256 = digest
    locked.save(
        update_fields=[
            "status",
            "job_sig",
            "committed_at",
            "last_progress_at",
            "final_bundle_sha256",
        ]
    )
    SessionBundle.objects.create(session=locked, raw_id=digest, final=True)
    if job_sig:
        RunSession.objects.filter(
            key_id=locked.key_id, job_sig=job_sig, status__in=LIVE_SESSION_STATUSES
        ).exclude(pk=locked.pk).update(status=SessionStatus.SUPERSEDED)


def _committed_answer(run_id: str, context: dict, *, run: Run | None = None) -> Outcome:
    """The answer to a committed final: from the run just written, or read again.

    A run written pending had its weight check queued on commit. With eager tasks that check
    has run by now, and the answer gives its verdict, read again; with a broker the worker
    decides later and the answer says pending (tests/test_celery_worker.py), so nothing is read:
    a worker quick enough to finish first would only make the answer depend on a race."""
    if (
        run is not None
        and run.verification == Verification.PENDING
        and tasks.verify_weights.app.conf.task_always_eager
    ):
        run.refresh_from_db(fields=["trust", "verification"])
    summary = (
        board_selectors.run_commit_summary(run)
        if run is not None
        else board_selectors.commit_summary(run_id)
    )
    return Outcome(200, {"ok": True, "run_id": run_id, **summary}, **context)


# --- job status and the ingest log -------------------------------------------------------------


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


def log_attempt(
    *,
    route: str,
    status: int,
    reason: str,
    run_id: str = "",
    key_fingerprint: str = "",
    size: int = 0,
    client_ip: str | None = None,
    note: str = "",
    bundle_sha256: str = "",
) -> None:
    """One ingest-log row per attempt, written outside the ingest transaction, so refusals stay."""
    IngestLogEntry.objects.create(
        route=route,
        status=status,
        reason=reason,
        run_id=storable(run_id)[:64],
        key_fingerprint=key_fingerprint,
        bytes=size,
        client_ip=client_ip,
        note=storable(note)[:2000],
        bundle_sha256=bundle_sha256,
    )
