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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache, partial
from typing import NoReturn

from django.conf import settings
from django.db import (
    DatabaseError,
    DataError,
    IntegrityError,
    OperationalError,
    connection,
    transaction,
)
from django.db.models import Q
from django.utils import timezone

from anchor import services as anchor_services
from anchor import tasks as anchor_tasks
from board import selectors as board_selectors
from board import services as board_services
from board.jsonsafe import storable
from board.models import Run, Verification
from config import sqlrows
from config.after_answer import publish_after_answer
from config.api_errors import Reason
from config.durability import insert_unflushed, run_unflushed
from recipes.secret_scan import json_may_hold_token
from submissions import limits, tasks
from submissions.blobstore import BlobStoreUnavailable, blob_store
from submissions.jsonbody import BodyTooLarge, MalformedJson, ReceivedBody, parse_json
from submissions.models import (
    LIVE_SESSION_STATUSES,
    Challenge,
    CheckpointRow,
    DeviceKey,
    ForgeryEvent,
    IngestLogEntry,
    IngestRoute,
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
    logged: bool = False  # its ingest-log row is written already (with the commit it answers)


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
    except BodyTooLarge as exc:  # it would decode to more than its budget (jsonbody.py)
        raise Refusal(Reason.SIZE_EXCEEDED, str(exc)) from None


RUN_ID_ALPHABET = string.ascii_letters + string.digits
RUN_ID_LENGTH = 16  # ≈ 95 bits


def new_run_id() -> str:
    """Letters and digits only: a leading '-' would read as an option on a moderator's command line."""
    return "".join(secrets.choice(RUN_ID_ALPHABET) for _ in range(RUN_ID_LENGTH))


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# --- rate limits -------------------------------------------------------------------------------


def check_rate_limit(scope: str, limit: int) -> None:
    """Count this request in the current window with one atomic upsert; refuse past `limit`."""
    window_start, now = _rate_window()
    table = RateCounter._meta.db_table
    # A count lost in a database crash costs nothing.
    (count,) = run_unflushed(
        f"INSERT INTO {table} (scope, window_start, count) VALUES (%s, %s, 1) "
        f"ON CONFLICT (scope, window_start) DO UPDATE SET count = {table}.count + 1",
        [scope, window_start],
        returning="count",
    )
    _refuse_past_limit(scope, count, limit, window_start, now)


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


def store_evidence_row(body: ReceivedBody, digest: str) -> None:
    """The index row of a body already in the blob store. Idempotent by content: a row already
    there (inline or not) is left as it is. Unflushed: the commit of whatever refers to this row
    flushes it (config/durability.py)."""
    run_unflushed(
        f"INSERT INTO {RawBundle._meta.db_table} (sha256, size, stored_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (sha256) DO NOTHING",
        [digest, len(body), connection.ops.adapt_datetimefield_value(timezone.now())],
    )


_pools: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_pools_lock = threading.Lock()
# A body up to this size may stay in memory while the bundle is checked and scored (its write
# overlaps all of that); a bigger one is stored, and let go, once the secret scan is done: its
# bytes next to the bundle's canonical copy would raise the worker's peak by the body's size
# (docs/protocol.md §Ingest cost).
HELD_WHILE_WRITTEN_BYTES = 8 * 1024 * 1024


def _threads(name: str) -> ThreadPoolExecutor:
    """This process's threads of one kind: blob writes ("evidence"), signature checks
    ("signature"). Made after a fork, never inherited from it."""
    with _pools_lock:
        pool = _pools.get(name)
        if pool is None or pool[0] != os.getpid():
            pool = _pools[name] = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix=name))
        return pool[1]


class _Evidence:
    """A results body on its way to being stored. A body of at most AEON_INLINE_EVIDENCE_BYTES
    goes into its RawBundle row (no thread, no file); a bigger one goes to the blob store, whose
    write (and disk flush) runs while the request checks the parsed bundle, which no longer reads
    the bytes. `stored()` writes the row (after waiting for the blob write): called before
    anything refers to the body (a quarantine, a checkpoint, a commit) and before any answer, so
    evidence still comes before anything derived from it (docs/protocol.md §Evidence and the
    ingest log)."""

    def __init__(self, body: ReceivedBody):
        self.body, self.digest = body, body.sha256
        self.inline = 0 < body.size <= settings.AEON_INLINE_EVIDENCE_BYTES
        self._write = None
        if not self.inline:
            self._write = _threads("evidence").submit(
                blob_store().put, body.data, digest=self.digest
            )
            # Nothing reads the bytes after this: a big body is not held while it is worked on.
            self._write.add_done_callback(lambda _write: body.release())
        self._row_written = False

    def stored(self) -> str:
        if not self._row_written:
            if self._write is not None:
                self._write.result()  # BlobStoreUnavailable as the write raised it
                store_evidence_row(self.body, self.digest)
            else:  # unflushed, idempotent by content, as the index row
                insert_unflushed(RawBundle._meta.db_table, self.row_pending, conflict="sha256")
            self._stored_now()
        return self.digest

    @property
    def row_pending(self) -> dict | None:
        """The row of an inline body not stored yet, bytes included (written by `stored()`, or
        by a statement that stores it with other work: `_prior`); None when there is nothing to
        write that way."""
        if self._row_written or not self.inline:
            return None
        return {
            "sha256": self.digest,
            "size": self.body.size,
            "stored_at": connection.ops.adapt_datetimefield_value(timezone.now()),
            "content": self.body.data,
        }

    def _stored_now(self, *, for_good: bool = True) -> None:
        """The row is written; `for_good`: by a statement that commits on its own (the bytes
        are let go), else inside a transaction that may still roll it back (`rolled_back`)."""
        self._row_written = True
        if self.inline and for_good:
            self.body.release()

    def discard(self) -> None:
        """Refused before its signature was checked (not JSON, not an envelope, past a cap): a
        body written ahead is removed again unless a row keeps it, and no row is written."""
        if self._write is not None:
            try:
                self._write.result()
            except BlobStoreUnavailable:
                pass  # nothing was written
            else:
                if not RawBundle.objects.filter(sha256=self.digest).exists():
                    blob_store().delete(self.digest)
        self._row_written = True

    def rolled_back(self) -> None:
        """The transaction that wrote the row rolled back: the next `stored()` writes it again
        (the bytes were kept)."""
        if self.inline and self.body.data:
            self._row_written = False


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


