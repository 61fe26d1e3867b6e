"""A results POST, checked in the order the status table implies (syntax, key, signature,
identity, duplicate, schema), then recorded as a checkpoint or committed as a final."""

import logging
import re

from django.db import (
    DataError,
    IntegrityError,
)

from board import services as board_services
from config.api_errors import Reason
from evidence.signing import (
    canonical_json_in_pieces,
    canonical_json_with_items,
    verify_signature,
)
from recipes.secret_scan import json_may_hold_token
from submissions import limits
from submissions.ingest.answers import Submission, committed_run_for, duplicate
from submissions.ingest.checkpoints import record_checkpoint
from submissions.ingest.evidence import HELD_WHILE_WRITTEN_BYTES, Evidence
from submissions.ingest.final import commit_final
from submissions.ingest.keys import quarantine, refuse_forgery
from submissions.ingest.outcomes import Outcome, Refusal, parse_body
from submissions.jsonbody import ReceivedBody
from submissions.models import (
    LIVE_SESSION_STATUSES,
    RunSession,
    SessionStatus,
)
from submissions.schemas import (
    ResultsEnvelope,
    SchemaError,
    normalise_bundle,
    parse_request,
)

HEX_SIG = re.compile(r"[0-9a-fA-F]{1,64}")


logger = logging.getLogger("aeon.ingest")


def submit_results(
    *, session: RunSession, body: ReceivedBody, client_ip: str | None = None
) -> Outcome:
    """A checkpoint or final bundle for an admitted session (docs/protocol.md), checked in the
    order the status table implies: syntax, key, signature, identity, duplicate, schema; then a
    checkpoint is recorded (`record_checkpoint`) or a final committed (`commit_final`)."""
    context = {"run_id": session.run_id, "key_fingerprint": session.key.fingerprint}
    big = body.size > HELD_WHILE_WRITTEN_BYTES
    data = body.data  # the bytes parsed and scanned here (a big body's write lets go of its own)
    # A big body starts its write to the spool before it is parsed (the write overlaps the
    # parse and the secret scan) and enters the store only once kept; refused (or failed)
    # before its envelope parses (or past a checkpoint cap), its spool file is removed
    # (`Evidence.discard`). Any other body is kept from the envelope's parse on.
    evidence = Evidence(body, spool=True) if big else None
    try:
        try:
            envelope_data = parse_body(data)
            try:
                envelope = parse_request(ResultsEnvelope, envelope_data)
            except SchemaError as exc:
                raise Refusal(Reason.SCHEMA_INVALID, str(exc), **context) from None
            del envelope_data
            if envelope.bundle.get("final") is not True:  # before its body is stored
                _check_checkpoint_caps(session, body.size, context)
        except BaseException:
            if evidence is not None:  # a big body spooled ahead is not kept (docs/protocol.md)
                evidence.discard()
            raise
        # Every answer from here on keeps the bundle as evidence (at the latest when this
        # returns).
        evidence = evidence or Evidence(body)
        # A final's secret scan reads its model output in one pass over the text.
        clean = envelope.bundle.get("final") is True and not json_may_hold_token(data)
        del data
        if big:
            evidence.written()  # spooled: its bytes are let go before the signature check's
        return _submit_signed(session, evidence, envelope, context, clean)
    finally:
        if evidence is not None:
            evidence.stored()


def _check_checkpoint_caps(session: RunSession, size: int, context: dict) -> None:
    """The session's and the key's checkpoint caps (submissions/limits.py): past the session's,
    413 (the final still commits); past the key's 24-hour quota, 429 QUOTA_EXCEEDED with
    Retry-After, as the finals' quota answers (docs/protocol.md §Quotas per key)."""
    try:
        limits.check_checkpoint(session, size)
    except limits.QuotaReached as reached:
        raise Refusal(
            Reason.QUOTA_EXCEEDED, reached.note, retry_after=reached.retry_after, **context
        ) from None
    except limits.CapReached as reached:
        raise Refusal(Reason.SIZE_EXCEEDED, reached.note, **context) from None


def _submit_signed(
    session: RunSession, evidence: Evidence, envelope, context: dict, model_output_clean: bool
) -> Outcome:
    run_id, bundle = session.run_id, envelope.bundle
    context["bundle_sha256"] = evidence.digest

    if session.key.is_revoked:
        quarantine(session, Reason.REVOKED_KEY, "", evidence)
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
        refuse_forgery(
            session,
            Reason.BAD_SIG,
            "signature does not verify with the run's key",
            evidence,
            close=True,
        )
    evidence.keep()  # signed: a spooled body starts its way into the store
    if bundle.get("run_id") != run_id:
        refuse_forgery(
            session,
            Reason.RUN_ID_MISMATCH,
            "bundle.run_id differs from the path",
            evidence,
            close=True,
        )
    if bundle.get("run_nonce") != session.nonce:
        refuse_forgery(
            session,
            Reason.NONCE_MISMATCH,
            "bundle.run_nonce is not this run's",
            evidence,
            close=True,
        )
    job_sig = bundle.get("job_sig")
    # Only a well-formed job_sig can name a committed run (and only such text reaches a query).
    job_sig = job_sig.lower() if isinstance(job_sig, str) and HEX_SIG.fullmatch(job_sig) else None
    duplicate_of = job_sig and committed_run_for(session.key_id, job_sig)
    if duplicate_of:
        evidence.stored()
        return duplicate(duplicate_of, context)
    try:
        submission = Submission(
            session,
            _validated(session.board, bundle),
            evidence,
            job_sig,
            context,
            model_output_clean,
            row_texts,
        )
        if bundle.get("final") is True:
            return commit_final(submission)
        return record_checkpoint(submission)
    except (SchemaError, board_services.BundleRuleError) as exc:
        # Kept for review but never counted against the key: a format bug of one pod release
        # must not revoke every honest pod running it (docs/protocol.md).
        quarantine(session, Reason.SCHEMA_INVALID, str(exc), evidence)
        raise Refusal(Reason.SCHEMA_INVALID, str(exc), **context) from None
    except Refusal as refusal:
        if refusal.reason == Reason.REPLAY_NONCE:
            refuse_forgery(session, Reason.REPLAY_NONCE, refusal.note, evidence, close=False)
        raise
    except (DataError, IntegrityError) as exc:
        # A value the database cannot hold got past the schema: a bug to fix, but the bundle
        # can never commit, so the pod is told not to retry (400, kept for review).
        logger.exception("the database refused a validated bundle of run %s", run_id)
        note = f"the database cannot store a value of this bundle ({_first_line(exc)})"
        quarantine(session, Reason.SCHEMA_INVALID, note, evidence)
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
    of each of its rows when made with those bytes (`splice`). A big body's bytes are spelled a
    piece at a time into one buffer (`canonical_json_in_pieces`), and its rows get no text here:
    held beside the canonical bytes, they were a second copy of every row (a body whose bulk is
    one long row grew the worker by over 4× its size: docs/protocol.md §Decoded size); a
    checkpoint makes them once the bytes are gone, and a final only for the rows a checkpoint
    merge compares, one at a time (`merge_rows`)."""
    if splice:
        message, row_texts = canonical_json_with_items(bundle, "results")
    else:
        message, row_texts = canonical_json_in_pieces(bundle), None
    return verify_signature(public_key, signature, message), row_texts


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]
