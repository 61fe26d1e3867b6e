"""What every route of the pod channel answers: an `Outcome`, or a `Refusal` with its reason
code and HTTP status (docs/protocol.md §Status table)."""

import hashlib
from dataclasses import dataclass

from config.api_errors import Reason
from submissions.jsonbody import BodyTooLarge, MalformedJson, parse_json

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
    Reason.QUOTA_EXCEEDED: 429,
    Reason.TOO_MANY_OPEN_RUNS: 429,
    Reason.UNAVAILABLE: 503,
}


DUPLICATE_MESSAGE = "job already submitted and available on the Mothership"


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


def parse_body(body: bytes | bytearray):
    try:
        return parse_json(body)
    except MalformedJson as exc:
        raise Refusal(Reason.MALFORMED_JSON, str(exc)) from None
    except BodyTooLarge as exc:  # it would decode to more than its budget (jsonbody.py)
        raise Refusal(Reason.SIZE_EXCEEDED, str(exc)) from None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