@dataclass
class _Submission:
    session: RunSession
    bundle: dict
    evidence: "_Evidence"  # stored before anything refers to it
    job_sig: str | None
    context: dict = field(default_factory=dict)
    # Whether its text holds no prefixed token (recipes/secret_scan.py), read when first asked.
    model_output_clean: Callable[[], bool] = lambda: False
    # The session's checkpointed rows as read with the duplicate check (count and joined JSON).
    checkpointed: "_Checkpointed | None" = None
    # The canonical JSON text of each of the bundle's rows, made with its signed bytes (None:
    # not made).
    row_texts: list[str] | None = None
    # Whether `bundle` passed the schema and the board's rules (a final's check may wait until its
    # rows are being written: `checked`).
    is_checked: bool = True

    def checked(self) -> dict:
        """The bundle as the schema normalises it, checked once (SchemaError, BundleRuleError:
        refused, by `_submit_checked`)."""
        if not self.is_checked:
            self.bundle = _validated(self.session.board, self.bundle)
            self.is_checked = True
        return self.bundle

    @property
    def digest(self) -> str:
        return self.evidence.digest


class _SessionMoved(Exception):
    """The session changed between reading its checkpoint rows and claiming it."""


def admit_results(*, run_id: str, token: str | None, ip: str | None) -> RunSession:
    """The session a results POST names, checked before its body is read (docs/protocol.md):
    the request is counted against its IP's rate limit first; then an unknown run or a wrong
    token costs the board one indexed lookup, never a body read, and is never charged to the
    key's rate limit. On PostgreSQL all of it is one statement."""
    ip_scope, ip_limit = f"ip:{ip}", settings.AEON_RATE_LIMIT_PER_IP
    token_hash = _token_hash(token) if token else ""
    if connection.vendor == "postgresql" and "\x00" not in run_id:
        session, key_count, window_start, now = _admitted_and_counted(
            run_id, token_hash, ip_scope, ip_limit
        )
    else:
        check_rate_limit(ip_scope, ip_limit)
        key_count = None
        # NUL names no run, and PostgreSQL text cannot even be compared with it.
        session = (
            None
            if "\x00" in run_id
            else RunSession.objects.select_related("key").filter(run_id=run_id).first()
        )
    if session is None:
        raise Refusal(Reason.RUN_NOT_FOUND, "no run with this id", run_id=run_id)
    context = {"run_id": run_id, "key_fingerprint": session.key.fingerprint}
    if not token or not hmac.compare_digest(token_hash, session.token_sha256):
        raise Refusal(Reason.TOKEN_MISMATCH, "X-Aeon-Run-Token is missing or wrong", **context)
    scope, limit = f"key:{session.key.fingerprint}", settings.AEON_RATE_LIMIT_PER_KEY
    if key_count is None:
        check_rate_limit(scope, limit)
    else:
        _refuse_past_limit(scope, key_count, limit, window_start, now)
    return session


# One statement (written once: the ORM's compilation of the lookup cost more than the query):
# the IP's rate count for this window; the session with its key; and, when the token's hash
# matches and the IP is within its limit, the key's rate count. Every part reads one snapshot.
# Prepared on the connection (config/sqlrows.py); the counts are not flushed: set_config(…, true)
# is SET LOCAL for this one statement's implicit transaction (config/durability.py). Inside a
# transaction (never on the request path) the counts simply join it.
_COUNTERS = RateCounter._meta.db_table
_ADMIT_SQL = f"""
WITH by_ip AS (
    INSERT INTO {_COUNTERS} (scope, window_start, count) {{source}}
    ON CONFLICT (scope, window_start) DO UPDATE SET count = {_COUNTERS}.count + 1
    RETURNING count
), by_key AS (
    INSERT INTO {_COUNTERS} (scope, window_start, count)
    SELECT 'key:' || k.fingerprint, %(window)s, 1
    FROM {RunSession._meta.db_table} s JOIN {DeviceKey._meta.db_table} k ON k.id = s.key_id,
         by_ip
    WHERE s.run_id = %(run_id)s AND s.token_sha256 = %(token_hash)s
      AND by_ip.count <= %(ip_limit)s
    ON CONFLICT (scope, window_start) DO UPDATE SET count = {_COUNTERS}.count + 1
    RETURNING count
)
SELECT (SELECT count FROM by_ip), {sqlrows.columns(RunSession, "s")},
       {sqlrows.columns(DeviceKey, "k")}, (SELECT count FROM by_key)
FROM (SELECT 1 AS one) AS one
LEFT JOIN ({RunSession._meta.db_table} s JOIN {DeviceKey._meta.db_table} k ON k.id = s.key_id)
    ON s.run_id = %(run_id)s
"""
ADMIT_SQL = {
    False: _ADMIT_SQL.format(
        source="SELECT %(ip_scope)s, %(window)s, 1 "
        "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed"
    ),
    True: _ADMIT_SQL.format(source="VALUES (%(ip_scope)s, %(window)s, 1)"),
}  # by whether a transaction is open


