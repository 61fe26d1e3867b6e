"""JSON error answers with reason codes, shared by the pod routes and the read API.

Pods call `json.loads` on every error body: anything under /api/ answers JSON, never HTML.
"""

from django.db import models
from django.http import JsonResponse
from rest_framework.views import exception_handler


class Reason(models.TextChoices):
    """Every reason code the board answers with, defined once."""

    CHALLENGE_INVALID = "CHALLENGE_INVALID"
    BAD_SIG = "BAD_SIG"
    UNKNOWN_KEY = "UNKNOWN_KEY"
    REVOKED_KEY = "REVOKED_KEY"
    TOO_MANY_OPEN_RUNS = "TOO_MANY_OPEN_RUNS"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    TOKEN_MISMATCH = "TOKEN_MISMATCH"
    REPLAY_NONCE = "REPLAY_NONCE"
    RUN_ID_MISMATCH = "RUN_ID_MISMATCH"
    NONCE_MISMATCH = "NONCE_MISMATCH"
    MALFORMED_JSON = "MALFORMED_JSON"
    SCHEMA_INVALID = "SCHEMA_INVALID"
    SIZE_EXCEEDED = "SIZE_EXCEEDED"
    UNSUPPORTED_ENCODING = "UNSUPPORTED_ENCODING"
    RATE_LIMITED = "RATE_LIMITED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    UNAVAILABLE = "UNAVAILABLE"
    RUN_CLOSED = "RUN_CLOSED"
    BAD_REQUEST = "BAD_REQUEST"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    OK = "OK"


STATUS_REASONS = {
    400: Reason.BAD_REQUEST,
    404: Reason.NOT_FOUND,
    405: Reason.METHOD_NOT_ALLOWED,
    413: Reason.SIZE_EXCEEDED,
    429: Reason.RATE_LIMITED,
    503: Reason.UNAVAILABLE,
}


def json_error(
    reason: str, note: str, status: int, *, retry_after: int | None = None
) -> JsonResponse:
    response = JsonResponse(
        {"error": str(reason), "reason": str(reason), "note": note}, status=status
    )
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def drf_exception_handler(exc, context):
    """DRF errors in the house shape: {error, reason, note}."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    reason = STATUS_REASONS.get(response.status_code, Reason.BAD_REQUEST)
    detail = response.data.get("detail") if isinstance(response.data, dict) else response.data
    response.data = {"error": str(reason), "reason": str(reason), "note": str(detail)}
    return response