def _admitted_and_counted(run_id: str, token_hash: str, ip_scope: str, ip_limit: int):
    window_start, now = _rate_window()
    with sqlrows.bound_cursor() as cursor:
        cursor.execute(
            ADMIT_SQL[connection.in_atomic_block],
            {
                "ip_scope": ip_scope,
                "ip_limit": ip_limit,
                "window": window_start,
                "run_id": run_id,
                "token_hash": token_hash,
            },
        )
        row = cursor.fetchone()
    _refuse_past_limit(ip_scope, row[0], ip_limit, window_start, now)
    session = sqlrows.take(RunSession, row, 1)
    if session is not None:
        session.key = sqlrows.take(DeviceKey, row, 1 + sqlrows.width(RunSession))
    return session, row[-1], window_start, now


def submit_results(
    *, session: RunSession, body: ReceivedBody, client_ip: str | None = None
) -> Outcome:
    """A checkpoint or final bundle for an admitted session (docs/protocol.md), checked in the
    order the status table implies: syntax, key, signature, identity, duplicate, schema."""
    run_id = session.run_id
    context = {"run_id": run_id, "key_fingerprint": session.key.fingerprint}
    data = body.data  # the bytes parsed and scanned here (a big body's write lets go of its own)
    # A body over HELD_WHILE_WRITTEN_BYTES starts its write to the blob store before it is
    # parsed, so that the write overlaps the parse and the secret scan; refused before its
    # envelope parses (or past a checkpoint cap), it is removed again (`_Evidence.discard`). Any
    # other body is kept from the envelope's parse on.
    evidence = _Evidence(body) if body.size > HELD_WHILE_WRITTEN_BYTES else None
    try:
        try:
            envelope_data = _parse(data)
            try:
                envelope = parse_request(ResultsEnvelope, envelope_data)
            except SchemaError as exc:
                raise Refusal(Reason.SCHEMA_INVALID, str(exc), **context) from None
            del envelope_data
            if envelope.bundle.get("final") is not True:  # before its body is stored
                _check_checkpoint_caps(session, body.size, context)
        except Refusal:
            if evidence is not None:  # a big body written ahead is not kept (docs/protocol.md)
                evidence.discard()
            raise
        # Every answer from here on keeps the bundle as evidence: its row (with a small body's
        # bytes) is written before anything refers to it (`_prior`, `_Evidence.stored`), at the
        # latest when this returns.
        evidence = evidence or _Evidence(body)
        # A final's secret scan reads its model output in one pass over the text.
        clean = _output_clean(
            envelope.bundle.get("final") is True, data, now=body.size > HELD_WHILE_WRITTEN_BYTES
        )
        del data
        if body.size > HELD_WHILE_WRITTEN_BYTES:
            evidence.stored()
        return _submit_checked(session, evidence, envelope, context, clean, client_ip)
    finally:
        if evidence is not None:
            evidence.stored()


def _check_checkpoint_caps(session: RunSession, size: int, context: dict) -> None:
    """The session's and the key's checkpoint caps (submissions/limits.py): past the session's,
    413 (the final still commits); past the key's 24-hour quota, 429 with Retry-After."""
    try:
        limits.check_checkpoint(session, size)
    except limits.CapReached as reached:
        if reached.per_key:
            raise Refusal(
                Reason.RATE_LIMITED,
                reached.note,
                retry_after=limits.KEY_RETRY_AFTER,
                **context,
            ) from None
        raise Refusal(Reason.SIZE_EXCEEDED, reached.note, **context) from None


def _output_clean(final: bool, data, *, now: bool) -> Callable[[], bool]:
    """Whether a final's text holds no prefixed token (`json_may_hold_token`): one pass over the
    text, made at once (`now`: a big body, whose bytes are let go before it is worked on), or
    when first asked (`_commit_final` asks while the run's rows are written)."""
    if now:
        clean = final and not json_may_hold_token(data)
        return lambda: clean
    return cache(lambda: final and not json_may_hold_token(data))


def _submit_checked(
    session: RunSession,
    evidence: "_Evidence",
    envelope,
    context: dict,
    model_output_clean: Callable[[], bool],
    client_ip: str | None = None,
) -> Outcome:
    run_id, bundle, digest = session.run_id, envelope.bundle, evidence.digest
    context["bundle_sha256"] = digest

    if session.key.is_revoked:
        _quarantine(session, Reason.REVOKED_KEY, "", evidence)
        RunSession.objects.filter(pk=session.pk, status__in=LIVE_SESSION_STATUSES).update(
            status=SessionStatus.QUARANTINED
        )
        raise Refusal(Reason.REVOKED_KEY, "this key is revoked", **context)
    job_sig = bundle.get("job_sig")
    # Only a well-formed job_sig can name a committed run (and only such text reaches a query).
    job_sig = job_sig.lower() if isinstance(job_sig, str) and HEX_SIG.fullmatch(job_sig) else None
    if _rows_go_first(session, evidence, bundle):
        answer = _final_rows_first(
            session, evidence, envelope, context, model_output_clean, job_sig, client_ip
        )
        if answer is not None:
            return answer
    # The signature is checked while this thread reads what the board holds already for the
    # bundle (`_prior`, one round trip); each waits for the other's answer only when it needs
    # it, and the refusals keep their order.
    signature = _signature_checked(session, envelope, evidence.body.size)
    prior = _prior(session, job_sig, evidence, final=bundle.get("final") is True)
    signed, row_texts = signature()
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

    if prior.duplicate_of is not None:
        evidence.stored()
        return _duplicate(prior.duplicate_of, context)
    final = bundle.get("final") is True
    submission = _Submission(
        session,
        bundle,
        evidence,
        job_sig,
        context,
        model_output_clean,
        prior.checkpointed,
        row_texts,
        # A final whose rows can be merged as sent is checked while they are written (the
        # check is the same, and refuses the same: nothing commits before it passes).
        is_checked=not (final and _mergeable(bundle)),
    )
    try:
        if submission.is_checked:
            submission.bundle = _validated(session.board, bundle)
        if final:
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


def _mergeable(bundle: dict) -> bool:
    """Whether a final's rows can be merged with its checkpointed ones before the schema checks
    them: a list of objects, each with a text case id."""
    rows = bundle.get("results")
    return isinstance(rows, list) and all(
        isinstance(row, dict) and isinstance(row.get("case_id"), str) for row in rows
    )


def _signature_checked(
    session: RunSession, envelope, size: int
) -> Callable[[], tuple[bool, list[str] | None]]:
    """`_signature_check` of a results body, on another thread for a body up to
    HELD_WHILE_WRITTEN_BYTES; a bigger one is checked at once on this thread: its canonical
    copies, made elsewhere, would stay in that thread's memory arena and raise the worker's peak
    by the body's size (the overlap saves a round trip, nothing at that size)."""
    check = partial(
        _signature_check,
        session.key.public_key,
        envelope.signature,
        envelope.bundle,
        splice=size <= HELD_WHILE_WRITTEN_BYTES,
    )
    if size > HELD_WHILE_WRITTEN_BYTES:
        answer = check()
        return lambda: answer
    return _threads("signature").submit(check).result


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


@dataclass
class _Checkpointed:
    """A session's checkpointed rows read in one snapshot: how many checkpoints it holds and
    their stored JSON texts joined as one array's items (None: no row)."""

    checkpoints: int
    joined: str | None


@dataclass
class _Prior:
    duplicate_of: str | None  # the run id of the key's committed session of this job
    checkpointed: _Checkpointed | None  # read for a final only


def _prior(
    session: RunSession, job_sig: str | None, evidence: "_Evidence", *, final: bool
) -> _Prior:
    """What the board holds already for this bundle: the key's committed run of its job (a
    duplicate) and, for a final, the session's checkpointed rows. On PostgreSQL one statement,
    which also writes the evidence row of an inline body that is not stored yet (unflushed, as
    `_Evidence.stored` writes it; the bytes travel as a binary parameter)."""
    if connection.vendor != "postgresql":
        duplicate = _committed_run_for(session.key_id, job_sig) if job_sig else None
        return _Prior(duplicate, _checkpointed(session) if final and not duplicate else None)
    return _prior_sent(session, job_sig, evidence, final=final)()


def _prior_sent(
    session: RunSession, job_sig: str | None, evidence: "_Evidence", *, final: bool
) -> Callable[[], _Prior]:
    """`_prior`'s statement (PostgreSQL), sent at once; returns how to read its answer (in a
    pipeline, read only when asked). Inside a transaction the evidence row joins it: flushed by
    its commit, or rolled back with it (`_Evidence.rolled_back`)."""
    row = evidence.row_pending
    params = {
        "key": session.key_id,
        "job_sig": job_sig,
        "committed": str(SessionStatus.COMMITTED),
        "session": session.pk,
        "final": final,
        **(row or {}),
    }
    alone = not connection.in_atomic_block
    cursor = sqlrows.bound_cursor()
    cursor.execute(_prior_sql(row is not None, alone), params)
    if row is not None:
        evidence._stored_now(for_good=alone)

    def read() -> _Prior:
        with cursor:
            duplicate, checkpoints, joined = cursor.fetchone()
        return _Prior(duplicate, _Checkpointed(checkpoints, joined) if final else None)

    return read


_PRIOR_READS = f"""
SELECT (SELECT run_id FROM {RunSession._meta.db_table}
        WHERE key_id = %(key)s AND job_sig = %(job_sig)s AND status = %(committed)s LIMIT 1),
       (SELECT checkpoints FROM {RunSession._meta.db_table} WHERE id = %(session)s),
       (SELECT string_agg(row_json, ', ' ORDER BY position) FROM {CheckpointRow._meta.db_table}
        WHERE session_id = %(session)s AND %(final)s)
"""


@cache
def _prior_sql(with_row: bool, unflushed: bool) -> str:
    """The prior reads, after the evidence row's INSERT `with_row`: written as `insert_unflushed`
    writes it when `unflushed` (set_config is SET LOCAL for this one statement's implicit
    transaction), else joining the transaction it runs in."""
    if not with_row:
        return _PRIOR_READS
    unflushed_from = " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed"
    return (
        f"WITH stored AS (INSERT INTO {RawBundle._meta.db_table} (sha256, size, stored_at, content) "
        f"SELECT %(sha256)s, %(size)s, %(stored_at)s, %(content)s{unflushed_from if unflushed else ''} "
        "ON CONFLICT (sha256) DO NOTHING)" + _PRIOR_READS
    )


def _checkpointed(session: RunSession, checkpoints: int | None = None) -> _Checkpointed:
    """The session's checkpointed rows as stored now, with their count (`checkpoints`: as read
    already). The count is read first: a checkpoint landing in between then makes the final's
    claim miss (it holds the count), never pass with rows older than the count."""
    if checkpoints is None:
        checkpoints = (
            RunSession.objects.filter(pk=session.pk).values_list("checkpoints", flat=True).first()
        ) or 0
    texts = list(
        CheckpointRow.objects.filter(session_id=session.pk)
        .order_by("position")
        .values_list("row_json", flat=True)
    )
    return _Checkpointed(checkpoints, ", ".join(texts) if texts else None)


def _committed_run_for(key_id: int, job_sig: str) -> str | None:
    """The run id of the key's committed session of this job, if any (SQL written once)."""
    with sqlrows.bound_cursor() as cursor:
        cursor.execute(COMMITTED_RUN_SQL, [key_id, job_sig, str(SessionStatus.COMMITTED)])
        row = cursor.fetchone()
    return row[0] if row else None


COMMITTED_RUN_SQL = (
    f"SELECT run_id FROM {RunSession._meta.db_table} "
    "WHERE key_id = %s AND job_sig = %s AND status = %s LIMIT 1"
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
    """Store the cases not stored yet (first write wins). Rows are serialised before the session
    row is locked; the lock covers only the writes."""
    session = submission.session
    seen = RunSession.objects.filter(pk=session.pk).values_list("checkpoints", flat=True).first()
    stored = set(CheckpointRow.objects.filter(session=session).values_list("case_id", flat=True))
    # The column holds the storable id (no NUL), as board results do; row_json the original, in
    # its canonical text (made with the signed bytes).
    rows = submission.bundle["results"]
    texts = submission.row_texts or [canonical_text(row) for row in rows]
    fresh = [
        (case_id, text)
        for row, text in zip(rows, texts, strict=True)
        if (case_id := storable(row["case_id"])) not in stored
    ]
    serialised = dict(fresh)
    submission.evidence.stored()
    now = timezone.now()
    with transaction.atomic():
        locked = RunSession.objects.select_for_update().get(pk=session.pk)
        if locked.status not in LIVE_SESSION_STATUSES:
            return _answer_closed_session(locked, submission)
        if locked.checkpoints != seen:  # another checkpoint landed meanwhile
            stored = set(
                CheckpointRow.objects.filter(session=locked).values_list("case_id", flat=True)
            )
        new_ids = [case_id for case_id, _ in fresh if case_id not in stored]
        CheckpointRow.objects.bulk_create(
            [
                CheckpointRow(
                    session=locked,
                    case_id=case_id,
                    position=len(stored) + i,
                    row_json=serialised[case_id],
                )
                for i, case_id in enumerate(new_ids)
            ],
            ignore_conflicts=True,
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


def merged_rows(session: RunSession, final_rows: list[dict]) -> list[dict]:
    """Checkpointed rows first (first write per case wins), then the final's new cases."""
    return _merged_rows(session, final_rows)[0]


def _merged_rows(
    session: RunSession,
    final_rows: list[dict],
    checkpointed: _Checkpointed | None = None,
    final_texts: list[str] | None = None,
) -> tuple[list[dict], bool, str | None]:
    """The merged rows; whether the checkpointed ones hold no prefixed token the final's own
    text scan did not read (each one the final sent again unchanged, or one pass over their
    stored text finds none: recipes/secret_scan.py); and the rows' JSON text when it comes from
    texts already made (None: not made). `checkpointed`: the session's rows as read already;
    `final_texts`: the canonical text of each of the final's rows."""
    sent = ", ".join(final_texts) if final_texts is not None else None
    if checkpointed is None:
        if not session.checkpoints:
            return final_rows, True, _array_text(sent)
        checkpointed = _checkpointed(session, session.checkpoints)
    joined = checkpointed.joined
    if not joined:
        return final_rows, True, _array_text(sent)
    # The final resends its checkpointed rows first, unchanged (as pods do): their stored texts
    # are then the start of the final's, up to a separator between two rows. Both are sequences
    # of whole JSON values, so the stored ones are exactly the final's first rows, and the
    # merged rows are the final's own (no row is parsed again).
    if (
        sent is not None
        and sent.startswith(joined)
        and sent[len(joined) : len(joined) + 2] in ("", ", ")
    ):
        return final_rows, True, _array_text(sent)
    # Each row_json is the board's own JSON text of one row: joined as json.dumps joins list
    # items, they are the array's text, which parses as the rows and is stored as it is.
    rows = json.loads(f"[{joined}]")
    seen = {row["case_id"] for row in rows}
    # The final resends its checkpointed rows: unchanged, their strings are the final's own.
    final_by_case = {row["case_id"]: row for row in final_rows}
    resent = all(final_by_case.get(row["case_id"]) == row for row in rows)
    fresh = [row for row in final_rows if row["case_id"] not in seen]
    rows.extend(fresh)
    rows_json = "".join(["[", joined, *(", " + json.dumps(row) for row in fresh), "]"])
    return rows, resent or not json_may_hold_token(joined), rows_json


def _array_text(items: str | None) -> str | None:
    return None if items is None else f"[{items}]"


FINAL_ATTEMPTS = 3


def _commit_final(submission: _Submission) -> Outcome:
    """Claim the session and record the run in one transaction: the session row is locked only
    by the claim, sent with the run's rows once they are merged and parsed (parsing and merging
    never hold it). A checkpoint that lands in between makes the claim miss; the rows are merged
    again."""
    session = submission.session
    current = session  # read when the request was admitted; a stale read only misses the claim
    for attempt in range(FINAL_ATTEMPTS):
        checkpointed = None
        if attempt:
            current = RunSession.objects.get(pk=session.pk)
        elif submission.checkpointed is not None:
            # Read with the duplicate check: the claim then holds the count read with the rows.
            checkpointed = submission.checkpointed
            current.checkpoints = checkpointed.checkpoints
        if current.status not in LIVE_SESSION_STATUSES:
            submission.checked()  # the schema is answered before the session's state
            return _answer_closed_session(current, submission)
        rows, checkpoints_clean, rows_json = _merged_rows(
            current, submission.bundle["results"], checkpointed, submission.row_texts
        )
        prepare = _preparer(submission, current, rows, rows_json, checkpoints_clean)
        # Scored, scanned and serialised before the transaction (its locks cover writes only);
        # on PostgreSQL, inside it while the run's per-case rows are written, which takes no lock
        # another commit waits for (`rows_written_ahead`). The final's own text is scanned then.
        rows_jsonb = board_services.rows_jsonb_text(rows, rows_json)
        prepared = None if rows_jsonb else prepare(bundle=submission.checked())
        submission.evidence.stored()  # the bundle is on disk before the run refers to it
        try:
            with transaction.atomic():
                now = timezone.now()
                with board_services.rows_written_ahead(rows_jsonb) as rows_ahead:
                    prepared, found, claim = _claimed(
                        submission,
                        current,
                        now,
                        prepared or partial(prepare, rows_jsonb=rows_jsonb),
                    )
                if claim is None:
                    raise _SessionMoved
                run = _record_run(prepared, now, rows_ahead, found, key_status=claim[0])
        except _SessionMoved:
            continue
        except IntegrityError:
            # A concurrent final of this session, or of this job from another session, won.
            current = RunSession.objects.get(pk=session.pk)
            if current.status not in LIVE_SESSION_STATUSES:
                return _answer_closed_session(current, submission)
            existing = submission.job_sig and _committed_run_for(session.key_id, submission.job_sig)
            if existing:
                return _duplicate(existing, submission.context)
            raise
        return _committed_answer(current.run_id, submission.context, run=run)
    raise OperationalError("the session kept changing while its final was committed")


def _preparer(
    submission: _Submission,
    current: RunSession,
    rows: list[dict],
    rows_json: str | None,
    checkpoints_clean: bool,
) -> Callable[..., board_services.PreparedRun]:
    """`board_services.prepare_run` of this final and its merged rows, once given its checked
    bundle (and the rows' `rows_jsonb_text` when made)."""

    def prepare(*, bundle: dict, rows_jsonb: str | None = None) -> board_services.PreparedRun:
        return board_services.prepare_run(
            run_id=current.run_id,
            key_fingerprint=submission.session.key.fingerprint,
            model=current.model,
            board=current.board,
            suite_id=current.suite_id,
            rows=rows,
            bundle_sha256=submission.digest,
            rows_json=rows_json,
            bundle=bundle,
            rows_jsonb=rows_jsonb,
            model_output_clean=checkpoints_clean and submission.model_output_clean(),
        )

    return prepare


def _claimed(
    submission: _Submission,
    current: RunSession,
    now,
    prepared: "board_services.PreparedRun | Callable[..., board_services.PreparedRun]",
    *,
    count_held: bool = True,
) -> tuple["board_services.PreparedRun", Callable, tuple[str, int] | None]:
    """Inside the commit's transaction, while the run's rows are written: the schema's check of
    the bundle (unless made already) first, as it answers before anything the database might
    say of values it refuses; then the claim, sent with the rows, and the run's benchmark
    lookup once the run is prepared (`prepared`, or how to prepare it from the checked bundle):
    on PostgreSQL one round trip for the three. Returns the prepared run, its lookup and the
    claim's outcome (`_claim_session`)."""
    bundle = submission.checked()
    job_sig = submission.job_sig or current.job_sig
    claimed = _claim_session(current, submission.digest, job_sig, now, count_held=count_held)
    if callable(prepared):
        prepared = prepared(bundle=bundle)
    found = board_services.look_up_benchmark(prepared, committed_at=now)
    return prepared, found, claimed()


def _record_run(
    prepared: "board_services.PreparedRun",
    now,
    rows_ahead,
    found,
    *,
    key_status: str,
    also: Callable[[], None] | None = None,
) -> Run:
    """The claimed final's run, its benchmark and its signed manifest, inside the commit's
    transaction; `also`: a last write of the transaction, sent with the manifest's."""
    run, as_stored = board_services.commit_run(
        prepared, committed_at=now, rows_ahead=rows_ahead, found=found
    )
    # The board's signed manifest, version 1, commits with the run; it is made while the
    # database checks the run's rows against it.
    with board_services.rows_checked_meanwhile():
        anchor_services.sign_at_commit(
            run.run_id,
            benchmark=run.benchmark,
            committed=run if as_stored else None,
            key_status=key_status,
        )
        if also is not None:
            also()
    if run.verification == Verification.PENDING:
        transaction.on_commit(partial(publish_after_answer, tasks.verify_weights, run.run_id))
    return run


# A quick final's rows, as the server finds them in its evidence row written just before (in the
# same transaction): the body's own text, parsed once there.
EVIDENCE_ROWS_SQL = (
    f"(SELECT convert_from(content, 'UTF8')::jsonb FROM {RawBundle._meta.db_table} "
    "WHERE sha256 = %s) -> 'bundle' -> 'results'"
)


class _GeneralPath(Exception):
    """The quick way of a final (`_final_rows_first`) does not fit: roll back, go the general way."""


def _rows_go_first(session: RunSession, evidence: "_Evidence", bundle: dict) -> bool:
    """Whether a final may take `_final_rows_first`: PostgreSQL, outside any transaction, a live
    session, an inline body still held, rows a list of objects each with a text case id."""
    return (
        connection.vendor == "postgresql"
        and not connection.in_atomic_block
        and bundle.get("final") is True
        and session.status in LIVE_SESSION_STATUSES
        and evidence.row_pending is not None
        and _mergeable(bundle)
    )


def _final_rows_first(
    session: RunSession,
    evidence: "_Evidence",
    envelope,
    context: dict,
    model_output_clean: Callable[[], bool],
    job_sig: str | None,
    client_ip: str | None = None,
) -> Outcome | None:
    """A final the quick way (PostgreSQL, `_rows_go_first`), for the common case: a bundle whose
    signature verifies, not a duplicate, that resends its checkpointed rows first and unchanged,
    passes the schema and wins its claim. The commit's transaction starts at once, and in one
    pipeline the prior reads (with the evidence row, which joins the transaction) and the run's
    per-case rows (the server takes them out of that row: the body travels once, and no text of
    the rows is made here) are sent before anything else: the database writes the rows while
    this thread checks the signature and the schema, scores and scans (docs/protocol.md §Ingest
    cost).

    Anything else rolls all of it back and returns None: the caller then answers the bundle the
    general way (`_submit_checked`), which does each thing again in its order, side effects
    (quarantine, forgery counts) included. A body jsonb cannot take (NaN, NUL) takes that way
    too: the rows' INSERT fails.

    The answer's ingest-log row commits with the run (it says 200 only if the commit holds)."""
    bundle = envelope.bundle
    rows = bundle["results"]
    logged = partial(
        log_attempt,
        route=IngestRoute.RESULTS,
        status=200,
        reason=Reason.OK,
        run_id=session.run_id,
        key_fingerprint=session.key.fingerprint,
        size=evidence.body.size,
        client_ip=client_ip,
        bundle_sha256=evidence.digest,
    )
    sent_prior = partial(_prior_sent, session, job_sig, evidence, final=True)
    try:
        with transaction.atomic():
            now = timezone.now()
            with board_services.rows_written_ahead(
                evidence.digest, rows_sql=EVIDENCE_ROWS_SQL, before=sent_prior
            ) as rows_ahead:
                signed, row_texts = _signature_check(
                    session.key.public_key, envelope.signature, bundle, splice=True
                )
                if (
                    not signed
                    or bundle.get("run_id") != session.run_id
                    or bundle.get("run_nonce") != session.nonce
                ):
                    raise _GeneralPath
                # Taken to be the common case until the prior read says so (it is read with the
                # claim: psycopg reads a pipeline's answers in order): the final resends its
                # checkpointed rows first and unchanged, so the rows are its own.
                submission = _Submission(
                    session,
                    bundle,
                    evidence,
                    job_sig,
                    context,
                    model_output_clean,
                    row_texts=row_texts,
                    is_checked=False,
                )
                rows_json = f"[{', '.join(row_texts)}]"
                # The rows are written already: their text is not made again.
                prepare = _preparer(submission, session, rows, rows_json, True)
                prepared, found, claim = _claimed(
                    submission,
                    session,
                    now,
                    partial(prepare, rows_jsonb=rows_json),
                    count_held=False,
                )
                prior = rows_ahead.sent_before()
                checkpointed = prior.checkpointed
                if (
                    prior.duplicate_of is not None
                    or claim is None
                    or claim[1] != checkpointed.checkpoints
                    or _merged_rows(session, rows, checkpointed, row_texts)[0] is not rows
                    or rows_ahead.read().written != len(rows)
                ):
                    # A duplicate, a moved session, rows to merge, or no inline evidence to read.
                    raise _GeneralPath
                # Still in the pipeline: the run, its manifest and log row are written before
                # its end reads their answers (one wait for the manifest, the log and the rows'
                # foreign-key check).
                run = _record_run(
                    prepared, now, rows_ahead, found, key_status=claim[0], also=logged
                )
    except (
        _GeneralPath,
        Refusal,
        SchemaError,
        board_services.BundleRuleError,
        DatabaseError,
    ):
        evidence.rolled_back()
        return None
    evidence.body.release()
    answer = _committed_answer(session.run_id, context, run=run)
    answer.logged = True
    return answer


def _claim_session(
    current: RunSession, digest: str, job_sig: str | None, now, *, count_held: bool = True
) -> Callable[[], tuple[str, int] | None]:
    """The claim, inside the commit's transaction: exactly one final wins a session (it must be
    live and hold the checkpoints its rows were merged from), and the (key, job_sig) constraint
    makes a concurrent commit of the same job fail (IntegrityError). The claimed session records
    its final bundle, and its job's other live sessions are superseded. Returns how to read the
    outcome: None when it did not win; else the status of the run's key as read now (for the
    run's manifest) and the session's checkpoint count as claimed. `count_held=False`
    (PostgreSQL): any count wins, and the caller compares the claimed one with the count its
    rows were read with (no checkpoint lands once the session is claimed).

    On PostgreSQL the three writes and the read are one statement, sent at once: in a pipeline
    (`board.services.rows_written_ahead`) its answer is read only when asked. Elsewhere four
    statements, run at once."""
    live = [str(status) for status in LIVE_SESSION_STATUSES]
    if connection.vendor != "postgresql":
        claimed = RunSession.objects.filter(
            pk=current.pk, status__in=live, checkpoints=current.checkpoints
        ).update(
            status=SessionStatus.COMMITTED,
            job_sig=job_sig,
            committed_at=now,
            last_progress_at=now,
            final_bundle_sha256=digest,
        )
        if claimed != 1:
            return lambda: None
        SessionBundle.objects.create(session=current, raw_id=digest, final=True)
        if job_sig:
            RunSession.objects.filter(
                key_id=current.key_id, job_sig=job_sig, status__in=live
            ).exclude(pk=current.pk).update(status=SessionStatus.SUPERSEDED)
        key_status = _key_status(current.key.fingerprint)
        return lambda: (key_status, current.checkpoints)
    # Data-modifying CTEs run on one snapshot; the superseded sessions are other rows than the
    # claimed one, and nothing is written unless the claim matched.
    cursor = sqlrows.bound_cursor()
    cursor.execute(
        CLAIM_SQL,
        {
            "committed": str(SessionStatus.COMMITTED),
            "superseded": str(SessionStatus.SUPERSEDED),
            "live": live,
            "job_sig": job_sig,
            "now": now,
            "digest": digest,
            "pk": current.pk,
            "checkpoints": current.checkpoints if count_held else None,
            "key_id": current.key_id,
            "fingerprint": current.key.fingerprint,
        },
    )

    def outcome() -> tuple[str, int] | None:
        with cursor:
            claimed, key_status, checkpoints = cursor.fetchone()
        return (key_status, checkpoints) if claimed == 1 else None

    return outcome


def _key_status(fingerprint: str) -> str:
    """The status of the key a manifest names (the first enrolled with this fingerprint)."""
    return (
        DeviceKey.objects.filter(fingerprint=fingerprint)
        .order_by("pk")
        .values_list("status", flat=True)
        .first()
    ) or ""


CLAIM_SQL = f"""
WITH claimed AS (
    UPDATE {RunSession._meta.db_table}
    SET status = %(committed)s, job_sig = %(job_sig)s, committed_at = %(now)s,
        last_progress_at = %(now)s, final_bundle_sha256 = %(digest)s
    WHERE id = %(pk)s AND status = ANY(%(live)s)
      AND (%(checkpoints)s::integer IS NULL OR checkpoints = %(checkpoints)s)
    RETURNING id, checkpoints
), kept AS (
    INSERT INTO {SessionBundle._meta.db_table} (session_id, raw_id, final, received_at)
    SELECT id, %(digest)s, true, %(now)s FROM claimed
), superseded AS (
    UPDATE {RunSession._meta.db_table} SET status = %(superseded)s
    WHERE %(job_sig)s::text IS NOT NULL AND key_id = %(key_id)s AND job_sig = %(job_sig)s
      AND status = ANY(%(live)s) AND id <> %(pk)s AND EXISTS (SELECT 1 FROM claimed)
)
SELECT count(*),
       (SELECT k.status FROM {DeviceKey._meta.db_table} k
        WHERE k.fingerprint = %(fingerprint)s ORDER BY k.id LIMIT 1),
       max(checkpoints)
FROM claimed
"""


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
    """One ingest-log row per attempt; runs outside the ingest transaction, so refusals stay
    (a committed final's row joins its commit instead: `_final_rows_first`)."""
    row = {
        "created_at": connection.ops.adapt_datetimefield_value(timezone.now()),
        "route": route,
        "status": status,
        "reason": reason,
        "run_id": storable(run_id)[:64],
        "key_fingerprint": key_fingerprint,
        "bytes": size,
        "client_ip": client_ip,
        "note": storable(note)[:2000],
        "bundle_sha256": bundle_sha256,
    }
    # Flushed by the next commit; no rollback undoes it.
    run_unflushed(_log_sql(tuple(row)), list(row.values()))


@cache
def _log_sql(columns: tuple[str, ...]) -> str:
    """The ingest log's INSERT, written once."""
    return (
        f"INSERT INTO {IngestLogEntry._meta.db_table} ({', '.join(columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))})"
    )
